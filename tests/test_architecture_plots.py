"""helpers.architecture.plots: the diagram is drawn from the config, fits the page, is readable,
and highlights parts; the "you are here" strip likewise."""

import io
import re

import matplotlib.pyplot as plt
import pytest
from transformers import BertConfig

from helpers.architecture.plots import (
    LESSON_PARTS,
    MAX_LANES,
    PARTS,
    WIDTH,
    architecture_diagram,
    lanes_shown,
    you_are_here,
)
from helpers.common.style import HIGHLIGHT, MIN_FONT_PT, PAGE_WIDTH_IN, small_text
from helpers.model.trace import trace_text

PAGE_WIDTH = PAGE_WIDTH_IN  # inches: the website's text column at 100 dpi


def texts(ax) -> str:
    return "\n".join(t.get_text() for t in ax.texts)


def in_inches(ax, text):
    """A text's drawn extent ``(x0, x1)`` in data units (the diagram's unit is one inch)."""
    box = text.get_window_extent(ax.figure.canvas.get_renderer())
    (x0, _), (x1, _) = ax.transData.inverted().transform(box.get_points())
    return x0, x1


def test_sizes_come_from_the_config(model):
    cfg = model.config
    ax = architecture_diagram(cfg)
    words = texts(ax)
    L, H, A, I = cfg.num_hidden_layers, cfg.hidden_size, cfg.num_attention_heads, cfg.intermediate_size
    assert f"L = {L} layers" in words and f"H = {H}" in words and f"A = {A} heads" in words
    assert f"d = H/A = {H // A}" in words and f"I = {I}" in words
    assert f"[n, {I}]" in words and f"\u00d7 L = {L}" in words and f"[{A}, n, n]" in words
    assert f"[{A}, n, {H // A}]" in words and f"{A} \u00d7 {H // A} = {H}" in words
    assert f"{cfg.vocab_size:,} \u00d7 {H}" in words and f"{cfg.max_position_embeddings:,} \u00d7 {H}" in words
    for name in ("trace.hidden(0)", "trace.hidden(l)", "trace.attention(l)", f"trace.hidden({L})", "post-LN",
                 "pooler_output", "attention.output.dense", "intermediate.dense", "the only place"):
        assert name in words, name
    assert not small_text(ax.figure), small_text(ax.figure)
    assert not [p for p in ax.patches if (p.get_gid() or "").startswith("highlight")]
    plt.close(ax.figure)


@pytest.mark.parametrize("n_tokens", [None, 512])
def test_fits_the_page_and_columns_do_not_collide(model, sample_trace, n_tokens):
    ax = architecture_diagram(model.config, tokens=sample_trace.tokens, highlight="attention", n_tokens=n_tokens)
    fig = ax.figure
    assert fig.get_size_inches()[0] <= PAGE_WIDTH
    fig.canvas.draw()
    for text in ax.texts:
        x0, x1 = in_inches(ax, text)
        assert -0.01 <= x0 and x1 <= fig.get_size_inches()[0] + 0.01, text.get_text()
    lanes_left = min(p.get_x() for p in ax.patches if p.get_gid() == "box:tokens")
    for text in ax.texts:  # the "what happens" column stays left of the lanes
        if text.get_gid() == "what":
            assert in_inches(ax, text)[1] < lanes_left, text.get_text()
    code = [t for t in ax.texts if t.get_gid() == "code"]
    code_left = min(in_inches(ax, t)[0] for t in code)
    for text in ax.texts:  # shapes stay left of the code names
        if text.get_gid() == "shape":
            assert in_inches(ax, text)[1] < code_left, text.get_text()
    assert all("DejaVu Sans Mono" in t.get_family() for t in code)
    assert {"attention.output.dense", "intermediate.dense", "input_ids"} <= {t.get_text() for t in code}
    plt.close(fig)


@pytest.mark.parametrize("n_tokens", [None, 512])
def test_the_layer_frame_and_its_shadows_touch_no_text(model, sample_trace, n_tokens):
    """Issue 49: the frame's left edge ran through "LayerNorm", "query, key, value" ...; the x L
    shadows touched the shapes "[17, 384]". No edge of the frame or its shadows may pass within
    0.03 inch of a text that sits beside it, and no text may straddle an edge."""
    ax = architecture_diagram(model.config, tokens=sample_trace.tokens, n_tokens=n_tokens)
    fig = ax.figure
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    inv = ax.transData.inverted()
    frames = [p for p in ax.patches if p.get_gid() == "box:layer"]
    assert len(frames) == 3, "one frame and two shadows"
    boxes = []
    for text in ax.texts:
        if not text.get_text().strip():
            continue
        (x0, y0), (x1, y1) = inv.transform(text.get_window_extent(renderer).get_points())
        boxes.append((text.get_text(), x0, x1, y0, y1))
    gap = 0.03
    front = max(frames, key=lambda p: p.get_zorder()).get_bbox()  # the frame; the shadows lie behind it
    for frame in frames:
        ext = frame.get_bbox()  # FancyBboxPatch: its box in data units (inches)
        fx0, fx1, fy0, fy1 = ext.x0, ext.x1, ext.y0, ext.y1
        # a shadow's edge is seen only where it is not under the frame
        seen = [x for x in (fx0, fx1) if frame.get_bbox() == front or not front.x0 <= x <= front.x1]
        for name, x0, x1, y0, y1 in boxes:
            if y1 < fy0 - gap or y0 > fy1 + gap:
                continue  # above or below the frame
            for edge in seen:
                assert not (x0 - gap < edge < x1 + gap), \
                    f"the frame edge at x = {edge:.2f} in touches {name!r} ({x0:.2f}..{x1:.2f})"
        for name, x0, x1, y0, y1 in boxes:  # nor the bottom edge, for texts under the frame's width
            if x1 < fx0 or x0 > fx1:
                continue
            assert not (y0 - gap < fy0 < y1 + gap), f"the frame bottom at y = {fy0:.2f} in touches {name!r}"
    plt.close(fig)


def test_lanes_are_the_sentence_tokens_with_positions_and_segments(model, tokenizer):
    pair = trace_text(tokenizer, model, "It rained.", "The bank was quiet.")
    ax = architecture_diagram(model.config, tokens=pair.tokens)
    shown = lanes_shown(pair.seq_len)
    assert len(shown) == MAX_LANES and shown[-2] is None and shown[-1] == pair.seq_len - 1
    lane_texts = [t.get_text() for t in ax.texts if t.get_zorder() == 4.5]  # text inside the chips
    first = [pair.tokens[p] for p in shown if p is not None][:3]
    assert all(any(tok == text for text in lane_texts) for tok in first), (first, lane_texts)
    words = texts(ax)
    assert "\u2026" in words  # the tokens left out
    assert f"[{pair.seq_len}, {model.config.hidden_size}]" in words  # shapes with the real length
    last = str(pair.seq_len - 1)
    assert last in lane_texts  # the last lane shows its true position
    segment_of_last = str(pair.token_type_ids[-1].item())
    assert segment_of_last == "1" and lane_texts.count("1") >= 1
    plt.close(ax.figure)


def test_attention_is_the_only_place_lanes_exchange_information(model, sample_trace):
    ax = architecture_diagram(model.config, tokens=sample_trace.tokens)
    fig = ax.figure
    fig.canvas.draw()
    lanes = sorted(p.get_x() for p in ax.patches if p.get_gid() == "box:tokens")
    width = lanes[1] - lanes[0]
    frame = [p for p in ax.patches if p.get_gid() == "box:layer"]
    crossing = []
    for patch in ax.patches:
        if type(patch).__name__ != "FancyArrowPatch":
            continue
        path = patch.get_path()  # in data units; STOP / CLOSEPOLY vertices are not points
        verts = path.vertices if path.codes is None else path.vertices[(path.codes != 0) & (path.codes != 79)]
        if verts[:, 0].max() - verts[:, 0].min() > 0.6 * width:  # reaches into another lane
            crossing.append(verts[:, 1].mean())
    attention = [p for p in ax.patches if p.get_gid() == "box:attention"]
    lo = min(p.get_y() for p in attention)
    hi = max(p.get_y() + p.get_height() for p in attention)
    real_lanes = [p for p in lanes_shown(sample_trace.seq_len) if p is not None]
    assert len(crossing) == len(real_lanes) - 1, crossing  # every other lane into one query's lane
    assert all(lo <= y <= hi for y in crossing), (crossing, lo, hi)
    assert frame
    plt.close(fig)


@pytest.mark.parametrize("layers", [3, 12, 24])
def test_any_depth_draws_one_layer_marked_x_L(layers):
    cfg = BertConfig(num_hidden_layers=layers, hidden_size=64 * layers, num_attention_heads=4, intermediate_size=128)
    ax = architecture_diagram(cfg, n_tokens=9, num_labels=5)
    words = texts(ax)
    assert f"\u00d7 L = {layers}" in words and f"trace.hidden({layers})" in words
    assert "[9, " in words and "[5]" in words and "dense H\u21925" in words
    assert ax.figure.get_size_inches()[0] <= PAGE_WIDTH
    assert not small_text(ax.figure)
    plt.close(ax.figure)


@pytest.mark.slow  # several seconds: runs in the --all tier (CI)
def test_highlight_marks_the_parts_and_says_you_are_here(model):
    for lesson, parts in LESSON_PARTS.items():
        ax = architecture_diagram(model.config, highlight=list(parts))
        bands = [p for p in ax.patches if p.get_gid() == "highlight:band"]
        framed = {p.get_gid() for p in ax.patches if (p.get_gid() or "").startswith("box:") and p.get_linewidth() > 2}
        assert bool(bands) == bool(parts), lesson
        assert framed == {f"box:{p}" for p in parts}, lesson
        assert ("you are here" in texts(ax)) == bool(parts)
        plt.close(ax.figure)
    ax = architecture_diagram(model.config, highlight="pooler")
    pooler = next(p for p in ax.patches if p.get_gid() == "box:pooler")
    assert pooler.get_edgecolor()[:3] == plt.matplotlib.colors.to_rgba(HIGHLIGHT)[:3]
    plt.close(ax.figure)


def svg_font_sizes(fig) -> list[float]:
    buffer = io.StringIO()
    plt.rcParams["svg.fonttype"] = "none"  # text stays text, with its size
    try:
        fig.savefig(buffer, format="svg")
    finally:
        plt.rcParams["svg.fonttype"] = "path"
    svg = buffer.getvalue()
    assert svg.lstrip().startswith("<?xml") and "</svg>" in svg
    return [float(v) for v in re.findall(r"font-size:\s*([\d.]+)px", svg)] + \
        [float(v) for v in re.findall(r"font:[^;\"]*?([\d.]+)px", svg)]


def test_saves_as_svg_with_text_of_at_least_8_pt(model, sample_trace):
    ax = architecture_diagram(model.config, tokens=sample_trace.tokens, highlight="attention")
    sizes = svg_font_sizes(ax.figure)
    assert sizes, "no text in the SVG"
    # matplotlib's SVG is in points (72 per inch), so a font size in px there is in points
    assert min(sizes) >= MIN_FONT_PT - 1e-6, sorted(sizes)[:5]
    buffer = io.BytesIO()
    ax.figure.savefig(buffer, format="svg")  # the default (glyphs as paths) works too
    assert b"</svg>" in buffer.getvalue()
    plt.close(ax.figure)


def test_bad_arguments_are_clear(model):
    with pytest.raises(ValueError, match="valid parts"):
        architecture_diagram(model.config, highlight="decoder")
    with pytest.raises(ValueError, match="BERT config"):
        architecture_diagram(object())
    with pytest.raises(ValueError, match="n_tokens"):
        architecture_diagram(model.config, n_tokens=0)
    with pytest.raises(ValueError, match="tokens must be"):
        architecture_diagram(model.config, tokens="the bank")
    with pytest.raises(ValueError, match="max_lanes"):
        architecture_diagram(model.config, max_lanes=2)
    with pytest.raises(ValueError, match="valid parts"):
        you_are_here(model.config, "decoder")
    assert set(PARTS) >= {p for parts in LESSON_PARTS.values() for p in parts}


def test_draws_into_a_given_axes(model):
    fig, ax = plt.subplots(figsize=(WIDTH, 8))
    assert architecture_diagram(model.config, ax=ax) is ax
    assert tuple(fig.get_size_inches()) == (WIDTH, 8)  # a caller's figure is not resized
    plt.close(fig)


@pytest.mark.parametrize("lesson", sorted(LESSON_PARTS))
def test_you_are_here_strip_fits_and_marks_the_lesson(model, lesson):
    parts = LESSON_PARTS[lesson]
    ax = you_are_here(model.config, parts)
    fig = ax.figure
    w, h = fig.get_size_inches()
    assert w <= PAGE_WIDTH and h <= 1.5
    assert not small_text(fig), small_text(fig)
    fig.canvas.draw()
    for text in ax.texts:
        x0, x1 = in_inches(ax, text)
        assert -0.01 <= x0 and x1 <= w + 0.01, text.get_text()
    boxes = [p for p in ax.patches if (p.get_gid() or "").startswith("box:")]
    assert all(0 <= p.get_x() and p.get_x() + p.get_width() <= w for p in boxes)
    framed = {p.get_gid() for p in boxes if p.get_linewidth() > 2}
    assert framed == {f"box:{p}" for p in parts}
    assert (texts(ax).count("you are here") > 0) == bool(parts)
    assert f"\u00d7 L = {model.config.num_hidden_layers}" in texts(ax)
    plt.close(fig)
