"""Lesson 01 figures: similarities between static (input-embedding) word vectors, and the
embedding sum drawn step by step."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from helpers.common.style import DIVERGING, FIG_WIDTH_IN, MASKED_COLOR, as_matrix, colorbar, new_axes, to_numpy

FIGURE_MAX_WIDTH = FIG_WIDTH_IN  # inches: the page's column (style.PAGE_WIDTH_IN) less the notebook's margin


def similarity_heatmap(matrix, labels: list[str], ax=None, title: str | None = None):
    """A symmetric ``[n, n]`` cosine-similarity matrix with the values written in the cells.

    The diagonal (every word with itself, always 1) is greyed out and left out of the colour
    scale, so the colours spread over the pairs that differ; the scale is symmetric around 0.
    Returns ``(fig, ax, image)``.
    """
    values = as_matrix(matrix, "matrix")
    n = len(labels)
    if values.shape != (n, n):
        raise ValueError(f"matrix has shape {values.shape} but there are {n} labels.")
    off = ~np.eye(n, dtype=bool)
    limit = float(np.abs(values[off]).max()) if n > 1 else 1.0
    limit = max(0.05, np.ceil(limit * 20) / 20)  # round up to 0.05: a tidy colourbar end
    side = min(0.75 * n + 2.6, FIGURE_MAX_WIDTH)
    ax = new_axes(ax, (side, side - 1.4))
    fig = ax.figure
    cmap = plt.get_cmap(DIVERGING).with_extremes(bad=MASKED_COLOR)
    image = ax.imshow(np.ma.masked_array(values, mask=~off), cmap=cmap, vmin=-limit, vmax=limit)
    ax.set_xticks(range(n), labels, rotation=45, ha="right")
    ax.set_yticks(range(n), labels)
    for i in range(n):
        for j in range(n):
            strong = i != j and abs(values[i, j]) > 0.6 * limit
            ax.text(j, i, f"{values[i, j]:.2f}", ha="center", va="center", fontsize=8,
                    color="white" if strong else ("#666666" if i == j else "black"))
    colorbar(image, ax, "cosine similarity (diagonal, always 1, in grey)")
    if title:
        ax.set_title(title)
    fig.tight_layout()
    return fig, ax, image


EMBEDDING_STEPS = (("word", "word rows"), ("position", "+ position rows"), ("token_type", "+ segment rows"),
                   ("sum", "= sum"), ("layernorm", "LayerNorm(sum)\n= hidden_states[0]"))


def embedding_sum_figure(parts: dict, tokens: list[str], dims: int = 32, max_tokens: int = 20):
    """The embedding layer in five panels: the word, position and segment rows of each token,
    their sum, and the LayerNorm output (``parts`` from
    :func:`helpers.embeddings.rebuild.embedding_parts`).

    Rows are tokens, columns the first ``dims`` dimensions; the first four panels share one
    symmetric colour scale (they are added together), the LayerNorm panel has its own. Each
    title gives the mean length of the rows. Past ``max_tokens`` tokens the first ones are
    shown and the figure says so. Returns ``(fig, axes)``.
    """
    missing = [k for k, _ in EMBEDDING_STEPS if k not in parts]
    if missing:
        raise ValueError(f"parts lacks {missing}; build it with helpers.embeddings.rebuild.embedding_parts.")
    arrays = {k: to_numpy(parts[k]).astype(float) for k, _ in EMBEDDING_STEPS}
    n, width = arrays["word"].shape
    if len(tokens) != n:
        raise ValueError(f"{len(tokens)} tokens but the parts have {n} rows; they must match.")
    shown, cols = min(n, max_tokens), min(dims, width)
    raw_limit = max(float(np.abs(arrays[k][:shown, :cols]).max()) for k in ("word", "position", "token_type", "sum"))
    ln_limit = float(np.abs(arrays["layernorm"][:shown, :cols]).max())
    # Two rows within the page's column: the three looked-up rows, then their sum and its LayerNorm.
    panel = 0.15 * shown + 0.3
    height = 2 * panel + 2.2
    fig = plt.figure(figsize=(FIGURE_MAX_WIDTH, height))
    # six half-columns: three panels on top, the sum and its LayerNorm centred below them (no empty slot)
    grid = fig.add_gridspec(2, 7, width_ratios=[1, 1, 1, 1, 1, 1, 0.2], wspace=0.5, hspace=0.9 / panel,
                            left=0.16, right=0.9, bottom=0.55 / height, top=1 - 1.15 / height)
    spots = ((0, slice(0, 2)), (0, slice(2, 4)), (0, slice(4, 6)), (1, slice(1, 3)), (1, slice(3, 5)))
    axes = [fig.add_subplot(grid[r, c]) for r, c in spots]
    for ax, (key, name) in zip(axes, EMBEDDING_STEPS):
        limit = ln_limit if key == "layernorm" else raw_limit
        image = ax.imshow(arrays[key][:shown, :cols], cmap=DIVERGING, vmin=-limit, vmax=limit, aspect="auto",
                          interpolation="nearest")
        mean_norm = np.linalg.norm(arrays[key], axis=1).mean()
        ax.set_title(f"{name}\nmean \u2016row\u2016 {mean_norm:.2f}", fontsize=8.5)
        ax.set_xticks([0, cols - 1], ["0", str(cols - 1)])
        ax.set_yticks(range(shown), tokens[:shown] if key in ("word", "sum") else [])
        if key in ("sum", "layernorm"):
            cax = fig.add_subplot(grid[0, 6] if key == "sum" else grid[1, 6])
            fig.colorbar(image, cax=cax, label="value (the three lookups\nand their sum)" if key == "sum" else "value (LayerNorm)")
    axes[0].set_ylabel("token")
    axes[3].set_ylabel("token")
    fig.supxlabel(f"dimensions 0\u2013{cols - 1} of {width}", fontsize=9, y=0.01, x=0.5)
    suffix = f" (first {shown} of {n} tokens)" if shown < n else ""
    fig.suptitle("The embedding layer, step by step: three looked-up rows per token,\n"
                 f"added, then normalised{suffix}", fontsize=10, y=0.99)
    return fig, axes
