"""The architecture diagram: a BERT encoder drawn from a config, so every size is the loaded model's.

:func:`architecture_diagram` draws the encoder **bottom to top as token lanes**: one vertical
lane per token of a sentence (``tokens=``, at most :data:`MAX_LANES` lanes, "…" for the rest).

* At the bottom each token's word, position and segment (token-type) embeddings are looked
  up and summed into its lane, then LayerNorm (``hidden_states[0]``).
* Each lane carries a thick **residual stream** (green) up through the layer. Every sublayer
  branches off the stream and adds its update back (the "+" circles); BERT is *post-LN*: each
  LayerNorm sits on the stream after its add (Vaswani et al., 2017; Devlin et al., 2019).
* **Self-attention** is the only place lanes exchange information (the only arrows between
  lanes): query/key/value per token, split into A heads of d = H/A, softmax(QKᵀ/√d + mask)·V
  across tokens, heads concatenated, ``attention.output.dense``.
* The feed-forward network works on each lane alone (same weights for every token).
* One layer is drawn and marked "× L"; on top, the pooler and a classification head read
  the ``[CLS]`` lane only.

Left of the lanes a column says what each row does; right of them, the tensor shape and the
code name (monospace, relative to ``model``). Every size comes from the config (L, H, A,
d = H/A, I, vocabulary, maximum positions). The figure is :data:`WIDTH` inches wide (the
website's text column) with no text under 8 pt, and saves as SVG as well as PNG.

:func:`you_are_here` is the compact version for the top of every lesson: one row,
tokens → embeddings → [attention → add & norm → feed-forward → add & norm] × L → pooler →
head, with the lesson's part(s) marked.

``highlight`` marks the part a lesson is about ("you are here"); the parts are :data:`PARTS`.
Every artist carries a gid (``"box:<part>"``, ``"highlight:<part>"``) so tests can find it.
"""

from __future__ import annotations

import numpy as np
from matplotlib import patheffects
from matplotlib.font_manager import FontProperties, findfont, get_font
from matplotlib.patches import Circle, FancyArrowPatch, FancyBboxPatch, Rectangle
from matplotlib.textpath import TextToPath

from helpers.common.style import FIG_WIDTH_IN, HIGHLIGHT, MIN_FONT_PT, new_axes

PARTS = ("tokens", "embeddings", "attention", "add_norm", "feed_forward", "layer", "pooler", "head")
LESSON_PARTS = {  # what each lesson opens, for "you are here"
    "00": (),
    "01": ("tokens", "embeddings"),
    "02": ("attention",),
    "03": ("add_norm", "feed_forward"),
    "04": ("pooler", "head"),
    "07": ("layer",),
    "08": ("attention",),
    "09": ("layer",),
    "10": ("layer", "head"),
    "11": ("layer", "head"),
    "12": ("attention", "layer"),
    "13": ("tokens", "attention"),
    "14": ("layer", "head"),
    "15": ("tokens", "head"),
}
_FACE = {"tokens": "#f2f2f2", "embeddings": "#d8e7f5", "attention": "#dcefd8", "add_norm": "#e4e4e4",
         "feed_forward": "#e6def2", "layer": "white", "pooler": "#f7ead0", "head": "#f7ead0"}
_EDGE = "#555555"
RESIDUAL_COLOR = "#5aa55a"  # the residual stream (thick, pale) ...
_MIX_COLOR = "#1f6f3a"  # ... and the arrows between lanes (attention only)
_HEAD_COLOR = "#6a9a6a"
_REQUIRED = ("num_hidden_layers", "hidden_size", "num_attention_heads", "intermediate_size", "vocab_size",
             "max_position_embeddings", "type_vocab_size", "hidden_act")

MAX_LANES = 6  # token lanes drawn; a longer input shows its first ones, "…" and its last
DEFAULT_TOKENS = ("[CLS]", "a", "short", "text", "[SEP]")

# Layout in inches: the axes spans the figure and one data unit is one inch, so text sizes
# and box sizes stay in proportion whatever the model's sizes are.
WIDTH = FIG_WIDTH_IN  # the website's text column at 100 dpi, less the margin the notebook adds around a figure
_WHAT_X = 0.02  # left column: what each row does
_LANE_L, _LANE_R = 1.50, 3.98  # the token lanes (narrower lanes would shorten tokens such as "rained")
# The encoder layer's frame starts a little right of the page's edge and its rows' labels sit
# inside it, clear of its edge; its two shadows ("× L") peek out to the left and below, away
# from the shape column on the right (issue 49: the edge ran through the labels, the shadows
# touched "[17, 384]").
_FRAME_X0 = 0.06
_INSET_X = _FRAME_X0 + 0.05  # the widest label, "feed-forward, per token:", still ends 0.05 in before the lanes
_SHADOW = 0.03  # each shadow's offset, left and down (the second ends at the page's edge)
_SHAPE_X = 4.06  # tensor shapes
_CODE_X = 4.875  # code names (monospace)
_FONT = 8.0
_MONO = "DejaVu Sans Mono"
_TITLE_FONT = 10.0
_TEXT_TO_PATH = TextToPath()


def _check_config(config):
    missing = [name for name in _REQUIRED if not hasattr(config, name)]
    if missing:
        raise ValueError(f"config must be a BERT config (model.config); it has no {missing}.")
    return config


def _check_highlight(highlight) -> tuple[str, ...]:
    if highlight is None:
        return ()
    parts = (highlight,) if isinstance(highlight, str) else tuple(highlight)
    unknown = [p for p in parts if p not in PARTS]
    if unknown:
        raise ValueError(f"unknown part(s) {unknown} to highlight; valid parts are {list(PARTS)}.")
    return parts


def _check_tokens(tokens) -> list[str]:
    if tokens is None:
        return list(DEFAULT_TOKENS)
    if isinstance(tokens, str) or not all(isinstance(t, str) for t in tokens) or len(tokens) == 0:
        raise ValueError("tokens must be a non-empty list of token strings, e.g. trace.tokens "
                         "(['[CLS]', 'the', 'bank', ..., '[SEP]']).")
    return list(tokens)


def _segments(tokens: list[str], n_types: int) -> list[int]:
    """Segment (token type) of each token as BERT's tokenizer sets it: 0 up to the first
    ``[SEP]``, then 1 (capped at the model's number of types)."""
    out, seg = [], 0
    for t in tokens:
        out.append(min(seg, n_types - 1))
        if t == "[SEP]":
            seg += 1
    return out


def lanes_shown(n_tokens: int, max_lanes: int = MAX_LANES) -> list[int | None]:
    """Positions of the tokens drawn as lanes: all of them up to ``max_lanes``, otherwise the
    first ``max_lanes - 2``, ``None`` (the "…" lane) and the last one."""
    if n_tokens <= max_lanes:
        return list(range(n_tokens))
    return list(range(max_lanes - 2)) + [None, n_tokens - 1]


def _text_width_in(text: str, pt: float = _FONT) -> float:
    """Width of ``text`` in inches at ``pt`` points in the default font."""
    width, _, _ = _TEXT_TO_PATH.get_text_width_height_descent(text, FontProperties(size=pt), ismath=False)
    return width / 72


def _drawable(text: str) -> bool:
    """Whether the fonts in use (Matplotlib falls back along ``font.family``; the course appends its
    Chinese font, :func:`helpers.common.style.use_cjk_font`) have a glyph for every character of
    ``text``. Without one (no CJK font installed) the lane shows the token's position instead."""
    import matplotlib as mpl

    fonts = []
    for family in mpl.rcParams["font.family"]:
        try:
            fonts.append(get_font(findfont(FontProperties(family=[family]), fallback_to_default=False)))
        except (ValueError, RuntimeError):  # a family this machine does not have
            continue
    fonts = fonts or [get_font(findfont(FontProperties()))]
    return all(any(f.get_char_index(ord(ch)) != 0 for f in fonts) for ch in text if not ch.isspace())


def _fit(text: str, width_in: float, pt: float = _FONT) -> str:
    """``text`` cut with "…" so that it is at most ``width_in`` inches wide at ``pt`` points."""
    if _text_width_in(text, pt) <= width_in:
        return text
    while len(text) > 1 and _text_width_in(text + "\u2026", pt) > width_in:
        text = text[:-1]
    return text + "\u2026"


class _Rows:
    """Rows stacked bottom to top; each remembers its centre, height and part."""

    def __init__(self, y0: float):
        self.y = y0
        self.rows: dict[str, tuple[float, float, str | None]] = {}

    def add(self, name: str, height: float, part: str | None = None, gap: float = 0.0):
        self.y += gap
        self.rows[name] = (self.y + height / 2, height, part)
        self.y += height
        return self.y - height / 2

    def c(self, name):
        return self.rows[name][0]

    def top(self, name):
        c, h, _ = self.rows[name]
        return c + h / 2

    def bottom(self, name):
        c, h, _ = self.rows[name]
        return c - h / 2

    def extent(self, part):
        spans = [(c - h / 2, c + h / 2) for c, h, p in self.rows.values() if p == part]
        return spans


def _arrow(ax, a, b, color=_EDGE, lw=0.9, style="-|>", scale=7, z=2, **kw):
    ax.add_patch(FancyArrowPatch(a, b, arrowstyle=style, mutation_scale=scale, color=color, linewidth=lw, zorder=z,
                                 shrinkA=0, shrinkB=0, **kw))


def _chip(ax, x, y, w, h, part, text="", z=4, fontsize=_FONT, round_=0.03):
    ax.add_patch(FancyBboxPatch((x - w / 2, y - h / 2), w, h, boxstyle=f"round,pad=0,rounding_size={round_}",
                                facecolor=_FACE[part], edgecolor=_EDGE, linewidth=0.8, zorder=z, gid=f"box:{part}"))
    if text:
        ax.text(x, y, text, ha="center", va="center", fontsize=fontsize, zorder=z + 0.5)


def _plus(ax, x, y, r, part="add_norm"):
    ax.add_patch(Circle((x, y), r, facecolor="white", edgecolor=_EDGE, linewidth=0.9, zorder=5, gid=f"box:{part}"))
    ax.plot([x - 0.6 * r, x + 0.6 * r], [y, y], color=_EDGE, lw=0.9, zorder=5.5)
    ax.plot([x, x], [y - 0.6 * r, y + 0.6 * r], color=_EDGE, lw=0.9, zorder=5.5)


def _mark_highlight(ax, parts, spans, x0, x1, label_x, label_y=None):
    """Bold orange frames on the parts' own boxes, a pale band over their rows, "you are here"."""
    for part in parts:
        for patch in ax.patches:
            if patch.get_gid() == f"box:{part}":
                patch.set_edgecolor(HIGHLIGHT)
                patch.set_linewidth(2.2)
    merged: list[list[float]] = []
    for lo, hi in sorted(spans, key=lambda iv: -iv[1]):
        if merged and hi >= merged[-1][0] - 0.05:
            merged[-1][0] = min(merged[-1][0], lo)
        else:
            merged.append([lo, hi])
    for k, (lo, hi) in enumerate(merged):
        ax.add_patch(FancyBboxPatch((x0, lo), x1 - x0, hi - lo, boxstyle="round,pad=0,rounding_size=0.05",
                                    facecolor=HIGHLIGHT, alpha=0.12, edgecolor=HIGHLIGHT, linewidth=1.2,
                                    zorder=0.5, gid="highlight:band"))
        if k == 0:
            ax.text(label_x, hi if label_y is None else label_y, "you are here", ha="right", va="center",
                    fontsize=8.5, fontweight="bold",
                    color="#a04f00", zorder=8,
                    bbox=dict(boxstyle="round,pad=0.15", facecolor="white", edgecolor=HIGHLIGHT, linewidth=1.0))


def architecture_diagram(config, highlight=None, ax=None, n_tokens: int | None = None,
                         num_labels: int | None = None, title: str | None = None, tokens=None,
                         max_lanes: int = MAX_LANES):
    """Draw the BERT encoder described by ``config`` (a ``BertConfig``, e.g. ``model.config``)
    as token lanes, bottom to top.

    ``tokens``: the lanes' tokens (e.g. ``trace.tokens``); default a short generic input. At
    most ``max_lanes`` lanes are drawn: a longer input shows its first tokens, "…" and its last.
    ``highlight``: a part name or a list of them (:data:`PARTS`), marked "you are here".
    ``n_tokens``: write the shapes with this many tokens (default: ``len(tokens)`` when tokens
    are given, otherwise ``n``). ``num_labels``: the number of classes of the head (``C``).
    One layer is drawn and labelled "× L", so the picture reads the same for 3 or 24 layers.
    Returns the axes.
    """
    cfg = _check_config(config)
    parts = _check_highlight(highlight)
    if n_tokens is not None and (isinstance(n_tokens, bool) or not isinstance(n_tokens, int) or n_tokens < 1):
        raise ValueError(f"n_tokens must be a positive int (the number of tokens), got {n_tokens!r}.")
    if isinstance(max_lanes, bool) or not isinstance(max_lanes, int) or max_lanes < 3:
        raise ValueError(f"max_lanes must be an int of at least 3, got {max_lanes!r}.")
    given = tokens is not None
    toks = _check_tokens(tokens)
    L, H, A, I = cfg.num_hidden_layers, cfg.hidden_size, cfg.num_attention_heads, cfg.intermediate_size
    d = H // A if A else H
    n = str(n_tokens) if n_tokens is not None else (str(len(toks)) if given else "n")
    C = "C" if num_labels is None else str(num_labels)
    segs = _segments(toks, cfg.type_vocab_size)
    lanes = lanes_shown(len(toks), max_lanes)

    # -- rows, bottom to top ------------------------------------------------------------------
    spec = [  # (row, height, part, gap below)
        ("tokens", 0.30, "tokens", 0.0), ("word", 0.30, "embeddings", 0.10), ("position", 0.30, "embeddings", 0.0),
        ("segment", 0.30, "embeddings", 0.0), ("sum", 0.24, "embeddings", 0.0), ("emb_norm", 0.30, "embeddings", 0.0),
        ("frame_bottom", 0.10, None, 0.06 + 2 * _SHADOW), ("qkv", 0.30, "attention", 0.0),
        ("heads", 0.36, "attention", 0.0),
        ("mix", 0.56, "attention", 0.0), ("concat", 0.30, "attention", 0.0), ("dense", 0.26, "attention", 0.0),
        ("add1", 0.26, "add_norm", 0.0), ("norm1", 0.26, "add_norm", 0.0), ("ff1", 0.34, "feed_forward", 0.04),
        ("ff2", 0.26, "feed_forward", 0.0), ("add2", 0.26, "add_norm", 0.0), ("norm2", 0.30, "add_norm", 0.0),
        ("frame_top", 0.30, "layer", 0.0), ("output", 0.30, None, 0.08), ("pooler", 0.34, "pooler", 0.06),
        ("head", 0.34, "head", 0.10), ("columns", 0.26, None, 0.10)]
    marked_rows = [name for name, _, part, _ in spec if part in parts]
    r = _Rows(0.08)
    for name, h, part, gap in spec:
        r.add(name, h, None if part == "layer" else part, gap=gap)
        if marked_rows and name == marked_rows[-1]:  # room for "you are here" above the top mark
            r.add("you_are_here", 0.24, None, gap=0.02)
    title_h = 0.72
    height = r.y + title_h

    own_figure = ax is None
    ax = new_axes(ax, (WIDTH, height))
    fig = ax.figure
    if own_figure:
        ax.set_position([0, 0, 1, 1])  # the diagram owns its figure: use all of it
    ax.set_xlim(0, WIDTH)
    ax.set_ylim(0, height)
    ax.axis("off")

    names = [name for name, *_ in spec]
    in_frame = set(names[names.index("frame_bottom"):names.index("frame_top") + 1])  # labelled inside the frame

    def what(row, text, **kw):
        x = _INSET_X if row in in_frame else _WHAT_X
        ax.text(x, r.c(row), text, ha="left", va="center", fontsize=_FONT, linespacing=1.15, zorder=6,
                gid="what", **kw)

    def shape(row, text):
        if _text_width_in(text) > _CODE_X - _SHAPE_X - 0.06:  # e.g. "3 × [512, 1024]"
            text = text.replace(" \u00d7 [", " \u00d7\n[")
        ax.text(_SHAPE_X, r.c(row), text, ha="left", va="center", fontsize=_FONT, zorder=6, color="#222222",
                gid="shape")

    def code(row, text, y=None):
        ax.text(_CODE_X, r.c(row) if y is None else y, text, ha="left", va="center", fontsize=_FONT,
                family=_MONO, zorder=6, color="#1a1a6e", linespacing=1.15, gid="code")

    # -- title and column heads ---------------------------------------------------------------
    head = title or f"BERT encoder of the loaded model: L = {L} layers, H = {H}, A = {A} heads"
    ax.text(WIDTH / 2, height - 0.08, head, ha="center", va="top", fontsize=_TITLE_FONT, fontweight="bold")
    ax.text(WIDTH / 2, height - 0.30,
            f"d = H/A = {d}, I = {I}, vocabulary {cfg.vocab_size:,}, at most {cfg.max_position_embeddings} "
            f"positions, n = number of tokens\nread bottom to top; one lane per token; post-LN: every LayerNorm "
            "comes after its residual add", ha="center", va="top", fontsize=_FONT, color="#333333",
            linespacing=1.2)
    for x, text in ((_WHAT_X, "what happens"), (_LANE_L, "one lane per token"), (_SHAPE_X, "shape"),
                    (_CODE_X, "code name (in model)")):
        ax.text(x, r.c("columns"), text, ha="left", va="center", fontsize=_FONT, fontweight="bold", color="#333333")
    ax.plot([_WHAT_X, WIDTH - 0.06], [r.bottom("columns")] * 2, color="#bbbbbb", lw=0.8)

    # -- lanes ----------------------------------------------------------------------------------
    k = len(lanes)
    s = (_LANE_R - _LANE_L) / k
    left = [_LANE_L + i * s for i in range(k)]
    trunk = [x + 0.30 * s for x in left]  # the residual stream of each lane
    side = [x + 0.72 * s for x in left]  # where a sublayer branches out to
    chip_w, side_w = 0.44 * s, 0.34 * s
    real = [i for i, p in enumerate(lanes) if p is not None]
    y_stream0, y_stream1 = r.c("emb_norm"), r.top("frame_top")

    for i, pos in enumerate(lanes):
        cx = left[i] + s / 2
        if pos is None:  # the "…" lane: tokens not drawn
            ax.text(cx, r.c("tokens"), "\u2026", ha="center", va="center", fontsize=10)
            for row in ("position", "qkv", "ff1", "output"):
                ax.text(trunk[i] + 0.1 * s, r.c(row), "\u2026", ha="center", va="center", fontsize=10,
                        color="#666666")
            continue
        t = trunk[i]
        label = toks[pos] if _drawable(toks[pos]) else f"#{pos}"
        _chip(ax, cx, r.c("tokens"), 0.94 * s, 0.24, "tokens", _fit(label, 0.86 * s))
        # embeddings: three lookups summed into the lane, then LayerNorm
        ax.plot([t, t], [r.top("tokens"), r.c("sum")], color=_EDGE, lw=0.8, zorder=2)
        _chip(ax, t, r.c("word"), chip_w, 0.22, "embeddings", "w")
        _chip(ax, t, r.c("position"), chip_w, 0.22, "embeddings", str(pos))
        _chip(ax, t, r.c("segment"), chip_w, 0.22, "embeddings", str(segs[pos]))
        _plus(ax, t, r.c("sum"), 0.075, part="embeddings")
        # the residual stream
        ax.plot([t, t], [y_stream0, y_stream1], color=RESIDUAL_COLOR, lw=5.5, alpha=0.55, zorder=1,
                solid_capstyle="butt")
        _chip(ax, t, r.c("emb_norm"), chip_w, 0.18, "embeddings", "LN")
        # attention: branch off, q/k/v, fan out into A heads, concatenate, dense, add back
        yb = r.bottom("qkv") + 0.02
        ax.plot([t, side[i]], [yb, yb], color=_EDGE, lw=0.8, zorder=2)
        ax.plot([side[i], side[i]], [yb, r.c("qkv")], color=_EDGE, lw=0.8, zorder=2)
        _chip(ax, side[i], r.c("qkv"), side_w, 0.18, "attention")
        heads_x = np.linspace(left[i] + 0.10 * s, left[i] + 0.96 * s, A) if A > 1 else [side[i]]
        y_fan0, y_comb = r.c("qkv") + 0.09, r.top("heads") - 0.10
        y_back = r.bottom("concat") + 0.04
        for hx in heads_x:  # fan out into A heads, each a short bar; back together to concatenate
            ax.plot([side[i], hx], [y_fan0, y_comb - 0.06], color=_HEAD_COLOR, lw=0.5, zorder=2.5)
            ax.plot([hx, hx], [y_comb - 0.06, y_comb + 0.06], color=_HEAD_COLOR, lw=1.6, zorder=2.6,
                    solid_capstyle="butt")
            ax.plot([hx, hx], [y_comb + 0.06, y_back], color=_HEAD_COLOR, lw=0.4, alpha=0.35, zorder=2.5)
            ax.plot([hx, side[i]], [y_back, r.c("concat") + 0.06], color=_HEAD_COLOR, lw=0.5, zorder=2.5)
        ax.plot([side[i], side[i]], [r.c("concat"), r.c("dense")], color=_EDGE, lw=0.8, zorder=2)
        _chip(ax, side[i], r.c("dense"), side_w, 0.18, "attention")
        _arrow(ax, (side[i], r.c("dense") + 0.09), (side[i], r.c("add1")), lw=0.8, style="-")
        _arrow(ax, (side[i], r.c("add1")), (t + 0.075, r.c("add1")), lw=0.8)
        _plus(ax, t, r.c("add1"), 0.075)
        _chip(ax, t, r.c("norm1"), chip_w, 0.18, "add_norm", "LN")
        # feed-forward: this lane alone
        yb = r.bottom("ff1") + 0.02
        ax.plot([t, side[i], side[i]], [yb, yb, r.c("ff1")], color=_EDGE, lw=0.8, zorder=2)
        _chip(ax, side[i], r.c("ff1"), 0.5 * s, 0.24, "feed_forward")
        ax.plot([side[i], side[i]], [r.c("ff1"), r.c("ff2")], color=_EDGE, lw=0.8, zorder=2)
        _chip(ax, side[i], r.c("ff2"), side_w, 0.18, "feed_forward")
        _arrow(ax, (side[i], r.c("ff2") + 0.09), (side[i], r.c("add2")), lw=0.8, style="-")
        _arrow(ax, (side[i], r.c("add2")), (t + 0.075, r.c("add2")), lw=0.8)
        _plus(ax, t, r.c("add2"), 0.075)
        _chip(ax, t, r.c("norm2"), chip_w, 0.18, "add_norm", "LN")
        # out of the stack
        if i == 0:  # [CLS]: on into the pooler
            _arrow(ax, (t, y_stream1), (t, r.bottom("pooler")), lw=1.0)
        else:
            _arrow(ax, (t, y_stream1), (t, r.c("output") + 0.05), lw=1.0)

    # attention: the only arrows between lanes (every token's values into one query's lane)
    if len(real) > 1:
        q = real[min(2, len(real) - 1)]
        y_mix = r.c("mix") - 0.10
        halo = [patheffects.withStroke(linewidth=3.2, foreground="white")]
        for j in real:
            if j == q:
                continue
            rad = -0.5 if j < q else 0.5
            ax.add_patch(FancyArrowPatch((left[j] + 0.5 * s, y_mix), (left[q] + (0.38 if j < q else 0.62) * s, y_mix),
                                         arrowstyle="-|>", mutation_scale=9, color=_MIX_COLOR, linewidth=1.4,
                                         zorder=3.2, shrinkA=0, shrinkB=0, connectionstyle=f"arc3,rad={rad}",
                                         path_effects=halo))
        name = toks[lanes[q]] if _drawable(toks[lanes[q]]) else f"#{lanes[q]}"
        ax.text(_LANE_R - 0.03, r.top("mix") - 0.02, f"query \u201c{_fit(name, 0.9)}\u201d reads every token",
                ha="right", va="top", fontsize=_FONT, color=_MIX_COLOR, zorder=6,
                bbox=dict(boxstyle="round,pad=0.08", facecolor="white", edgecolor="none", alpha=0.9))

    # the layer's frame, with two shadows (left and below): it repeats L times
    x0, x1 = _FRAME_X0, _LANE_R + 0.03
    fb, ft = r.bottom("frame_bottom"), r.top("frame_top")
    for j, shift in enumerate((2 * _SHADOW, _SHADOW, 0.0)):
        ax.add_patch(FancyBboxPatch((x0 - shift, fb - shift), x1 - x0, ft - fb,
                                    boxstyle="round,pad=0,rounding_size=0.08",
                                    facecolor="white" if j == 2 else "#f4f4f4", edgecolor="#888888",
                                    linewidth=1.0, linestyle="-" if j == 2 else ":", zorder=0.2 + 0.1 * j,
                                    gid="box:layer"))
    ax.text(_INSET_X, r.c("frame_top"), f"encoder layer l = 1 \u2026 {L}", ha="left", va="center",
            fontsize=_FONT, fontweight="bold", color="#333333", zorder=6)
    ax.text(_LANE_R - 0.02, r.c("frame_top"), f"\u00d7 L = {L}", ha="right", va="center", fontsize=11,
            fontweight="bold", color="#333333", zorder=6)
    code("frame_top", "encoder.layer[l - 1]")

    # -- the text columns ------------------------------------------------------------------------
    what("tokens", "tokens")
    shape("tokens", f"[{n}]")
    code("tokens", "input_ids")
    what("word", f"word embedding\ntable {cfg.vocab_size:,} \u00d7 {H}")
    what("position", f"+ position (0, 1, \u2026)\ntable {cfg.max_position_embeddings:,} \u00d7 {H}")
    what("segment", f"+ segment (A: 0, B: 1)\ntable {cfg.type_vocab_size} \u00d7 {H}")
    for row in ("word", "position", "segment"):
        shape(row, f"[{n}, {H}]")
    code("word", "embeddings.\n  word_embeddings")
    code("position", "  position_embeddings")
    code("segment", "  token_type_embeddings")
    what("sum", "sum per token")
    what("emb_norm", "LayerNorm: the stream\nstarts (green)", color="#2d6b2d")
    shape("emb_norm", f"[{n}, {H}]")
    code("emb_norm", "  LayerNorm\n\u2192 trace.hidden(0)")

    what("qkv", "query, key, value\n(dense H\u2192H each)")
    shape("qkv", f"3 \u00d7 [{n}, {H}]")
    code("qkv", "attention.self.\n  query, key, value")
    what("heads", f"split into A = {A} heads\nof d = {d} numbers each")
    shape("heads", f"[{A}, {n}, {d}]")
    what("mix", "softmax(QK\u1d40/\u221ad+mask)\n\u00b7 V: the only place\nwhere tokens exchange\ninformation",
         color=_MIX_COLOR)
    shape("mix", f"[{A}, {n}, {n}]")
    code("mix", "\u2192 trace.attention(l)")
    what("concat", f"concatenate heads:\n{A} \u00d7 {d} = {H}")
    shape("concat", f"[{n}, {H}]")
    what("dense", "output dense H\u2192H")
    shape("dense", f"[{n}, {H}]")
    code("dense", "attention.output.dense")
    what("add1", "add to the stream")
    what("norm1", "LayerNorm")
    shape("norm1", f"[{n}, {H}]")
    code("norm1", "attention.output.\n  LayerNorm")  # two lines: the column fits the page
    what("ff1", f"feed-forward, per token:\ndense H\u2192I, {cfg.hidden_act.upper()}")
    shape("ff1", f"[{n}, {I}]")
    code("ff1", "intermediate.dense")
    what("ff2", "dense I\u2192H")
    shape("ff2", f"[{n}, {H}]")
    code("ff2", "output.dense")
    what("add2", "add to the stream")
    what("norm2", "LayerNorm")
    shape("norm2", f"[{n}, {H}]")
    code("norm2", "output.LayerNorm\n\u2192 trace.hidden(l)")

    what("output", "last layer's output")
    shape("output", f"[{n}, {H}]")
    code("output", f"last_hidden_state\n= trace.hidden({L})")
    pooler_x1 = _LANE_R - 0.04
    px0 = left[0] + 0.04
    ax.add_patch(FancyBboxPatch((px0, r.bottom("pooler") + 0.03), pooler_x1 - px0, 0.28,
                                boxstyle="round,pad=0,rounding_size=0.04", facecolor=_FACE["pooler"],
                                edgecolor=_EDGE, linewidth=0.9, zorder=4, gid="box:pooler"))
    ax.text((px0 + pooler_x1) / 2, r.c("pooler"), "pooler: dense H\u2192H + tanh", ha="center", va="center",
            fontsize=_FONT, zorder=5)
    what("pooler", f"the {_fit(toks[0] if _drawable(toks[0]) else 'first', 0.5)} lane only")
    shape("pooler", f"[{H}]")
    code("pooler", "pooler \u2192 pooler_output")
    ax.add_patch(FancyBboxPatch((px0, r.bottom("head") + 0.03), pooler_x1 - px0, 0.28,
                                boxstyle="round,pad=0,rounding_size=0.04", facecolor=_FACE["head"],
                                edgecolor=_EDGE, linewidth=0.9, zorder=4, gid="box:head"))
    ax.text((px0 + pooler_x1) / 2, r.c("head"), f"classification head: dense H\u2192{C}", ha="center",
            va="center", fontsize=_FONT, zorder=5)
    _arrow(ax, (trunk[0], r.top("pooler") - 0.03), (trunk[0], r.bottom("head") + 0.03), lw=1.0)
    what("head", "added for a task\n(lesson 04)")
    shape("head", f"[{C}]")
    code("head", "logits")

    spans = []
    for part in parts:
        layer = (r.bottom("frame_bottom") - 2 * _SHADOW, r.top("frame_top"))  # the shadows too
        spans += [layer] if part == "layer" else r.extent(part)
    if parts:
        _mark_highlight(ax, parts, spans, 0.0, WIDTH, WIDTH - 0.08, r.c("you_are_here"))
    if own_figure:
        fig.set_size_inches(WIDTH, height)
    marked = f"; marked 'you are here': {', '.join(parts)}" if parts else ""
    ax.figure.set_label(f"{head}: one lane per token, embeddings at the bottom, the encoder "
                        f"layer repeated L = {L} times, pooler and head on top{marked}")
    return ax


# -- the "you are here" strip ---------------------------------------------------------------------

_STRIP = (("tokens", "tokens"), ("embeddings", "embeddings"), ("attention", "attention"),
          ("add_norm", "add & norm"), ("feed_forward", "feed-forward"), ("add_norm", "add & norm"),
          ("pooler", "pooler"), ("head", "head"))
_STRIP_FONT = 8.5
assert _STRIP_FONT >= MIN_FONT_PT


def you_are_here(config, highlight=None, ax=None):
    """A one-row map of BERT for the top of a lesson: tokens → embeddings → [attention → add &
    norm → feed-forward → add & norm] × L → pooler → head, with ``highlight`` (a part or a
    list of :data:`PARTS`; ``"layer"`` marks the whole repeated layer) marked "you are here".
    About 6.5 × 1.2 inches (6.7 as the notebook shows it, with its margin), text at least 8 pt. Returns the axes."""
    cfg = _check_config(config)
    parts = _check_highlight(highlight)
    L = cfg.num_hidden_layers
    width, height = WIDTH, 1.2
    own_figure = ax is None
    ax = new_axes(ax, (width, height))
    if own_figure:
        ax.set_position([0, 0, 1, 1])
    ax.set_xlim(0, width)
    ax.set_ylim(0, height)
    ax.axis("off")
    widths = [_text_width_in(label, _STRIP_FONT) + 0.11 for _, label in _STRIP]
    gap, layer_pad = 0.13, 0.08
    total = sum(widths) + gap * (len(widths) - 1) + 2 * layer_pad
    x = (width - total) / 2
    y, h = 0.5, 0.34
    xs = []
    for k, ((part, label), w) in enumerate(zip(_STRIP, widths)):
        if k == 2:
            x += layer_pad
        xs.append((x, x + w))
        ax.add_patch(FancyBboxPatch((x, y - h / 2), w, h, boxstyle="round,pad=0,rounding_size=0.05",
                                    facecolor=_FACE[part], edgecolor=_EDGE, linewidth=0.9, zorder=3,
                                    gid=f"box:{part}"))
        ax.text(x + w / 2, y, label, ha="center", va="center", fontsize=_STRIP_FONT, zorder=4)
        x += w
        if k == 5:
            x += layer_pad
        if k < len(_STRIP) - 1:
            _arrow(ax, (x + 0.02, y), (x + gap - 0.02, y), lw=1.0, scale=8)
            x += gap
    lx0, lx1 = xs[2][0] - layer_pad + 0.02, xs[5][1] + layer_pad - 0.02
    ax.add_patch(FancyBboxPatch((lx0, y - h / 2 - 0.07), lx1 - lx0, h + 0.14,
                                boxstyle="round,pad=0,rounding_size=0.07", facecolor="white",
                                edgecolor="#888888", linewidth=1.0, zorder=1, gid="box:layer"))
    ax.text((lx0 + lx1) / 2, y - h / 2 - 0.1, f"encoder layer, \u00d7 L = {L}", ha="center", va="top",
            fontsize=_STRIP_FONT, fontweight="bold", color="#333333")
    for part in parts:
        for patch in ax.patches:
            if patch.get_gid() == f"box:{part}":
                patch.set_edgecolor(HIGHLIGHT)
                patch.set_linewidth(2.2)
                if part != "layer":
                    patch.set_facecolor("#fde3c8")
    runs: list[list[float]] = []  # marked boxes next to each other share one bracket
    marked = [k for k, (part, _) in enumerate(_STRIP) if part in parts or ("layer" in parts and 2 <= k <= 5)]
    for k in marked:
        a, b = xs[k]
        if runs and runs[-1][2] == k - 1:
            runs[-1][1:] = [b, k]
        else:
            runs.append([a, b, k])
    top = y + h / 2 + (0.11 if "layer" in parts else 0.05)
    for a, b, _ in runs:
        ax.plot([a + 0.03, a + 0.03, b - 0.03, b - 0.03], [top, top + 0.1, top + 0.1, top], color=HIGHLIGHT,
                lw=1.6, zorder=5, gid="highlight:band")
        half = _text_width_in("you are here", _STRIP_FONT) * 0.58  # bold is a little wider
        ax.text(min(max((a + b) / 2, half + 0.03), width - half - 0.03), top + 0.14, "you are here", ha="center", va="bottom", fontsize=_STRIP_FONT,
                fontweight="bold", color="#a04f00")
    if not runs:
        ax.text(width / 2, y + h / 2 + 0.12, "the whole encoder, from tokens to a class", ha="center",
                va="bottom", fontsize=_STRIP_FONT, color="#333333")
    where = ", ".join(_check_highlight(highlight)) or "the whole encoder"
    ax.figure.set_label(f"where this lesson sits in BERT: tokens, embeddings, the encoder layer "
                        f"(x L = {cfg.num_hidden_layers}), pooler, head; you are here: {where}")
    return ax
