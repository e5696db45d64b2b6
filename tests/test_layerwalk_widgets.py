"""helpers.layerwalk.widgets: updates change artists and image bytes, never run the model."""

import pytest
import torch

from helpers.common.style import small_text
from helpers.layerwalk.compute import interlayer_similarity
from helpers.layerwalk.widgets import LayerWalkExplorer
from helpers.model.trace import max_input_tokens


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
    assert torch.allclose(torch.tensor(ex.sim_line.get_ydata()),
                          interlayer_similarity(sample_trace, 2)[sample_trace.num_layers], atol=1e-5)
    assert not small_text(ex.fig)
    with pytest.raises(ValueError, match="out of range"):
        LayerWalkExplorer(sample_trace, layer=sample_trace.num_layers + 1)


def test_for_benchmark_builds_on_a_given_text(tokenizer, model):
    long_text = " ".join(["The river bank was quiet."] * 150)
    with pytest.warns(UserWarning, match="truncated"):
        ex, values = LayerWalkExplorer.for_benchmark(tokenizer, model, text=long_text)
    assert ex.trace.seq_len == max_input_tokens(tokenizer, model)
    for v in values:
        ex.update(**v)


def test_figure_fits_the_notebook_width(sample_trace):
    assert LayerWalkExplorer(sample_trace, token=1, layer=1).fig.get_figwidth() <= 9
