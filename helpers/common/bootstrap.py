"""Resampling the independent unit, with one small-sample rule (re-exported by
:mod:`helpers.common.stats`, where the rules are written out).

* :class:`Replicates` -- bootstrap replicates and their intervals: Hesterberg's expanded percentile
  interval, never narrower than the Student-t interval from the bootstrap's standard error;
* the units -- :func:`cluster_replicates` (items that share a unit), :func:`pair_replicates` (pairs
  of sentences: the pigeonhole bootstrap), :func:`seeds_items_replicates` (seeds x items);
  their intervals :func:`bootstrap_ci`, :func:`cluster_bootstrap_ci`, :func:`pair_bootstrap_ci`,
  :func:`seeds_items_ci`; :func:`two_way_standard_error`;
* differences -- :func:`paired_difference_ci`, :func:`paired_t_interval`,
  :func:`unpaired_difference_ci`, :func:`differs`, :func:`bootstrap_p_value`, :func:`seeds_interval`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from helpers.common.intervals import Interval, _as_array, _check_level


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
