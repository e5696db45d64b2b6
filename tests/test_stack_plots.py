"""helpers.stack.plots: what each function drew."""

import matplotlib.pyplot as plt
import numpy as np
import pytest

from helpers.common.style import small_text
from helpers.stack.compute import parameter_breakdown
from helpers.stack.plots import bar_chart, parameter_bars, plot_update_ratios


def test_bar_chart():
    fig, ax, bars = bar_chart({"x": 1, "y": 10, "z": 100}, log=True, title="p")
    assert len(bars) == 3 and [b.get_height() for b in bars] == [1, 10, 100]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["x", "y", "z"]
    assert ax.get_yscale() == "log"
    plt.close(fig)
    with pytest.raises(ValueError):
        bar_chart({})


def test_parameter_bars_write_counts_and_shares_on_a_linear_axis(model):
    counts = parameter_breakdown(model)
    L = model.config.num_hidden_layers
    fig, ax, bars = parameter_bars(counts, L)
    assert ax.get_xscale() == "linear"
    widths = [b.get_width() * 1e6 for b in bars]
    assert sum(widths) == pytest.approx(counts["total"], rel=1e-9)
    written = " ".join(t.get_text() for t in ax.texts)
    assert f"{counts['embeddings'] / 1e6:.2f}M" in written and f"{counts['embeddings'] / counts['total']:.1%}" in written
    assert f"{L} layers" in " ".join(t.get_text() for t in ax.get_yticklabels())
    assert not small_text(fig)
    with pytest.raises(ValueError, match="lacks"):
        parameter_bars({"total": 1}, L)


def test_plot_update_ratios(model):
    rng = np.random.default_rng(0)
    L = 4
    data = {"attention": rng.uniform(0.2, 0.6, (L, 50)), "ffn": rng.uniform(0.3, 1.0, (L, 50))}
    mine = {"attention": rng.uniform(0.2, 0.6, (L, 9)), "ffn": rng.uniform(0.3, 1.0, (L, 9))}
    ax = plot_update_ratios(data, mine)
    assert len(ax.collections) == 2  # one interquartile band per update
    medians = ax.lines[0].get_ydata()
    assert np.allclose(medians, np.median(data["attention"], axis=1))
    assert len(ax.lines) == 4 and "update" in ax.get_ylabel() and "stream" in ax.get_title()
    assert not small_text(ax.figure)
    with pytest.raises(ValueError, match="layers, tokens"):
        plot_update_ratios({"attention": np.ones(3), "ffn": np.ones(3)})
