"""helpers.classify.plots: what each function drew."""

import numpy as np
import pytest

from helpers.classify.compute import confusion_matrix
from helpers.classify.plots import plot_confusion, plot_logits, plot_probe_curves


def test_confusion_matrix_and_plots():
    cm = confusion_matrix([0, 0, 1, 2], [0, 1, 1, 2], 3)
    assert cm.tolist() == [[1, 1, 0], [0, 1, 0], [0, 0, 1]]
    ax = plot_confusion(cm, ["a", "b", "c"])
    assert ax.images[0].get_array().shape == (3, 3)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["a", "b", "c"]
    ax = plot_probe_curves({"x": [0.1, 0.5, 0.9], "y": [0.2, 0.3, 0.4]}, chance=0.1)
    assert len(ax.lines) == 3 and [t.get_text() for t in ax.get_xticklabels()] == ["emb", "1", "2"]
    ax, bars = plot_logits(np.array([0.1, 2.0, -1.0]), ["a", "b", "c"])
    assert len(bars) == 3 and bars[1].get_height() == 2.0
    with pytest.raises(ValueError, match="one value per class"):
        plot_logits([1, 2], ["a", "b", "c"])
