"""helpers.interventions.plots: what each function drew, in the course style (no text under 8 pt,
labelled colourbars)."""

import matplotlib.pyplot as plt
import numpy as np
import pytest

from helpers.common.stats import Interval
from helpers.common.style import small_text
from helpers.interventions.plots import (plot_head_maps, plot_importance_scatter, plot_layer_head_map,
                                         plot_patch_curves, plot_pruning_curve, plot_skip_effects)


def colourbar_labels(fig):
    return [ax.get_ylabel() for ax in fig.axes if ax.get_label() == "<colorbar>"]


def test_layer_head_maps():
    values = np.arange(12.0).reshape(3, 4) - 4
    ax, image = plot_layer_head_map(values, title="accuracy drop", cbar_label="points", diverging=True)
    assert image.get_array().shape == (3, 4)
    assert image.norm.vcenter == 0.0 and image.norm.vmin == -7 and image.norm.vmax == 7
    assert [t.get_text() for t in ax.get_yticklabels()] == ["1", "2", "3"]
    assert colourbar_labels(ax.figure) == ["points"]
    fig = plot_head_maps([dict(values=values, title="a", cbar_label="x"),
                          dict(values=-values, title="b", cbar_label="y"),
                          dict(values=values, title="c", cbar_label="z")], title="maps")
    assert sorted(colourbar_labels(fig)) == ["x", "y", "z"]
    assert not small_text(fig)
    assert fig.get_figwidth() <= 9.0, "front ends shrink wider figures below 8 pt"
    _, shares = plot_layer_head_map(values / 20 + 0.3, cbar_label="share", vmin=0, vmax=1)
    assert (shares.norm.vmin, shares.norm.vmax) == (0, 1), "shares side by side use one 0..1 scale"
    with pytest.raises(ValueError, match="colourbar needs a label"):
        plot_layer_head_map(values)
    with pytest.raises(ValueError, match="2-D"):
        plot_layer_head_map(np.ones(4), cbar_label="x")


def test_importance_scatter_labels_the_top_heads():
    rng = np.random.default_rng(0)
    x, y = rng.random(24), rng.random(24)
    ax = plot_importance_scatter(x, y, labels=[f"{i // 4 + 1}.{i % 4}" for i in range(24)], xlabel="g", ylabel="l")
    top = {f"{i // 4 + 1}.{i % 4}" for i in np.argsort(-y)[:5]}
    assert {t.get_text() for t in ax.texts} == top
    assert not small_text(ax.figure)
    with pytest.raises(ValueError, match="one value per head"):
        plot_importance_scatter(x, y[:3])


def test_skip_effects_draw_one_bar_per_layer_and_the_baseline_band():
    base = Interval(0.9, 0.85, 0.95)
    per_layer = [Interval(0.8, 0.7, 0.9), Interval(0.5, 0.4, 0.6), Interval(0.88, 0.8, 0.93)]
    fig = plot_skip_effects({"accuracy": (base, per_layer, "test accuracy", 0.1),
                             "senses": (base, per_layer, "accuracy", None)})
    assert len(fig.axes) == 2
    ax = fig.axes[0]
    band = [p for p in ax.patches if p.get_label().startswith("nothing skipped")][0]
    assert np.isclose(band.get_y(), 0.85) and np.isclose(band.get_height(), 0.1)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1", "2", "3"]
    assert not small_text(fig)
    assert fig.get_figwidth() <= 9.0
    assert ax.get_legend() is None and len(fig.legends) == 1, "one legend below the panels, over no data"
    legend_box = fig.legends[0].get_window_extent(fig.canvas.get_renderer())
    assert all(legend_box.y1 <= a.get_window_extent().y0 for a in fig.axes)
    with pytest.raises(TypeError, match="Interval"):
        plot_skip_effects({"a": (0.9, [0.8], "acc", None)})


def test_patch_curves():
    pooled = [Interval(v, max(0, v - 0.1), min(1, v + 0.1)) for v in (0.0, 0.4, 0.9)]
    ax = plot_patch_curves({"bank": [0.0, 0.5, 1.0], "bat": [0.1, 0.3, 0.8]}, pooled, chance=0.5, title="patch")
    assert [t.get_text() for t in ax.get_xticklabels()] == ["emb", "1", "2"]
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "one word" in legend and "all words" in legend and "bank" not in legend  # words are thin grey lines
    assert len(ax.lines) >= 3 and ax.figure.get_figwidth() <= 9.0
    assert not small_text(ax.figure)
    plt.close("all")


def test_shared_diverging_scale():
    values = np.arange(12.0).reshape(3, 4) - 4
    _, image = plot_layer_head_map(values, cbar_label="x", diverging=True, vmin=-20, vmax=20)
    assert (image.norm.vmin, image.norm.vmax, image.norm.vcenter) == (-20, 20, 0.0)


def test_pruning_curve_figure():
    x = (0.0, 0.25, 0.5, 0.75)
    ours = np.array([0.8, 0.78, 0.7, 0.5])
    randoms = np.linspace(0.4, 0.65, 100)
    ax = plot_pruning_curve(x, ours, 0.5, randoms, title="pruning")
    orange = [l for l in ax.get_lines() if len(l.get_xdata()) == 4][0]
    assert np.allclose(orange.get_ydata(), ours) and np.allclose(orange.get_xdata(), [0, 25, 50, 75])
    dots = [l for l in ax.get_lines() if len(l.get_xdata()) == 100][0]
    assert np.allclose(np.sort(dots.get_ydata()), randoms) and np.all(np.abs(dots.get_xdata() - 50) <= 2)
    marker = [l for l in ax.get_lines() if l.get_marker() == "D"][0]
    assert marker.get_ydata()[0] == pytest.approx(0.7)  # the order's value at the compared share
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "100 random orders" in legend and "accuracy" in ax.get_ylabel()
    assert not small_text(ax.figure) and ax.figure.get_figwidth() <= 9.0
    with pytest.raises(ValueError, match="at least two"):
        plot_pruning_curve(x, ours, 0.5, [0.5])
    with pytest.raises(ValueError, match="not one of fractions"):
        plot_pruning_curve(x, ours, 0.4, randoms)
    plt.close("all")
