"""Spreads, intervals and verdicts: the course's one implementation of its statistics.

A number read off one token of one sentence says little; the lessons show each per-layer
statistic over many tokens or sentences with a spread, and every comparison ends in a verdict
computed here, by these rules. ``tests/test_common_stats_calibration.py`` checks each rule on
simulated data whose truth is known (coverage, type-I error, false "equivalent" at the margin).

* **A verdict is read off its own interval.** A difference whose interval excludes 0 is a
  difference ("higher" / "lower"); a claim of *no* effect needs an equivalence margin stated
  before the measurement (two one-sided tests, TOST: the ``1 - 2 alpha`` interval lies inside
  ``(-margin, +margin)``); anything else is **inconclusive** (:func:`verdict`, :class:`Verdict`).
  A p-value printed beside a verdict comes from the same test as its interval; where the p cannot
  go low enough (at its floor: too few units for the number of comparisons), the verdict is
  "inconclusive (too few units for N comparisons)", so the two never disagree.
* **Many comparisons** (every layer against the best, every head): Bonferroni. A family of ``m``
  comparisons reads each one off its ``1 - alpha / m`` interval (simultaneous: all ``m`` cover at
  once with probability >= ``1 - alpha``), and each equivalence off its ``1 - 2 alpha / m``
  interval (:func:`family_level`, :func:`equivalence_level`); the p-values printed are
  Bonferroni-adjusted (:func:`bonferroni`). Holm's step-down test (:func:`holm`) rejects a little
  more often but gives no interval to read the verdict from, so the course's verdicts do not use it.
* **Paired right/wrong outcomes** of two classifiers on the same items: Tango's score interval
  for the difference of two paired proportions (:func:`tango_interval`; Tango 1998, *Stat Med*
  17:891-908, built for exactly this equivalence question), with McNemar's asymptotic test, the
  score test at difference 0 and so the interval's own test (:func:`mcnemar`). Fagerland,
  Lydersen and Laake (2013, *BMC Med Res Methodol* 13:91; 2014, *Stat Med* 33:2850-2875) compared
  the methods for this design and recommend both. The interval is unconditional: it does not
  condition on the number of items that changed, which made the old conditional interval call
  "equivalent" far too often.
* **Resample the independent unit**: items that share something (a word's sentences, a
  sentence's tokens) are resampled as clusters (:func:`cluster_replicates`); pairs of sentences
  (random-pair baselines) by the *pigeonhole* (crossed) bootstrap, which resamples sentences and
  weighs each pair by how often both of its sentences were drawn (:func:`pair_replicates`; Owen
  2007, *Ann Appl Stat* 1:386-411); runs over seeds and test items resample both
  (:func:`seeds_items_ci`).
* **One small-sample rule** for every bootstrap (:class:`Replicates`): Hesterberg's (2015, *Am
  Stat* 69:371-386) expanded percentile interval -- the percentiles taken at
  ``Phi(-sqrt(n / (n - 1)) t_{n-1})`` instead of ``alpha / 2``, ``n`` the independent units
  resampled -- and never narrower than the Student-t interval from the bootstrap's standard error.
  It makes no difference from about 30 units on (:data:`SMALL_SAMPLE`); below that the plain
  percentile interval is too narrow, by several points of coverage with a dozen units.
* **A bootstrap p-value has a floor** of ``1 / n_boot``: at the floor it is printed as a bound,
  ``p <= 0.0005`` (:func:`format_p`), never as an estimate.
* **An accuracy** gets the exact Clopper-Pearson interval (:func:`accuracy_ci`), also when every
  item is right (the "rule of three", ``1 - 3/n``, is a one-sided bound: :func:`rule_of_three`).
* **Seeds**: the spread over seeds is reported as such (:class:`SeedSpread`: mean, SD and range
  over >= 5 seeds), never as a union of per-seed intervals.

Everything is seeded, so a lesson prints the same interval on every run.

Where the code lives (every name is re-exported here, so ``from helpers.common.stats import
verdict`` keeps working): :mod:`helpers.common.intervals` (:class:`Interval`, families, exact
intervals, :func:`format_p`), :mod:`helpers.common.bootstrap` (:class:`Replicates` and the
resampling of units), :mod:`helpers.common.verdicts` (:func:`verdict`, Tango and McNemar),
:mod:`helpers.common.ranking` (:func:`rank_layers`, :func:`step_verdicts`); this module keeps
:func:`intra_cluster_correlation` (lesson 06), the Monte Carlo p of one order against random
ones, the median's distribution-free interval and the spread over seeds.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from helpers.common.intervals import (ALPHA, SMALL_SAMPLE, Interval, _as_array, accuracy_ci, bonferroni,  # noqa: F401
                                      bootstrap_size, clopper_pearson, equivalence_level, extreme_family,
                                      family_level, format_p, holm, rule_of_three, sign_test_p)
from helpers.common.bootstrap import (Replicates, bootstrap_ci, bootstrap_p_value, cluster_bootstrap_ci,  # noqa: F401
                                      cluster_replicates, differs, pair_bootstrap_ci, pair_replicates,
                                      paired_difference_ci, paired_difference_replicates, paired_t_interval,
                                      seeds_interval, seeds_items_ci, seeds_items_replicates,
                                      two_way_standard_error, unit_weights, unpaired_difference_ci,
                                      unpaired_replicates)
from helpers.common.verdicts import (KINDS, McNemar, Verdict, mcnemar, mcnemar_p, paired_binary_interval,  # noqa: F401
                                     replicate_verdicts, tango_interval, verdict)
from helpers.common.ranking import LayerRanking, rank_layers, step_verdicts  # noqa: F401


def intra_cluster_correlation(values, clusters) -> float:
    """How alike two items of the same cluster are (two tokens of one sentence): the correlation of
    ``values`` over every pair of items that share a cluster, around the overall mean (the
    pairwise intraclass correlation). Near 0: items of a cluster are as different as any two;
    positive: they move together, and resampling items one by one is too sure of itself; negative:
    they pull apart (a cluster's items balance out), and resampling whole clusters gives a
    *narrower* interval."""
    x = _as_array(values).ravel()
    labels = np.asarray(clusters).ravel()
    if labels.size != x.size:
        raise ValueError(f"give one cluster label per value: {labels.size} labels for {x.size} values.")
    dev = x - x.mean()
    var = float((dev ** 2).mean())
    if var == 0:
        raise ValueError("the values do not vary: their correlation is undefined.")
    same, pairs = 0.0, 0
    for c in np.unique(labels):
        d = dev[labels == c]
        same += float(d.sum() ** 2 - (d ** 2).sum())
        pairs += d.size * (d.size - 1)
    if pairs == 0:
        raise ValueError("no cluster holds two values: there is no pair to correlate.")
    return same / pairs / var


# ----------------------------------------------------------------------------- one order against random orders
def rank_p_value(observed: float, random_values, *, greater: bool = True) -> float:
    """Monte Carlo p-value of ``observed`` against ``random_values`` drawn under the null (e.g. the
    mean accuracy over a pruning curve for each of ``R`` random orders): ``(1 + #{random at least as
    extreme}) / (R + 1)``, one-sided (Davison & Hinkley 1997, eq. 4.11). Valid for any ``R``; its floor
    is ``1 / (R + 1)``."""
    values = _as_array(random_values, "random_values").ravel()
    hits = (values >= observed).sum() if greater else (values <= observed).sum()
    return float((1 + hits) / (values.size + 1))


# ----------------------------------------------------------------------------- distribution-free
def median_interval(values, level: float = 0.95, bounds: tuple = (-np.inf, np.inf)) -> Interval:
    """The distribution-free interval of a median from order statistics: ``[x_(k), x_(n-k+1)]`` with
    the largest ``k`` whose binomial coverage is at least ``level`` (exact for any continuous
    distribution; conservative with ties). With too few values for any such ``k`` the interval is
    the whole range ``bounds`` -- e.g. ``(0, 1)`` for shares: three words cannot prove anything at
    97.5 %, however much they agree."""
    from scipy.stats import binom

    x = np.sort(_as_array(values, "values").ravel())
    n = x.size
    est = float(np.median(x))
    best = None
    for k in range(1, n // 2 + 1):  # P(x_(k) <= median <= x_(n-k+1)) = 1 - 2 P(Bin(n, 1/2) <= k - 1)
        if 1 - 2 * binom.cdf(k - 1, n, 0.5) >= level:
            best = k
    if best is None:
        return Interval(est, float(bounds[0]), float(bounds[1]), level)
    return Interval(est, float(x[best - 1]), float(x[n - best]), level)


# ----------------------------------------------------------------------------- seeds
@dataclass(frozen=True)
class SeedSpread:
    """One number measured once per seed: the mean, the standard deviation and the range over seeds,
    reported as a spread over seeds (not as an interval over test items)."""

    values: tuple

    def __post_init__(self):
        if len(self.values) < 2:
            raise ValueError("give one value per seed, at least two seeds.")

    @property
    def n(self) -> int:
        return len(self.values)

    @property
    def mean(self) -> float:
        return float(np.mean(self.values))

    @property
    def sd(self) -> float:
        return float(np.std(self.values, ddof=1))

    def format(self, fmt: str = ".3f", percent: bool = False) -> str:
        k = 100 if percent else 1
        unit = "%" if percent else ""
        return (f"{k * self.mean:{fmt}}{unit} (SD {k * self.sd:{fmt}}, range {k * min(self.values):{fmt}}-"
                f"{k * max(self.values):{fmt}} over {self.n} seeds)")

    def __str__(self) -> str:
        return self.format()


def quartiles(samples, axis: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(q25, median, q75)`` of ``samples`` along ``axis`` (e.g. ``[n_tokens, L + 1]`` -> per layer)."""
    array = _as_array(samples, "samples")
    q25, med, q75 = np.percentile(array, [25, 50, 75], axis=axis)
    return q25, med, q75
