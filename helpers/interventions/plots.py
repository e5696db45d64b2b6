"""Lesson 09 figures: layer x head maps, importance scatter, skipped layers, patching curves,
attributions, faithfulness (ERASER) curves, pruning curves and token-mixing maps. Each takes data
(plus an optional ``ax``) and returns what it drew."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import TwoSlopeNorm

from helpers.common.stats import Interval
from helpers.common.style import (
    DIVERGING, FIG_WIDTH_IN, HIGHLIGHT, NORMAL, SEQUENTIAL, as_matrix, colorbar, layer_labels, legend_below,
    new_axes, scale_note, to_numpy,
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
        ax.axhspan(base.low, base.high, color="grey", alpha=0.25, label="nothing skipped (95% interval)")
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
                    label="all words, 95% interval")
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


def plot_attributions(scores: dict, tokens, ax=None, title: str = "", max_tokens: int = 30):
    """Methods (rows) x tokens (columns), each row divided by its largest absolute score so
    the methods share one colour scale; red adds to the logit, blue takes away.

    Past ``max_tokens`` tokens, the ``max_tokens`` with the largest score of the last row
    (occlusion, the reference) are shown, in input order. Returns ``(ax, shown positions)``."""
    if not scores:
        raise ValueError("give at least one {method: scores} row.")
    rows = {name: np.asarray(to_numpy(v), dtype=float) for name, v in scores.items()}
    n = len(tokens)
    if any(v.shape != (n,) for v in rows.values()):
        raise ValueError(f"every method needs one score per token ({n}).")
    reference = np.nan_to_num(list(rows.values())[-1], nan=-np.inf)
    shown = np.arange(n) if n <= max_tokens else np.sort(np.argsort(-reference)[:max_tokens])
    matrix = np.stack([v[shown] / max(np.nanmax(np.abs(v[shown])), 1e-12) for v in rows.values()])
    ax = new_axes(ax, (FIG_WIDTH_IN, 0.45 * len(rows) + 2.2))  # the page's column
    image = ax.imshow(np.ma.masked_invalid(matrix), aspect="auto", cmap=DIVERGING, vmin=-1, vmax=1)
    ax.set_xticks(range(len(shown)), [tokens[i] for i in shown], rotation=90)
    ax.set_yticks(range(len(rows)), list(rows))
    ax.set_title(title)
    colorbar(image, ax, "score / largest |score| of its method")
    ax.figure.tight_layout()
    return ax, shown


def _mean_band(ax, x, rows, label, color=None, style="o-"):
    """The mean of ``rows`` (``[units, K]``) with a 95% bootstrap band over the units."""
    from helpers.common.stats import bootstrap_ci

    rows = to_numpy(rows)
    cis = bootstrap_ci(rows) if rows.ndim == 2 else None
    line, = ax.plot(x, rows.mean(0), style, color=color, label=label, lw=1.5, ms=4)
    if cis is not None:
        ax.fill_between(x, [c.low for c in cis], [c.high for c in cis], color=line.get_color(), alpha=0.12)
    return line


def plot_faithfulness(curves: dict, fractions, title: str = ""):
    """Two panels over the share ``k`` of word tokens: comprehensiveness (prediction probability lost
    when a method's top-``k`` tokens are removed: higher is more faithful) and sufficiency (lost when
    only they are kept: lower is more faithful). ``curves``: ``{method: {"comprehensiveness": [N, K],
    "sufficiency": [N, K]}}`` per utterance; the mean with a 95% bootstrap band over the utterances,
    one shared y-scale. Returns the figure."""
    if not curves:
        raise ValueError("give at least one {method: {'comprehensiveness': ..., 'sufficiency': ...}} entry.")
    x = 100 * np.asarray(fractions, dtype=float)
    fig, axes = plt.subplots(2, 1, figsize=(FIG_WIDTH_IN, 6.2), sharey=True)
    for name, c in curves.items():
        dashed = name.startswith("random")
        for ax, key in zip(axes, ("comprehensiveness", "sufficiency")):
            _mean_band(ax, x, c[key], name, color="grey" if dashed else None, style="s--" if dashed else "o-")
    for ax, key, better in zip(axes, ("comprehensiveness", "sufficiency"), ("higher", "lower")):
        ax.axhline(0, color="grey", lw=0.5)
        ax.set_xlabel("word tokens " + ("removed" if key == "comprehensiveness" else "kept") + " (% of the utterance)")
        ax.set_title(f"{key} ({better} = more faithful)")
    for ax in axes:
        ax.set_ylabel("p(predicted): full − changed")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=min(3, len(labels)), frameon=False, fontsize=8)
    if title:
        fig.suptitle(title, fontsize=10)
    rows = -(-len(labels) // 3)
    fig.tight_layout(rect=(0, 0.2 * rows / 6.2 + 0.02, 1, 1))
    return fig


def plot_pruning_curve(fractions, by_importance: dict, random_orders: list, title: str = ""):
    """Accuracy and loss (two panels) against the share of heads removed: ``by_importance``
    ``{"accuracy": [K], "loss": [K]}`` for the importance order, ``random_orders`` a list of such
    dicts, one per random order (thin grey lines). Returns the figure."""
    if not random_orders:
        raise ValueError("give at least one random order to compare with.")
    x = 100 * np.asarray(fractions, dtype=float)
    fig, axes = plt.subplots(2, 1, figsize=(FIG_WIDTH_IN, 5.6), sharex=True)
    for ax, key, label in zip(axes, ("accuracy", "loss"), ("test accuracy", "test loss (cross-entropy)")):
        for k, order in enumerate(random_orders):
            ax.plot(x, to_numpy(order[key]), "-", color="grey", lw=0.9, alpha=0.7,
                    label="random order" if k == 0 else None)
        ax.plot(x, to_numpy(by_importance[key]), "o-", color=HIGHLIGHT, lw=2, label="least important first")
        ax.set_xlabel("heads removed (% of all heads)")
        ax.tick_params(labelbottom=True)
        ax.set_ylabel(label)
        ax.set_title(f"{label} as heads are pruned")
    axes[0].legend(loc="lower left", fontsize=8)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


def plot_mixing_maps(panels: dict, tokens, title: str = "", ncols: int = 2):
    """Token-to-token maps side by side (``panels``: ``{title: [T, T]}``, row ``i`` = output token,
    column ``j`` = input token), all on **one** colour scale from 0 to the largest value of any panel,
    so that the panels compare. Returns the figure."""
    if not panels:
        raise ValueError("give at least one {title: [T, T] matrix} panel.")
    mats = {name: to_numpy(m) for name, m in panels.items()}
    n = len(tokens)
    if any(m.shape != (n, n) for m in mats.values()):
        raise ValueError(f"every panel must be [{n}, {n}] for {n} tokens.")
    vmax = max(float(np.nanmax(m)) for m in mats.values())
    nrows = -(-len(mats) // ncols)
    side = min(4.4, max(3.0, 0.22 * n + 1.5), (FIG_WIDTH_IN - 0.8) / ncols)  # the row fits the page
    fig, axes = plt.subplots(nrows, ncols, figsize=(ncols * side + 0.8, nrows * side + 0.4), squeeze=False,
                             layout="constrained")
    for ax, (name, m) in zip(axes.flat, mats.items()):
        image = ax.imshow(m, cmap=SEQUENTIAL, vmin=0, vmax=vmax)
        ax.set_xticks(range(n), tokens, rotation=90, fontsize=8)
        ax.set_yticks(range(n), tokens, fontsize=8)
        ax.set_title(name, fontsize=9)
    for ax in list(axes.flat)[len(mats):]:
        ax.axis("off")
    fig.colorbar(image, ax=axes.ravel().tolist(), shrink=0.8).set_label("share of the row (rows sum to 1)")
    note = scale_note(0, vmax) if vmax < 1 else ""  # a shared scale below 1 zooms: the title says so
    if title or note:
        fig.suptitle("\n".join(t for t in (title, note) if t), fontsize=10)
    return fig
