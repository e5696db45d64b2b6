"""Lesson 14 figure: the masked-LM lens as a layer x rank table of predicted tokens."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from helpers.common.style import FIG_WIDTH_IN, SEQUENTIAL, colorbar, layer_labels, to_numpy


def plot_lens(result, ax=None):
    """Rows: layers (emb at the top); columns: the top-k predictions of the head at the mask
    position, written in each cell with their probability and coloured by it (one shared 0..1 scale).
    Returns the axes."""
    probs = np.asarray(to_numpy(result.top_probs), dtype=float)
    if probs.ndim != 2 or len(result.top_tokens) != probs.shape[0]:
        raise ValueError("result must be a LensResult from helpers.lens.compute.masked_lm_lens.")
    n_layers, k = probs.shape
    if ax is None:
        _, ax = plt.subplots(figsize=(min(FIG_WIDTH_IN, 1.1 * k + 2.2), 0.5 * n_layers + 1.4))  # the page's column
    im = ax.imshow(probs, cmap=SEQUENTIAL, vmin=0, vmax=1, aspect="auto")
    for l in range(n_layers):
        for j in range(k):
            r, g, b, _ = im.cmap(im.norm(probs[l, j]))
            dark = 0.299 * r + 0.587 * g + 0.114 * b < 0.5
            ax.text(j, l, f"{result.top_tokens[l][j]}\n{probs[l, j]:.2f}", ha="center", va="center", fontsize=8,
                    color="white" if dark else "black")
    ax.set_yticks(range(n_layers), layer_labels(n_layers))
    ax.set_xticks(range(k), [f"#{j + 1}" for j in range(k)])
    ax.set_ylabel("layer fed to the head")
    ax.set_xlabel("rank of the prediction")
    ax.set_title("masked-LM lens: top predictions at [MASK] per layer")
    colorbar(im, ax, "probability under the lens")
    ax.figure.tight_layout()
    return ax
