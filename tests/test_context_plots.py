"""helpers.context.plots: what each function drew."""

import pytest
import torch

from helpers.context.plots import plot_layer_curves, plot_neighbours


def test_layer_curves_and_neighbours(sample_trace):
    ax = plot_layer_curves({"a": [0.1, 0.2, 0.3], "b": [0.3, 0.2, 0.1]}, chance=0.5)
    assert len(ax.lines) == 3
    with pytest.raises(ValueError):
        plot_layer_curves({})
    cos = torch.nn.functional.cosine_similarity(sample_trace.hidden(1)[2:3], sample_trace.hidden(1), dim=-1)
    ax = plot_neighbours(cos, sample_trace.tokens, 2)
    assert len(ax.patches) == sample_trace.seq_len
    assert ax.patches[2].get_facecolor() != ax.patches[1].get_facecolor()
