"""helpers.layerwalk.compute on the real bundled model."""

import pytest
import torch
import torch.nn.functional as F

from helpers.layerwalk.compute import (
    baseline_adjusted, consecutive_cosines, consecutive_cosines_per_token, cross_layer_baseline, energy_by_dimension,
    final_layer_norms, interlayer_similarity, interlayer_similarity_all_tokens, interlayer_similarity_per_token,
    layer_norm_inputs, layer_norm_outliers, layer_norms, layer_norms_per_token, norm_parts, pca_trajectory,
    pca_variance_ratio, pooled_vectors, positions_of_kind, random_pair_baseline, random_pair_cosines,
    share_explained_by_layer, token_by_layer, top_dimensions,
)
from helpers.model.tokens import content_positions


def test_token_by_layer_and_norms(sample_trace):
    L = sample_trace.num_layers
    vecs = token_by_layer(sample_trace, 2)
    assert vecs.shape == (L + 1, sample_trace.hidden_size)
    assert torch.equal(vecs[L], sample_trace.last_hidden_state[2])
    assert torch.allclose(layer_norms(sample_trace, 2), vecs.norm(dim=-1))
    mean = layer_norms(sample_trace)
    assert torch.allclose(mean[0], sample_trace.hidden(0).norm(dim=-1).mean())


def test_consecutive_and_interlayer_agree(sample_trace):
    cons = consecutive_cosines(sample_trace, 1)
    sim = interlayer_similarity(sample_trace, 1)
    L = sample_trace.num_layers
    assert cons.shape == (L,) and sim.shape == (L + 1, L + 1)
    assert torch.allclose(torch.diagonal(sim, 1), cons, atol=1e-5)
    assert torch.allclose(torch.diagonal(sim), torch.ones(L + 1), atol=1e-5)
    expected = F.cosine_similarity(sample_trace.hidden(0)[1], sample_trace.hidden(L)[1], dim=0)
    assert torch.allclose(sim[0, L], expected, atol=1e-5)
    avg = interlayer_similarity(sample_trace)
    assert torch.allclose(avg, avg.T, atol=1e-6)


def test_positions_and_pooled_vectors(sample_trace, data_traces):
    assert positions_of_kind(sample_trace, "[CLS]") == [0]
    assert positions_of_kind(sample_trace, "[SEP]") == [sample_trace.seq_len - 1]
    assert positions_of_kind(sample_trace, "content") == content_positions(sample_trace)
    assert positions_of_kind(sample_trace, "all") == list(range(sample_trace.seq_len))
    with pytest.raises(ValueError, match="kind"):
        positions_of_kind(sample_trace, "verbs")
    pooled = pooled_vectors(data_traces, "content")
    n = sum(len(content_positions(t)) for t in data_traces)
    assert pooled.shape == (data_traces[0].num_layers + 1, n, data_traces[0].hidden_size)
    first = content_positions(data_traces[0])[0]
    assert torch.equal(pooled[:, 0], token_by_layer(data_traces[0], first))


def test_per_token_statistics_match_the_one_token_versions(sample_trace, data_traces):
    per_token = consecutive_cosines_per_token(data_traces, "content")
    second = data_traces[1]
    row = len(content_positions(data_traces[0]))  # the first content token of the second sentence
    assert torch.allclose(per_token[row], consecutive_cosines(second, content_positions(second)[0]), atol=1e-6)
    norms = layer_norms_per_token(data_traces, "[CLS]")
    assert norms.shape == (len(data_traces), data_traces[0].num_layers + 1)
    assert torch.allclose(norms[2], layer_norms(data_traces[2], 0))
    sims = interlayer_similarity_per_token(data_traces, "[SEP]")
    last = data_traces[3].seq_len - 1
    assert torch.allclose(sims[3], interlayer_similarity(data_traces[3], last), atol=1e-6)
    every = interlayer_similarity_all_tokens(sample_trace)
    assert every.shape == (sample_trace.seq_len, sample_trace.num_layers + 1, sample_trace.num_layers + 1)
    for t in (0, 3, sample_trace.seq_len - 1):
        assert torch.allclose(every[t], interlayer_similarity(sample_trace, t), atol=1e-6)


def test_random_pair_baseline(data_traces):
    base = random_pair_baseline(data_traces, n_pairs=200, seed=0)
    assert base.shape == (data_traces[0].num_layers + 1,)
    assert torch.equal(base, random_pair_baseline(data_traces, n_pairs=200, seed=0))
    assert not torch.equal(base, random_pair_baseline(data_traces, n_pairs=200, seed=1))
    assert (base.abs() < 1).all()
    with pytest.raises(ValueError, match="at least 2"):
        random_pair_baseline(data_traces[:1])
    with pytest.raises(ValueError, match="n_pairs"):
        random_pair_baseline(data_traces, n_pairs=0)


def test_random_pair_cosines_within_and_across_layers(data_traces):
    L = data_traces[0].num_layers
    within = random_pair_cosines(data_traces, n_pairs=300, seed=0, gap=0)
    assert within.shape == (300, L + 1)
    assert torch.allclose(within.mean(0), random_pair_baseline(data_traces, n_pairs=300, seed=0), atol=1e-6)
    across = random_pair_cosines(data_traces, n_pairs=300, seed=0, gap=1)
    assert across.shape == (300, L)
    # the matching control is not the mean of two within-layer baselines
    mean_of_two = (within.mean(0)[:-1] + within.mean(0)[1:]) / 2
    assert not torch.allclose(across.mean(0), mean_of_two, atol=1e-3)
    far = cross_layer_baseline(data_traces, L, 0, n_pairs=300, seed=0)
    assert torch.allclose(far, random_pair_cosines(data_traces, n_pairs=300, seed=0, gap=L)[:, 0].mean())
    with pytest.raises(ValueError, match="gap"):
        random_pair_cosines(data_traces, gap=L + 1)


def test_baseline_adjusted_checks_length():
    assert torch.allclose(baseline_adjusted(torch.ones(3), torch.tensor([0.1, 0.2, 0.3])),
                          torch.tensor([0.9, 0.8, 0.7]))
    with pytest.raises(ValueError, match="layers"):
        baseline_adjusted(torch.ones(3), torch.ones(4))


def test_layer_norm_inputs_rebuild_every_hidden_state(tokenizer, model, sample_trace):
    """Against the model: each hidden state is its LayerNorm applied, by hand, to the captured input."""
    inputs = layer_norm_inputs(tokenizer, model, sample_trace.text)
    lns = final_layer_norms(model)
    assert len(inputs) == len(lns) == sample_trace.num_layers + 1
    for layer, (x, ln) in enumerate(zip(inputs, lns)):
        z = (x - x.mean(-1, keepdim=True)) / torch.sqrt(x.var(-1, unbiased=False, keepdim=True) + ln.eps)
        assert torch.allclose(ln.weight * z + ln.bias, sample_trace.hidden(layer), atol=1e-4)
    with pytest.raises(TypeError, match="BertModel"):
        final_layer_norms(torch.nn.Linear(2, 2))


def test_norm_parts_add_up(data_traces, model):
    parts = norm_parts(data_traces, model, "content")
    assert torch.allclose(parts["norm"], layer_norms_per_token(data_traces, "content"))
    rebuilt = parts["scaled"] ** 2 + parts["cross"] + parts["beta"][None] ** 2
    assert torch.allclose(rebuilt, parts["norm"] ** 2, rtol=1e-4, atol=1e-3)
    assert torch.allclose(parts["gamma"], torch.stack([ln.weight.norm() for ln in final_layer_norms(model)]))


def test_energy_and_top_dimensions(data_traces):
    shares = energy_by_dimension(data_traces)
    assert shares.shape == (data_traces[0].num_layers + 1, data_traces[0].hidden_size)
    assert torch.allclose(shares.sum(-1), torch.ones(shares.shape[0]), atol=1e-5)
    dims, share = top_dimensions(shares, k=3)
    assert dims.shape == (shares.shape[0], 3)
    assert torch.allclose(share, shares.gather(1, dims).sum(1))
    assert (share >= 3 / shares.shape[1] - 1e-6).all()  # the largest three carry at least an even share
    with pytest.raises(ValueError, match="k from 1"):
        top_dimensions(shares, k=0)


def test_layer_norm_outliers_pass_the_three_sigma_test(model):
    flagged = layer_norm_outliers(model, n_sigma=3.0)
    lns = final_layer_norms(model)
    assert len(flagged) == len(lns)
    for dims, ln in zip(flagged, lns):
        for vec in (ln.weight.detach(), ln.bias.detach()):
            z = ((vec - vec.mean()) / vec.std()).abs()
            assert set(torch.nonzero(z > 3).flatten().tolist()) <= set(dims)


def test_share_explained_by_layer():
    layer_only = torch.tensor([[1.0, 5.0, 9.0]] * 4)
    assert share_explained_by_layer(layer_only) == pytest.approx(1.0)
    token_only = torch.tensor([[1.0, 1.0, 1.0], [3.0, 3.0, 3.0]])
    assert share_explained_by_layer(token_only) == pytest.approx(0.0)
    with pytest.raises(ValueError, match="n_tokens"):
        share_explained_by_layer(torch.ones(3))


def test_pca_trajectory(sample_trace):
    coords = pca_trajectory(sample_trace, [0, 2])
    assert coords.shape == (2, sample_trace.num_layers + 1, 2)
    assert coords.std() > 0
    ratio = pca_variance_ratio(sample_trace, 2)
    flat = torch.stack(sample_trace.hidden_states).reshape(-1, sample_trace.hidden_size)
    projected = pca_trajectory(sample_trace, list(range(sample_trace.seq_len))).reshape(-1, 2)
    total = (flat - flat.mean(0)).pow(2).sum()
    assert torch.allclose(ratio, projected.pow(2).sum(0) / total, rtol=1e-3)
    with pytest.raises(ValueError, match="token position"):
        pca_trajectory(sample_trace, [999])
    with pytest.raises(ValueError, match="at least one"):
        pca_trajectory(sample_trace, [])


def test_type_errors():
    with pytest.raises(TypeError, match="Trace"):
        layer_norms("not a trace")


def test_rank_layers_is_paired_and_counts_the_control(data_traces):
    import numpy as np

    from helpers.layerwalk.compute import cluster_labels, random_pair_units, rank_layers

    per_token = consecutive_cosines_per_token(data_traces, "content").double()  # [N, L]
    control = random_pair_cosines(data_traces, n_pairs=200, seed=0, gap=1).double()  # [200, L]
    units = random_pair_units(data_traces, n_pairs=200, seed=0)
    labels = cluster_labels(data_traces, "content")
    ranking = rank_layers(per_token, control=control, control_units=units, statistic=np.median, lowest=True,
                          clusters=labels)
    expected = np.median(per_token.numpy(), axis=0) - control.numpy().mean(axis=0)  # independent of the helper
    assert np.allclose([i.estimate for i in ranking.intervals], expected)
    assert ranking.extreme == int(np.argmin(expected)) and ranking.extreme in ranking.tied
    assert all(i.low <= i.estimate <= i.high for i in ranking.intervals)
    L = per_token.shape[1]
    assert ranking.family_size == L * (L - 1) // 2  # the extreme is picked by the data: every pair
    # paired: a column that is every token's value plus 0.001 differs from it, although the two
    # columns' separate intervals overlap almost entirely
    col = per_token[:, 0]
    paired = rank_layers(torch.stack([col, col + 0.001], dim=1), lowest=True)
    assert paired.extreme == 0 and paired.tied == [0]
    assert paired.intervals[1].low < paired.intervals[0].high
    assert abs(paired.differences[1].estimate - 0.001) < 1e-9
    # the control's own uncertainty widens the intervals
    without = rank_layers(per_token, statistic=np.median, lowest=True, clusters=labels)
    width = lambda r: np.mean([i.high - i.low for i in r.intervals])  # noqa: E731
    assert width(ranking) > width(without)
    with pytest.raises(ValueError, match="control_units"):
        rank_layers(per_token, control=control)
    with pytest.raises(ValueError, match="columns"):
        rank_layers(per_token, control=control[:, :1], control_units=units)


def test_pair_ranking_resamples_sentences_not_pairs(data_traces):
    """The random-pair profile's ranking, by hand: sentences drawn with unit_weights, each pair
    weighed by the product of its two sentences' counts; the all-pairs Bonferroni level."""
    import numpy as np

    from helpers.common.stats import extreme_family, family_level, unit_weights
    from helpers.layerwalk.compute import pair_ranking, random_pair_units

    samples = random_pair_cosines(data_traces, n_pairs=300, seed=0).double()
    units = random_pair_units(data_traces, n_pairs=300, seed=0)
    k = samples.shape[1]
    r = pair_ranking(samples, units, lowest=False, n_boot=2000)
    assert r.extreme == int(samples.mean(0).argmax()) and r.family_size == extreme_family(k)
    names = np.unique(np.concatenate(units))
    w = unit_weights(names.size, 2000, 0)
    pw = w[:, np.searchsorted(names, units[0])] * w[:, np.searchsorted(names, units[1])]
    total = pw.sum(1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):  # a draw with no complete pair keeps the estimate
        boots = np.where(total > 0, (pw @ samples.numpy()) / total, samples.numpy().mean(0))
    diff = boots - boots[:, [r.extreme]]
    j = next(j for j in range(k) if j != r.extreme)
    level = family_level(extreme_family(k))
    assert r.differences[j].level == pytest.approx(level)
    se = diff[:, j].std(ddof=1) * np.sqrt(names.size / (names.size - 1))
    from scipy.stats import t

    half = t.ppf(0.5 + level / 2, names.size - 1) * se  # the t floor: the interval is never narrower
    assert r.differences[j].high - r.differences[j].low >= 2 * half - 1e-9
    # resampling pairs one by one would be far too narrow: the pairs share sentences
    rng = np.random.default_rng(0)
    idx = rng.integers(0, 300, size=(2000, 300))
    by_pair = np.stack([samples.numpy()[i].mean(0) for i in idx])
    assert by_pair[:, j].std() < 0.8 * boots[:, j].std()
    with pytest.raises(ValueError, match="units"):
        pair_ranking(samples, None)


def test_pair_step_verdicts_read_each_step(data_traces):
    from helpers.layerwalk.compute import pair_step_verdicts, random_pair_units, steps_sentence

    samples = random_pair_cosines(data_traces, n_pairs=300, seed=0).double()
    units = random_pair_units(data_traces, n_pairs=300, seed=0)
    k = samples.shape[1]
    names = [f"L{j}" for j in range(k)]
    steps = pair_step_verdicts(samples, units, names=names, n_boot=2000)
    means = samples.mean(0)
    assert [v.difference.estimate for v in steps] == pytest.approx((means[1:] - means[:-1]).tolist())
    assert all(v.family == k - 1 for v in steps)
    for v in steps:
        differs = v.p_value < 0.05  # one rule: the interval off 0 and the adjusted p below alpha
        assert v.kind == ("higher" if v.difference.low > 0 and differs else
                          "lower" if v.difference.high < 0 and differs else "inconclusive")
    text = steps_sentence(steps, [f"s{j}" for j in range(k - 1)], what="it")
    for j, v in enumerate(steps):
        if v.kind == "higher":
            assert f"s{j}" in text.split("falls")[0]
    with pytest.raises(ValueError, match="names"):
        pair_step_verdicts(samples, units, names=["a"])


def test_outliers_in_every_layer_and_path_lengths(model, sample_trace):
    from helpers.layerwalk.compute import outliers_in_every_layer, path_lengths

    flagged = layer_norm_outliers(model)
    assert outliers_in_every_layer(flagged) == sorted(set.intersection(*map(set, flagged)))
    assert outliers_in_every_layer([[1, 2, 5], [2, 5, 7], [5, 2]]) == [2, 5]
    coords = pca_trajectory(sample_trace, [0, 2])
    by_hand = sum(float((coords[1, l + 1] - coords[1, l]).norm()) for l in range(coords.shape[1] - 1))
    assert path_lengths(coords)[1].item() == pytest.approx(by_hand, rel=1e-5)
    with pytest.raises(ValueError, match="paths"):
        path_lengths(coords[0])


def _claim_inputs(data_traces, model):
    import numpy as np

    from helpers.layerwalk.compute import (cluster_labels, cosine_contributions, layer_norm_outliers, outlier_counts,
                                           pair_ranking, random_pair_intervals, random_pair_units, rank_layers,
                                           variance_split_ci)

    per_token = consecutive_cosines_per_token(data_traces)
    L = data_traces[0].num_layers
    units = random_pair_units(data_traces, n_pairs=100, seed=0)
    cross_samples = random_pair_cosines(data_traces, n_pairs=100, gap=1)
    labels = cluster_labels(data_traces, "content")
    turn = rank_layers(per_token, control=cross_samples, control_units=units, statistic=np.median, clusters=labels)
    contrib = cosine_contributions(data_traces, n_pairs=100, seed=0)
    dims, top = top_dimensions(contrib, k=3)
    return dict(turn=turn, transition_names=[f"{a}→{a + 1}" for a in range(L)], turn_share=0.5,
                peak=pair_ranking(random_pair_cosines(data_traces, n_pairs=100), units, lowest=False, n_boot=500),
                cross_ci=random_pair_intervals(cross_samples, units), mean_of_two=torch.zeros(L),
                variance_split=variance_split_ci(norm_parts(data_traces, model)["norm"], clusters=labels),
                grows="not met", top_share=top / contrib.sum(-1), k=3, hidden_size=data_traces[0].hidden_size,
                outlier_rows=outlier_counts(layer_norm_outliers(model), dims), n_layer_norms=L + 1)


def test_claim_rows_verdicts_follow_the_numbers(data_traces, model):
    from helpers.common.claims import STATISTICS_TERMS
    from helpers.layerwalk.compute import WITHIN_LAYER, claim_rows

    kw = _claim_inputs(data_traces, model)
    rows = claim_rows(**kw)
    assert len(rows) == 5 and all(len(r) == 4 for r in rows)
    turn, names, L = kw["turn"], kw["transition_names"], len(kw["transition_names"])
    assert f"turn most (beyond the control) at {names[turn.extreme]}" in rows[0][1]
    assert ("is among them" if L - 1 in turn.tied else "is not among them") in rows[0][1]
    peak = kw["peak"]
    assert f"peak at layer {peak.extreme}" in rows[1][1]
    expected = ("is the peak" if peak.extreme == L else "could be as high" if L in peak.tied else "drops to")
    assert expected in rows[1][1]
    within = kw["variance_split"][WITHIN_LAYER]
    pred1 = "met" if within.low > 0.5 else "not met" if within.high < 0.5 else "undecided"
    assert f"between the tokens of a layer': {pred1}" in rows[3][1] and "every layer': not met" in rows[3][1]
    assert "Kovaleva" in rows[4][2]
    for row in rows:  # the visible columns speak no statistics; the evidence column does
        assert not any(term in row[1] for term in STATISTICS_TERMS), row[1]
    assert "Bonferroni" in rows[0][3] and "pairs" in rows[0][3]
    # a split whose within-layer interval straddles one half leaves prediction 1 undecided
    from helpers.common.stats import Interval

    split = dict(kw["variance_split"])
    split[WITHIN_LAYER] = Interval(0.5, 0.45, 0.55)
    assert "layer': undecided" in claim_rows(**{**kw, "variance_split": split})[3][1]
    mini = claim_rows(**kw, other=("course-mini", peak))[1][1]
    assert "on course-mini (BERT's own objectives) it peaks at layer" in mini


def test_cross_layer_control_matrix_matches_random_pair_cosines(data_traces):
    from helpers.layerwalk.compute import cross_layer_control_matrix, random_pair_cosines

    ctrl = cross_layer_control_matrix(data_traces, n_pairs=50, seed=0)
    L = data_traces[0].num_layers
    assert ctrl.shape == (L + 1, L + 1) and torch.allclose(ctrl, ctrl.T)
    for a, b in ((0, L), (1, L), (2, 2)):
        by_hand = random_pair_cosines(data_traces, n_pairs=50, seed=0, gap=b - a)[:, a].mean()
        assert float(ctrl[a, b]) == pytest.approx(float(by_hand), abs=1e-6)


def test_share_explained_by_layer_ci_brackets_the_estimate():
    from helpers.layerwalk.compute import share_explained_by_layer, share_explained_by_layer_ci

    gen = torch.Generator().manual_seed(0)
    layered = torch.arange(4.0) + 0.1 * torch.randn(30, 4, generator=gen)  # the layer explains nearly all
    ci = share_explained_by_layer_ci(layered)
    assert ci.estimate == pytest.approx(share_explained_by_layer(layered))
    assert ci.low <= ci.estimate <= ci.high and ci.low > 0.9
    noise = torch.randn(30, 4, generator=gen)  # the layer explains little
    assert share_explained_by_layer_ci(noise).high < 0.5
    with pytest.raises(ValueError, match="n_tokens"):
        share_explained_by_layer_ci(torch.ones(4))


def test_rank_layers_ties_are_read_off_the_all_pairs_interval():
    """Nine columns each a little above the lowest: the tie set is read off each difference's
    interval at the Bonferroni level over every pair of the ten columns (the lowest is picked by the
    data), and a verdict never disagrees with the interval printed beside it."""
    from helpers.common.stats import extreme_family, family_level
    from helpers.layerwalk.compute import rank_layers

    gen = torch.Generator().manual_seed(0)
    low = torch.randn(30, generator=gen, dtype=torch.float64)
    values = torch.stack([low] + [low + 0.45 + torch.randn(30, generator=gen, dtype=torch.float64)
                                  for _ in range(9)], dim=1)
    r = rank_layers(values, lowest=True)
    assert r.extreme == 0 and r.family_size == extreme_family(10) == 45 and r.p_values[0] == 1.0
    assert all(d.level == pytest.approx(family_level(45)) for d in r.differences)
    assert r.tied == [0] + [j for j in range(1, 10) if r.differences[j].low <= 0 <= r.differences[j].high]
    for j in range(1, 10):
        v = r.verdict(j, a="x", b="lowest")
        assert v.kind == ("inconclusive" if j in r.tied else "higher")
        assert (v.p_value >= 0.05) == (j in r.tied)  # the p printed beside it agrees with the interval
        assert "Holm" not in v.text


def test_rank_layers_resamples_clusters(data_traces):
    """Tokens of one sentence resampled together: the intervals match cluster_bootstrap_ci's (the
    same draws), not those of resampling tokens one by one."""
    import numpy as np

    from helpers.common.stats import cluster_bootstrap_ci
    from helpers.layerwalk.compute import cluster_labels, rank_layers

    norms = layer_norms_per_token(data_traces, "content").double()  # [N, L + 1]
    labels = cluster_labels(data_traces, "content")
    assert labels.shape == (norms.shape[0],)
    assert list(np.bincount(labels)) == [len(content_positions(t)) for t in data_traces]
    by_sentence = rank_layers(norms, lowest=False, clusters=labels, n_boot=2000, unit="sentences")
    reference = cluster_bootstrap_ci(norms, labels, n_boot=2000)
    for got, ref in zip(by_sentence.intervals, reference):
        assert (got.low, got.high) == pytest.approx((ref.low, ref.high))
    by_token = rank_layers(norms, lowest=False, n_boot=2000)
    assert by_sentence.unit == "sentences" and by_token.unit == "items"
    assert all(abs(a.low - b.low) > 1e-6 for a, b in zip(by_sentence.intervals, by_token.intervals))
    with pytest.raises(ValueError, match="one unit per item"):
        rank_layers(norms, clusters=labels[:-1])


def test_step_verdicts_follow_the_steps_with_bonferroni():
    from helpers.common.stats import family_level
    from helpers.layerwalk.compute import step_verdicts

    gen = torch.Generator().manual_seed(0)
    values = torch.tensor([0.9, 0.7, 0.7, 0.8]) + 0.05 * torch.randn(20, 4, generator=gen)
    steps = step_verdicts(values, names=["emb", "1", "2", "3"])
    means = values.double().mean(0)
    assert [v.difference.estimate for v in steps] == pytest.approx((means[1:] - means[:-1]).tolist())
    assert steps[0].kind == "lower" and steps[2].kind == "higher" and steps[0].text.startswith("1 lower than emb")
    assert all(v.family == 3 and v.level == pytest.approx(family_level(3)) for v in steps)
    assert steps[1].kind == ("inconclusive" if steps[1].difference.contains(0.0) else steps[1].kind)
    with pytest.raises(ValueError, match="names"):
        step_verdicts(values, names=["a"])


def test_share_explained_by_layer_ci_can_resample_sentences(data_traces):
    from helpers.layerwalk.compute import cluster_labels, share_explained_by_layer_ci

    norms = layer_norms_per_token(data_traces, "content")
    by_token = share_explained_by_layer_ci(norms, seed=0)
    by_sentence = share_explained_by_layer_ci(norms, seed=0, clusters=cluster_labels(data_traces, "content"))
    assert by_token.estimate == by_sentence.estimate
    assert by_sentence.low <= by_sentence.estimate <= by_sentence.high
    assert (by_sentence.low, by_sentence.high) != (by_token.low, by_token.high)  # whole sentences were drawn


def test_variance_split_separates_layer_token_and_interaction(data_traces):
    from helpers.layerwalk.compute import (VARIANCE_PARTS, WITHIN_LAYER, cluster_labels, layer_norms_per_token,
                                           share_explained_by_layer, variance_split, variance_split_ci)

    layer_effect, token_effect = torch.tensor([0.0, 1.0, 3.0]), torch.tensor([0.0, 2.0, -1.0, 5.0])
    additive = token_effect[:, None] + layer_effect[None, :]  # no interaction
    split = variance_split(additive)
    assert split["interaction"] == pytest.approx(0.0, abs=1e-12)
    total = ((additive - additive.mean()) ** 2).sum()
    assert split["token"] == pytest.approx(float(3 * ((token_effect - token_effect.mean()) ** 2).sum() / total))
    crossed = torch.tensor([[1.0, -1.0], [-1.0, 1.0]])  # equal means everywhere: all interaction
    assert variance_split(crossed) == pytest.approx({"layer": 0.0, "token": 0.0, "interaction": 1.0})
    norms = layer_norms_per_token(data_traces, "content")
    real = variance_split(norms)
    assert sum(real.values()) == pytest.approx(1.0) and real["layer"] == pytest.approx(share_explained_by_layer(norms))
    ci = variance_split_ci(norms, seed=0, clusters=cluster_labels(data_traces, "content"))
    assert list(ci) == list(VARIANCE_PARTS) + [WITHIN_LAYER]
    within = ci[WITHIN_LAYER]
    assert within.estimate == pytest.approx(real["token"] + real["interaction"]) and within.low <= within.estimate
    assert all(ci[p].low <= ci[p].estimate <= ci[p].high and ci[p].estimate == pytest.approx(real[p])
               for p in VARIANCE_PARTS)


def test_cosine_contributions_add_up_to_the_baseline_and_centring_is_the_mean_removed(data_traces):
    from helpers.layerwalk.compute import (consecutive_cosines_per_token, cosine_contributions, layer_mean_std,
                                           pooled_vectors)

    contrib = cosine_contributions(data_traces, n_pairs=200, seed=0)
    L, H = data_traces[0].num_layers, data_traces[0].hidden_size
    assert contrib.shape == (L + 1, H)
    cos = random_pair_cosines(data_traces, n_pairs=200, seed=0)
    assert torch.allclose(contrib.sum(-1), cos.mean(0), atol=1e-5)
    mean, std = layer_mean_std(data_traces)
    stack = pooled_vectors(data_traces)
    assert torch.allclose(mean, stack.mean(1)) and torch.allclose(std, stack.std(1))
    centred = consecutive_cosines_per_token(data_traces, shift=mean)
    by_hand = torch.nn.functional.cosine_similarity(stack[0] - mean[0], stack[1] - mean[1], dim=-1)
    assert torch.allclose(centred[:, 0], by_hand, atol=1e-5)
    standard = random_pair_cosines(data_traces, n_pairs=200, seed=0, shift=mean, scale=std)
    assert standard.shape == cos.shape and not torch.allclose(standard, cos)


def test_claim_row_on_dominant_dimensions_reads_the_cosine_contributions(data_traces, model):
    from helpers.layerwalk.compute import claim_rows

    kw = _claim_inputs(data_traces, model)
    share = kw["top_share"]
    row = claim_rows(**kw, centred_max=0.0123)[4]
    assert f"{share.min():.0%}-{share.max():.0%} of the random-pair cosine" in row[1]
    assert "within 0.012 of 0" in row[1] and "Timkey & van Schijndel 2021" in row[2]


def test_outlier_counts_and_their_sentence(model):
    from helpers.layerwalk.compute import layer_norm_outliers, outlier_counts, outlier_sentence

    flagged = [[1, 2], [2, 5], [2, 7], [5]]
    rows = outlier_counts(flagged, top_dims=[[2], [9], [5], [5]])
    assert [(r["dimension"], r["flagged in"]) for r in rows] == [(2, 3), (5, 2)]
    assert rows[0]["layers"] == [0, 1, 2] and rows[0]["top contributor in"] == [0] and rows[1]["top contributor in"] == [2, 3]
    text = outlier_sentence(rows, 4)
    assert text.startswith("No dimension is an outlier in all 4 LayerNorms; the closest, dimension 2, is flagged in 3 of 4")
    assert "in layer 0" in text
    assert outlier_sentence(outlier_counts([[3], [3]]), 2).startswith("Dimension 3 is an outlier in every one")
    real = layer_norm_outliers(model)
    by_hand = {}
    for layer in real:
        for d in layer:
            by_hand[d] = by_hand.get(d, 0) + 1
    assert {r["dimension"]: r["flagged in"] for r in outlier_counts(real)} == {d: n for d, n in by_hand.items() if n > 1}


def test_ranking_and_profile_sentences_follow_the_intervals():
    from helpers.common.stats import Interval, LayerRanking
    from helpers.layerwalk.compute import profile_finding, ranking_sentence

    iv = [Interval(v, v - 0.01, v + 0.01) for v in (0.1, 0.5, 0.48, 0.2)]
    from helpers.common.stats import family_level

    lv = family_level(6)
    diffs = [Interval(-0.4, -0.45, -0.35, lv), Interval(0, 0, 0, lv), Interval(-0.02, -0.05, 0.01, lv),
             Interval(-0.3, -0.35, -0.25, lv)]
    r = LayerRanking(iv, 1, [1, 2], diffs, [0.001, 1.0, 0.5, 0.001], family=6)
    names = ["emb", "layer 1", "layer 2", "layer 3"]
    text = ranking_sentence(r, names, "the cosine")
    assert text.startswith("The cosine is highest at layer 1 (0.500); layer 2 could be just as high.")
    assert "At emb (0.100) and layer 3 (0.200) it is clearly lower." in text
    alone = LayerRanking(iv, 1, [1], diffs, family=6)
    assert "clearly above every other layer, emb (0.100) and layer 3 (0.200) included." in ranking_sentence(
        alone, names, "the cosine")
    sentence, details = profile_finding(r, names, what="the cosine")
    assert sentence == text and len(details) == 4 and "Bonferroni" in details[0]


# -- lesson 07's table rows and findings (helpers moved out of the lesson) --------------------

def _iv(estimate, low, high):
    from helpers.common.stats import Interval

    return Interval(estimate, low, high)


def _verdict(kind, estimate):
    from helpers.common.stats import Verdict

    return Verdict(kind, f"step {kind}", _iv(estimate, estimate - 1, estimate + 1))


def test_transition_and_norm_rows_read_the_quartiles():
    from helpers.layerwalk.compute import norm_rows, transition_rows

    per_token = torch.tensor([[0.1, 0.5], [0.2, 0.6], [0.3, 0.7], [0.4, 0.8], [0.5, 0.9]])
    cls = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    rows = transition_rows(["emb→1", "1→2"], per_token, torch.tensor([0.12345, -0.5]), "'x'", cls_per_token=cls)
    # by hand: column 0 is 0.1..0.5, so q25 0.2, median 0.3, q75 0.4; the [CLS] medians are 0.5
    assert rows[0] == {"transition": "emb→1", "data tokens: median [IQR]": "0.300 [0.200-0.400]",
                       "[CLS]: median": "0.500", "'x'": "0.123"}
    assert rows[1]["data tokens: median [IQR]"] == "0.700 [0.600-0.800]" and rows[1]["'x'"] == "-0.500"
    assert "[CLS]: median" not in transition_rows(["a"], per_token[:, :1], [1.0], "'x'")[0]
    norms = norm_rows(torch.tensor([3.0, 4.5]), 10 * per_token, "'x'")
    assert norms[0] == {"layer": "emb", "data median": "3.00 [IQR 2.00-4.00]", "this token ('x')": "3.00"}
    assert norms[1]["layer"] == "1" and norms[1]["data median"] == "7.00 [IQR 6.00-8.00]"


def test_baseline_turn_and_step_rows():
    from types import SimpleNamespace

    from helpers.layerwalk.compute import baseline_rows, step_rows, turn_rows

    within = [_iv(0.1 * i, 0.0, 1.0) for i in range(3)]
    cross = [_iv(0.5, 0.4, 0.6), _iv(0.7, 0.6, 0.8)]
    rows = baseline_rows(within, cross, torch.tensor([0.25, 0.75]), ["emb→1", "1→2"])
    assert [r["layer"] for r in rows] == ["emb", "1", "2"]
    assert rows[0]["same layer"] == str(within[0]) and rows[1]["one layer apart"] == str(cross[1])
    assert rows[1]["mean of two same-layer"] == "0.750" and rows[1]["transition"] == "1→2"
    assert rows[2]["transition"] == rows[2]["one layer apart"] == rows[2]["mean of two same-layer"] == ""
    turn = SimpleNamespace(intervals=cross)
    rows = turn_rows(turn, ["emb→1", "1→2"], torch.tensor([0.25, 0.75]), torch.tensor([1.0, 0.0]))
    assert rows[0] == {"transition": "emb→1", "adjusted median [95 % CI]": str(cross[0]),
                       "tokens turning most here": "25%", "same, raw cosine": "100%"}
    steps = step_rows([_verdict("higher", 1.5), _verdict("lower", -0.25), _verdict("inconclusive", 0.01)],
                      ["a", "b", "c"])
    assert [r["reading"] for r in steps] == ["grows", "shrinks", "cannot tell"]
    assert [r["change of the mean length"] for r in steps] == ["+1.5", "-0.25", "+0.01"]


def test_growth_finding_reads_every_step():
    from helpers.layerwalk.compute import growth_finding

    names, med = ["emb→1", "1→2"], [2.0, 1.0, 3.0]
    up = [_verdict("higher", 1.0), _verdict("higher", 2.0)]
    grows, sentence, details = growth_finding(up, names, med)
    assert grows == "met" and sentence.startswith("The mean length grows at every step: ")
    assert sentence.endswith("The median is shortest at layer 1, longest at layer 2.")
    assert details == ["step higher", "step higher"]
    grows, sentence, _ = growth_finding([up[0], _verdict("lower", -1.0)], names, med)
    assert grows == "not met" and "does not grow at every step" in sentence
    grows, sentence, _ = growth_finding([up[0], _verdict("inconclusive", 0.0)], names, med)
    assert grows == "inconclusive" and "may or may not grow" in sentence


def test_parts_and_top_dimension_rows():
    from helpers.layerwalk.compute import parts_rows, top_dimension_rows

    parts = {"norm": torch.tensor([[1.0, 4.0], [2.0, 5.0], [3.0, 9.0]]), "scaled": torch.ones(3, 2),
             "cross": torch.tensor([[-1.0, 0.5], [0.0, 0.5], [1.0, 0.5]]),
             "gamma": torch.tensor([7.0, 8.125]), "beta": torch.tensor([0.5, 0.25])}
    rows = parts_rows(parts)
    assert rows[0] == {"layer": "emb", "median ||h||": "2.00", "median ||gamma*z_hat||": "1.00",
                       "||gamma||": "7.00", "||beta||": "0.50", "median 2<s,beta>": "0.00"}
    assert rows[1]["median ||h||"] == "5.00" and rows[1]["||gamma||"] == "8.12"
    contrib = torch.tensor([[0.1, 0.2, 0.0, 0.0], [0.3, 0.0, 0.0, 0.1]])
    dims = torch.tensor([[1, 0, 2], [0, 3, 1]])
    rows = top_dimension_rows(contrib, dims, torch.tensor([1.0, 0.5]), [[2, 3], []])
    assert rows[0] == {"layer": "emb", "random-pair cosine": "0.300", "top 3 dims": "[1, 0, 2]",
                       "share they supply": "100%", "LayerNorm 3-sigma outliers": "[2, 3]", "in both": "[2]"}
    assert rows[1]["in both"] == "[]" and rows[1]["random-pair cosine"] == "0.400"


def test_outlier_table_rows_and_finding():
    from helpers.layerwalk.compute import outlier_counts, outlier_finding, outlier_table_rows

    counted = outlier_counts([[5, 7], [5], [5, 7], [1]], top_dims=[[5, 0, 2], [1, 2, 3], [7, 5, 0], [0, 1, 2]])
    rows = outlier_table_rows(counted, 4)
    # by hand: 5 is flagged in layers 0, 1, 2 and a top contributor in 0 and 2; 7 in 0 and 2, top in 2
    assert rows == [{"dimension": 5, "flagged in (of 4)": 3, "layers flagged": "[0, 1, 2]",
                     "top-3 cosine contributor in": "[0, 2]"},
                    {"dimension": 7, "flagged in (of 4)": 2, "layers flagged": "[0, 2]",
                     "top-3 cosine contributor in": "[2]"}]
    assert len(outlier_table_rows(counted, 4, limit=1)) == 1
    assert outlier_table_rows([], 4) == [{"dimension": "none", "flagged in (of 4)": "-"}]
    sentence, details = outlier_finding(counted, 4)
    assert "closest, dimension 5, is flagged in 3 of 4" in sentence
    assert details == ["dimension 5: flagged in layers [0, 1, 2]", "dimension 7: flagged in layers [0, 2]"]


def test_cosines_by_variant_matches_the_measures_by_hand(data_traces):
    import numpy as np

    from helpers.layerwalk.compute import cosine_contributions, cosines_by_variant, layer_mean_std, variant_rows

    mean, _ = layer_mean_std(data_traces, "content")
    variants = {"raw": {}, "mean-centred": {"shift": mean}}
    base, turn = cosines_by_variant(data_traces, variants, n_pairs=100, seed=0)
    L = data_traces[0].num_layers
    assert base["raw"].shape == (L + 1,) and len(turn["raw"]) == L
    # the baseline: the per-dimension contributions of the same pairs add up to it
    for name, kw in variants.items():
        assert torch.allclose(base[name], cosine_contributions(data_traces, 100, 0, **kw).sum(-1), atol=1e-5)
    # the turn: centre the pooled vectors by hand, cosine of consecutive layers, median over tokens
    pooled = pooled_vectors(data_traces, "content") - mean[:, None]
    median = np.median(F.cosine_similarity(pooled[:-1], pooled[1:], dim=-1).numpy(), axis=1)
    control = random_pair_cosines(data_traces, 100, 0, gap=1, shift=mean).mean(0).numpy()
    assert np.allclose(turn["mean-centred"], median - control, atol=1e-5)
    assert not np.allclose(turn["raw"], turn["mean-centred"])
    rows = variant_rows({"a": [0.1234, -0.5], "b": [1.0, 0.0]}, ["emb", 1], "layer")
    assert rows == [{"layer": "emb", "a": "+0.123", "b": "+1.000"}, {"layer": 1, "a": "-0.500", "b": "+0.000"}]


def test_comparison_rows_and_finding(data_traces):
    from types import SimpleNamespace

    from helpers.layerwalk.compute import anisotropy_profile, comparison_finding, comparison_rows, last_layer_word

    a = SimpleNamespace(intervals=[_iv(0.1, 0.0, 0.2), _iv(0.3, 0.2, 0.4), _iv(0.5, 0.4, 0.6)])
    b = SimpleNamespace(intervals=[_iv(0.2, 0.1, 0.3), _iv(0.4, 0.3, 0.5)])
    rows = comparison_rows([("m", a, torch.tensor([0.5, 0.25, 0.125])), ("mini", b, torch.tensor([1.0, 0.75]))])
    assert [r["layer"] for r in rows] == ["emb", "1", "2"]
    assert rows[1] == {"layer": "1", "m: random-pair cosine": str(a.intervals[1]), "m: top-3 share": "25%",
                       "mini: random-pair cosine": str(b.intervals[1]), "mini: top-3 share": "75%"}
    assert rows[2]["mini: random-pair cosine"] == rows[2]["mini: top-3 share"] == ""
    mini = anisotropy_profile(data_traces, n_pairs=100, seed=0)
    L = len(mini["names"]) - 1
    labels = [f"{i}→{i + 1}" for i in range(L)]
    share = torch.tensor([0.2, 0.6])
    text, details = comparison_finding(mini["rank"], share, mini, labels)
    assert text.startswith("On course-mini, ") and "the two checkpoints agree there" in text
    lo, hi = float(mini["share"].min()), float(mini["share"].max())
    assert f"Its top 3 dimensions supply {lo:.0%}-{hi:.0%}" in text and "(20%-60% on this model)" in text
    assert details and details[0].startswith(mini["names"][mini["rank"].extreme])
    word = last_layer_word(mini["rank"])
    # a profile whose last layer is the peak, or one whose last layer drops: the opposite of mini's
    other = (SimpleNamespace(intervals=[None] * (L + 1), extreme=L, tied=[L]) if word == "drops"
             else SimpleNamespace(intervals=[None] * (L + 1), extreme=0, tied=[0]))
    assert "the two disagree" in comparison_finding(other, share, mini, labels)[0]


def test_confidence_finding_and_claims_frame():
    from helpers.common.claims import claims_frame
    from helpers.layerwalk.compute import WITHIN_LAYER, confidence_finding

    split = {"layer": _iv(0.2, 0.1, 0.3), "token": _iv(0.5, 0.4, 0.6), "interaction": _iv(0.3, 0.2, 0.4),
             WITHIN_LAYER: _iv(0.8, 0.7, 0.9)}
    sentence, details = confidence_finding(split, "not met", 40, 7)
    assert sentence.startswith("80% of the variance of the length lies between the tokens of a layer")
    assert "own mean length 50%" in sentence and "others 30%), 20% between the layers' means" in sentence
    assert "is met. Prediction 2, the mean length grows at every layer, is not met. So" in sentence
    assert "over 40 tokens x 7 layers" in details[0] and "layer 20% [10, 30]" in details[0]
    split[WITHIN_LAYER] = _iv(0.5, 0.45, 0.55)
    sentence, _ = confidence_finding(split, "met", 40, 7)
    assert "is undecided" in sentence and "premise" not in sentence
    split[WITHIN_LAYER] = _iv(0.3, 0.2, 0.4)
    assert "is not met. Prediction 2" in confidence_finding(split, "met", 40, 7)[0]
    frame = claims_frame([("c1", "r1", "p1", "how1"), ("c2", "r2", "p2", "how2")], "m", "same model")
    assert frame.shape == (2, 3) and frame.iloc[1, 2] == "p2"
    assert list(frame.columns) == ["popular claim", "this model (m), live",
                                   "published finding (paper, model); against BERT-base: same model"]
