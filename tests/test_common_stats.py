"""helpers.common.stats: intervals checked against independent computations and known distributions."""

import numpy as np
import pytest
import torch

from helpers.common.stats import Interval, accuracy_ci, bootstrap_ci, differs, paired_difference_ci, quartiles, seeds_interval


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


def test_all_right_uses_the_rule_of_three_not_a_zero_width_interval():
    iv = accuracy_ci([1] * 10)
    assert (iv.estimate, iv.high) == (1.0, 1.0) and iv.low == pytest.approx(0.7)
    assert accuracy_ci([0] * 100).high == pytest.approx(0.03)


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
