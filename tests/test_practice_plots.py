"""helpers.practice.plots: what each lesson-08 figure drew, and that it follows the course style."""

import numpy as np
import pytest
import torch

from helpers.classify.comparisons import SeededAccuracy
from helpers.common.stats import Interval
from helpers.common.style import small_text
from helpers.practice.plots import MIB, plot_accuracy_vs_time, plot_int8_comparison, plot_training_memory


def test_accuracy_against_time_draws_every_run():
    def runs(*right, n=40):
        return SeededAccuracy(torch.tensor([[True] * k + [False] * (n - k) for k in right]), tuple(range(len(right))))

    acc = {"full": runs(36, 35, 37, 36, 35), "frozen": runs(30, 32, 31, 30, 33)}
    seconds = {"full": [2.0, 3.0, 2.5, 2.2, 2.8], "frozen": [1.0, 1.5, 1.2, 1.1, 1.3]}
    ax = plot_accuracy_vs_time(acc, seconds)
    dots = [line for line in ax.lines if line.get_marker() == "o"]
    assert [list(d.get_xdata()) for d in dots] == [seconds["full"], seconds["frozen"]]
    assert 0 <= ax.get_ylim()[0] and ax.get_ylim()[1] <= 1
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["full", "frozen"]
    assert "accuracy" in ax.get_title() and not small_text(ax.figure)
    assert f"axis starts at {ax.get_ylim()[0]:.2f}" in ax.get_ylabel(), "a y-axis that does not start at 0 says so"
    with pytest.raises(ValueError, match="same"):
        plot_accuracy_vs_time(acc, {"full": [1.0, 2.0]})


def test_training_memory_stacks_on_one_scale():
    parts = {"plain": {"weights": 100 * MIB, "activations": 50 * MIB},
             "checkpointed": {"weights": 100 * MIB, "activations": 5 * MIB}}
    ax = plot_training_memory(parts)
    widths = [round(p.get_width()) for p in ax.patches]
    assert widths == [100, 50, 100, 5]
    assert any("150 MiB" in t.get_text() for t in ax.texts) and any("105 MiB" in t.get_text() for t in ax.texts)
    assert "MiB" in ax.get_title() and not small_text(ax.figure)
    with pytest.raises(ValueError, match="same components"):
        plot_training_memory({"a": {"x": 1}, "b": {"y": 1}})


def test_int8_comparison_panels():
    change = torch.tensor([[0.0, 0.0], [0.2, 0.3], [0.3, 0.4]])
    between = torch.tensor([[1.0, 1.2], [0.8, 0.9], [1.1, 1.3]])
    axes = plot_int8_comparison({"float32": 80 * MIB, "int8": 50 * MIB}, {"float32": [0.3, 0.31], "int8": [0.1, 0.12]},
                                {"float32": Interval(0.95, 0.9, 1.0), "int8": Interval(0.93, 0.88, 0.98)},
                                change, between, timed="2 sentences")
    (ax_size, ax_time), (ax_acc, ax_change) = axes
    assert [round(p.get_height()) for p in ax_size.patches] == [80, 50]
    assert "2 sentences" in ax_time.get_title()
    medians = [line.get_ydata() for line in ax_change.lines]
    assert np.allclose(medians[0], [0.0, 0.25, 0.35]) and np.allclose(medians[1], [1.1, 0.85, 1.2])
    assert ax_acc.get_ylim()[0] == pytest.approx(0.83) and "axis starts at 0.83" in ax_acc.get_ylabel()
    legend = ax_change.get_legend()
    assert "random other" in legend.get_texts()[1].get_text()
    ax_size.figure.canvas.draw()  # the legend sits under the panel, never on its lines
    assert legend.get_window_extent().y1 <= ax_change.get_window_extent().y0
    assert not small_text(ax_size.figure)
    with pytest.raises(ValueError, match="same names"):
        plot_int8_comparison({"a": 1}, {"b": [1]}, {"a": Interval(1, 1, 1)}, change, between)
