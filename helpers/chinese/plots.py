"""Lesson 15 figures: [CLS] across layers over many Chinese sentences, and [CLS] attention per layer.

Figures label a token position by its number (``1`` = the first character, as the lesson prints
them) with the character under it: ``helpers.common.style`` registers a Chinese font (a subset of
Noto Sans SC) that Matplotlib falls back to for CJK glyphs.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from helpers.attention.compute import TOKEN_CLASSES
from helpers.common.style import FIG_WIDTH_IN, SEQUENTIAL, colorbar, layer_labels, legend_below, to_numpy
from helpers.layerwalk.plots import plot_median_band, transition_labels

CLASS_NAMES = {"[CLS]": "[CLS]", "[SEP]": "[SEP]", "punctuation": "punctuation", "other": "characters and words"}


def position_labels(tokens) -> list[str]:
    """``[CLS]``, ``1``, ``2``, ..., ``[SEP]``: token positions without CJK glyphs."""
    out, k = [], 0
    for t in tokens:
        if t in ("[CLS]", "[SEP]", "[PAD]"):
            out.append(t)
        else:
            k += 1
            out.append(str(k))
    return out


def plot_cls_walk(walk, this, baseline=None, axes=None):
    """Three panels over the sentences of ``walk`` (a :class:`~helpers.chinese.compute.ClsWalk`):
    ‖[CLS]‖ per layer, the cosine of [CLS] between consecutive layers, and the share of [CLS]'s
    attention on [CLS], [SEP] and the other tokens -- each the median with its interquartile band;
    ``this`` (a one-sentence ClsWalk) is drawn on top. ``baseline`` ``[n_pairs, L]``: cosines of
    unrelated tokens one layer apart (the course's random-pair control), drawn as its median and band.
    The panels are stacked (one column, the page's width). Returns the three axes."""
    if axes is None:
        _, axes = plt.subplots(3, 1, figsize=(FIG_WIDTH_IN, 9.6), layout="constrained")
    ax_n, ax_c, ax_a = axes
    n = walk.norms.shape[0]
    L = walk.cosines.shape[1]
    plot_median_band(walk.norms, ax=ax_n, label=f"median over {n} sentences", band_label="interquartile band")
    ax_n.plot(range(L + 1), to_numpy(this.norms[0]), "s--", color="tab:orange", label="this sentence")
    ax_n.set_xticks(range(L + 1), layer_labels(L + 1))
    ax_n.set(xlabel="layer", ylabel="L2 norm ‖h[CLS]‖", title="[CLS] norm per layer")
    legend_below(ax_n, ncol=3)  # below: a legend inside would sit on the band
    plot_median_band(walk.cosines, ax=ax_c, label=f"[CLS], median over {n} sentences",
                     band_label="[CLS] interquartile band")
    ax_c.plot(range(L), to_numpy(this.cosines[0]), "s--", color="tab:orange", label="[CLS] of this sentence")
    if baseline is not None:
        plot_median_band(baseline, ax=ax_c, label="unrelated tokens (control), median", color="tab:gray",
                         band_label="control interquartile band", hatch="//")
    ax_c.set_xticks(range(L), transition_labels(L))
    ax_c.set(xlabel="layers compared", ylabel="cosine", title="[CLS]: cosine between consecutive layers")
    legend_below(ax_c, ncol=2)  # below: never on the bands
    colors = dict(zip(TOKEN_CLASSES, ("tab:blue", "tab:red", "tab:purple", "tab:green")))
    att = to_numpy(walk.attention)  # [N, L, 4]
    for k, name in enumerate(TOKEN_CLASSES):
        if not att[:, :, k].any():
            continue
        plot_median_band(att[:, :, k], ax=ax_a, x=np.arange(1, L + 1), label=CLASS_NAMES[name],
                         color=colors[name], band_label="_nolegend_")
        ax_a.axhline(float(np.median(to_numpy(walk.uniform)[:, k])), color=colors[name], ls=":", lw=1)
    ax_a.set_xticks(range(1, L + 1), [str(l) for l in range(1, L + 1)])
    ax_a.set(xlabel="layer", ylabel="share of [CLS]'s attention", ylim=(0, 1),
             title="where [CLS] looks (dotted: even spread)")
    legend_below(ax_a, ncol=4)  # below: never on the dotted even-spread lines
    return axes


def plot_cls_attention(attention, tokens, ax=None):
    """``attention`` ``[L, seq]``: [CLS]'s attention (mean over heads) on every token, per layer, as
    a heatmap with a labelled colourbar. Returns the axes."""
    att = to_numpy(attention)
    if att.ndim != 2 or att.shape[1] != len(tokens):
        raise ValueError(f"attention must be [layers, {len(tokens)}], got shape {att.shape}.")
    if ax is None:
        _, ax = plt.subplots(figsize=(min(FIG_WIDTH_IN, 2 + 0.3 * len(tokens)), 0.5 * att.shape[0] + 1.4))
    image = ax.imshow(att, cmap=SEQUENTIAL, vmin=0, vmax=1, aspect="auto")
    numbered = [p if p == t else f"{p}\n{t}" for p, t in zip(position_labels(tokens), tokens)]
    ax.set_xticks(range(len(tokens)), numbered, fontsize=8)
    ax.set_yticks(range(att.shape[0]), [str(l) for l in range(1, att.shape[0] + 1)])
    ax.set(xlabel="key: position and character", ylabel="layer",
           title="attention of [CLS] (mean over heads) per layer")
    colorbar(image, ax, "attention probability")
    return ax
