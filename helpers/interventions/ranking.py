"""Lesson 12 (:mod:`helpers.interventions`): do two rankings agree? Spearman's rho with bootstrap intervals.

* :func:`spearman` (ranks with ties averaged, :func:`ranks`);
* :func:`spearman_ci` -- a bootstrap over the test items; :func:`within_group_spearman_ci` -- rho
  within each layer, averaged (no ranking of layers); :func:`paired_spearman_ci` -- a bootstrap
  over the ranked units.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from helpers.common.stats import Interval


# -- rank statistics ---------------------------------------------------------------------------------


def ranks(values) -> np.ndarray:
    """Ranks 1..n, ties sharing their average rank (as Spearman's rho needs)."""
    v = _as_float_array(values).ravel()
    order = np.argsort(v, kind="mergesort")
    r = np.empty(len(v))
    r[order] = np.arange(1, len(v) + 1)
    uniq, inverse = np.unique(v, return_inverse=True)
    sums = np.bincount(inverse, weights=r)
    counts = np.bincount(inverse)
    return (sums / counts)[inverse]


def spearman(a, b) -> float:
    """Spearman's rank correlation: Pearson's correlation of the ranks. NaN when either side is constant."""
    a, b = _as_float_array(a).ravel(), _as_float_array(b).ravel()
    if a.shape != b.shape or a.size < 3:
        raise ValueError(f"need two equally long sequences of at least 3 values, got {a.size} and {b.size}.")
    ra, rb = ranks(a), ranks(b)
    ra, rb = ra - ra.mean(), rb - rb.mean()
    denom = math.sqrt(float((ra**2).sum() * (rb**2).sum()))
    return float((ra * rb).sum() / denom) if denom > 0 else float("nan")


def _as_float_array(values) -> np.ndarray:
    if isinstance(values, torch.Tensor):
        values = values.detach().cpu().double().numpy()
    return np.asarray(values, dtype=float)


@dataclass(frozen=True)
class RankInterval(Interval):
    """A rank correlation with its bootstrap interval; ``undefined`` is the share of resamples
    in which one side did not vary (rho undefined): they are left out of the interval."""

    undefined: float = 0.0


def _defined_bootstrap(statistic, n: int, *, n_boot: int = 1000, level: float = 0.95, seed: int = 0) -> RankInterval:
    """Percentile bootstrap of ``statistic(indices)`` over ``n`` units, leaving out the
    resamples where it is NaN (undefined) and reporting their share."""
    if isinstance(n_boot, bool) or not isinstance(n_boot, int) or n_boot < 100:
        raise ValueError(f"n_boot must be an int >= 100, got {n_boot!r}.")
    rng = np.random.default_rng(seed)
    values = np.array([statistic(idx) for idx in rng.integers(0, n, size=(n_boot, n))])
    defined = values[~np.isnan(values)]
    estimate = statistic(np.arange(n))
    if not defined.size:
        return RankInterval(estimate, math.nan, math.nan, level, 1.0)
    alpha = (1 - level) / 2
    low, high = np.quantile(defined, [alpha, 1 - alpha])
    return RankInterval(estimate, float(low), float(high), level, 1 - defined.size / values.size)


def spearman_ci(items_a, items_b, **kw) -> RankInterval | None:
    """Spearman's rho between two scores of the same ``K`` units (e.g. heads), each the mean
    over ``N`` test items of a per-item table ``[N, K]``, with a bootstrap interval that
    resamples the items and recomputes both means.

    ``None`` when a score does not vary on the full sample (rho is undefined). A resample in
    which one side does not vary is left out of the interval; ``.undefined`` says how often
    that happened (a large share means the score hardly varies: read the interval with care)."""
    a, b = _as_float_array(items_a), _as_float_array(items_b)
    if a.ndim != 2 or a.shape != b.shape:
        raise ValueError(f"give two [items, units] tables of one shape, got {a.shape} and {b.shape}.")
    if math.isnan(spearman(a.mean(0), b.mean(0))):
        return None
    return _defined_bootstrap(lambda i: spearman(a[i].mean(0), b[i].mean(0)), a.shape[0], **kw)


@dataclass(frozen=True)
class PooledRankInterval(RankInterval):
    """The mean of several groups' rank correlations (e.g. one per layer) with its bootstrap
    interval; ``per_group`` holds each group's rho on the full sample (NaN: undefined there)."""

    per_group: tuple = ()


def within_group_spearman_ci(items_a, items_b, **kw) -> PooledRankInterval | None:
    """Spearman's rho computed **within each group** and averaged over the groups.

    ``items_a`` and ``items_b`` are ``[N, G, K]`` per-item tables (e.g. ``[utterances, layers,
    heads]``); each side is averaged over the ``N`` items, then rho is taken over the ``K`` units
    of each group separately, and the mean over groups is reported. Ranking units only against
    others of their own group removes whatever differs *between* groups (e.g. a layer whose
    heads all score high on both sides). The interval resamples the ``N`` items and recomputes
    everything; a group whose rho is undefined in a resample (one side constant) is left out of
    that resample's mean. ``None`` when no group has a defined rho on the full sample."""
    a, b = _as_float_array(items_a), _as_float_array(items_b)
    if a.ndim != 3 or a.shape != b.shape or a.shape[2] < 3:
        raise ValueError(f"give two [items, groups, units] tables of one shape with at least 3 units per group, "
                         f"got {a.shape} and {b.shape}.")

    def per_group(idx) -> np.ndarray:
        ma, mb = a[idx].mean(0), b[idx].mean(0)
        return np.array([spearman(ma[g], mb[g]) for g in range(a.shape[1])])

    def pooled(idx) -> float:
        rhos = per_group(idx)
        return float(np.nanmean(rhos)) if not np.isnan(rhos).all() else math.nan

    full = per_group(np.arange(a.shape[0]))
    if np.isnan(full).all():
        return None
    ci = _defined_bootstrap(pooled, a.shape[0], **kw)
    return PooledRankInterval(ci.estimate, ci.low, ci.high, ci.level, ci.undefined, tuple(float(r) for r in full))


def paired_spearman_ci(a, b, **kw) -> RankInterval | None:
    """Spearman's rho between two scores of the same units (e.g. the tokens of a sentence),
    with a bootstrap interval that resamples the units (resamples where a side is constant
    are left out, see :class:`RankInterval`). ``None`` when a score is constant."""
    a, b = _as_float_array(a).ravel(), _as_float_array(b).ravel()
    if math.isnan(spearman(a, b)):
        return None
    return _defined_bootstrap(lambda i: spearman(a[i], b[i]), a.size, **kw)
