"""Lesson 08's figure of every layer's and every head's attention at once
(:mod:`helpers.attention`): :func:`attention_model_view`, one static ``L x A`` grid of small
heatmaps, the way bertviz's model view lays them out, sized to the page (:data:`PAGE_WIDTH`).
Re-exported by ``helpers/attention/plots.py``.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from helpers.common.style import FIG_WIDTH_IN, SEQUENTIAL, to_numpy


PAGE_WIDTH = FIG_WIDTH_IN  # inches: the website's text column at 100 dpi, less the notebook's margin


def _model_view_attentions(trace_or_attentions) -> np.ndarray:
    """``[L, A, n, n]`` attention probabilities from a Trace, an ``[L, A, n, n]`` array or a list
    of ``L`` arrays ``[A, n, n]`` (``outputs.attentions`` without its batch dimension)."""
    source = getattr(trace_or_attentions, "attentions", trace_or_attentions)
    if isinstance(source, (list, tuple)):
        if not source:
            raise ValueError("attentions must hold at least one layer.")
        source = np.stack([np.asarray(to_numpy(a), dtype=float) for a in source])
    values = np.asarray(to_numpy(source), dtype=float)
    if values.ndim == 5 and values.shape[1] == 1:  # a batch of one, as the model returns it
        values = values[:, 0]
    if values.ndim != 4 or values.shape[-1] != values.shape[-2]:
        raise ValueError("attention_model_view needs a Trace, an [L, A, n, n] array or a list of L [A, n, n] "
                         f"attention maps; got shape {values.shape}.")
    if values.size and (np.nanmin(values) < -1e-6 or np.nanmax(values) > 1 + 1e-6):
        raise ValueError("attention_model_view draws attention probabilities (0 to 1); got values from "
                         f"{np.nanmin(values):.3g} to {np.nanmax(values):.3g}.")
    return values


def attention_model_view(trace_or_attentions, tokens: list[str] | None = None, highlight=(), title: str | None = None,
                         max_width: float = PAGE_WIDTH, highlight_label: str = "the head(s) named in the text"):
    """Every head of every layer for one input, as an ``L × A`` grid of small attention maps
    (bertviz's *model view*, static): row ``l`` is encoder layer ``l`` (1-based, as
    ``trace.attention(l)``), column ``h`` head ``h``; in each map rows are queries and columns
    keys, in token order. One colour map (:data:`~helpers.common.style.SEQUENTIAL`) on a fixed
    0–1 scale with one labelled colourbar, so every map compares with every other and with the
    course's other attention figures. No tick labels per map: a long input just makes the maps
    denser.

    ``trace_or_attentions``: a :class:`~helpers.model.trace.Trace`, an ``[L, A, n, n]`` array or
    tensor, or a list of ``L`` ``[A, n, n]`` maps. ``tokens``: the input's tokens (default the
    trace's), used to check the maps and to say how long the input is. ``highlight``: ``(layer,
    head)`` pairs (layer 1-based) framed in orange, explained by ``highlight_label``. The figure is at most ``max_width`` inches wide
    (the website's column) with text of at least 8 pt; more layers make it taller.
    Returns ``(fig, axes)``, ``axes`` an ``[L, A]`` array.
    """
    from matplotlib.textpath import TextToPath
    from matplotlib.font_manager import FontProperties

    from helpers.common.style import HIGHLIGHT

    maps = _model_view_attentions(trace_or_attentions)
    if tokens is None:
        tokens = getattr(trace_or_attentions, "tokens", None)
        if tokens is None:
            raise ValueError("tokens are needed with an array of attentions (e.g. trace.tokens).")
    n_layers, n_heads, n, _ = maps.shape
    if len(tokens) != n:
        raise ValueError(f"the attention maps are over {n} tokens but {len(tokens)} tokens were given; they must match.")
    marks = [tuple(h) for h in (highlight or ())]
    for layer, head in marks:
        if not (1 <= int(layer) <= n_layers and 0 <= int(head) < n_heads):
            raise ValueError(f"highlight ({layer}, {head}) is out of range: layers are 1 to {n_layers}, "
                             f"heads 0 to {n_heads - 1}.")

    def width_in(text, pt=8.0):
        return TextToPath().get_text_width_height_descent(text, FontProperties(size=pt), ismath=False)[0] / 72

    left = width_in(f"layer {n_layers}") + 0.12
    right, gap = 0.06, 0.05
    cell = min(1.0, (max_width - left - right - gap * (n_heads - 1)) / n_heads)
    if cell < 0.2:
        raise ValueError(f"{n_heads} heads do not fit {max_width} inches at a readable size; draw fewer heads.")
    long_labels = width_in(f"head {n_heads - 1}") <= cell + gap - 0.03
    grid_w = n_heads * cell + (n_heads - 1) * gap
    width = max_width  # the titles need the column's width; a small grid sits in its middle
    left += (width - left - grid_w - right) / 2
    top = 0.62 + (0.0 if long_labels else 0.17) + (0.17 if marks else 0.0)  # titles, column labels
    bottom = 0.7  # the colourbar and its label
    height = top + n_layers * cell + (n_layers - 1) * gap + bottom
    # A long input has more token pairs than a map has pixels (at the website's 2x): averaging
    # them away would hide its diagonals and columns, so each pixel shows a block's largest value.
    block = int(np.ceil(n / max(8, int(cell * 200))))
    if block > 1:
        pad = (-n) % block
        padded = np.pad(maps, ((0, 0), (0, 0), (0, pad), (0, pad)))
        m = padded.shape[-1] // block
        maps = padded.reshape(n_layers, n_heads, m, block, m, block).max(axis=(3, 5))
    fig = plt.figure(figsize=(width, height))
    axes = np.empty((n_layers, n_heads), dtype=object)
    for l in range(n_layers):
        for h in range(n_heads):
            x = left + h * (cell + gap)
            y = height - top - (l + 1) * cell - l * gap
            ax = fig.add_axes([x / width, y / height, cell / width, cell / height])
            image = ax.imshow(maps[l, h], cmap=SEQUENTIAL, vmin=0.0, vmax=1.0, interpolation="nearest")
            ax.set_xticks([])
            ax.set_yticks([])
            for spine in ax.spines.values():
                spine.set_visible(True)
                spine.set_linewidth(0.4)
                spine.set_color("#888888")
            if (l + 1, h) in marks:
                for spine in ax.spines.values():
                    spine.set_color(HIGHLIGHT)
                    spine.set_linewidth(2.0)
            # labels as figure texts, so the picture's description is its title, not 72 panels
            if h == 0:
                fig.text((x - 0.06) / width, (y + cell / 2) / height, f"layer {l + 1}", ha="right", va="center",
                         fontsize=8, gid="layer label")
            if l == 0:
                fig.text((x + cell / 2) / width, (y + cell + 0.04) / height, f"head {h}" if long_labels else str(h),
                         ha="center", va="bottom", fontsize=8, gid="head label")
            axes[l, h] = ax
    if not long_labels:
        fig.text((left + grid_w / 2) / width, 1 - (top - 0.05) / height, "head", ha="center", va="bottom",
                 fontsize=8)
    heading = title or f"attention probability of every head, layer by layer ({n} tokens)"
    fig.suptitle(heading, x=0.5, y=1 - 0.06 / height, ha="center", va="top", fontsize=10)
    note = ("in each map: rows = queries, columns = keys, in token order; one 0\u20131 colour scale for all"
            if block == 1 else f"rows = queries, columns = keys; a long input: each pixel is the largest "
            f"probability of {block} \u00d7 {block} token pairs")
    fig.text(0.5, 1 - 0.28 / height, note, ha="center", va="top", fontsize=8, color="#333333")
    if marks:
        fig.text(0.5, 1 - 0.45 / height, f"orange frame: {highlight_label}", ha="center", va="top", fontsize=8,
                 color="#a04f00")
    bar_w = min(3.2, grid_w)
    cax = fig.add_axes([(left + (grid_w - bar_w) / 2) / width, 0.42 / height, bar_w / width, 0.1 / height],
                       label="<colorbar>")
    fig.colorbar(image, cax=cax, orientation="horizontal", label="attention probability",
                 ticks=[0, 0.25, 0.5, 0.75, 1])
    cax.tick_params(labelsize=8)
    cax.xaxis.label.set_size(8.5)
    return fig, axes
