"""helpers.architecture.plots: the diagram is drawn from the config, readable, and highlights parts."""

import matplotlib.pyplot as plt
import pytest
from transformers import BertConfig

from helpers.architecture.plots import LESSON_PARTS, PARTS, architecture_diagram
from helpers.common.style import HIGHLIGHT, small_text


def texts(ax) -> str:
    return "\n".join(t.get_text() for t in ax.texts)


def test_sizes_come_from_the_config(model):
    cfg = model.config
    ax = architecture_diagram(cfg)
    words = texts(ax)
    assert f"L = {cfg.num_hidden_layers} layers" in words and f"H = {cfg.hidden_size}" in words
    assert f"[n, {cfg.intermediate_size}]" in words and f"\u00d7 L = {cfg.num_hidden_layers}" in words
    assert f"{cfg.vocab_size:,} \u00d7 {cfg.hidden_size}" in words
    for name in ("trace.hidden(0)", "trace.hidden(l)", "trace.attention(l)", "hidden_states[0]", "post-LN",
                 "pooler_output", "residual stream"):
        assert name in words, name
    assert not small_text(ax.figure), small_text(ax.figure)
    assert not [p for p in ax.patches if (p.get_gid() or "").startswith("highlight")]


@pytest.mark.parametrize("layers", [3, 12, 24])
def test_any_depth_draws_one_layer_marked_x_L(layers):
    cfg = BertConfig(num_hidden_layers=layers, hidden_size=64 * layers, num_attention_heads=4, intermediate_size=128)
    ax = architecture_diagram(cfg, n_tokens=9, num_labels=5)
    words = texts(ax)
    assert f"\u00d7 L = {layers}" in words and f"hidden_states[{layers}]" in words
    assert "[9, " in words and "logits: [5]" in words
    boxes = [p for p in ax.patches if p.get_gid() == "box:attention"]
    assert len(boxes) == 2  # one layer expanded, whatever the depth
    assert not small_text(ax.figure)


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


def test_bad_arguments_are_clear(model):
    with pytest.raises(ValueError, match="valid parts"):
        architecture_diagram(model.config, highlight="decoder")
    with pytest.raises(ValueError, match="BERT config"):
        architecture_diagram(object())
    with pytest.raises(ValueError, match="n_tokens"):
        architecture_diagram(model.config, n_tokens=0)
    assert set(PARTS) >= {p for parts in LESSON_PARTS.values() for p in parts}


def test_draws_into_a_given_axes(model):
    fig, ax = plt.subplots(figsize=(8.6, 8))
    assert architecture_diagram(model.config, ax=ax) is ax
    assert tuple(fig.get_size_inches()) == (8.6, 8)  # a caller's figure is not resized
