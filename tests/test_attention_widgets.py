"""helpers.attention.widgets: updates change artists and image bytes, never run the model."""

import io
import warnings

import numpy as np
import pytest
import torch
from PIL import Image

from helpers.attention.widgets import HEAD_WINDOW, MIN_LINE_WEIGHT, ROW_PX, AttentionHeadExplorer, HeadGridExplorer, HeadLinesExplorer, pooled_maps
from helpers.common.style import small_text
from helpers.model.trace import trace_text


@pytest.fixture(scope="module")
def long_trace(tokenizer, model):
    """A trace at the model's maximum input length (a longer text, truncated)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return trace_text(tokenizer, model, " ".join(["The bank by the river was unbelievably quiet this morning."] * 60))


def test_long_input_shows_a_window_with_a_slider(long_trace, no_model_calls):
    explorer = AttentionHeadExplorer(long_trace)
    k = HEAD_WINDOW
    assert long_trace.seq_len == long_trace.config.max_position_embeddings
    assert explorer.window == k and explorer.controls["start"].max == long_trace.seq_len - k
    before_labels = explorer._x_image.get_array().copy()
    explorer.update(layer=2, head=3, start=100)
    assert np.allclose(explorer.im.get_array(), long_trace.attention(2, 3)[100:100 + k, 100:100 + k].numpy())
    assert "tokens 100" in explorer.ax.get_title()
    assert not np.array_equal(explorer._x_image.get_array(), before_labels)  # the labels moved with the window
    with pytest.raises(ValueError, match="valid starts"):
        explorer.update(start=long_trace.seq_len)
    assert explorer.build_seconds is not None and explorer.build_seconds > 0


def test_a_window_too_wide_for_the_page_is_refused_with_the_size_that_fits(long_trace):
    with pytest.raises(ValueError, match="does not fit the page.*window="):
        AttentionHeadExplorer(long_trace, window=120)


def test_short_input_has_no_window_slider(sample_trace):
    explorer = AttentionHeadExplorer(sample_trace)
    assert "start" not in explorer.controls and explorer.window == sample_trace.seq_len


def test_static_fallback_is_the_current_picture(sample_trace):
    explorer = AttentionHeadExplorer(sample_trace)
    explorer.update(layer=2, head=1)
    bundle, meta = explorer._repr_mimebundle_()
    import base64

    png = base64.b64decode(bundle["image/png"])
    assert png == explorer.image.value
    assert Image.open(io.BytesIO(png)).size == explorer.fig.canvas.get_width_height()
    assert "layer=2" in bundle["text/plain"]


def test_update_changes_artists_without_model(sample_trace, no_model_calls):
    explorer = AttentionHeadExplorer(sample_trace)
    before_png = explorer.image.value
    before = np.array(explorer.im.get_array())
    last_l, last_h = sample_trace.num_layers, sample_trace.num_heads - 1
    explorer.update(layer=last_l, head=last_h)
    assert np.allclose(explorer.im.get_array(), sample_trace.attention(last_l, last_h).numpy())
    assert not np.allclose(explorer.im.get_array(), before)
    assert explorer.image.value != before_png
    assert f"layer {last_l}" in explorer.ax.get_title()


def test_every_head_on_one_scale_and_the_title_gives_the_peak(sample_trace, long_trace, no_model_calls):
    explorer = AttentionHeadExplorer(sample_trace)
    for layer, head in [(1, 0), (sample_trace.num_layers, sample_trace.num_heads - 1)]:
        explorer.update(layer=layer, head=head)
        assert explorer.im.get_clim() == (0.0, 1.0)  # the same scale as lesson 02's heatmap
        assert explorer.ax.get_title().endswith(f"max {sample_trace.attention(layer, head).max():.2f}")
    windowed = AttentionHeadExplorer(long_trace)
    windowed.update(layer=2, head=3, start=100)
    k = windowed.window
    peak = long_trace.attention(2, 3)[100:100 + k, 100:100 + k].max()  # the largest value shown, not the whole head's
    assert windowed.ax.get_title().endswith(f"max {peak:.2f}")


def test_slider_drives_update(sample_trace, no_model_calls):
    explorer = AttentionHeadExplorer(sample_trace)
    explorer.controls["head"].value = 1
    assert np.allclose(explorer.im.get_array(), sample_trace.attention(1, 1).numpy())
    assert explorer.controls["layer"].max == sample_trace.num_layers
    assert explorer.controls["head"].max == sample_trace.num_heads - 1


def test_bad_values(sample_trace):
    with pytest.raises(ValueError, match="head"):
        AttentionHeadExplorer(sample_trace, head=sample_trace.num_heads)
    explorer = AttentionHeadExplorer(sample_trace)
    with pytest.raises(ValueError, match="layer"):
        explorer.update(layer=0)


def test_head_grid(sample_trace, no_model_calls):
    ex = HeadGridExplorer(sample_trace, layer=1)
    assert len(ex.images) == sample_trace.num_heads and ex.block == 1
    first, png = ex.images[0].get_array().copy(), ex.image.value
    ex.update(layer=sample_trace.num_layers)
    expected = ex.cmap(sample_trace.attention(sample_trace.num_layers, 0).numpy(), bytes=True)
    assert np.array_equal(ex.images[0].get_array(), expected)
    assert not np.array_equal(first, ex.images[0].get_array())
    assert ex.image.value != png
    assert ex.fig.axes[-1].get_ylabel() == "attention probability"
    assert not small_text(ex.fig)


def test_pooled_maps_keep_a_thin_diagonal():
    n = 300
    att = torch.eye(n).roll(-1, dims=1)[None]  # a next-token head: one weight of 1 per row
    pooled, block = pooled_maps(att, max_size=100)
    assert block == 3 and pooled.shape == (1, 100, 100)
    assert np.allclose(np.diagonal(pooled[0]), 1.0)  # block maximum: the diagonal stays bright


def test_head_grid_on_a_long_input(tokenizer, model):
    with pytest.warns(UserWarning, match="truncated"):
        ex, values = HeadGridExplorer.for_benchmark(tokenizer, model, text=" ".join(["The river bank."] * 200))
    assert ex.block > 1 and "blocks" in " ".join(t.get_text() for t in ex.fig.texts)
    for v in values:
        ex.update(**v)


def test_head_lines(sample_trace, no_model_calls):
    ex = HeadLinesExplorer(sample_trace, layer=1, head=0)
    assert "start" not in ex.controls  # a short input shows every token
    alpha, png = ex.lines.get_colors()[:, 3].copy(), ex.image.value
    ex.controls["head"].value = 1
    assert np.allclose(ex.lines.get_colors()[:, 3], sample_trace.attention(1, 1).reshape(-1).numpy(), atol=1e-6)
    assert not np.allclose(alpha, ex.lines.get_colors()[:, 3])
    assert ex.image.value != png and "head 1" in ex.title.get_text()
    assert not small_text(ex.fig)


def test_head_lines_window_on_a_long_input(tokenizer, model):
    text = " ".join(f"word{i} is here." for i in range(120))
    with pytest.warns(UserWarning, match="truncated"):
        trace = trace_text(tokenizer, model, text)
    ex = HeadLinesExplorer(trace, layer=1, head=2, window=20)
    assert ex.controls["start"].max == trace.seq_len - 20
    ex.update(start=100)
    weights = trace.attention(1, 2)[100:120, 100:120].reshape(-1).numpy()
    shown = weights[weights >= MIN_LINE_WEIGHT]
    assert np.allclose(np.sort(ex.lines.get_colors()[:, 3]), np.sort(shown), atol=1e-6)
    strip = ex.strip_images[0].get_array()
    assert strip.shape[0] == 20 * ROW_PX and strip[..., 3].max() > 0  # labels drawn for this window
    assert "tokens 100–119" in ex.title.get_text()
    assert "window of 20" in " ".join(t.get_text() for t in ex.fig.texts)


@pytest.fixture(scope="module")
def word_trace(tokenizer, model):
    """A sentence with a word split into WordPieces."""
    return trace_text(tokenizer, model, "The river bank was unbelievably quiet this morning.")


def test_explorers_by_word_show_words_whose_rows_sum_to_one(word_trace, no_model_calls):
    from helpers.attention.compute import attention_by_word, word_groups

    trace = word_trace
    groups = word_groups(trace)
    assert len(groups) < trace.seq_len  # a word was split, so there are fewer words than tokens
    head = AttentionHeadExplorer(trace, layer=2, head=1, by_word=True)
    shown = head.im.get_array()
    assert shown.shape == (len(groups), len(groups)) and head.labels == list(groups.labels)
    assert np.allclose(shown.sum(1), 1.0, atol=1e-5)
    assert np.allclose(shown, attention_by_word(trace.attention(2, 1), groups).numpy(), atol=1e-6)
    head.update(layer=trace.num_layers, head=0)
    assert np.allclose(head.im.get_array().sum(1), 1.0, atol=1e-5)
    assert "by word" in head.fig.texts[-1].get_text()
    grid = HeadGridExplorer(trace, by_word=True)
    assert grid.images[0].get_array().shape[:2] == (len(groups), len(groups))
    assert f"{len(groups)} words" in grid.fig.texts[0].get_text()
    lines = HeadLinesExplorer(trace, by_word=True)
    lines.update(layer=2, head=1)
    assert lines.labels == list(groups.labels) and "by word" in lines.title.get_text()
    with pytest.raises(ValueError, match="by_word=True"):
        AttentionHeadExplorer(trace, word_starts={0})
