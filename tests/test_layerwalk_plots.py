"""helpers.layerwalk.plots: each plot returns its axes with the expected content, text >= 8 pt."""

import numpy as np
import pytest
import torch

from helpers.common.stats import bootstrap_ci
from helpers.common.style import PAGE_WIDTH_IN, layer_labels, small_text
from helpers.layerwalk.compute import (
    consecutive_cosines, consecutive_cosines_per_token, energy_by_dimension, interlayer_similarity,
    interlayer_similarity_per_token, layer_norms, layer_norms_per_token, norm_parts, pca_trajectory,
    pca_variance_ratio, random_pair_cosines, top_dimensions,
)
from helpers.layerwalk.plots import (
    plot_baselines, plot_consecutive, plot_layer_norms, plot_norm_parts, plot_similarity_heatmap,
    plot_similarity_spread, plot_top_dimension_share, plot_trajectory, transition_labels,
)


def test_layer_norms_bars(sample_trace, data_traces):
    norms = layer_norms(sample_trace, 1)
    ax = plot_layer_norms(norms)
    assert len(ax.patches) == sample_trace.num_layers + 1
    assert [t.get_text() for t in ax.get_xticklabels()][0] == "emb"
    assert ax.patches[2].get_height() == pytest.approx(float(norms[2]))
    ax = plot_layer_norms(norms, per_token=layer_norms_per_token(data_traces))
    median = np.median(layer_norms_per_token(data_traces).numpy(), axis=0)
    assert np.allclose(ax.lines[0].get_ydata(), median)
    assert not small_text(ax.figure)


def test_consecutive_lines(sample_trace, data_traces):
    cos = consecutive_cosines(sample_trace)
    ax = plot_consecutive(cos, cos - 0.1)
    assert len(ax.lines) == 2
    assert np.allclose(ax.lines[0].get_ydata(), cos.numpy())
    assert [t.get_text() for t in ax.get_xticklabels()] == transition_labels(sample_trace.num_layers)
    per_token = consecutive_cosines_per_token(data_traces)
    ax = plot_consecutive(cos, cos - 0.1, per_token=per_token, per_token_adjusted=per_token - 0.1)
    assert len(ax.collections) == 2  # two interquartile bands
    assert not small_text(ax.figure)


def test_similarity_heatmap_and_spread(sample_trace, data_traces):
    sim = interlayer_similarity(sample_trace)
    ax = plot_similarity_heatmap(sim)
    n = sample_trace.num_layers + 1
    assert ax.images[0].get_array().shape == (n, n)
    assert [t.get_text() for t in ax.get_xticklabels()] == layer_labels(n)
    assert ax.figure.axes[-1].get_ylabel() == "cosine"  # the colourbar says what it measures
    with pytest.raises(ValueError, match="square"):
        plot_similarity_heatmap(torch.ones(2, 3))
    axes = plot_similarity_spread(interlayer_similarity(sample_trace, 2), interlayer_similarity_per_token(data_traces),
                                  "'bank'")
    assert axes[0].images[0].get_clim() == axes[1].images[0].get_clim()  # one colour scale for the compared panels
    assert not small_text(axes[0].figure)


def test_baselines_and_norm_figures(data_traces, model):
    within = bootstrap_ci(random_pair_cosines(data_traces, n_pairs=100, gap=0))
    cross = bootstrap_ci(random_pair_cosines(data_traces, n_pairs=100, gap=1))
    same, apart = plot_baselines(within, cross)
    assert len(same.containers) == 1 and len(apart.containers) == 1  # layers and transitions: separate axes
    assert "95 %" in same.figure._suptitle.get_text()
    assert [t.get_text() for t in apart.get_xticklabels()] == transition_labels(data_traces[0].num_layers)
    assert same.get_ylim() == apart.get_ylim()  # one scale
    assert not small_text(same.figure)
    top, bottom = plot_norm_parts(norm_parts(data_traces, model), token_norms=layer_norms(data_traces[0], 1))
    assert "LayerNorm" in bottom.get_xlabel() and "γ⊙ẑ" in bottom.get_title(loc="left")
    assert top.get_legend() is None and bottom.get_legend() is None  # lines named at their ends
    names = {t.get_text() for t in top.texts + bottom.texts}
    assert {"‖γ⊙ẑ‖ (median)", "‖γ‖", "‖β‖"} <= names and len(top.lines) <= 4 and len(bottom.lines) <= 4
    assert not small_text(top.figure)
    dims, share = top_dimensions(energy_by_dimension(data_traces), k=3)
    ax = plot_top_dimension_share(share, dims, data_traces[0].hidden_size)
    assert len(ax.patches) == data_traces[0].num_layers + 1
    assert ax.texts[0].get_text().split("\n")[1:] == [f"#{int(i)}" for i in dims[0]]  # one id per line
    assert ax.texts[0].get_text().split("\n")[0] == f"{100 * float(share[0]):.0f}%"
    assert ax.patches[0].get_height() == pytest.approx(100 * float(share[0]))  # percent, not a fraction
    assert not small_text(ax.figure)


def test_trajectory(sample_trace):
    coords = pca_trajectory(sample_trace, [0, 2])
    axes = plot_trajectory(coords, ["[CLS]", "bank"], explained=pca_variance_ratio(sample_trace))
    assert len(axes) == 2
    n = sample_trace.num_layers + 1
    for ax in axes:
        assert ax.get_aspect() == 1.0  # equal scales
        assert "% of the variance" in ax.get_xlabel() and "% of the variance" in ax.get_ylabel()
        labels = [t for t in ax.texts if t.get_text()]
        arrows = [t for t in ax.texts if not t.get_text()]
        assert len(labels) == n and len(arrows) == n - 1
        renderer = ax.figure.canvas.get_renderer()
        boxes = [t.get_window_extent(renderer) for t in labels]
        overlaps = sum(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:])
        assert overlaps == 0, "layer labels collide"
    assert not small_text(axes[0].figure)
    single = plot_trajectory(coords, ["[CLS]", "bank"], ax=axes[0].figure.add_subplot(3, 1, 1))
    assert len(single.lines) == 2
    with pytest.raises(ValueError, match="names"):
        plot_trajectory(coords, ["only one"])


def test_figures_fit_the_notebook_width(sample_trace, data_traces):
    """The site shows figures at most PAGE_WIDTH_IN wide; a wider one would shrink its 8 pt text."""
    axes = plot_similarity_spread(interlayer_similarity(sample_trace, 2), interlayer_similarity_per_token(data_traces),
                                  "'bank'")
    assert axes[0].figure.get_figwidth() <= PAGE_WIDTH_IN
    lo, hi = axes[0].images[0].get_clim()
    assert (lo, hi) in {(0, 1), (-1, 1)}  # the full cosine scale (sequential when all positive): no truncated range
    assert axes[0].images[0].get_clim() == axes[1].images[0].get_clim()  # token and median: one scale
    assert axes[2].images[0].get_clim()[0] == 0  # the spread is a width: its own scale from 0
    fig = axes[0].figure
    fig.canvas.draw()
    bars = [a for a in fig.axes if a.get_label() == "<colorbar>"]
    labels = sorted(b.get_ylabel() for b in bars)
    assert len(bars) == 2 and "cosine between layers" in labels and any("spread" in b for b in labels)
    assert all(len(t.get_text()) <= 4 for t in axes[0].texts)  # ".87", never "0.87" run together
    axes = plot_trajectory(pca_trajectory(sample_trace, [0, 2]), ["[CLS]", "bank"])
    assert axes[0].figure.get_figwidth() <= PAGE_WIDTH_IN


def test_trajectory_panels_share_one_scale(sample_trace):
    axes = plot_trajectory(pca_trajectory(sample_trace, [0, 2]), ["[CLS]", "bank"])
    spans = [(ax.get_xlim()[1] - ax.get_xlim()[0], ax.get_ylim()[1] - ax.get_ylim()[0]) for ax in axes]
    assert spans[0] == pytest.approx(spans[1])  # the same data span in every panel: path lengths compare


def test_norm_figures_keep_bands_and_legend_readable(sample_trace, data_traces, model):
    ax = plot_layer_norms(layer_norms(sample_trace, 2), per_token=layer_norms_per_token(data_traces))
    ax.figure.canvas.draw()
    assert ax.get_legend().get_window_extent().y1 <= ax.get_window_extent().y0  # under the bars, not on them
    top, bottom = plot_norm_parts(norm_parts(data_traces, model))
    assert len(top.collections) == 1 and len(bottom.collections) == 1  # one band per panel: none overlaps


def test_adjusted_matrix_masks_the_diagonal(data_traces):
    from helpers.layerwalk.plots import plot_adjusted_matrix

    L = data_traces[0].num_layers
    ctrl = torch.full((L + 1, L + 1), 0.2)
    adjusted = torch.full((L + 1, L + 1), 0.5)
    axes = plot_adjusted_matrix(ctrl, adjusted)
    shown = axes[1].images[0].get_array()
    assert np.ma.is_masked(shown[0, 0]) or np.isnan(shown[0, 0])
    assert float(shown[0, L]) == pytest.approx(0.5) and float(axes[0].images[0].get_array()[0, L]) == pytest.approx(0.2)
    assert "nan" not in [t.get_text() for t in axes[1].texts]
    assert not small_text(axes[0].figure) and axes[0].figure.get_size_inches()[0] <= PAGE_WIDTH_IN
    bars = [ax.get_ylabel() for ax in axes[0].figure.axes if ax.get_label() == "<colorbar>"]
    assert sorted(bars) == ["cosine", "median minus control"], "each panel's colourbar names its measure"
    low, high = axes[1].images[0].get_clim()
    assert low == -high  # the difference is diverging, symmetric around 0
