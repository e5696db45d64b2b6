"""Lesson 09 figures. Each takes data (plus an optional ``ax``) and returns the axes.

A per-layer statistic over several words is drawn as the mean over the words with a
bootstrap 95 % band, each word as a thin line behind it; accuracies, which pile up at 1.0,
get one small panel per word so no line hides another."""

from __future__ import annotations

import numpy as np

from helpers.common.stats import bootstrap_ci
from helpers.common.style import (
    FIG_WIDTH_IN, HIGHLIGHT, NORMAL, layer_labels, legend_below, new_axes, note_axis_start, to_numpy,
)


def plot_layer_curves(curves: dict, ax=None, title="", ylabel="cosine", chance=None):
    """Several ``[L + 1]`` curves on one axes (e.g. within vs across sense similarity)."""
    if not curves:
        raise ValueError("curves must hold at least one {label: values} entry.")
    ax = new_axes(ax, (6, 3))
    n = None
    markers = "osD^v<>ph*"
    for i, (label, values) in enumerate(curves.items()):
        values = to_numpy(values)
        n = len(values)
        ax.plot(range(n), values, marker=markers[i % len(markers)], ls="-", label=label)
    ax.set_xticks(range(n), layer_labels(n))
    if chance is not None:
        ax.axhline(chance, color="grey", ls=":", label="chance")
    ax.set_xlabel("layer")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize=8)
    note_axis_start(ax)
    return ax


def plot_words_and_mean(per_word: dict, ax=None, title="", ylabel="", reference=None, reference_label="baseline",
                        highlight: dict | None = None):
    """``{word: [L + 1]}``: every word as a thin grey line, their mean with a bootstrap 95 %
    band over the words; ``reference`` (a number or ``[L + 1]``) dashed; ``highlight``
    (``{label: [L + 1]}``) drawn on top as markers (e.g. the learner's sentence)."""
    if not per_word:
        raise ValueError("per_word must hold at least one {word: values} entry.")
    values = np.stack([to_numpy(v).astype(float) for v in per_word.values()])  # [words, L+1]
    ax = new_axes(ax, (FIG_WIDTH_IN, 3.4))
    x = np.arange(values.shape[1])
    for row in values:
        ax.plot(x, row, "-", color="tab:grey", lw=0.8, alpha=0.5)
    ax.plot([], [], "-", color="tab:grey", lw=0.8, alpha=0.5, label=f"each word ({len(values)})")
    if len(values) > 1:
        ci = bootstrap_ci(values)
        ax.fill_between(x, [c.low for c in ci], [c.high for c in ci], color=NORMAL, alpha=0.25, lw=0,
                        label="95 % CI, resampling words")
        ax.plot(x, [c.estimate for c in ci], "o-", color=NORMAL, label="mean over words")
    if reference is not None:
        ax.plot(x, np.broadcast_to(np.asarray(to_numpy(reference), dtype=float), x.shape), "--",
                color="black", lw=1, label=reference_label)
    for label, v in (highlight or {}).items():
        ax.plot(x, to_numpy(v), "D:", color=HIGHLIGHT, label=label)
    ax.set_xticks(x, layer_labels(len(x)))
    ax.set_xlabel("layer")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    note_axis_start(ax)
    legend_below(ax)
    return ax


def plot_raw_and_adjusted(raw_per_word: dict, baseline, axes=None, measure: str = "self-similarity",
                          baseline_label: str = "random-pair baseline", title: str | None = None):
    """A per-word measure and the same measure minus a baseline, in **two panels** (two
    measures never share one axis): top, ``raw_per_word`` (``{word: [L + 1]}``; each word thin,
    the mean with its bootstrap 95 % band over the words) with ``baseline`` (``[L + 1]``)
    dashed; bottom, raw minus baseline, the same way, with a zero line. Each y axis says where
    it starts when it does not start at 0. Returns the two axes."""
    import matplotlib.pyplot as plt

    if not raw_per_word:
        raise ValueError("raw_per_word must hold at least one {word: values} entry.")
    base = np.asarray(to_numpy(baseline), dtype=float)
    if axes is None:
        fig, axes = plt.subplots(2, 1, figsize=(FIG_WIDTH_IN, 5.6), sharex=True, layout="constrained")
        fig.suptitle(title or f"{measure} per layer: raw and minus the {baseline_label}", fontsize=10)
    top, bottom = axes
    plot_words_and_mean(raw_per_word, ax=top, ylabel=f"{measure} (cosine)", reference=base,
                        reference_label=baseline_label, title=f"raw {measure}")
    adjusted = {w: np.asarray(to_numpy(v), dtype=float) - base for w, v in raw_per_word.items()}
    plot_words_and_mean(adjusted, ax=bottom, ylabel="minus the baseline", title=f"{measure} minus the {baseline_label}")
    bottom.axhline(0.0, color="black", lw=0.8)
    top.set_ylabel(f"{measure} (cosine)")
    bottom.set_ylabel("minus the baseline")
    entries = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            entries.setdefault(label, handle)  # the baseline (top) and the words and mean (both)
        ax.get_legend().remove()
        note_axis_start(ax)
    top.set_xlabel("")
    legend_below(bottom, ncol=2, handles=list(entries.values()), labels=list(entries))
    return axes


NULL_COLOR = "#555555"  # what shuffled labels score: hatched, so it never blends with an interval's fill


def plot_accuracy_panels(per_word: dict, pooled=None, chance: float | None = None, axes=None,
                         title="sense separation: leave-one-out accuracy with 95 % interval", null: dict | None = None,
                         band="95 % interval: a word's exact one over its sentences; pooled: resampling words"):
    """One small panel per word (shared axes) of an accuracy per layer, each a list of
    :class:`~helpers.common.stats.Interval` (estimate and 95 % interval: a word's exact interval over
    its sentences, :func:`~helpers.common.stats.accuracy_ci`); ``pooled`` (all words' sentences
    together, its interval resampling words, :func:`~helpers.common.stats.cluster_bootstrap_ci`)
    gets the first panel. ``null`` (``{name: [n_shuffles, layers]}``, e.g.
    :func:`~helpers.context.compute.permutation_null`;
    key ``"all words, pooled"`` for the pooled panel) draws what shuffled labels score: a grey
    band (2.5-97.5 percentiles) with its mean dashed; ``chance`` draws a flat dotted line; ``band``
    says in the legend what the coloured bands are. The null band is hatched grey, the
    intervals filled in colour, so where they overlap both stay visible; a legend under the
    panels names each."""
    import matplotlib.pyplot as plt

    panels = ({"all words, pooled": pooled} if pooled is not None else {}) | dict(per_word)
    if not panels:
        raise ValueError("give at least one {word: [Interval per layer]} entry.")
    n = len(panels)
    cols = min(4, n)
    rows = int(np.ceil(n / cols))
    if axes is None:
        fig, axes = plt.subplots(rows, cols, figsize=(FIG_WIDTH_IN, 1.75 * rows + 1.2), sharex=True, sharey=True,
                                 squeeze=False, layout="constrained")
        for ax in axes.flat[n:]:
            ax.axis("off")
        axes = list(axes.flat)[:n]
        fig.suptitle(title, fontsize=10)
    for i, (ax, (name, intervals)) in enumerate(zip(axes, panels.items())):
        est = np.array([c.estimate for c in intervals])
        x = np.arange(len(est))
        color = HIGHLIGHT if name == "all words, pooled" else NORMAL
        if null is not None and name in null:
            shuffled = to_numpy(null[name]).astype(float)
            lo, hi = np.percentile(shuffled, [2.5, 97.5], axis=0)
            ax.fill_between(x, lo, hi, facecolor="none", edgecolor=NULL_COLOR, hatch="////", lw=0,
                            label="shuffled sense labels: 95 % range")
            ax.plot(x, shuffled.mean(axis=0), "--", color=NULL_COLOR, lw=1, label="shuffled sense labels: mean")
        ax.fill_between(x, [c.low for c in intervals], [c.high for c in intervals], color=color, alpha=0.3, lw=0,
                        label=f"{'pooled' if color == HIGHLIGHT else 'one word'}: 95 % interval")
        ax.plot(x, est, "o-", color=color, ms=4, label=f"{'all words, pooled' if color == HIGHLIGHT else 'one word'}:"
                                                        " accuracy")
        if chance is not None:
            ax.axhline(chance, color="grey", ls=":", lw=1, label="chance")
        ax.set_title(name, fontsize=9)
        ax.set_ylim(0, 1.05)
        ax.set_xticks(x, layer_labels(len(x)))
        ax.tick_params(labelbottom=True)  # every panel keeps its layer labels (the grid may end short)
        if i % cols == 0:
            ax.set_ylabel("accuracy")
    fig = axes[0].figure
    for ax in axes[-cols:]:  # the bottom panel of each column names its axis (the legend goes below)
        ax.set_xlabel("layer")
    entries = {}
    for ax in axes:  # one legend entry per kind of artist, whichever panel drew it first
        for handle, label in zip(*ax.get_legend_handles_labels()):
            entries.setdefault(label, handle)
    fig.legend(list(entries.values()), list(entries), loc="outside lower center", ncols=2, frameon=False,
               title=band, title_fontsize=8)
    return axes


def plot_neighbours(cosines, tokens, highlight: int, ax=None, title=""):
    """Bars of the cosine between one token (``highlight``) and every token of its sentence."""
    cosines = to_numpy(cosines)
    if len(cosines) != len(tokens):
        raise ValueError(f"need one cosine per token: {len(cosines)} cosines for {len(tokens)} tokens.")
    ax = new_axes(ax, (min(FIG_WIDTH_IN, max(5, 0.3 * len(tokens) + 1)), 3))
    bars = ax.bar(range(len(tokens)), cosines, color=NORMAL)
    bars[highlight].set_color(HIGHLIGHT)
    ax.set_xticks(range(len(tokens)), tokens, rotation=90, fontsize=8)
    ax.set_ylim(min(0.0, float(cosines.min())) - 0.05, 1.05)
    ax.set_ylabel("cosine")
    ax.set_title(title)
    return ax
