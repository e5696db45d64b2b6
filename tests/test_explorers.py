"""helpers.explorers: updates change artists and image, and never run the model."""

import numpy as np
import pytest

from helpers.explorers import AttentionHeadExplorer


@pytest.fixture
def no_forward(model, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the model ran during an explorer update")

    monkeypatch.setattr(model, "forward", refuse)


def test_update_changes_artists_without_model(sample_trace, no_forward):
    explorer = AttentionHeadExplorer(sample_trace)
    before_png = explorer.image.value
    before = np.array(explorer.im.get_array())
    last_l, last_h = sample_trace.num_layers, sample_trace.num_heads - 1
    explorer.update(layer=last_l, head=last_h)
    assert np.allclose(explorer.im.get_array(), sample_trace.attention(last_l, last_h).numpy())
    assert not np.allclose(explorer.im.get_array(), before)
    assert explorer.image.value != before_png
    assert f"layer {last_l}" in explorer.ax.get_title()


def test_slider_drives_update(sample_trace, no_forward):
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


def test_for_benchmark(tokenizer, model):
    explorer, values = AttentionHeadExplorer.for_benchmark(tokenizer, model)
    assert values and all(set(v) == {"layer", "head"} for v in values)
    explorer.update(**values[-1])
    assert isinstance(explorer.redraw_naive(**values[0]), bytes)
