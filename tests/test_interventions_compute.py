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
from helpers.common.stats import Interval, bootstrap_ci, cluster_bootstrap_ci, mcnemar
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


def test_pooled_features_equal_lesson_07(tokenizer, model, banking):
    train, _ = banking
    texts = train.texts[:20]
    ours = C.pooled_features(tokenizer, model, texts, max_length=64, batch_size=7, progress=False)
    lesson07 = extract_features(tokenizer, model, texts, max_length=64, progress=False)
    L = model.config.num_hidden_layers
    assert torch.allclose(ours, lesson07.layer(L, "mean"), atol=1e-4)
    assert torch.allclose(C.pooled_features(tokenizer, model, texts, max_length=64, pooling="cls", progress=False),
                          lesson07.layer(L, "cls"), atol=1e-4)
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


# -- lesson 05's statistics per head ----------------------------------------------------------------


def test_head_shares_average_to_lesson_05(tokenizer, model, setup):
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


def test_word_vectors_match_lesson_06(model, bank):
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
    """Bonferroni over the columns, the small-sample rule over the words: three unanimous words
    cannot show a majority (their exact interval over 3 words reaches below one half); twelve can;
    a share near one half stays inconclusive; the verdict is read off the printed share interval."""
    few = {f"w{k}": _pairs(5, 5, lambda i, j: 1, k=2) for k in range(3)}
    few["w0"]["follows"][:3, 1] = 0  # column 1 varies a little
    verdicts = C.share_verdicts(*C.word_cluster_shares(few))
    assert [v.kind for v in verdicts] == ["inconclusive", "inconclusive"]
    assert verdicts[0].share.low == 0.0 and verdicts[0].share.high == 1.0  # 3 words: no order statistic reaches 97.5 %
    many = {f"w{k}": _pairs(5, 5, lambda i, j, k=k: (i + j + k) % 5 != 0, k=1) for k in range(12)}
    (v,) = C.share_verdicts(*C.word_cluster_shares(many))
    assert v.kind == "above" and v.share.estimate == pytest.approx(0.8) and v.share.low > 0.5
    half = {f"w{k}": _pairs(4, 4, lambda i, j, k=k: (i + k) % 2 == 0) for k in range(12)}
    (h,) = C.share_verdicts(*C.word_cluster_shares(half))
    assert h.kind == "inconclusive" and h.share.contains(0.5)
    below = {f"w{k}": _pairs(5, 5, lambda i, j: 0) for k in range(12)}
    (b,) = C.share_verdicts(*C.word_cluster_shares(below))
    assert b.kind == "below" and b.share.high < 0.5
    for verdict_ in (*verdicts, v, h, b):  # interval and verdict agree
        assert (verdict_.kind == "inconclusive") == verdict_.share.contains(0.5)
    with pytest.raises(ValueError, match="per interval"):
        C.share_verdicts([Interval(0.5, 0.4, 0.6)], np.zeros((10, 2)), np.zeros((3, 1)))


# -- attribution ----------------------------------------------------------------------------------------


def test_rollout_by_hand(sample_trace):
    T = sample_trace.seq_len
    eye = torch.eye(T)
    steps = []
    for layer in range(1, 4):
        mixed = 0.5 * sample_trace.attention(layer).mean(0) + 0.5 * eye
        steps.append(mixed / mixed.sum(-1, keepdim=True))
    rollout = C.attention_rollout(sample_trace.attentions[:3])
    assert torch.allclose(rollout, steps[2] @ steps[1] @ steps[0], atol=1e-6)
    assert torch.allclose(rollout.sum(-1), torch.ones(T), atol=1e-5)
    assert torch.allclose(C.rollout_scores(sample_trace, "cls"), C.attention_rollout(sample_trace.attentions)[0])
    last = sample_trace.attention(sample_trace.num_layers)
    assert torch.allclose(C.raw_attention_scores(sample_trace), last.mean(0).mean(0))
    with pytest.raises(ValueError, match="heads, T, T"):
        C.attention_rollout([torch.ones(3, 4)])


def test_gradient_x_input_matches_a_directional_finite_difference(model, setup, sample_trace):
    classifier = setup[0]
    scores = C.gradient_x_input(model, classifier, sample_trace, target=1)
    e = sample_trace.hidden(0)[None]
    ones = torch.ones(1, sample_trace.seq_len, dtype=torch.long)

    def logit(scale_token, t):
        x = e.clone()
        x[0, scale_token] *= 1 + t
        with torch.no_grad():
            return classifier(C.continue_from(model, x, ones, 0), ones)[0, 1].item()

    for j in (1, 4):
        fd = (logit(j, 1e-3) - logit(j, -1e-3)) / 2e-3
        assert abs(fd - scores[j].item()) < 1e-3 + 0.05 * abs(fd)


def test_occlusion_drops_the_token_and_reruns(tokenizer, model, setup, sample_trace):
    classifier = setup[0]
    scores = C.occlusion_scores(model, classifier, sample_trace, target=2)
    assert torch.isnan(scores[0]) and torch.isnan(scores[-1])  # [CLS] and [SEP] are never dropped
    ids = sample_trace.input_ids.tolist()
    with torch.no_grad():
        full = classifier(model(input_ids=torch.tensor([ids])).last_hidden_state, torch.ones(1, len(ids)))[0, 2]
        short = ids[:3] + ids[4:]
        hidden = model(input_ids=torch.tensor([short])).last_hidden_state
        without = classifier(hidden, torch.ones(1, len(short)))[0, 2]
    assert torch.isclose(scores[3], full - without, atol=1e-4)
    windows = C.occlusion_windows(list(range(1, 11)), max_passes=3)
    assert len(windows) <= 3 and sum(windows, []) == list(range(1, 11))
    coarse = C.occlusion_scores(model, classifier, sample_trace, target=2, max_passes=2)
    first = C.occlusion_windows(list(range(1, sample_trace.seq_len - 1)), 2)[0]
    assert len(set(coarse[first].tolist())) == 1
    with pytest.raises(ValueError, match="positive int"):
        C.occlusion_windows([1, 2], 0)
    with pytest.raises(ValueError, match="not a class of this head"):
        C.occlusion_scores(model, classifier, sample_trace, target=99)
    with pytest.raises(ValueError, match="not a class of this head"):
        C.gradient_x_input(model, classifier, sample_trace, target=-1)


def test_attribution_scores_has_every_method(model, setup, sample_trace):
    scores = C.attribution_scores(model, setup[0], sample_trace, target=0)
    assert tuple(scores) == C.ATTRIBUTION_METHODS
    assert all(s.shape == (sample_trace.seq_len,) for s in scores.values())


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


# -- Integrated Gradients (Captum), faithfulness, mean ablation, pruning ---------------------------


def _plain_logits(model, classifier, ids, mask=None):
    mask = torch.ones_like(ids) if mask is None else mask
    with torch.no_grad():
        return classifier(model(input_ids=ids, attention_mask=mask).last_hidden_state, mask)


def test_baseline_ids_keep_cls_and_sep(tokenizer, sample_trace):
    ids = sample_trace.input_ids[None]
    pad, mask = C.baseline_ids(tokenizer, ids, "pad"), C.baseline_ids(tokenizer, ids, "mask")
    assert pad[0, 0] == tokenizer.cls_token_id and pad[0, -1] == tokenizer.sep_token_id
    assert (pad[0, 1:-1] == tokenizer.pad_token_id).all() and (mask[0, 1:-1] == tokenizer.mask_token_id).all()
    with pytest.raises(ValueError, match="choose one of"):
        C.baseline_ids(tokenizer, ids, "zeros")


def test_integrated_gradients_match_a_riemann_sum_by_hand(tokenizer, model, setup, sample_trace):
    """Captum's IG against IG written out: interpolate the word embeddings (a forward hook on
    ``word_embeddings``), midpoint rule, gradients summed; and completeness (Captum's delta)."""
    classifier = setup[0]
    ig = C.integrated_gradients(tokenizer, model, classifier, sample_trace, 1, steps=(64,), tolerance=0.05)
    ids = sample_trace.input_ids[None]
    ref = C.baseline_ids(tokenizer, ids)
    full, base = _plain_logits(model, classifier, ids)[0, 1], _plain_logits(model, classifier, ref)[0, 1]
    assert abs(ig.f_input - full.item()) < 1e-4 and abs(ig.f_baseline - base.item()) < 1e-4
    assert abs(ig.scores.sum().item() - ig.gap - ig.delta) < 1e-4
    assert ig.converged and abs(ig.delta) < 0.05 * abs(ig.gap)
    table = model.embeddings.word_embeddings
    e1, e0 = table(ids).detach(), table(ref).detach()
    n, total = 100, torch.zeros_like(e1)
    for a in (torch.arange(n) + 0.5) / n:
        point = (e0 + a * (e1 - e0)).requires_grad_(True)
        handle = table.register_forward_hook(lambda m, i, o: point)
        try:
            logit = classifier(model(input_ids=ids).last_hidden_state, torch.ones_like(ids))[0, 1]
        finally:
            handle.remove()
        total += torch.autograd.grad(logit, point)[0] / n
    by_hand = ((e1 - e0) * total).sum(-1)[0]
    assert torch.allclose(ig.scores, by_hand, atol=0.02 * by_hand.abs().max().item())


def test_integrated_gradients_raise_the_steps_until_complete(tokenizer, model, setup, sample_trace):
    ig = C.integrated_gradients(tokenizer, model, setup[0], sample_trace, 0, steps=(2, 64), tolerance=1e-9)
    assert [n for n, _ in ig.history] == [2, 64] and ig.steps == 64 and not ig.converged
    with pytest.raises(ValueError, match="steps"):
        C.integrated_gradients(tokenizer, model, setup[0], sample_trace, 0, steps=())
    with pytest.raises(ValueError, match="valid classes"):
        C.integrated_gradients(tokenizer, model, setup[0], sample_trace, 99)


def test_integrated_gradients_by_embedding_parts(tokenizer, model, setup, sample_trace):
    parts = C.integrated_gradients_by_embedding(tokenizer, model, setup[0], sample_trace, 2, steps=32)
    total = sum(parts[k].sum().item() for k in ("word", "segment", "position"))
    assert abs(total - parts["gap"] - parts["delta"]) < 1e-4
    assert torch.equal(parts["segment"], torch.zeros_like(parts["segment"]))  # one sentence: segment = baseline
    positions = torch.zeros(1, sample_trace.seq_len, dtype=torch.long)
    ref = C.baseline_ids(tokenizer, sample_trace.input_ids[None])
    with torch.no_grad():
        f_ref = setup[0](model(input_ids=ref, position_ids=positions).last_hidden_state, torch.ones_like(ref))[0, 2]
    full = _plain_logits(model, setup[0], sample_trace.input_ids[None])[0, 2]
    assert abs(parts["gap"] - (full - f_ref).item()) < 1e-4


def test_gradient_x_input_equals_captum(model, setup, sample_trace):
    ours = C.gradient_x_input(model, setup[0], sample_trace, 3)
    assert torch.allclose(ours, C.gradient_x_input_captum(model, setup[0], sample_trace, 3), atol=1e-5)


def test_norm_attention_scores_are_lesson_05s(model, sample_trace):
    from helpers.attention.compute import norm_attention

    weighted = norm_attention(sample_trace, model)[-1].mean(0)
    assert torch.allclose(C.norm_attention_scores(sample_trace, model), weighted.mean(0))
    assert torch.allclose(C.norm_attention_scores(sample_trace, model, "cls"), weighted[0])


def test_top_tokens_rank_by_signed_score():
    scores = torch.tensor([9.0, -5.0, 2.0, 2.0, 0.5, 9.0])
    assert C.top_tokens(scores, [1, 2, 3, 4], 0.5) == [2, 3]  # -5 is last: it argues against
    assert C.top_tokens(scores, [1, 2, 3, 4], 0.1) == [2]  # at least one token
    with pytest.raises(ValueError, match="fraction"):
        C.top_tokens(scores, [1, 2], 0.0)


def test_removal_probabilities_drop_mask_or_pad(tokenizer, model, setup, sample_trace):
    classifier = setup[0]
    ids = sample_trace.input_ids.tolist()
    probs = {how: C.removal_probabilities(tokenizer, model, classifier, sample_trace, 2, [[], [2, 4]], how=how)
             for how in C.REMOVALS}
    full = _plain_logits(model, classifier, torch.tensor([ids])).softmax(-1)[0, 2]
    dropped = _plain_logits(model, classifier, torch.tensor([ids[:2] + ids[3:4] + ids[5:]])).softmax(-1)[0, 2]
    masked = list(ids)
    masked[2] = masked[4] = tokenizer.mask_token_id
    mask_p = _plain_logits(model, classifier, torch.tensor([masked])).softmax(-1)[0, 2]
    for how in C.REMOVALS:
        assert abs(probs[how][0] - full) < 1e-5
    assert abs(probs["drop"][1] - dropped) < 1e-5 and abs(probs["mask"][1] - mask_p) < 1e-5
    with pytest.raises(ValueError, match="choose one of"):
        C.removal_probabilities(tokenizer, model, classifier, sample_trace, 2, [[1]], how="blank")


def test_erasure_curves_are_eraser_metrics(tokenizer, model, setup, sample_trace):
    classifier = setup[0]
    positions = list(range(1, sample_trace.seq_len - 1))
    scores = torch.arange(sample_trace.seq_len, dtype=torch.float)  # later tokens rank first
    curves = C.erasure_curves(tokenizer, model, classifier, sample_trace, 1, {"later first": scores}, positions,
                              fractions=(0.25, 0.5))
    top = C.top_tokens(scores, positions, 0.25)
    rest = [p for p in positions if p not in top]
    p = C.removal_probabilities(tokenizer, model, classifier, sample_trace, 1, [[], top, rest])
    assert abs(curves["later first"]["comprehensiveness"][0] - (p[0] - p[1]).item()) < 1e-6
    assert abs(curves["later first"]["sufficiency"][0] - (p[0] - p[2]).item()) < 1e-6
    assert curves["later first"]["comprehensiveness"].shape == (2,)
    randoms = C.random_rankings(positions, sample_trace.seq_len, 3, seed=1)
    assert len(randoms) == 3 and not torch.equal(randoms["random 0"], randoms["random 1"])


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


def test_value_zeroing_by_hand(model, sample_trace):
    """One column by hand: the layer run once with token j's value vector zeroed (a hook on the
    full attention module's value projection), cosine distance per output token, rows normalised."""
    layer, T = 2, sample_trace.seq_len
    scores = C.value_zeroing(model, sample_trace, layer)
    assert scores.shape == (T, T) and torch.allclose(scores.sum(-1), torch.ones(T), atol=1e-5)
    module = model.encoder.layer[layer - 1]
    distances = []
    for j in range(T + 1):  # the last run zeroes nothing: the reference
        def zero(mod, args, out, j=j):
            out = out.clone()
            out[:, j:j + 1] = 0.0  # j == T: an empty slice, nothing zeroed
            return out

        handle = module.attention.self.value.register_forward_hook(zero)
        try:
            with torch.no_grad():
                out = C._call_layer(module, sample_trace.hidden(layer - 1)[None],
                                    C.additive_mask(torch.ones(1, T, dtype=torch.long)))[0]
        finally:
            handle.remove()
        distances.append(out.double())
    assert torch.allclose(distances[T].float(), sample_trace.hidden(layer), atol=1e-4)
    by_hand = torch.stack([1 - F.cosine_similarity(d, distances[T], dim=-1) for d in distances[:T]], 1).clamp_min(0)
    total = by_hand.sum(-1, keepdim=True)
    clear = total[:, 0] > 1e-3  # rows whose distances stand well above float32 rounding
    assert clear.sum() >= T // 2
    assert torch.allclose(scores[clear], (by_hand / total)[clear].float(), atol=1e-3)
    two = [C.value_zeroing(model, sample_trace, l) for l in (1, 2)]
    assert torch.allclose(C.value_zeroing_rollout(two), two[1] @ two[0])
    with pytest.raises(ValueError, match="valid layers are 1 to"):
        C.value_zeroing(model, sample_trace, 0)


def test_integrated_gradients_by_hand_equals_captum(tokenizer, model):
    from helpers.interventions.compute import (SentenceHead, gauss_legendre_path, integrated_gradients,
                                               integrated_gradients_by_hand)
    from helpers.model.trace import trace_text

    torch.manual_seed(0)
    head = SentenceHead(torch.nn.Linear(model.config.hidden_size, 4))
    trace = trace_text(tokenizer, model, "Where is my new card?")
    alphas, weights = gauss_legendre_path(16)
    assert float(weights.sum()) == pytest.approx(1.0) and 0 < float(alphas.min()) < float(alphas.max()) < 1
    ours = integrated_gradients_by_hand(tokenizer, model, head, trace, 2, steps=16)
    captum = integrated_gradients(tokenizer, model, head, trace, 2, steps=[16])
    assert torch.allclose(ours, captum.scores, atol=1e-5, rtol=1e-4)
    assert float(ours.sum()) == pytest.approx(captum.gap + captum.delta, abs=1e-4)  # completeness, as Captum's delta says
    with pytest.raises(ValueError, match="steps"):
        gauss_legendre_path(1)
