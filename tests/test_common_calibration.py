"""helpers.common.calibration: the simulated designs draw what they say, and each rate is a share
of simulated data sets (the calibration assertions themselves are in test_common_stats_calibration)."""

import numpy as np
import pytest

from helpers.common import calibration as C


def test_paired_counts_draw_the_stated_shares():
    b, c = C.paired_counts(np.random.default_rng(0), 400, 0.05, 0.02, 4000)
    assert b.shape == c.shape == (4000,)
    assert b.mean() / 400 == pytest.approx(0.05, abs=0.002) and c.mean() / 400 == pytest.approx(0.02, abs=0.002)


def test_clustered_values_have_the_stated_layout():
    values, labels = C.clustered_values(np.random.default_rng(1), 12, 50, min_size=3, max_size=5)
    assert values.shape == (labels.size, 50) and set(np.unique(labels)) == set(range(12))
    sizes = np.bincount(labels)
    assert sizes.min() >= 3 and sizes.max() < 5
    # the sentence offset is shared: tokens of one sentence correlate, tokens of two do not
    same = np.corrcoef(values[labels == 0][0], values[labels == 0][1])[0, 1]
    assert same > 0.2


def test_rates_are_shares_and_the_known_failures_show():
    # Tango's interval holds the truth about 95 % of the time (three Monte Carlo SE at r = 500)
    assert abs(C.paired_coverage(100, 0.05, 0.02, r=500) - 0.95) <= 3 * C.mc_se(0.95, 500)
    assert C.conditional_false_equivalence(385, 0.01, r=1000) > 0.3  # the interval the course dropped
    assert C.paired_false_equivalence(385, 0.01, r=1000) < 0.1
    assert C.pair_coverage(30, r=200, by_sentence=False) < C.pair_coverage(30, r=200)
    assert C.mc_se(0.5, 100) == pytest.approx(0.05)
