"""Lesson 12 (:mod:`helpers.interventions`): did an intervention change the answers? Per-item outcome changes.

* :func:`outcome_changes` -> :class:`OutcomeChange` -- an intervention's accuracy change on the
  same items: Tango's score interval and McNemar's test, or a cluster bootstrap when items share a
  unit; Bonferroni over the interventions; "equivalent" only inside a margin stated beforehand
  (TOST on the family's equivalence interval);
* :func:`equivalence_resolution` -- the smallest margin a test set can confirm for a family;
  :func:`unseen_rate`, :func:`count_kinds`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from helpers.common.stats import (Interval, Verdict, accuracy_ci, bootstrap_size, clopper_pearson,
                                  cluster_bootstrap_ci, cluster_replicates, equivalence_level, family_level,
                                  mcnemar_p, tango_interval, verdict)
from helpers.interventions.ranking import _as_float_array


# -- verdicts on paired right/wrong outcomes ------------------------------------------------------------

CHANGE_WORDS = {"lower": "lowers", "higher": "raises", "equivalent": "equivalent within the margin",
                "inconclusive": "inconclusive"}


def unseen_rate(n: int, level: float = 0.90) -> float:
    """The exact (Clopper-Pearson, two-sided ``level``) upper bound on a rate never observed in ``n``
    independent units: about ``3 / n`` at 90% (the rule of three). A change that no item showed may
    still happen to this share of items, so a difference measured on ``n`` units is never known to be
    smaller than this."""
    return clopper_pearson(0, n, level).high


@dataclass(frozen=True)
class OutcomeChange:
    """Accuracy with an intervention minus accuracy without it, on the **same** items.

    ``difference`` is the interval the verdict was read from: 95 % for one intervention,
    Bonferroni-widened (``1 - 0.05 / K``) when ``K`` interventions are compared together;
    ``equivalence_interval`` the matching ``1 - 2 x 0.05 / K`` interval that the equivalence test
    (TOST) reads; ``adjusted_p`` is the Bonferroni-adjusted p of the same test; ``verdict`` follows
    :func:`~helpers.common.stats.verdict`, so interval, p and verdict always agree."""

    name: str
    after: Interval  # accuracy with the intervention
    difference: Interval
    equivalence_interval: Interval | None
    p_value: float
    adjusted_p: float
    verdict: Verdict
    method: str
    n_changed: int  # items whose outcome changed (either way)
    family: int = 1

    @property
    def kind(self) -> str:
        return self.verdict.kind

    def describe(self) -> str:
        """``accuracy 81.2% [..], change -1.3 pt [-2.1, -0.5] (99.9 % interval, Bonferroni over 72),
        adjusted p = 0.004 -> lowers``."""
        d = self.difference
        level = f"{100 * d.level:.4g} %" + ("" if self.family == 1 else f", Bonferroni over {self.family}")
        return (f"accuracy {self.after.percent()}, change {100 * d.estimate:+.1f} pt [{100 * d.low:+.1f}, "
                f"{100 * d.high:+.1f}] ({level}), {self.verdict.p_text} -> {CHANGE_WORDS[self.kind]}")


def outcome_changes(changed, unchanged, names, *, margin: float | None = None, clusters=None,
                    reference: str = "unchanged", n_boot: int | None = None, seed: int = 0,
                    family: int | None = None) -> list[OutcomeChange]:
    """One :class:`OutcomeChange` per intervention: ``changed`` is ``[K, n]`` 0/1 outcomes with each
    of ``K`` interventions (``names[k]``), ``unchanged`` ``[n]`` the outcomes without, on the same items.
    The ``K`` comparisons form one family (Bonferroni): each is read off its ``1 - 0.05 / K``
    interval, and with a ``margin`` (an accuracy difference, e.g. 0.01, stated before the
    measurement) its equivalence off the ``1 - 0.1 / K`` interval.

    * independent items (``clusters=None``, e.g. test utterances): Tango's score interval and
      McNemar's test (:func:`~helpers.common.stats.mcnemar`);
    * items that share a unit (``clusters[i]`` names item i's word, say): the per-item differences
      resampled by cluster (:func:`~helpers.common.stats.cluster_replicates`, small-sample rule
      included); when no item changed, the interval is the share of units that could change unseen
      (:func:`unseen_rate`), never zero-width.

    ``family``: a larger Bonferroni family than the ``K`` rows (a reference picked from the data
    among them: :func:`~helpers.common.stats.extreme_family`).
    """
    changed, unchanged = _as_float_array(changed), _as_float_array(unchanged).ravel()
    if changed.ndim != 2 or changed.shape[1] != unchanged.size or not np.isin(changed, (0.0, 1.0)).all() \
            or not np.isin(unchanged, (0.0, 1.0)).all():
        raise ValueError(f"changed must be [K, n] and unchanged [n] 0/1 outcomes on the same items; got shapes "
                         f"{changed.shape} and {unchanged.shape}.")
    names = list(names)
    if len(names) != changed.shape[0]:
        raise ValueError(f"give one name per intervention: {len(names)} names for {changed.shape[0]} rows.")
    if margin is not None and not margin > 0:
        raise ValueError(f"margin must be > 0 (an accuracy difference, e.g. 0.01), got {margin!r}.")
    n = unchanged.size
    family = max(1, changed.shape[0]) if family is None else int(family)
    level, eq_level = family_level(family), equivalence_level(family)
    if clusters is not None:
        labels = np.asarray(clusters)
        if labels.shape != (n,):
            raise ValueError(f"clusters must name one unit per item ({n}), got shape {labels.shape}.")
        units = int(np.unique(labels).size)
        method = f"cluster bootstrap over {units} units"
        n_boot = bootstrap_size(family) if n_boot is None else n_boot
    else:
        method = "Tango's score interval, McNemar's test"
    out = []
    if clusters is None:  # every intervention's Tango interval in one vectorised solve
        b_only = ((changed == 1) & (unchanged == 0)).sum(1)  # right only with the intervention
        c_only = ((changed == 0) & (unchanged == 1)).sum(1)
        lows, highs = tango_interval(b_only[:, None], c_only[:, None], n, [level, eq_level])
        p_all = mcnemar_p(b_only, c_only)
    for k in range(changed.shape[0]):
        diff = changed[k] - unchanged
        n_changed = int((diff != 0).sum())
        if clusters is None:
            est = float((b_only[k] - c_only[k]) / n)
            d = Interval(est, float(lows[k, 0]), float(highs[k, 0]), level)
            eq = Interval(est, float(lows[k, 1]), float(highs[k, 1]), eq_level) if margin is not None else None
            p = float(p_all[k])
            after = accuracy_ci(changed[k])
        else:
            after = cluster_bootstrap_ci(changed[k], labels, seed=seed)
            if n_changed:
                reps = cluster_replicates(diff, labels, n_boot=n_boot, seed=seed)
                d, p = reps.interval(level), float(reps.p_values()[0])
                eq = reps.interval(eq_level) if margin is not None else None
            else:  # nothing changed: bounded by what the units could hide, not zero-width
                d = Interval(0.0, -unseen_rate(units, level), unseen_rate(units, level), level)
                eq = Interval(0.0, -unseen_rate(units, eq_level), unseen_rate(units, eq_level), eq_level)
                p = 1.0
        adj = min(1.0, p * family)
        v = verdict(d, a=names[k], b=reference, margin=margin, equivalence_interval=eq, p_value=adj, family=family,
                    percent=True)
        out.append(OutcomeChange(names[k], after, d, eq, float(p), float(adj), v, method, n_changed, family))
    return out


def count_kinds(changes) -> dict:
    """``{kind: count}`` over :class:`OutcomeChange` objects, every kind present (0 when absent)."""
    counts = {kind: 0 for kind in CHANGE_WORDS}
    for change in changes:
        counts[change.kind] += 1
    return counts


# -- the lesson's findings, in plain words ---------------------------------------------------------------


def equivalence_resolution(n: int, family: int = 1) -> float:
    """The smallest margin within which a change measured on ``n`` paired right/wrong items could
    ever be shown equivalent, ``family`` changes judged together: the half-width of Tango's interval
    at the family's equivalence level when **no** item changes. A margin below it always reads
    "inconclusive", however harmless the change."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be a positive int (test items), got {n!r}.")
    _, high = tango_interval(0, 0, int(n), equivalence_level(family))
    return float(high)
