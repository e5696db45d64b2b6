"""helpers.embeddings.plots: what each function drew."""

import matplotlib.pyplot as plt
import numpy as np
import pytest

from helpers.common.style import small_text
from helpers.embeddings.plots import FIGURE_MAX_WIDTH, embedding_sum_figure, similarity_heatmap
from helpers.embeddings.rebuild import embedding_parts


def test_similarity_heatmap_leaves_the_diagonal_out_of_the_scale():
    m = np.array([[1.0, 0.2, -0.1], [0.2, 1.0, 0.31], [-0.1, 0.31, 1.0]])
    fig, ax, im = similarity_heatmap(m, ["a", "b", "c"])
    shown = im.get_array()
    assert shown.shape == (3, 3) and shown.mask.diagonal().all() and not shown.mask[0, 1]
    vmin, vmax = im.get_clim()
    assert vmax == -vmin == pytest.approx(0.35)  # the largest off-diagonal |cosine|, rounded up to 0.05
    assert len(ax.texts) == 9 and ax.texts[1].get_text() == "0.20"
    colorbar_axes = [a for a in fig.axes if a is not ax]
    assert colorbar_axes and "cosine" in colorbar_axes[0].get_ylabel()
    assert not small_text(fig)
    with pytest.raises(ValueError, match="labels"):
        similarity_heatmap(m, ["a", "b"])
    plt.close(fig)


def test_embedding_sum_figure(model, sample_trace):
    parts = embedding_parts(model, sample_trace.input_ids, sample_trace.token_type_ids)
    fig, axes = embedding_sum_figure(parts, sample_trace.tokens, dims=16)
    assert len(axes) == 5
    raw = [ax.images[0].get_clim() for ax in axes[:4]]
    assert len(set(raw)) == 1  # the three rows and their sum share one scale
    assert axes[4].images[0].get_clim() != raw[0]
    assert np.allclose(axes[3].images[0].get_array(), parts["sum"][:, :16].numpy())
    assert [t.get_text() for t in axes[0].get_yticklabels()] == sample_trace.tokens
    assert not small_text(fig) and fig.get_size_inches()[0] <= FIGURE_MAX_WIDTH
    fig.canvas.draw()
    titles = [ax.title.get_window_extent() for ax in axes]
    assert not any(a.overlaps(b) for a, b in zip(titles, titles[1:]))  # neighbouring panel titles stay apart
    fig, axes = embedding_sum_figure(parts, sample_trace.tokens, max_tokens=4)
    assert axes[0].images[0].get_array().shape[0] == 4 and "first 4 of" in fig._suptitle.get_text()
    with pytest.raises(ValueError, match="lacks"):
        embedding_sum_figure({"word": parts["word"]}, sample_trace.tokens)
