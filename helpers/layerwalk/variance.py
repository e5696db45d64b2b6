"""Lesson 07 (:mod:`helpers.layerwalk`): a two-way variance split: how much of the vectors' variance lies
between layers and how much within (:func:`variance_split`, :func:`variance_split_ci`,
:data:`WITHIN_LAYER`; :func:`share_explained_by_layer`).
"""

from __future__ import annotations

import numpy as np
import torch

from helpers.common.stats import Interval, Replicates, unit_weights


VARIANCE_PARTS = ("layer", "token", "interaction")


WITHIN_LAYER = "within a layer"  # token + interaction: how much lengths differ between the tokens of one layer


def variance_split(values) -> dict[str, float]:
    """Two-way split of the variance of ``values [N, L + 1]`` (one value per token and layer):
    the shares of the total sum of squares due to the **layer** (the layer means), the **token**
    (each token's mean over the layers) and their **interaction** (what is left: tokens that are
    long at some layers and short at others). The three add up to 1. A forward pass is
    deterministic, so the interaction is no noise: it is real token-by-layer structure, and
    token + interaction (``1 - layer``) is how much lengths differ between the tokens *of one
    layer*."""
    values = torch.as_tensor(values, dtype=torch.float64, device="cpu")  # cpu: float64 statistics on results
    if values.ndim != 2 or values.numel() < 2:
        raise ValueError(f"values must be [n_tokens, layers], got shape {tuple(values.shape)}.")
    grand = values.mean()
    total = ((values - grand) ** 2).sum()
    if total <= 0:
        return {"layer": 0.0, "token": 0.0, "interaction": 0.0}
    layer = values.shape[0] * ((values.mean(dim=0) - grand) ** 2).sum() / total
    token = values.shape[1] * ((values.mean(dim=1) - grand) ** 2).sum() / total
    return {"layer": float(layer), "token": float(token), "interaction": float(1 - layer - token)}


def _weighted_split(v: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``[B, 3]`` shares (layer, token, interaction) of :func:`variance_split` for the rows of
    ``v [N, K]`` weighted by each row of ``w [B, N]`` (a bootstrap draw: how often each row was
    drawn), all at once."""
    K = v.shape[1]
    W = w.sum(axis=1)  # [B]
    means = (w @ v) / W[:, None]  # [B, K] layer means
    grand = means.mean(axis=1)  # [B]
    total = w @ (v ** 2).sum(axis=1) - W * K * grand ** 2
    layer = W * ((means - grand[:, None]) ** 2).sum(axis=1)
    rows = v.mean(axis=1)
    token = K * (w @ rows ** 2 - W * grand ** 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.stack([layer, token, total - layer - token], axis=1) / total[:, None]
    return np.where(total[:, None] > 0, out, 0.0)


def variance_split_replicates(values, n_boot: int = 2000, seed: int = 0, clusters=None) -> Replicates:
    """Bootstrap replicates of the three parts of :func:`variance_split` (columns in the order of
    :data:`VARIANCE_PARTS`), resampling tokens (rows, each keeping its layers) or whole ``clusters``
    (e.g. :func:`cluster_labels`: sentences), the same draws for the three parts."""
    v = torch.as_tensor(values, dtype=torch.float64, device="cpu").numpy()  # cpu: float64 statistics on results
    if v.ndim != 2 or v.shape[0] < 2:
        raise ValueError(f"values must be [n_tokens >= 2, layers], got shape {tuple(v.shape)}.")
    if isinstance(n_boot, bool) or not isinstance(n_boot, int) or n_boot < 100:
        raise ValueError(f"n_boot must be an int >= 100, got {n_boot!r}.")
    labels = np.arange(v.shape[0]) if clusters is None else np.asarray(clusters)
    if labels.shape != (v.shape[0],):
        raise ValueError(f"clusters must name one unit per item: {v.shape[0]} labels, got shape {labels.shape}.")
    units, index = np.unique(labels, return_inverse=True)
    if units.size < 2:
        raise ValueError("a cluster bootstrap needs at least two clusters.")
    weights = unit_weights(units.size, n_boot, seed)[:, index]  # [B, N]: each row weighs its unit's count
    est = variance_split(v)
    return Replicates(np.array([est[p] for p in VARIANCE_PARTS]), _weighted_split(v, weights), int(units.size),
                      "sentences" if clusters is not None else "tokens")


def variance_split_ci(values, n_boot: int = 2000, level: float = 0.95, seed: int = 0,
                      clusters=None) -> dict[str, Interval]:
    """:func:`variance_split` with an interval per part (the course's bootstrap rule,
    :class:`~helpers.common.stats.Replicates`), resampling tokens or whole ``clusters``, the same
    draws for every part; the key :data:`WITHIN_LAYER` adds token + interaction (``1 - layer``)."""
    reps = variance_split_replicates(values, n_boot=n_boot, seed=seed, clusters=clusters)
    within = Replicates(reps.estimate[1:].sum(keepdims=True), reps.boots[:, 1:].sum(axis=1), reps.n_units, reps.unit)
    out = dict(zip(VARIANCE_PARTS, reps.intervals(level)))
    out[WITHIN_LAYER] = within.interval(level)
    return out


def share_explained_by_layer(values) -> float:
    """Fraction of the variance of ``values [N, L + 1]`` (all tokens, all layers) explained by
    the layer alone (eta squared: between-layer variance over total variance; the ``"layer"``
    part of :func:`variance_split`)."""
    return variance_split(values)["layer"]


def share_explained_by_layer_ci(values, n_boot: int = 1000, level: float = 0.95, seed: int = 0,
                                clusters=None) -> Interval:
    """:func:`share_explained_by_layer` with a percentile bootstrap interval over the tokens
    (rows of ``values [N, L + 1]``; each replicate keeps a token's layers together), or over whole
    ``clusters`` (one label per row, e.g. :func:`cluster_labels`: the tokens of one sentence are not
    independent, so the sentence is the unit to resample): the ``"layer"`` part of
    :func:`variance_split_ci`."""
    return variance_split_ci(values, n_boot, level, seed, clusters)["layer"]
