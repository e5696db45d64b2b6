"""helpers.attribution.plots: what each function drew, in the course style (no text under 8 pt,
labelled colourbars, one scale where panels are compared)."""

import matplotlib.pyplot as plt
import numpy as np
import pytest

from helpers.attribution.plots import plot_attributions, plot_faithfulness, plot_mixing_maps
from helpers.common.style import small_text


def colourbar_labels(fig):
    return [ax.get_ylabel() for ax in fig.axes if ax.get_label() == "<colorbar>"]


def test_attributions_one_row_per_method():
    tokens = ["set", "a", "timer", "now"]
    scores = {"raw attention": [0.1, 0.2, 0.4, 0.3], "occlusion": [-1.0, 0.0, 2.0, 0.5]}
    ax, shown = plot_attributions(scores, tokens, title="what drove it")
    image = ax.images[0]
    assert np.allclose(image.get_array()[1], [-0.5, 0.0, 1.0, 0.25])  # each row divided by its max |score|
    assert colourbar_labels(ax.figure) == ["score / largest |score| of its method"]
    assert not small_text(ax.figure)
    many = [f"t{i}" for i in range(100)]
    ref = np.zeros(100)
    ref[[5, 50, 90]] = [3.0, 2.0, 1.0]
    ax, shown = plot_attributions({"occlusion": ref}, many, max_tokens=3)
    assert shown.tolist() == [5, 50, 90]
    ax, shown = plot_attributions({"occlusion": ref}, many)  # the default: the 30 highest, at most 9 in wide
    assert len(shown) == 30 and ax.figure.get_figwidth() <= 9.0 and not small_text(ax.figure)
    with pytest.raises(ValueError, match="one score per token"):
        plot_attributions({"occlusion": [1.0]}, tokens)
    plt.close("all")


def test_faithfulness_curves_share_one_scale():
    rng = np.random.default_rng(0)
    curves = {m: {"comprehensiveness": rng.random((6, 4)) * s, "sufficiency": rng.random((6, 4)) * s - 0.2}
              for m, s in (("integrated gradients", 1.0), ("random", 0.3))}
    fig = plot_faithfulness(curves, (0.1, 0.2, 0.3, 0.5), title="deletion curves")
    left, right = fig.axes[:2]
    assert left.get_ylim() == right.get_ylim(), "compared panels share one y-scale"
    assert "comprehensiveness" in left.get_title() and "sufficiency" in right.get_title()
    assert np.asarray(left.get_lines()[0].get_xdata()).tolist() == [10.0, 20.0, 30.0, 50.0]
    assert np.allclose(left.get_lines()[0].get_ydata(), curves["integrated gradients"]["comprehensiveness"].mean(0))
    assert not small_text(fig) and fig.get_figwidth() <= 9.0
    with pytest.raises(ValueError, match="at least one"):
        plot_faithfulness({}, (0.1,))


def test_mixing_maps_share_one_scale():
    a = np.eye(4) * 0.5 + 0.125
    fig = plot_mixing_maps({"raw attention": a, "value zeroing": a ** 2 / (a ** 2).sum(1, keepdims=True)},
                           ["[CLS]", "a", "b", "[SEP]"], title="mixing")
    images = [im for ax in fig.axes for im in ax.get_images()]
    assert len(images) == 2 and len({(im.norm.vmin, im.norm.vmax) for im in images}) == 1
    assert colourbar_labels(fig) == ["share of the row (rows sum to 1)"]
    assert not small_text(fig)
    with pytest.raises(ValueError, match="every panel"):
        plot_mixing_maps({"x": np.eye(3)}, ["a", "b"])
