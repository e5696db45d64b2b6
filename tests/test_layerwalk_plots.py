"""helpers.layerwalk.plots: each plot returns its axes with the expected content."""

import numpy as np
import pytest
import torch

from helpers.common.style import layer_labels
from helpers.layerwalk.compute import consecutive_cosines, interlayer_similarity, layer_norms, pca_trajectory
from helpers.layerwalk.plots import plot_consecutive, plot_layer_norms, plot_similarity_heatmap, plot_trajectory


def test_layer_norms_bars(sample_trace):
    norms = layer_norms(sample_trace, 1)
    ax = plot_layer_norms(norms)
    assert len(ax.patches) == sample_trace.num_layers + 1
    assert [t.get_text() for t in ax.get_xticklabels()][0] == "emb"
    assert ax.patches[2].get_height() == pytest.approx(float(norms[2]))


def test_consecutive_lines(sample_trace):
    cos = consecutive_cosines(sample_trace)
    ax = plot_consecutive(cos, cos - 0.1)
    assert len(ax.lines) == 2
    assert np.allclose(ax.lines[0].get_ydata(), cos.numpy())


def test_similarity_heatmap(sample_trace):
    sim = interlayer_similarity(sample_trace)
    ax = plot_similarity_heatmap(sim)
    n = sample_trace.num_layers + 1
    assert ax.collections[0].get_array().size == n * n
    assert [t.get_text() for t in ax.get_xticklabels()] == layer_labels(n)
    with pytest.raises(ValueError, match="square"):
        plot_similarity_heatmap(torch.ones(2, 3))


def test_trajectory(sample_trace):
    coords = pca_trajectory(sample_trace, [0, 2])
    ax = plot_trajectory(coords, ["[CLS]", "bank"])
    assert len(ax.lines) == 2
    assert len(ax.texts) == 2 * (sample_trace.num_layers + 1)
    with pytest.raises(ValueError, match="names"):
        plot_trajectory(coords, ["only one"])
