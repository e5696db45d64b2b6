"""Plot functions for lessons 01-03: each takes data (+ an optional ``ax``) and returns what it drew.

Nothing here runs the model; pass tensors from a :class:`helpers.trace.Trace` or from
:mod:`helpers.rebuild`.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import torch


def _new_ax(ax, figsize):
    if ax is None:
        fig, ax = plt.subplots(figsize=figsize)
    return ax.figure, ax


def _as_matrix(values, name: str) -> np.ndarray:
    if isinstance(values, torch.Tensor):
        values = values.detach().cpu().numpy()
    array = np.asarray(values, dtype=float)
    if array.ndim != 2:
        raise ValueError(f"{name} must be a 2-D matrix, got shape {array.shape}.")
    return array


def attention_heatmap(probs, tokens: list[str], ax=None, title: str | None = None, vmax: float | None = None):
    """One head's ``[seq, seq]`` attention matrix (rows = queries, columns = keys) with token labels.

    Returns ``(fig, ax, image)``; the image artist is what an explorer updates with ``set_data``.
    """
    matrix = _as_matrix(probs, "probs")
    if matrix.shape != (len(tokens), len(tokens)):
        raise ValueError(f"probs has shape {matrix.shape} but there are {len(tokens)} tokens; they must match.")
    size = max(4.0, 0.32 * len(tokens) + 2)
    fig, ax = _new_ax(ax, (size + 1, size))
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


def similarity_heatmap(matrix, labels: list[str], ax=None, title: str | None = None):
    """A symmetric ``[n, n]`` cosine-similarity matrix with the values written in the cells."""
    values = _as_matrix(matrix, "matrix")
    if values.shape != (len(labels), len(labels)):
        raise ValueError(f"matrix has shape {values.shape} but there are {len(labels)} labels.")
    fig, ax = _new_ax(ax, (1.0 * len(labels) + 2, 1.0 * len(labels) + 1))
    image = ax.imshow(values, cmap="coolwarm", vmin=-1, vmax=1)
    ax.set_xticks(range(len(labels)), labels, rotation=45, ha="right")
    ax.set_yticks(range(len(labels)), labels)
    for i in range(len(labels)):
        for j in range(len(labels)):
            ax.text(j, i, f"{values[i, j]:.2f}", ha="center", va="center", fontsize=8)
    if title:
        ax.set_title(title)
    fig.tight_layout()
    return fig, ax, image


def bar_chart(values: dict[str, float], ax=None, title: str | None = None, ylabel: str = "", log: bool = False):
    """Bars labelled by the dict keys; returns ``(fig, ax, bars)``."""
    if not isinstance(values, dict) or not values:
        raise ValueError("values must be a non-empty dict of label -> number.")
    fig, ax = _new_ax(ax, (max(5.0, 0.9 * len(values) + 2), 3.5))
    labels = list(values)
    bars = ax.bar(range(len(labels)), [float(values[k]) for k in labels], color="tab:blue")
    ax.set_xticks(range(len(labels)), labels, rotation=30, ha="right")
    if log:
        ax.set_yscale("log")
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    fig.tight_layout()
    return fig, ax, bars
