"""Attention figures (lessons 02 and 08). Each takes data (plus an optional ``ax``) and returns
what it drew; nothing here runs the model."""

from __future__ import annotations

from dataclasses import dataclass

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.collections import LineCollection
from matplotlib.colors import ListedColormap

from helpers.attention.compute import TOKEN_CLASSES, attention_by_word, word_groups
from helpers.common.style import (
    DIVERGING, FIG_WIDTH_IN, MASKED_COLOR, SEQUENTIAL, as_matrix, cell_text, colorbar, end_labels, legend_below,
    new_axes, scale_note, to_numpy,
)
from helpers.attention.model_view import PAGE_WIDTH, attention_model_view  # noqa: F401

MAX_TOKEN_LABELS = 36  # more token labels than this on one axis cannot be read at 8 pt in the 672 px column
FIGURE_MAX_WIDTH = FIG_WIDTH_IN  # inches: the page's column (style.PAGE_WIDTH_IN) less the notebook's margin
MAX_SERIES = 4  # lines one panel tells apart; more are named at their ends instead of in a legend


def token_window(n_tokens: int, start: int = 0, size: int | None = None) -> tuple[int, int]:
    """``(start, stop)`` of the tokens a heatmap shows: all of them up to ``size`` (default
    :data:`MAX_TOKEN_LABELS`), otherwise a window of ``size`` tokens from ``start``."""
    size = MAX_TOKEN_LABELS if size is None else size
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ValueError(f"size must be a positive int, got {size!r}.")
    size = min(size, n_tokens)
    if isinstance(start, bool) or not isinstance(start, int) or not 0 <= start <= n_tokens - size:
        raise ValueError(f"start {start!r} is out of range: with {n_tokens} tokens and a window of {size}, "
                         f"valid starts are 0 to {n_tokens - size}.")
    return start, start + size


def window_note(start: int, stop: int, n_tokens: int) -> str:
    """What a windowed heatmap shows, for its title ('' when it shows every token)."""
    if stop - start >= n_tokens:
        return ""
    return f"tokens {start}\u2013{stop - 1} of {n_tokens} (a window; its rows need not sum to 1)"


@dataclass
class TokenHeatmap:
    """The artists of a token x token heatmap that an explorer changes: the image, the
    token labels (plain texts, so an update can rewrite and blit them) and the title."""

    fig: object
    ax: object
    image: object
    x_labels: list
    y_labels: list

    def set_tokens(self, tokens: list[str]) -> None:
        for text, token in zip(self.x_labels, tokens):
            text.set_text(token)
        for text, token in zip(self.y_labels, tokens):
            text.set_text(token)


def token_heatmap(matrix, tokens: list[str], ax=None, title: str | None = None, vmin: float = 0.0,
                  vmax: float | None = 1.0, cmap: str = SEQUENTIAL, cbar_label: str = "attention probability",
                  xlabel: str = "key (attended to)", ylabel: str = "query (attending)") -> TokenHeatmap:
    """A ``[k, k]`` matrix over ``k`` tokens with the tokens written along both axes.

    Attention probabilities use one style everywhere: the course's sequential map on the full
    0-1 scale. ``vmax=None`` (or below 1) zooms to the data and prints the range in the title."""
    values = as_matrix(matrix, "matrix")
    k = len(tokens)
    if values.shape != (k, k):
        raise ValueError(f"the matrix has shape {values.shape} but there are {k} tokens; they must match.")
    size = min(max(4.0, 0.2 * k + 2.4), FIGURE_MAX_WIDTH - 1.3)  # MAX_TOKEN_LABELS tokens still get 8 pt labels
    ax = new_axes(ax, (size + 1.3, size + 0.3))
    top = float(values.max()) if vmax is None else vmax
    if top < 1.0 and cbar_label == "attention probability":
        title = "\n".join(t for t in (title, scale_note(vmin, top)) if t)
    image = ax.imshow(values, cmap=cmap, vmin=vmin, vmax=top)
    ax.set_xticks(range(k))  # tick marks only: the labels are texts an explorer can rewrite
    ax.set_yticks(range(k))
    ax.tick_params(labelbottom=False, labelleft=False, length=2)
    x_labels = [ax.annotate(t, xy=(i, 0), xycoords=("data", "axes fraction"), xytext=(0, -4),
                            textcoords="offset points", rotation=90, ha="center", va="top", fontsize=8,
                            annotation_clip=False) for i, t in enumerate(tokens)]
    y_labels = [ax.annotate(t, xy=(0, i), xycoords=("axes fraction", "data"), xytext=(-4, 0),
                            textcoords="offset points", ha="right", va="center", fontsize=8,
                            annotation_clip=False) for i, t in enumerate(tokens)]
    ax.set_xlabel(xlabel, labelpad=max(len(t) for t in tokens) * 5.2 + 6)
    ax.set_ylabel(ylabel, labelpad=max(len(t) for t in tokens) * 5.2 + 6)
    if title:
        ax.set_title(title)
    colorbar(image, ax, cbar_label)
    ax.figure.tight_layout()
    return TokenHeatmap(ax.figure, ax, image, x_labels, y_labels)


def attention_heatmap(probs, tokens, ax=None, title: str | None = None, vmax: float | None = 1.0,
                      start: int = 0, size: int | None = None, by_word: bool = False, word_starts=None):
    """One head's ``[seq, seq]`` attention matrix (rows = queries, columns = keys) with token labels.

    With more than ``size`` tokens (default :data:`MAX_TOKEN_LABELS`, the most that stay
    readable) it shows the window of queries and keys ``start .. start + size - 1`` and says so
    in the title. The colour scale is 0-1 (``vmax=None`` zooms to the data and says so in the
    title). ``by_word=True`` (``tokens`` must then be the :class:`~helpers.model.trace.Trace`)
    shows words instead of WordPieces: ``attention_by_word`` in ``helpers/attention/compute.py``
    (keys summed over a word's pieces, queries averaged: Clark et al. 2019); ``word_starts`` for
    Chinese, see ``word_groups``. Returns ``(fig, ax, image)``.
    """
    from helpers.model.trace import Trace

    if by_word:
        if not isinstance(tokens, Trace):
            raise ValueError("by_word=True needs the words of the input: pass the Trace as tokens, "
                             "e.g. attention_heatmap(trace.attention(l, h), trace, by_word=True).")
        groups = word_groups(tokens, word_starts)
        probs, tokens = attention_by_word(torch.as_tensor(to_numpy(probs)), groups), list(groups.labels)  # cpu: drawn
        title = "\n".join(t for t in (title, "by word: keys summed over a word's pieces, queries averaged") if t)
    elif isinstance(tokens, Trace):
        tokens = tokens.tokens
    matrix = as_matrix(probs, "probs")
    if matrix.shape != (len(tokens), len(tokens)):
        raise ValueError(f"probs has shape {matrix.shape} but there are {len(tokens)} tokens; they must match.")
    lo, hi = token_window(len(tokens), start, size)
    note = window_note(lo, hi, len(tokens))
    full_title = "\n".join(t for t in (title, note) if t) or None
    drawn = token_heatmap(matrix[lo:hi, lo:hi], tokens[lo:hi], ax=ax, title=full_title, vmax=vmax)
    return drawn.fig, drawn.ax, drawn.image


def attention_steps_figure(scores, masked_scores, probs, context, tokens: list[str], title: str = "",
                           max_tokens: int = 16):
    """One head's attention as four heatmaps, in reading order: the scaled scores
    $QK^\\top/\\sqrt d$, the scores plus the additive mask (masked keys in grey: ``finfo.min``,
    effectively $-\\infty$), the softmax $P$, and the context $P V$ (``[seq, d]``).

    Two rows of two panels, so every token label has room at 8 pt within
    :data:`FIGURE_MAX_WIDTH`; the panels of a row share their rows (the queries), so only the
    left one names them. ``scores``, ``masked_scores``, ``probs``: ``[seq, seq]``; ``context``:
    ``[seq, d]``. The two score panels share one symmetric scale. Past ``max_tokens`` tokens
    only the first ones are shown and the figure says so. Returns ``(fig, axes)``.
    """
    s, m, p, c = (as_matrix(x, name) for x, name in ((scores, "scores"), (masked_scores, "masked_scores"),
                                                       (probs, "probs"), (context, "context")))
    n = len(tokens)
    for name, x in (("scores", s), ("masked_scores", m), ("probs", p)):
        if x.shape != (n, n):
            raise ValueError(f"{name} has shape {x.shape} but there are {n} tokens; it must be [{n}, {n}].")
    if c.shape[0] != n:
        raise ValueError(f"context has {c.shape[0]} rows but there are {n} tokens.")
    masked = m < -1e4  # finfo.min added: the key is padding
    keep = shown_positions(masked.any(0), max_tokens)
    k, first = len(keep), sum(1 for i, j in enumerate(keep) if i == j)
    s, m, p, c, masked = s[np.ix_(keep, keep)], m[np.ix_(keep, keep)], p[np.ix_(keep, keep)], c[keep], \
        masked[np.ix_(keep, keep)]
    tokens = [tokens[i] for i in keep]
    limit = float(np.abs(s).max())
    # Heights in inches: a panel gives every token 0.14 in (more than an 8 pt label needs);
    # below each panel, room for the rotated token labels; above, for the two-line titles.
    label_room = 0.065 * max(len(t) for t in tokens) + 0.15
    panel, title_room, top_room = 0.14 * k + 0.3, 0.45, 0.3
    height = top_room + 2 * (title_room + panel + label_room)
    fig = plt.figure(figsize=(FIGURE_MAX_WIDTH, height))
    grid = fig.add_gridspec(2, 5, width_ratios=[1, 0.05, 0.28, 1, 0.05], wspace=0.08,
                            hspace=(title_room + label_room) / panel, left=0.12, right=0.92,
                            bottom=label_room / height, top=1 - (top_room + title_room) / height)
    ax_s, ax_m = fig.add_subplot(grid[0, 0]), fig.add_subplot(grid[0, 3])
    ax_p, ax_c = fig.add_subplot(grid[1, 0]), fig.add_subplot(grid[1, 3])
    score_kw = dict(cmap=DIVERGING, vmin=-limit, vmax=limit, aspect="auto", interpolation="nearest")
    ax_s.imshow(s, **score_kw)
    bad = plt.get_cmap(DIVERGING).with_extremes(bad=MASKED_COLOR)
    im_m = ax_m.imshow(np.ma.masked_array(m, mask=masked), **{**score_kw, "cmap": bad})
    fig.colorbar(im_m, cax=fig.add_subplot(grid[0, 4]), label="score (both panels)")
    im_p = ax_p.imshow(p, cmap=SEQUENTIAL, vmin=0, vmax=1, aspect="auto", interpolation="nearest")
    fig.colorbar(im_p, cax=fig.add_subplot(grid[1, 1]), label="attention probability")
    c_limit = float(np.abs(c).max())
    im_c = ax_c.imshow(c, cmap=DIVERGING, vmin=-c_limit, vmax=c_limit, aspect="auto", interpolation="nearest")
    fig.colorbar(im_c, cax=fig.add_subplot(grid[1, 4]), label="context value")
    titles = ("1. scores QK\u1d40/\u221ad", "2. + mask\n(grey: padding, finfo.min \u2248 \u2212\u221e)",
              "3. softmax: P (each row sums to 1)", f"4. context P\u00b7V  [{n}, {c.shape[1]}]")
    for ax, name in zip((ax_s, ax_m, ax_p, ax_c), titles):
        ax.set_title(name, fontsize=9)
        ax.set_yticks(range(k), tokens if ax in (ax_s, ax_p) else [])
    for ax in (ax_s, ax_m, ax_p):
        ax.set_xticks(range(k), tokens, rotation=90)
    ax_c.set_xticks([0, c.shape[1] - 1], ["0", str(c.shape[1] - 1)])
    ax_c.set_xlabel("value dimension")
    ax_s.set_ylabel("query")
    ax_p.set_ylabel("query")
    suffix = ""
    if k < n:
        suffix = f" (first {first} of {n} tokens" + (f", then {k - first} padded" if k > first else "") + ")"
    fig.suptitle((title + suffix) if title else suffix.strip(), fontsize=10, y=1 - 0.05 / height, va="top")
    return fig, [ax_s, ax_m, ax_p, ax_c]


def shown_positions(padded, max_tokens: int, padded_shown: int = 2) -> list[int]:
    """The positions a picture of at most ``max_tokens`` tokens shows: all of them when they
    fit; else the first ones and, when the input has padding (``padded``: one bool per
    position), its first ``padded_shown`` padded positions at the end, so the mask still shows."""
    padded = np.asarray(padded, dtype=bool)
    n = len(padded)
    if n <= max_tokens or padded[:max_tokens].any():
        return list(range(min(n, max_tokens)))
    pads = [int(i) for i in np.nonzero(padded)[0]][:padded_shown]
    return list(range(max_tokens - len(pads))) + pads


def mask_heatmap(attention_mask, tokens: list[list[str]], ax=None, max_positions: int = 30):
    """A padded batch's ``attention_mask`` ``[batch, seq]`` as coloured cells (1 = real token,
    0 = padding) with each cell's token written in it; past ``max_positions`` positions the
    tokens are left out and the x axis counts positions. Returns the axes."""
    mask = as_matrix(attention_mask, "attention_mask")
    if len(tokens) != mask.shape[0] or any(len(row) != mask.shape[1] for row in tokens):
        raise ValueError(f"tokens must be {mask.shape[0]} lists of {mask.shape[1]} tokens, one per mask row.")
    batch, seq = mask.shape
    write = seq <= max_positions
    width = min(FIGURE_MAX_WIDTH, 0.3 * seq + 2.2) if write else FIGURE_MAX_WIDTH
    ax = new_axes(ax, (width, 0.95 * batch + 1.3))
    cmap = ListedColormap([MASKED_COLOR, "#4c9be8"])
    image = ax.imshow(mask, cmap=cmap, vmin=-0.5, vmax=1.5, aspect="auto", interpolation="nearest")
    if write:
        for (b, i), token in np.ndenumerate(np.array(tokens, dtype=object)):
            ax.text(i, b, token, ha="center", va="center", rotation=90, fontsize=8,
                    color="white" if mask[b, i] else "#444444")
    ax.set_yticks(range(batch), [f"sentence {b}" for b in range(batch)])
    if write:
        ax.set_xticks(range(seq))
    ax.set_xlabel("position")
    bar = colorbar(image, ax, "attention_mask", ticks=[0, 1], fraction=0.03)
    bar.ax.set_yticklabels(["0: padding", "1: real token"])
    ax.set_title(f"attention_mask of the padded batch: {batch} \u00d7 {seq}")
    return ax


def plot_token_heatmap(matrix, tokens, ax=None, title="", ylabel="layer", yticklabels=None, cmap=SEQUENTIAL,
                       max_tokens: int = 40, cbar_label: str = "attention probability", vmax: float | None = 1.0):
    """``[rows, seq]`` heatmap with tokens along x (e.g. [CLS]'s attention per layer), in the
    course's attention style: the sequential map on the full 0-1 scale (``vmax=None`` zooms to
    the data's maximum and prints that range in the title).

    Past ``max_tokens`` tokens the labels would be unreadable: only the ``max_tokens``
    columns with the largest weight are shown (in sentence order, labelled with their
    positions), and the x label says so.
    """
    matrix = to_numpy(matrix)
    if matrix.ndim != 2 or matrix.shape[1] != len(tokens):
        raise ValueError(f"matrix must be [rows, {len(tokens)}] for {len(tokens)} tokens, got {matrix.shape}.")
    n = len(tokens)
    keep = np.arange(n)
    if n > max_tokens:
        keep = np.sort(np.argsort(-matrix.max(axis=0), kind="stable")[:max_tokens])
    labels = [tokens[j] if n <= max_tokens else f"{j}:{tokens[j]}" for j in keep]
    ax = new_axes(ax, (min(FIG_WIDTH_IN, max(5, 0.3 * len(keep) + 2)), 0.35 * matrix.shape[0] + 1.8))
    top = float(matrix.max()) if vmax is None else vmax
    if top < 1.0:
        title = f"{title}\n{scale_note(0, top)}" if title else scale_note(0, top)
    im = ax.imshow(matrix[:, keep], aspect="auto", cmap=cmap, vmin=0, vmax=top)
    ax.set_xticks(range(len(keep)), labels, rotation=90)
    rows = yticklabels or [str(i) for i in range(1, matrix.shape[0] + 1)]
    ax.set_yticks(range(matrix.shape[0]), rows)
    ax.set_ylabel(ylabel)
    if n > max_tokens:
        ax.set_xlabel(f"the {max_tokens} of {n} tokens with the largest weight (position:token)")
    ax.set_title(title)
    colorbar(im, ax, cbar_label, fraction=0.03)
    return ax


def plot_attention_shares(shares, ax=None, classes=TOKEN_CLASSES, title="where attention goes, per layer"):
    """Stacked bars ``[L, n_classes]``: share of attention per token class at each encoder layer."""
    shares = to_numpy(shares)
    if shares.ndim != 2 or shares.shape[1] != len(classes):
        raise ValueError(f"shares must be [layers, {len(classes)}], got {shares.shape}.")
    ax = new_axes(ax, (FIG_WIDTH_IN, 3.5))
    x = np.arange(1, shares.shape[0] + 1)
    bottom = np.zeros(shares.shape[0])
    for k, name in enumerate(classes):
        ax.bar(x, shares[:, k], bottom=bottom, label=name)
        bottom += shares[:, k]
    ax.set_xticks(x, [str(i) for i in x])
    ax.set_xlabel("encoder layer")
    ax.set_ylabel("share of attention")
    ax.set_ylim(0, 1)
    ax.set_title(title)
    legend_below(ax, ncol=len(classes))
    return ax


def _cell_text(ax, im, values, fmt: str) -> None:
    for (i, j), v in np.ndenumerate(values):
        r, g, b, _ = im.cmap(im.norm(v))
        dark_cell = 0.299 * r + 0.587 * g + 0.114 * b < 0.5  # readable on light and dark colormaps
        ax.text(j, i, cell_text(v) if fmt == "cell" else format(v, fmt), ha="center", va="center", fontsize=8,
                color="white" if dark_cell else "black")


def plot_layer_head_table(values, ax=None, title="", cbar_label="", cmap=SEQUENTIAL, annotate=None, vmin=None,
                          vmax=None, colorbar_on: bool = True):
    """``[L, heads]`` heatmap (entropy, previous-token score, ...), layers 1..L on y, values
    written in the cells at 8 pt (".87") when the table is small enough (at most 12 x 16)."""
    values = to_numpy(values)
    if values.ndim != 2:
        raise ValueError(f"values must be [layers, heads], got {values.shape}.")
    n_layers, n_heads = values.shape
    ax = new_axes(ax, (min(FIG_WIDTH_IN, max(4, 0.6 * n_heads + 1.8)), 0.42 * n_layers + 1.5))
    im = ax.imshow(values, aspect="auto", cmap=cmap, vmin=vmin, vmax=vmax)
    ax.set_xticks(range(n_heads), [str(h) for h in range(n_heads)])
    ax.set_yticks(range(n_layers), [str(i) for i in range(1, n_layers + 1)])
    ax.set_xlabel("head")
    ax.set_ylabel("layer")
    ax.set_title(title)
    if annotate if annotate is not None else (n_layers <= 12 and n_heads <= 16):
        _cell_text(ax, im, values, "cell")
    if colorbar_on:
        colorbar(im, ax, cbar_label or title or "value")
    return ax


def plot_layer_head_tables(tables: dict, cbar_label: str, cmap=SEQUENTIAL, axes=None, vmax: float | None = 1.0):
    """Several ``[L, heads]`` tables (e.g. previous- and next-token scores) stacked, on **one**
    colour scale with one labelled colourbar, so their colours compare. Attention (the default)
    is drawn as everywhere else, the sequential map on 0-1; ``vmax=None`` zooms to the largest
    value and prints the range in the first title."""
    import matplotlib.pyplot as plt

    arrays = {name: to_numpy(v) for name, v in tables.items()}
    if not arrays:
        raise ValueError("tables must hold at least one {title: [layers, heads]} entry.")
    n_layers, n_heads = next(iter(arrays.values())).shape
    zoom = vmax is None
    vmax = max(float(a.max()) for a in arrays.values()) if zoom else vmax
    if axes is None:
        height = len(arrays) * (0.42 * n_layers + 1.0) + 0.6
        _, axes = plt.subplots(len(arrays), 1, figsize=(min(FIG_WIDTH_IN, 0.62 * n_heads + 2.5), height),
                               squeeze=False, layout="constrained")
        axes = list(axes[:, 0])
    for ax, (name, values) in zip(axes, arrays.items()):
        plot_layer_head_table(values, ax=ax, title=name, cmap=cmap, vmin=0, vmax=vmax, colorbar_on=False)
    if not cbar_label.strip():
        raise ValueError("a colourbar needs a label that names the measure, e.g. 'mean attention'.")
    if zoom:
        axes[0].set_title(f"{axes[0].get_title()}\n{scale_note(0, vmax)}")
    colorbar(axes[0].images[0], list(axes), cbar_label, fraction=0.046, pad=0.02)
    return axes


def plot_layer_lines(groups: dict, ax=None, title="", ylabel="", reference=None, reference_label="uniform"):
    """Per-layer lines: each entry of ``groups`` is ``{label: [n, L]}`` (mean over the ``n``
    inputs with a bootstrap 95 % band) or ``{label: [L]}`` (one input, drawn as markers).
    ``reference``: a number or ``[L]`` drawn dashed (e.g. the uniform share). Up to
    :data:`MAX_SERIES` lines share a legend under the axes; more are named at their ends."""
    from helpers.common.stats import bootstrap_ci

    ax = new_axes(ax, (FIG_WIDTH_IN, 3.2))
    colors = ["tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown"]
    n_layers = None
    for i, (label, values) in enumerate(groups.items()):
        values = to_numpy(values).astype(float)
        if values.ndim == 2:
            values = values[~np.isnan(values).any(axis=1)]  # inputs without this kind of token
        color = colors[i % len(colors)]
        n_layers = values.shape[-1]
        x = np.arange(1, n_layers + 1)
        if values.ndim == 2 and values.shape[0] > 1:
            ci = bootstrap_ci(values)
            ax.fill_between(x, [c.low for c in ci], [c.high for c in ci], color=color, alpha=0.2, lw=0)
            ax.plot(x, [c.estimate for c in ci], "o-", color=color, label=f"{label} (mean, 95 % CI, n={len(values)})")
        else:
            ax.plot(x, values.reshape(-1), "D:", color=color, label=label)
    if reference is not None:
        ref = np.broadcast_to(np.asarray(to_numpy(reference), dtype=float), (n_layers,))
        ax.plot(np.arange(1, n_layers + 1), ref, "--", color="tab:grey", label=reference_label)
    if len(ax.lines) > MAX_SERIES:
        ax.set_xlim(0.7, n_layers + 0.3)
        end_labels(ax, n_layers + 0.3, {ln.get_label(): float(ln.get_ydata()[-1]) for ln in ax.lines},
                   {ln.get_label(): ln.get_color() for ln in ax.lines})
        ax.set_xticks(np.arange(1, n_layers + 1))
        ax.set_xlabel("encoder layer")
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        return ax
    return _label_layer_axes(ax, n_layers, ylabel, title)


def _label_layer_axes(ax, n_layers: int, ylabel: str, title: str):
    """Encoder layers 1..n_layers on x, the labels, and the legend under the axes (it adds
    height, not width: the figure stays within the page)."""
    ax.set_xticks(np.arange(1, n_layers + 1))
    ax.set_xlabel("encoder layer")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    legend_below(ax, ncol=1 if any(len(t) > 40 for t in ax.get_legend_handles_labels()[1]) else 2)
    return ax


def plot_class_shares(groups: dict, uniform: dict | None = None, classes=TOKEN_CLASSES, axes=None,
                      title="share of attention on each kind of key", ylabel="share of attention"):
    """One panel per token class, one shared y scale: for each entry of ``groups`` (``{label:
    [n, L, classes]}`` with a bootstrap band, or ``[L, classes]`` for one input) the share per
    layer; ``uniform`` (``{label: [classes]}``, labels as in ``groups`` to share their colour)
    draws what evenly spread attention would give, ``k / n``, as dashed lines in the colour of
    its inputs, named once in the legend under the panels (at most four entries)."""
    import matplotlib.pyplot as plt

    if axes is None:
        cols = min(len(classes), 2)
        rows = int(np.ceil(len(classes) / cols))
        fig, axes = plt.subplots(rows, cols, figsize=(FIG_WIDTH_IN, 2.3 * rows + 1.1), sharey=True, squeeze=False,
                                 layout="constrained")
        axes = list(axes.flat)
        fig.suptitle(title, fontsize=10)
    palette = ["tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown"]
    color_of = {label: palette[i % len(palette)] for i, label in enumerate(groups)}
    top = 0.0
    for k, (ax, cls) in enumerate(zip(axes, classes)):
        sub = {label: to_numpy(v)[..., k] for label, v in groups.items()}
        top = max(top, *(float(np.nanmax(v)) for v in sub.values()))
        plot_layer_lines(sub, ax=ax, title=f"on {cls}", ylabel=ylabel if k % 2 == 0 else "")
        ax.get_legend().remove()
        for i, (label, u) in enumerate((uniform or {}).items()):
            value = float(to_numpy(u)[k])
            top = max(top, value)
            color = color_of.get(label, palette[(len(groups) + i) % len(palette)])
            ax.axhline(value, ls="--", lw=1.2, color=color)
    for ax in axes:
        ax.set_ylim(0, min(1.0, top * 1.08 + 0.01))
    handles, labels = axes[0].get_legend_handles_labels()
    if uniform:  # one entry for the even-spread lines drawn in their data set's colour, one per other
        from matplotlib.lines import Line2D

        own = [label for label in uniform if label in color_of]
        if own:
            handles.append(Line2D([], [], ls="--", lw=1.2, color="tab:grey"))
            labels.append("dashed: even spread k/n, in the colour of its inputs")
        for i, label in enumerate(uniform):
            if label not in color_of:
                handles.append(Line2D([], [], ls="--", lw=1.2, color=palette[(len(groups) + i) % len(palette)]))
                labels.append(f"dashed: even spread k/n, {label}")
    axes[0].figure.legend(handles, labels, loc="outside lower center", ncols=2 if len(labels) > 2 else len(labels),
                          frameon=False)
    return axes


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


def plot_head_strip(intervals: list, ax=None, title="", ylabel="", reference=None, reference_label="",
                    log: bool = False, interval_label: str = "one head (mean, 95 % CI)"):
    """One strip per layer, one dot per head with its interval (``intervals``: per layer a list of
    :class:`~helpers.common.stats.Interval`, one per head), as Clark et al. (2019, Fig. 2) show each
    head's attention on [CLS]. ``reference``: a number drawn dashed; ``interval_label`` says in the
    legend what the intervals are (e.g. the interval a test over every head reads)."""
    ax = new_axes(ax, (FIG_WIDTH_IN, 3.2))
    n_layers = len(intervals)
    for l, cis in enumerate(intervals):
        n = len(cis)
        x = l + 1 + (np.arange(n) - (n - 1) / 2) * min(0.06, 0.7 / max(n, 1))
        est = np.array([c.estimate for c in cis])
        err = np.array([[c.estimate - c.low for c in cis], [c.high - c.estimate for c in cis]])
        ax.errorbar(x, est, yerr=err, fmt="o", ms=3.5, lw=0.8, color="tab:blue",
                    label=interval_label if l == 0 else None)
    if reference is not None:
        ax.axhline(reference, ls="--", color="tab:grey", label=reference_label)
    if log:  # a log axis says so, with enough ticks to read values between the powers of ten
        from matplotlib.ticker import FuncFormatter, LogLocator

        ax.set_yscale("log")
        ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _: ""))
        ylabel = f"{ylabel} (log scale)" if ylabel else "log scale"
    return _label_layer_axes(ax, n_layers, ylabel, title)


def toy_attention_figure(scores, probs, values, mixed, tokens: list[str]):
    """The toy example of lesson 02 in three panels: the scaled scores and the softmax weights
    as small tables with their numbers written in, and the value vectors (grey) with the mixed
    outputs (orange) as points of the 2-d plane, each output joined to the values it mixes.

    ``scores``, ``probs``: ``[k, k]`` (rows: the token that looks, columns: the token looked
    at); ``values``, ``mixed``: ``[k, 2]``. Returns ``(fig, axes)``."""
    s, p = as_matrix(scores, "scores"), as_matrix(probs, "probs")
    v, m = as_matrix(values, "values"), as_matrix(mixed, "mixed")
    k = len(tokens)
    if s.shape != (k, k) or p.shape != (k, k):
        raise ValueError(f"scores and probs must be [{k}, {k}] for {k} tokens, got {s.shape} and {p.shape}.")
    if v.shape != (k, 2) or m.shape != (k, 2):
        raise ValueError(f"values and mixed must be [{k}, 2] (2-d vectors), got {v.shape} and {m.shape}.")
    fig = plt.figure(figsize=(FIGURE_MAX_WIDTH, 6.4))  # two tables on top, the plane below: fits the page
    grid = fig.add_gridspec(2, 2, height_ratios=[1, 1.15])
    axes = [fig.add_subplot(grid[0, 0]), fig.add_subplot(grid[0, 1]), fig.add_subplot(grid[1, :])]
    limit = float(np.abs(s).max()) or 1.0
    panels = ((axes[0], s, dict(cmap=DIVERGING, vmin=-limit, vmax=limit), "1. scores q\u00b7k/\u221ad",
               "score"),
              (axes[1], p, dict(cmap=SEQUENTIAL, vmin=0, vmax=1), "2. softmax: weights (rows sum to 1)",
               "attention probability"))
    for ax, values_, kw, title, label in panels:
        image = ax.imshow(values_, **kw)
        for (i, j), x in np.ndenumerate(values_):
            shade = image.cmap(image.norm(x))
            dark = 0.299 * shade[0] + 0.587 * shade[1] + 0.114 * shade[2] < 0.5
            ax.text(j, i, f"{x:.2f}", ha="center", va="center", fontsize=9,
                    color="white" if dark else "black")
        ax.set_xticks(range(k), tokens)
        ax.set_yticks(range(k), tokens)
        ax.set_xlabel("key: looked at")
        ax.set_ylabel("query: looking")
        ax.set_title(title, fontsize=9)
        colorbar(image, ax, label, fraction=0.046)
    ax = axes[2]
    for i, token in enumerate(tokens):
        for j in range(k):  # lines from each output to the values it mixes, as thick as the weight
            ax.plot([m[i, 0], v[j, 0]], [m[i, 1], v[j, 1]], color="tab:orange", lw=3 * p[i, j],
                    alpha=0.5, zorder=1)
    ax.scatter(v[:, 0], v[:, 1], s=60, color="#777777", label="value v", zorder=2)
    ax.scatter(m[:, 0], m[:, 1], s=60, color="tab:orange", marker="D", label="output: mix of values",
               zorder=3)
    for i, token in enumerate(tokens):
        ax.annotate(f"v({token})", v[i], xytext=(5, -10), textcoords="offset points", fontsize=8)
        ax.annotate(f"out({token})", m[i], xytext=(5, 4), textcoords="offset points", fontsize=8,
                    color="tab:orange")
    both = np.concatenate([v, m])
    span = np.ptp(both, axis=0).max() or 1.0
    ax.set_xlim(both[:, 0].min() - 0.2 * span, both[:, 0].max() + 0.9 * span)
    ax.set_ylim(both[:, 1].min() - 0.2 * span, both[:, 1].max() + 0.2 * span)
    ax.set_xlabel("dimension 0")
    ax.set_ylabel("dimension 1")
    ax.set_title("3. output: the values mixed by the weights", fontsize=9)
    ax.legend(loc="upper right", fontsize=8, framealpha=0.9)
    fig.tight_layout()
    return fig, list(axes)


def head_pair_figure(left, right, tokens: list[str], titles: tuple[str, str], max_tokens: int = 20):
    """Two heads' ``[seq, seq]`` attention side by side on one 0-1 scale (lesson 02: a head
    with a clear pattern beside a diffuse one). Past ``max_tokens`` tokens only the first
    ones are shown and the titles say so. Returns ``(fig, axes)``."""
    a, b = as_matrix(left, "left"), as_matrix(right, "right")
    n = len(tokens)
    if a.shape != (n, n) or b.shape != (n, n):
        raise ValueError(f"both heads must be [{n}, {n}] for {n} tokens, got {a.shape} and {b.shape}.")
    k = min(n, max_tokens)
    note = f"\n(first {k} of {n} tokens)" if k < n else ""
    fig, axes = plt.subplots(1, 2, figsize=(FIGURE_MAX_WIDTH, 0.17 * k + 2.2))
    for ax, matrix, title in zip(axes, (a, b), titles):
        image = ax.imshow(matrix[:k, :k], cmap=SEQUENTIAL, vmin=0, vmax=1, interpolation="nearest")
        ax.set_xticks(range(k), tokens[:k], rotation=90, fontsize=8)
        # The two panels share their rows (the same queries): only the left one names them, so
        # the right one's labels cannot run into the left panel.
        ax.set_yticks(range(k), tokens[:k] if ax is axes[0] else [], fontsize=8)
        ax.set_xlabel("key (attended to)")
        ax.set_title(title + note, fontsize=9)
    axes[0].set_ylabel("query (attending)")
    colorbar(image, list(axes), "attention probability", fraction=0.03)
    return fig, list(axes)
