"""Plots for lessons 04-06. Each takes data (plus an optional ``ax``) and returns the axes."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.collections import LineCollection

from helpers.analysis import TOKEN_CLASSES


def _axes(ax, figsize):
    if ax is None:
        _, ax = plt.subplots(figsize=figsize)
    return ax


def _np(values) -> np.ndarray:
    return values.detach().cpu().numpy() if isinstance(values, torch.Tensor) else np.asarray(values)


def layer_labels(n_layers_plus_one: int) -> list[str]:
    """``['emb', '1', '2', ...]`` for ``L + 1`` hidden-state layers."""
    return ["emb"] + [str(i) for i in range(1, n_layers_plus_one)]


def plot_layer_norms(norms, ax=None, title="L2 norm per layer"):
    """Bar chart of one value per hidden-state layer (``[L + 1]``)."""
    norms = _np(norms)
    ax = _axes(ax, (6, 3))
    ax.bar(range(len(norms)), norms, color="tab:blue")
    ax.set_xticks(range(len(norms)), layer_labels(len(norms)))
    ax.set_xlabel("layer")
    ax.set_ylabel("L2 norm")
    ax.set_title(title)
    return ax


def plot_consecutive(cosines, adjusted=None, ax=None):
    """Line chart of cosine(layer l, layer l+1) for l = 0..L-1, optionally baseline-adjusted too."""
    cosines = _np(cosines)
    ax = _axes(ax, (6, 3))
    x = np.arange(1, len(cosines) + 1)
    ax.plot(x, cosines, "o-", label="raw cosine")
    if adjusted is not None:
        ax.plot(x, _np(adjusted), "s--", label="minus random-pair baseline")
    ax.set_xticks(x, [f"{a}→{b}" for a, b in zip(layer_labels(len(x) + 1)[:-1], layer_labels(len(x) + 1)[1:])])
    ax.set_xlabel("layer transition")
    ax.set_ylabel("cosine")
    ax.legend(fontsize=8)
    return ax


def plot_similarity_heatmap(matrix, labels=None, ax=None, title="cosine between layers", **kwargs):
    """Seaborn heatmap of a square layer-by-layer similarity matrix."""
    import seaborn as sns

    matrix = _np(matrix)
    if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1]:
        raise ValueError(f"matrix must be square, got shape {matrix.shape}.")
    labels = labels or layer_labels(matrix.shape[0])
    ax = _axes(ax, (5, 4))
    sns.heatmap(matrix, ax=ax, xticklabels=labels, yticklabels=labels, cmap="viridis",
                annot=matrix.shape[0] <= 13, fmt=".2f", annot_kws={"size": 7}, square=True, **kwargs)
    ax.set_xlabel("layer")
    ax.set_ylabel("layer")
    ax.set_title(title)
    return ax


def plot_trajectory(coords, names, ax=None):
    """PCA paths ``[k, L + 1, 2]``: one line per token, one marker per layer, layers annotated."""
    coords = _np(coords)
    if coords.ndim != 3 or coords.shape[0] != len(names) or coords.shape[2] < 2:
        raise ValueError(f"coords must be [len(names), layers, >=2], got {coords.shape} for {len(names)} names.")
    ax = _axes(ax, (6, 4.5))
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


def plot_token_heatmap(matrix, tokens, ax=None, title="", ylabel="layer", yticklabels=None, cmap="magma"):
    """``[rows, seq]`` heatmap with tokens along x (e.g. [CLS]'s attention per layer)."""
    matrix = _np(matrix)
    if matrix.ndim != 2 or matrix.shape[1] != len(tokens):
        raise ValueError(f"matrix must be [rows, {len(tokens)}] for {len(tokens)} tokens, got {matrix.shape}.")
    ax = _axes(ax, (max(5, 0.45 * len(tokens)), 0.4 * matrix.shape[0] + 1.5))
    im = ax.imshow(matrix, aspect="auto", cmap=cmap, vmin=0)
    ax.set_xticks(range(len(tokens)), tokens, rotation=70, fontsize=8)
    rows = yticklabels or [str(i) for i in range(1, matrix.shape[0] + 1)]
    ax.set_yticks(range(matrix.shape[0]), rows, fontsize=8)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.figure.colorbar(im, ax=ax, fraction=0.03)
    return ax


def plot_attention_shares(shares, ax=None, classes=TOKEN_CLASSES, title="where attention goes, per layer"):
    """Stacked bars ``[L, n_classes]``: share of attention per token class at each encoder layer."""
    shares = _np(shares)
    if shares.ndim != 2 or shares.shape[1] != len(classes):
        raise ValueError(f"shares must be [layers, {len(classes)}], got {shares.shape}.")
    ax = _axes(ax, (7, 3.5))
    x = np.arange(1, shares.shape[0] + 1)
    bottom = np.zeros(shares.shape[0])
    for k, name in enumerate(classes):
        ax.bar(x, shares[:, k], bottom=bottom, label=name)
        bottom += shares[:, k]
    ax.set_xticks(x, [str(i) for i in x])
    ax.set_xlabel("encoder layer")
    ax.set_ylabel("share of attention")
    ax.set_ylim(0, 1)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1, 1))
    ax.set_title(title)
    return ax


def plot_layer_head_table(values, ax=None, title="", cbar_label="", cmap="viridis", annotate=None):
    """``[L, heads]`` heatmap (entropy, previous-token score, ...), layers 1..L on y."""
    values = _np(values)
    if values.ndim != 2:
        raise ValueError(f"values must be [layers, heads], got {values.shape}.")
    n_layers, n_heads = values.shape
    ax = _axes(ax, (max(4, 0.5 * n_heads + 1.5), 0.4 * n_layers + 1.5))
    im = ax.imshow(values, aspect="auto", cmap=cmap)
    ax.set_xticks(range(n_heads), [str(h) for h in range(n_heads)], fontsize=8)
    ax.set_yticks(range(n_layers), [str(i) for i in range(1, n_layers + 1)], fontsize=8)
    ax.set_xlabel("head")
    ax.set_ylabel("layer")
    ax.set_title(title)
    if annotate if annotate is not None else values.size <= 12 * 12:
        for (i, j), v in np.ndenumerate(values):
            r, g, b, _ = im.cmap(im.norm(v))
            dark_cell = 0.299 * r + 0.587 * g + 0.114 * b < 0.5  # readable on light and dark colormaps
            ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=6, color="white" if dark_cell else "black")
    ax.figure.colorbar(im, ax=ax, fraction=0.04, label=cbar_label)
    return ax


def head_line_segments(n_tokens: int) -> list:
    """Segments from every left token (x=0) to every right token (x=1), row-major (query, key)."""
    return [[(0, -q), (1, -k)] for q in range(n_tokens) for k in range(n_tokens)]


def head_line_colors(weights, color=(0.12, 0.47, 0.71)) -> np.ndarray:
    """RGBA per segment with alpha equal to the attention weight (``[q, k]`` flattened)."""
    w = np.clip(_np(weights).reshape(-1), 0, 1)
    rgba = np.tile(np.array([*color, 0.0]), (w.size, 1))
    rgba[:, 3] = w
    return rgba


def plot_head_lines(weights, tokens, ax=None, title=""):
    """Token-to-token view of one head: queries on the left, keys on the right,
    one line per (query, key) pair with opacity proportional to the attention weight."""
    weights = _np(weights)
    n = len(tokens)
    if weights.shape != (n, n):
        raise ValueError(f"weights must be [{n}, {n}] for {n} tokens, got {weights.shape}.")
    ax = _axes(ax, (4, 0.3 * n + 1))
    lines = LineCollection(head_line_segments(n), colors=head_line_colors(weights), linewidths=2)
    ax.add_collection(lines)
    for i, tok in enumerate(tokens):
        ax.text(-0.05, -i, tok, ha="right", va="center", fontsize=8)
        ax.text(1.05, -i, tok, ha="left", va="center", fontsize=8)
    ax.text(-0.05, 1, "query", ha="right", va="center", fontsize=8, fontweight="bold")
    ax.text(1.05, 1, "key", ha="left", va="center", fontsize=8, fontweight="bold")
    ax.set_xlim(-0.6, 1.6)
    ax.set_ylim(-n + 0.5, 1.5)
    ax.axis("off")
    ax.set_title(title)
    return ax


def plot_layer_curves(curves: dict, ax=None, title="", ylabel="cosine", chance=None):
    """Several ``[L + 1]`` curves on one axes (e.g. within vs across sense similarity)."""
    if not curves:
        raise ValueError("curves must hold at least one {label: values} entry.")
    ax = _axes(ax, (6, 3))
    n = None
    for label, values in curves.items():
        values = _np(values)
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
    cosines = _np(cosines)
    if len(cosines) != len(tokens):
        raise ValueError(f"need one cosine per token: {len(cosines)} cosines for {len(tokens)} tokens.")
    ax = _axes(ax, (max(5, 0.45 * len(tokens)), 3))
    bars = ax.bar(range(len(tokens)), cosines, color="tab:blue")
    bars[highlight].set_color("tab:orange")
    ax.set_xticks(range(len(tokens)), tokens, rotation=70, fontsize=8)
    ax.set_ylim(min(0.0, float(cosines.min())) - 0.05, 1.05)
    ax.set_ylabel("cosine")
    ax.set_title(title)
    return ax
