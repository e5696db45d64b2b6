"""Lessons 04 and 10 (:mod:`helpers.classify`): accuracies over seeds and their comparisons.

* :class:`SeededAccuracy` -- one classifier's accuracy on each seed (each seed its own few-shot
  training draw), with an interval over seeds and test items together (:func:`per_item`,
  :func:`outcome_interval`);
* :func:`paired_comparison` -> :class:`PairedComparison` -- two classifiers on the **same** items,
  compared item by item and seed by seed (:func:`paired_difference`, :func:`points`);
  :func:`compare_paired`, :func:`compare_with`, :func:`compare_two_paired` -- families of them,
  Holm-adjusted, in sentences; :func:`claims_markdown`, :func:`join_names`.

The features and heads they compare are in ``helpers/classify/compute.py``.
"""

from __future__ import annotations

import hashlib
import textwrap
from dataclasses import dataclass

import numpy as np
import torch

from helpers.common.stats import (Interval, McNemar, Replicates, SeedSpread, Verdict, accuracy_ci, bootstrap_size,
                                  equivalence_level, extreme_family, family_level, mcnemar, seeds_items_ci,
                                  seeds_items_replicates, verdict)


@dataclass
class SeededAccuracy:
    """Test outcomes of one classifier setting trained once per seed.

    ``correct`` is ``[n_seeds, n_test]`` (True = right). :meth:`interval` is the 95% interval of the
    accuracy with **both** sources of spread: a two-way bootstrap that resamples the seeds and the
    test items (:func:`~helpers.common.stats.seeds_items_ci`); with one seed, the exact
    Clopper-Pearson interval over the items. :meth:`seed_spread` is the spread of the per-seed
    accuracies alone, reported as such (mean, SD and range over the seeds).
    """

    correct: torch.Tensor
    seeds: tuple

    def __post_init__(self):
        self.correct = torch.as_tensor(self.correct).bool().cpu()  # cpu: per-item outcomes for statistics
        self.seeds = tuple(self.seeds)
        if self.correct.ndim != 2 or self.correct.shape[0] != len(self.seeds) or self.correct.shape[1] == 0:
            raise ValueError(f"correct must be [n_seeds={len(self.seeds)}, n_test > 0], got {tuple(self.correct.shape)}.")

    @property
    def estimate(self) -> float:
        """Accuracy averaged over seeds and items."""
        return self.correct.float().mean().item()

    @property
    def n_items(self) -> int:
        return self.correct.shape[1]

    def per_seed(self) -> list[float]:
        return self.correct.float().mean(1).tolist()

    def only(self, seeds) -> "SeededAccuracy":
        """The runs of ``seeds`` (a subset of :attr:`seeds`, in their order here)."""
        seeds = tuple(seeds)
        missing = [s for s in seeds if s not in self.seeds]
        if missing or not seeds:
            raise ValueError(f"seeds must be a non-empty subset of {self.seeds}, got {seeds}.")
        rows = [self.seeds.index(s) for s in seeds]
        return SeededAccuracy(self.correct[rows], seeds)

    def run_interval(self, run: int = 0) -> Interval:
        """Exact 95% interval over the test items of one seed's run (:func:`~helpers.common.stats.accuracy_ci`)."""
        return accuracy_ci(self.correct[run])

    def interval(self) -> Interval:
        """The mean over seeds and items with a 95% interval that resamples both (one seed: over items)."""
        if len(self.seeds) == 1:
            return self.run_interval(0)
        return _remembered(("interval", _content_key(self.correct)),
                           lambda: seeds_items_ci(self.correct.double().cpu().numpy()))

    def seed_spread(self) -> SeedSpread | None:
        """Mean, SD and range of the per-seed accuracies (``None`` with one seed)."""
        return SeedSpread(tuple(self.per_seed())) if len(self.seeds) > 1 else None

    def seed_range(self) -> Interval | None:
        """Mean and ``[min, max]`` of the per-seed accuracies (``None`` with one seed)."""
        spread = self.seed_spread()
        return None if spread is None else Interval(spread.mean, min(spread.values), max(spread.values), 1.0)

    def describe(self, unit: str = "seeds") -> str:
        """``84.1% [82.9, 85.3] (5 seeds x 3080 items; seed SD 0.4 pt, range 83.6-84.7%)``; ``unit`` names
        what a seed stands for (``"draws"`` when each seed drew another few-shot training set)."""
        text = self.interval().percent()
        if len(self.seeds) == 1:  # spread_summary says "one seed" (or "one draw")
            return f"{text} (exact interval over {self.n_items} items, {self.spread_summary(unit)})"
        return f"{text} ({len(self.seeds)} {unit} x {self.n_items} items; {self.spread_summary(unit)})"

    def spread_summary(self, unit: str = "seeds") -> str:
        """``SD over seeds 0.4 pt, range 83.6-84.7%``: how much the accuracy moved between runs (a table
        column beside :meth:`interval`); ``one seed`` when there is one run."""
        spread = self.seed_spread()
        if spread is None:
            return f"one {unit[:-1] if unit.endswith('s') else unit}"
        return (f"SD over {unit} {100 * spread.sd:.1f} pt, "
                f"range {100 * min(spread.values):.1f}-{100 * max(spread.values):.1f}%")


def per_item(outcomes) -> torch.Tensor:
    """``[n_items]`` floats: the share of runs that got each test item right -- the mean over
    seeds of a :class:`SeededAccuracy`, or a 1-D 0/1 (bool) vector as it is."""
    if isinstance(outcomes, SeededAccuracy):
        return outcomes.correct.float().mean(0)
    values = torch.as_tensor(np.asarray(outcomes) if not isinstance(outcomes, torch.Tensor) else outcomes).float().cpu()  # cpu: outcomes for statistics
    if values.ndim != 1 or values.numel() == 0:
        raise ValueError(f"give a SeededAccuracy or a 1-D vector of per-item outcomes, got shape {tuple(values.shape)}.")
    return values


def outcome_interval(outcomes) -> Interval:
    """The accuracy of a :class:`SeededAccuracy` (:meth:`SeededAccuracy.interval`) or of a 1-D
    vector of per-item outcomes (:func:`~helpers.common.stats.accuracy_ci`)."""
    return outcomes.interval() if isinstance(outcomes, SeededAccuracy) else accuracy_ci(per_item(outcomes))


def _runs(outcomes) -> torch.Tensor:
    """``[n_runs, n_items]`` floats: the per-seed outcomes of a :class:`SeededAccuracy`, or one run."""
    if isinstance(outcomes, SeededAccuracy):
        return outcomes.correct.float()
    return per_item(outcomes)[None]


@dataclass(frozen=True)
class PairedComparison:
    """A minus B on the same test items: the accuracy difference with the interval at any level
    (:meth:`interval`: Tango's score interval for one run each, a bootstrap over seeds and items
    for several seeds), its two-sided p-value from the same test, and how it was computed."""

    difference: Interval  # 95 %
    difference90: Interval  # 90 %, for one equivalence test
    p_value: float
    method: str
    n_items: int
    n_seeds: int
    source: object = None  # the McNemar result or the Replicates the intervals are read from
    p_floor: float | None = None

    def interval(self, level: float) -> Interval:
        if isinstance(self.source, McNemar):
            return self.source.interval(level)
        if isinstance(self.source, Replicates):
            return self.source.interval(level)
        raise ValueError("this comparison keeps no source to read another level from.")

    def verdict(self, a: str = "A", b: str = "B", margin: float | None = None, family: int = 1) -> Verdict:
        """:func:`~helpers.common.stats.verdict` read off the interval at the family's level
        (Bonferroni over ``family`` comparisons), the p-value adjusted to match."""
        d = self.interval(family_level(family))
        eq = self.interval(equivalence_level(family)) if margin is not None else None
        floor = None if self.p_floor is None else min(1.0, family * self.p_floor)
        return verdict(d, a=a, b=b, margin=margin, equivalence_interval=eq, p_value=min(1.0, family * self.p_value),
                       p_floor=floor, family=family, percent=True)


def paired_comparison(a, b) -> PairedComparison:
    """Accuracy of ``a`` minus accuracy of ``b``, measured on the **same** test items.

    One run each: Tango's score interval and McNemar's test (:func:`~helpers.common.stats.mcnemar`).
    Several seeds (:class:`SeededAccuracy`; run ``i`` of ``a`` paired with run ``i`` of ``b``, a
    single run paired with every run of the other): the per-item, per-seed differences are
    resampled over seeds and items together (:func:`~helpers.common.stats.seeds_items_replicates`,
    small-sample rule on the seeds), the p-value from the same replicates.
    """
    A, B = _runs(a), _runs(b)
    if A.shape[1] != B.shape[1]:
        raise ValueError(f"a and b must be measured on the same test items: {A.shape[1]} vs {B.shape[1]} items.")
    if len(A) != len(B) and 1 not in (len(A), len(B)):
        raise ValueError(f"a and b must have the same number of seeds (or one run), got {len(A)} and {len(B)}.")
    return _remembered(("paired", _content_key(A), _content_key(B)), lambda: _paired_comparison(A, B))


def _paired_comparison(A: torch.Tensor, B: torch.Tensor) -> PairedComparison:
    n_seeds = max(len(A), len(B))
    if n_seeds == 1:
        m = mcnemar(A[0].cpu().numpy(), B[0].cpu().numpy())
        return PairedComparison(m.difference, m.difference90, m.p_value, "Tango's score interval, McNemar's test",
                                A.shape[1], 1, m)
    D = (A.expand(n_seeds, -1) - B.expand(n_seeds, -1)).double().cpu().numpy()
    if not D.any():  # right and wrong on the same items in every run: the seeds x items bootstrap has no spread
        m = mcnemar(A[0].cpu().numpy(), B[0].cpu().numpy())
        return PairedComparison(m.difference, m.difference90, 1.0, "no item differs in any run: Tango's score "
                                "interval of one run", A.shape[1], n_seeds, m)
    reps = seeds_items_replicates(D, n_boot=bootstrap_size(20))  # enough replicates for a family of 20
    return PairedComparison(reps.interval(0.95), reps.interval(0.90), float(reps.p_values()[0]),
                            "bootstrap over seeds and items", A.shape[1], n_seeds, reps, reps.p_floor)


# The seeded bootstraps above give the same answer for the same outcomes, so a lesson that asks
# twice (the layer ranking, then the peak verdict, then the claims table) computes once. Keyed by
# the outcomes' content, never by object identity; kept small.
_REMEMBERED: dict = {}


def _content_key(outcomes: torch.Tensor) -> tuple:
    array = outcomes.detach().cpu().contiguous().numpy()
    return array.shape, str(array.dtype), hashlib.sha1(array.tobytes()).hexdigest()


def _remembered(key, compute):
    if key not in _REMEMBERED:
        if len(_REMEMBERED) >= 1024:
            _REMEMBERED.clear()
        _REMEMBERED[key] = compute()
    return _REMEMBERED[key]


def paired_difference(a, b) -> Interval:
    """The 95% interval of accuracy(a) - accuracy(b) on the same items (:func:`paired_comparison`)."""
    return paired_comparison(a, b).difference


def points(interval: Interval) -> str:
    """An accuracy difference in percentage points: ``+4.0 points [-1.0, +9.0]``."""
    return f"{100 * interval.estimate:+.1f} points [{100 * interval.low:+.1f}, {100 * interval.high:+.1f}]"


def compare_paired(named: dict, what: str = "accuracy", width: int | None = 110, margin: float | None = None) -> str:
    """A few lines that rank classifiers tested on the same items, pairing each with the best.

    ``named`` maps names to :class:`SeededAccuracy` (or 1-D per-item outcomes). The highest
    estimate is named; every other is compared with it item by item (:func:`paired_comparison`).
    The best is picked on the same test items, so the family is every pair of classifiers
    (Bonferroni): an other one is "lower" when its interval at that level lies below 0; else, with a
    ``margin`` (in accuracy, e.g. 0.02, stated before the measurement), "equivalent" when its
    equivalence interval lies inside the margin; else "inconclusive". Lines are
    wrapped at ``width`` characters (``None``: one line).
    """
    if not named:
        raise ValueError("named must map at least one name to a SeededAccuracy or per-item outcomes.")
    est = {k: _runs(v).mean().item() for k, v in named.items()}
    best = max(named, key=est.__getitem__)
    lines = [f"Highest {what}: {best}, {outcome_interval(named[best]).percent()}."]
    if len(named) > 1:
        others = [k for k in named if k != best]
        comps = {k: paired_comparison(named[k], named[best]) for k in others}
        family = extreme_family(len(named))  # the best is picked by the data: every pair counts
        verdicts = {k: comps[k].verdict(k, best, margin=margin, family=family) for k in others}
        groups = {kind: [f"{k} ({points(verdicts[k].difference)}, adjusted {verdicts[k].p_text})" for k in others
                         if verdicts[k].kind == kind] for kind in ("lower", "higher", "equivalent", "inconclusive")}
        first = comps[others[0]]
        lines.append(f"Each other one minus it, paired on the same {first.n_items} test items ({first.method}; "
                     f"{100 * family_level(family):.4g} % intervals and p-values Bonferroni-adjusted over the "
                     f"{family} pairs, since the best is picked from the same data):")
        if groups["lower"]:
            lines.append(f"lower (interval below 0): {join_names(groups['lower'])}.")
        if groups["equivalent"]:
            lines.append(f"equivalent within +/-{100 * margin:.1f} points ({100 * equivalence_level(family):.4g} % "
                         "interval inside the margin): "
                         f"{join_names(groups['equivalent'])}.")
        if groups["inconclusive"]:
            lines.append("inconclusive (not shown lower" + ("" if margin is None else ", not shown equivalent")
                         + f"): {join_names(groups['inconclusive'])}.")
    if width is None:
        return " ".join(lines)
    return "\n".join(textwrap.fill(line, width, initial_indent="  " if i else "", subsequent_indent="    ",
                                   break_on_hyphens=False)
                     for i, line in enumerate(lines))


def compare_with(named: dict, reference: str, width: int | None = 110, margin: float | None = None) -> str:
    """Every classifier in ``named`` minus the ``reference`` one (a key of ``named``), paired on the same
    test items (:func:`paired_comparison`), one Bonferroni family over those comparisons; each
    line is the :class:`~helpers.common.stats.Verdict` by the course's rules."""
    if reference not in named or len(named) < 2:
        raise ValueError(f"named must hold the reference {reference!r} and at least one other classifier; "
                         f"got {list(named)}.")
    others = [k for k in named if k != reference]
    comps = {k: paired_comparison(named[k], named[reference]) for k in others}
    family = len(others)
    first = comps[others[0]]
    lines = [f"each minus {reference} ({outcome_interval(named[reference]).percent()}), paired on the same "
             f"{first.n_items} test items ({first.method}"
             + ("" if family == 1 else f"; Bonferroni over the {family} comparisons") + "):"]
    lines += [f"{k} {outcome_interval(named[k]).percent()}: "
              + comps[k].verdict(k, reference, margin=margin, family=family).text for k in others]
    if width is None:
        return lines[0] + " " + "; ".join(lines[1:])
    return "\n".join(textwrap.fill(line, width, initial_indent="  " if i else "", subsequent_indent="    ",
                                   break_on_hyphens=False) for i, line in enumerate(lines))


def compare_two_paired(a_name: str, a, b_name: str, b, margin: float | None = None) -> str:
    """``"A 88.0% [..] vs B 92.0% [..]; A - B paired on the same 100 items (Tango's interval):
    inconclusive: ..."`` -- the verdict by the course's rules (:class:`~helpers.common.stats.Verdict`)."""
    comp = paired_comparison(a, b)
    if _runs(a).shape == _runs(b).shape and torch.equal(_runs(a), _runs(b)):
        text = (f"right and wrong on exactly the same items ({comp.verdict(a_name, b_name, margin=margin).kind}: "
                "no item differs, but a test set this size bounds how many could)")
    else:
        text = comp.verdict(a_name, b_name, margin=margin).text
    return (f"{a_name} {outcome_interval(a).percent()} vs {b_name} {outcome_interval(b).percent()}; paired on the "
            f"same {comp.n_items} test items ({comp.method}): {text}")


def claims_markdown(rows, header=("popular claim", "what this model shows (this run)", "published finding (paper, model)")) -> str:
    """A Markdown table (for ``IPython.display.Markdown``) from rows of three strings."""
    cell = lambda text: str(text).replace("|", "\\|").replace("\n", " ")
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        if len(row) != len(header):
            raise ValueError(f"each row needs {len(header)} cells, got {len(row)}: {row!r}.")
        lines.append("| " + " | ".join(cell(c) for c in row) + " |")
    return "\n".join(lines)


def join_names(names) -> str:
    names = list(names)
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
