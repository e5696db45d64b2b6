"""Spreads and intervals for every per-layer story (lessons 04-10).

A number read off one token of one sentence says little; the lessons show each per-layer
statistic over many tokens or sentences with a spread:

* :func:`quartiles` -- median and interquartile band of a sample, per layer;
* :func:`bootstrap_ci` -- a percentile bootstrap interval for a statistic (default: the mean);
* :func:`accuracy_ci` -- an accuracy with a bootstrap interval over the test items (the rule of
  three when every item is right or every item wrong);
* :func:`paired_difference_ci`, :func:`differs` -- two measurements on the same items compared
  item by item (a paired bootstrap of the difference); :func:`cautious_paired_difference_ci`
  widens it to the Student-t interval (:func:`paired_t_interval`) for a handful of items;
* :func:`unpaired_difference_ci` -- two means measured on different items;
* :class:`Interval` -- an estimate with its interval, printed as ``0.812 [0.743, 0.875]``;
  two intervals that overlap are not called different (:meth:`Interval.overlaps`).

Everything is seeded, so a lesson prints the same interval on every run.
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


def accuracy_ci(correct, **kw) -> Interval:
    """Accuracy of a 0/1 (or bool) vector of per-item outcomes with a 95% interval over items.

    A percentile bootstrap, except when every item was right (or every item wrong): resampling
    then gives the same score every time, a zero-width interval that would look like certainty.
    The "rule of three" gives the approximate 95% bound instead: with ``n`` items, an error rate
    never observed may still be as large as ``3 / n`` (10/10 right: ``[70%, 100%]``).
    """
    array = _as_array(np.asarray(correct, dtype=float) if not isinstance(correct, torch.Tensor) else correct.float(),
                      "correct")
    if array.ndim != 1 or not np.isin(array, (0.0, 1.0)).all():
        raise ValueError("correct must be a 1-D vector of 0/1 (or True/False) outcomes, one per test item.")
    if array.min() == array.max():
        bound = min(1.0, 3 / array.size)
        return Interval(1.0, 1 - bound, 1.0) if array[0] == 1 else Interval(0.0, 0.0, bound)
    return bootstrap_ci(array, **kw)


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


def seeds_interval(values) -> Interval:
    """Mean over runs with different seeds and the range ``[min, max]`` of those runs (with a
    handful of seeds, the range is more honest than a normal-theory interval); ``level`` is 1.0
    to mark it as a range."""
    array = _as_array(values, "values")
    if array.ndim != 1 or array.size < 2:
        raise ValueError("give one value per seed, at least two seeds.")
    return Interval(float(array.mean()), float(array.min()), float(array.max()), 1.0)
