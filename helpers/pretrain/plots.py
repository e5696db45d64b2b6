"""Lesson 05 figures: the two loss curves, fill-mask accuracy against the unigram baseline per
checkpoint, and a per-layer measure per checkpoint ("the layers forming")."""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np

from helpers.common.style import FIG_WIDTH_IN, HIGHLIGHT, NORMAL, end_labels, layer_labels, legend_below, new_axes
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
    axes[0].figure.tight_layout()
    for ax in axes:  # under the axes: over them, a legend hides the chance line and the spikes
        legend_below(ax, ncol=2)
    return axes


NULL_COLORS = ("#7f7f7f", "#b07aa1", "#9c755f")  # one fixed colour per guesser without a model


def _null_lines(ax, nulls: dict, x_end: float) -> None:
    """Dashed horizontal lines for the guessers without a model, named at their right end."""
    colors = {}
    for (name, value), color in zip(nulls.items(), NULL_COLORS):
        ax.axhline(value, color=color, ls="--", lw=1)
        colors[name] = color
    if nulls:
        end_labels(ax, x_end, dict(nulls), colors)


def plot_fill_mask(steps, model_acc, nulls: dict, k: int, ax=None):
    """Top-``k`` accuracy on held-out hidden words per checkpoint (``model_acc``: one Interval per
    step), with the guessers without a model (``nulls``: name -> accuracy on the same words) as
    dashed lines named at their right end."""
    ax = new_axes(ax, figsize=(4.6, 3.2))
    x = np.arange(len(steps))
    est = np.array([a.estimate for a in model_acc])
    err = np.array([[a.estimate - a.low for a in model_acc], [a.high - a.estimate for a in model_acc]])
    ax.errorbar(x, est, yerr=err, marker="o", color=NORMAL, capsize=3)
    ax.set_xticks(x, [str(s) for s in steps])
    top = max([a.high for a in model_acc] + list(nulls.values()) + [0.05])
    ax.set(xlabel="training step (checkpoint)", ylabel=f"top-{k} accuracy", ylim=(0, top * 1.15),
           title=f"fill-mask top-{k} accuracy on held-out text")
    _null_lines(ax, nulls, x[-1] + 0.25)
    return ax


def plot_by_layer(per_step: dict, ylabel: str, title: str, baselines: dict | None = None, ax=None):
    """One line per checkpoint over layers 0 (embeddings) .. L, with 95 % interval bands;
    ``per_step`` maps step -> list of Intervals (one per layer); ``baselines`` (name -> value)
    are drawn as dashed lines named at their right end; the checkpoints' legend sits under the
    axes, never over the lines."""
    ax = new_axes(ax, figsize=(5.2, 3.6))
    cmap = plt.get_cmap("viridis")
    steps = sorted(per_step)
    for i, s in enumerate(steps):
        ivs = per_step[s]
        x = np.arange(len(ivs))
        color = cmap(i / max(1, len(steps) - 1) * 0.9)
        label = f"step {s:,}" if isinstance(s, (int, np.integer)) else str(s)
        ax.plot(x, [v.estimate for v in ivs], marker="o", ms=3, color=color, label=label)
        ax.fill_between(x, [v.low for v in ivs], [v.high for v in ivs], color=color, alpha=0.2, lw=0)
    n = len(per_step[steps[0]])
    ax.set_xticks(np.arange(n), layer_labels(n))
    ax.set(xlabel="layer", ylabel=ylabel, title=title)
    if baselines:
        _null_lines(ax, baselines, n - 1 + 0.15)
    ax.figure.tight_layout()
    if len(steps) > 1:  # one line needs no legend: the title names it
        legend_below(ax, ncol=min(4, len(steps)), title="checkpoint")
    return ax


def plot_beside_longer_run(ours: dict, theirs: dict, recipe: dict | None = None,
                           recipe_label: str = "same recipe, longer", ax=None):
    """Held-out masked-LM loss as a share of ln V against tokens seen (log scale): ``theirs`` (a
    longer run's log, tokens -> share) as a grey line, ``recipe`` (the stored long run of the
    learner's own recipe, tokens -> share) as a blue line with dots, ``ours`` (tokens -> share,
    one per checkpoint) as orange dots. Points at 0 tokens (step 0) cannot sit on a log axis: they
    are left out, and all start at a share near 1 by construction. Each line is named at its end."""
    ax = new_axes(ax, figsize=(5.2, 3.4))
    t = sorted(k for k in theirs if k > 0)
    ax.plot(t, [theirs[k] for k in t], color="grey", lw=1.6)
    ax.annotate("course-mini", (t[-1], theirs[t[-1]]), xytext=(-4, 8), textcoords="offset points", ha="right",
                fontsize=8, color="grey")
    if recipe:
        r = sorted(k for k in recipe if k > 0)
        ax.plot(r, [recipe[k] for k in r], "-o", color=NORMAL, ms=4, lw=1.4)
        ax.annotate(recipe_label, (r[0], recipe[r[0]]), xytext=(6, 6),  # its start: clear of the dots
                    textcoords="offset points", ha="left", fontsize=8, color=NORMAL)
    o = sorted(k for k in ours if k > 0)
    ax.plot(o, [ours[k] for k in o], "o", color=HIGHLIGHT, ms=6)
    ax.set_xscale("log")
    ax.set(xlabel="training tokens seen (log scale)", ylabel="held-out loss / ln V",
           title="masked-LM loss against tokens seen")
    if o:
        ax.annotate("your run", (o[-1], ours[o[-1]]), xytext=(0, -14), textcoords="offset points", ha="center",
                    va="center", fontsize=8, color=HIGHLIGHT)
    ax.set_ylim(0, 1.05)
    return ax
