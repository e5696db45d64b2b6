"""helpers.finetuning.plots: the CKA / weight-change figure of lesson 10."""

import pytest

from helpers.common.stats import Interval
from helpers.common.style import small_text
from helpers.finetuning.plots import plot_layer_change


def test_layer_change_figure():
    cka = [Interval(1.0, 1.0, 1.0, 1.0), Interval(0.9, 0.85, 0.95, 1.0), Interval(0.6, 0.5, 0.7, 1.0)]
    moved = [Interval(0.004, 0.003, 0.005, 1.0), Interval(0.012, 0.011, 0.013, 1.0), Interval(0.02, 0.018, 0.022, 1.0)]
    axes = plot_layer_change(cka, moved, whiskers=("95% jackknife interval", "range over 3 seeds"))
    assert "CKA" in axes[0].get_title() and "weight change" in axes[1].get_title()
    assert "whiskers: 95% jackknife interval" in axes[0].get_title()  # the title says what the bars span
    assert "whiskers: range over 3 seeds" in axes[1].get_title()
    assert axes[0].figure.get_figwidth() <= 9.0
    assert "range over the seeds" in plot_layer_change(cka, moved)[0].get_title()  # the default
    assert [t.get_text() for t in axes[0].get_xticklabels()] == ["emb", "1", "2"]
    assert axes[0].get_ylim()[1] >= 1.0
    assert not small_text(axes[0].figure)
    with pytest.raises(ValueError, match="one value per layer"):
        plot_layer_change(cka, moved[:2])
    with pytest.raises(ValueError, match="Interval"):
        plot_layer_change([0.5, 0.6], moved[:2])
    with pytest.raises(ValueError, match="whiskers"):
        plot_layer_change(cka, moved, whiskers=("only one",))
