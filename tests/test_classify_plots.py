"""helpers.classify.plots: what each function drew, and that it follows the course style."""

import numpy as np
import pytest
import torch

from helpers.classify.comparisons import SeededAccuracy
from helpers.classify.confusions import confusion_matrix
from helpers.classify.plots import plot_confusion, plot_layer_weights, plot_logits, plot_probe_curves, plot_strategy_accuracies
from helpers.common.stats import Interval
from helpers.common.style import small_text


def test_confusion_matrix_and_plots():
    cm = confusion_matrix([0, 0, 1, 2], [0, 1, 1, 2], 3)
    assert cm.tolist() == [[1, 1, 0], [0, 1, 0], [0, 0, 1]]
    ax = plot_confusion(cm, ["a", "b", "c"])
    assert ax.images[0].get_array().shape == (3, 3)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["a", "b", "c"]
    counts = sorted(t.get_text() for t in ax.texts)
    assert counts == ["1", "1", "1", "1"], "every non-zero count is written in its cell"
    assert ax.figure.axes[-1].get_ylabel() == "test utterances", "the colourbar names what it counts"
    assert "confusion" in ax.get_title() and not small_text(ax.figure)
    ax = plot_probe_curves({"x": [0.1, 0.5, 0.9], "y": [0.2, 0.3, 0.4]}, chance=0.1)
    assert len(ax.lines) == 3 and [t.get_text() for t in ax.get_xticklabels()] == ["emb", "1", "2"]
    ax, bars = plot_logits(np.array([0.1, 2.0, -1.0]), ["a", "b", "c"])
    assert len(bars) == 3 and bars[1].get_height() == 2.0
    with pytest.raises(ValueError, match="one value per class"):
        plot_logits([1, 2], ["a", "b", "c"])


def test_probe_curves_draw_interval_bands():
    bands = {"x": [Interval(0.1, 0.0, 0.2), Interval(0.5, 0.4, 0.6), Interval(0.9, 0.8, 1.0)]}
    ax = plot_probe_curves({"x": [0.1, 0.5, 0.9]}, intervals=bands)
    band = ax.collections[0].get_paths()[0].vertices
    assert band[:, 1].min() == pytest.approx(0.0) and band[:, 1].max() == pytest.approx(1.0)
    assert "95% interval" in ax.get_title() and not small_text(ax.figure)
    with pytest.raises(ValueError, match="one per layer"):
        plot_probe_curves({"x": [0.1, 0.2], "y": [0.1]})


def test_strategy_accuracies_and_layer_weights():
    def runs(*right, n=200):
        return SeededAccuracy(torch.tensor([[True] * k + [False] * (n - k) for k in right]), tuple(range(len(right))))

    acc = {"good": runs(180, 184, 182, 181, 183), "weak": runs(120, 124, 118, 122, 121)}
    ax = plot_strategy_accuracies(acc, chance=0.1)
    assert [t.get_text() for t in ax.get_yticklabels()] == ["good", "weak"]
    interval_line = ax.lines[0]
    assert tuple(interval_line.get_xdata()) == (acc["good"].interval().low, acc["good"].interval().high)
    assert list(ax.lines[1].get_xdata()) == acc["good"].per_seed()  # one dot per seed
    assert "test accuracy" in ax.get_title() and not small_text(ax.figure)
    assert ax.get_xlim()[0] > 0 and f"axis starts at {ax.get_xlim()[0]:.2f}" in ax.get_xlabel(), "a zoomed axis says so"
    assert "chance 0.10 is off the left edge" in ax.get_xlabel()
    full = {"weak": SeededAccuracy(torch.tensor([[True] * 1 + [False] * 19]), (0,))}
    ax = plot_strategy_accuracies(full, chance=0.1)
    assert ax.get_xlim()[0] == 0 and ax.get_xlabel() == "test accuracy"
    weights = torch.tensor([[0.2, 0.3, 0.5], [0.1, 0.4, 0.5]])
    ax = plot_layer_weights(weights)
    assert [round(p.get_height(), 6) for p in ax.patches] == [0.15, 0.35, 0.5]
    assert ax.lines[-1].get_ydata()[0] == pytest.approx(1 / 3), "the uniform weight is drawn for reference"
    assert "layer weights" in ax.get_title() and not small_text(ax.figure)


def test_confusion_of_a_subset_with_an_other_column():
    from helpers.classify.confusions import confusion_subset

    cm = confusion_matrix([0, 0, 1, 1, 2, 3], [1, 0, 0, 3, 2, 3], 4)
    names = ["card_arrival", "card_delivery_estimate"]
    sub = confusion_subset(cm, [0, 1])
    ax = plot_confusion(sub, names, col_names=names + ["any other intent"], label="test predictions (5 draws)")
    assert ax.images[0].get_array().shape == (2, 3)
    assert [t.get_text() for t in ax.get_xticklabels()][-1] == "any other intent"
    assert sorted(t.get_text() for t in ax.texts) == ["1", "1", "1", "1"]
    assert ax.figure.axes[-1].get_ylabel() == "test predictions (5 draws)" and not small_text(ax.figure)
    with pytest.raises(ValueError, match="one column per column name"):
        plot_confusion(sub, names)
