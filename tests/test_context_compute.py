"""helpers.context.compute on the real bundled model."""

import pytest
import torch
import torch.nn.functional as F

from helpers.common.data import load_polysemy
from helpers.context.compute import (
    centroid_similarity, nearest_neighbours, self_similarity, sense_separation, sense_separation_outcomes,
    within_across_gap, within_across_similarity, word_by_layer,
)
from helpers.model.trace import trace_text
from zh_support import zh_loaded, zh_model, zh_tokenizer  # noqa: F401 - fixtures


def test_word_by_layer_means_pieces(sample_trace):
    span = sample_trace.find_word("unbelievably")
    assert len(span.positions) > 1
    vec = word_by_layer(sample_trace, "unbelievably")
    assert torch.allclose(vec[3], sample_trace.hidden(3)[span.positions].mean(0))
    with pytest.raises(ValueError, match="not in the input"):
        word_by_layer(sample_trace, "zebra")


def _fake_groups():
    gen = torch.Generator().manual_seed(0)
    a = torch.randn(1, 3, 8, generator=gen)
    b = torch.randn(1, 3, 8, generator=gen)
    noise = lambda: 0.05 * torch.randn(5, 3, 8, generator=gen)  # noqa: E731
    return {"a": a + noise(), "b": b + noise()}


def test_separation_and_similarity_on_clear_groups():
    groups = _fake_groups()
    assert torch.equal(sense_separation(groups), torch.ones(3))
    within, across = within_across_similarity(groups)
    assert (within > across).all() and (within > 0.9).all()
    assert torch.allclose(within_across_gap(groups), within - across)
    ss = self_similarity(groups["a"])
    assert ss.shape == (3,) and (ss > 0.9).all() and (ss <= 1 + 1e-6).all()
    with pytest.raises(ValueError, match="two senses"):
        sense_separation({"a": groups["a"]})
    with pytest.raises(ValueError, match="n_contexts"):
        self_similarity(torch.ones(1, 3, 8))


def test_outcomes_are_the_leave_one_out_rule():
    groups = _fake_groups()
    groups["b"][2] = groups["a"][0]  # one sentence of b sits on a's cluster: it must be misclassified
    outcomes = sense_separation_outcomes(groups)
    assert outcomes.shape == (10, 3) and outcomes.dtype == torch.bool
    assert not outcomes[5 + 2].any() and outcomes[:5].all()
    assert torch.allclose(sense_separation(groups), outcomes.float().mean(0))


def test_centroid_similarity():
    groups = _fake_groups()
    near_a = centroid_similarity(groups["a"][0], groups)
    assert set(near_a) == {"a", "b"} and (near_a["a"] > near_a["b"]).all()
    assert torch.allclose(near_a["b"], F.cosine_similarity(groups["a"][0], groups["b"].mean(0), dim=-1))
    with pytest.raises(ValueError, match="layers, hidden"):
        centroid_similarity(torch.ones(2, 8), groups)


def test_separation_on_real_bank(tokenizer, model):
    senses = load_polysemy()["bank"]
    groups = {s: torch.stack([word_by_layer(trace_text(tokenizer, model, x), "bank") for x in xs])
              for s, xs in senses.items()}
    acc = sense_separation(groups)
    assert acc.shape == (model.config.num_hidden_layers + 1,)
    assert acc[-1] > 0.5  # the last layer of a real model separates river bank from money bank


def test_more_polysemy_data_is_well_formed(tokenizer):
    data = load_polysemy("polysemy_more.json")
    assert len(data) >= 6
    for word, senses in data.items():
        assert len(senses) == 2 and len(tokenizer.tokenize(word)) == 1
        for sentences in senses.values():
            assert len(sentences) >= 5
            for s in sentences:
                assert [w.strip(".,;!?").lower() for w in s.split()].count(word) == 1, s


def test_nearest_neighbours(sample_trace):
    near = nearest_neighbours(sample_trace, 2, sample_trace.num_layers, k=3)
    assert len(near) == 3 and all(pos != 2 for pos, _, _ in near)
    assert near[0][2] >= near[1][2] >= near[2][2]
    assert near[0][1] == sample_trace.tokens[near[0][0]]
    with pytest.raises(ValueError, match="k must be"):
        nearest_neighbours(sample_trace, 2, 1, k=sample_trace.seq_len)


@pytest.fixture(scope="module")
def bank_groups(tokenizer, model):
    senses = load_polysemy()["bank"]
    return {s: torch.stack([word_by_layer(trace_text(tokenizer, model, x), "bank") for x in xs])
            for s, xs in senses.items()}


def test_permutation_accuracy_is_the_same_rule_on_shuffled_labels(bank_groups):
    from helpers.context.compute import _loo_outcomes, permutation_accuracy

    vecs = torch.cat(list(bank_groups.values()))
    sizes = [len(v) for v in bank_groups.values()]
    labels = torch.cat([torch.full((n,), i) for i, n in enumerate(sizes)])
    # the batched rule with the true labels is the rule itself
    assert torch.equal(_loo_outcomes(vecs, labels[None], 2)[0], sense_separation_outcomes(bank_groups))
    # a shuffle, computed independently by the one-at-a-time rule on the relabelled groups
    perm = labels[torch.randperm(len(labels), generator=torch.Generator().manual_seed(3))]
    relabelled = {i: vecs[perm == i] for i in range(2)}
    order = torch.cat([torch.nonzero(perm == i).flatten() for i in range(2)])
    batched = _loo_outcomes(vecs, perm[None], 2)[0][order]
    assert torch.equal(batched, sense_separation_outcomes(relabelled))
    null = permutation_accuracy(bank_groups, n_perm=50, seed=0)
    assert null.shape == (50, vecs.shape[1]) and torch.equal(null, permutation_accuracy(bank_groups, 50, seed=0))
    # no signal on average: the shuffles score below the real labels at the last layer
    assert null[:, -1].mean() < sense_separation(bank_groups)[-1]


def test_permutation_accuracy_is_below_chance_without_signal():
    from helpers.context.compute import permutation_accuracy

    # vectors that share a mean (like a layer's token vectors) and carry no sense at all: a
    # sentence's own centroid rests on one sentence fewer, so it is noisier and farther away
    gen = torch.Generator().manual_seed(0)
    shared = 2 * torch.randn(1, 2, 16, generator=gen)
    noise = {s: shared + torch.randn(5, 2, 16, generator=gen) for s in ("a", "b")}
    assert permutation_accuracy(noise, n_perm=300).mean() < 0.5


def test_centroid_margin(bank_groups, sample_trace):
    from helpers.context.compute import centroid_margin

    vec = word_by_layer(sample_trace, "bank")
    margins = centroid_margin(vec, bank_groups, n_boot=200)
    first, second = bank_groups.values()
    by_hand = F.cosine_similarity(vec, first.mean(0), dim=-1) - F.cosine_similarity(vec, second.mean(0), dim=-1)
    assert torch.allclose(torch.tensor([m.estimate for m in margins], dtype=torch.float64), by_hand.double(), atol=1e-6)
    assert all(m.high > m.low for m in margins)  # five sentences per centroid: never a zero-width interval
    with pytest.raises(ValueError, match="exactly two"):
        centroid_margin(vec, {**bank_groups, "third": first})


def test_word_neighbours_leave_out_the_word_itself(sample_trace):
    from helpers.context.compute import word_neighbours

    span = sample_trace.find_word("unbelievably")
    L = sample_trace.num_layers
    near = word_neighbours(sample_trace, "unbelievably", L, k=3)
    assert len(near) == 3 and not {p for p, _, _ in near} & set(span.positions)
    h = sample_trace.hidden(L)
    mean = h[span.positions].mean(0)
    best = max((i for i in range(sample_trace.seq_len) if i not in span.positions),
               key=lambda i: float(F.cosine_similarity(mean, h[i], dim=0)))
    assert near[0][0] == best and near[0][2] == pytest.approx(float(F.cosine_similarity(mean, h[best], dim=0)), abs=1e-5)
    with pytest.raises(ValueError, match="k must be"):
        word_neighbours(sample_trace, "unbelievably", L, k=sample_trace.seq_len)


def _ranked(bank_groups):
    from helpers.layerwalk.compute import rank_layers

    outcomes = sense_separation_outcomes(bank_groups).float()
    raw = torch.stack([self_similarity(v) for v in bank_groups.values()])  # 2 "words"
    return outcomes, raw, rank_layers(outcomes, lowest=False), rank_layers(raw, lowest=False)


def test_claim_rows_verdicts(bank_groups):
    from helpers.common.claims import STATISTICS_TERMS
    from helpers.common.stats import Interval
    from helpers.context.compute import claim_rows

    outcomes, raw, acc, gap = _ranked(bank_groups)
    L = raw.shape[1] - 1
    eth = ("depends on the correction", "Whether this model follows ... depends on the correction: x.", ["d1", "d2"])
    kw = dict(ethayarajh=eth, gap=gap, accuracy=acc, chance_null=Interval(0.45, 0.3, 0.6), n_senses=2,
              emb_null_p=0.4, gap_above_zero=[1, 2], n_words=2)
    rows = claim_rows(**kw)
    assert len(rows) == 4 and all(len(r) == 4 for r in rows)
    assert "Coenen" in rows[1][2] and "Coenen" in rows[2][2] and "ours 2 words chosen" in rows[0][2]
    assert rows[0][1].startswith("whether this model follows") and rows[0][3] == "d1 | d2"
    assert ("the embeddings (" in rows[1][1]) and (("could be as high" if 0 in acc.tied else "clearly lower")
                                                   in rows[1][1])
    assert "we cannot tell them apart from shuffled labels" in rows[3][1]
    assert f"we cannot tell whether it is above 0 at layer 3" in rows[2][1] or L < 3
    for row in rows:
        assert not any(term in row[1] for term in STATISTICS_TERMS), row[1]
    rows = claim_rows(**{**kw, "emb_null_p": 0.001, "gap_above_zero": list(range(1, L + 1))})
    emb = outcomes[:, 0].mean()
    assert ("better than shuffled" if emb > 0.45 else "worse than shuffled") in rows[3][1]
    assert "above 0 at every layer past the embeddings" in rows[2][1]
    rows = claim_rows(**kw, same_ids=False, other=("course-mini", "follows"))
    assert "different token ids" in rows[3][1] and "On course-mini (BERT's own objectives) the verdict is: follows" \
        in rows[0][1]

def test_layer_steps_match_a_hand_difference_and_carry_the_control():
    import numpy as np

    from helpers.context.compute import layer_steps

    gen = torch.Generator().manual_seed(0)
    values = torch.tensor([0.9, 0.7, 0.5, 0.6]) + 0.01 * torch.randn(12, 4, generator=gen)  # 12 items, 4 layers
    steps = layer_steps(values)
    means = values.double().mean(0)
    assert len(steps) == 3
    assert [s.estimate for s in steps] == pytest.approx((means[1:] - means[:-1]).tolist())
    assert steps[0].high < 0 and steps[2].low > 0  # a clear fall, then a clear rise
    control = torch.tensor([0.0, 0.0, 0.0, 0.3]) + 0.01 * torch.randn(50, 4, generator=gen)
    rng = np.random.default_rng(1)
    units = (rng.integers(0, 20, 50), rng.integers(20, 40, 50))  # each pair's two sentences
    adjusted = layer_steps(values, control=control, control_units=units)
    by_hand = (means[3] - control.double().mean(0)[3]) - (means[2] - control.double().mean(0)[2])
    assert adjusted[2].estimate == pytest.approx(float(by_hand))
    assert adjusted[2].high < 0  # the control's rise turns the raw rise into a fall
    with pytest.raises(ValueError, match="control_units"):
        layer_steps(values, control=control)
    with pytest.raises(ValueError, match="columns"):
        layer_steps(values, control=control[:, :3], control_units=units)

def test_neighbour_control_matches_a_hand_span(data_traces):
    from helpers.context.compute import neighbour_control

    ctrl = neighbour_control(data_traces, n_pieces=2, k=3, n_spans=5, seed=0)
    L = data_traces[0].num_layers
    assert ctrl.shape == (5, L + 1, 3)
    assert (ctrl[..., :-1] >= ctrl[..., 1:] - 1e-6).all()  # best first
    # one span by hand: the same draws as the helper, recomputed with a plain loop
    gen = torch.Generator().manual_seed(0)
    t = data_traces[int(torch.randint(len(data_traces), (1,), generator=gen))]
    inner = [i for i, w in enumerate(t.word_ids) if w is not None]
    start = inner[int(torch.randint(len(inner) - 1, (1,), generator=gen))]
    query = t.hidden(2)[[start, start + 1]].mean(0)
    cos = sorted((float(F.cosine_similarity(query, t.hidden(2)[j], dim=0)) for j in range(t.seq_len)
                  if j not in (start, start + 1)), reverse=True)
    assert ctrl[0, 2].tolist() == pytest.approx(cos[:3], abs=1e-5)
    with pytest.raises(ValueError, match="n_pieces"):
        neighbour_control(data_traces, n_pieces=0, k=3)


def test_ethayarajh_verdict_reads_every_correction(bank_groups, data_traces):
    from helpers.common.stats import Interval, LayerRanking, family_level, verdict
    from helpers.context.compute import ethayarajh_reading, ethayarajh_verdict

    lv = family_level(3)
    ivs = [Interval(v, v - 0.01, v + 0.01) for v in (0.9, 0.7, 0.6)]
    diffs = [Interval(0.3, 0.25, 0.35, lv), Interval(0.1, 0.05, 0.15, lv), Interval(0, 0, 0, lv)]
    falls = [verdict(Interval(-0.2, -0.25, -0.15, family_level(2)), family=2)] * 2
    rises = [falls[0], verdict(Interval(0.1, 0.05, 0.15, family_level(2)), family=2)]
    at_top = LayerRanking(ivs, 2, [2], diffs, family=3)
    below_top = LayerRanking(ivs, 1, [1], diffs, family=3)
    tied_top = LayerRanking(ivs, 1, [1, 2], diffs, family=3)
    assert ethayarajh_reading(at_top, falls) == "follows"
    assert ethayarajh_reading(below_top, rises) == "does not follow"
    assert ethayarajh_reading(tied_top, rises) == "mixed"
    both = {"a": {"rank": at_top, "steps": falls}, "b": {"rank": below_top, "steps": rises}}
    kind, sentence, details = ethayarajh_verdict(both)
    assert kind == "depends on the correction" and sentence.startswith("Whether this model follows")
    assert "a, it is lowest at layer 2, as he found" in sentence
    assert "b, it is lowest at layer 1 and rises into layer 2, unlike his BERT-base" in sentence
    assert len(details) == 2 and "Bonferroni" in details[0]
    kind, sentence, _ = ethayarajh_verdict({"a": both["a"]}, who="course-mini")
    assert kind == "follows" and sentence.startswith("Course-mini follows")


def test_self_similarity_variants_match_the_lesson_by_hand(data_traces):
    from helpers.context.compute import SELF_SIMILARITY_VARIANTS, self_similarity_variants
    from helpers.layerwalk.compute import layer_mean_std

    # two "words" made of the data traces' first content tokens, two "senses" each
    vecs = torch.stack([torch.stack(t.hidden_states)[:, 1] for t in data_traces])  # [n, L+1, H]
    groups = {"w1": {"a": vecs[:3], "b": vecs[3:6]}, "w2": {"a": vecs[1:4], "b": vecs[4:7]}}
    out = self_similarity_variants(groups, data_traces, n_pairs=100, seed=0)
    assert list(out) == list(SELF_SIMILARITY_VARIANTS)
    raw = torch.stack([self_similarity(torch.cat(list(g.values()))) for g in groups.values()])
    base = out[SELF_SIMILARITY_VARIANTS[0]]["baseline"]
    assert torch.allclose(out[SELF_SIMILARITY_VARIANTS[0]]["values"], raw)
    adjusted = raw.double().mean(0) - base.double().mean(0)
    assert [iv.estimate for iv in out[SELF_SIMILARITY_VARIANTS[0]]["rank"].intervals] == pytest.approx(
        adjusted.tolist())
    mean, _ = layer_mean_std(data_traces, "content")
    centred = torch.stack([self_similarity(torch.cat(list(g.values())) - mean) for g in groups.values()])
    assert torch.allclose(out[SELF_SIMILARITY_VARIANTS[1]]["values"], centred, atol=1e-6)

def test_permutation_null_seeds_each_word_on_its_own(bank_groups):
    """Two words with the same number of sentences: one seed for both would give them the same
    shuffles (so their nulls move together and a pooled null is too wide); permutation_null
    gives each word its own, reproducible, shuffles."""
    import numpy as np

    from helpers.context.compute import permutation_accuracy, permutation_null

    twin = {s: v.flip(0) for s, v in bank_groups.items()}  # same sizes, the sentences in another order
    by_word = {"bank": bank_groups, "twin": twin}
    null = permutation_null(by_word, n_perm=60, seed=0)
    children = np.random.SeedSequence(0).spawn(2)
    assert torch.equal(null["bank"], permutation_accuracy(bank_groups, n_perm=60, seed=children[0]))
    assert torch.equal(null["twin"], permutation_accuracy(twin, n_perm=60, seed=children[1]))
    assert torch.equal(null["bank"], permutation_null(by_word, n_perm=60, seed=0)["bank"])  # reproducible
    # the old way, one seed for every word, shuffles twin words alike: flipping both the sentences
    # and the shuffles gives back the very same accuracies
    same_seed = permutation_accuracy(twin, n_perm=60, seed=0)
    assert not torch.equal(null["twin"], same_seed)
    sizes = {w: sum(len(v) for v in g.values()) for w, g in by_word.items()}
    pooled = (null["bank"] * sizes["bank"] + null["twin"] * sizes["twin"]) / sum(sizes.values())
    assert torch.allclose(null["all words, pooled"], pooled)
    with pytest.raises(ValueError, match="layers"):
        permutation_accuracy(bank_groups, n_perm=5, layers=[99])


def test_layer_null_is_exact_for_two_small_senses(bank_groups):
    import math

    from helpers.context.compute import layer_null, permutation_p_value, sense_separation_outcomes

    acc, exact = layer_null(bank_groups, 0)
    sizes = [len(v) for v in bank_groups.values()]
    assert exact and len(acc) == math.comb(sum(sizes), sizes[0])
    observed = float(sense_separation_outcomes(bank_groups)[:, 0].float().mean())
    assert any(abs(float(a) - observed) < 1e-9 for a in acc)  # the real labelling is one of them
    p = permutation_p_value(observed, acc, exact=True)
    by_hand = float(((acc - acc.mean()).abs() >= abs(observed - float(acc.mean())) - 1e-9).double().mean())
    assert p == pytest.approx(by_hand) and p >= 1 / len(acc)
    sampled, exact = layer_null(bank_groups, 0, n_perm=40, max_exact=10)
    assert not exact and sampled.shape == (40,)
    assert permutation_p_value(observed, sampled) >= 1 / 41  # random shuffles: never 0
    with pytest.raises(ValueError, match="layer must be"):
        layer_null(bank_groups, 99)


def test_centroid_margin_verdicts_are_read_off_bonferroni_intervals(bank_groups, sample_trace):
    from helpers.common.stats import family_level
    from helpers.context.compute import centroid_margin_verdicts

    vec = word_by_layer(sample_trace, "bank")
    verdicts = centroid_margin_verdicts(vec, bank_groups, n_boot=400)
    k = len(verdicts)
    for v in verdicts:
        assert v.kind in ("higher", "lower", "inconclusive") and v.family == k
        assert v.level == pytest.approx(family_level(k))
        assert (v.kind == "inconclusive") == v.difference.contains(0.0)
        assert (v.kind == "inconclusive") == (v.p_value >= 0.05)
        assert v.text.startswith("inconclusive") == (v.kind == "inconclusive") and "Holm" not in v.text


@pytest.mark.slow  # about 15 s; lesson 09's Chinese run (the --all tier) shows the same story
def test_chinese_senses_come_apart_in_context(zh_tokenizer, zh_model):
    """Lesson 09's story on the Chinese model and data/polysemy_zh.json (issue 48): a word of two
    characters (意思) is the mean of its two characters' vectors, and over the 12 Chinese words
    same-sense uses are closer than different-sense uses at the last layer (the gap's interval over
    words above 0, Bonferroni over the layers, as the lesson reads it) while the leave-one-out
    accuracy beats every one of the lesson's label shuffles there."""
    from helpers.attention.compute import above_threshold
    from helpers.common.language import polysemy_for
    from helpers.context.compute import permutation_null

    t = trace_text(zh_tokenizer, zh_model, "这句话是什么意思？")
    span = t.find_word("意思")
    assert span.pieces == ["意", "思"]
    assert torch.allclose(word_by_layer(t, "意思"), torch.stack(t.hidden_states)[:, span.positions].mean(1))
    groups = {w: {s: torch.stack([word_by_layer(trace_text(zh_tokenizer, zh_model, x), w) for x in xs])
                  for s, xs in senses.items()} for w, senses in polysemy_for("zh").items()}
    L = zh_model.config.num_hidden_layers
    gaps = torch.stack([within_across_gap(g) for g in groups.values()])  # [words, L + 1]
    assert L in above_threshold(gaps, 0.0)["above"]
    pooled = torch.cat([sense_separation_outcomes(g) for g in groups.values()]).float()[:, L].mean()
    shuffled = permutation_null(groups, n_perm=200, seed=0)["all words, pooled"][:, L]
    assert pooled > shuffled.max()
