"""Lesson 07 figures: confusion matrix, probe accuracy per layer, logits per class."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

import helpers.common.style  # noqa: F401 - the course figure style


def plot_confusion(cm, names, ax=None):
    """Heatmap of a confusion matrix with class names on both axes; returns the axes."""
    cm = np.asarray(cm)
    if cm.ndim != 2 or cm.shape[0] != cm.shape[1] or cm.shape[0] != len(names):
        raise ValueError(f"cm must be square with one row per name ({len(names)}), got shape {cm.shape}.")
    if ax is None:
        _, ax = plt.subplots(figsize=(5.5, 4.5))
    im = ax.imshow(cm, cmap="Blues")
    ax.set_xticks(range(len(names)), names, rotation=60, ha="right", fontsize=8)
    ax.set_yticks(range(len(names)), names, fontsize=8)
    for i, j in zip(*np.nonzero(cm)):
        ax.text(j, i, str(cm[i, j]), ha="center", va="center", fontsize=7,
                color="white" if cm[i, j] > cm.max() / 2 else "black")
    ax.set_xlabel("predicted"); ax.set_ylabel("true")
    ax.figure.colorbar(im, ax=ax, fraction=0.046)
    ax.figure.tight_layout()
    return ax


def plot_probe_curves(curves: dict, ax=None, chance: float | None = None):
    """One line per pooling: test accuracy against layer (0 = embeddings)."""
    if not curves:
        raise ValueError("curves must map a label to a list of accuracies, one per layer.")
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 3))
    for label, accs in curves.items():
        ax.plot(range(len(accs)), accs, marker="o", label=label)
    n = len(next(iter(curves.values())))
    ax.set_xticks(range(n), ["emb"] + [str(i) for i in range(1, n)])
    if chance is not None:
        ax.axhline(chance, color="gray", ls=":", label="chance")
    ax.set_xlabel("layer"); ax.set_ylabel("test accuracy"); ax.set_ylim(0, 1.02)
    ax.legend(fontsize=8)
    ax.figure.tight_layout()
    return ax


def plot_logits(logits, names, ax=None):
    """Bar per class; the predicted class is highlighted. Returns ``(ax, bars)``."""
    logits = np.asarray(logits, dtype=float)
    if logits.shape != (len(names),):
        raise ValueError(f"logits must have one value per class ({len(names)}), got shape {logits.shape}.")
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 3))
    bars = ax.bar(range(len(names)), logits, color="tab:blue")
    bars[int(logits.argmax())].set_color("tab:orange")
    ax.set_xticks(range(len(names)), names, rotation=45, ha="right", fontsize=8)
    ax.axhline(0, color="black", lw=0.5)
    ax.set_ylabel("logit")
    ax.figure.tight_layout()
    return ax, bars
