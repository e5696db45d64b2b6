"""Explorers of lessons 04-06: updates change artists and image bytes, never run the model."""

import numpy as np
import pytest

from helpers.analysis_explorers import HeadGridExplorer, HeadLinesExplorer, LayerWalkExplorer, NeighbourExplorer


@pytest.fixture
def no_model_calls(model, monkeypatch):
    def boom(*args, **kwargs):
        raise AssertionError("an explorer update ran the model")

    monkeypatch.setattr(model, "forward", boom)
    yield


def test_layer_walk(sample_trace, no_model_calls):
    ex = LayerWalkExplorer(sample_trace, token=0, layer=0)
    before_png, before_h = ex.image.value, [b.get_height() for b in ex.norm_bars]
    before_dims = [b.get_height() for b in ex.dim_bars]
    ex.controls["token"].value = 2  # through the widget, as a learner would
    assert ex.values["token"] == 2
    assert [b.get_height() for b in ex.norm_bars] != before_h
    ex.update(layer=sample_trace.num_layers)
    assert [b.get_height() for b in ex.dim_bars] != before_dims
    assert ex.image.value != before_png
    assert "bank" in ex.suptitle.get_text()
    assert ex.sim_marker.get_ydata()[0] == pytest.approx(1.0, abs=1e-5)
    with pytest.raises(ValueError, match="out of range"):
        LayerWalkExplorer(sample_trace, layer=sample_trace.num_layers + 1)


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


def test_neighbours(sample_trace, no_model_calls):
    ex = NeighbourExplorer(sample_trace, token=2, layer=0)
    heights, png = [b.get_height() for b in ex.bars], ex.image.value
    assert heights[2] == pytest.approx(1.0, abs=1e-5)
    ex.update(layer=sample_trace.num_layers)
    assert [b.get_height() for b in ex.bars] != heights
    assert ex.image.value != png and "nearest" in ex.title.get_text()


@pytest.mark.parametrize("cls", [LayerWalkExplorer, HeadGridExplorer, HeadLinesExplorer, NeighbourExplorer])
def test_for_benchmark(cls, tokenizer, model):
    ex, values = cls.for_benchmark(tokenizer, model)
    assert isinstance(ex, cls) and len(values) >= 2
    for v in values:
        ex.update(**v)
    assert isinstance(ex.redraw_naive(**values[0]), bytes)
