"""Verdicts read off their own intervals (re-exported by :mod:`helpers.common.stats`, where the
rules are written out): "higher" / "lower" when the interval excludes 0, "equivalent" only inside
a margin stated beforehand (TOST), "inconclusive" otherwise.

* :func:`verdict` -> :class:`Verdict`; :func:`replicate_verdicts` (several comparisons from one
  set of replicates);
* paired right/wrong outcomes of two classifiers on the same items -- Tango's score interval
  (:func:`tango_interval`) with McNemar's test, the interval's own test (:func:`mcnemar`,
  :func:`mcnemar_p`), :func:`paired_binary_interval` (clustered outcomes).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from helpers.common.bootstrap import Replicates, cluster_replicates
from helpers.common.intervals import (ALPHA, Interval, _binary, _check_family, equivalence_level, family_level,
                                      format_p)


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
