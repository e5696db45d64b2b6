"""Lesson 11 figures: fine-tuning accuracy against time, the memory of a training step,
float32 against int8. Each takes measured data and returns its axes."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from helpers.common.stats import quartiles
from helpers.common.style import FIG_WIDTH_IN, layer_labels, legend_below, new_axes, to_numpy

MIB = 2 ** 20


def plot_accuracy_vs_time(accuracy: dict, seconds: dict, ax=None, machine: str = "this machine"):
    """One colour per strategy: a small dot per run at (its training seconds, its test
    accuracy), and a large marker at (median seconds, mean accuracy) whose whiskers are the
    range of the seconds and the 95% accuracy interval (test items and seeds).

    ``accuracy`` maps names to :class:`~helpers.classify.compute.SeededAccuracy`, ``seconds``
    the same names to one wall-clock time per run (same order as the seeds).
    """
    if not accuracy or set(accuracy) != set(seconds):
        raise ValueError("accuracy and seconds must map the same, non-empty set of strategy names.")
    ax = new_axes(ax, (FIG_WIDTH_IN, 3.8))
    for name, acc in accuracy.items():
        secs = np.asarray(seconds[name], dtype=float)
        if len(secs) != len(acc.seeds):
            raise ValueError(f"{name!r}: {len(secs)} times for {len(acc.seeds)} seeds.")
        ci = acc.interval()
        med = float(np.median(secs))
        dots = ax.plot(secs, acc.per_seed(), "o", ms=4, alpha=0.5)[0]
        ax.errorbar(med, acc.estimate, xerr=[[med - secs.min()], [secs.max() - med]],
                    yerr=[[acc.estimate - ci.low], [ci.high - acc.estimate]], fmt="D", ms=7,
                    color=dots.get_color(), mec="black", mew=0.5, capsize=3, label=name)
    ax.set_xlabel(f"training seconds per run (wall clock, {machine})")
    low, high = ax.get_ylim()  # an accuracy lives in [0, 1], also where an interval of few runs reaches past it
    ax.set_ylim(max(0.0, low), min(1.0, high))
    ax.set_ylabel("test accuracy" + (f" (axis starts at {ax.get_ylim()[0]:.2f})" if ax.get_ylim()[0] > 0 else ""))
    n = len(next(iter(accuracy.values())).seeds)
    ax.set_title(f"test accuracy against training time ({n} seeds per strategy)\n"
                 "dots: runs; diamond: median time, mean accuracy; whiskers: range, 95% interval")
    # under the axes: with five strategies "best" still covered a run
    ax.figure.tight_layout()
    legend_below(ax, ncol=2)
    ax.figure.tight_layout()
    return ax


def plot_training_memory(parts: dict, ax=None, title: str = "memory one training step holds"):
    """Stacked horizontal bars in MiB on one shared scale: ``parts`` maps a setting ("plain",
    "checkpointed") to ``{component: bytes}`` with the same components in the same order."""
    if not parts:
        raise ValueError("parts must map at least one setting to {component: bytes}.")
    components = list(next(iter(parts.values())))
    if any(list(p) != components for p in parts.values()):
        raise ValueError(f"every setting needs the same components in the same order: {components}.")
    ax = new_axes(ax, (FIG_WIDTH_IN, 0.75 * len(parts) + 2.0))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    totals = [sum(p.values()) / MIB for p in parts.values()]
    for y, (setting, p) in enumerate(parts.items()):
        left = 0.0
        for k, comp in enumerate(components):
            width = p[comp] / MIB
            ax.barh(y, width, left=left, color=colors[k % len(colors)], label=comp if y == 0 else None)
            if width > 0.09 * max(totals):
                ax.text(left + width / 2, y, f"{width:.0f}", ha="center", va="center", fontsize=8, color="white")
            left += width
        ax.text(left, y, f"  {left:.0f} MiB", va="center", fontsize=9)
    ax.set_yticks(range(len(parts)), list(parts))
    ax.invert_yaxis()
    ax.set_xlim(0, 1.18 * max(totals))
    ax.set_xlabel("MiB")
    ax.set_title(f"{title} (MiB)")
    ax.set_xlabel("MiB (numbers in the bars: MiB per part)")
    ax.figure.tight_layout()
    legend_below(ax, ncol=min(3, len(components)))
    ax.figure.tight_layout()
    return ax


def plot_int8_comparison(sizes: dict, times: dict, accuracy: dict, change, between, axes=None,
                         timed: str = "one batch"):
    """Four panels comparing a float32 model with its int8 copy: file size, time per run,
    test accuracy (95% intervals) and, per layer, how far int8 moves each sentence's feature
    (median and interquartile band over sentences) next to how far apart two different
    sentences lie (``change``/``between`` as from
    :func:`helpers.practice.compute.feature_change_per_layer`). ``timed`` says what one
    timed run did ("32 sentences"). Returns the 2 x 2 axes."""
    names = list(sizes)
    if set(times) != set(names) or set(accuracy) != set(names):
        raise ValueError(f"sizes, times and accuracy must use the same names, got {names}, {list(times)}, {list(accuracy)}.")
    if axes is None:
        _, axes = plt.subplots(2, 2, figsize=(FIG_WIDTH_IN, 6.4))
    (ax_size, ax_time), (ax_acc, ax_change) = axes
    colors = ["tab:blue", "tab:orange", "tab:green", "tab:red"]
    x = np.arange(len(names))
    bars = ax_size.bar(x, [sizes[n] / MIB for n in names], color=colors[: len(names)])
    ax_size.bar_label(bars, fmt="%.1f", fontsize=8)
    ax_size.set_xticks(x, names)
    ax_size.set_ylabel("MiB")
    ax_size.set_title("size of the saved weights (MiB)")
    for i, n in enumerate(names):
        t = np.asarray(times[n], dtype=float) * 1e3
        ax_time.plot(np.full(len(t), i), t, "o", color=colors[i], alpha=0.5, ms=4)
        ax_time.plot([i - 0.2, i + 0.2], [np.median(t)] * 2, color=colors[i], lw=2.5)
    ax_time.set_xticks(x, names)
    ax_time.set_xlim(-0.6, len(names) - 0.4)
    ax_time.set_ylim(bottom=0)
    ax_time.set_ylabel("milliseconds")
    ax_time.set_title(f"time for {timed}\n(ms; dots: runs, bar: median)")
    for i, n in enumerate(names):
        ci = accuracy[n]
        ax_acc.errorbar(i, ci.estimate, yerr=[[ci.estimate - ci.low], [ci.high - ci.estimate]], fmt="D",
                        color=colors[i], capsize=4, ms=7)
    ax_acc.set_xticks(x, names)
    ax_acc.set_xlim(-0.6, len(names) - 0.4)
    bottom = max(0.0, min(a.low for a in accuracy.values()) - 0.05)
    ax_acc.set_ylim(bottom, 1.01)
    ax_acc.set_ylabel("test accuracy" + (f" (axis starts at {bottom:.2f})" if bottom > 0 else ""))
    ax_acc.set_title("test accuracy, heads trained on\nfloat32 features (95% interval:\ntest items and seeds)")
    change, between = to_numpy(change), to_numpy(between)
    layers = np.arange(change.shape[0])
    for values, label, color in ((change, "int8 vs float32, same sentence", "tab:orange"),
                                 (between, "a sentence vs a random other one, float32", "gray")):
        q25, med, q75 = quartiles(values.T)
        ax_change.plot(layers, med, "o-", color=color, label=label, ms=4)
        ax_change.fill_between(layers, q25, q75, color=color, alpha=0.2, lw=0)
    ax_change.set_xticks(layers, layer_labels(len(layers)))
    ax_change.set_xlabel("layer")
    ax_change.set_ylabel("||difference|| / ||feature||")
    ax_change.set_ylim(bottom=0)
    ax_change.set_title("relative distance of sentence\nfeatures (median, IQR band)")
    axes[0][0].figure.tight_layout()
    legend_below(ax_change, ncol=1)  # under the panel: a legend inside would cover the lines' ends
    return axes
