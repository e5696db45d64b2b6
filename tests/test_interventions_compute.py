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
from helpers.classify.compute import LinearHead, train_head
from helpers.common.data import load_polysemy
from helpers.common.stats import Interval, bootstrap_ci, paired_difference_ci
from helpers.context.compute import word_by_layer
from helpers.interventions import compute as C
from helpers.model.trace import trace_text
from helpers.stack.rebuild import attention_output_by_hand


@pytest.fixture(scope="module")
def setup(tokenizer, model, intent_data):
    """A head trained on the mean-pooled last layer of a small intent subset, and its test run."""
    train, test, f_train, _ = intent_data
    L = model.config.num_hidden_layers
    head = train_head(f_train.layer(L, "mean"), train.labels, train.num_classes, progress=False)
    classifier = C.SentenceHead(head, "mean")
    run = C.run_cached(tokenizer, model, test.texts[:16], attentions=True)
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
    drop = ablation.drop_interval(3, 3)  # paired: unchanged minus removed, on the same items
    assert isinstance(drop, Interval)
    assert math.isclose(drop.estimate, base_right.float().mean() - now_right.float().mean(), abs_tol=1e-6)
    if torch.equal(base_right, now_right):
        assert drop.low < 0 < drop.high, "no item changed: the rule of three, not a zero-width interval"


def test_paired_accuracy_difference():
    rng = np.random.default_rng(0)
    a = rng.integers(0, 2, 80).astype(float)
    b = a.copy()
    b[:10] = 1 - b[:10]  # ten items flip
    d = C.paired_accuracy_difference(a, b)
    assert d == paired_difference_ci(a, b)
    assert d.estimate == pytest.approx(a.mean() - b.mean())
    # paired: narrower than two independent accuracy intervals would suggest
    unpaired = bootstrap_ci(a).high - bootstrap_ci(a).low + bootstrap_ci(b).high - bootstrap_ci(b).low
    assert d.high - d.low < unpaired
    same = C.paired_accuracy_difference(a, a)  # nothing changed: rule of three on the 80 items
    assert (same.estimate, same.low, same.high) == (0.0, pytest.approx(-3 / 80), pytest.approx(3 / 80))
    with pytest.raises(ValueError, match="same items"):
        C.paired_accuracy_difference(a, a[:5])
    with pytest.raises(ValueError, match="0/1"):
        C.paired_accuracy_difference(a + 0.5, a)


def test_tied_with_uses_the_paired_difference_of_the_drops():
    """Heads tied with a given one are those whose paired accuracy difference on the same items
    has an interval containing 0 -- recomputed here with paired_difference_ci directly."""
    n, n_layers, n_heads = 60, 2, 3
    labels = torch.zeros(n, dtype=torch.long)
    base = torch.tensor([[1.0, 0.0]]).repeat(n, 1)  # every item right
    ablated = base.repeat(n_layers, n_heads, 1, 1).clone()  # [L, A, N, C]
    wrong = {(0, 0): range(0, 12), (0, 1): range(0, 10), (0, 2): range(0, 1), (1, 1): range(30, 42)}
    for (l, h), items in wrong.items():
        ablated[l, h, list(items)] = torch.tensor([0.0, 1.0])
    ablation = C.HeadAblation(base, ablated, labels)
    tied = ablation.tied_with(1, 0)  # the largest drop, 12 items
    correct = ablation.correct()
    expected = []
    for l in range(n_layers):
        for h in range(n_heads):
            a, b = correct[l, h].numpy(), correct[0, 0].numpy()
            d = paired_difference_ci(a, b) if not np.array_equal(a, b) else Interval(0.0, -1.0, 1.0)
            if not (d.low > 0 or d.high < 0):
                expected.append((l + 1, h))
    assert tied == expected
    assert (1, 0) in tied and (1, 1) in tied  # 10 of the same 12 items: cannot be ranked below
    assert (1, 2) not in tied and (2, 0) not in tied  # 1 and 0 items: paired, clearly lower
    # (2, 1) drops as much but on other items: the paired difference has a wide interval around 0
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
    with pytest.raises(ValueError, match="is not in the input"):
        C.sense_patching(model, bank["river"], bank["money"], "river")


def _pairs(n_a, n_b, outcome):
    pairs = [(i, j) for i in range(n_a) for j in range(n_b)]
    return {"pairs": pairs, "follows": torch.tensor([[float(outcome(i, j))] for i, j in pairs])}


def test_pair_cluster_bootstrap_resamples_sentences_not_pairs():
    # the outcome depends only on the target sentence: 10 of 20 targets say 1. The pairs repeat
    # each target 5 times, so the honest spread is that of 20 targets, not of 100 pairs.
    result = _pairs(5, 20, lambda i, j: j < 10)
    (ci,) = C.pair_cluster_bootstrap([result])
    assert ci.estimate == 0.5
    targets = bootstrap_ci(np.array([1.0] * 10 + [0.0] * 10))
    pairs = bootstrap_ci(result["follows"][:, 0].numpy())
    width = ci.high - ci.low
    assert width == pytest.approx(targets.high - targets.low, rel=0.25)
    assert width > 1.5 * (pairs.high - pairs.low)
    # two words pooled: the estimate is the share over all pairs
    other = _pairs(3, 4, lambda i, j: 1)
    (both,) = C.pair_cluster_bootstrap([result, other])
    assert both.estimate == pytest.approx((50 + 12) / 112)
    # every pair the same: the rule of three over the fewer sentences of a side (3 + 5 donors)
    (ones,) = C.pair_cluster_bootstrap([_pairs(5, 20, lambda i, j: 1), other])
    assert (ones.estimate, ones.high) == (1.0, 1.0) and ones.low == pytest.approx(1 - 3 / 8)
    with pytest.raises(ValueError, match="sense_patching results"):
        C.pair_cluster_bootstrap([{"follows": torch.ones(2)}])


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


def test_sentence_interventions_truncate_with_the_course_warning(tokenizer, model):
    head = C.SentenceHead(LinearHead(model.config.hidden_size, 3).eval())
    long_text = " ".join(["the bank by the river"] * 130)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        effects = C.sentence_interventions(tokenizer, model, head, long_text, progress=False)
    assert any("truncated" in str(w.message) for w in caught)
    assert effects.n_truncated > 0 and len(effects.tokens) == 512
