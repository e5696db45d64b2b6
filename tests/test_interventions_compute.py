"""helpers/interventions/compute.py on the real bundled model: every intervention is checked
against an independent computation (a plain forward pass with a hook, the by-hand rebuilds,
finite differences, scipy)."""

import math
import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from helpers.attention.compute import attention_shares
from helpers.attention.rebuild import self_attention_by_hand
from helpers.classify.compute import LinearHead, extract_features, train_head
from helpers.common.data import load_banking77, load_polysemy
from helpers.common.stats import Interval, cluster_bootstrap_ci, sign_test_p, mcnemar
from helpers.context.compute import word_by_layer
from helpers.interventions import compute as C
from helpers.model.trace import trace_text
from helpers.stack.rebuild import attention_output_by_hand


@pytest.fixture(scope="module")
def banking():
    """A small BANKING77 cut, as the lesson's quick budget: six intents, 8 training and 3 test
    utterances of each (seeded)."""
    train_all, test_all = load_banking77("train"), load_banking77("test")
    names = train_all.names[:6]
    return train_all.only(names).sample(8, seed=0), test_all.only(names).sample(3, seed=0)


@pytest.fixture(scope="module")
def setup(tokenizer, model, banking):
    """A head trained on the mean-pooled last layer of the BANKING77 cut, and its test run."""
    train, test = banking
    head = train_head(C.pooled_features(tokenizer, model, train.texts, max_length=64, progress=False), train.labels,
                      train.num_classes, progress=False)
    classifier = C.SentenceHead(head, "mean")
    run = C.run_cached(tokenizer, model, test.texts[:16], attentions=True, token_shares=True, batch_size=5)
    return classifier, run, torch.tensor(test.labels[:16]), test.texts[:16]


def full_logits(tokenizer, model, classifier, texts):
    enc = tokenizer(texts, padding=True, truncation=True, max_length=32, return_tensors="pt")
    with torch.no_grad():
        return classifier(model(**enc).last_hidden_state, enc["attention_mask"])


# -- checks ----------------------------------------------------------------------------------------


def test_bad_layer_and_head_get_the_course_messages(model, sample_trace):
    with pytest.raises(ValueError) as ours:
        C.check_layer(model, 0)
    with pytest.raises(ValueError) as traces:
        sample_trace.check_layer(0, allow_embeddings=False)
    assert str(ours.value) == str(traces.value)
    with pytest.raises(ValueError, match="valid heads are 0 to 11"):
        C.check_head(model, 12)
    with pytest.raises(ValueError, match="valid layers are 1 to 6"):
        with C.ablate_head(model, 7, 0):
            pass
    with pytest.raises(ValueError, match=r"must be \[12\] or \[batch, 12\]"):
        with C.gated_heads(model, {1: torch.ones(5)}):
            pass
    with pytest.raises(ValueError, match="non-empty list"):
        C.run_cached(None, model, "one sentence")


# -- running from a cached layer ------------------------------------------------------------------


def test_continue_from_the_embeddings_reproduces_the_model(model, setup):
    _, run, _, _ = setup
    m = run.attention_mask.bool()
    again = C.continue_from(model, run.hidden(0), run.attention_mask, 0)
    assert torch.allclose(again[m], run.hidden(run.num_layers)[m], atol=1e-4)
    middle = C.continue_from(model, run.hidden(3), run.attention_mask, 3)
    assert torch.allclose(middle[m], run.hidden(run.num_layers)[m], atol=1e-4)


def test_run_cached_in_buckets_equals_one_padded_batch(tokenizer, model, setup):
    """Groups of similar length give the hidden states and attention maps of one padded batch (a
    plain model call), at every real position."""
    _, run, _, texts = setup
    enc = tokenizer(texts, padding=True, return_tensors="pt")
    with torch.no_grad():
        out = model(**enc, output_hidden_states=True, output_attentions=True)
    m = enc["attention_mask"].bool()
    assert torch.equal(run.attention_mask, enc["attention_mask"])
    for layer in (0, 3, run.num_layers):
        assert torch.allclose(run.hidden(layer)[m], out.hidden_states[layer][m], atol=1e-4)
    keys = m[:, None, None, :] & m[:, None, :, None]  # [N, 1, T, T]: real query and key
    for layer in (1, run.num_layers):
        got, want = run.attentions[layer - 1], out.attentions[layer - 1]
        assert torch.allclose(got.masked_select(keys), want.masked_select(keys), atol=1e-5)
    assert run.tokens[0] == tokenizer.convert_ids_to_tokens(enc["input_ids"][0][m[0]].tolist())
    with pytest.raises(ValueError, match="positive int"):
        C.length_buckets(run.attention_mask, 0)


def test_pooled_features_equal_lesson_10(tokenizer, model, banking):
    train, _ = banking
    texts = train.texts[:20]
    ours = C.pooled_features(tokenizer, model, texts, max_length=64, batch_size=7, progress=False)
    lesson10 = extract_features(tokenizer, model, texts, max_length=64, progress=False)
    L = model.config.num_hidden_layers
    assert torch.allclose(ours, lesson10.layer(L, "mean"), atol=1e-4)
    assert torch.allclose(C.pooled_features(tokenizer, model, texts, max_length=64, pooling="cls", progress=False),
                          lesson10.layer(L, "cls"), atol=1e-4)
    with pytest.raises(ValueError, match="pooling"):
        C.pooled_features(tokenizer, model, texts, pooling="max")


def test_run_from_traces_pads_the_traces(tokenizer, model):
    traces = [trace_text(tokenizer, model, s) for s in ("A bank.", "The river bank was steep and muddy.")]
    run = C.run_from_traces(traces)
    assert run.hidden(2).shape[:2] == (2, traces[1].seq_len)
    assert torch.equal(run.hidden(2)[0, : traces[0].seq_len], traces[0].hidden(2))
    assert run.attention_mask.sum(1).tolist() == [t.seq_len for t in traces]


# -- head ablation ------------------------------------------------------------------------------------


def test_ablate_head_equals_the_by_hand_attention_output(model, sample_trace):
    layer_module, d = model.encoder.layer[2], model.config.hidden_size // model.config.num_attention_heads
    x = sample_trace.hidden(2)
    context, _ = self_attention_by_hand(layer_module, x)
    context[:, 5 * d:6 * d] = 0.0
    expected = attention_output_by_hand(layer_module, context, x)
    with C.ablate_head(model, 3, 5):
        got = layer_module.attention(x[None])[0][0]
    assert torch.allclose(got, expected, atol=1e-5)
    after = layer_module.attention(x[None])[0][0]  # the hook is gone after the with block
    assert not torch.allclose(after, expected, atol=1e-3)
    with C.gated_heads(model, {3: torch.ones(model.config.num_attention_heads)}):
        assert torch.allclose(layer_module.attention(x[None])[0][0], after, atol=1e-6)


@pytest.mark.slow  # several seconds: runs in the --all tier (CI)
def test_every_head_ablated_in_batches_equals_one_full_run_per_head(tokenizer, model, setup):
    classifier, run, y, texts = setup
    ablation = C.ablate_every_head(model, classifier, run, y, progress=False)
    L, A = C.model_sizes(model)
    assert ablation.ablated.shape == (L, A, len(texts), classifier.head.classifier.out_features)
    for layer, head in [(1, 0), (4, 7), (L, A - 1)]:
        with C.ablate_head(model, layer, head):
            direct = full_logits(tokenizer, model, classifier, texts)
        assert torch.allclose(ablation.ablated[layer - 1, head], direct, atol=1e-4)
    one_bucket = C.ablate_every_head(model, classifier, run, y, bucket=len(texts), max_tokens=10**6, progress=False)
    assert torch.allclose(one_bucket.ablated, ablation.ablated, atol=1e-4)


def test_head_ablation_measures(model, setup):
    classifier, run, y, _ = setup
    ablation = C.ablate_every_head(model, classifier, run, y, progress=False)
    base_right = ablation.base.argmax(-1) == y
    now_right = ablation.ablated[2, 3].argmax(-1) == y
    assert torch.allclose(ablation.accuracy_drop_items()[:, 2, 3], base_right.float() - now_right.float())
    assert math.isclose(float(ablation.accuracy_drop()[2, 3]), base_right.float().mean() - now_right.float().mean(),
                        abs_tol=1e-6)
    true_base = ablation.base[torch.arange(len(y)), y]
    true_abl = ablation.ablated[2, 3][torch.arange(len(y)), y]
    assert torch.allclose(ablation.logit_drop_items()[:, 2, 3], true_base - true_abl, atol=1e-6)
    loss = F.cross_entropy(ablation.ablated[2, 3], y, reduction="none") - F.cross_entropy(ablation.base, y,
                                                                                           reduction="none")
    assert torch.allclose(ablation.loss_increase_items()[:, 2, 3], loss, atol=1e-5)
    change = ablation.change(3, 3, margin=0.01)  # removed minus unchanged, on the same items
    assert math.isclose(change.difference.estimate, now_right.float().mean() - base_right.float().mean(),
                        abs_tol=1e-6)
    assert change.p_value == mcnemar(now_right.float(), base_right.float()).p_value
    changes = ablation.changes(margin=0.01)
    assert len(changes) == len(ablation.heads()) == ablation.ablated.shape[0] * ablation.ablated.shape[1]
    assert changes[ablation.heads().index((3, 3))].p_value == change.p_value
    family = len(changes)  # one Bonferroni family over every head
    assert [c.adjusted_p for c in changes] == pytest.approx([min(1.0, family * c.p_value) for c in changes])
    assert all(c.family == family for c in changes)
    assert sum(C.count_kinds(changes).values()) == len(changes)
    with pytest.raises(ValueError, match="not a head"):
        ablation.change(0, 0)


def test_outcome_changes_tango_bonferroni_and_the_margin():
    """Independent items: McNemar's test (z = (b - c) / sqrt(b + c)) and Tango's interval at the
    family's level, Bonferroni over the interventions, "equivalent" only inside the margin and only
    when the items can resolve it; interval, p and verdict always agree."""
    from scipy.stats import norm

    from helpers.common.stats import equivalence_level, family_level, tango_interval

    rng = np.random.default_rng(0)
    n = 800
    base = (rng.random(n) < 0.8).astype(float)
    rows = np.stack([base.copy() for _ in range(3)])
    rows[0, np.flatnonzero(base)[:40]] = 0  # 40 items become wrong: a clear drop
    rows[1, np.flatnonzero(base)[:2]] = 0  # two wrong, two right: a tiny change either way
    rows[1, np.flatnonzero(1 - base)[:2]] = 1
    # row 2: nothing changes
    changes = C.outcome_changes(rows, base, ["drop", "tiny", "none"], margin=0.01)
    assert changes[0].p_value == pytest.approx(2 * norm.sf(40 / 40 ** 0.5))
    assert changes[1].p_value == pytest.approx(1.0) and changes[2].p_value == 1.0
    assert [c.adjusted_p for c in changes] == pytest.approx([min(1.0, 3 * c.p_value) for c in changes])
    assert [c.kind for c in changes] == ["lower", "equivalent", "equivalent"]
    assert changes[0].difference.level == pytest.approx(family_level(3)) and changes[0].family == 3
    low, high = tango_interval(0, 40, n, family_level(3))
    assert (changes[0].difference.low, changes[0].difference.high) == pytest.approx((float(low), float(high)))
    assert changes[1].equivalence_interval.level == pytest.approx(equivalence_level(3))
    assert changes[0].difference.estimate == pytest.approx(-40 / n) and changes[0].n_changed == 40
    assert "lowers" in changes[0].describe() and "Tango" in changes[0].method
    for c in changes:  # the printed interval and the verdict cannot disagree
        assert (c.kind in ("lower", "higher")) == (not c.difference.contains(0.0))
        assert (c.adjusted_p < 0.05) == c.verdict.differs
    # nothing changed: not a zero-width interval, but what n items could hide
    none = changes[2]
    assert none.difference.low < 0 < none.difference.high
    # without a margin, no change is ever "equivalent"; on 20 items, a 1-point margin can never be met
    assert {c.kind for c in C.outcome_changes(rows[1:], base, ["tiny", "none"])} == {"inconclusive"}
    small = C.outcome_changes(rows[2:, :20], base[:20], ["none"], margin=0.01)[0]
    assert small.kind == "inconclusive" and small.equivalence_interval.high > 0.1
    with pytest.raises(ValueError, match="same items"):
        C.outcome_changes(rows, base[:5], ["a", "b", "c"])
    with pytest.raises(ValueError, match="one name per"):
        C.outcome_changes(rows, base, ["a"])
    with pytest.raises(ValueError, match="margin"):
        C.outcome_changes(rows, base, ["a", "b", "c"], margin=0)


def test_outcome_changes_resample_clusters():
    """Items that share a unit: the interval is cluster_bootstrap_ci's, the resolution counts units."""
    rng = np.random.default_rng(1)
    words = np.repeat(np.arange(12), 10)
    base = np.ones(120)
    after = base.copy()
    after[words < 4] = rng.integers(0, 2, 40)  # only the first four words change
    (change,) = C.outcome_changes(after[None], base, ["skip"], clusters=words, margin=0.01)
    direct = cluster_bootstrap_ci(after - base, words, n_boot=2000)
    assert (change.difference.low, change.difference.high) == pytest.approx((direct.low, direct.high))
    assert change.method == "cluster bootstrap over 12 units"
    (same,) = C.outcome_changes(base[None], base, ["none"], clusters=words, margin=0.01)
    assert same.kind == "inconclusive" and same.difference.high == pytest.approx(C.unseen_rate(12, 0.95))
    with pytest.raises(ValueError, match="one unit per item"):
        C.outcome_changes(after[None], base, ["skip"], clusters=words[:5])


def test_unseen_rate_is_the_exact_bound_of_a_zero_count():
    assert C.unseen_rate(100, 0.90) == pytest.approx(1 - 0.05 ** (1 / 100))
    assert C.unseen_rate(100, 0.90) == pytest.approx(3 / 100, rel=0.02)  # the rule of three


def test_tied_with_uses_tango_with_bonferroni():
    """Heads tied with a given one are those whose accuracy (with the head removed) is not shown
    higher than the given head's: Tango's interval on the same items, Bonferroni over the other
    heads -- recomputed here with mcnemar(...).verdict(family=...) directly."""
    n, n_layers, n_heads = 60, 2, 3
    labels = torch.zeros(n, dtype=torch.long)
    base = torch.tensor([[1.0, 0.0]]).repeat(n, 1)  # every item right
    ablated = base.repeat(n_layers, n_heads, 1, 1).clone()  # [L, A, N, C]
    wrong = {(0, 0): range(0, 14), (0, 1): range(0, 12), (0, 2): range(0, 1), (1, 1): range(30, 44)}
    for (l, h), items in wrong.items():
        ablated[l, h, list(items)] = torch.tensor([0.0, 1.0])
    ablation = C.HeadAblation(base, ablated, labels)
    tied = ablation.tied_with(1, 0)  # the largest drop, 14 items
    correct = ablation.correct()
    others = [(l, h) for l in range(n_layers) for h in range(n_heads) if (l, h) != (0, 0)]
    tests = [mcnemar(correct[l, h].numpy(), correct[0, 0].numpy()) for l, h in others]
    expected = [(1, 0)] + [(l + 1, h) for (l, h), t in zip(others, tests)
                           if t.verdict(family=len(others)).kind != "higher"]
    assert sorted(tied) == sorted(expected)
    assert (1, 0) in tied and (1, 1) in tied  # 12 of the same 14 items: cannot be ranked below
    assert (1, 2) not in tied and (2, 0) not in tied  # 1 and 0 items: shown to drop less
    # (2, 1) drops as much but on other items: McNemar sees 28 disagreements, split evenly
    assert (2, 1) in tied
    with pytest.raises(ValueError, match="not a head"):
        ablation.tied_with(0, 0)


def test_gate_gradients_match_finite_differences(model, setup):
    classifier, run, y, _ = setup
    grads = C.head_gate_gradients(model, classifier, run, y)
    L, A = C.model_sizes(model)
    assert grads.shape == (len(y), L, A)

    def loss(item, layer, head, value):
        gate = torch.ones(A)
        gate[head] = value
        with torch.no_grad(), C.gated_heads(model, {layer: gate}):
            last = C.continue_from(model, run.hidden(0)[item:item + 1], run.attention_mask[item:item + 1], 0)
            return F.cross_entropy(classifier(last, run.attention_mask[item:item + 1]), y[item:item + 1]).item()

    for item, layer, head in [(0, L, 2), (3, 2, 7)]:
        fd = (loss(item, layer, head, 1.01) - loss(item, layer, head, 0.99)) / 0.02
        assert abs(fd - grads[item, layer - 1, head].item()) < 1e-4 + 0.05 * abs(fd)
    # groups of similar length: each item's gradient does not depend on the grouping
    assert torch.allclose(C.head_gate_gradients(model, classifier, run, y, bucket=3), grads, atol=1e-5)


# -- statistics -------------------------------------------------------------------------------------


def test_spearman_matches_scipy_with_ties():
    from scipy.stats import spearmanr

    rng = np.random.default_rng(0)
    a = rng.integers(0, 4, 40).astype(float)  # many ties
    b = a + rng.normal(0, 1.5, 40)
    assert math.isclose(C.spearman(a, b), spearmanr(a, b).statistic, abs_tol=1e-12)
    assert math.isnan(C.spearman(np.zeros(5), np.arange(5)))
    assert C.ranks([3, 1, 3, 2]).tolist() == [3.5, 1.0, 3.5, 2.0]


def test_spearman_intervals():
    rng = np.random.default_rng(1)
    signal = rng.normal(size=(1, 30))
    items_a = signal + rng.normal(0, 0.5, (50, 30))
    items_b = signal + rng.normal(0, 0.5, (50, 30))
    ci = C.spearman_ci(items_a, items_b)
    assert ci.low <= C.spearman(items_a.mean(0), items_b.mean(0)) <= ci.high and ci.low > 0.5
    noise = C.spearman_ci(items_a, rng.normal(size=(50, 30)))
    assert noise.contains(0.0)
    assert ci.undefined == 0.0 and noise.undefined == 0.0
    assert C.spearman_ci(items_a, np.ones((50, 30))) is None
    # one side varies only through a few items: resamples without them have no rho and are left
    # out (not counted as rho = 0, which would drag the interval to 0)
    sparse = np.zeros((50, 30))
    sparse[:2] = items_a[:2] + 5.0
    rare = C.spearman_ci(items_a, sparse)
    rhos = []
    for idx in np.random.default_rng(0).integers(0, 50, size=(1000, 50)):
        rhos.append(C.spearman(items_a[idx].mean(0), sparse[idx].mean(0)))
    rhos = np.array(rhos)
    assert rare.undefined == pytest.approx(np.isnan(rhos).mean())
    assert 0.1 < rare.undefined < 0.5
    assert rare.low == pytest.approx(np.quantile(rhos[~np.isnan(rhos)], 0.025))
    paired = C.paired_spearman_ci(np.arange(10), np.arange(10) ** 2)
    assert paired.estimate == 1.0
    with pytest.raises(ValueError, match="one shape"):
        C.spearman_ci(items_a, items_b[:, :5])


def test_within_group_spearman_removes_a_between_group_confound():
    """Across all units the groups dominate (rho < 0); within each group the link is positive.
    The pooled estimate is the mean of scipy's rho per group; the interval resamples items."""
    from scipy.stats import spearmanr

    rng = np.random.default_rng(2)
    n, groups, units = 40, 4, 10
    x = rng.normal(size=(groups, units)) + 5 * np.arange(groups)[:, None]  # groups shifted up
    y = x - 10 * np.arange(groups)[:, None]  # ... and down: across groups the ranks run opposite
    items_a = x[None] + rng.normal(0, 0.3, (n, groups, units))
    items_b = y[None] + rng.normal(0, 0.3, (n, groups, units))
    overall = C.spearman_ci(items_a.reshape(n, -1), items_b.reshape(n, -1))
    assert overall.high < 0
    within = C.within_group_spearman_ci(items_a, items_b)
    by_scipy = [spearmanr(items_a.mean(0)[g], items_b.mean(0)[g]).statistic for g in range(groups)]
    assert within.per_group == pytest.approx(by_scipy)
    assert within.estimate == pytest.approx(np.mean(by_scipy))
    assert within.low > 0.5 and within.low <= within.estimate <= within.high
    noise = C.within_group_spearman_ci(items_a, rng.normal(size=(n, groups, units)))
    assert noise.contains(0.0)
    flat = items_b.copy()
    flat[:, 0] = 1.0  # group 0 constant: left out of the mean, the others still count
    part = C.within_group_spearman_ci(items_a, flat)
    assert np.isnan(part.per_group[0]) and part.estimate == pytest.approx(np.mean(by_scipy[1:]))
    assert C.within_group_spearman_ci(items_a, np.ones_like(items_a)) is None
    with pytest.raises(ValueError, match="groups, units"):
        C.within_group_spearman_ci(items_a[..., :2], items_b[..., :2])


# -- lesson 08's statistics per head ----------------------------------------------------------------


def test_head_shares_average_to_lesson_08(tokenizer, model, setup):
    _, run, _, texts = setup
    shares = C.head_token_class_shares(run)
    L, A = C.model_sizes(model)
    assert shares.shape == (len(texts), L, A, 4)
    assert torch.allclose(shares.sum(-1), torch.ones(len(texts), L, A), atol=1e-4)
    for i in (0, 5):
        assert torch.allclose(shares[i].mean(1), attention_shares(trace_text(tokenizer, model, texts[i])), atol=1e-4)
    # the shares kept during the run equal those computed from the kept attention maps
    from_maps = C.head_token_class_shares(C.CachedRun(run.hidden_states, run.attention_mask, run.tokens,
                                                      run.attentions))
    assert torch.allclose(shares, from_maps, atol=1e-5)
    with pytest.raises(ValueError, match="token_shares=True"):
        C.head_token_class_shares(C.CachedRun(run.hidden_states, run.attention_mask, run.tokens))


# -- layer skipping -------------------------------------------------------------------------------------


def test_skip_layer_equals_an_identity_hook_on_the_full_model(tokenizer, model, setup):
    _, run, _, texts = setup
    enc = tokenizer(texts, padding=True, truncation=True, max_length=32, return_tensors="pt")
    hook = model.encoder.layer[2].register_forward_hook(
        lambda module, args, output: args[0] if isinstance(output, torch.Tensor) else (args[0], *output[1:]))
    try:
        with torch.no_grad():
            direct = model(**enc).last_hidden_state
    finally:
        hook.remove()
    m = run.attention_mask.bool()
    assert torch.allclose(C.skip_layer(model, run, 3)[m], direct[m], atol=1e-4)
    skipped = C.skip_every_layer(model, run, progress=False)
    assert skipped.shape[0] == model.config.num_hidden_layers + 1
    assert torch.equal(skipped[0], run.hidden(run.num_layers))
    assert torch.allclose(skipped[-1], run.hidden(run.num_layers - 1))  # skipping the last layer: its input
    classifier = setup[0]
    logits = C.skip_every_layer(model, run, progress=False, readout=classifier, bucket=4)
    assert logits.shape == (skipped.shape[0], len(texts), classifier.head.classifier.out_features)
    for layer in (0, 3):
        assert torch.allclose(logits[layer], classifier(skipped[layer], run.attention_mask), atol=1e-4)


@pytest.fixture(scope="module")
def bank(tokenizer, model):
    senses = load_polysemy()["bank"]
    return {s: [trace_text(tokenizer, model, x) for x in xs] for s, xs in senses.items()}


def test_word_vectors_match_lesson_09(model, bank):
    traces = [t for ts in bank.values() for t in ts]
    run = C.run_from_traces(traces)
    spans = [t.find_word("bank").positions for t in traces]
    vecs = C.word_vectors(torch.stack(run.hidden_states), spans)  # [L + 1, n, H]
    assert vecs.shape == (model.config.num_hidden_layers + 1, len(traces), model.config.hidden_size)
    for i in (0, 7):
        assert torch.allclose(vecs[:, i], word_by_layer(traces[i], "bank"), atol=1e-5)


# -- activation patching -----------------------------------------------------------------------------


def test_patch_equals_a_hook_that_overwrites_the_layer_output(tokenizer, model, bank):
    river, money = bank["river"][0], bank["money"][1]
    pr, pm = river.find_word("bank").positions, money.find_word("bank").positions
    run = C.run_from_traces([money])
    donors = river.hidden(2)[pr][None]
    patched = C.patch_word_vectors(model, run, [pm], donors, 2)

    def overwrite(module, args, output):
        hidden = (output if isinstance(output, torch.Tensor) else output[0]).clone()
        hidden[0, pm] = donors[0]
        return hidden if isinstance(output, torch.Tensor) else (hidden, *output[1:])

    hook = model.encoder.layer[1].register_forward_hook(overwrite)
    try:
        with torch.no_grad():
            direct = model(input_ids=money.input_ids[None]).last_hidden_state
    finally:
        hook.remove()
    assert torch.allclose(patched, direct, atol=1e-4)
    L = model.config.num_hidden_layers
    top = C.patch_word_vectors(model, run, [pm], river.hidden(L)[pr][None], L)
    assert torch.equal(top[0, pm], river.hidden(L)[pr])  # patching the last layer is the donor itself
    with pytest.raises(ValueError, match="pieces"):
        C.patch_word_vectors(model, run, [pm], torch.zeros(1, 2, model.config.hidden_size), 1)


def test_sense_patching(model, bank):
    result = C.sense_patching(model, bank["river"], bank["money"], "bank")
    L = model.config.num_hidden_layers
    n = len(bank["river"]) * len(bank["money"])
    assert result["follows"].shape == (n, L + 1) and result["control"].shape == (n,)
    assert set(result["follows"].unique().tolist()) <= {0.0, 1.0}
    i, j = result["pairs"][0]
    last_river = torch.stack([t.hidden(L)[t.find_word("bank").positions].mean(0) for t in bank["river"]])
    last_money = torch.stack([t.hidden(L)[t.find_word("bank").positions].mean(0) for t in bank["money"]])
    c_river = last_river[torch.arange(len(last_river)) != i].mean(0)
    c_money = last_money[torch.arange(len(last_money)) != j].mean(0)
    v = last_river[i]  # patched at the last layer: the donor's own vector
    expected = float(F.cosine_similarity(v, c_river, 0) > F.cosine_similarity(v, c_money, 0))
    assert result["follows"][0, L].item() == expected
    # the context probe: the rest of the sentence, unpatched at the last layer (nothing runs above it)
    def rest(t):
        keep = [k for k in range(t.seq_len) if k not in t.find_word("bank").positions]
        return t.hidden(L)[keep].mean(0)

    rest_river = torch.stack([rest(t) for t in bank["river"]])
    rest_money = torch.stack([rest(t) for t in bank["money"]])
    r_river = rest_river[torch.arange(len(rest_river)) != i].mean(0)
    r_money = rest_money[torch.arange(len(rest_money)) != j].mean(0)
    w = rest_money[j]  # the target sentence's own context, untouched by a last-layer patch
    assert result["follows_context"][0, L].item() == float(F.cosine_similarity(w, r_river, 0)
                                                          > F.cosine_similarity(w, r_money, 0))
    assert result["control_context"][0].item() == 1.0 - result["follows_context"][0, L].item()
    with pytest.raises(ValueError, match="is not in the input"):
        C.sense_patching(model, bank["river"], bank["money"], "river")


def _pairs(n_a, n_b, outcome, k=1):
    pairs = [(i, j) for i in range(n_a) for j in range(n_b)]
    return {"pairs": pairs, "follows": torch.tensor([[float(outcome(i, j))] * k for i, j in pairs])}


def test_word_cluster_shares_resample_words():
    """The pooled share resamples whole words (cluster_bootstrap_ci with the word as the cluster),
    which is wider than resampling the pairs as if independent."""
    results = {f"w{k}": _pairs(5, 5, lambda i, j, k=k: (i + j + k) % 3 == 0) for k in range(8)}
    (ci,), boots, word_shares = C.word_cluster_shares(results)
    values = np.concatenate([r["follows"][:, 0].numpy() for r in results.values()])
    clusters = np.repeat(list(results), 25)
    direct = cluster_bootstrap_ci(values, clusters, n_boot=2000)
    assert (ci.estimate, ci.low, ci.high) == pytest.approx((direct.estimate, direct.low, direct.high))
    assert boots.shape == (2000, 1) and word_shares.shape == (8, 1)
    assert word_shares[:, 0] == pytest.approx([r["follows"].mean().item() for r in results.values()])
    # every pair alike: the exact interval of 8 out of 8 words, not a zero-width one
    (ones,), _, _ = C.word_cluster_shares({f"w{k}": _pairs(5, 5, lambda i, j: 1) for k in range(8)})
    assert (ones.estimate, ones.high) == (1.0, 1.0) and ones.low == pytest.approx(0.025 ** (1 / 8))
    with pytest.raises(ValueError, match="at least two words"):
        C.word_cluster_shares({"w": _pairs(3, 3, lambda i, j: 1)})


def test_share_verdicts_need_the_words_to_agree():
    """One estimand (the pooled share), one rule per column, Bonferroni over the columns: three
    unanimous words cannot show a majority (their exact interval over 3 words reaches below one
    half); three words that nearly agree cannot either (the p of 3 words cannot get below alpha:
    "too few words"); twelve can; a share near one half stays inconclusive."""
    few = {f"w{k}": _pairs(5, 5, lambda i, j: 1, k=2) for k in range(3)}
    few["w0"]["follows"][:3, 1] = 0  # column 1 varies a little
    verdicts = C.share_verdicts(*C.word_cluster_shares(few))
    assert [v.kind for v in verdicts] == ["inconclusive", "inconclusive"]
    # column 0, three words alike: the exact (Clopper-Pearson) interval of 3 of 3 at 97.5 %, whose
    # lower end solves p**3 = 0.0125 -- below one half; its p is the sign test's, 2 / 2**3, times 2
    assert verdicts[0].share.low == pytest.approx(0.0125 ** (1 / 3)) and verdicts[0].share.high == 1.0
    assert verdicts[0].adjusted_p == pytest.approx(2 * sign_test_p(3, 3)) and verdicts[0].p_text.startswith("p <=")
    # column 1, the words differ a little: the bootstrap interval of the pooled share, the same
    # estimand, is said to be inconclusive because its p cannot go below alpha with 3 words
    assert verdicts[1].share.estimate == pytest.approx(1 - 3 / 75)
    assert verdicts[1].adjusted_p >= 0.05 and "too few words for 2 comparisons" in verdicts[1].why
    many = {f"w{k}": _pairs(5, 5, lambda i, j, k=k: (i + j + k) % 5 != 0, k=1) for k in range(12)}
    (v,) = C.share_verdicts(*C.word_cluster_shares(many))
    assert v.kind == "above" and v.share.estimate == pytest.approx(0.8) and v.share.low > 0.5 and not v.why
    half = {f"w{k}": _pairs(4, 4, lambda i, j, k=k: (i + k) % 2 == 0) for k in range(12)}
    (h,) = C.share_verdicts(*C.word_cluster_shares(half))
    assert h.kind == "inconclusive" and h.share.contains(0.5)
    below = {f"w{k}": _pairs(5, 5, lambda i, j: 0) for k in range(12)}
    (b,) = C.share_verdicts(*C.word_cluster_shares(below))
    assert b.kind == "below" and b.share.high < 0.5
    for verdict_ in (*verdicts, v, h, b):  # interval, p and verdict agree
        clear = not verdict_.share.contains(0.5) and verdict_.adjusted_p < 0.05
        assert (verdict_.kind != "inconclusive") == clear
    with pytest.raises(ValueError, match="per interval"):
        C.share_verdicts([Interval(0.5, 0.4, 0.6)], np.zeros((10, 2)), np.zeros((3, 1)))


def _simulated_words(rng, n_words: int, share: float, spread: float = 0.15, pairs: int = 25) -> dict:
    """Words whose own share of following varies around ``share`` (a Beta with sd about
    ``spread``); each word's ``pairs`` patched pairs are 0/1 draws at its own share."""
    strength = share * (1 - share) / spread ** 2 - 1
    own = rng.beta(share * strength, (1 - share) * strength, size=n_words)
    return {f"w{k}": {"pairs": [(i, 0) for i in range(pairs)],
                      "follows": torch.tensor(rng.random((pairs, 1)) < p, dtype=torch.float32)}
            for k, p in enumerate(own)}


@pytest.mark.parametrize("n_words", [6, 12])
def test_share_verdicts_are_calibrated_on_clustered_zero_one_outcomes(n_words):
    """Simulated clustered 0/1 pairs (words differ in how often they follow): at a true share of one
    half, "above" or "below" comes out at most alpha of the time (within three Monte Carlo SE);
    at a true share of 0.7 the interval covers it at least 95 % of the time, likewise. A pair-level
    bootstrap (words ignored) fails the same check (``tests/test_common_stats_mutants.py``)."""
    from helpers.common.calibration import mc_se

    rng, r = np.random.default_rng(n_words), 300
    false_calls = covered = 0
    for _ in range(r):
        (v,) = C.share_verdicts(*C.word_cluster_shares(_simulated_words(rng, n_words, 0.5), n_boot=1000))
        false_calls += v.kind != "inconclusive"
        (w,) = C.share_verdicts(*C.word_cluster_shares(_simulated_words(rng, n_words, 0.7), n_boot=1000))
        covered += w.share.contains(0.7)
    assert false_calls / r <= 0.05 + 3 * mc_se(0.05, r), false_calls / r
    assert covered / r >= 0.95 - 3 * mc_se(0.95, r), covered / r


# -- one sentence, everything the explorer shows --------------------------------------------------------


def test_sentence_interventions_equal_full_runs(tokenizer, model, setup):
    classifier = setup[0]
    text = "Please set a timer for twenty minutes."
    effects = C.sentence_interventions(tokenizer, model, classifier, text, progress=False)
    L, A = C.model_sizes(model)
    assert effects.heads.shape[:2] == (L, A) and effects.skips.shape[0] == L
    assert torch.allclose(effects.base, full_logits(tokenizer, model, classifier, [text])[0], atol=1e-4)
    with C.ablate_head(model, 2, 4):
        assert torch.allclose(effects.logits(2, 4), full_logits(tokenizer, model, classifier, [text])[0], atol=1e-4)
    run = C.run_cached(tokenizer, model, [text])
    skipped = classifier(C.skip_layer(model, run, 5), run.attention_mask)[0]
    assert torch.allclose(effects.logits(5, None), skipped, atol=1e-4)
    assert torch.equal(effects.logits(0, None), effects.base)
    with pytest.raises(ValueError, match="valid heads are 0 to"):
        effects.logits(1, A)
    with pytest.raises(ValueError, match="valid layers are 0"):
        effects.logits(L + 1, 0)


@pytest.mark.slow
def test_run_cached_warns_when_a_text_is_truncated(tokenizer, model):
    short, long_text = "set a timer", " ".join(["please play some music in the kitchen"] * 6)
    n_long = len(tokenizer(long_text)["input_ids"])
    assert n_long > 32
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run = C.run_cached(tokenizer, model, [short, long_text], max_length=32)
    assert run.n_truncated == 1 and any("1 of 2 texts" in str(w.message) for w in caught)
    assert run.attention_mask.shape[1] == 32
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert C.run_cached(tokenizer, model, [short, long_text], max_length=n_long).n_truncated == 0
    assert C.count_truncated(tokenizer, [short, long_text], 5) == 1 + (len(tokenizer(short)["input_ids"]) > 5)
    with pytest.raises(ValueError, match="max_length"):
        C.count_truncated(tokenizer, [short], 2)


@pytest.mark.slow  # the heaviest of its kind; the --all tier (CI) runs it
def test_sentence_interventions_truncate_with_the_course_warning(tokenizer, model):
    head = C.SentenceHead(LinearHead(model.config.hidden_size, 3).eval())
    long_text = " ".join(["the bank by the river"] * 130)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        effects = C.sentence_interventions(tokenizer, model, head, long_text, progress=False)
    assert any("truncated" in str(w.message) for w in caught)
    assert effects.n_truncated > 0 and len(effects.tokens) == 512


# -- mean ablation, pruning ------------------------------------------------------------------


def test_mean_head_contexts_and_mean_ablation(tokenizer, model, setup):
    classifier, run, labels, texts = setup
    means = C.mean_head_contexts(model, run)
    seen = []
    handle = model.encoder.layer[1].attention.output.register_forward_pre_hook(lambda m, a: seen.append(a[0]))
    try:
        enc = tokenizer(texts, padding=True, truncation=True, max_length=32, return_tensors="pt")
        with torch.no_grad():
            model(**enc)
    finally:
        handle.remove()
    real = enc["attention_mask"].bool()
    assert torch.allclose(means[2], seen[0][real].mean(0), atol=1e-5)
    ablated = C.ablate_every_head(model, classifier, run, labels, fill=means, progress=False)
    d = model.config.hidden_size // model.config.num_attention_heads

    def put_mean(module, args):
        context = args[0].clone()
        context[..., 3 * d:4 * d] = means[2][3 * d:4 * d]
        return (context, *args[1:])

    handle = model.encoder.layer[1].attention.output.register_forward_pre_hook(put_mean)
    try:
        with torch.no_grad():
            expected = classifier(model(**enc).last_hidden_state, enc["attention_mask"])
    finally:
        handle.remove()
    assert torch.allclose(ablated.ablated[1, 3], expected, atol=1e-4)


def test_normalize_by_layer():
    scores = torch.tensor([[3.0, 4.0], [0.0, 2.0]])
    assert torch.allclose(C.normalize_by_layer(scores), torch.tensor([[0.6, 0.8], [0.0, 1.0]]))
    with pytest.raises(ValueError, match="layers, heads"):
        C.normalize_by_layer(torch.ones(3))


def test_pruning_curve_removes_heads_cumulatively(tokenizer, model, setup):
    classifier, run, labels, texts = setup
    L, A = model.config.num_hidden_layers, model.config.num_attention_heads
    order = [(l, h) for l in range(L, 0, -1) for h in range(A)]  # last layer's heads first
    correct, loss = C.pruning_curve(model, classifier, run, labels, order, fractions=(0.0, 1 / L))
    base = classifier(run.hidden(L), run.attention_mask)
    assert torch.equal(correct[0], (base.argmax(-1) == labels).float())
    assert torch.allclose(loss[0], F.cross_entropy(base, labels, reduction="none"), atol=1e-5)
    enc = tokenizer(texts, padding=True, truncation=True, max_length=32, return_tensors="pt")
    with torch.no_grad(), C.gated_heads(model, {L: torch.zeros(A)}):
        pruned = classifier(model(**enc).last_hidden_state, enc["attention_mask"])
    assert torch.allclose(loss[1], F.cross_entropy(pruned, labels, reduction="none"), atol=1e-4)
    reused = C.pruning_curve(model, classifier, run, labels, order, fractions=(0.0, 1 / L),
                             unchanged=(correct[0], loss[0]))
    assert torch.equal(reused[0], correct) and torch.allclose(reused[1], loss)
    sentinel = (torch.full_like(correct[0], 7.0), torch.full_like(loss[0], 7.0))  # really reused
    assert (C.pruning_curve(model, classifier, run, labels, order, fractions=(0.0,),
                            unchanged=sentinel)[0] == 7.0).all()
    with pytest.raises(ValueError, match="exactly once"):
        C.pruning_curve(model, classifier, run, labels, order[:-1])




# -- pruning against many random orders ---------------------------------------------------------------


def test_random_orders_are_seeded_permutations(model):
    L, A = model.config.num_hidden_layers, model.config.num_attention_heads
    orders = C.random_orders(model, 3, seed=5)
    assert len(orders) == 3 and all(sorted(o) == sorted((l, h) for l in range(1, L + 1) for h in range(A))
                                    for o in orders)
    assert orders == C.random_orders(model, 3, seed=5) and orders[0] != orders[1]
    with pytest.raises(ValueError, match="positive int"):
        C.random_orders(model, 0)


def test_pruning_outcomes_equal_one_pruning_curve_per_order(model, setup):
    """Many orders in one batch per share removed give what :func:`pruning_curve` gives order by
    order (including a share that removes no head)."""
    classifier, run, labels, _ = setup
    orders = C.random_orders(model, 3, seed=1)
    fractions = (0.0, 0.25, 0.5)
    batched = C.pruning_outcomes(model, classifier, run, labels, orders, fractions, max_tokens=600, progress=False)
    assert batched.shape == (3, 3, len(run))
    for r, order in enumerate(orders):
        one, _ = C.pruning_curve(model, classifier, run, labels, order, fractions)
        assert torch.equal(batched[r], one)
    with pytest.raises(ValueError, match="each listing"):
        C.pruning_outcomes(model, classifier, run, labels, [orders[0][:-1]], fractions)
    with pytest.raises(ValueError, match="shares in"):
        C.pruning_outcomes(model, classifier, run, labels, orders, (1.5,))


def _order_study(rng, n_items: int, n_orders: int, shift: float):
    """0/1 outcomes at one share removed: every item has its own chance to stay right, every random
    order moves all chances by its own amount (orders differ, symmetrically around 0), and the tested
    order moves them by ``shift``: at ``shift = 0`` it is exactly as good as the random orders'
    average, the null of the two-level interval."""
    item = rng.uniform(0.35, 0.85, n_items)
    moves = np.concatenate([[shift], rng.uniform(-0.1, 0.1, n_orders)])
    p = np.clip(item[None, :] + moves[:, None], 0, 1)
    outcomes = (rng.random(p.shape) < p).astype(float)
    return outcomes[0][None], outcomes[1:][:, None]


def test_pruning_comparison_calls_an_average_order_better_rarely():
    """The two-level interval's verdict when the order is exactly as good as the random orders'
    average: "higher" in at most alpha/2 of 400 simulated studies (one side of a 95 % interval), with
    an allowance of 0.025 for the Monte Carlo error (sd of a 2.5 % rate over 400 studies is 0.008);
    and it finds a real gain of 15 points. (An order drawn at random is another matter: it is truly
    better or worse than the average; that is what the rank test is for, tested in
    test_common_stats_calibration.)"""
    rng = np.random.default_rng(9)
    higher = sum(C.pruning_comparison(*_order_study(rng, 80, 30, 0.0), seed=s, n_boot=1000).verdict.kind == "higher"
                 for s in range(400))
    assert higher / 400 <= 0.025 + 0.025
    found = sum(C.pruning_comparison(*_order_study(rng, 150, 30, 0.15), seed=s, n_boot=1000).verdict.kind == "higher"
                for s in range(20))
    assert found >= 15


def test_pruning_comparison_counts_the_random_orders_beaten():
    order = np.ones((1, 10))
    randoms = np.zeros((4, 1, 10))
    randoms[0] = 1.0  # one random order as good as the tested one
    c = C.pruning_comparison(order, randoms)
    assert c.beaten == 3 and c.rank_p == pytest.approx(2 / 5) and c.n_orders == 4
    with pytest.raises(ValueError, match="R >= 2"):
        C.pruning_comparison(order, randoms[:1])


# -- the lesson's findings in plain words ---------------------------------------------------------------


def test_equivalence_resolution_is_tangos_half_width_with_nothing_changed():
    from helpers.common.stats import equivalence_level, tango_interval

    assert C.equivalence_resolution(385) == pytest.approx(float(tango_interval(0, 0, 385, 0.90)[1]))
    assert C.equivalence_resolution(385, 72) == pytest.approx(float(tango_interval(0, 0, 385, equivalence_level(72))[1]))
    assert C.equivalence_resolution(385) < 0.01 < C.equivalence_resolution(385, 72)  # lesson 12's margin
    with pytest.raises(ValueError, match="positive int"):
        C.equivalence_resolution(0)


def _changes(lost, n=400):
    """OutcomeChange rows with a known kind: row ``i`` loses ``lost[i]`` of ``n`` items that the
    unchanged model gets right (all right)."""
    base = np.ones(n)
    rows = np.stack([np.where(np.arange(n) < k, 0.0, 1.0) for k in lost])
    return C.outcome_changes(rows, base, [f"r{i}" for i in range(len(lost))], margin=0.01)


def test_head_and_skip_findings_name_what_the_verdicts_say():
    from helpers.common.claims import STATISTICS_TERMS

    changes = _changes([0, 0, 60, 0])  # the third head loses 60 of 400 items: clearly lower
    heads = [(1, 0), (1, 1), (2, 0), (2, 1)]
    drop = torch.tensor([[0.0, 0.0], [0.15, 0.0]])
    sentence, details = C.head_finding(changes, heads, drop, margin=0.01, n_items=400)
    assert "lowers the accuracy (2.0)" in sentence and "head 2.0" in sentence and "15.0 points" in sentence
    assert not any(t.lower() in sentence.lower() for t in STATISTICS_TERMS)
    assert "Bonferroni over 4" in details[0]
    sentence, details = C.skip_finding("intent accuracy", changes, head_mismatch=True)
    assert "skipping layer 3 lowers it" in sentence and "Layer 4 is set apart" in sentence
    assert len(details) == 5


def test_patch_and_pruning_findings():
    from helpers.common.stats import Interval

    V = C.ShareVerdict
    verdicts = [V(Interval(0.1, 0.0, 0.2, 0.99), 0.001, 0.003, "below"),
                V(Interval(0.5, 0.3, 0.7, 0.99), 0.9, 1.0, "inconclusive"),
                V(Interval(0.9, 0.8, 1.0, 0.99), 0.001, 0.003, "above")]
    context = [V(Interval(0.1, 0.0, 0.2, 0.99), 0.001, 0.003, "below")] * 3
    sentence, details = C.patch_finding(verdicts, context, 12)
    assert sentence.startswith("Patched at layer 2 or above, most sentence pairs follow the patch")
    assert "patched at the embeddings, the context wins" in sentence and "at layer 1 we cannot tell" in sentence
    assert "never follows" in sentence and len(details) == 4
    comp = C.pruning_comparison(np.ones((1, 50)), np.zeros((20, 1, 50)) + (np.arange(50) < 25))
    text, lines = C.pruning_finding(comp, 0.5, 50)
    assert "more than 20 of 20 random orders" in text and "beats their mean by about 50.0 points" in text
    assert any("1/(R + 1) = 0.0476" in line for line in lines)


def test_claim_rows_keep_the_stories_order_and_leave_out_what_was_not_measured():
    from helpers.common.claims import Claim

    rows = C.claim_rows({"skip": Claim("S.", ["d1", "d2"]), "heads": Claim("H.", []), "patch": None})
    assert [r[0] for r in rows] == [C.STORIES["heads"][0], C.STORIES["skip"][0]]
    assert rows[1] == (C.STORIES["skip"][0], "S.", C.STORIES["skip"][1], "d1 d2")
    with pytest.raises(ValueError, match="no story"):
        C.claim_rows({"nothing": Claim("x", [])})


def test_pooling_note_reads_the_configuration():
    assert "mean pooling is our choice" not in C.pooling_note("m", ["mean_tokens"])
    assert "pools by cls_token" in C.pooling_note("m", ["cls_token"])
    assert "no sentence-transformers configuration" in C.pooling_note("m", None)


def test_banking_setup_is_the_lessons_first_cells(tokenizer, model):
    from helpers.common.budget import choose_budget

    task = C.banking_setup(tokenizer, model, choose_budget("quick", model), progress=False)
    assert task.train.num_classes == 5 and len(task.train) == 40 and len(task.test) == 10
    assert task.max_len == 128
    features = C.pooled_features(tokenizer, model, task.test.texts, max_length=task.max_len, progress=False)
    enc = tokenizer(task.test.texts, padding=True, truncation=True, max_length=task.max_len, return_tensors="pt")
    with torch.no_grad():
        logits = task.classifier(model(**enc).last_hidden_state, enc["attention_mask"])
    assert torch.allclose(task.head(features), logits, atol=1e-4)
    again = C.banking_setup(tokenizer, model, choose_budget("quick", model), progress=False)
    assert torch.allclose(again.head(features), logits, atol=1e-5)  # seeded: the same head every time


def test_polysemy_traces_and_patching_every_word(tokenizer, model):
    poly = C.polysemy_traces(tokenizer, model, 2, progress=False)
    assert len(poly.words) == 2 and len(poly.traces) == len(poly.jobs) == len(poly.spans)
    w, senses = next(iter(poly.words.items()))
    s = next(iter(senses))
    assert [t.text for t in poly.of(w, s)] == senses[s]
    patch = C.patch_every_word(model, poly)
    assert set(patch) == set(poly.words)
    first = patch[w]
    assert first["senses"] == tuple(list(senses)[:2])
    assert first["follows"].shape == (len(senses[s]) * len(senses[list(senses)[1]]), model.config.num_hidden_layers + 1)


def test_the_stories_shown_in_the_claims_table_speak_no_statistics():
    """The story and paper columns of lessons 12 and 13 are visible output (issue 35)."""
    from helpers.attribution.findings import STORIES as ATTRIBUTION_STORIES
    from helpers.common.claims import STATISTICS_TERMS

    for story, paper in list(C.STORIES.values()) + list(ATTRIBUTION_STORIES.values()):
        assert not [t for t in STATISTICS_TERMS if t.lower() in (story + paper).lower()], (story, paper)


def test_worst_head_breaks_ties_by_the_logit_drop():
    drop = torch.tensor([[0.02, 0.03], [0.03, 0.0]])
    assert C.worst_head(drop) == 1  # the first of the tied largest
    assert C.worst_head(drop, tiebreak=torch.tensor([[9.0, 0.1], [0.5, 9.0]])) == 2


# -- the lesson's machinery, moved out of lesson 12 ------------------------------------------------


@pytest.mark.slow  # several seconds: runs in the --all tier (CI)
def test_first_per_class_and_subsets_equal_a_run_of_those_items(tokenizer, model, setup):
    assert C.first_per_class([2, 0, 2, 1, 0, 2], 1) == [0, 1, 3]
    assert C.first_per_class([2, 0, 2, 1, 0, 2], 2) == [0, 1, 2, 3, 4]
    classifier, run, y, texts = setup
    items = C.first_per_class(y.tolist(), 1)
    sub = run.subset(items)
    assert len(sub) == len(items) and sub.tokens == [run.tokens[i] for i in items]
    assert torch.equal(sub.token_shares, run.token_shares[items])
    # the subset run, ablated on its own, equals the whole ablation cut to those items
    whole = C.ablate_every_head(model, classifier, run, y, progress=False)
    alone = C.ablate_every_head(model, classifier, sub, y[items], progress=False)
    cut = whole.subset(items)
    assert torch.allclose(cut.ablated, alone.ablated, atol=1e-4)
    assert torch.allclose(cut.base, full_logits(tokenizer, model, classifier, [texts[i] for i in items]), atol=1e-4)
    assert torch.equal(cut.labels, y[items])


def test_resolution_lines_read_tangos_half_width():
    from helpers.common.stats import equivalence_level, tango_interval

    lines = C.resolution_lines(385, {"one intervention": 1, "72 heads": 72}, 0.01)
    one = 100 * float(tango_interval(0, 0, 385, 0.90)[1])
    many = 100 * float(tango_interval(0, 0, 385, equivalence_level(72))[1])
    assert lines[0] == (f"{'one intervention':>16} on 385 utterances: smallest margin that can read 'equivalent' "
                        f"{one:.2f} points -> can be shown equivalent within the margin")
    assert lines[1].startswith("        72 heads on 385") and f"{many:.2f} points -> can never be" in lines[1]


def _synthetic_ablation(seed=0, n=12, L=3, A=4, C_=5):
    g = torch.Generator().manual_seed(seed)
    base = torch.randn(n, C_, generator=g)
    return C.HeadAblation(base, base + 0.8 * torch.randn(L, A, n, C_, generator=g), torch.arange(n) % C_)


def test_head_ablation_details_name_the_worst_head_and_the_scale():
    ab = _synthetic_ablation()
    drop, logit = ab.accuracy_drop(), ab.logit_drop_items().mean(0)
    # the worst head by hand: largest accuracy drop, ties broken by the larger logit drop
    flat = [(float(drop.flatten()[k]), float(logit.flatten()[k]), -k) for k in range(drop.numel())]
    k = -max(flat)[2]
    worst = (k // 4 + 1, k % 4)
    lines = C.head_ablation_details(ab, drop, logit, 12)
    assert lines[0].startswith(f"heads the data cannot rank below {worst[0]}.{worst[1]}: ")
    assert f"{worst[0]}.{worst[1]}" in lines[0].split(": ")[1]  # a head is tied with itself
    lower_middle = np.sort(logit.numpy().ravel())[(logit.numel() - 1) // 2]  # torch's median of an even count
    assert lines[1] == (f"one utterance is {100 / 12:.2f} points; true-class logit drop over all heads: median "
                        f"{lower_middle:.3f}, largest {float(logit.numpy().max()):.3f}")


def _within_layer_rho(a, b):
    from scipy.stats import spearmanr

    ma, mb = np.asarray(a, dtype=float).mean(0), np.asarray(b, dtype=float).mean(0)
    return float(np.mean([spearmanr(ma[l], mb[l])[0] for l in range(ma.shape[0])]))


def test_zero_vs_mean_finding_reads_the_rank_correlation_and_the_gap():
    zero, mean = _synthetic_ablation(0), _synthetic_ablation(1)
    rho = _within_layer_rho(zero.loss_increase_items(), mean.loss_increase_items())
    zdl = np.asarray([[float(F.cross_entropy(zero.ablated[l, h], zero.labels) - F.cross_entropy(zero.base, zero.labels))
                       for h in range(4)] for l in range(3)])
    mdl = np.asarray([[float(F.cross_entropy(mean.ablated[l, h], mean.labels) - F.cross_entropy(mean.base, mean.labels))
                       for h in range(4)] for l in range(3)])
    gap = divmod(int(np.argmax(zdl - mdl)), 4)
    sentence, details = C.zero_vs_mean_finding(zero, mean, gap, margin=0.01)
    assert f"rank correlation {rho:+.2f}" in sentence and "12 utterances" in sentence
    assert sentence.endswith(f" Zeroing hurts most beyond the mean at head {gap[0] + 1}.{gap[1]} "
                             f"(loss {zdl[gap]:+.3f} vs {mdl[gap]:+.3f}).")
    counts = [d for d in details if d.startswith(("zero-ablation", "mean-ablation"))]
    assert len(counts) == 2 and counts[0].startswith("zero-ablation, 12 heads on 12 utterances: ")
    assert sum(int(part.split()[-1]) for part in counts[0].split(": ")[1].split(", ")) == 12


def test_pattern_and_gradient_findings_rank_within_layers():
    from scipy.stats import spearmanr

    g = torch.Generator().manual_seed(3)
    loss = torch.randn(20, 3, 5, generator=g)
    shares = loss + 0.3 * torch.randn(20, 3, 5, generator=g)  # goes with the loss
    sentence, details = C.pattern_finding(shares, loss, "[SEP]", level=0.975)
    rho = _within_layer_rho(shares, loss)
    assert sentence == (f"Within a layer, heads with more attention on [SEP] matter more (rank correlation "
                        f"{rho:+.2f}, 20 utterances).")
    across = spearmanr(shares.mean(0).flatten(), loss.mean(0).flatten())[0]
    assert f"rho = {across:.3f}" in details[-1] and "97.5 % interval" in details[0]
    grads = -loss + 0.3 * torch.randn(20, 3, 5, generator=g)  # the gate gradient: minus the loss change
    normalized = grads.abs() / grads.abs().mean(0).norm(dim=1)[None, :, None]
    sentence, details = C.gradient_finding(grads, loss, normalized, seconds=(0.25, 3.0))
    rho = _within_layer_rho(grads.abs(), loss.abs())
    assert f"(rank correlation {rho:+.2f}, 20 utterances). It took 0.2 s, the removal 3.0 s." in sentence
    signed = _within_layer_rho(-grads, loss)
    assert details[-4].startswith(f"signed, E[-g] vs E[dL], mean within layers: rho = {signed:.3f}")
    normed = spearmanr(normalized.mean(0).flatten(), loss.abs().mean(0).flatten())[0]
    assert details[-1].startswith(f"E|g| normalised per layer vs E|dL|, across all 15 heads: rho = {normed:.3f}")


def test_pruning_rows_and_finding_name_the_first_share_that_lowers():
    n, fractions = 400, (0.0, 0.1, 0.2, 0.3)
    correct = np.ones((4, n))
    correct[3, :80] = 0  # 30 % removed: 80 of 400 utterances lost
    changes = C.outcome_changes(correct[1:], correct[0], ["10%", "20%", "30%"], margin=0.01)
    rows = C.pruning_rows(fractions, correct, changes)
    assert rows[0]["removed"] == "0%" and rows[0]["change [interval]"] == "-"
    assert rows[3]["accuracy"].startswith("80.0% [") and rows[3]["against nothing removed"] == "lowers"
    assert rows[3]["change [interval]"].startswith("-0.200 [")
    comp = C.pruning_comparison(np.ones((1, 50)), np.zeros((20, 1, 50)) + (np.arange(50) < 25))
    sentence, details = C.pruning_curve_finding(changes, fractions, comp, 0.5, 50)
    assert sentence.startswith("Removing the least important heads first, the accuracy is first measurably lower "
                               "than with nothing removed at 30%. With 50% of the heads removed")
    assert "Bonferroni over 3 comparisons" in details[0] and len(details) == 3
    sentence, _ = C.pruning_curve_finding(changes[:2], fractions[:3], comp, 0.5, 50)
    assert sentence.startswith("Removing the least important heads first, no share removed lowers")


def test_skip_verdicts_and_rows():
    n = 400
    correct = np.ones((4, n))
    correct[2, :60] = 0  # layer 2 skipped: 60 of 400 lost
    changes, panels = C.skip_verdicts({"intent": (correct, None, "test accuracy", 0.2)}, margin=0.01)
    assert [c.kind for c in changes["intent"]][1] == "lower"
    assert changes["intent"][1].difference.estimate == pytest.approx(-60 / n)
    unchanged, skipped, ylabel, chance = panels["intent"]
    assert unchanged.estimate == 1.0 and [s.estimate for s in skipped] == pytest.approx([1.0, 1 - 60 / n, 1.0])
    assert (ylabel, chance) == ("test accuracy", 0.2)
    words = np.repeat(["a", "b", "c", "d"], 10)
    clustered = np.ones((3, 40))
    clustered[1, :10] = 0  # every sentence of word "a"
    ch, pn = C.skip_verdicts({"senses": (clustered, words, "loo", 0.5)}, margin=0.01)
    assert ch["senses"][0].difference.estimate == pytest.approx(-0.25) and pn["senses"][0].estimate == 1.0
    rows = C.skip_rows(changes["intent"], head_mismatch=True)
    assert [r["layer skipped"] for r in rows] == ["1", "2", "3"]
    assert rows[1]["against nothing skipped"] == "lowers" and rows[1]["accuracy"].startswith("85.0% [")
    assert rows[2]["against nothing skipped"].endswith(" (head mismatch)")
    assert not rows[1]["against nothing skipped"].endswith("(head mismatch)")


def test_probe_finding_and_patch_rows():
    from helpers.common.stats import Interval

    V = C.ShareVerdict
    good = V(Interval(0.9, 0.8, 1.0, 0.95), 0.001, 0.002, "above")
    coin = V(Interval(0.6, 0.2, 0.9, 0.95), 0.4, 0.4, "inconclusive")
    sentence, details = C.probe_finding(good, 40, 4)
    assert sentence == "Without a patch, the probe reads the target's own sense in 90% of the 40 sentence pairs, " \
                       "better than a coin."
    assert details == ["4 words resampled: 90.0% [80.0, 100.0], p = 0.002"]
    assert C.probe_finding(coin, 40, 4)[0].endswith("we cannot tell it from a coin, so the follow rates below mean "
                                                    "little.")
    rows = C.patch_rows([coin, good], [good, coin])
    assert rows[0] == {"patched layer": "emb", "at the word": "60% [20, 90]", "a majority": "cannot tell",
                       "rest of the sentence": "90% [80, 100]", "a majority (rest)": "follows the patch"}
    assert rows[1]["patched layer"] == 1


def test_flip_lines_spell_out_each_skip_that_flips():
    base = torch.tensor([3.0, 1.0, 0.0])
    heads = base.repeat(2, 3, 1)
    heads[1, 2] = torch.tensor([0.0, 2.0, 0.0])  # one head removal flips to class 1
    skips = torch.stack([base, torch.tensor([2.0, 2.5, 0.0])])  # skipping layer 2 flips to class 1
    effects = C.SentenceInterventions("t", ["t"], base, heads, skips)
    lines = C.flip_lines(effects, ["a", "b", "c"])
    assert lines == ["1 of 6 single-head removals change the predicted class of SENTENCE; skipping layer(s) [2] does",
                     "  skipping layer 2: the 'a' logit changes by -1.0, the 'b' logit by +1.5, so 'b' wins"]
    effects.skips = base.repeat(2, 1)
    assert C.flip_lines(effects, ["a", "b", "c"])[-1].endswith("skipping layer(s) none does")


def test_sense_groups_and_join_claims():
    from types import SimpleNamespace

    from helpers.common.claims import Claim

    poly = SimpleNamespace(jobs=[("bank", "money"), ("bank", "river"), ("bank", "money"), ("bat", "animal")],
                           words={"bank": {"money": [], "river": []}, "bat": {"animal": []}})
    vectors = torch.arange(3 * 4 * 2, dtype=torch.float).view(3, 4, 2)  # [variants, sentences, H]
    groups = C.sense_groups(vectors, poly)
    assert groups["bank"]["money"].shape == (2, 3, 2)
    assert torch.equal(groups["bank"]["money"][1], vectors[:, 2])
    assert torch.equal(groups["bat"]["animal"][0], vectors[:, 3])
    joined = C.join_claims(Claim("A.", ["a"]), Claim("B.", ["b1", "b2"]))
    assert (joined.sentence, joined.details) == ("A. B.", ["a", "b1", "b2"])


def test_parking_details_reads_the_largest_share_and_the_heads_over_half():
    from helpers.interventions.compute import parking_details

    # a 2-layer, 3-head map worked out by hand: largest 0.90, three heads above one half
    cls = torch.tensor([[0.10, 0.90, 0.51], [0.50, 0.70, 0.20]])
    sep = torch.zeros(2, 3)
    lines = parking_details({"[CLS]": cls, "[SEP]": sep})
    assert lines[0] == "[CLS]: largest share of one head 0.90; heads with more than half their attention there: 3 of 6"
    assert lines[1].endswith("0 of 6") and "0.00" in lines[1]
