"""Lesson 03 figures: where the parameters are, and how large each sub-layer's update is next
to the residual stream it is added to."""

from __future__ import annotations

import numpy as np

from helpers.common.stats import quartiles
from helpers.common.style import FIG_WIDTH_IN, HIGHLIGHT, NORMAL, annotate_bars, legend_below, new_axes, to_numpy


def bar_chart(values: dict[str, float], ax=None, title: str | None = None, ylabel: str = "", log: bool = False):
    """Bars labelled by the dict keys; returns ``(fig, ax, bars)``."""
    if not isinstance(values, dict) or not values:
        raise ValueError("values must be a non-empty dict of label -> number.")
    ax = new_axes(ax, (min(FIG_WIDTH_IN, max(5.0, 0.9 * len(values) + 2)), 3.5))  # the page's column
    fig = ax.figure
    labels = list(values)
    bars = ax.bar(range(len(labels)), [float(values[k]) for k in labels], color=NORMAL)
    ax.set_xticks(range(len(labels)), labels, rotation=30, ha="right")
    if log:
        ax.set_yscale("log")
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    fig.tight_layout()
    return fig, ax, bars


def parameter_bars(counts: dict[str, int], num_layers: int, ax=None, title: str | None = None):
    """Where the parameters are, on a linear axis with every count and share written on its bar.

    ``counts`` is :func:`helpers.stack.compute.parameter_breakdown` (or ``parameter_formula``):
    the bars are the embeddings, all ``L`` attention blocks, all ``L`` feed-forward blocks and
    the pooler; they add up to the total. Returns ``(fig, ax, bars)``.
    """
    needed = ("embeddings", "attention (one layer)", "feed-forward (one layer)", "pooler", "total")
    missing = [k for k in needed if k not in counts]
    if missing:
        raise ValueError(f"counts lacks {missing}; use helpers.stack.compute.parameter_breakdown(model).")
    parts = {
        "embeddings\n(word + position + segment, LN)": counts["embeddings"],
        f"attention: {num_layers} layers \u00d7\n(Q, K, V, output, LayerNorm)": num_layers * counts["attention (one layer)"],
        f"feed-forward: {num_layers} layers \u00d7\n(H\u2192I, I\u2192H, LayerNorm)": num_layers * counts["feed-forward (one layer)"],
        "pooler (dense H\u2192H)": counts["pooler"],
    }
    total = counts["total"]
    if sum(parts.values()) != total:
        raise ValueError(f"the parts add up to {sum(parts.values()):,}, not the total {total:,}.")
    ax = new_axes(ax, (FIG_WIDTH_IN, 3.4))
    fig = ax.figure
    names = list(parts)[::-1]  # top to bottom in the order of the model
    widths = [parts[k] / 1e6 for k in names]
    bars = ax.barh(range(len(names)), widths, color=[NORMAL] * len(names), height=0.62)
    ax.set_yticks(range(len(names)), names)
    annotate_bars(ax, bars, [f"{parts[k] / 1e6:.2f}M  ({parts[k] / total:.1%})" for k in names])
    ax.set_xlim(0, max(widths) * 1.28)
    ax.set_xlabel("parameters (millions)")
    ax.set_title(title or f"parameters of the loaded model: {total / 1e6:.2f}M in total")
    fig.tight_layout()
    return fig, ax, bars


def plot_update_ratios(data: dict, sentence: dict | None = None, ax=None, title: str | None = None):
    """Per encoder layer: how large the attention and the feed-forward updates are next to the
    stream they are added to (:func:`helpers.stack.compute.update_ratios`).

    ``data``: ratios over many tokens (``{"attention": [L, N], "ffn": [L, N]}``), drawn as the
    median with the interquartile band; ``sentence``: the same for one sentence, drawn as its
    median per layer. Returns the axes.
    """
    ax = new_axes(ax, (FIG_WIDTH_IN, 4.4))
    colors = {"attention": NORMAL, "ffn": HIGHLIGHT}
    names = {"attention": "attention update", "ffn": "feed-forward update"}
    for key in ("attention", "ffn"):
        values = to_numpy(data[key])
        if values.ndim != 2:
            raise ValueError(f"data[{key!r}] must be [layers, tokens], got shape {values.shape}.")
        layers = np.arange(1, values.shape[0] + 1)
        q25, med, q75 = quartiles(values, axis=1)
        ax.fill_between(layers, q25, q75, color=colors[key], alpha=0.2, linewidth=0)
        ax.plot(layers, med, "-o", color=colors[key], markersize=4,
                label=f"{names[key]}: data sentences, median and middle 50%")
        if sentence is not None:
            ax.plot(layers, np.median(to_numpy(sentence[key]), axis=1), "--", marker="x", color=colors[key],
                    markersize=6, label=f"{names[key]}: your sentence, median")
    ax.set_xticks(layers, [str(i) for i in layers])
    ax.set_xlabel("encoder layer")
    ax.set_ylabel("\u2016update\u2016 / \u2016stream\u2016")
    ax.set_ylim(bottom=0)
    ax.set_title(title or "each update's size next to the stream it is added to:\n"
                 "\u2016update\u2016 / \u2016stream\u2016 per token")
    ax.figure.tight_layout()
    legend_below(ax, ncol=1)
    ax.figure.tight_layout()
    return ax
