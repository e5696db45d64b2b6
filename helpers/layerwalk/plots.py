"""Lesson 04 figures. Each takes data (plus an optional ``ax``) and returns the axes."""

from __future__ import annotations

import numpy as np

from helpers.common.style import layer_labels, new_axes, to_numpy


def plot_layer_norms(norms, ax=None, title="L2 norm per layer"):
    """Bar chart of one value per hidden-state layer (``[L + 1]``)."""
    norms = to_numpy(norms)
    ax = new_axes(ax, (6, 3))
    ax.bar(range(len(norms)), norms, color="tab:blue")
    ax.set_xticks(range(len(norms)), layer_labels(len(norms)))
    ax.set_xlabel("layer")
    ax.set_ylabel("L2 norm")
    ax.set_title(title)
    return ax


def plot_consecutive(cosines, adjusted=None, ax=None):
    """Line chart of cosine(layer l, layer l+1) for l = 0..L-1, optionally baseline-adjusted too."""
    cosines = to_numpy(cosines)
    ax = new_axes(ax, (6, 3))
    x = np.arange(1, len(cosines) + 1)
    ax.plot(x, cosines, "o-", label="raw cosine")
    if adjusted is not None:
        ax.plot(x, to_numpy(adjusted), "s--", label="minus random-pair baseline")
    ax.set_xticks(x, [f"{a}→{b}" for a, b in zip(layer_labels(len(x) + 1)[:-1], layer_labels(len(x) + 1)[1:])])
    ax.set_xlabel("layer transition")
    ax.set_ylabel("cosine")
    ax.legend(fontsize=8)
    return ax


def plot_similarity_heatmap(matrix, labels=None, ax=None, title="cosine between layers", **kwargs):
    """Seaborn heatmap of a square layer-by-layer similarity matrix."""
    import seaborn as sns

    matrix = to_numpy(matrix)
    if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1]:
        raise ValueError(f"matrix must be square, got shape {matrix.shape}.")
    labels = labels or layer_labels(matrix.shape[0])
    ax = new_axes(ax, (5, 4))
    sns.heatmap(matrix, ax=ax, xticklabels=labels, yticklabels=labels, cmap="viridis",
                annot=matrix.shape[0] <= 13, fmt=".2f", annot_kws={"size": 7}, square=True, **kwargs)
    ax.set_xlabel("layer")
    ax.set_ylabel("layer")
    ax.set_title(title)
    return ax


def plot_trajectory(coords, names, ax=None):
    """PCA paths ``[k, L + 1, 2]``: one line per token, one marker per layer, layers annotated."""
    coords = to_numpy(coords)
    if coords.ndim != 3 or coords.shape[0] != len(names) or coords.shape[2] < 2:
        raise ValueError(f"coords must be [len(names), layers, >=2], got {coords.shape} for {len(names)} names.")
    ax = new_axes(ax, (6, 4.5))
    labels = layer_labels(coords.shape[1])
    for path, name in zip(coords, names):
        (line,) = ax.plot(path[:, 0], path[:, 1], "o-", label=name)
        for (x, y), lab in zip(path[:, :2], labels):
            ax.annotate(lab, (x, y), fontsize=7, color=line.get_color(), xytext=(3, 3), textcoords="offset points")
    ax.set_xlabel("PC 1")
    ax.set_ylabel("PC 2")
    ax.legend(fontsize=8)
    ax.set_title("trajectory through the layers (PCA of all tokens, all layers)")
    return ax
