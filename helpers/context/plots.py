"""Lesson 06 figures. Each takes data (plus an optional ``ax``) and returns the axes."""

from __future__ import annotations

from helpers.common.style import layer_labels, new_axes, to_numpy


def plot_layer_curves(curves: dict, ax=None, title="", ylabel="cosine", chance=None):
    """Several ``[L + 1]`` curves on one axes (e.g. within vs across sense similarity)."""
    if not curves:
        raise ValueError("curves must hold at least one {label: values} entry.")
    ax = new_axes(ax, (6, 3))
    n = None
    for label, values in curves.items():
        values = to_numpy(values)
        n = len(values)
        ax.plot(range(n), values, "o-", label=label)
    ax.set_xticks(range(n), layer_labels(n))
    if chance is not None:
        ax.axhline(chance, color="grey", ls=":", label="chance")
    ax.set_xlabel("layer")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize=8)
    return ax


def plot_neighbours(cosines, tokens, highlight: int, ax=None, title=""):
    """Bars of the cosine between one token (``highlight``) and every token of its sentence."""
    cosines = to_numpy(cosines)
    if len(cosines) != len(tokens):
        raise ValueError(f"need one cosine per token: {len(cosines)} cosines for {len(tokens)} tokens.")
    ax = new_axes(ax, (max(5, 0.45 * len(tokens)), 3))
    bars = ax.bar(range(len(tokens)), cosines, color="tab:blue")
    bars[highlight].set_color("tab:orange")
    ax.set_xticks(range(len(tokens)), tokens, rotation=70, fontsize=8)
    ax.set_ylim(min(0.0, float(cosines.min())) - 0.05, 1.05)
    ax.set_ylabel("cosine")
    ax.set_title(title)
    return ax
