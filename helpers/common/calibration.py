"""Simulated data whose truth is known, for checking the course's statistics (:mod:`helpers.common.stats`).

Each function draws ``r`` data sets from a design the lessons use, with a known true value, runs
the course's own interval or verdict on every one, and returns the share of data sets where it
did what it should (or should not):

* :func:`paired_coverage` / :func:`paired_false_equivalence` / :func:`paired_type_one` -- two
  classifiers' right/wrong outcomes on the same ``n`` items (Tango's interval, McNemar's test);
  :func:`conditional_false_equivalence` is a tempting wrong interval, which conditions on
  the number of items that changed;
* :func:`cluster_coverage` -- tokens in sentences (the cluster bootstrap), with or without the
  small-sample rule;
* :func:`pair_coverage` -- random pairs of sentences (the pigeonhole bootstrap, or pairs
  resampled one by one);
* :func:`family_false_difference` -- many layers compared with the best one, with or without the
  correction for many comparisons.

``tests/test_common_stats_calibration.py`` asserts each rate against its nominal value with a
stated Monte Carlo tolerance; the statistics lesson runs the same simulations live, smaller.
Everything is seeded and vectorised.
"""

from __future__ import annotations

import numpy as np

from helpers.common.stats import (cluster_replicates, extreme_family, family_level, mcnemar_p, pair_replicates,
                                  tango_interval)


def mc_se(rate: float, r: int) -> float:
    """The Monte Carlo standard error of a rate estimated from ``r`` simulated data sets."""
    return float((rate * (1 - rate) / r) ** 0.5)


def paired_counts(rng, n: int, p12: float, p21: float, r: int) -> tuple[np.ndarray, np.ndarray]:
    """``r`` paired tables on ``n`` items: ``b`` items only A gets right (probability ``p12`` each),
    ``c`` only B (``p21``)."""
    draws = rng.multinomial(n, [p12, p21, 1 - p12 - p21], size=r)
    return draws[:, 0], draws[:, 1]


def paired_coverage(n: int, p12: float, p21: float, r: int = 4000, level: float = 0.95, seed: int = 0) -> float:
    """How often Tango's interval holds the true accuracy difference ``p12 - p21``."""
    b, c = paired_counts(np.random.default_rng(seed), n, p12, p21, r)
    low, high = tango_interval(b, c, n, level)
    truth = p12 - p21
    return float(((low <= truth) & (truth <= high)).mean())


def paired_type_one(n: int, p: float, r: int = 4000, alpha: float = 0.05, seed: int = 0) -> float:
    """How often McNemar's test calls a difference when both classifiers are equally good (each item
    flips either way with probability ``p``)."""
    b, c = paired_counts(np.random.default_rng(seed), n, p, p, r)
    return float((mcnemar_p(b, c) < alpha).mean())


def paired_false_equivalence(n: int, margin: float, changed: float = 0.0, r: int = 4000, seed: int = 0) -> float:
    """How often the equivalence test (Tango's 90 % interval inside ``+/- margin``) says
    "equivalent" when the true difference **is** the margin: a share ``changed`` of items flip
    the other way too, and ``changed + margin`` flip towards A."""
    b, c = paired_counts(np.random.default_rng(seed), n, changed + margin, changed, r)
    low, high = tango_interval(b, c, n, 0.90)
    return float(((low > -margin) & (high < margin)).mean())


def conditional_false_equivalence(n: int, margin: float, changed: float = 0.0, r: int = 4000,
                                  seed: int = 0) -> float:
    """The same rate for a tempting wrong interval: the exact interval of the share
    ``b / (b + c)`` *given* the number of items that changed, mapped to ``(b - c) / n`` (and,
    when none changed, the rule-of-three bound). With few items changing it is far too narrow."""
    from scipy.stats import beta

    b, c = paired_counts(np.random.default_rng(seed), n, changed + margin, changed, r)
    m = b + c
    with np.errstate(divide="ignore", invalid="ignore"):
        lo_share = np.where(b > 0, beta.ppf(0.05, b, m - b + 1), 0.0)
        hi_share = np.where(b < m, beta.ppf(0.95, b + 1, m - b), 1.0)
    low, high = m * (2 * lo_share - 1) / n, m * (2 * hi_share - 1) / n
    unseen = 1 - 0.05 ** (1 / n)
    low, high = np.where(m == 0, -unseen, low), np.where(m == 0, unseen, high)
    return float(((low > -margin) & (high < margin)).mean())


def clustered_values(rng, units: int, r: int, *, skewed: bool = True, min_size: int = 3, max_size: int = 30):
    """``(values [n_items, r], labels [n_items])``: ``r`` data sets of tokens in ``units``
    sentences of ``min_size``-``max_size`` tokens, half the variance between sentences, true mean 0
    (skewed: a shifted gamma, mean 0, SD 1, skewness 1, like the lessons' cosines and shares)."""
    draw = (lambda shape: (rng.gamma(4.0, 1.0, size=shape) - 4.0) / 2.0) if skewed else \
        (lambda shape: rng.normal(size=shape))
    labels = np.repeat(np.arange(units), rng.integers(min_size, max_size, units))
    return draw((units, r))[labels] + draw((labels.size, r)), labels


def cluster_coverage(units: int, r: int = 2000, *, by_sentence: bool = True, small_sample_rule: bool = True,
                     seed: int = 0, level: float = 0.95) -> float:
    """How often the bootstrap interval of the mean holds the true mean (0) for tokens in ``units``
    sentences: resampling sentences (``by_sentence``) or tokens one by one; with the course's
    small-sample rule, or the plain percentile interval."""
    values, labels = clustered_values(np.random.default_rng(seed), units, r)
    reps = cluster_replicates(values, labels if by_sentence else None, n_boot=1000, seed=seed)
    if small_sample_rule:
        ivs = reps.intervals(level)
        return float(np.mean([iv.low <= 0 <= iv.high for iv in ivs]))
    low, high = np.quantile(reps.boots, [(1 - level) / 2, (1 + level) / 2], axis=0)
    return float(((low <= 0) & (0 <= high)).mean())


def pair_coverage(units: int, r: int = 2000, *, by_sentence: bool = True, n_pairs: int = 500, seed: int = 0,
                  level: float = 0.95) -> float:
    """How often the interval of a random-pair mean holds the truth (0) when each sentence has its
    own offset: resampling sentences with the pigeonhole bootstrap (``by_sentence``), or the pairs
    one by one."""
    rng = np.random.default_rng(seed)
    first = rng.integers(0, units, n_pairs)
    second = (first + rng.integers(1, units, n_pairs)) % units
    offset = (rng.gamma(4.0, 1.0, size=(units, r)) - 4.0) / 2.0
    values = offset[first] + offset[second] + rng.normal(size=(n_pairs, r))
    reps = (pair_replicates(values, first, second, n_boot=1000, seed=seed) if by_sentence else
            cluster_replicates(values, n_boot=1000, seed=seed))
    return float(np.mean([iv.low <= 0 <= iv.high for iv in reps.intervals(level)]))


def family_false_difference(k: int, units: int = 30, r: int = 200, *, corrected: bool = True, seed: int = 0) -> float:
    """How often, with ``k`` layers that are truly alike, the best-looking layer is declared
    different from at least one other: its paired difference read at ``family_level`` of every pair
    (``corrected``), or at 95 % each."""
    rng = np.random.default_rng(seed)
    labels = np.repeat(np.arange(units), rng.integers(3, 15, units))
    family = extreme_family(k) if corrected else 1
    wrong = 0
    for i in range(r):
        values = rng.normal(size=(units, 1))[labels] + rng.normal(size=(labels.size, k))
        reps = cluster_replicates(values, labels, n_boot=1000, seed=i)
        best = int(np.argmax(reps.estimate))
        diffs = reps.minus(best).intervals(family_level(family))
        wrong += any(not d.low <= 0 <= d.high for j, d in enumerate(diffs) if j != best)
    return wrong / r
