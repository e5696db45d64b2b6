"""Lesson 10 figure: what fine-tuning changed, layer by layer (CKA and relative weight change)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from helpers.common.stats import Interval
from helpers.common.style import layer_labels


def _intervals(values, name: str) -> list[Interval]:
    values = list(values)
    if not values or not all(isinstance(v, Interval) for v in values):
        raise ValueError(f"{name} must be a non-empty list of Interval, one per layer (0 = embeddings).")
    return values


def plot_layer_change(cka, weight_change, axes=None, whiskers=("range over the seeds", "range over the seeds")):
    """Left: linear CKA between the pre-trained and the fine-tuned token vectors of each layer
    (1 = unchanged up to rotation and scale). Right: relative weight change of each layer.
    Markers are the estimates; ``whiskers`` says, per panel, what the bars span (it is
    written under each title). Returns both axes."""
    cka, weight_change = _intervals(cka, "cka"), _intervals(weight_change, "weight_change")
    if len(cka) != len(weight_change):
        raise ValueError(f"cka and weight_change need one value per layer each, got {len(cka)} and {len(weight_change)}.")
    if len(whiskers) != 2 or not all(isinstance(w, str) and w for w in whiskers):
        raise ValueError("whiskers must be two non-empty strings: what the bars of each panel span.")
    if axes is None:
        _, axes = plt.subplots(1, 2, figsize=(9.0, 3.4))
    x = np.arange(len(cka))
    labels = layer_labels(len(cka))
    for ax, values, title, ylabel, note in (
        (axes[0], cka, "linear CKA, pre-trained vs fine-tuned", "CKA (1 = unchanged)", whiskers[0]),
        (axes[1], weight_change, "relative weight change ‖ΔW‖ / ‖W‖", "relative change", whiskers[1]),
    ):
        est = np.array([v.estimate for v in values])
        err = np.array([[v.estimate - v.low for v in values], [v.high - v.estimate for v in values]])
        ax.errorbar(x, est, yerr=err, marker="o", ms=4, capsize=3, lw=1.2)
        ax.set_xticks(x, labels)
        ax.set_xlabel("layer")
        ax.set_ylabel(ylabel)
        ax.set_title(f"{title}\n(whiskers: {note})")
    axes[0].set_ylim(0, 1.05)
    axes[1].set_ylim(0, None)
    axes[0].figure.tight_layout()
    return axes
