"""helpers.plots: what each function drew."""

import matplotlib.pyplot as plt
import numpy as np
import pytest

from helpers import plots


def test_attention_heatmap(sample_trace):
    fig, ax, im = plots.attention_heatmap(sample_trace.attention(1, 0), sample_trace.tokens, title="t")
    n = sample_trace.seq_len
    assert im.get_array().shape == (n, n)
    assert np.allclose(im.get_array(), sample_trace.attention(1, 0).numpy())
    assert [t.get_text() for t in ax.get_xticklabels()] == sample_trace.tokens
    assert [t.get_text() for t in ax.get_yticklabels()] == sample_trace.tokens
    assert ax.get_title() == "t"
    plt.close(fig)


def test_attention_heatmap_mismatch(sample_trace):
    with pytest.raises(ValueError, match="tokens"):
        plots.attention_heatmap(sample_trace.attention(1, 0), sample_trace.tokens[:-1])
    with pytest.raises(ValueError, match="2-D"):
        plots.attention_heatmap(sample_trace.attention(1), sample_trace.tokens)


def test_similarity_heatmap():
    m = np.array([[1.0, 0.2], [0.2, 1.0]])
    fig, ax, im = plots.similarity_heatmap(m, ["a", "b"])
    assert im.get_array().shape == (2, 2)
    assert len(ax.texts) == 4 and ax.texts[1].get_text() == "0.20"
    plt.close(fig)


def test_bar_chart():
    fig, ax, bars = plots.bar_chart({"x": 1, "y": 10, "z": 100}, log=True, title="p")
    assert len(bars) == 3 and [b.get_height() for b in bars] == [1, 10, 100]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["x", "y", "z"]
    assert ax.get_yscale() == "log"
    plt.close(fig)
    with pytest.raises(ValueError):
        plots.bar_chart({})
