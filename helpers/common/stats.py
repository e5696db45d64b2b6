"""Spreads, intervals and verdicts: the course's one implementation of its statistics (lessons 00-10).

A number read off one token of one sentence says little; the lessons show each per-layer
statistic over many tokens or sentences with a spread, and every comparison ends in a verdict
computed here, by these rules:

* **"Not distinguishable" is not "no effect".** A difference whose interval excludes 0 is a
  difference; a claim of *no* effect needs an equivalence margin stated before the measurement
  (two one-sided tests, TOST: the 90% interval lies inside ``(-margin, +margin)``); anything else
  is **inconclusive** (:func:`verdict`, :class:`Verdict`).
* **Paired right/wrong outcomes** of two classifiers on the same items: the exact McNemar (sign)
  test on the items where they disagree, with the matching exact interval of the accuracy
  difference (:func:`mcnemar`), not a percentile bootstrap when only a handful of items disagree.
* **Many comparisons** (every layer against the best, every head): Holm-adjusted p-values
  (:func:`holm`); a lesson says when it adjusts.
* **Resample the independent unit**: items that share something (a word's sentences, a pair, a
  sentence's tokens) are resampled as clusters (:func:`cluster_bootstrap_ci`); runs over seeds and
  test items resample both (:func:`seeds_items_ci`).
* **An accuracy** gets the exact Clopper-Pearson interval (:func:`accuracy_ci`), also when every
  item is right (the "rule of three", ``1 - 3/n``, is a one-sided bound: :func:`rule_of_three`).
* **Seeds**: the spread over seeds is reported as such (:class:`SeedSpread`: mean, SD and range
  over >= 5 seeds), never as a union of per-seed intervals.

Building blocks: :func:`quartiles`, :func:`bootstrap_ci` (percentile bootstrap), the paired and
unpaired differences, :class:`Interval` (``0.812 [0.743, 0.875]``). Everything is seeded, so a
lesson prints the same interval on every run.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch


def _as_array(values, name: str = "values") -> np.ndarray:
    if isinstance(values, torch.Tensor):
        values = values.detach().cpu().double().numpy()
    array = np.asarray(values, dtype=float)
    if array.size == 0:
        raise ValueError(f"{name} is empty: a spread needs at least one value.")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} holds NaN or infinite values.")
    return array


@dataclass(frozen=True)
class Interval:
    """An estimate with a ``level`` confidence interval ``[low, high]``."""

    estimate: float
    low: float
    high: float
    level: float = 0.95

    def overlaps(self, other: "Interval") -> bool:
        """True when the two intervals share any value: then the two estimates are not
        called different."""
        return self.low <= other.high and other.low <= self.high

    def contains(self, value: float) -> bool:
        return self.low <= value <= self.high

    def format(self, fmt: str = ".3f") -> str:
        return f"{self.estimate:{fmt}} [{self.low:{fmt}}, {self.high:{fmt}}]"

    def percent(self, digits: int = 1) -> str:
        """``81.2% [74.3, 87.5]``."""
        return f"{100 * self.estimate:.{digits}f}% [{100 * self.low:.{digits}f}, {100 * self.high:.{digits}f}]"

    def __str__(self) -> str:
        return self.format()


def quartiles(samples, axis: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(q25, median, q75)`` of ``samples`` along ``axis`` (e.g. ``[n_tokens, L + 1]`` -> per layer)."""
    array = _as_array(samples, "samples")
    q25, med, q75 = np.percentile(array, [25, 50, 75], axis=axis)
    return q25, med, q75


def bootstrap_ci(values, statistic=np.mean, *, n_boot: int = 1000, level: float = 0.95, seed: int = 0,
                 axis: int = 0):
    """Percentile bootstrap interval of ``statistic`` over the items along ``axis``.

    ``values`` may be ``[n]`` (one interval) or ``[n, k]`` (one interval per column, e.g. per
    layer, resampling the same items for every column). Returns an :class:`Interval`, or a list
    of them for 2-D input.
    """
    if not 0 < level < 1:
        raise ValueError(f"level must lie strictly between 0 and 1, got {level!r}.")
    if isinstance(n_boot, bool) or not isinstance(n_boot, int) or n_boot < 100:
        raise ValueError(f"n_boot must be an int >= 100, got {n_boot!r}.")
    array = np.moveaxis(_as_array(values), axis, 0)
    if array.ndim > 2:
        raise ValueError(f"values must be 1-D or 2-D, got shape {array.shape}.")
    n = array.shape[0]
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n, size=(n_boot, n))
    boots = np.stack([statistic(array[i], axis=0) for i in idx])  # [n_boot] or [n_boot, k]
    alpha = (1 - level) / 2
    low, high = np.quantile(boots, [alpha, 1 - alpha], axis=0)
    est = statistic(array, axis=0)
    if array.ndim == 1:
        return Interval(float(est), float(low), float(high), level)
    return [Interval(float(e), float(lo), float(hi), level) for e, lo, hi in zip(est, low, high)]


def _binary(values, name: str) -> np.ndarray:
    array = _as_array(values.float() if isinstance(values, torch.Tensor) else np.asarray(values, dtype=float), name)
    if array.ndim != 1 or not np.isin(array, (0.0, 1.0)).all():
        raise ValueError(f"{name} must be a 1-D vector of 0/1 (or True/False) outcomes, one per test item.")
    return array


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
    """Accuracy of a 0/1 (or bool) vector of per-item outcomes with its exact 95% Clopper-Pearson
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


def paired_difference_ci(a, b, *, n_boot: int = 1000, level: float = 0.95, seed: int = 0) -> Interval:
    """Mean of ``a - b`` over the same items (e.g. two classifiers' 0/1 outcomes on one test set)
    with a bootstrap interval that resamples the items once for both: the right test for two
    numbers measured on the same items. The two differ when the interval excludes 0
    (:func:`differs`)."""
    a, b = _as_array(a, "a").astype(float), _as_array(b, "b").astype(float)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"a and b must be 1-D and measured on the same items; got shapes {a.shape} and {b.shape}.")
    return bootstrap_ci(a - b, n_boot=n_boot, level=level, seed=seed)


def paired_t_interval(a, b, level: float = 0.95) -> Interval:
    """Mean of ``a - b`` over the same items with a Student-t interval (``n - 1`` degrees of
    freedom). With a dozen items the percentile bootstrap is too narrow; this interval is the
    small-sample check beside it."""
    from scipy.stats import t as student_t

    d = (torch.as_tensor(a, dtype=torch.float64, device="cpu")  # cpu: float64 statistics on results
         - torch.as_tensor(b, dtype=torch.float64, device="cpu"))  # cpu: float64 statistics on results
    if d.ndim != 1 or d.numel() < 2:
        raise ValueError(f"a and b must be 1-D, on the same >= 2 items; got {tuple(d.shape)}.")
    n, mean = d.numel(), float(d.mean())
    half = float(student_t.ppf(0.5 + level / 2, n - 1)) * float(d.std()) / n ** 0.5
    return Interval(mean, mean - half, mean + half, level)


def cautious_paired_difference_ci(a, b) -> Interval:
    """The cautious paired interval of ``mean(a - b)``: the union of the percentile bootstrap
    (:func:`paired_difference_ci`) and the Student-t interval
    (:func:`paired_t_interval`), so a handful of items cannot make it too narrow."""
    boot, tint = paired_difference_ci(a, b), paired_t_interval(a, b)
    return Interval(boot.estimate, min(boot.low, tint.low), max(boot.high, tint.high))


def unpaired_difference_ci(a, b, n_boot: int = 1000, seed: int = 0) -> Interval:
    """``mean(a) - mean(b)`` for two *different* sets of items, each resampled on its own
    (percentile bootstrap, 95 %)."""
    a = torch.as_tensor(a, dtype=torch.float64, device="cpu")  # cpu: float64 statistics on results
    b = torch.as_tensor(b, dtype=torch.float64, device="cpu")  # cpu: float64 statistics on results
    if a.ndim != 1 or b.ndim != 1 or len(a) < 2 or len(b) < 2:
        raise ValueError(f"a and b must be 1-D with >= 2 items each; got {tuple(a.shape)} and {tuple(b.shape)}.")
    gen = torch.Generator().manual_seed(seed)
    boots = (a[torch.randint(len(a), (n_boot, len(a)), generator=gen)].mean(1)  # cpu: seeded bootstrap indices
             - b[torch.randint(len(b), (n_boot, len(b)), generator=gen)].mean(1))  # cpu: seeded bootstrap indices
    low, high = torch.quantile(boots, torch.tensor([0.025, 0.975], dtype=torch.float64))  # cpu: quantile levels
    return Interval(float(a.mean() - b.mean()), float(low), float(high))


def differs(interval: Interval) -> bool:
    """True when a difference's interval excludes 0 (see :func:`paired_difference_ci`)."""
    return interval.low > 0 or interval.high < 0


def seeds_interval(values) -> Interval:  # kept for lessons 00-06 widgets; see SeedSpread for seeds
    """Mean over runs with different seeds and the range ``[min, max]`` of those runs (with a
    handful of seeds, the range is more honest than a normal-theory interval); ``level`` is 1.0
    to mark it as a range."""
    array = _as_array(values, "values")
    if array.ndim != 1 or array.size < 2:
        raise ValueError("give one value per seed, at least two seeds.")
    return Interval(float(array.mean()), float(array.min()), float(array.max()), 1.0)


# ----------------------------------------------------------------------------- verdicts
@dataclass(frozen=True)
class Verdict:
    """The outcome of comparing A with B on a difference ``A - B``.

    ``kind`` is ``"higher"`` (A above B), ``"lower"``, ``"equivalent"`` (inside a margin stated
    before the measurement, by TOST) or ``"inconclusive"``; ``text`` says it in words with the
    numbers behind it.
    """

    kind: str
    text: str
    difference: Interval
    p_value: float | None = None
    margin: float | None = None

    @property
    def differs(self) -> bool:
        return self.kind in ("higher", "lower")

    def __str__(self) -> str:
        return self.text


def _fmt(value: float, percent: bool) -> str:
    return f"{100 * value:+.1f} pt" if percent else f"{value:+.3g}"


def verdict(difference: Interval, *, a: str = "A", b: str = "B", margin: float | None = None,
            equivalence_interval: Interval | None = None, p_value: float | None = None, alpha: float = 0.05,
            percent: bool = False) -> Verdict:
    """Turn the interval of ``A - B`` into a :class:`Verdict` by the course's rules.

    * ``p_value`` given (e.g. Holm-adjusted, or McNemar's): A and B differ when ``p < alpha``;
      otherwise they differ when the interval excludes 0;
    * not different, and a ``margin`` stated: "equivalent" when the ``equivalence_interval`` (the
      90% interval, for TOST at 5%; ``difference`` itself if not given) lies inside
      ``(-margin, +margin)``; otherwise "inconclusive";
    * no margin: "inconclusive" -- never "no effect".
    """
    d = difference
    width = f"{_fmt(d.estimate, percent)} [{_fmt(d.low, percent)}, {_fmt(d.high, percent)}]"
    p_text = "" if p_value is None else f", p = {p_value:.2g}"
    differs_ = (p_value < alpha) if p_value is not None else (d.low > 0 or d.high < 0)
    if differs_ and d.estimate != 0:
        kind = "higher" if d.estimate > 0 else "lower"
        return Verdict(kind, f"{a} {kind} than {b}: {a} - {b} = {width}{p_text}", d, p_value, margin)
    if margin is not None:
        if not margin > 0:
            raise ValueError(f"margin must be > 0, got {margin!r}.")
        eq = equivalence_interval or d
        if -margin < eq.low and eq.high < margin:
            return Verdict("equivalent", f"{a} and {b} equivalent within +/-{_fmt(margin, percent)[1:]} (TOST, margin "
                           f"set beforehand): {a} - {b} = {width}{p_text}", d, p_value, margin)
        return Verdict("inconclusive", f"inconclusive: {a} - {b} = {width}{p_text}; neither a difference nor "
                       f"equivalence within +/-{_fmt(margin, percent)[1:]}", d, p_value, margin)
    return Verdict("inconclusive", f"inconclusive: {a} - {b} = {width}{p_text}; the interval includes 0 "
                   "(no equivalence margin was set, so this is not evidence of no difference)", d, p_value, None)


@dataclass(frozen=True)
class McNemar:
    """Exact McNemar test of two classifiers' right/wrong outcomes on the same items."""

    n: int
    a_only: int  # items only A gets right
    b_only: int  # items only B gets right
    p_value: float  # two-sided exact binomial test on the a_only + b_only discordant items
    difference: Interval  # accuracy(A) - accuracy(B), exact 95% interval given the discordant count
    difference90: Interval  # the same at 90%, for an equivalence test (TOST at 5%)

    def verdict(self, a: str = "A", b: str = "B", margin: float | None = None, p_value: float | None = None) -> Verdict:
        """:func:`verdict` with this test's p-value (or an adjusted one, e.g. from :func:`holm`)."""
        p = self.p_value if p_value is None else p_value
        v = verdict(self.difference, a=a, b=b, margin=margin, equivalence_interval=self.difference90, p_value=p,
                    percent=True)
        extra = f" ({self.a_only} items only {a} gets right, {self.b_only} only {b}, of {self.n})"
        return Verdict(v.kind, v.text + extra, v.difference, v.p_value, v.margin)


def mcnemar(a_correct, b_correct) -> McNemar:
    """Exact McNemar test: ``a_correct`` and ``b_correct`` are per-item 0/1 outcomes on the same
    items. Only the items where they disagree carry information: under "same accuracy" each is
    equally likely to favour A or B (a sign test). The interval of the accuracy difference is the
    Clopper-Pearson interval of that share, conditional on the number of disagreements, mapped to
    ``(a_only - b_only) / n``; it excludes 0 exactly when the test rejects at 5%. When no item differs,
    the interval is +/- the exact upper bound on the share of items that could differ (0 seen in n)."""
    from scipy.stats import binomtest

    a, b = _binary(a_correct, "a_correct"), _binary(b_correct, "b_correct")
    if a.shape != b.shape:
        raise ValueError(f"a_correct and b_correct must be measured on the same items; got {a.shape} and {b.shape}.")
    n = a.size
    a_only, b_only = int(((a == 1) & (b == 0)).sum()), int(((a == 0) & (b == 1)).sum())
    m = a_only + b_only
    est = (a_only - b_only) / n
    if m == 0:
        # No item changed: the share of items that *could* change is still only bounded, by the exact
        # upper bound of 0 in n (1 - (alpha/2)^(1/n)); a zero-width interval would let any test set,
        # however small, claim equivalence.
        def unseen(level):
            u = 1 - ((1 - level) / 2) ** (1 / n)
            return Interval(0.0, -u, u, level)

        return McNemar(n, 0, 0, 1.0, unseen(0.95), unseen(0.90))
    p = float(binomtest(a_only, m, 0.5).pvalue)

    def interval(level):
        share = clopper_pearson(a_only, m, level)
        return Interval(est, m * (2 * share.low - 1) / n, m * (2 * share.high - 1) / n, level)

    return McNemar(n, a_only, b_only, p, interval(0.95), interval(0.90))


def holm(p_values) -> np.ndarray:
    """Holm's step-down adjustment of ``p_values`` (any shape): the family-wise error rate of all
    the comparisons together stays at alpha. Returns adjusted p-values, same shape."""
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


def bootstrap_p_value(boots) -> float:
    """Two-sided bootstrap p-value of "the difference is 0" from bootstrap replicates of a difference:
    twice the smaller share of replicates on either side of 0 (at least ``1 / n_boot``)."""
    boots = _as_array(boots, "boots")
    below, above = float((boots <= 0).mean()), float((boots >= 0).mean())
    return float(min(1.0, max(2 * min(below, above), 1 / boots.size)))


def cluster_bootstrap_ci(values, clusters, *, n_boot: int = 2000, level: float = 0.95, seed: int = 0,
                         return_boots: bool = False):
    """Mean of ``values`` (``[n]`` or ``[n, k]``, e.g. per layer) with a percentile bootstrap that
    resamples whole **clusters** (``clusters[i]`` names item i's unit: its word, pair or sentence),
    so items that share a unit are never treated as independent. The mean over a resample is the
    item-weighted mean of the drawn clusters. Returns an :class:`Interval` (or one per column), and
    the replicates too with ``return_boots``."""
    array = _as_array(values)
    if array.ndim == 1:
        array = array[:, None]
        squeeze = True
    elif array.ndim == 2:
        squeeze = False
    else:
        raise ValueError(f"values must be 1-D or 2-D, got shape {array.shape}.")
    labels = np.asarray(clusters)
    if labels.shape != (array.shape[0],):
        raise ValueError(f"clusters must name one unit per item: {array.shape[0]} labels, got shape {labels.shape}.")
    units, index = np.unique(labels, return_inverse=True)
    if units.size < 2:
        raise ValueError("a cluster bootstrap needs at least two clusters.")
    sums = np.zeros((units.size, array.shape[1]))
    np.add.at(sums, index, array)
    counts = np.bincount(index, minlength=units.size).astype(float)
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, units.size, size=(n_boot, units.size))
    weights = np.stack([np.bincount(d, minlength=units.size) for d in draws]).astype(float)  # [n_boot, units]
    boots = (weights @ sums) / (weights @ counts)[:, None]  # [n_boot, k]
    alpha = (1 - level) / 2
    low, high = np.quantile(boots, [alpha, 1 - alpha], axis=0)
    est = array.mean(0)
    out = [Interval(float(e), float(lo), float(hi), level) for e, lo, hi in zip(est, low, high)]
    out = out[0] if squeeze else out
    boots = boots[:, 0] if squeeze else boots
    return (out, boots) if return_boots else out


def seeds_items_ci(values, *, n_boot: int = 2000, level: float = 0.95, seed: int = 0, return_boots: bool = False):
    """Mean of ``values[seed, item]`` (e.g. 0/1 outcomes, or the paired difference of two strategies
    run with the same seeds on the same test items) with a two-way bootstrap: seeds and items are
    both resampled, because a new run would draw new seeds and a new test set. Returns an
    :class:`Interval` (and the replicates with ``return_boots``)."""
    array = _as_array(values)
    if array.ndim != 2 or array.shape[0] < 2 or array.shape[1] < 2:
        raise ValueError(f"values must be [n_seeds >= 2, n_items >= 2], got shape {array.shape}.")
    s, n = array.shape
    rng = np.random.default_rng(seed)
    ws = np.stack([np.bincount(rng.integers(0, s, s), minlength=s) for _ in range(n_boot)]).astype(float)
    wi = np.stack([np.bincount(rng.integers(0, n, n), minlength=n) for _ in range(n_boot)]).astype(float)
    boots = np.einsum("bs,sn,bn->b", ws, array, wi) / (s * n)
    alpha = (1 - level) / 2
    low, high = np.quantile(boots, [alpha, 1 - alpha])
    out = Interval(float(array.mean()), float(low), float(high), level)
    return (out, boots) if return_boots else out


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
