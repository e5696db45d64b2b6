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
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

ALPHA = 0.05
SMALL_SAMPLE = 30  # below this many independent units the t floor of an interval usually bites


def _as_array(values, name: str = "values") -> np.ndarray:
    if isinstance(values, torch.Tensor):
        values = values.detach().cpu().double().numpy()
    array = np.asarray(values, dtype=float)
    if array.size == 0:
        raise ValueError(f"{name} is empty: a spread needs at least one value.")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} holds NaN or infinite values.")
    return array


def _check_level(level) -> float:
    if isinstance(level, bool) or not isinstance(level, (int, float)) or not 0 < level < 1:
        raise ValueError(f"level must lie strictly between 0 and 1, got {level!r}.")
    return float(level)


def _check_family(family) -> int:
    if isinstance(family, bool) or not isinstance(family, (int, np.integer)) or family < 1:
        raise ValueError(f"family must be a positive int (how many comparisons are made together), got {family!r}.")
    return int(family)


@dataclass(frozen=True)
class Interval:
    """An estimate with a ``level`` confidence interval ``[low, high]``.

    Two intervals that overlap do not show that two estimates are alike, and two that do not
    overlap are a poor test too: compare the *difference* (:func:`paired_difference_ci`,
    :func:`mcnemar`), never the overlap."""

    estimate: float
    low: float
    high: float
    level: float = 0.95

    def contains(self, value: float) -> bool:
        return self.low <= value <= self.high

    @property
    def width(self) -> float:
        return self.high - self.low

    def format(self, fmt: str = ".3f") -> str:
        return f"{self.estimate:{fmt}} [{self.low:{fmt}}, {self.high:{fmt}}]"

    def percent(self, digits: int = 1) -> str:
        """``81.2% [74.3, 87.5]``."""
        return f"{100 * self.estimate:.{digits}f}% [{100 * self.low:.{digits}f}, {100 * self.high:.{digits}f}]"

    def __str__(self) -> str:
        return self.format()


# ----------------------------------------------------------------------------- families
def family_level(family: int = 1, alpha: float = ALPHA) -> float:
    """The confidence level at which each of ``family`` comparisons is read (Bonferroni):
    ``1 - alpha / family``; 0.95 for one comparison."""
    return 1 - alpha / _check_family(family)


def equivalence_level(family: int = 1, alpha: float = ALPHA) -> float:
    """The level of the interval an equivalence test (TOST at ``alpha``) reads, for each of
    ``family`` tests made together (Bonferroni): ``1 - 2 alpha / family``; 0.90 for one."""
    return 1 - 2 * alpha / _check_family(family)


def bonferroni(p_values) -> np.ndarray:
    """Bonferroni-adjusted p-values, ``min(1, m p)`` over the ``m`` p-values (any shape): an
    adjusted p below alpha exactly when the comparison's ``1 - alpha / m`` interval excludes 0."""
    p = _as_array(p_values, "p_values")
    if ((p < 0) | (p > 1)).any():
        raise ValueError("p-values must lie in [0, 1].")
    return np.minimum(1.0, p * p.size)


def extreme_family(k: int) -> int:
    """The Bonferroni family when one of ``k`` things is picked by the data (the best layer, the
    worst head) and the others are compared with it: every pair, ``k (k - 1) / 2``, so the claims
    hold whichever turns out extreme (at least 1)."""
    return max(1, int(k) * (int(k) - 1) // 2)


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


def bootstrap_size(family: int = 1, alpha: float = ALPHA, minimum: int = 2000) -> int:
    """Bootstrap replicates enough to put about 20 beyond each end of a family's interval
    (``alpha / (2 family)`` in each tail): 2,000 for one comparison, 8,800 for 11."""
    return max(int(minimum), int(math.ceil(20 / (alpha / (2 * _check_family(family))))))


def format_p(p: float, floor: float | None = None, digits: int = 2) -> str:
    """``p = 0.031``, or ``p <= 0.0005`` when ``p`` sits at the smallest value its method can give
    (a bootstrap's ``1 / n_boot``, times the adjustment): there it is a bound, not an estimate."""
    if floor is not None and p <= floor * (1 + 1e-9):
        return f"p <= {floor:.{digits}g}"
    return f"p = {p:.{digits}g}"


def holm(p_values) -> np.ndarray:
    """Holm's step-down adjustment of ``p_values`` (any shape): the family-wise error rate of all
    the comparisons together stays at alpha. Returns adjusted p-values, same shape. (A test only:
    it has no matching intervals, so the course's verdicts use :func:`bonferroni`.)"""
    p = _as_array(p_values, "p_values")
    flat = p.ravel()
    if ((flat < 0) | (flat > 1)).any():
        raise ValueError("p-values must lie in [0, 1].")
    order = np.argsort(flat)
    m = flat.size
    adjusted = np.empty(m)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * flat[i]))
        adjusted[i] = running
    return adjusted.reshape(p.shape)


# ----------------------------------------------------------------------------- bootstrap
def unit_weights(n_units: int, n_boot: int, seed: int = 0) -> np.ndarray:
    """``[n_boot, n_units]`` multinomial counts: how often each unit is drawn in each bootstrap
    resample (each row sums to ``n_units``). The same weights can drive several statistics of the
    same units, so their comparison is paired."""
    if isinstance(n_boot, bool) or not isinstance(n_boot, (int, np.integer)) or n_boot < 100:
        raise ValueError(f"n_boot must be an int >= 100, got {n_boot!r}.")
    if n_units < 2:
        raise ValueError("a bootstrap needs at least two independent units.")
    rng = np.random.default_rng(seed)
    n_boot = int(n_boot)
    draws = rng.integers(0, n_units, size=(n_boot, n_units)) + n_units * np.arange(n_boot)[:, None]
    return np.bincount(draws.ravel(), minlength=n_boot * n_units).reshape(n_boot, n_units).astype(float)


def _student_t(level: float, df: float) -> float:
    from scipy.stats import t as student_t

    return float(student_t.ppf(0.5 + level / 2, df))


@dataclass(frozen=True)
class Replicates:
    """Bootstrap replicates of ``k`` statistics (``boots [n_boot, k]``) beside their ``estimate``
    ``[k]``, from resampling ``n_units`` independent units (named ``unit``).

    Every interval and p-value read from here follows the course's small-sample rule: the expanded
    percentile interval (Hesterberg 2015), widened where needed to the Student-t interval from the
    bootstrap standard error (``n_units - 1`` degrees of freedom, the SE scaled by
    ``sqrt(n / (n - 1))``); the p-value is the larger of the two tests' p-values, so it is below
    ``1 - level`` exactly when the interval at ``level`` excludes 0."""

    estimate: np.ndarray
    boots: np.ndarray
    n_units: int
    unit: str = "items"
    df: float | None = None  # the t rule's degrees of freedom (default n_units - 1; a two-way design: Satterthwaite's)
    t_se: np.ndarray | None = None  # the standard error the t floor uses (default: the bootstrap's, corrected)
    bounds: tuple | None = None  # the statistic's possible range (a share: (0, 1)): intervals are clipped to it

    def __post_init__(self):
        est = np.atleast_1d(np.asarray(self.estimate, dtype=float))
        boots = np.asarray(self.boots, dtype=float)
        boots = boots[:, None] if boots.ndim == 1 else boots
        if boots.ndim != 2 or boots.shape[1] != est.size:
            raise ValueError(f"boots must be [n_boot, {est.size}], got shape {boots.shape}.")
        object.__setattr__(self, "estimate", est)
        object.__setattr__(self, "boots", boots)

    @property
    def k(self) -> int:
        return self.estimate.size

    @property
    def n_boot(self) -> int:
        return self.boots.shape[0]

    @property
    def _df(self) -> float:
        return float(self.n_units - 1 if self.df is None else self.df)

    @property
    def _widen(self) -> float:
        """``sqrt(n / (n - 1))`` with ``n = df + 1``: the bootstrap's shrinkage of the spread, undone."""
        return math.sqrt((self._df + 1) / self._df)

    def _scale(self) -> np.ndarray:
        return self.se() * self._widen if self.t_se is None else np.asarray(self.t_se, dtype=float)

    @property
    def p_floor(self) -> float:
        """The smallest p-value the replicates can give (every replicate on one side of 0)."""
        from scipy.stats import norm
        from scipy.stats import t as student_t

        if self.t_se is not None:
            return 2 / self.n_boot
        return float(2 * student_t.sf(-norm.ppf(1 / self.n_boot) / self._widen, self._df))

    def column(self, j) -> "Replicates":
        j = np.atleast_1d(j)
        t_se = None if self.t_se is None else np.asarray(self.t_se)[j]
        return Replicates(self.estimate[j], self.boots[:, j], self.n_units, self.unit, self.df, t_se, self.bounds)

    def minus(self, other) -> "Replicates":
        """Column-wise difference: ``other`` is a column index (every column minus that one, the
        same replicates, so the difference is paired) or Replicates drawn with the same weights."""
        if isinstance(other, Replicates):
            if other.boots.shape[0] != self.n_boot:
                raise ValueError("subtract replicates drawn with the same weights (same n_boot).")
            df = None if self.df is None and other.df is None else min(self._df, other._df)
            return Replicates(self.estimate - other.estimate, self.boots - other.boots,
                              min(self.n_units, other.n_units), self.unit, df)
        j = int(other)
        return Replicates(self.estimate - self.estimate[j], self.boots - self.boots[:, [j]], self.n_units, self.unit,
                          self.df)

    def steps(self) -> "Replicates":
        """Each column minus the one before it (``k - 1`` columns)."""
        return Replicates(np.diff(self.estimate), np.diff(self.boots, axis=1), self.n_units, self.unit, self.df)

    def se(self) -> np.ndarray:
        return self.boots.std(axis=0, ddof=1)

    def _t_half(self, level: float) -> np.ndarray:
        return _student_t(level, self._df) * self._scale()

    def _expanded_tail(self, level: float) -> float:
        """Hesterberg's (2015) expanded percentile: the tail share the percentile interval uses so
        that, for a mean, it is about as wide as the t interval -- ``Phi(-sqrt(n / (n - 1)) t)``,
        smaller than ``(1 - level) / 2`` for few units, the same for many."""
        from scipy.stats import norm

        if self.t_se is not None:  # a design with its own standard error: the t floor carries the small sample
            return (1 - level) / 2
        return float(norm.cdf(-self._widen * _student_t(level, self._df)))

    def intervals(self, level: float = 0.95) -> list:
        """One :class:`Interval` per column at ``level``: the expanded percentile interval, never
        narrower than the t interval from the bootstrap standard error."""
        level = _check_level(level)
        tail = self._expanded_tail(level)
        low, high = np.quantile(self.boots, [tail, 1 - tail], axis=0)
        half = self._t_half(level)
        low, high = np.minimum(low, self.estimate - half), np.maximum(high, self.estimate + half)
        if self.bounds is not None:
            low, high = np.clip(low, *self.bounds), np.clip(high, *self.bounds)
        return [Interval(float(e), float(lo), float(hi), level) for e, lo, hi in zip(self.estimate, low, high)]

    def interval(self, level: float = 0.95) -> Interval:
        if self.k != 1:
            raise ValueError(f"these replicates hold {self.k} statistics: use intervals().")
        return self.intervals(level)[0]

    def p_values(self) -> np.ndarray:
        """Two-sided p-value of "the statistic is 0", one per column, from the same expanded
        percentile and t rule as :meth:`intervals` (its floor: :attr:`p_floor`)."""
        from scipy.stats import norm
        from scipy.stats import t as student_t

        below = (self.boots < 0).mean(axis=0) + 0.5 * (self.boots == 0).mean(axis=0)
        tail = np.clip(np.minimum(below, 1 - below), 1 / self.n_boot, 0.5)
        if self.t_se is not None:  # plain percentiles (see _expanded_tail)
            p_boot = np.clip(2 * tail, 0.0, 1.0)
        else:  # the level whose expanded tail puts 0 on the interval's edge
            p_boot = np.clip(2 * student_t.sf(-norm.ppf(tail) / self._widen, self._df), 0.0, 1.0)
        scale = self._scale()
        with np.errstate(divide="ignore", invalid="ignore"):
            t = np.abs(self.estimate) / scale
        t = np.where(scale > 0, t, np.where(self.estimate != 0, np.inf, 0.0))
        p_t = 2 * student_t.sf(t, self._df)
        return np.maximum(p_boot, p_t)


def _weighted_columns(values: np.ndarray, weights: np.ndarray, statistic: str) -> np.ndarray:
    """``[n_boot, k]``: the weighted mean or median of each column of ``values [n, k]`` under each
    row of ``weights [n_boot, n]``."""
    if statistic == "mean":
        total = weights.sum(axis=1, keepdims=True)
        return (weights @ values) / total
    if statistic == "median":
        out = np.empty((weights.shape[0], values.shape[1]))
        for j in range(values.shape[1]):
            order = np.argsort(values[:, j], kind="mergesort")
            cum = np.cumsum(weights[:, order], axis=1)
            half = cum[:, -1:] / 2
            lower = (cum < half).sum(axis=1)  # first position whose cumulative weight reaches half
            upper = (cum <= half).sum(axis=1)  # an exact half: average with the next one (numpy's median)
            sorted_v = values[order, j]
            out[:, j] = (sorted_v[np.minimum(lower, len(order) - 1)] + sorted_v[np.minimum(upper, len(order) - 1)]) / 2
        return out
    raise ValueError(f"statistic must be 'mean' or 'median', got {statistic!r}.")


def _statistic_name(statistic) -> str:
    if statistic in ("mean", np.mean):
        return "mean"
    if statistic in ("median", np.median):
        return "median"
    raise ValueError(f"statistic must be np.mean or np.median (or 'mean' / 'median'), got {statistic!r}.")


def _as_columns(values, name: str = "values") -> tuple[np.ndarray, bool]:
    array = _as_array(values, name)
    if array.ndim == 1:
        return array[:, None], True
    if array.ndim == 2:
        return array, False
    raise ValueError(f"{name} must be 1-D or 2-D, got shape {array.shape}.")


def _unit_index(labels, n: int, name: str = "clusters") -> tuple[np.ndarray, np.ndarray]:
    labels = np.asarray(labels)
    if labels.shape != (n,):
        raise ValueError(f"{name} must name one unit per item: {n} labels, got shape {labels.shape}.")
    units, index = np.unique(labels, return_inverse=True)
    if units.size < 2:
        raise ValueError(f"a bootstrap over {name} needs at least two different units.")
    return units, index


def cluster_replicates(values, clusters=None, *, statistic=np.mean, n_boot: int = 2000, seed: int = 0,
                       unit: str | None = None, unit_labels=None, weights=None) -> Replicates:
    """Bootstrap replicates of the mean (or median) of each column of ``values`` (``[n]`` or
    ``[n, k]``), resampling whole **clusters** (``clusters[i]`` names item i's unit: its sentence,
    word or pair), or the items themselves when ``clusters`` is None. A replicate weighs every item
    by how often its cluster was drawn, so items that share a unit are never treated as
    independent. ``weights [n_boot, n_units]`` (:func:`unit_weights`, over ``unit_labels``, the
    sorted unit names) reuses another statistic's draws, so the two are paired."""
    array, _ = _as_columns(values)
    n = array.shape[0]
    if clusters is None:
        clusters = np.arange(n)
        unit = unit or "items"
    units, index = _unit_index(clusters, n)
    if weights is None:
        weights = unit_weights(units.size, n_boot, seed)
        n_units = units.size
    else:
        weights = np.asarray(weights, dtype=float)
        labels = None if unit_labels is None else np.asarray(unit_labels)
        if labels is None or labels.shape != (weights.shape[1],) or not np.isin(units, labels).all():
            raise ValueError("with weights, give unit_labels: the sorted unit names that the weights' columns "
                             "stand for; every cluster of these values must be among them.")
        index = np.searchsorted(labels, units)[index]
        n_units = labels.size
    name = _statistic_name(statistic)
    if name == "mean":  # a cluster's items enter a weighted mean only through their sum and count
        sums = np.zeros((weights.shape[1], array.shape[1]))
        np.add.at(sums, index, array)
        counts = np.bincount(index, minlength=weights.shape[1]).astype(float)
        boots = (weights @ sums) / (weights @ counts)[:, None]
        estimate = array.mean(axis=0)
    else:
        boots = _weighted_columns(array, weights[:, index], name)
        estimate = _weighted_columns(array, np.ones((1, n)), name)[0]
    return Replicates(estimate, boots, int(n_units), unit or "clusters")


def pair_replicates(values, first, second, *, n_boot: int = 2000, seed: int = 0, unit: str = "sentences",
                    unit_labels=None, weights=None) -> Replicates:
    """Bootstrap replicates of the mean of each column of ``values [n_pairs]`` or ``[n_pairs, k]``
    measured on **pairs** of units (e.g. random-pair cosines between tokens of sentences
    ``first[i]`` and ``second[i]``): the pigeonhole bootstrap (Owen 2007) resamples the units once
    and weighs each pair by the product of its two units' counts, so all the pairs that share a
    sentence move together. ``weights``/``unit_labels`` as in :func:`cluster_replicates` (e.g. the
    same sentence draws as the tokens these pairs are a baseline for)."""
    array, _ = _as_columns(values)
    n = array.shape[0]
    first, second = np.asarray(first), np.asarray(second)
    if first.shape != (n,) or second.shape != (n,):
        raise ValueError(f"first and second must name the two units of each of the {n} pairs.")
    units = np.unique(np.concatenate([first, second])) if unit_labels is None else np.asarray(unit_labels)
    if not (np.isin(first, units).all() and np.isin(second, units).all()):
        raise ValueError("every unit of a pair must be among unit_labels.")
    if units.size < 2:
        raise ValueError("a pair bootstrap needs at least two units.")
    fi, si = np.searchsorted(units, first), np.searchsorted(units, second)
    weights = unit_weights(units.size, n_boot, seed) if weights is None else np.asarray(weights, dtype=float)
    pair_w = weights[:, fi] * weights[:, si]
    total = pair_w.sum(axis=1, keepdims=True)
    estimate = array.mean(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        boots = (pair_w @ array) / total
    # a resample that drew no complete pair (rare: two units, say) says nothing: it keeps the estimate
    boots = np.where(total > 0, boots, estimate)
    return Replicates(estimate, boots, int(units.size), unit)


def bootstrap_ci(values, statistic=np.mean, *, n_boot: int = 2000, level: float = 0.95, seed: int = 0,
                 axis: int = 0):
    """Bootstrap interval of ``statistic`` (mean or median) over the items along ``axis``, under the
    course's small-sample rule (:class:`Replicates`). ``values`` may be ``[n]`` (one interval) or
    ``[n, k]`` (one per column, e.g. per layer, resampling the same items for every column).
    Returns an :class:`Interval`, or a list of them for 2-D input."""
    _check_level(level)
    array = np.moveaxis(_as_array(values), axis, 0)
    if array.ndim > 2:
        raise ValueError(f"values must be 1-D or 2-D, got shape {array.shape}.")
    reps = cluster_replicates(array, statistic=statistic, n_boot=n_boot, seed=seed)
    out = reps.intervals(level)
    return out[0] if array.ndim == 1 else out


def cluster_bootstrap_ci(values, clusters, *, n_boot: int = 2000, level: float = 0.95, seed: int = 0,
                         return_boots: bool = False):
    """Mean of ``values`` (``[n]`` or ``[n, k]``) with the cluster bootstrap of
    :func:`cluster_replicates` (small-sample rule included). Returns an :class:`Interval` (or one
    per column), and the replicates' array too with ``return_boots``."""
    array, squeeze = _as_columns(values)
    reps = cluster_replicates(array, clusters, n_boot=n_boot, seed=seed)
    out = reps.intervals(level)
    out = out[0] if squeeze else out
    boots = reps.boots[:, 0] if squeeze else reps.boots
    return (out, boots) if return_boots else out


def pair_bootstrap_ci(values, first, second, *, n_boot: int = 2000, level: float = 0.95, seed: int = 0):
    """Mean of ``values`` over pairs of units with the pigeonhole bootstrap of
    :func:`pair_replicates`: an :class:`Interval` (or one per column)."""
    array, squeeze = _as_columns(values)
    out = pair_replicates(array, first, second, n_boot=n_boot, seed=seed).intervals(level)
    return out[0] if squeeze else out


def two_way_standard_error(values) -> tuple[float, float]:
    """``(standard error of the grand mean, Satterthwaite's degrees of freedom)`` of ``values[seed,
    item]`` under the two-way random-effects model (seed, item and their interaction all vary):
    ``Var = (MS_seed + MS_item - MS_resid) / (S N)`` from the ANOVA mean squares, and the df of
    that combination (Satterthwaite 1946). With few seeds but many items whose spread dominates,
    the df is large; when the seeds dominate, it approaches ``S - 1``."""
    x = _as_array(values)
    s, n = x.shape
    grand = x.mean()
    rows, cols = x.mean(axis=1), x.mean(axis=0)
    ms_s = n * ((rows - grand) ** 2).sum() / (s - 1)
    ms_i = s * ((cols - grand) ** 2).sum() / (n - 1)
    resid = x - rows[:, None] - cols[None, :] + grand
    ms_e = (resid ** 2).sum() / ((s - 1) * (n - 1))
    combo = max(ms_s + ms_i - ms_e, max(ms_s, ms_i) / max(s, n), 1e-300)  # never below one part's share
    df = combo ** 2 / (ms_s ** 2 / (s - 1) + ms_i ** 2 / (n - 1) + ms_e ** 2 / ((s - 1) * (n - 1)) + 1e-300)
    return math.sqrt(combo / (s * n)), float(max(1.0, min(df, s * n - 1)))


def seeds_items_replicates(values, *, n_boot: int = 2000, seed: int = 0) -> Replicates:
    """Replicates of the mean of ``values[seed, item]`` (0/1 outcomes, or the paired difference of
    two strategies run with the same seeds on the same test items) from a two-way bootstrap: seeds
    and items are both resampled, because a new run would draw new seeds and a new test set. The
    small-sample rule's t floor uses the two-way ANOVA standard error with Satterthwaite's degrees
    of freedom (:func:`two_way_standard_error`): a handful of seeds weighs as much as the seeds'
    spread deserves, no more. Shares stay within their possible range."""
    array = _as_array(values)
    if array.ndim != 2 or array.shape[0] < 2 or array.shape[1] < 2:
        raise ValueError(f"values must be [n_seeds >= 2, n_items >= 2], got shape {array.shape}.")
    s, n = array.shape
    ws, wi = unit_weights(s, n_boot, seed), unit_weights(n, n_boot, seed + 1)
    boots = ((ws @ array) * wi).sum(axis=1) / (s * n)
    se, df = two_way_standard_error(array)
    bounds = (0.0, 1.0) if np.isin(array, (0.0, 1.0)).all() else (-1.0, 1.0) if np.isin(array, (-1.0, 0.0, 1.0)).all() \
        else None
    return Replicates(np.array([array.mean()]), boots[:, None], min(s, n), "seeds and items", df, np.array([se]), bounds)


def seeds_items_ci(values, *, n_boot: int = 2000, level: float = 0.95, seed: int = 0, return_boots: bool = False):
    """:func:`seeds_items_replicates` as one :class:`Interval` (and the replicates with
    ``return_boots``)."""
    reps = seeds_items_replicates(values, n_boot=n_boot, seed=seed)
    out = reps.interval(level)
    return (out, reps.boots[:, 0]) if return_boots else out


def bootstrap_p_value(boots) -> float:
    """Two-sided bootstrap p-value of "the difference is 0" from replicates of a difference: twice
    the smaller share on either side of 0 (a replicate at exactly 0 counts half to each), at least
    ``1 / n_boot`` (:func:`format_p` prints that floor as a bound)."""
    boots = _as_array(boots, "boots").ravel()
    below = float((boots < 0).mean() + 0.5 * (boots == 0).mean())
    return float(min(1.0, max(2 * min(below, 1 - below), 1 / boots.size)))


def _binary(values, name: str) -> np.ndarray:
    array = _as_array(values.float() if isinstance(values, torch.Tensor) else np.asarray(values, dtype=float), name)
    if array.ndim != 1 or not np.isin(array, (0.0, 1.0)).all():
        raise ValueError(f"{name} must be a 1-D vector of 0/1 (or True/False) outcomes, one per test item.")
    return array


def sign_test_p(above: int, n: int) -> float:
    """Two-sided exact sign test: the chance, if each of ``n`` units fell on either side with
    probability 1/2, of a split at least as lopsided as ``above`` of ``n``."""
    if n < 1 or not 0 <= above <= n:
        raise ValueError(f"need 0 <= above <= n and n >= 1, got above={above}, n={n}.")
    k = min(above, n - above)
    return min(1.0, 2 * sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n)


def clopper_pearson(k: int, n: int, level: float = 0.95) -> Interval:
    """Exact (Clopper-Pearson) interval of a proportion ``k / n``: never zero-width, also at 0 or n."""
    from scipy.stats import beta

    if isinstance(n, bool) or int(n) != n or n < 1 or not 0 <= k <= n:
        raise ValueError(f"need 0 <= k <= n and n >= 1, got k={k!r}, n={n!r}.")
    alpha = 1 - level
    low = 0.0 if k == 0 else float(beta.ppf(alpha / 2, k, n - k + 1))
    high = 1.0 if k == n else float(beta.ppf(1 - alpha / 2, k + 1, n - k))
    return Interval(k / n, low, high, level)


def accuracy_ci(correct, level: float = 0.95, **_ignored) -> Interval:
    """Accuracy of a 0/1 (or bool) vector of per-item outcomes with its exact Clopper-Pearson
    interval over the test items (a binomial count of independent items; exact also when every item
    is right: 10/10 gives ``[69.2%, 100%]``)."""
    array = _binary(correct, "correct")
    return clopper_pearson(int(array.sum()), array.size, level)


def rule_of_three(n: int) -> float:
    """The one-sided 95% upper bound ``3 / n`` on an error rate never observed in ``n`` items (so the
    accuracy is at least ``1 - 3/n`` with 95% confidence, one-sided); :func:`accuracy_ci` gives the
    two-sided exact interval."""
    if isinstance(n, bool) or int(n) != n or n < 1:
        raise ValueError(f"n must be a positive int, got {n!r}.")
    return min(1.0, 3 / n)


def paired_difference_replicates(a, b, *, n_boot: int = 2000, seed: int = 0, clusters=None) -> Replicates:
    """Replicates of ``mean(a - b)`` over the same items (or their ``clusters``), resampled once for
    both sides: the paired comparison of two numbers measured on the same items."""
    a, b = _as_array(a, "a"), _as_array(b, "b")
    if a.shape != b.shape or a.ndim not in (1, 2):
        raise ValueError(f"a and b must be measured on the same items; got shapes {a.shape} and {b.shape}.")
    return cluster_replicates(a - b, clusters, n_boot=n_boot, seed=seed)


def paired_difference_ci(a, b, *, n_boot: int = 2000, level: float = 0.95, seed: int = 0, clusters=None) -> Interval:
    """Mean of ``a - b`` over the same items with a bootstrap interval that resamples the items (or
    ``clusters``) once for both sides, under the small-sample rule: the right interval for two
    numbers measured on the same items. The two differ when it excludes 0 (:func:`differs`)."""
    a_arr = _as_array(a, "a")
    if a_arr.ndim != 1:
        raise ValueError(f"a and b must be 1-D, one value per item; got shape {a_arr.shape}.")
    return paired_difference_replicates(a, b, n_boot=n_boot, seed=seed, clusters=clusters).interval(level)


def paired_t_interval(a, b, level: float = 0.95) -> Interval:
    """Mean of ``a - b`` over the same items with a Student-t interval (``n - 1`` degrees of
    freedom): the floor the small-sample rule puts under every bootstrap interval."""
    d = _as_array(a, "a") - _as_array(b, "b")
    if d.ndim != 1 or d.size < 2:
        raise ValueError(f"a and b must be 1-D, on the same >= 2 items; got {d.shape}.")
    n, mean = d.size, float(d.mean())
    half = _student_t(level, n - 1) * float(d.std(ddof=1)) / n ** 0.5
    return Interval(mean, mean - half, mean + half, level)


def unpaired_replicates(a, b, *, n_boot: int = 2000, seed: int = 0) -> Replicates:
    """Replicates of ``mean(a) - mean(b)`` for two *different* sets of items, each resampled on its
    own; the small-sample rule counts the smaller set."""
    a, b = _as_array(a, "a"), _as_array(b, "b")
    if a.ndim != 1 or b.ndim != 1 or a.size < 2 or b.size < 2:
        raise ValueError(f"a and b must be 1-D with >= 2 items each; got {a.shape} and {b.shape}.")
    wa, wb = unit_weights(a.size, n_boot, seed), unit_weights(b.size, n_boot, seed + 1)
    boots = wa @ a / a.size - wb @ b / b.size
    return Replicates(np.array([a.mean() - b.mean()]), boots[:, None], min(a.size, b.size), "items")


def unpaired_difference_ci(a, b, n_boot: int = 2000, seed: int = 0, level: float = 0.95) -> Interval:
    """``mean(a) - mean(b)`` for two *different* sets of items (:func:`unpaired_replicates`)."""
    return unpaired_replicates(a, b, n_boot=n_boot, seed=seed).interval(level)


def differs(interval: Interval) -> bool:
    """True when a difference's interval excludes 0 (see :func:`paired_difference_ci`)."""
    return interval.low > 0 or interval.high < 0


def seeds_interval(values) -> Interval:
    """Mean over runs with different seeds and the range ``[min, max]`` of those runs (with a
    handful of seeds, the range is more honest than a normal-theory interval); ``level`` is 1.0
    to mark it as a range, not a confidence interval."""
    array = _as_array(values, "values")
    if array.ndim != 1 or array.size < 2:
        raise ValueError("give one value per seed, at least two seeds.")
    return Interval(float(array.mean()), float(array.min()), float(array.max()), 1.0)


# ----------------------------------------------------------------------------- verdicts
KINDS = ("higher", "lower", "equivalent", "inconclusive")


@dataclass(frozen=True)
class Verdict:
    """The outcome of comparing A with B on a difference ``A - B``.

    ``kind`` is ``"higher"`` (A above B), ``"lower"``, ``"equivalent"`` (inside a margin stated
    before the measurement, by TOST) or ``"inconclusive"``; ``text`` says it in words with the
    numbers behind it. ``difference`` is the interval the verdict was read from (at ``level``,
    Bonferroni over ``family`` comparisons), ``equivalence_interval`` the one TOST read."""

    kind: str
    text: str
    difference: Interval
    p_value: float | None = None
    margin: float | None = None
    family: int = 1
    a: str = "A"
    b: str = "B"
    percent: bool = False
    equivalence_interval: Interval | None = None
    p_floor: float | None = None  # the smallest p its method can give (printed as a bound there)

    @property
    def p_text(self) -> str:
        """The p as printed everywhere: ``p = 0.031``, or ``p <= 0.0013`` at its floor (:func:`format_p`)."""
        return "" if self.p_value is None else format_p(self.p_value, self.p_floor)

    @property
    def differs(self) -> bool:
        return self.kind in ("higher", "lower")

    @property
    def level(self) -> float:
        return self.difference.level

    def __str__(self) -> str:
        return self.text


def _fmt(value: float, percent: bool) -> str:
    return f"{100 * value:+.1f} pt" if percent else f"{value:+.3g}"


def _span(iv: Interval, percent: bool) -> str:
    return f"{_fmt(iv.estimate, percent)} [{_fmt(iv.low, percent)}, {_fmt(iv.high, percent)}]"


def _level_words(level: float, family: int) -> str:
    pct = f"{100 * level:.4g} %"
    return f"{pct} interval" if family == 1 else f"{pct} interval, Bonferroni over {family} comparisons"


def _check_interval_level(iv: Interval, want: float, what: str) -> None:
    if not isinstance(iv, Interval):
        raise TypeError(f"{what} must be an Interval, got {type(iv).__name__}.")
    if abs(iv.level - want) > 1e-6:
        raise ValueError(f"{what} is a {100 * iv.level:.4g} % interval, but this verdict reads the "
                         f"{100 * want:.4g} % one (alpha and the number of comparisons fix the level: "
                         "family_level / equivalence_level in helpers/common/stats.py).")


def verdict(difference: Interval, *, a: str = "A", b: str = "B", margin: float | None = None,
            equivalence_interval: Interval | None = None, p_value: float | None = None,
            p_floor: float | None = None, family: int = 1, alpha: float = ALPHA, percent: bool = False) -> Verdict:
    """Turn the interval of ``A - B`` into a :class:`Verdict` by the course's rules.

    * ``difference`` is the ``family_level(family, alpha)`` interval (95 % for one comparison;
      Bonferroni-widened for a family): A and B differ exactly when it excludes 0;
    * not different, and a ``margin`` stated: "equivalent" when ``equivalence_interval`` -- the
      ``equivalence_level(family, alpha)`` interval (90 % for one TOST), required: there is no
      fall-back to the 95 % one -- lies inside ``(-margin, +margin)`` and is not zero-width;
      otherwise "inconclusive";
    * no margin: "inconclusive" -- never "no effect".

    ``p_value`` (optional, from the same test as the interval and adjusted for the family) is
    printed beside it; at ``p_floor`` it prints as a bound. A difference needs both: an interval
    that excludes 0 beside a p that is not below ``alpha`` -- which happens only at the p's floor,
    too few units for the family -- is "inconclusive (too few units for N comparisons)", so a
    printed verdict never contradicts its own p.
    """
    family = _check_family(family)
    _check_interval_level(difference, family_level(family, alpha), "difference")
    d = difference
    words = _level_words(d.level, family)
    p_text = "" if p_value is None else ("; " + ("Bonferroni-adjusted " if family > 1 else "")
                                         + format_p(p_value, p_floor))
    common = dict(margin=margin, family=family, a=a, b=b, percent=percent, p_floor=p_floor)
    excludes = d.low > 0 or d.high < 0
    if excludes and p_value is not None and not p_value < alpha:
        # one rule: a difference needs its interval to exclude 0 *and* its p below alpha. They
        # part only where the p cannot go low enough: at its floor, too few units (or replicates)
        # for this many comparisons -- a bootstrap interval's edge is then its most extreme replicate
        floored = p_floor is not None and p_value <= p_floor * (1 + 1e-9)
        why = (f"too few units for {family} comparison{'s' if family > 1 else ''}: the smallest p they can give is "
               f"{p_floor:.2g}, not below {alpha:g}" if floored else f"the p ({p_value:.2g}) is not below {alpha:g}")
        return Verdict("inconclusive", f"inconclusive ({why}): {a} - {b} = {_span(d, percent)} ({words}{p_text})",
                       d, p_value, **common)
    if excludes:
        kind = "higher" if d.low > 0 else "lower"
        return Verdict(kind, f"{a} {kind} than {b}: {a} - {b} = {_span(d, percent)} ({words}{p_text})", d, p_value,
                       **common)
    if margin is None:
        return Verdict("inconclusive", f"inconclusive: {a} - {b} = {_span(d, percent)} ({words}{p_text}); the "
                       "interval includes 0, and no equivalence margin was set, so this is not evidence of no "
                       "difference", d, p_value, **common)
    if not margin > 0:
        raise ValueError(f"margin must be > 0, got {margin!r}.")
    if equivalence_interval is None:
        raise ValueError("an equivalence margin needs the equivalence interval (TOST at alpha reads the "
                         f"{100 * equivalence_level(family, alpha):.4g} % interval): pass equivalence_interval.")
    eq = equivalence_interval
    _check_interval_level(eq, equivalence_level(family, alpha), "equivalence_interval")
    m_text = _fmt(margin, percent)[1:]
    eq_words = f"{100 * eq.level:.4g} % interval" + ("" if family == 1 else f", Bonferroni over {family} tests")
    if -margin < eq.low and eq.high < margin and eq.high > eq.low:
        return Verdict("equivalent", f"{a} and {b} equivalent within +/-{m_text} (margin set beforehand): "
                       f"{a} - {b} = {_span(eq, percent)} ({eq_words}, inside the margin: TOST{p_text})", d, p_value,
                       equivalence_interval=eq, **common)
    return Verdict("inconclusive", f"inconclusive: {a} - {b} = {_span(d, percent)} ({words}{p_text}); neither a "
                   f"difference nor equivalence within +/-{m_text} (the {eq_words} is {_span(eq, percent)})",
                   d, p_value, equivalence_interval=eq, **common)


def replicate_verdicts(reps: Replicates, names, *, b: str, margin: float | None = None, alpha: float = ALPHA,
                       percent: bool = False, columns=None, family: int | None = None) -> list[Verdict]:
    """One :class:`Verdict` per column of ``reps`` (each a difference A - ``b``), the columns (or
    ``columns``) read together as one Bonferroni family: intervals at :func:`family_level`,
    equivalence at :func:`equivalence_level`, p-values adjusted, the floor printed as a bound.
    ``family``: a larger family, when these verdicts are read in one sentence with others (two
    metrics of the same methods: twice the columns)."""
    columns = list(range(reps.k)) if columns is None else list(columns)
    names = list(names)
    family = max(1, len(columns)) if family is None else _check_family(family)
    ivs = reps.intervals(family_level(family, alpha))
    eqs = reps.intervals(equivalence_level(family, alpha)) if margin is not None else [None] * reps.k
    p = np.minimum(1.0, reps.p_values() * family)
    floor = min(1.0, family * reps.p_floor)
    return [verdict(ivs[j], a=names[j], b=b, margin=margin, equivalence_interval=eqs[j], p_value=float(p[j]),
                    p_floor=floor, family=family, alpha=alpha, percent=percent) for j in columns]


# ----------------------------------------------------------------------------- ranking layers
def _paired_replicates(values, *, statistic, clusters, control, control_units, n_boot: int, seed: int,
                       unit: str | None) -> Replicates:
    """Replicates of each column's statistic (minus the control's mean): one draw of the units for
    every column, and -- when ``control_units`` name the same units as ``clusters`` (the sentences a
    random pair's tokens come from) -- for the control too, so the subtraction is paired."""
    array, _ = _as_columns(values)
    n, k = array.shape
    if control is None:
        return cluster_replicates(array, clusters, statistic=statistic, n_boot=n_boot, seed=seed, unit=unit)
    ctrl, _ = _as_columns(control, "control")
    if ctrl.shape[1] != k:
        raise ValueError(f"control has {ctrl.shape[1]} columns but values {k}: measure both on the same layers.")
    if control_units is None or len(control_units) != 2:
        raise ValueError("a control measured on pairs needs control_units=(first, second): the unit (sentence) "
                         "of each pair's two sides, so the pairs are resampled by sentence, not one by one.")
    first, second = (np.asarray(u) for u in control_units)
    item_labels = np.arange(n) if clusters is None else np.asarray(clusters)
    shared = clusters is not None and np.isin(np.concatenate([first, second]), item_labels).all()
    if shared:  # the same sentences: one draw for the values and their control
        labels = np.unique(np.concatenate([item_labels, first, second]))
        weights = unit_weights(labels.size, n_boot, seed)
        vals = cluster_replicates(array, clusters, statistic=statistic, weights=weights, unit_labels=labels,
                                  unit=unit)
        ctl = pair_replicates(ctrl, first, second, weights=weights, unit_labels=labels)
    else:  # different units: each resampled on its own, so the control's uncertainty adds
        vals = cluster_replicates(array, clusters, statistic=statistic, n_boot=n_boot, seed=seed, unit=unit)
        ctl = pair_replicates(ctrl, first, second, n_boot=n_boot, seed=seed + 1)
    return vals.minus(ctl)


@dataclass(frozen=True)
class LayerRanking:
    """The column (layer or transition) with the lowest or highest statistic, and every column that
    a paired comparison with it does not show to differ (see :func:`rank_layers`)."""

    intervals: list  # per column: the statistic (minus the control), 95 % interval
    extreme: int  # the column with the lowest (or highest) estimate
    tied: list  # the extreme and every column whose difference interval includes 0: not shown different
    differences: list  # per column: statistic(column) - statistic(extreme), at the family's level
    p_values: list | None = None  # per column: Bonferroni-adjusted p of "column - extreme = 0" (1 for the extreme)
    alpha: float = ALPHA
    unit: str = "items"  # what the bootstrap resampled
    family: int = 1  # comparisons the intervals are adjusted for: every pair of columns
    p_floor: float | None = None

    def verdict(self, column: int, a: str | None = None, b: str | None = None) -> Verdict:
        """:func:`verdict` of ``column`` minus the extreme one, read off its family-level interval:
        "higher", "lower" or "inconclusive" (never "the same")."""
        a = a or f"column {column}"
        b = b or f"column {self.extreme}"
        p = None if self.p_values is None else float(self.p_values[column])
        return verdict(self.differences[column], a=a, b=b, p_value=p, p_floor=self.p_floor, family=self.family,
                       alpha=self.alpha)

    @property
    def family_size(self) -> int:
        """How many comparisons the Bonferroni adjustment covers (every pair of columns)."""
        return self.family


def rank_layers(values, *, lowest: bool = True, control=None, control_units=None, statistic=np.mean,
                n_boot: int | None = None, seed: int = 0, clusters=None, unit: str | None = None,
                alpha: float = ALPHA) -> LayerRanking:
    """Which column of ``values [n_items, layers]`` has the lowest (``lowest=True``) or highest
    ``statistic`` (mean or median), and which columns are not shown to differ from it.

    Every replicate resamples the same items -- or whole ``clusters`` (one label per row: the
    sentence of each token, the word of each sentence) -- for all columns, so the comparison is
    *paired*. ``control [n_pairs, layers]`` (e.g. random-pair cosines) is subtracted as its mean;
    ``control_units = (first, second)`` names each pair's two sentences, resampled by the pigeonhole
    bootstrap -- with the same draws as ``clusters`` when they name the same sentences. The extreme
    column is picked by the data, so the family is every pair of columns, ``k (k - 1) / 2``
    (Bonferroni): whichever column turns out extreme, the claims "column j differs from it" hold
    together at ``alpha``. ``tied`` holds the extreme and every column whose difference interval
    includes 0: "not shown different", never "the same".
    """
    array, _ = _as_columns(values)
    n, k = array.shape
    if n < 2:
        raise ValueError(f"values must be [n_items >= 2, layers], got shape {array.shape}.")
    family = extreme_family(k)
    n_boot = min(bootstrap_size(family, alpha), 20000) if n_boot is None else n_boot
    reps = _paired_replicates(array, statistic=statistic, clusters=clusters, control=control,
                              control_units=control_units, n_boot=n_boot, seed=seed, unit=unit)
    extreme = int(np.argmin(reps.estimate) if lowest else np.argmax(reps.estimate))
    diffs = reps.minus(extreme)
    differences = diffs.intervals(family_level(family, alpha))
    p_adj = np.minimum(1.0, diffs.p_values() * family)
    p_adj[extreme] = 1.0
    tied = [j for j in range(k) if j == extreme or differences[j].contains(0.0)]
    unit = unit or ("clusters" if clusters is not None else "items")
    return LayerRanking(reps.intervals(0.95), extreme, tied, differences, [float(p) for p in p_adj], alpha, unit,
                        family, min(1.0, family * reps.p_floor))


def step_verdicts(values, control=None, *, control_units=None, n_boot: int | None = None, seed: int = 0,
                  clusters=None, names=None, alpha: float = ALPHA, percent: bool = False) -> list[Verdict]:
    """Each step ``statistic[l] - statistic[l - 1]`` of the mean of ``values [n_items, layers]``
    (minus ``control``'s mean, as :func:`rank_layers`), as a :class:`Verdict`: "higher" (a rise),
    "lower" (a fall) or "inconclusive", read off Bonferroni intervals over the ``layers - 1`` steps
    (fixed in advance, so the family is the steps). Items (or ``clusters``) and the control's
    sentences are resampled once for all layers, so every step is paired. ``names`` labels the
    columns (default ``"layer 0"``, ...)."""
    array, _ = _as_columns(values)
    if array.shape[1] < 2:
        raise ValueError(f"values need at least two layers to have a step, got shape {array.shape}.")
    family = array.shape[1] - 1
    n_boot = bootstrap_size(family, alpha) if n_boot is None else n_boot
    reps = _paired_replicates(array, statistic=np.mean, clusters=clusters, control=control,
                              control_units=control_units, n_boot=n_boot, seed=seed, unit=None).steps()
    names = [f"layer {j}" for j in range(array.shape[1])] if names is None else list(names)
    if len(names) != array.shape[1]:
        raise ValueError(f"names must label the {array.shape[1]} columns, got {len(names)}.")
    ivs = reps.intervals(family_level(family, alpha))
    p = np.minimum(1.0, reps.p_values() * family)
    floor = min(1.0, family * reps.p_floor)
    return [verdict(ivs[l], a=names[l + 1], b=names[l], p_value=float(p[l]), p_floor=floor, family=family,
                    alpha=alpha, percent=percent) for l in range(family)]


# ----------------------------------------------------------------------------- paired right/wrong outcomes
def _tango_z(delta, b, c, n):
    """Tango's (1998) score statistic for H0: p(A right, B wrong) - p(A wrong, B right) = delta,
    with the restricted maximum-likelihood estimate of p(A wrong, B right) under H0."""
    A = 2 * n
    B = -b - c + (2 * n - b + c) * delta
    C = -c * delta * (1 - delta)
    q = (np.sqrt(np.maximum(B * B - 4 * A * C, 0.0)) - B) / (2 * A)
    var = n * (2 * q + delta * (1 - delta))
    num = b - c - n * delta
    with np.errstate(divide="ignore", invalid="ignore"):
        z = num / np.sqrt(var)
    return np.where(var > 0, z, np.where(num > 0, np.inf, np.where(num < 0, -np.inf, 0.0)))


def tango_interval(b, c, n, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Tango's score interval for the difference of two paired proportions, ``(b - c) / n``, where
    ``b`` items only A gets right and ``c`` only B, of ``n`` (arrays broadcast: many tables at
    once; ``level`` may be an array too). The interval holds every difference that the score test
    does not reject: it does not condition on ``b + c``, has a non-zero width when no item changed,
    and grows with ``b``."""
    from scipy.stats import norm

    levels = np.asarray(level, dtype=float)
    if levels.size == 0 or not np.all((levels > 0) & (levels < 1)):
        raise ValueError(f"level must lie strictly between 0 and 1, got {level!r}.")
    b, c, n, z = np.broadcast_arrays(*(np.asarray(x, dtype=float) for x in (b, c, n, norm.ppf(0.5 + levels / 2))))
    if (b < 0).any() or (c < 0).any() or (b + c > n).any() or (n < 1).any():
        raise ValueError("need counts 0 <= b, c with b + c <= n and n >= 1.")
    est = (b - c) / n
    eps = 1e-12
    # Z decreases in delta: the lower limit solves Z = z below the estimate, the upper Z = -z above it.
    lo, hi = np.full(est.shape, -1 + eps), est.copy()
    for _ in range(60):
        mid = (lo + hi) / 2
        above = _tango_z(mid, b, c, n) > z
        lo, hi = np.where(above, mid, lo), np.where(above, hi, mid)
    lower = np.where(est <= -1 + eps, -1.0, (lo + hi) / 2)
    lo, hi = est.copy(), np.full(est.shape, 1 - eps)
    for _ in range(60):
        mid = (lo + hi) / 2
        above = _tango_z(mid, b, c, n) > -z
        lo, hi = np.where(above, mid, lo), np.where(above, hi, mid)
    upper = np.where(est >= 1 - eps, 1.0, (lo + hi) / 2)
    return lower, upper


def mcnemar_p(b, c) -> np.ndarray:
    """McNemar's asymptotic two-sided test of "same accuracy", ``z = (b - c) / sqrt(b + c)``: the
    score test at difference 0, so it rejects at alpha exactly when Tango's ``1 - alpha`` interval
    excludes 0 (p = 1 when no item differs)."""
    from scipy.stats import norm

    b, c = np.broadcast_arrays(np.asarray(b, dtype=float), np.asarray(c, dtype=float))
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.abs(b - c) / np.sqrt(b + c)
    return np.where(b + c > 0, 2 * norm.sf(z), 1.0)


@dataclass(frozen=True)
class McNemar:
    """Two classifiers' right/wrong outcomes on the same items: Tango's score interval of the
    accuracy difference and McNemar's test, its score test at 0."""

    n: int
    a_only: int  # items only A gets right
    b_only: int  # items only B gets right
    p_value: float  # McNemar's asymptotic test (dual to the interval)
    exact_p: float  # the exact conditional (sign) test on the discordant items: conservative, for reference
    difference: Interval  # accuracy(A) - accuracy(B), Tango's 95 % interval
    difference90: Interval  # the same at 90 %, for one equivalence test (TOST at 5 %)

    def interval(self, level: float) -> Interval:
        low, high = tango_interval(self.a_only, self.b_only, self.n, level)
        return Interval((self.a_only - self.b_only) / self.n, float(low), float(high), level)

    def verdict(self, a: str = "A", b: str = "B", margin: float | None = None, family: int = 1,
                alpha: float = ALPHA) -> Verdict:
        """:func:`verdict` read off Tango's interval at the family's level (Bonferroni over
        ``family`` comparisons), McNemar's p adjusted to match."""
        d = self.interval(family_level(family, alpha))
        eq = self.interval(equivalence_level(family, alpha)) if margin is not None else None
        p = min(1.0, self.p_value * family)
        v = verdict(d, a=a, b=b, margin=margin, equivalence_interval=eq, p_value=p, family=family, alpha=alpha,
                    percent=True)
        extra = (f" (Tango's score interval, McNemar's test: {self.a_only} items only {a} gets right, {self.b_only} "
                 f"only {b}, of {self.n})")
        return Verdict(v.kind, v.text + extra, v.difference, v.p_value, v.margin, v.family, v.a, v.b, v.percent,
                       v.equivalence_interval)


def mcnemar(a_correct, b_correct) -> McNemar:
    """Paired right/wrong outcomes of A and B on the same items (0/1 vectors): Tango's score
    interval for ``accuracy(A) - accuracy(B)`` and McNemar's test (:class:`McNemar`). Only the items
    where they disagree move the estimate, but the interval also counts how many items could have:
    with no disagreement on ``n`` items it is about ``+/- 1.96^2 / n``, never zero-width."""
    from scipy.stats import binomtest

    a, b = _binary(a_correct, "a_correct"), _binary(b_correct, "b_correct")
    if a.shape != b.shape:
        raise ValueError(f"a_correct and b_correct must be measured on the same items; got {a.shape} and {b.shape}.")
    n = a.size
    a_only, b_only = int(((a == 1) & (b == 0)).sum()), int(((a == 0) & (b == 1)).sum())
    exact = 1.0 if a_only + b_only == 0 else float(binomtest(a_only, a_only + b_only, 0.5).pvalue)
    p = float(mcnemar_p(a_only, b_only))
    est = (a_only - b_only) / n
    low, high = tango_interval(a_only, b_only, n, [0.95, 0.90])  # both levels in one solve
    return McNemar(n, a_only, b_only, p, exact, Interval(est, float(low[0]), float(high[0]), 0.95),
                   Interval(est, float(low[1]), float(high[1]), 0.90))


def paired_binary_interval(a_correct, b_correct, clusters=None, level: float = 0.95) -> Interval:
    """``mean(a) - mean(b)`` for 0/1 outcomes on the same items: Tango's score interval when the
    items are independent; the cluster bootstrap (small-sample rule) when ``clusters`` name the
    unit they share -- and, when no item differs at all (the bootstrap would be zero-width),
    Tango's interval for "none of the ``n_units`` units differed", never a zero-width interval."""
    a, b = _binary(a_correct, "a_correct"), _binary(b_correct, "b_correct")
    if a.shape != b.shape:
        raise ValueError(f"a and b must be measured on the same items; got {a.shape} and {b.shape}.")
    if clusters is None:
        return mcnemar(a, b).interval(level)
    n_units = int(np.unique(np.asarray(clusters)).size)
    if not (a != b).any():
        low, high = tango_interval(0, 0, n_units, level)
        return Interval(0.0, float(low), float(high), level)
    return cluster_replicates(a - b, clusters).interval(level)


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
