"""helpers/chinese/plots.py: the figures return their axes, label their measures and colourbars."""

import warnings

import torch

from helpers.attention.compute import cls_attention
from helpers.chinese.compute import cls_walk, load_intents_zh
from helpers.chinese.plots import plot_cls_attention, plot_cls_walk, position_labels
from helpers.common.style import small_text
from helpers.layerwalk.compute import random_pair_cosines
from helpers.model.trace import trace_text
from zh_support import zh_loaded, zh_model, zh_tokenizer  # noqa: F401 - fixtures


def test_cls_walk_figure(zh_tokenizer, zh_model):
    traces = [trace_text(zh_tokenizer, zh_model, s) for s in load_intents_zh("test").subset(1).texts]
    axes = plot_cls_walk(cls_walk(traces), cls_walk(traces[:1]), baseline=random_pair_cosines(traces, 100, gap=1))
    assert len(axes) == 3 and all(ax.get_title() for ax in axes)
    assert small_text(axes[0].figure) == []
    axes[0].figure.canvas.draw()
    for ax in axes:  # every legend under its panel: none covers a band or the dotted even-spread lines
        assert ax.get_legend().get_window_extent().y1 <= ax.get_window_extent().y0


def test_cls_attention_heatmap_numbers_positions_and_shows_the_characters(zh_tokenizer, zh_model):
    trace = trace_text(zh_tokenizer, zh_model, "今天天气如何")
    ax = plot_cls_attention(cls_attention(trace).mean(1), trace.tokens)
    assert [t.get_text() for t in ax.get_xticklabels()] == [
        "[CLS]", "1\n今", "2\n天", "3\n天", "4\n气", "5\n如", "6\n何", "[SEP]"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a character without a glyph warns "Glyph ... missing from font(s)"
        ax.figure.canvas.draw()
    assert ax.figure.axes[-1].get_ylabel() == "attention probability"
    assert position_labels(["[CLS]", "今", "[SEP]"]) == ["[CLS]", "1", "[SEP]"]
