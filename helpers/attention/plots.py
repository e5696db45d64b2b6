"""Attention figures (lessons 02 and 05). Each takes data (plus an optional ``ax``) and returns
what it drew; nothing here runs the model."""

from __future__ import annotations

import numpy as np
from matplotlib.collections import LineCollection

from helpers.attention.compute import TOKEN_CLASSES
from helpers.common.style import as_matrix, new_axes, to_numpy


def attention_heatmap(probs, tokens: list[str], ax=None, title: str | None = None, vmax: float | None = None):
    """One head's ``[seq, seq]`` attention matrix (rows = queries, columns = keys) with token labels.

    Returns ``(fig, ax, image)``; the image artist is what an explorer updates with ``set_data``.
    """
    matrix = as_matrix(probs, "probs")
    if matrix.shape != (len(tokens), len(tokens)):
        raise ValueError(f"probs has shape {matrix.shape} but there are {len(tokens)} tokens; they must match.")
    size = max(4.0, 0.32 * len(tokens) + 2)
    ax = new_axes(ax, (size + 1, size))
    fig = ax.figure
    image = ax.imshow(matrix, cmap="viridis", vmin=0.0, vmax=matrix.max() if vmax is None else vmax)
    ticks = range(len(tokens))
    ax.set_xticks(ticks, tokens, rotation=90, fontsize=8)
    ax.set_yticks(ticks, tokens, fontsize=8)
    ax.set_xlabel("key (attended to)")
    ax.set_ylabel("query (attending)")
    if title:
        ax.set_title(title)
    fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04, label="attention probability")
    fig.tight_layout()
    return fig, ax, image


def plot_token_heatmap(matrix, tokens, ax=None, title="", ylabel="layer", yticklabels=None, cmap="magma"):
    """``[rows, seq]`` heatmap with tokens along x (e.g. [CLS]'s attention per layer)."""
    matrix = to_numpy(matrix)
    if matrix.ndim != 2 or matrix.shape[1] != len(tokens):
        raise ValueError(f"matrix must be [rows, {len(tokens)}] for {len(tokens)} tokens, got {matrix.shape}.")
    ax = new_axes(ax, (max(5, 0.45 * len(tokens)), 0.4 * matrix.shape[0] + 1.5))
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
    shares = to_numpy(shares)
    if shares.ndim != 2 or shares.shape[1] != len(classes):
        raise ValueError(f"shares must be [layers, {len(classes)}], got {shares.shape}.")
    ax = new_axes(ax, (7, 3.5))
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
    values = to_numpy(values)
    if values.ndim != 2:
        raise ValueError(f"values must be [layers, heads], got {values.shape}.")
    n_layers, n_heads = values.shape
    ax = new_axes(ax, (max(4, 0.5 * n_heads + 1.5), 0.4 * n_layers + 1.5))
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
    w = np.clip(to_numpy(weights).reshape(-1), 0, 1)
    rgba = np.tile(np.array([*color, 0.0]), (w.size, 1))
    rgba[:, 3] = w
    return rgba


def plot_head_lines(weights, tokens, ax=None, title=""):
    """Token-to-token view of one head: queries on the left, keys on the right,
    one line per (query, key) pair with opacity proportional to the attention weight."""
    weights = to_numpy(weights)
    n = len(tokens)
    if weights.shape != (n, n):
        raise ValueError(f"weights must be [{n}, {n}] for {n} tokens, got {weights.shape}.")
    ax = new_axes(ax, (4, 0.3 * n + 1))
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
