"""Lesson 08 (:mod:`helpers.attention`): naming "the" layer, and per-layer and per-head comparisons.

* layers compared paired on the same sentences, Bonferroni over the layers, the small-sample rule
  (:func:`compare_layers`, :func:`compare_unpaired_layers`, :func:`extreme_layer`,
  :func:`paired_p_values`), each layer against a floor (:func:`above_threshold`);
* per head, against a floor stated first (:func:`heads_above`, :func:`deep_heads_verdict`,
  :func:`deep_layers_verdict`; :func:`head_key_share`, :func:`head_token_share`,
  :func:`head_key_ratio`);
* comparisons in plain words (:func:`compare_sentence`).
"""

from __future__ import annotations

import numpy as np
import torch

from helpers.common.stats import ALPHA, Interval, bootstrap_size, cluster_replicates, rank_layers, replicate_verdicts
from helpers.model.trace import check_traces


# -- naming "the" layer, and per-layer comparisons: paired, Bonferroni, the small-sample rule --------
# Every interval and p-value here comes from helpers/common/stats.py (Replicates: the percentile
# bootstrap, never narrower than the t interval, so a dozen inputs cannot make it too sure).

def paired_p_values(a, b, n_boot: int = 2000, seed: int = 0) -> np.ndarray:
    """Per column of ``a``, ``b`` (``[n_inputs, k]``, measured on the same inputs): the two-sided
    p-value of "mean(a - b) = 0" under the course's small-sample rule (the larger of the paired
    bootstrap's and the paired Student-t test's; :class:`~helpers.common.stats.Replicates`).
    Not adjusted: a family multiplies it (:func:`~helpers.common.stats.bonferroni`)."""
    a, b = _as_2d_float(a, "a"), _as_2d_float(b, "b")
    if a.shape != b.shape:
        raise ValueError(f"a and b must be measured on the same inputs and layers; got {a.shape} and {b.shape}.")
    return cluster_replicates(a - b, n_boot=n_boot, seed=seed).p_values()


def _as_2d_float(values, name: str) -> np.ndarray:
    array = torch.as_tensor(values, dtype=torch.float64).cpu().numpy()  # cpu: float64 statistics on results
    if array.ndim != 2 or array.shape[0] < 2:
        raise ValueError(f"{name} must be [n_inputs >= 2, layers], got shape {array.shape}.")
    return array


def extreme_layer(values, lowest: bool = False, alpha: float = ALPHA, return_p: bool = False):
    """``(index, tied)`` for ``values [n_inputs, layers]``: the column (0-based) with the highest
    (``lowest=True``: lowest) mean over the inputs, and every column a paired comparison does not
    show to differ from it -- the extreme column included
    (:func:`~helpers.common.stats.rank_layers`: the inputs resampled once for all columns, Bonferroni
    over every pair of columns since the extreme is picked by the data). ``tied`` says "not shown
    different", never "the same": name all of it, never one winner, when it holds more than one.
    ``return_p=True`` adds the adjusted p per column (1 for the extreme)."""
    ranking = rank_layers(_as_2d_float(values, "values"), lowest=lowest, alpha=alpha)
    return (ranking.extreme, ranking.tied, ranking.p_values) if return_p else (ranking.extreme, ranking.tied)


def compare_layers(a, b, alpha: float = ALPHA, labels: tuple[str, str] = ("A", "B")) -> dict:
    """Per layer, the paired difference ``a - b`` over the same inputs (``a``, ``b``:
    ``[n_inputs, L]``), as one family of ``L`` comparisons (Bonferroni):
    ``{"above": [...], "below": [...], "inconclusive": [...]}`` (1-based layers), ``"intervals"``
    (each at ``1 - alpha / L``, the level the verdict is read from), ``"verdicts"`` and ``"p_adjusted"``.
    "inconclusive" is not "no difference". ``labels`` name ``a`` and ``b`` in the verdicts' text."""
    a, b = _as_2d_float(a, "a"), _as_2d_float(b, "b")
    if a.shape != b.shape:
        raise ValueError(f"a and b must be measured on the same inputs and layers; got {a.shape} and {b.shape}.")
    reps = cluster_replicates(a - b, n_boot=bootstrap_size(a.shape[1], alpha))
    return _per_layer(reps, alpha, labels)


def _per_layer(reps, alpha: float, labels: tuple[str, str] = ("A", "B")) -> dict:
    L = reps.k
    verdicts = replicate_verdicts(reps, [f"{labels[0]} (layer {l})" for l in range(1, L + 1)], b=labels[1],
                                  alpha=alpha)
    out = {"above": [], "below": [], "inconclusive": [], "intervals": [v.difference for v in verdicts],
           "verdicts": verdicts, "p_adjusted": [float(v.p_value) for v in verdicts]}
    for l, v in enumerate(verdicts, start=1):
        out[{"higher": "above", "lower": "below"}.get(v.kind, "inconclusive")].append(l)
    return out


def compare_unpaired_layers(a, b, n_boot: int | None = None, seed: int = 0, alpha: float = ALPHA) -> dict:
    """Per layer, ``mean(a) - mean(b)`` for two *different* sets of inputs (``a [n_a, L]``,
    ``b [n_b, L]``), each set resampled on its own (once for all layers; the small-sample rule
    counts the smaller set), one family of ``L`` comparisons: the same keys as :func:`compare_layers`."""
    a, b = _as_2d_float(a, "a"), _as_2d_float(b, "b")
    if a.shape[1] != b.shape[1]:
        raise ValueError(f"a and b must have the same layers; got {a.shape[1]} and {b.shape[1]}.")
    n_boot = bootstrap_size(a.shape[1], alpha) if n_boot is None else n_boot
    ra = cluster_replicates(a, n_boot=n_boot, seed=seed)
    rb = cluster_replicates(b, n_boot=n_boot, seed=seed + 1)
    return _per_layer(ra.minus(rb), alpha)


def above_threshold(values, threshold: float, alpha: float = ALPHA, seed: int = 0) -> dict:
    """Which columns of ``values [n_inputs, k]`` (layers, or every head of every layer flattened)
    have a mean surely above ``threshold``: a one-sided test per column at ``alpha / k``
    (Bonferroni), read off the ``1 - 2 alpha / k`` interval (its lower end is the one-sided bound):
    "above" when that lower end is above the threshold. Returns ``{"above": [0-based columns],
    "intervals": [...], "p_adjusted": [one-sided, Bonferroni-adjusted]}``."""
    array = _as_2d_float(values, "values")
    k = array.shape[1]
    reps = cluster_replicates(array - threshold, n_boot=bootstrap_size(k, alpha), seed=seed)
    ivs = reps.intervals(1 - 2 * alpha / k)
    one_sided = np.where(reps.estimate > 0, reps.p_values() / 2, 1 - reps.p_values() / 2)
    shifted = [Interval(iv.estimate + threshold, iv.low + threshold, iv.high + threshold, iv.level) for iv in ivs]
    return {"above": [j for j in range(k) if ivs[j].low > 0], "intervals": shifted,
            "p_adjusted": [float(p) for p in np.minimum(1.0, one_sided * k)]}


def head_key_share(traces, key: int = 0) -> torch.Tensor:
    """Each head's mean attention on position ``key`` (0: [CLS]), over all queries of an input:
    ``[n_traces, L, heads]``, a share of the head's attention (0 to 1)."""
    traces = check_traces(traces)
    for t in traces:
        t.check_token(key)
    return torch.stack([torch.stack(t.attentions)[..., key].mean(-1) for t in traces])


def head_token_share(traces, tokens=(".", ",")) -> tuple[torch.Tensor, torch.Tensor]:
    """Each head's mean attention (over all queries) on the keys whose token is one of ``tokens``
    (default: periods and commas, Clark et al.'s 2019 third class): ``[n_traces, L, heads]``, and
    the uniform share of those keys per input, ``count / n`` (``[n_traces]``)."""
    traces = check_traces(traces)
    shares, uniform = [], []
    for t in traces:
        mask = torch.tensor([tok in tokens for tok in t.tokens], dtype=torch.float32, device=t.device)
        shares.append((torch.stack(t.attentions) @ mask).mean(-1))  # [L, heads]
        uniform.append(mask.mean())
    return torch.stack(shares), torch.stack(uniform)


def head_key_ratio(traces, key: int = 0) -> torch.Tensor:
    """:func:`head_key_share` divided by the uniform share ``1 / n`` of its input:
    ``[n_traces, L, heads]`` (1 = no more than evenly spread)."""
    traces = check_traces(traces)
    n = torch.tensor([float(t.seq_len) for t in traces], device=traces[0].device)
    return head_key_share(traces, key) * n[:, None, None]


def deep_layers_verdict(top: int, tied: list[int], above: list[int], n_layers: int) -> str:
    """Whether "the deep layers" hold a pattern, from :func:`extreme_layer`'s ``top`` and ``tied``
    (0-based) and ``above`` (1-based layers surely above the reference, :func:`above_threshold`):
    ``"holds"`` when every layer not shown different from the largest is in the upper half of the
    ``n_layers`` and the largest is surely above the reference; ``"does not hold"`` when none of
    them is in the upper half; otherwise ``"is not decided"``."""
    upper = [j for j in tied if j + 1 > n_layers / 2]
    if len(upper) == len(tied) and top + 1 in above:
        return "holds"
    return "does not hold" if not upper else "is not decided"


def heads_above(values, floor: float, alpha: float = ALPHA) -> dict:
    """Per head, is its mean of ``values [n_inputs, L, heads]`` (e.g. a share ÷ its uniform share)
    surely above ``floor``, an effect size stated before measuring? One-sided, Bonferroni over all
    ``L x heads`` heads (:func:`above_threshold`). Returns ``{"heads": [(layer, head), ...]`` (layers
    from 1), ``"per_layer": [count per layer]``, ``"intervals"`` and ``"p_adjusted"`` (flattened,
    column ``(layer - 1) * heads + head``)}."""
    array = torch.as_tensor(values, dtype=torch.float64).cpu()  # cpu: float64 statistics on results
    if array.ndim != 3:
        raise ValueError(f"values must be [n_inputs, layers, heads], got shape {tuple(array.shape)}.")
    n, L, A = array.shape
    test = above_threshold(array.reshape(n, L * A), floor, alpha=alpha)
    heads = [(j // A + 1, j % A) for j in test["above"]]
    return {"heads": heads, "per_layer": [sum(l == layer for l, _ in heads) for layer in range(1, L + 1)],
            "intervals": test["intervals"], "p_adjusted": test["p_adjusted"]}


MIN_HEADS = 3  # a per-head story needs at least this many qualifying heads (fixed before measuring)


def deep_heads_verdict(per_layer: list[int], alpha: float = 0.05) -> str:
    """Clark et al.'s "deep heads attend to X", per head, from the count of qualifying heads per
    layer (:func:`heads_above`): with fewer than :data:`MIN_HEADS` heads, ``"is not decided (it
    rests on N head(s))"``; otherwise an exact one-sided binomial test of "more of them sit in the
    upper half of the layers than an even spread over the layers would put there": ``"holds"``
    (p < ``alpha``), ``"does not hold"`` (none qualifies, or significantly more in the lower half),
    ``"is not decided"``."""
    from scipy.stats import binomtest

    L, total = len(per_layer), sum(per_layer)
    if total == 0:
        return "does not hold"
    if total < MIN_HEADS:
        return f"is not decided (it rests on {total} head{'s' if total > 1 else ''})"
    upper = sum(c for l, c in enumerate(per_layer, start=1) if l > L / 2)
    share = sum(1 for l in range(1, L + 1) if l > L / 2) / L  # the upper half's share of the layers
    if binomtest(upper, total, share, alternative="greater").pvalue < alpha:
        return "holds"
    if binomtest(upper, total, share, alternative="less").pvalue < alpha:
        return "does not hold"
    return "is not decided"


def compare_sentence(result: dict, more: str, less: str) -> str:
    """A :func:`compare_layers` result in plain words: "larger in layers 1, 2 and 3, smaller in layer
    6; we cannot tell in layer 4" (``more``/``less`` name the two directions)."""
    from helpers.layerwalk.compute import layers_phrase

    L = len(result["verdicts"])
    parts = []
    if result["above"]:
        parts.append(f"{more} in {'every layer' if len(result['above']) == L else layers_phrase(result['above'])}")
    if result["below"]:
        parts.append(f"{less} in {'every layer' if len(result['below']) == L else layers_phrase(result['below'])}")
    text = ", ".join(parts) if parts else "we cannot tell in any layer"
    if parts and result["inconclusive"]:
        text += f"; we cannot tell in {layers_phrase(result['inconclusive'])}"
    return text
