"""The architecture diagram: a BERT encoder drawn from a config, so every size is the loaded model's.

:func:`architecture_diagram` draws, top to bottom, the path of lessons 00-07:

tokens -> word + position + segment (token-type) rows, summed -> LayerNorm (``hidden_states[0]``)
-> one encoder layer drawn expanded and marked "x L" [self-attention -> dense -> add -> LayerNorm
-> intermediate dense + GELU -> output dense -> add -> LayerNorm] (``hidden_states[l]``) -> pooler
(dense + tanh on the ``[CLS]`` row) -> a classification head.

The right-hand column gives each step's tensor shape and the name the course uses for it
(``trace.hidden(l)``, ``trace.attention(l)``, ``pooler_output``). The skip connections on the
left are the residual stream; BERT is *post-LN*: each LayerNorm comes after its residual add
(Vaswani et al., 2017; Devlin et al., 2019), which the diagram says in its title.

``highlight`` marks the part a lesson is about ("you are here"); the parts are :data:`PARTS`.
Every artist carries a gid (``"box:<part>"``, ``"highlight:<part>"``) so tests can find it.
"""

from __future__ import annotations

from matplotlib.patches import Circle, FancyArrowPatch, FancyBboxPatch

from helpers.common.style import HIGHLIGHT, new_axes

PARTS = ("tokens", "embeddings", "attention", "add_norm", "feed_forward", "pooler", "head")
LESSON_PARTS = {  # what each lesson opens, for "you are here"
    "00": (),
    "01": ("tokens", "embeddings"),
    "02": ("attention",),
    "03": ("add_norm", "feed_forward"),
    "07": ("pooler", "head"),
}
_FACE = {"tokens": "#f2f2f2", "embeddings": "#d8e7f5", "attention": "#dcefd8", "add_norm": "#ececec",
         "feed_forward": "#e6def2", "pooler": "#f7ead0", "head": "#f7ead0"}
_EDGE = "#555555"
RESIDUAL_COLOR = "tab:green"
_REQUIRED = ("num_hidden_layers", "hidden_size", "num_attention_heads", "intermediate_size", "vocab_size",
             "max_position_embeddings", "type_vocab_size", "hidden_act")

# Layout in inches: the axes spans the figure and one data unit is one inch, so text sizes
# and box sizes stay in proportion whatever the model's sizes are.
WIDTH = 8.6
_RES_X = 0.45  # the residual stream's vertical line
_BOX_L, _BOX_R = 0.85, 4.45  # the main column
_NOTE_X = 4.65  # shapes and course names
_MID = (_BOX_L + _BOX_R) / 2
_GAP = 0.13
_BOX_FONT, _NOTE_FONT = 9, 8.5


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


class _Layout:
    """Rows placed top to bottom; remembers each part's vertical extent for the highlight."""

    def __init__(self, ax, top: float):
        self.ax, self.y = ax, top
        self.extent: dict[str, list[float]] = {}

    def _claim(self, part, y0, y1):
        lo, hi = self.extent.get(part, [y0, y1])
        self.extent[part] = [min(lo, y0), max(hi, y1)]

    def box(self, part, text, note=None, height=0.34, x0=_BOX_L, x1=_BOX_R, advance=True):
        y1 = self.y
        y0 = y1 - height
        patch = FancyBboxPatch((x0, y0), x1 - x0, height, boxstyle="round,pad=0,rounding_size=0.06",
                               facecolor=_FACE[part], edgecolor=_EDGE, linewidth=1.0, zorder=3, gid=f"box:{part}")
        self.ax.add_patch(patch)
        self.ax.text((x0 + x1) / 2, y0 + height / 2, text, ha="center", va="center", fontsize=_BOX_FONT,
                     zorder=4, linespacing=1.25)
        if note:
            self.note(note, y0 + height / 2)
        self._claim(part, y0, y1)
        if advance:
            self.y = y0 - _GAP
        return y0, y1

    def add(self, part, note=None, radius=0.13):
        cy = self.y - radius
        self.ax.add_patch(Circle((_MID, cy), radius, facecolor="white", edgecolor=_EDGE, linewidth=1.2, zorder=3,
                                 gid=f"box:{part}"))
        self.ax.text(_MID, cy, "+", ha="center", va="center", fontsize=11, fontweight="bold", zorder=4)
        if note:
            self.note(note, cy)
        self._claim(part, cy - radius, cy + radius)
        self.y = cy - radius - _GAP
        return cy

    def note(self, text, y):
        self.ax.text(_NOTE_X, y, text, ha="left", va="center", fontsize=_NOTE_FONT, zorder=4, color="#222222",
                     linespacing=1.2)

    def arrow(self, y_from, y_to, x=_MID, color=_EDGE, lw=1.2):
        self.ax.add_patch(FancyArrowPatch((x, y_from), (x, y_to), arrowstyle="-|>", mutation_scale=10,
                                          color=color, linewidth=lw, zorder=2, shrinkA=0, shrinkB=0))


def _merged(intervals, gap: float = 0.4) -> list[list[float]]:
    """Vertical extents joined where they touch (e.g. pooler + head), top first."""
    out: list[list[float]] = []
    for lo, hi in sorted(intervals, key=lambda iv: -iv[1]):
        if out and hi >= out[-1][0] - gap:
            out[-1][0] = min(out[-1][0], lo)
        else:
            out.append([lo, hi])
    return out


def _residual(ax, y_from, y_to, label=None):
    """A skip connection: from the main line at ``y_from`` out to the left, down, into the add at ``y_to``."""
    ax.plot([_MID, _RES_X, _RES_X], [y_from, y_from, y_to], color=RESIDUAL_COLOR, linewidth=2.2,
            solid_capstyle="round", zorder=1)
    ax.add_patch(FancyArrowPatch((_RES_X, y_to), (_MID - 0.14, y_to), arrowstyle="-|>", mutation_scale=11,
                                 color=RESIDUAL_COLOR, linewidth=2.2, zorder=2, shrinkA=0, shrinkB=0))
    if label:
        ax.text(_RES_X - 0.1, (y_from + y_to) / 2, label, rotation=90, ha="right", va="center",
                fontsize=_NOTE_FONT, color=RESIDUAL_COLOR, fontweight="bold")


def architecture_diagram(config, highlight=None, ax=None, n_tokens: int | None = None,
                         num_labels: int | None = None, title: str | None = None):
    """Draw the BERT encoder described by ``config`` (a ``BertConfig``, e.g. ``model.config``).

    ``highlight``: a part name or a list of them (:data:`PARTS`), marked "you are here".
    ``n_tokens``: write the shapes with this many tokens instead of ``n``.
    ``num_labels``: the number of classes of the head (``C`` when not given).
    One layer is drawn expanded and labelled "x L", so the picture reads the same for 3 or 24 layers.
    Returns the axes.
    """
    cfg = _check_config(config)
    parts = _check_highlight(highlight)
    if n_tokens is not None and (isinstance(n_tokens, bool) or not isinstance(n_tokens, int) or n_tokens < 1):
        raise ValueError(f"n_tokens must be a positive int (the number of tokens), got {n_tokens!r}.")
    L, H, A, I = cfg.num_hidden_layers, cfg.hidden_size, cfg.num_attention_heads, cfg.intermediate_size
    n = "n" if n_tokens is None else str(n_tokens)
    C = "C" if num_labels is None else str(num_labels)
    d = H // A if A else H

    height = 9.0
    own_figure = ax is None
    ax = new_axes(ax, (WIDTH, height))
    fig = ax.figure
    if own_figure:
        ax.set_position([0, 0, 1, 1])  # the diagram owns its figure: use all of it
    ax.set_xlim(0, WIDTH)
    ax.set_ylim(0, height)
    ax.axis("off")

    head = title or (f"BERT encoder of the loaded model: L = {L} layers, H = {H}, A = {A} heads of d = {d}, "
                     f"I = {I}")
    ax.text(WIDTH / 2, height - 0.12, head, ha="center", va="top", fontsize=10, fontweight="bold")
    ax.text(WIDTH / 2, height - 0.42, "post-LN: every LayerNorm comes after its residual add  "
            f"|  n = number of tokens (at most {cfg.max_position_embeddings})",
            ha="center", va="top", fontsize=_NOTE_FONT, color="#333333")

    lay = _Layout(ax, height - 0.78)
    _, y = lay.box("tokens", "input_ids:  [CLS]  tok  tok  \u2026  [SEP]", f"[{n}] token ids (tokenizer)")
    y_top_emb = lay.y
    third = (_BOX_R - _BOX_L - 2 * 0.08) / 3
    tables = [("word", cfg.vocab_size), ("position", cfg.max_position_embeddings),
              ("segment", cfg.type_vocab_size)]
    for k, (name, rows) in enumerate(tables):
        x0 = _BOX_L + k * (third + 0.08)
        lay.box("embeddings", f"{name}\n{rows:,} \u00d7 {H}", height=0.44, x0=x0, x1=x0 + third, advance=False)
    lay.note(f"look up one row of each table per token:\n3 \u00d7 [{n}, {H}]   (model.embeddings)", y_top_emb - 0.22)
    lay.arrow(y - 0.005, y_top_emb + 0.005)
    lay.y = y_top_emb - 0.44 - _GAP
    y_emb_bottom = lay.y + _GAP
    cy = lay.add("embeddings", f"sum of the three rows: [{n}, {H}]")
    lay.arrow(y_emb_bottom, cy + 0.13)
    y0, _ = lay.box("embeddings", "LayerNorm", f"hidden_states[0] = trace.hidden(0):  [{n}, H] = [{n}, {H}]")
    lay.arrow(cy - 0.13, y0 + 0.34)

    # -- one encoder layer, expanded --------------------------------------------------
    frame_top = lay.y - 0.05
    lay.y = frame_top - 0.36
    y_in = lay.y + 0.1  # the layer's input x on the main line
    lay.arrow(y0, lay.y)
    a0, _ = lay.box("attention", f"self-attention: query, key, value; {A} heads \u00d7 {d}\n"
                    "P = softmax(QK\u1d40/\u221ad + mask),  context = P\u00b7V", height=0.5,
                    note=f"trace.attention(l): [A, {n}, {n}] = [{A}, {n}, {n}]")
    b0, b1 = lay.box("attention", "attention.output.dense  (H \u2192 H)", f"update: [{n}, {H}]")
    lay.arrow(a0, b1)
    c = lay.add("add_norm", "x + attention update  (residual)")
    lay.arrow(b0, c + 0.13)
    _residual(ax, y_in, c)
    d0, d1 = lay.box("add_norm", "LayerNorm  (attention.output.LayerNorm)", f"[{n}, {H}]")
    lay.arrow(c - 0.13, d1)
    y_mid = lay.y + _GAP / 2 + 0.02
    lay.y -= 0.08
    e0, e1 = lay.box("feed_forward", f"intermediate.dense (H \u2192 I) + {cfg.hidden_act.upper()}",
                     f"[{n}, I] = [{n}, {I}]")
    lay.arrow(d0, e1)
    f0, f1 = lay.box("feed_forward", "output.dense  (I \u2192 H)", f"update: [{n}, {H}]")
    lay.arrow(e0, f1)
    g = lay.add("add_norm", "x + feed-forward update  (residual)")
    lay.arrow(f0, g + 0.13)
    _residual(ax, y_mid, g)
    h0, h1 = lay.box("add_norm", "LayerNorm  (output.LayerNorm)",
                     f"hidden_states[l] = trace.hidden(l):  [{n}, {H}]")
    lay.arrow(g - 0.13, h1)
    frame_bottom = h0 - 0.12
    for k, shift in enumerate((0.12, 0.06, 0.0)):  # two shadows behind: the block repeats
        ax.add_patch(FancyBboxPatch((0.2 + shift, frame_bottom - shift), _BOX_R + 0.15 - 0.2, frame_top - frame_bottom,
                                    boxstyle="round,pad=0,rounding_size=0.1", facecolor="white" if k == 2 else "#f4f4f4",
                                    edgecolor="#888888", linewidth=1.0, linestyle="-" if k == 2 else ":", zorder=0.5,
                                    gid="box:layer"))
    ax.text(_BOX_R + 0.02, frame_top - 0.17, f"\u00d7 L = {L}", ha="right", va="center", fontsize=11,
            fontweight="bold", color="#333333", zorder=4)
    ax.text(0.3, frame_top - 0.17, f"encoder layer l = 1 \u2026 {L}   (model.encoder.layer[l - 1])", ha="left",
            va="center", fontsize=_NOTE_FONT, color="#333333", zorder=4)
    ax.text(_RES_X - 0.08, (y_in + g) / 2, "residual stream", rotation=90, ha="right", va="center",
            fontsize=_NOTE_FONT, color=RESIDUAL_COLOR, fontweight="bold")

    lay.y = frame_bottom - 0.25
    lay.note(f"last_hidden_state = hidden_states[{L}]", lay.y + 0.06)
    lay.arrow(h0, lay.y - 0.1)
    lay.y -= 0.1
    p0, _ = lay.box("pooler", "pooler: dense (H \u2192 H) + tanh, on the [CLS] row",
                    f"pooler_output: [{H}]   (model.pooler)")
    k0, k1 = lay.box("head", f"classification head: dense (H \u2192 {C})",
                     f"logits: [{C}]   (added for a task, lesson 07)")
    lay.arrow(p0, k1)

    for part in parts:  # the part's own boxes get a bold orange frame
        for patch in ax.patches:
            if patch.get_gid() == f"box:{part}":
                patch.set_edgecolor(HIGHLIGHT)
                patch.set_linewidth(2.4)
    for k, (lo, hi) in enumerate(_merged([lay.extent[p] for p in parts])):
        ax.add_patch(FancyBboxPatch((0.08, lo - 0.07), WIDTH - 0.16, hi - lo + 0.14,
                                    boxstyle="round,pad=0,rounding_size=0.08", facecolor=HIGHLIGHT, alpha=0.13,
                                    edgecolor=HIGHLIGHT, linewidth=1.5, zorder=0.8, gid="highlight:band"))
        if k == 0:
            ax.text(WIDTH - 0.2, hi + 0.07, "you are here", ha="right", va="center", fontsize=9.5,
                    fontweight="bold", color="#a04f00", zorder=5,
                    bbox=dict(boxstyle="round,pad=0.2", facecolor="white", edgecolor=HIGHLIGHT, linewidth=1.2))
    bottom = k0 - 0.15
    if own_figure:  # crop the figure to the drawing, keeping one data unit = one inch
        fig.set_size_inches(WIDTH, height - bottom)
    ax.set_ylim(bottom, height)
    return ax
