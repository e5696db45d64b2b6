"""Lesson 13 figures: attributions side by side, faithfulness (ERASER) curves and token-mixing
maps. Each takes data (plus an optional ``ax``) and returns what it drew."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from helpers.common.style import DIVERGING, FIG_WIDTH_IN, SEQUENTIAL, colorbar, new_axes, scale_note, to_numpy


def _rotation(labels) -> int:
    """Upright tick labels when every one is a character or two (a Chinese BERT's tokens), else
    turned a quarter so that words do not overlap."""
    return 0 if all(len(str(t)) <= 2 for t in labels) else 90


def plot_attributions(scores: dict, tokens, ax=None, title: str = "", max_tokens: int = 30):
    """Methods (rows) x tokens (columns), each row divided by its largest absolute score so
    the methods share one colour scale; red adds to the logit, blue takes away.

    Past ``max_tokens`` tokens, the ``max_tokens`` with the largest score of the last row
    (occlusion, the reference) are shown, in input order. Returns ``(ax, shown positions)``."""
    if not scores:
        raise ValueError("give at least one {method: scores} row.")
    rows = {name: np.asarray(to_numpy(v), dtype=float) for name, v in scores.items()}
    n = len(tokens)
    if any(v.shape != (n,) for v in rows.values()):
        raise ValueError(f"every method needs one score per token ({n}).")
    reference = np.nan_to_num(list(rows.values())[-1], nan=-np.inf)
    shown = np.arange(n) if n <= max_tokens else np.sort(np.argsort(-reference)[:max_tokens])
    matrix = np.stack([v[shown] / max(np.nanmax(np.abs(v[shown])), 1e-12) for v in rows.values()])
    ax = new_axes(ax, (FIG_WIDTH_IN, 0.45 * len(rows) + 2.2))  # the page's column
    image = ax.imshow(np.ma.masked_invalid(matrix), aspect="auto", cmap=DIVERGING, vmin=-1, vmax=1)
    labels = [tokens[i] for i in shown]
    ax.set_xticks(range(len(shown)), labels, rotation=_rotation(labels))
    ax.set_yticks(range(len(rows)), list(rows))
    ax.set_title(title)
    colorbar(image, ax, "score / largest |score| of its method")
    ax.figure.tight_layout()
    return ax, shown


def _mean_band(ax, x, rows, label, color=None, style="o-"):
    """The mean of ``rows`` (``[units, K]``) with a 95% bootstrap band over the units."""
    from helpers.common.stats import bootstrap_ci

    rows = to_numpy(rows)
    cis = bootstrap_ci(rows) if rows.ndim == 2 else None
    line, = ax.plot(x, rows.mean(0), style, color=color, label=label, lw=1.5, ms=4)
    if cis is not None:
        ax.fill_between(x, [c.low for c in cis], [c.high for c in cis], color=line.get_color(), alpha=0.12)
    return line


def plot_faithfulness(curves: dict, fractions, title: str = ""):
    """Two panels over the share ``k`` of word tokens: comprehensiveness (prediction probability lost
    when a method's top-``k`` tokens are removed: higher is more faithful) and sufficiency (lost when
    only they are kept: lower is more faithful). ``curves``: ``{method: {"comprehensiveness": [N, K],
    "sufficiency": [N, K]}}`` per utterance; the mean with a 95% bootstrap band over the utterances,
    one shared y-scale. Returns the figure."""
    if not curves:
        raise ValueError("give at least one {method: {'comprehensiveness': ..., 'sufficiency': ...}} entry.")
    x = 100 * np.asarray(fractions, dtype=float)
    fig, axes = plt.subplots(2, 1, figsize=(FIG_WIDTH_IN, 6.2), sharey=True)
    for name, c in curves.items():
        dashed = name.startswith("random")
        for ax, key in zip(axes, ("comprehensiveness", "sufficiency")):
            _mean_band(ax, x, c[key], name, color="grey" if dashed else None, style="s--" if dashed else "o-")
    for ax, key, better in zip(axes, ("comprehensiveness", "sufficiency"), ("higher", "lower")):
        ax.axhline(0, color="grey", lw=0.5)
        ax.set_xlabel("word tokens " + ("removed" if key == "comprehensiveness" else "kept") + " (% of the utterance)")
        ax.set_title(f"{key} ({better} = more faithful)")
    for ax in axes:
        ax.set_ylabel("p(predicted): full − changed")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=min(3, len(labels)), frameon=False, fontsize=8)
    if title:
        fig.suptitle(title, fontsize=10)
    rows = -(-len(labels) // 3)
    fig.tight_layout(rect=(0, 0.2 * rows / 6.2 + 0.02, 1, 1))
    return fig


def plot_mixing_maps(panels: dict, tokens, title: str = "", ncols: int = 2):
    """Token-to-token maps side by side (``panels``: ``{title: [T, T]}``, row ``i`` = output token,
    column ``j`` = input token), all on **one** colour scale from 0 to the largest value of any panel,
    so that the panels compare. Returns the figure."""
    if not panels:
        raise ValueError("give at least one {title: [T, T] matrix} panel.")
    mats = {name: to_numpy(m) for name, m in panels.items()}
    n = len(tokens)
    if any(m.shape != (n, n) for m in mats.values()):
        raise ValueError(f"every panel must be [{n}, {n}] for {n} tokens.")
    vmax = max(float(np.nanmax(m)) for m in mats.values())
    nrows = -(-len(mats) // ncols)
    side = min(4.4, max(3.0, 0.22 * n + 1.5), (FIG_WIDTH_IN - 0.8) / ncols)  # the row fits the page
    fig, axes = plt.subplots(nrows, ncols, figsize=(ncols * side + 0.8, nrows * side + 0.4), squeeze=False,
                             layout="constrained")
    for ax, (name, m) in zip(axes.flat, mats.items()):
        image = ax.imshow(m, cmap=SEQUENTIAL, vmin=0, vmax=vmax)
        ax.set_xticks(range(n), tokens, rotation=_rotation(tokens), fontsize=8)
        ax.set_yticks(range(n), tokens, fontsize=8)
        ax.set_title(name, fontsize=9)
    for ax in list(axes.flat)[len(mats):]:
        ax.axis("off")
    fig.colorbar(image, ax=axes.ravel().tolist(), shrink=0.8).set_label("share of the row (rows sum to 1)")
    note = scale_note(0, vmax) if vmax < 1 else ""  # a shared scale below 1 zooms: the title says so
    if title or note:
        fig.suptitle("\n".join(t for t in (title, note) if t), fontsize=10)
    return fig
