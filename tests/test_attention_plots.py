"""helpers.attention.plots: what each function drew."""

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pytest

from helpers.attention.compute import attention_entropy, attention_shares, cls_attention
from helpers.attention.plots import attention_heatmap, plot_attention_shares, plot_head_lines, plot_layer_head_table, plot_token_heatmap


def test_attention_heatmap(sample_trace):
    fig, ax, im = attention_heatmap(sample_trace.attention(1, 0), sample_trace.tokens, title="t")
    n = sample_trace.seq_len
    assert im.get_array().shape == (n, n)
    assert np.allclose(im.get_array(), sample_trace.attention(1, 0).numpy())
    assert [t.get_text() for t in ax.get_xticklabels()] == sample_trace.tokens
    assert [t.get_text() for t in ax.get_yticklabels()] == sample_trace.tokens
    assert ax.get_title() == "t"
    plt.close(fig)


def test_attention_heatmap_mismatch(sample_trace):
    with pytest.raises(ValueError, match="tokens"):
        attention_heatmap(sample_trace.attention(1, 0), sample_trace.tokens[:-1])
    with pytest.raises(ValueError, match="2-D"):
        attention_heatmap(sample_trace.attention(1), sample_trace.tokens)


def test_token_heatmap(sample_trace):
    cls = cls_attention(sample_trace).mean(1)
    ax = plot_token_heatmap(cls, sample_trace.tokens)
    assert ax.images[0].get_array().shape == (sample_trace.num_layers, sample_trace.seq_len)
    assert [t.get_text() for t in ax.get_xticklabels()] == sample_trace.tokens
    with pytest.raises(ValueError, match="tokens"):
        plot_token_heatmap(cls, sample_trace.tokens[:-1])


def test_attention_shares_stacked(sample_trace):
    shares = attention_shares(sample_trace)
    ax = plot_attention_shares(shares)
    assert len(ax.patches) == sample_trace.num_layers * 4
    tops = np.zeros(sample_trace.num_layers)
    for k in range(4):
        tops += [p.get_height() for p in ax.patches[k * sample_trace.num_layers:(k + 1) * sample_trace.num_layers]]
    assert np.allclose(tops, 1, atol=1e-5)


def test_layer_head_table(sample_trace):
    ent = attention_entropy(sample_trace)
    ax = plot_layer_head_table(ent, title="entropy")
    assert ax.images[0].get_array().shape == tuple(ent.shape)
    assert len(ax.texts) == ent.numel()
    # light cells get dark text: on "Blues" the smallest value is near white
    ax = plot_layer_head_table(ent, cmap="Blues")
    low = np.unravel_index(int(ent.argmin()), tuple(ent.shape))
    text_at = {(round(t.get_position()[1]), round(t.get_position()[0])): t for t in ax.texts}
    assert matplotlib.colors.to_hex(text_at[low].get_color()) == "#000000"


def test_head_lines(sample_trace):
    att = sample_trace.attention(1, 0)
    ax = plot_head_lines(att, sample_trace.tokens)
    n = sample_trace.seq_len
    lines = ax.collections[0]
    assert len(lines.get_segments()) == n * n
    assert np.allclose(lines.get_colors()[:, 3], att.reshape(-1).numpy(), atol=1e-6)
    with pytest.raises(ValueError, match="weights"):
        plot_head_lines(att[:-1], sample_trace.tokens)
