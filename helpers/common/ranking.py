"""Layers ranked and compared step by step, every pair judged on the same items (re-exported by
:mod:`helpers.common.stats`): :func:`rank_layers` -> :class:`LayerRanking` (the best layer and
the layers the data cannot tell from it, Bonferroni over every pair), :func:`step_verdicts`
(each layer against the one before).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from helpers.common.bootstrap import Replicates, _as_columns, cluster_replicates, pair_replicates, unit_weights
from helpers.common.intervals import ALPHA, bootstrap_size, extreme_family, family_level
from helpers.common.verdicts import Verdict, verdict


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
    return ranking_of(reps, lowest=lowest, unit=unit or ("clusters" if clusters is not None else "items"),
                      alpha=alpha)


def ranking_of(reps: Replicates, *, lowest: bool, unit: str, alpha: float = ALPHA) -> LayerRanking:
    """The :class:`LayerRanking` read off replicates of ``k`` columns drawn with the same weights
    (paired): the extreme column picked by the data, every column against it, one Bonferroni
    family over every pair (:func:`~helpers.common.intervals.extreme_family`). Shared by
    :func:`rank_layers` and the random-pair ranking of ``layerwalk``."""
    k = reps.k
    family = extreme_family(k)
    extreme = int(np.argmin(reps.estimate) if lowest else np.argmax(reps.estimate))
    diffs = reps.minus(extreme)
    differences = diffs.intervals(family_level(family, alpha))
    p_adj = np.minimum(1.0, diffs.p_values() * family)
    p_adj[extreme] = 1.0
    tied = [j for j in range(k) if j == extreme or differences[j].contains(0.0)]
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
