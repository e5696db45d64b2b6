"""One figure style for the whole course, and the small helpers every plot module uses.

Importing this module (every ``helpers/<topic>/plots.py`` does) applies :data:`COURSE_RC`:
text at least :data:`MIN_FONT_PT` points at the notebook's default size, readable titles,
no top/right spines. Plot functions return the figure's axes (or the artists an explorer
updates) and follow these rules:

* every colourbar has a label (:func:`colorbar` insists on one);
* titles name the measure ("cosine between layers", "attention probability");
* panels that are compared share one scale;
* every figure fits the website's text column, :data:`PAGE_WIDTH_IN` inches wide (672 px at the
  notebook's 100 dpi), as the notebook shows it (cropped to its drawn content, legends outside
  the axes included), so nothing is scaled down and 8 pt stays 8 pt: more rows, not more columns;
* :func:`small_text` lists text below :data:`MIN_FONT_PT` points and a figure wider than the page
  (its text would be shrunk); the tests run it on every figure.
"""

from __future__ import annotations

import logging

from pathlib import Path

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np
import torch

MIN_FONT_PT = 8.0
PAGE_WIDTH_IN = 6.72  # the website's text column (672 px at 1280 px) at the notebook's 100 dpi: no figure is wider
SAVE_PAD_IN = 0.1  # the notebook crops a figure to its drawn content plus this margin (savefig.pad_inches)
FIG_WIDTH_IN = PAGE_WIDTH_IN - 2 * SAVE_PAD_IN  # a figure that fills the column, its margin included
COURSE_RC = {
    "figure.dpi": 100,
    "font.size": 10,
    "axes.titlesize": 10,
    "axes.labelsize": 9,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "legend.fontsize": 8,
    "legend.title_fontsize": 8,
    "figure.titlesize": 11,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "image.cmap": "viridis",
    "savefig.pad_inches": SAVE_PAD_IN,
}
HIGHLIGHT, NORMAL = "tab:orange", "tab:blue"
SEQUENTIAL = "viridis"  # magnitudes that start at 0 (probabilities, norms)
DIVERGING = "RdBu_r"  # signed values around 0 (weights, cosines, scores): always a symmetric scale
MASKED_COLOR = "#d9d9d9"  # cells left out of a colour scale (a diagonal, masked keys)


def use_course_style() -> None:
    """Apply :data:`COURSE_RC` to matplotlib's defaults (done once on import)."""
    mpl.rcParams.update(COURSE_RC)


use_course_style()

# Chinese in figures (lesson 15): Matplotlib's DejaVu fonts have no CJK glyphs, and Colab has no
# CJK font. The course ships a subset of Noto Sans SC (helpers/common/fonts/README.md: source,
# licence, checksum) and puts it after the usual sans-serif in font.family, so Latin text keeps
# its font and each character DejaVu lacks is drawn from the next family (per-glyph fallback).
CJK_FONT_FILE = Path(__file__).resolve().parent / "fonts" / "NotoSansSC-CourseSubset.ttf"
CJK_FAMILY = "Noto Sans SC Course"
# CJK fonts a machine may have, tried after the course's subset for characters it lacks
SYSTEM_CJK_FAMILIES = ("Noto Sans CJK SC", "Noto Sans SC", "Source Han Sans SC", "WenQuanYi Zen Hei",
                       "WenQuanYi Micro Hei", "Microsoft YaHei", "PingFang SC", "Hiragino Sans GB", "SimHei")


def use_cjk_font() -> list[str]:
    """Register the course's Chinese font with Matplotlib and append it (then any CJK font the
    machine has) to ``font.family``. Returns the families in use. Without the font file (a
    partial copy of the course) it changes nothing."""
    from matplotlib import font_manager

    families = [f for f in mpl.rcParams["font.family"] if f != CJK_FAMILY and f not in SYSTEM_CJK_FAMILIES]
    if CJK_FONT_FILE.exists():
        installed = {f.name for f in font_manager.fontManager.ttflist}
        if CJK_FAMILY not in installed:
            font_manager.fontManager.addfont(str(CJK_FONT_FILE))
        families += [CJK_FAMILY] + [f for f in SYSTEM_CJK_FAMILIES if f in installed]
        mpl.rcParams["font.family"] = families
    return list(mpl.rcParams["font.family"])


class _NoBoldFallbackNotice(logging.Filter):
    """Matplotlib logs "Failed to find font weight bold for <family>" whenever a bold title meets a
    family with one weight, as the course's CJK subset has: the regular weight is used, which is
    what we want, so the notice (printed under every bold-titled figure) is dropped."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (CJK_FAMILY in record.getMessage() and "Failed to find font weight" in record.getMessage())


logging.getLogger("matplotlib.font_manager").addFilter(_NoBoldFallbackNotice())
use_cjk_font()


def figure_description(fig) -> str:
    """A figure in words, for the ``alt`` text of its picture on the website and in screen
    readers: its title(s) and what its axes show, read from the figure itself."""
    label = fig.get_label().strip()
    if label:  # a drawing that describes itself (the encoder diagram, the you-are-here strip)
        return f"Figure: {label}"
    parts = []
    suptitle = fig._suptitle.get_text().strip() if getattr(fig, "_suptitle", None) else ""
    if suptitle:
        parts.append(suptitle)
    for ax in fig.axes:
        if not ax.get_visible() or ax.get_label() == "<colorbar>":
            continue
        title = " ".join(t.get_text().strip() for t in (ax.title, ax._left_title, ax._right_title)
                         if t.get_text().strip())
        axes = "; ".join(f"{name}: {label}" for name, label in (("x", ax.get_xlabel()), ("y", ax.get_ylabel()))
                         if label.strip())
        panel = " (".join(filter(None, [title, axes])) + (")" if title and axes else "")
        if panel and panel not in parts:
            parts.append(panel)
    if not parts:  # a drawing (the architecture diagram): its largest text is its title
        texts = [t for t in fig.findobj(mpl.text.Text) if t.get_visible() and t.get_text().strip()]
        if texts:
            parts.append(max(texts, key=lambda t: t.get_fontsize()).get_text().strip())
    text = ". ".join(parts)
    return f"Figure: {text}" if text else "Figure (no title)"


def _describe_figures_in_notebooks() -> None:
    """In a notebook, show figures as 2x PNGs (sharp when enlarged on the website) and attach
    :func:`figure_description` to each as the picture's ``alt`` metadata (the website build
    reads it). Outside IPython this does nothing."""
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython ships with Jupyter
        return
    shell = get_ipython()
    if shell is None or not hasattr(shell, "display_formatter"):
        return
    from matplotlib.figure import Figure

    try:
        from matplotlib_inline.backend_inline import set_matplotlib_formats
        set_matplotlib_formats("retina")
    except Exception:  # another backend or front end: keep its formats
        pass
    png = shell.display_formatter.formatters["image/png"]
    try:
        original = png.lookup_by_type(Figure)
    except KeyError:
        return
    if getattr(original, "_course_described", False):
        return

    def described(fig):
        data = original(fig)
        if data is None:
            return None
        if isinstance(data, tuple):
            data, meta = data
        else:
            meta = {}
        return data, {**meta, "alt": figure_description(fig)}

    described._course_described = True
    png.for_type(Figure, described)


_describe_figures_in_notebooks()


def new_axes(ax=None, figsize=(6, 3)):
    """``ax`` itself, or the axes of a new figure of ``figsize`` inches."""
    if ax is None:
        _, ax = plt.subplots(figsize=figsize)
    return ax


def legend_below(ax, ncol: int = 2, **kw):
    """The legend of ``ax`` under its x label, in ``ncol`` columns: it adds height, never width
    (a legend beside the axes would push the figure past :data:`PAGE_WIDTH_IN`)."""
    kw.setdefault("frameon", False)
    fig = ax.figure
    renderer = fig._get_renderer()
    below = ax.xaxis.get_tightbbox(renderer)  # tick labels and x label: the legend starts under them
    box = ax.get_window_extent(renderer)
    top = (below.y0 - box.y0) / box.height - 4 / 72 * fig.dpi / box.height if below is not None else -0.1
    return ax.legend(loc="upper center", bbox_to_anchor=(0.5, min(top, -0.05)), ncol=ncol, **kw)


def end_labels(ax, x: float, ends: dict, colors: dict, min_gap_pt: float = 10.0) -> list:
    """Name lines at their right end instead of in a legend: ``ends`` maps each label to the y
    of its line at ``x``; labels are written in the line's colour (``colors``), 6 pt right of
    ``x``, and nudged apart so that none overlaps the next. Returns the texts."""
    ax.figure.canvas.draw()
    to_pt = 72.0 / ax.figure.dpi
    order = sorted(ends, key=lambda k: ends[k])
    ys = [ax.transData.transform((x, ends[k]))[1] * to_pt for k in order]
    placed = []
    for y in ys:
        placed.append(max(y, placed[-1] + min_gap_pt) if placed else y)
    return [ax.annotate(k, (x, ends[k]), xytext=(6, p - y), textcoords="offset points", ha="left", va="center",
                        fontsize=8, color=colors[k], annotation_clip=False)
            for k, y, p in zip(order, ys, placed)]


def note_axis_start(ax, unit: str = "") -> str:
    """When the y axis of ``ax`` neither starts at 0 nor crosses it (a zoomed range that makes
    small differences look large), say so in its label: "cosine (axis from 0.57)". Returns the
    label."""
    import re

    low, high = ax.get_ylim()
    label = re.sub(r"\s*\(?axis from [^)]*\)?$", "", ax.get_ylabel())  # a stale note goes
    if 0 < low < 0.1 * (high - low) and ax.get_yscale() == "linear":  # only the autoscale margin: start at 0
        ax.set_ylim(0, high)
        low = 0.0
    if low > 0 and ax.get_yscale() == "linear":
        label = f"{label} (axis from {low:.2g}{unit})" if label else f"axis from {low:.2g}{unit}"
    ax.set_ylabel(label)
    return label


def cell_text(value: float, digits: int = 2) -> str:
    """A number written in a small heatmap cell: no leading zero below 1 (".87", "−.05"),
    so neighbouring cells never run together; exactly 1 reads "1"."""
    v = float(value)
    if not np.isfinite(v):
        return ""
    if abs(abs(v) - 1) < 0.5 * 10 ** -digits:
        return ("−" if v < 0 else "") + "1"
    text = f"{abs(v):.{digits}f}"
    text = text.lstrip("0") if abs(v) < 1 else text
    return ("−" if v < -0.5 * 10 ** -digits else "") + text


def scale_note(vmin: float, vmax: float) -> str:
    """The colour range of a panel that zooms in (not the full 0-1 of a probability), for its title."""
    return f"colour scale {vmin:.2g}–{vmax:.2g}, zoomed"


def to_numpy(values) -> np.ndarray:
    """A tensor, list or array as a NumPy array (detached, on the CPU)."""
    return values.detach().cpu().numpy() if isinstance(values, torch.Tensor) else np.asarray(values)


def as_matrix(values, name: str) -> np.ndarray:
    """``values`` as a 2-D float array, or a clear error naming ``name`` and the shape."""
    array = np.asarray(to_numpy(values), dtype=float)
    if array.ndim != 2:
        raise ValueError(f"{name} must be a 2-D matrix, got shape {array.shape}.")
    return array


def layer_labels(n_layers_plus_one: int) -> list[str]:
    """``['emb', '1', '2', ...]`` for ``L + 1`` hidden-state layers."""
    return ["emb"] + [str(i) for i in range(1, n_layers_plus_one)]


def colorbar(mappable, ax, label: str, **kw):
    """A colourbar beside ``ax`` (one axes or a list sharing the bar) that always says what its colours measure."""
    if not isinstance(label, str) or not label.strip():
        raise ValueError("a colourbar needs a label that names the measure, e.g. 'attention probability'.")
    kw.setdefault("fraction", 0.046)
    kw.setdefault("pad", 0.04)
    fig = (ax[0] if isinstance(ax, (list, tuple, np.ndarray)) else ax).figure
    return fig.colorbar(mappable, ax=ax, label=label, **kw)


def annotate_bars(ax, bars, labels: list[str], inside_min: float = 0.35, fontsize: float = 8.5) -> list:
    """Write ``labels`` on horizontal ``bars``: inside a bar long enough to hold it (white),
    otherwise just past its end. Returns the texts. Values written on the bars read at a glance;
    a log axis without values does not."""
    texts = []
    longest = max((b.get_width() for b in bars), default=0) or 1.0
    for bar, label in zip(bars, labels):
        y = bar.get_y() + bar.get_height() / 2
        inside = bar.get_width() >= inside_min * longest
        x = bar.get_x() + bar.get_width() + (-0.01 if inside else 0.01) * longest
        texts.append(ax.text(x, y, label, ha="right" if inside else "left", va="center", fontsize=fontsize,
                             color="white" if inside else "black"))
    return texts


def shown_width_in(fig) -> float:
    """How wide ``fig`` is shown, in inches: the notebook (and so the website) crops a figure to
    what is drawn, a legend or colourbar outside the axes included, plus :data:`SAVE_PAD_IN` each
    side (``bbox_inches="tight"``). An explorer shows its canvas as it is: see :func:`too_wide`."""
    return fig.get_tightbbox(fig._get_renderer()).width + 2 * SAVE_PAD_IN


def too_wide(fig, page_in: float = PAGE_WIDTH_IN, *, cropped: bool = True) -> list[str]:
    """``[]`` when ``fig`` fits the page, else one line saying how wide it is. ``cropped=False``
    checks the canvas itself (an explorer's picture is not cropped)."""
    fig = fig.get_figure(root=True) if hasattr(fig, "get_figure") else fig  # a subfigure: its whole figure
    width = shown_width_in(fig) if cropped else float(fig.get_size_inches()[0])
    if width <= page_in + 1e-6:
        return []
    return [f"figure {width:.2f} in wide > page {page_in} in: the site would shrink its text to "
            f"{page_in / width:.0%}"]


def small_text(fig, min_pt: float = MIN_FONT_PT, page_in: float = PAGE_WIDTH_IN) -> list[str]:
    """Visible text artists of ``fig`` smaller than ``min_pt`` points, as ``'size: text'`` lines,
    after a line from :func:`too_wide` when the figure is wider than ``page_in`` (the site would
    scale it, and its text, down)."""
    found = too_wide(fig, page_in)
    for text in fig.findobj(mpl.text.Text):
        if text.get_visible() and text.get_text().strip() and text.get_fontsize() < min_pt - 1e-6:
            found.append(f"{text.get_fontsize():.1f} pt: {text.get_text()[:40]!r}")
    return found
