"""Lesson 12 figures: the two loss curves, fill-mask accuracy against the unigram baseline per
checkpoint, and a per-layer measure per checkpoint ("the layers forming")."""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np

from helpers.common.style import FIG_WIDTH_IN, HIGHLIGHT, NORMAL, layer_labels, new_axes
from helpers.pretrain.compute import running_mean


def plot_losses(run, window: int = 20, vocab_size: int | None = None, axes=None):
    """Masked-LM and next-sentence loss per step (faint) and their running mean over ``window``
    steps; the checkpoints as dotted lines; chance levels (``ln V`` for a uniform guess over the
    vocabulary, ``ln 2`` for next-sentence) as dashed lines. Returns the two axes."""
    if axes is None:
        _, axes = plt.subplots(1, 2, figsize=(FIG_WIDTH_IN, 3.2))  # the page's column
    steps = np.arange(1, len(run.mlm_loss) + 1)
    for ax, values, name, chance, label in (
            (axes[0], run.mlm_loss, "masked-LM loss", math.log(vocab_size) if vocab_size else None, "ln V (uniform)"),
            (axes[1], run.nsp_loss, "next-sentence loss", math.log(2), "ln 2 (a coin)")):
        ax.plot(steps, values, color=NORMAL, alpha=0.25, lw=0.8, label="per step")
        ax.plot(steps, running_mean(values, window), color=NORMAL, lw=1.8, label=f"mean of last {window}")
        if chance is not None:
            ax.axhline(chance, color="grey", ls="--", lw=1, label=label)
        for s in run.checkpoints:
            ax.axvline(s, color=HIGHLIGHT, ls=":", lw=1)
        ax.set(xlabel="training step", ylabel="cross-entropy (nats)", title=f"{name} per training step")
        ax.legend(loc="upper right")
    axes[0].figure.tight_layout()
    return axes


def plot_fill_mask(steps, model_acc, base_acc, k: int, ax=None):
    """Top-``k`` accuracy on held-out [MASK] positions per checkpoint (95 % intervals, pairs
    resampled), with the unigram-frequency baseline. ``model_acc``: one Interval per step."""
    ax = new_axes(ax, figsize=(4.6, 3.2))
    x = np.arange(len(steps))
    est = np.array([a.estimate for a in model_acc])
    err = np.array([[a.estimate - a.low for a in model_acc], [a.high - a.estimate for a in model_acc]])
    ax.errorbar(x, est, yerr=err, marker="o", color=NORMAL, capsize=3, label="tiny BERT")
    ax.axhspan(base_acc.low, base_acc.high, color="grey", alpha=0.25, lw=0)
    ax.axhline(base_acc.estimate, color="grey", ls="--", lw=1, label=f"unigram baseline (top {k} most frequent)")
    ax.set_xticks(x, [str(s) for s in steps])
    ax.set(xlabel="training step (checkpoint)", ylabel=f"top-{k} accuracy", ylim=(0, max(0.05, est.max() * 1.25 + 0.02,
                                                                                           base_acc.high * 1.25)),
           title=f"fill-mask top-{k} accuracy on held-out text")
    ax.legend(loc="upper left")
    return ax


def plot_by_layer(per_step: dict, ylabel: str, title: str, baseline=None, ax=None):
    """One line per checkpoint over layers 0 (embeddings) .. L, with 95 % interval bands.
    ``per_step`` maps step -> list of Intervals (one per layer)."""
    ax = new_axes(ax, figsize=(5.2, 3.3))
    cmap = plt.get_cmap("viridis")
    steps = sorted(per_step)
    for i, s in enumerate(steps):
        ivs = per_step[s]
        x = np.arange(len(ivs))
        color = cmap(i / max(1, len(steps) - 1) * 0.9)
        ax.plot(x, [v.estimate for v in ivs], marker="o", ms=3, color=color, label=f"step {s}")
        ax.fill_between(x, [v.low for v in ivs], [v.high for v in ivs], color=color, alpha=0.2, lw=0)
    if baseline is not None:
        ax.axhline(baseline, color="grey", ls="--", lw=1, label="unigram baseline")
    n = len(per_step[steps[0]])
    ax.set_xticks(np.arange(n), layer_labels(n))
    ax.set(xlabel="layer", ylabel=ylabel, title=title)
    ax.legend(loc="best", title="checkpoint")
    return ax
