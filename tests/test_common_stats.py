"""helpers.common.stats: intervals checked against independent computations and known distributions."""

import numpy as np
import pytest
import torch

from helpers.common.stats import (Interval, Replicates, SeedSpread, accuracy_ci, bonferroni, bootstrap_ci,
                                  bootstrap_p_value, clopper_pearson, cluster_bootstrap_ci, cluster_replicates, differs,
                                  equivalence_level, family_level, format_p, holm, mcnemar, pair_replicates,
                                  paired_difference_ci, quartiles, rank_p_value, replicate_verdicts, rule_of_three,
                                  seeds_interval, seeds_items_ci, tango_interval, unit_weights, verdict)


def test_quartiles_match_numpy_per_column():
    rng = np.random.default_rng(1)
    samples = rng.normal(size=(200, 4)) + np.arange(4)
    q25, med, q75 = quartiles(torch.tensor(samples))
    assert np.allclose(med, np.median(samples, axis=0))
    assert np.allclose(q25, np.quantile(samples, 0.25, axis=0)) and np.allclose(q75, np.quantile(samples, 0.75, axis=0))


def test_bootstrap_interval_covers_the_true_mean_at_about_the_nominal_rate():
    # 200 samples of size 40 from N(3, 1): a 95% interval should cover 3 in roughly 95% of them.
    rng = np.random.default_rng(2)
    covered = [bootstrap_ci(rng.normal(3.0, 1.0, size=40), seed=i).contains(3.0) for i in range(200)]
    assert 0.88 <= np.mean(covered) <= 0.99


def test_bootstrap_width_shrinks_like_one_over_root_n():
    rng = np.random.default_rng(3)
    small, large = bootstrap_ci(rng.normal(size=50)), bootstrap_ci(rng.normal(size=800))
    ratio = (small.high - small.low) / (large.high - large.low)
    assert 2.5 < ratio < 6.0  # sqrt(800 / 50) = 4


def test_per_column_intervals_resample_the_same_items():
    values = np.stack([np.arange(30.0), 2 * np.arange(30.0)], axis=1)
    first, second = bootstrap_ci(values)
    assert second.estimate == pytest.approx(2 * first.estimate)
    assert second.low == pytest.approx(2 * first.low) and second.high == pytest.approx(2 * first.high)


def test_accuracy_interval_and_no_overlap_rule():
    acc = accuracy_ci([1] * 45 + [0] * 5)
    assert acc.estimate == pytest.approx(0.9) and acc.low < 0.9 < acc.high <= 1.0
    assert acc.percent().startswith("90.0% [")
    assert not hasattr(Interval(0.5, 0.4, 0.6), "overlaps")  # overlap is no test: compare the difference
    with pytest.raises(ValueError, match="0/1"):
        accuracy_ci([0.5, 1.0])
    with pytest.raises(ValueError, match="empty"):
        bootstrap_ci([])


def test_seeds_interval_is_the_range():
    iv = seeds_interval([0.7, 0.8, 0.75])
    assert (iv.low, iv.high) == (0.7, 0.8) and iv.estimate == pytest.approx(0.75)
    with pytest.raises(ValueError, match="two seeds"):
        seeds_interval([0.7])


def test_accuracy_is_exact_clopper_pearson_also_when_every_item_is_right():
    from scipy.stats import beta

    iv = accuracy_ci([1] * 10)
    assert (iv.estimate, iv.high) == (1.0, 1.0) and iv.low == pytest.approx(0.025 ** (1 / 10))  # 0.692
    assert accuracy_ci([0] * 100).high == pytest.approx(1 - 0.025 ** (1 / 100))
    k, n = 37, 50
    got = accuracy_ci([1] * k + [0] * (n - k))
    assert (got.low, got.high) == pytest.approx((beta.ppf(0.025, k, n - k + 1), beta.ppf(0.975, k + 1, n - k)))
    assert rule_of_three(10) == pytest.approx(0.3)  # one-sided, and wider than the exact two-sided bound here


def test_clopper_pearson_covers_at_least_the_nominal_rate():
    rng = np.random.default_rng(7)
    for p_true in (0.5, 0.9, 0.98):
        hits = [clopper_pearson(int(k), 60).contains(p_true) for k in rng.binomial(60, p_true, size=400)]
        assert np.mean(hits) >= 0.93  # exact: conservative, never much below 95%


def test_mcnemar_reads_tango_score_interval_and_its_own_score_test():
    from scipy.stats import binomtest, norm

    a = np.array([1] * 50 + [1] * 9 + [0] * 2 + [0] * 39)
    b = np.array([1] * 50 + [0] * 9 + [1] * 2 + [0] * 39)
    m = mcnemar(a, b)
    assert (m.a_only, m.b_only, m.n) == (9, 2, 100)
    assert m.p_value == pytest.approx(2 * norm.sf(7 / 11 ** 0.5))  # McNemar's z = (b - c) / sqrt(b + c)
    assert m.exact_p == pytest.approx(binomtest(9, 11, 0.5).pvalue)
    assert m.difference.estimate == pytest.approx(0.07)
    # Tango's interval by hand: every delta the score test does not reject at 5 %
    deltas = np.linspace(-0.2, 0.3, 20001)
    from helpers.common.verdicts import _tango_z

    kept = deltas[np.abs(_tango_z(deltas, 9, 2, 100)) <= norm.ppf(0.975)]
    assert (m.difference.low, m.difference.high) == pytest.approx((kept.min(), kept.max()), abs=5e-5)
    same = mcnemar(a, a)
    assert same.p_value == 1.0 and same.verdict().kind == "inconclusive"
    # nothing changed on 100 items: the interval is about +/- 1.96^2 / 100, not zero-width
    assert same.difference.high == pytest.approx(1.96 ** 2 / (100 + 1.96 ** 2), rel=1e-3)
    assert same.verdict(margin=0.01).kind == "inconclusive"
    assert mcnemar([1] * 2000, [1] * 2000).verdict(margin=0.01).kind == "equivalent"


def test_tango_interval_matches_the_published_example_and_grows_with_the_count():
    # Fagerland, Lydersen & Laake (2014), Table 4: Bentur et al.'s airway data, n12 = 1, n21 = 7, N = 21:
    # Tango's 95 % interval for the difference is (-0.517, -0.026).
    low, high = tango_interval(1, 7, 21, 0.95)
    assert (float(low), float(high)) == pytest.approx((-0.517, -0.026), abs=1e-3)
    b = np.arange(0, 40)
    low, high = tango_interval(b, 0, 100, 0.90)
    assert np.all(np.diff(high) > 0) and np.all(np.diff(low) > 0)  # monotone: one more item never narrows it
    with pytest.raises(ValueError, match="counts"):
        tango_interval(60, 50, 100)


def test_mcnemar_interval_excludes_zero_exactly_when_the_test_rejects():
    rng = np.random.default_rng(8)
    for _ in range(60):
        a, b = rng.random(80) < 0.8, rng.random(80) < 0.7
        m = mcnemar(a, b)
        assert (m.difference.low > 0 or m.difference.high < 0) == (m.p_value < 0.05)


def test_a_family_reads_bonferroni_intervals_and_adjusted_p_values():
    assert family_level(1) == pytest.approx(0.95) and family_level(10) == pytest.approx(0.995)
    assert equivalence_level(1) == pytest.approx(0.90) and equivalence_level(5) == pytest.approx(0.98)
    assert np.allclose(bonferroni([0.01, 0.2, 0.5]), [0.03, 0.6, 1.0])
    a = np.array([1] * 60 + [0] * 40)
    b = np.array([1] * 52 + [0] * 48)
    v = mcnemar(a, b).verdict("A", "B", family=12)
    assert v.difference.level == pytest.approx(1 - 0.05 / 12) and v.family == 12
    assert "Bonferroni over 12 comparisons" in v.text and "Bonferroni-adjusted p" in v.text
    assert v.p_value == pytest.approx(min(1.0, 12 * mcnemar(a, b).p_value))
    assert (v.kind == "higher") == (v.p_value < 0.05)  # interval and p from one test: they cannot disagree


def test_bootstrap_p_prints_as_a_bound_at_its_floor():
    boots = np.linspace(0.1, 1.0, 1000)  # every replicate above 0
    assert bootstrap_p_value(boots) == pytest.approx(1 / 1000)
    assert format_p(0.001, floor=0.001) == "p <= 0.001" and format_p(0.03, floor=0.001) == "p = 0.03"
    reps = Replicates(np.array([0.5]), 0.5 + 0.05 * np.random.default_rng(0).standard_normal((1000, 1)), n_units=200)
    v = replicate_verdicts(reps, ["x"], b="y")[0]
    assert reps.p_values()[0] == pytest.approx(reps.p_floor)  # every replicate above 0: the floor
    assert f"p <= {reps.p_floor:.2g}" in v.text


def test_holm_matches_the_step_down_rule():
    assert np.allclose(holm([0.01, 0.04, 0.03, 0.5]), [0.04, 0.09, 0.09, 0.5])
    assert np.allclose(holm([[0.2, 0.001]]), [[0.2, 0.002]])
    with pytest.raises(ValueError):
        holm([1.5])


def test_verdicts_never_call_an_interval_through_zero_no_effect():
    wide = Interval(0.01, -0.05, 0.07)
    assert verdict(wide).kind == "inconclusive" and "not evidence of no difference" in verdict(wide).text
    assert verdict(wide, margin=0.02, equivalence_interval=Interval(0.01, -0.04, 0.06, 0.90)).kind == "inconclusive"
    narrow = Interval(0.001, -0.004, 0.006)
    assert verdict(narrow, margin=0.02, equivalence_interval=Interval(0.001, -0.003, 0.005, 0.90)).kind == "equivalent"
    assert verdict(Interval(0.05, 0.02, 0.08), a="x", b="y").text.startswith("x higher than y")
    assert verdict(Interval(-0.05, -0.08, -0.02)).kind == "lower"
    # a p-value never overrules the interval: the verdict is read off the interval alone
    assert verdict(wide, p_value=0.3).kind == "inconclusive"
    with pytest.raises(ValueError, match="margin"):
        verdict(narrow, margin=0, equivalence_interval=narrow)


def test_verdict_refuses_intervals_at_the_wrong_level():
    with pytest.raises(ValueError, match="equivalence interval"):
        verdict(Interval(0.001, -0.004, 0.006), margin=0.02)  # no silent TOST on the 95 % interval
    with pytest.raises(ValueError, match="90 % one"):
        verdict(Interval(0.001, -0.004, 0.006), margin=0.02, equivalence_interval=Interval(0.001, -0.004, 0.006))
    with pytest.raises(ValueError, match="99.5 % one"):
        verdict(Interval(0.02, 0.005, 0.035), family=10)  # an unadjusted interval beside a family
    zero = Interval(0.0, 0.0, 0.0, 0.90)
    assert verdict(Interval(0.0, 0.0, 0.0), margin=0.01, equivalence_interval=zero).kind == "inconclusive"


def test_cluster_bootstrap_widens_when_items_share_a_unit():
    rng = np.random.default_rng(9)
    clusters = np.repeat(np.arange(15), 8)
    values = np.repeat(rng.normal(size=15), 8) + 0.1 * rng.normal(size=120)  # items of a cluster move together
    per_item, per_cluster = bootstrap_ci(values), cluster_bootstrap_ci(values, clusters)
    assert per_cluster.estimate == pytest.approx(values.mean())
    assert (per_cluster.high - per_cluster.low) > 2 * (per_item.high - per_item.low)
    cols = cluster_bootstrap_ci(np.stack([values, 2 * values], 1), clusters)
    assert cols[1].high == pytest.approx(2 * cols[0].high)
    with pytest.raises(ValueError, match="one unit per item"):
        cluster_bootstrap_ci(values, clusters[:-1])


def test_seeds_and_items_are_both_resampled():
    rng = np.random.default_rng(10)
    seed_effect = rng.normal(0, 0.05, size=(5, 1))
    values = 0.02 + seed_effect + rng.normal(0, 0.02, size=(5, 300))
    both = seeds_items_ci(values)
    items_only = bootstrap_ci(values.mean(0))  # 300 items: the t floor does not widen it
    assert both.estimate == pytest.approx(values.mean())
    assert (both.high - both.low) > 1.5 * (items_only.high - items_only.low)  # the seed spread counts
    spread = SeedSpread(tuple(values.mean(1)))
    assert spread.n == 5 and spread.sd == pytest.approx(np.std(values.mean(1), ddof=1))
    assert "over 5 seeds" in spread.format(".1f", percent=True)


def test_paired_difference_sees_what_separate_intervals_hide():
    rng = np.random.default_rng(4)
    base = rng.random(200) < 0.7
    better = base.copy()
    better[np.flatnonzero(~base)[:20]] = True  # 20 items fixed, none broken
    a, b = accuracy_ci(better), accuracy_ci(base)
    assert a.low < b.high  # the separate intervals share values ...
    diff = paired_difference_ci(better, base)
    assert diff.estimate == pytest.approx(0.1) and differs(diff)  # ... the paired difference excludes 0
    with pytest.raises(ValueError, match="same items"):
        paired_difference_ci(base, base[:-1])


def test_small_samples_get_at_least_the_t_interval():
    from scipy import stats

    from helpers.common.stats import paired_t_interval

    gen = torch.Generator().manual_seed(0)
    a, b = torch.randn(14, generator=gen), torch.randn(14, generator=gen)
    t = paired_t_interval(a, b)
    by_hand = stats.t.interval(0.95, 13, loc=float((a - b).double().mean()),
                               scale=float((a - b).double().std()) / 14 ** 0.5)
    assert (t.low, t.high) == pytest.approx(by_hand, rel=1e-6)
    both = paired_difference_ci(a, b)
    assert both.low <= t.low + 0.02 and both.high >= t.high - 0.02  # the t floor, from the bootstrap SE
    reps = cluster_replicates((a - b).double().numpy())
    half = stats.t.ppf(0.975, 13) * reps.se()[0] * (14 / 13) ** 0.5
    iv = reps.interval(0.95)
    assert iv.low <= iv.estimate - half + 1e-12 and iv.high >= iv.estimate + half - 1e-12


def test_unpaired_difference_resamples_each_set_on_its_own():
    from helpers.common.stats import unpaired_difference_ci

    gen = torch.Generator().manual_seed(0)
    a, b = 1 + 0.1 * torch.randn(20, generator=gen), 0.1 * torch.randn(30, generator=gen)
    d = unpaired_difference_ci(a, b)
    assert d.estimate == pytest.approx(float(a.double().mean() - b.double().mean())) and d.low > 0.9


def test_weights_are_multinomial_counts_and_pairs_move_with_their_sentences():
    w = unit_weights(7, 500, seed=1)
    assert w.shape == (500, 7) and np.all(w.sum(1) == 7) and np.all(w == np.round(w))
    # two pairs on sentence 0 and one pair on 1-2: a replicate's mean weighs each pair by w_first * w_second
    values, first, second = np.array([1.0, 2.0, 4.0]), np.array([0, 0, 1]), np.array([1, 2, 2])
    reps = pair_replicates(values, first, second, n_boot=200, seed=3)
    w = unit_weights(3, 200, seed=3)
    pw = np.stack([w[:, 0] * w[:, 1], w[:, 0] * w[:, 2], w[:, 1] * w[:, 2]], 1)
    ok = pw.sum(1) > 0
    assert np.allclose(reps.boots[ok, 0], (pw[ok] @ values) / pw[ok].sum(1))
    # the tokens' clusters and the pairs' sentences can share one draw, so a difference is paired
    tokens = cluster_replicates(np.array([1.0, 1.5, 3.0, 2.0]), np.array([0, 0, 1, 2]), n_boot=200,
                                weights=w, unit_labels=np.arange(3))
    assert np.allclose(tokens.boots[:, 0], (w[:, [0, 0, 1, 2]] @ np.array([1.0, 1.5, 3.0, 2.0])) / w[:, [0, 0, 1, 2]].sum(1))
    assert tokens.minus(reps).n_boot == 200


def test_weighted_median_matches_numpy_on_a_resample():
    rng = np.random.default_rng(5)
    values = rng.normal(size=(41, 2))
    reps = cluster_replicates(values, statistic=np.median, n_boot=100, seed=2)
    w = unit_weights(41, 100, seed=2)
    for r in (0, 17, 99):
        expanded = np.repeat(values, w[r].astype(int), axis=0)
        assert np.allclose(reps.boots[r], np.median(expanded, axis=0))
    assert np.allclose(reps.estimate, np.median(values, axis=0))


def test_rank_p_value_counts_the_observed_among_the_random():
    assert rank_p_value(0.9, [0.1, 0.2, 0.3]) == pytest.approx(1 / 4)
    assert rank_p_value(0.2, [0.1, 0.2, 0.3]) == pytest.approx(3 / 4)
    assert rank_p_value(0.05, [0.1, 0.2, 0.3], greater=False) == pytest.approx(1 / 4)


def test_median_interval_is_distribution_free_and_gives_up_on_too_few_values():
    from scipy.stats import binom

    from helpers.common.stats import median_interval

    assert (median_interval([0.9, 1.0, 1.0], 0.975, bounds=(0, 1)).low,
            median_interval([0.9, 1.0, 1.0], 0.975, bounds=(0, 1)).high) == (0.0, 1.0)
    x = np.arange(1.0, 21.0)  # 20 values: k = 6 gives 1 - 2 P(Bin(20, 1/2) <= 5) = 0.9882 >= 0.975
    iv = median_interval(x, 0.975)
    k = max(k for k in range(1, 11) if 1 - 2 * binom.cdf(k - 1, 20, 0.5) >= 0.975)
    assert (iv.low, iv.high) == (x[k - 1], x[20 - k]) and iv.estimate == 10.5
    rng = np.random.default_rng(3)  # coverage of the true median on skewed data, at least nominal
    hits = [median_interval(rng.exponential(size=15), 0.9).contains(np.log(2)) for _ in range(400)]
    assert np.mean(hits) >= 0.9 - 3 * (0.09 / 400) ** 0.5


def test_no_verdict_contradicts_its_own_p_in_random_cluster_designs():
    """The regime a statistician found (issue 44): few units, a large family -- the expanded
    percentile interval excludes 0 while the adjusted p cannot go below its floor. Over random
    designs, every printed difference has an adjusted p below alpha, and every such contradiction
    is reported as too few units."""
    from helpers.common.stats import rank_layers

    rng = np.random.default_rng(3)
    floored, differences = 0, 0
    for trial in range(60):
        units, k = int(rng.integers(6, 30)), 7  # 21 pairs of columns
        clusters = np.repeat(np.arange(units), 4)
        shift = rng.normal(scale=0.6, size=k)
        values = shift + np.repeat(rng.normal(size=(units, 1)), 4, axis=0) + 0.3 * rng.normal(size=(4 * units, k))
        ranking = rank_layers(values, clusters=clusters, seed=trial)  # the default replicates
        for j in range(k):
            if j == ranking.extreme:
                continue
            v = ranking.verdict(j)
            assert v.differs == (v.p_value < 0.05 and not v.difference.contains(0.0)), v.text
            differences += v.differs
            floored += "too few units for 21 comparisons" in v.text
    assert differences > 20 and floored > 5  # both regimes occur in these designs


def test_intra_cluster_correlation_recovers_the_simulated_share():
    from helpers.common.stats import intra_cluster_correlation

    rng = np.random.default_rng(4)
    clusters = np.repeat(np.arange(400), 6)
    for between in (0.0, 0.5, 0.8):  # share of the variance between clusters = the true correlation
        values = (np.repeat(rng.normal(scale=np.sqrt(between), size=400), 6)
                  + rng.normal(scale=np.sqrt(1 - between), size=2400))
        assert intra_cluster_correlation(values, clusters) == pytest.approx(between, abs=0.05)
    # balancing clusters (each one's items sum to 0) correlate negatively: -1 / (k - 1)
    balanced = rng.normal(size=(400, 6))
    balanced -= balanced.mean(1, keepdims=True)
    assert intra_cluster_correlation(balanced.ravel(), clusters) == pytest.approx(-1 / 5, abs=0.01)
    with pytest.raises(ValueError, match="no cluster holds two"):
        intra_cluster_correlation([1.0, 2.0], [0, 1])
