"""helpers.analysis_plots: each plot returns its axes with the expected content."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from helpers import analysis  # noqa: E402
from helpers import analysis_plots as plots  # noqa: E402


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def test_layer_norms_bars(sample_trace):
    norms = analysis.layer_norms(sample_trace, 1)
    ax = plots.plot_layer_norms(norms)
    assert len(ax.patches) == sample_trace.num_layers + 1
    assert [t.get_text() for t in ax.get_xticklabels()][0] == "emb"
    assert ax.patches[2].get_height() == pytest.approx(float(norms[2]))


def test_consecutive_lines(sample_trace):
    cos = analysis.consecutive_cosines(sample_trace)
    ax = plots.plot_consecutive(cos, cos - 0.1)
    assert len(ax.lines) == 2
    assert np.allclose(ax.lines[0].get_ydata(), cos.numpy())


def test_similarity_heatmap(sample_trace):
    sim = analysis.interlayer_similarity(sample_trace)
    ax = plots.plot_similarity_heatmap(sim)
    n = sample_trace.num_layers + 1
    assert ax.collections[0].get_array().size == n * n
    assert [t.get_text() for t in ax.get_xticklabels()] == plots.layer_labels(n)
    with pytest.raises(ValueError, match="square"):
        plots.plot_similarity_heatmap(torch.ones(2, 3))


def test_trajectory(sample_trace):
    coords = analysis.pca_trajectory(sample_trace, [0, 2])
    ax = plots.plot_trajectory(coords, ["[CLS]", "bank"])
    assert len(ax.lines) == 2
    assert len(ax.texts) == 2 * (sample_trace.num_layers + 1)
    with pytest.raises(ValueError, match="names"):
        plots.plot_trajectory(coords, ["only one"])


def test_token_heatmap(sample_trace):
    cls = analysis.cls_attention(sample_trace).mean(1)
    ax = plots.plot_token_heatmap(cls, sample_trace.tokens)
    assert ax.images[0].get_array().shape == (sample_trace.num_layers, sample_trace.seq_len)
    assert [t.get_text() for t in ax.get_xticklabels()] == sample_trace.tokens
    with pytest.raises(ValueError, match="tokens"):
        plots.plot_token_heatmap(cls, sample_trace.tokens[:-1])


def test_attention_shares_stacked(sample_trace):
    shares = analysis.attention_shares(sample_trace)
    ax = plots.plot_attention_shares(shares)
    assert len(ax.patches) == sample_trace.num_layers * 4
    tops = np.zeros(sample_trace.num_layers)
    for k in range(4):
        tops += [p.get_height() for p in ax.patches[k * sample_trace.num_layers:(k + 1) * sample_trace.num_layers]]
    assert np.allclose(tops, 1, atol=1e-5)


def test_layer_head_table(sample_trace):
    ent = analysis.attention_entropy(sample_trace)
    ax = plots.plot_layer_head_table(ent, title="entropy")
    assert ax.images[0].get_array().shape == tuple(ent.shape)
    assert len(ax.texts) == ent.numel()
    # light cells get dark text: on "Blues" the smallest value is near white
    ax = plots.plot_layer_head_table(ent, cmap="Blues")
    low = np.unravel_index(int(ent.argmin()), tuple(ent.shape))
    text_at = {(round(t.get_position()[1]), round(t.get_position()[0])): t for t in ax.texts}
    assert matplotlib.colors.to_hex(text_at[low].get_color()) == "#000000"


def test_head_lines(sample_trace):
    att = sample_trace.attention(1, 0)
    ax = plots.plot_head_lines(att, sample_trace.tokens)
    n = sample_trace.seq_len
    lines = ax.collections[0]
    assert len(lines.get_segments()) == n * n
    assert np.allclose(lines.get_colors()[:, 3], att.reshape(-1).numpy(), atol=1e-6)
    with pytest.raises(ValueError, match="weights"):
        plots.plot_head_lines(att[:-1], sample_trace.tokens)


def test_layer_curves_and_neighbours(sample_trace):
    ax = plots.plot_layer_curves({"a": [0.1, 0.2, 0.3], "b": [0.3, 0.2, 0.1]}, chance=0.5)
    assert len(ax.lines) == 3
    with pytest.raises(ValueError):
        plots.plot_layer_curves({})
    cos = torch.nn.functional.cosine_similarity(sample_trace.hidden(1)[2:3], sample_trace.hidden(1), dim=-1)
    ax = plots.plot_neighbours(cos, sample_trace.tokens, 2)
    assert len(ax.patches) == sample_trace.seq_len
    assert ax.patches[2].get_facecolor() != ax.patches[1].get_facecolor()
