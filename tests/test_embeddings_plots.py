"""helpers.embeddings.plots: what each function drew."""

import matplotlib.pyplot as plt
import numpy as np

from helpers.embeddings.plots import similarity_heatmap


def test_similarity_heatmap():
    m = np.array([[1.0, 0.2], [0.2, 1.0]])
    fig, ax, im = similarity_heatmap(m, ["a", "b"])
    assert im.get_array().shape == (2, 2)
    assert len(ax.texts) == 4 and ax.texts[1].get_text() == "0.20"
    plt.close(fig)
