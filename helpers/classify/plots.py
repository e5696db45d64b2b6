"""Lesson 10 figures: confusion matrix, probe accuracy per layer (with intervals), strategy
accuracies, learned layer weights, logits per class. Each takes data and returns its axes."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from helpers.common.style import (FIG_WIDTH_IN, HIGHLIGHT, NORMAL, colorbar, layer_labels, legend_below, new_axes,
                                  to_numpy)


def plot_confusion(cm, names, ax=None, title: str = "confusion matrix: test utterances per (true, predicted) intent",
                   col_names=None, label: str = "test utterances"):
    """Heatmap of a confusion matrix with class names on both axes and every non-zero count
    written in its cell; returns the axes. ``col_names`` (default ``names``) labels the columns of a
    rectangular part of a matrix, e.g. :func:`~helpers.classify.compute.confusion_subset`'s
    ``[k, k + 1]`` with a last "any other intent" column; ``label`` names the colourbar's count."""
    cm = np.asarray(to_numpy(cm))
    col_names = list(names) if col_names is None else list(col_names)
    if cm.ndim != 2 or cm.shape != (len(names), len(col_names)):
        raise ValueError(f"cm must have one row per name ({len(names)}) and one column per column name "
                         f"({len(col_names)}), got shape {cm.shape}.")
    k = max(len(names), len(col_names))
    # Never wider than the page's column (the site would shrink the text): many classes make
    # the cells narrower and the figure taller instead. Column names stand upright, one line
    # each (multi-line names would overlap at that pitch); row names may wrap.
    ax = new_axes(ax, (min(FIG_WIDTH_IN, max(6.2, 2.5 + 0.42 * k)), max(5.2, 2.6 + 0.42 * k)))
    im = ax.imshow(cm, cmap="Blues", vmin=0, aspect="auto")
    ax.set_xticks(range(len(col_names)), [" ".join(str(c).split()) for c in col_names],
                  rotation=90 if k > 8 else 60, ha="center" if k > 8 else "right")
    ax.set_yticks(range(len(names)), names)
    ax.set_xlabel("predicted intent")
    ax.set_ylabel("true intent")
    ax.set_title(title)
    bar = colorbar(im, ax, label)
    ax.figure.tight_layout()
    # Width of a digit at 8 pt: about 0.07 in. Counts that do not fit their cells (three digits in
    # a narrow column) first take the colourbar's room: every cell already says its count, so
    # the bar repeats what the numbers say (the title names the count). Only if they still do
    # not fit do they stand upright (the cells are taller than wide; the text stays at 8 pt).
    widest = 0.07 * len(str(int(cm.max())))

    def cell_in() -> float:
        return ax.get_position().width * ax.figure.get_figwidth() / cm.shape[1]

    if widest > 0.9 * cell_in():
        bar.remove()
        ax.figure.tight_layout()
    for i, j in zip(*np.nonzero(cm)):
        text = str(cm[i, j])
        upright = 0.07 * len(text) > 0.9 * cell_in()
        ax.text(j, i, text, ha="center", va="center", fontsize=8, rotation=90 if upright else 0,
                color="white" if cm[i, j] > cm.max() / 2 else "black")
    return ax


def plot_probe_curves(curves: dict, ax=None, chance: float | None = None, intervals: dict | None = None,
                      title: str = "linear-probe test accuracy per layer",
                      bands: str = "95% interval over test items"):
    """One line per pooling: test accuracy against layer (0 = embeddings).

    ``intervals`` (optional) maps the same labels to one :class:`~helpers.common.stats.Interval`
    per layer, drawn as a shaded band around the line; ``bands`` says in the title what they are.
    """
    if not curves:
        raise ValueError("curves must map a label to a list of accuracies, one per layer.")
    ax = new_axes(ax, (6.5, 3.4))
    n = len(next(iter(curves.values())))
    for label, accs in curves.items():
        if len(accs) != n:
            raise ValueError(f"every curve needs {n} values (one per layer); {label!r} has {len(accs)}.")
        line, = ax.plot(range(n), accs, marker="o", label=label)
        if intervals and label in intervals:
            low = [i.low for i in intervals[label]]
            high = [i.high for i in intervals[label]]
            ax.fill_between(range(n), low, high, color=line.get_color(), alpha=0.2, lw=0)
    ax.set_xticks(range(n), layer_labels(n))
    if chance is not None:
        ax.axhline(chance, color="gray", ls=":", label="chance")
    ax.set_xlabel("layer")
    ax.set_ylabel("test accuracy")
    ax.set_ylim(0, 1.02)
    ax.set_title(title + (f" (bands: {bands})" if intervals else ""))
    ax.figure.tight_layout()
    legend_below(ax, ncol=len(ax.get_legend_handles_labels()[0]))  # off the data and the chance line
    return ax


def plot_strategy_accuracies(accuracy: dict, ax=None, chance: float | None = None, unit: str = "seed"):
    """Horizontal interval per strategy (:meth:`~helpers.classify.compute.SeededAccuracy.interval`:
    seeds and test items resampled; one seed: exact over the items), a diamond at the estimate and
    one dot per seed; ``accuracy`` maps names to :class:`~helpers.classify.compute.SeededAccuracy`;
    ``unit`` names what a seed stands for (``"draw"``: each seed drew another training set)."""
    if not accuracy:
        raise ValueError("accuracy must map at least one strategy name to a SeededAccuracy.")
    ax = new_axes(ax, (6.5, 3.2))
    names = list(accuracy)
    best = max(names, key=lambda n: accuracy[n].estimate)
    lows = []
    for y, name in enumerate(names):
        acc = accuracy[name]
        ci = acc.interval()
        lows.append(ci.low)
        color = HIGHLIGHT if name == best else NORMAL
        ax.plot([ci.low, ci.high], [y, y], color=color, lw=3, alpha=0.5, solid_capstyle="butt")
        ax.plot(acc.per_seed(), [y] * len(acc.seeds), "o", color=color, ms=4, alpha=0.8)
        ax.plot(acc.estimate, y, "D", color=color, ms=7, mec="black", mew=0.5)
    ax.set_yticks(range(len(names)), names)
    ax.invert_yaxis()
    if chance is not None and chance >= min(lows) - 0.05:
        ax.axvline(chance, color="gray", ls=":")
    start = max(0.0, min(lows) - 0.05)
    ax.set_xlim(start, 1.01)
    if start > 0:  # a zoomed axis must say so: the bars would otherwise look far apart
        note = f"chance {chance:.2f} is off the left edge" if chance is not None and chance < start else ""
        ax.set_xlabel(f"test accuracy (axis starts at {start:.2f}, not 0{'; ' + note if note else ''})")
    else:
        ax.set_xlabel("test accuracy")
    n_seeds = len(next(iter(accuracy.values())).seeds)
    over = f"{unit}s and test items" if n_seeds > 1 else "test items"
    ax.set_title(f"test accuracy per strategy\nbar: 95% interval over {over},\n"
                 f"diamond: mean, dots: {n_seeds} {unit}(s); orange: highest")
    ax.figure.tight_layout()
    return ax


def plot_layer_weights(weights, ax=None):
    """Learned scalar-mix weights ``[n_seeds, L+1]``: bar = mean over seeds, whisker = range,
    dashed line = the uniform weight 1/(L+1) the training started from."""
    weights = np.atleast_2d(to_numpy(weights).astype(float))
    n = weights.shape[1]
    ax = new_axes(ax, (5, 3.2))
    mean = weights.mean(0)
    err = np.stack([mean - weights.min(0), weights.max(0) - mean])
    ax.bar(range(n), mean, color=NORMAL, yerr=err, capsize=3, ecolor="black")
    ax.axhline(1 / n, color="gray", ls="--", label=f"uniform 1/{n}")
    ax.set_xticks(range(n), layer_labels(n))
    ax.set_xlabel("layer")
    ax.set_ylabel("weight (softmax over layers)")
    ax.set_title(f"learned layer weights of the weighted-sum head\n(bar: mean of {weights.shape[0]} draw(s), whisker: range)")
    ax.legend(loc="upper left")
    ax.figure.tight_layout()
    return ax


def plot_logits(logits, names, ax=None):
    """Bar per class; the predicted class is highlighted. Returns ``(ax, bars)``."""
    logits = np.asarray(to_numpy(logits), dtype=float)
    if logits.shape != (len(names),):
        raise ValueError(f"logits must have one value per class ({len(names)}), got shape {logits.shape}.")
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 3))
    bars = ax.bar(range(len(names)), logits, color="tab:blue")
    bars[int(logits.argmax())].set_color("tab:orange")
    ax.set_xticks(range(len(names)), names, rotation=45, ha="right", fontsize=8)
    ax.axhline(0, color="black", lw=0.5)
    ax.set_ylabel("logit")
    ax.figure.tight_layout()
    return ax, bars


def plot_logits_examples(logits, sentences, names, ncols: int = 2):
    """Small multiples of :func:`plot_logits`: one panel per sentence (its text as the panel's
    title), horizontal bars so every class name reads level, the predicted class orange, one
    x-scale for all panels so bars compare. ``logits``: ``[n_sentences, n_classes]``. Drawn at the
    page's width with text >= 8 pt. Returns the figure."""
    import textwrap

    logits = np.asarray(to_numpy(logits), dtype=float)
    if logits.ndim != 2 or logits.shape != (len(sentences), len(names)):
        raise ValueError(f"logits must be [n_sentences, n_classes] = [{len(sentences)}, {len(names)}], "
                         f"got shape {logits.shape}.")
    n = len(sentences)
    ncols = max(1, min(ncols, n))
    nrows = -(-n // ncols)
    k = len(names)
    panel_h = 0.9 + 0.16 * k
    fig, axes = plt.subplots(nrows, ncols, figsize=(FIG_WIDTH_IN, panel_h * nrows + 0.5), sharex=True, sharey=True,
                             squeeze=False)
    lo, hi = min(0.0, float(logits.min())), max(0.0, float(logits.max()))
    pad = 0.08 * (hi - lo) + 1e-6
    y = np.arange(k)
    for i, ax in enumerate(axes.flat):
        if i >= n:
            ax.axis("off")
            continue
        pred = int(logits[i].argmax())
        ax.barh(y, logits[i], color=[HIGHLIGHT if c == pred else NORMAL for c in range(k)], height=0.7)
        ax.axvline(0, color="black", lw=0.5)
        ax.set_yticks(y, [str(name) for name in names], fontsize=8)
        ax.invert_yaxis() if i == 0 else None  # shared y: inverting once turns every panel (first class on top)
        ax.set_xlim(lo - pad, hi + pad)
        title = textwrap.shorten(sentences[i], 70, placeholder="…")
        ax.set_title("\n".join(textwrap.wrap(f"“{title}” → {names[pred]}", 38)), fontsize=8, loc="left")
        if i // ncols == nrows - 1 or i + ncols >= n:
            ax.set_xlabel("logit", fontsize=8)
            ax.tick_params(axis="x", labelbottom=True)
    fig.tight_layout(h_pad=1.0, w_pad=1.0)
    return fig
