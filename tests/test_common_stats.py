"""helpers.common.stats: intervals checked against independent computations and known distributions."""

import numpy as np
import pytest
import torch

from helpers.common.stats import (Interval, SeedSpread, accuracy_ci, bootstrap_ci, clopper_pearson, cluster_bootstrap_ci,
                                  differs, holm, mcnemar, paired_difference_ci, quartiles, rule_of_three, seeds_interval,
                                  seeds_items_ci, verdict)


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


def test_accuracy_interval_and_overlap():
    acc = accuracy_ci([1] * 45 + [0] * 5)
    assert acc.estimate == pytest.approx(0.9) and acc.low < 0.9 < acc.high <= 1.0
    assert acc.percent().startswith("90.0% [")
    assert Interval(0.5, 0.4, 0.6).overlaps(Interval(0.65, 0.55, 0.75))
    assert not Interval(0.5, 0.4, 0.6).overlaps(Interval(0.8, 0.7, 0.9))
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


def test_mcnemar_uses_only_the_items_where_the_two_disagree():
    from scipy.stats import binomtest

    a = np.array([1] * 50 + [1] * 9 + [0] * 2 + [0] * 39)
    b = np.array([1] * 50 + [0] * 9 + [1] * 2 + [0] * 39)
    m = mcnemar(a, b)
    assert (m.a_only, m.b_only, m.n) == (9, 2, 100)
    assert m.p_value == pytest.approx(binomtest(9, 11, 0.5).pvalue)
    assert m.difference.estimate == pytest.approx(0.07)
    assert m.difference.low > 0 if m.p_value < 0.05 else m.difference.low <= 0
    same = mcnemar(a, a)
    assert same.p_value == 1.0 and same.verdict().kind == "inconclusive"
    # nothing changed on 100 items: still not "equivalent within 1 point" (the unseen share can be ~3%)
    assert same.difference.high == pytest.approx(1 - 0.025 ** (1 / 100)) and same.verdict(margin=0.01).kind == "inconclusive"
    assert mcnemar([1] * 2000, [1] * 2000).verdict(margin=0.01).kind == "equivalent"


def test_mcnemar_interval_excludes_zero_exactly_when_the_test_rejects():
    rng = np.random.default_rng(8)
    for _ in range(60):
        a, b = rng.random(80) < 0.8, rng.random(80) < 0.7
        m = mcnemar(a, b)
        assert (m.difference.low > 0 or m.difference.high < 0) == (m.p_value < 0.05)


def test_holm_matches_the_step_down_rule():
    assert np.allclose(holm([0.01, 0.04, 0.03, 0.5]), [0.04, 0.09, 0.09, 0.5])
    assert np.allclose(holm([[0.2, 0.001]]), [[0.2, 0.002]])
    with pytest.raises(ValueError):
        holm([1.5])


def test_verdicts_never_call_an_interval_through_zero_no_effect():
    wide = Interval(0.01, -0.05, 0.07)
    assert verdict(wide).kind == "inconclusive" and "not evidence of no difference" in verdict(wide).text
    assert verdict(wide, margin=0.02).kind == "inconclusive"
    narrow = Interval(0.001, -0.004, 0.006)
    assert verdict(narrow, margin=0.02).kind == "equivalent"
    assert verdict(Interval(0.05, 0.02, 0.08), a="x", b="y").text.startswith("x higher than y")
    assert verdict(Interval(-0.05, -0.08, -0.02)).kind == "lower"
    assert verdict(wide, p_value=0.01).kind == "higher"  # an (adjusted) p-value decides when given
    with pytest.raises(ValueError, match="margin"):
        verdict(narrow, margin=0)


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
    items_only = bootstrap_ci(values.mean(0))
    assert both.estimate == pytest.approx(values.mean())
    assert (both.high - both.low) > 1.5 * (items_only.high - items_only.low)  # the seed spread counts
    spread = SeedSpread(tuple(values.mean(1)))
    assert spread.n == 5 and spread.sd == pytest.approx(np.std(values.mean(1), ddof=1))
    assert "over 5 seeds" in spread.format(".1f", percent=True)


def test_paired_difference_sees_what_unpaired_overlap_hides():
    rng = np.random.default_rng(4)
    base = rng.random(200) < 0.7
    better = base.copy()
    better[np.flatnonzero(~base)[:20]] = True  # 20 items fixed, none broken
    a, b = accuracy_ci(better), accuracy_ci(base)
    assert a.overlaps(b)  # unpaired intervals overlap ...
    diff = paired_difference_ci(better, base)
    assert diff.estimate == pytest.approx(0.1) and differs(diff)  # ... the paired difference excludes 0
    assert not differs(paired_difference_ci(base, base))
    with pytest.raises(ValueError, match="same items"):
        paired_difference_ci(base, base[:-1])


def test_paired_difference_is_at_least_as_wide_as_the_t_interval():
    from scipy import stats

    from helpers.common.stats import cautious_paired_difference_ci, paired_t_interval

    gen = torch.Generator().manual_seed(0)
    a, b = torch.randn(14, generator=gen), torch.randn(14, generator=gen)
    t = paired_t_interval(a, b)
    by_hand = stats.t.interval(0.95, 13, loc=float((a - b).mean()), scale=float((a - b).std()) / 14 ** 0.5)
    assert (t.low, t.high) == pytest.approx(by_hand)
    both = cautious_paired_difference_ci(a, b)
    assert both.low <= t.low and both.high >= t.high


def test_unpaired_difference_resamples_each_set_on_its_own():
    from helpers.common.stats import unpaired_difference_ci

    gen = torch.Generator().manual_seed(0)
    a, b = 1 + 0.1 * torch.randn(20, generator=gen), 0.1 * torch.randn(30, generator=gen)
    d = unpaired_difference_ci(a, b)
    assert d.estimate == pytest.approx(float(a.double().mean() - b.double().mean())) and d.low > 0.9
