"""Lesson 12 figures: layer x head maps, importance scatter, skipped layers, patching curves and
pruning curves. Each takes data (plus an optional ``ax``) and returns what it drew. The attribution
figures of lesson 13 live in ``helpers/attribution/plots.py``."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import TwoSlopeNorm

from helpers.common.stats import Interval
from helpers.common.style import (
    FIG_WIDTH_IN, HIGHLIGHT, NORMAL, SEQUENTIAL, as_matrix, colorbar, layer_labels, legend_below, new_axes, to_numpy,
)


def plot_layer_head_map(values, ax=None, title: str = "", cbar_label: str = "", cmap: str = SEQUENTIAL,
                        diverging: bool = False, vmin: float | None = None, vmax: float | None = None):
    """An ``[L, A]`` map, layers 1..L down, heads across, with a labelled colourbar.

    ``diverging``: white at 0, so a negative value (the model got *better*) reads differently
    from a positive one. ``vmin``/``vmax`` fix the colour scale (e.g. 0..1 for shares, so
    that two maps side by side read alike). Returns ``(ax, image)``."""
    values = as_matrix(values, "values")
    n_layers, n_heads = values.shape
    ax = new_axes(ax, (min(FIG_WIDTH_IN, max(4.0, 0.4 * n_heads + 2)), 0.4 * n_layers + 1.6))
    norm = None
    if diverging:  # vmin / vmax, when given, fix the bound (maps side by side share one scale)
        bound = max(abs(vmin or 0.0), abs(vmax or 0.0)) or max(float(np.abs(values).max()), 1e-9)
        norm = TwoSlopeNorm(vcenter=0.0, vmin=-bound, vmax=bound)
    elif vmin is not None or vmax is not None:
        norm = plt.Normalize(vmin=vmin, vmax=vmax)
    image = ax.imshow(values, aspect="auto", cmap=cmap, norm=norm)
    step = max(1, n_heads // 12)
    ax.set_xticks(range(0, n_heads, step), [str(h) for h in range(0, n_heads, step)])
    ax.set_yticks(range(n_layers), [str(i) for i in range(1, n_layers + 1)])
    ax.set_xlabel("head")
    ax.set_ylabel("layer")
    ax.set_title(title)
    colorbar(image, ax, cbar_label)
    return ax, image


def plot_head_maps(panels, ncols: int = 2, title: str = ""):
    """Several :func:`plot_layer_head_map` side by side; ``panels`` is a list of dicts of its
    keyword arguments plus ``values``. Returns the figure."""
    panels = list(panels)
    if not panels:
        raise ValueError("give at least one panel.")
    nrows = -(-len(panels) // ncols)
    n_layers, n_heads = as_matrix(panels[0]["values"], "values").shape
    width = min(FIG_WIDTH_IN, ncols * max(3.0, 0.3 * n_heads + 1.8))  # the page's column: text stays 8 pt
    fig, axes = plt.subplots(nrows, ncols, figsize=(width, nrows * (0.36 * n_layers + 1.6)), squeeze=False)
    for ax, panel in zip(axes.flat, panels):
        plot_layer_head_map(ax=ax, **panel)
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


def plot_importance_scatter(x, y, ax=None, xlabel: str = "", ylabel: str = "", title: str = "", labels=None):
    """One dot per head; ``labels`` (e.g. ``"3.5"`` for layer 3 head 5) are written next to the
    five heads with the largest ``y``."""
    x, y = to_numpy(x).ravel(), to_numpy(y).ravel()
    if x.shape != y.shape:
        raise ValueError(f"x and y need one value per head each, got {x.size} and {y.size}.")
    ax = new_axes(ax, (5, 4))
    ax.scatter(x, y, s=18, color=NORMAL, alpha=0.7)
    if labels is not None:
        for i in np.argsort(-y)[:5]:
            ax.annotate(labels[i], (x[i], y[i]), xytext=(3, 3), textcoords="offset points", fontsize=8)
    ax.axhline(0, color="grey", lw=0.5)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    return ax


def _interval_bars(ax, x, intervals, color, label):
    est = np.array([i.estimate for i in intervals])
    low = np.array([i.low for i in intervals])
    high = np.array([i.high for i in intervals])
    ax.errorbar(x, est, yerr=[est - low, high - est], fmt="o", color=color, capsize=3, label=label)


def plot_skip_effects(panels: dict):
    """One axes per measure: ``{title: (baseline Interval, [Interval per skipped layer 1..L], ylabel,
    chance level or None)}``.

    The baseline (nothing skipped) is the grey band, chance the dotted line; one legend below
    the panels, so that it covers no data. Returns the figure."""
    if not panels:
        raise ValueError("give at least one {title: (baseline, intervals, ylabel, chance)} panel.")
    fig, axes = plt.subplots(1, len(panels), figsize=(min(FIG_WIDTH_IN, 4.5 * len(panels)), 3.8), squeeze=False)
    for ax, (title, (base, intervals, ylabel, chance)) in zip(axes[0], panels.items()):
        if not isinstance(base, Interval) or not all(isinstance(i, Interval) for i in intervals):
            raise TypeError("baseline and per-layer values must be helpers.common.stats.Interval objects.")
        x = np.arange(1, len(intervals) + 1)
        ax.axhspan(base.low, base.high, color="grey", alpha=0.25, label="nothing skipped, with its interval")
        ax.axhline(base.estimate, color="grey", lw=1)
        _interval_bars(ax, x, intervals, HIGHLIGHT, "layer skipped")
        if chance is not None:
            ax.axhline(chance, color="grey", ls=":", label="chance")
        ax.set_xticks(x, [str(i) for i in x])
        ax.set_xlabel("skipped layer (replaced by the identity)")
        ax.set_ylabel(ylabel)
        ax.set_ylim(-0.02, 1.05)
        ax.set_title(title)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), frameon=False)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    return fig


def plot_patch_curves(curves: dict, pooled, ax=None, title: str = "", chance: float | None = None,
                      control=None, control_label: str = "control"):
    """Share of patched runs whose final word vector follows the patch, per patched layer
    (0 = embeddings): a thin grey line per word (``curves``: ``{word: [L + 1]}``) and the
    pooled share with its interval (``pooled``: ``[Interval] * (L + 1)``); ``control``, a second
    pooled share (e.g. read from the rest of the sentence), dashed with its interval."""
    if not curves:
        raise ValueError("give at least one {word: rates} curve.")
    ax = new_axes(ax, (FIG_WIDTH_IN, 3.5))
    n = len(pooled)
    x = np.arange(n)
    for k, rates in enumerate(curves.values()):
        ax.plot(x, to_numpy(rates), "-", lw=0.8, color="grey", alpha=0.6, label="one word" if k == 0 else None)
    est = np.array([i.estimate for i in pooled])
    ax.fill_between(x, [i.low for i in pooled], [i.high for i in pooled], color="black", alpha=0.15,
                    label="all words, with its interval")
    ax.plot(x, est, "o-", color="black", lw=2, label="all words")
    if control is not None:
        ax.fill_between(x, [i.low for i in control], [i.high for i in control], color=HIGHLIGHT, alpha=0.15)
        ax.plot(x, [i.estimate for i in control], "s--", color=HIGHLIGHT, lw=2, label=control_label)
    if chance is not None:
        ax.axhline(chance, color="grey", ls=":", label="half the pairs")
    ax.set_xticks(x, layer_labels(n))
    ax.set_ylim(-0.02, 1.05)
    ax.set_xlabel("layer at which the word vector is patched")
    ax.set_ylabel("share following the patch")
    ax.set_title(title)
    ax.figure.tight_layout()
    legend_below(ax, ncol=2)
    ax.figure.tight_layout()
    return ax


def plot_pruning_curve(fractions, importance, random_fraction: float, random_accuracy, importance_at_random=None,
                       title: str = "", random_label: str = "random orders"):
    """Test accuracy against the share of heads removed: ``importance`` ``[K]`` for the importance
    order at ``fractions`` (orange line), and at ``random_fraction`` the accuracy of each of ``R``
    random orders (``random_accuracy`` ``[R]``, grey dots spread sideways, with their range) beside
    the importance order's on the same items (``importance_at_random``; by default its curve's value
    there). Returns the axes."""
    x = 100 * np.asarray(fractions, dtype=float)
    y = to_numpy(importance).astype(float)
    r = to_numpy(random_accuracy).astype(float).ravel()
    if y.shape != x.shape:
        raise ValueError(f"importance needs one accuracy per fraction ({x.size}), got shape {y.shape}.")
    if r.size < 2:
        raise ValueError("give the accuracies of at least two random orders.")
    if importance_at_random is None:
        k = int(np.argmin(np.abs(x - 100 * random_fraction)))
        if abs(x[k] - 100 * random_fraction) > 1e-9:
            raise ValueError("random_fraction is not one of fractions: give importance_at_random.")
        importance_at_random = y[k]
    ax = new_axes(None, (FIG_WIDTH_IN, 3.6))
    xr = 100 * float(random_fraction)
    jitter = np.random.default_rng(0).uniform(-1.6, 1.6, r.size)  # seeded: the same picture on every run
    ax.plot(xr + jitter, r, "o", color="grey", ms=3, alpha=0.55, label=f"{r.size} {random_label}")
    ax.plot([xr - 2.5, xr + 2.5], [r.min()] * 2, color="grey", lw=1)
    ax.plot([xr - 2.5, xr + 2.5], [r.max()] * 2, color="grey", lw=1)
    ax.plot(x, y, "o-", color=HIGHLIGHT, lw=2, label="least important first (Michel et al.)")
    ax.plot([xr], [float(importance_at_random)], "D", color=HIGHLIGHT, ms=7, mec="black")
    ax.set_xlabel("heads removed (% of all heads)")
    ax.set_ylabel("test accuracy")
    ax.set_title(title or "test accuracy as heads are pruned")
    legend_below(ax, ncol=2)
    ax.figure.tight_layout()
    return ax
