"""Lesson 01 figures: similarities between static (input-embedding) word vectors."""

from __future__ import annotations

from helpers.common.style import as_matrix, new_axes


def similarity_heatmap(matrix, labels: list[str], ax=None, title: str | None = None):
    """A symmetric ``[n, n]`` cosine-similarity matrix with the values written in the cells."""
    values = as_matrix(matrix, "matrix")
    if values.shape != (len(labels), len(labels)):
        raise ValueError(f"matrix has shape {values.shape} but there are {len(labels)} labels.")
    ax = new_axes(ax, (1.0 * len(labels) + 2, 1.0 * len(labels) + 1))
    fig = ax.figure
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
