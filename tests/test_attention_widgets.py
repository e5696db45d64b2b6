"""helpers.attention.widgets: updates change artists and image bytes, never run the model."""

import numpy as np
import pytest

from helpers.attention.widgets import AttentionHeadExplorer, HeadGridExplorer, HeadLinesExplorer


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
    assert len(ex.images) == sample_trace.num_heads
    first, png = ex.images[0].get_array().copy(), ex.image.value
    ex.update(layer=sample_trace.num_layers)
    assert np.allclose(ex.images[0].get_array(), sample_trace.attention(sample_trace.num_layers, 0).numpy())
    assert not np.allclose(first, ex.images[0].get_array())
    assert ex.image.value != png


def test_head_lines(sample_trace, no_model_calls):
    ex = HeadLinesExplorer(sample_trace, layer=1, head=0)
    alpha, png = ex.lines.get_colors()[:, 3].copy(), ex.image.value
    ex.controls["head"].value = 1
    assert np.allclose(ex.lines.get_colors()[:, 3], sample_trace.attention(1, 1).reshape(-1).numpy(), atol=1e-6)
    assert not np.allclose(alpha, ex.lines.get_colors()[:, 3])
    assert ex.image.value != png and "head 1" in ex.title.get_text()
