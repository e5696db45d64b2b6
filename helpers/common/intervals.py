"""Intervals and families: the parts every verdict of the course is built from (re-exported by
:mod:`helpers.common.stats`, where the rules are written out).

* :class:`Interval` -- an estimate with its interval, level and p;
* families -- :func:`family_level` (Bonferroni: each of ``m`` comparisons read off its
  ``1 - alpha / m`` interval), :func:`equivalence_level` (``1 - 2 alpha / m``), :func:`bonferroni`,
  :func:`extreme_family` (every pair when the extreme is picked by the data), :func:`holm`;
* exact intervals -- :func:`clopper_pearson` and :func:`accuracy_ci` (an accuracy), :func:`rule_of_three`,
  :func:`sign_test_p`;
* :func:`bootstrap_size` and :func:`format_p` (a p at its floor printed as a bound).
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
