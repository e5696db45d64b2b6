"""Fine-tuning figures: the dev curves of every strategy (lesson 11) and what fine-tuning changed, layer by
layer (lesson 14: CKA, relative weight change, the swap-in test)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from helpers.common.stats import Interval
from helpers.common.style import FIG_WIDTH_IN, layer_labels, legend_below


def _intervals(values, name: str) -> list[Interval]:
    values = list(values)
    if not values or not all(isinstance(v, Interval) for v in values):
        raise ValueError(f"{name} must be a non-empty list of Interval, one per layer (0 = embeddings).")
    return values


def plot_layer_change(cka, weight_change, axes=None, whiskers=("range over the seeds", "range over the seeds")):
    """Top: linear CKA between the pre-trained and the fine-tuned token vectors of each layer
    (1 = unchanged up to rotation and scale). Bottom: relative weight change of each layer.
    Markers are the estimates; ``whiskers`` says, per panel, what the bars span (it is
    written under each title). Returns both axes."""
    cka, weight_change = _intervals(cka, "cka"), _intervals(weight_change, "weight_change")
    if len(cka) != len(weight_change):
        raise ValueError(f"cka and weight_change need one value per layer each, got {len(cka)} and {len(weight_change)}.")
    if len(whiskers) != 2 or not all(isinstance(w, str) and w for w in whiskers):
        raise ValueError("whiskers must be two non-empty strings: what the bars of each panel span.")
    if axes is None:
        _, axes = plt.subplots(2, 1, figsize=(FIG_WIDTH_IN, 5.4), sharex=True)
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
        ax.tick_params(labelbottom=True)
        ax.set_xlabel("layer")
        ax.set_ylabel(ylabel)
        ax.set_title(f"{title}\n(whiskers: {note})")
    axes[0].set_ylim(0, 1.05)
    axes[1].set_ylim(0, None)
    axes[0].figure.tight_layout()
    return axes


def plot_dev_panels(study, measure: str = "accuracy", ncols: int = 3):
    """Dev accuracy (or loss) from step 0 and after every epoch against optimiser steps, as small
    multiples: one panel per fine-tuning strategy (its draws as thin lines, a cross where early
    stopping kept the weights), the frozen probe's mean dev score dashed in every panel, all panels
    on one scale. Five strategies on one axes overprint; side by side each can be read. The curve
    flattening before the cross is what "converged" means here. Returns the figure."""
    from helpers.finetuning.compute import FROZEN

    if measure not in ("accuracy", "loss"):
        raise ValueError(f"measure must be 'accuracy' or 'loss', got {measure!r}.")
    column = 2 if measure == "accuracy" else 1
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    strategies = [(k, s) for k, s in enumerate(study.runs) if s != FROZEN]
    if not strategies:
        raise ValueError("the study has no fine-tuning strategy to draw (only the frozen probe).")
    rows = -(-len(strategies) // ncols)
    fig, axes = plt.subplots(rows, ncols, figsize=(FIG_WIDTH_IN, 2.3 * rows + 0.6), sharex=True, sharey=True,
                             squeeze=False)
    probe = (np.mean([r.dev_curve[-1][column] for r in study.runs[FROZEN]]) if FROZEN in study.runs else None)
    for ax, (k, strategy) in zip(axes.flat, strategies):
        color = colors[k % len(colors)]
        if probe is not None:
            ax.axhline(probe, color=colors[0], ls="--", lw=1.2)
        for run in study.runs[strategy]:
            steps = [pt[0] for pt in run.dev_curve]
            ax.plot(steps, [pt[column] for pt in run.dev_curve], color=color, lw=1.0, alpha=0.8)
            best = [pt[column] for pt in run.dev_curve if pt[0] == run.best_step]
            ax.plot([run.best_step], best, "x", color=color, ms=7, mew=1.8)
        ax.set_title(strategy, fontsize=9, color=color)
        ax.tick_params(labelbottom=True)
    for ax in axes.flat[len(strategies):]:
        ax.set_visible(False)
    for ax in axes[:, 0]:
        ax.set_ylabel(f"dev {measure}")
    for ax in axes[-1, :]:
        ax.set_xlabel("optimiser steps")
    if len(strategies) % ncols:  # the empty slot's neighbour above carries the x label too
        for ax in axes[-2, len(strategies) % ncols:] if rows > 1 else []:
            ax.set_xlabel("optimiser steps")
    fig.suptitle(f"dev {measure} per epoch, one panel per strategy, {len(study.seeds)} draws each\n"
                 + ("x: the weights kept; dashed: the frozen probe" if probe is not None else "x: the weights kept"),
                 fontsize=10)
    fig.tight_layout()
    return fig


def plot_swap_in(drops, ax=None, title: str = "swap-in test: one layer's pre-trained weights put back"):
    """Accuracy change (points) when the pre-trained weights of one depth are put back into the
    fine-tuned model, per depth (0 = embeddings), with 95% intervals (seeds x test items). Below 0:
    that layer's own fine-tuned change was needed by the rest of the fine-tuned model. Returns the axes."""
    drops = _intervals(drops, "drops")
    if ax is None:
        _, ax = plt.subplots(figsize=(FIG_WIDTH_IN, 3.4))
    x = np.arange(len(drops))
    est = np.array([100 * d.estimate for d in drops])
    err = np.array([[100 * (d.estimate - d.low) for d in drops], [100 * (d.high - d.estimate) for d in drops]])
    ax.bar(x, est, color="#7a9cc6", width=0.6)
    ax.errorbar(x, est, yerr=err, fmt="none", ecolor="black", capsize=3, lw=1)
    ax.axhline(0, color="black", lw=0.8)
    ax.set_xticks(x, layer_labels(len(drops)))
    ax.set_xlabel("layer whose pre-trained weights are put back")
    ax.set_ylabel("test accuracy change (points)")
    ax.set_title(f"{title}\n(bars: mean over seeds; whiskers: 95% interval, seeds x test items)")
    ax.figure.tight_layout()
    return ax
