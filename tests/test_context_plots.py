"""helpers.context.plots: what each function drew, text >= 8 pt."""

import numpy as np
import pytest
import torch

from helpers.common.stats import accuracy_ci
from helpers.common.style import PAGE_WIDTH_IN, small_text
from helpers.context.plots import plot_accuracy_panels, plot_layer_curves, plot_neighbours, plot_words_and_mean


def test_layer_curves_and_neighbours(sample_trace):
    ax = plot_layer_curves({"a": [0.1, 0.2, 0.3], "b": [0.3, 0.2, 0.1]}, chance=0.5)
    assert len(ax.lines) == 3
    assert ax.lines[0].get_marker() != ax.lines[1].get_marker()  # lines that meet stay distinguishable
    with pytest.raises(ValueError):
        plot_layer_curves({})
    cos = torch.nn.functional.cosine_similarity(sample_trace.hidden(1)[2:3], sample_trace.hidden(1), dim=-1)
    ax = plot_neighbours(cos, sample_trace.tokens, 2)
    assert len(ax.patches) == sample_trace.seq_len
    assert ax.patches[2].get_facecolor() != ax.patches[1].get_facecolor()


def test_words_and_mean():
    per_word = {"a": [0.9, 0.5, 0.6], "b": [0.8, 0.4, 0.7], "c": [0.85, 0.45, 0.65]}
    ax = plot_words_and_mean(per_word, title="self-similarity", ylabel="cosine", reference=0.0,
                             highlight={"SENTENCE": [0.8, 0.5, 0.5]})
    mean_line = [l for l in ax.lines if l.get_label() == "mean over words"][0]
    assert np.allclose(mean_line.get_ydata(), np.mean(list(per_word.values()), axis=0))
    assert len(ax.collections) == 1  # the bootstrap band
    assert not small_text(ax.figure)


def test_accuracy_panels_one_per_word():
    outcomes = {w: torch.tensor([[1, 1, 1]] * 8 + [[0, 1, 1]] * 2, dtype=torch.bool) for w in ("bank", "bat", "key")}
    per_word = {w: [accuracy_ci(o[:, l]) for l in range(3)] for w, o in outcomes.items()}
    pooled = [accuracy_ci(torch.cat(list(outcomes.values()))[:, l]) for l in range(3)]
    axes = plot_accuracy_panels(per_word, pooled=pooled, chance=0.5)
    assert [ax.get_title() for ax in axes] == ["all words, pooled", "bank", "bat", "key"]
    assert all(ax.get_ylim() == axes[0].get_ylim() for ax in axes)
    assert np.allclose(axes[1].lines[0].get_ydata(), [0.8, 1.0, 1.0])
    assert not small_text(axes[0].figure)


def test_accuracy_panels_draw_the_shuffled_labels():
    outcomes = {w: torch.tensor([[1, 1, 1]] * 8 + [[0, 1, 1]] * 2, dtype=torch.bool) for w in ("bank", "bat")}
    per_word = {w: [accuracy_ci(o[:, l]) for l in range(3)] for w, o in outcomes.items()}
    shuffled = torch.rand(50, 3)
    axes = plot_accuracy_panels(per_word, null={"bank": shuffled})
    assert axes[0].figure.get_figwidth() <= PAGE_WIDTH_IN
    grey = [line for line in axes[0].lines if line.get_linestyle() == "--"]
    assert len(grey) == 1 and np.allclose(grey[0].get_ydata(), shuffled.mean(0).numpy())
    assert len(axes[0].collections) == len(axes[1].collections) + 1  # the shuffled band
    null_band, interval = axes[0].collections
    assert null_band.get_hatch() and not interval.get_hatch()  # hatched vs filled: they never blend
    legend = axes[0].figure.legends[0]  # a real legend, not a sentence under the axis
    names = [t.get_text() for t in legend.get_texts()]
    assert "shuffled sense labels: 95 % range" in names and "one word: 95 % interval" in names
    assert axes[-1].get_xlabel() == "layer"
    assert not small_text(axes[0].figure)


def test_raw_and_adjusted_get_two_panels_and_say_where_an_axis_starts():
    from helpers.context.plots import plot_raw_and_adjusted

    raw = {"a": [0.97, 0.9, 0.88], "b": [0.95, 0.86, 0.87], "c": [0.96, 0.88, 0.9]}
    baseline = np.array([0.1, 0.25, 0.2])
    top, bottom = plot_raw_and_adjusted(raw, baseline)
    assert top is not bottom and "raw" in top.get_title() and "minus" in bottom.get_title()
    mean_adj = [l for l in bottom.lines if l.get_label() == "mean over words"][0]
    assert np.allclose(mean_adj.get_ydata(), np.mean(list(raw.values()), axis=0) - baseline)
    assert bottom.get_ylim()[0] <= 0  # the zero line is on the difference's axis
    top.set_ylim(0.5, 1.0)
    from helpers.common.style import note_axis_start

    assert "axis from 0.5" in note_axis_start(top)  # a zoomed axis says where it starts
    assert not small_text(top.figure)
