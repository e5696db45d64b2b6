"""helpers.probes.plots: probe accuracy / control / selectivity figures with interval bands."""

import pytest

from helpers.common.data import UPOS_TAGS
from helpers.common.stats import Interval
from helpers.common.style import PAGE_WIDTH_IN, small_text
from helpers.probes.compute import ENTITY_CLASSES, ProbeReport
from helpers.probes.plots import plot_before_after, plot_layer_intervals, plot_probe_reports


def _report(task, classes, shift=0.0):
    acc = [Interval(0.8 + 0.03 * l + shift, 0.78 + 0.03 * l + shift, 0.82 + 0.03 * l + shift) for l in range(4)]
    ctl = [Interval(0.6 - 0.02 * l, 0.58 - 0.02 * l, 0.62 - 0.02 * l) for l in range(4)]
    sel = [Interval(a.estimate - c.estimate, a.estimate - c.estimate - 0.03, a.estimate - c.estimate + 0.03)
           for a, c in zip(acc, ctl)]
    return ProbeReport(task, classes, acc, ctl, sel, acc, 0.25, 100, 30)


def test_probe_reports_figure_shares_scales_and_names_measures():
    axes = plot_probe_reports([_report("upos", UPOS_TAGS), _report("entity", ENTITY_CLASSES, -0.2)])
    assert axes.shape == (2, 2)
    assert "accuracy" in axes[0, 0].get_title() and "selectivity" in axes[1, 1].get_title()
    assert axes[0, 0].get_ylim() == axes[0, 1].get_ylim() and axes[1, 0].get_ylim() == axes[1, 1].get_ylim()
    assert [t.get_text() for t in axes[0, 0].get_xticklabels()] == ["emb", "1", "2", "3"]
    assert len(axes[0, 0].collections) == 2  # one interval band per line (task, control)
    assert not small_text(axes[0, 0].figure)
    assert axes[0, 0].figure.get_figwidth() <= PAGE_WIDTH_IN, "the site would shrink a wider figure below 8 pt"
    fig = axes[0, 0].figure
    fig.canvas.draw()
    (legend,) = fig.legends  # one legend, under every panel: none covers the dotted "most frequent tag" line
    assert [t.get_text() for t in legend.get_texts()] == ["task", "control task", "most frequent tag"]
    assert legend.get_window_extent().y1 <= min(ax.get_tightbbox().y0 for ax in axes.flat) + 1


def test_axis_start_notes_are_written_after_the_shared_scale():
    """One report's selectivity is positive, the other's crosses 0: with the shared scale (and
    the zero line) no selectivity panel may claim an axis that starts above 0."""
    axes = plot_probe_reports([_report("upos", UPOS_TAGS), _report("entity", ENTITY_CLASSES, -0.5)])
    for ax in axes[1]:
        assert ax.get_ylim()[0] < 0 and "axis from" not in ax.get_ylabel(), ax.get_ylabel()


def test_before_after_and_bad_input():
    axes = plot_before_after(_report("upos", UPOS_TAGS), _report("upos", UPOS_TAGS, -0.05))
    assert [t.get_text() for t in axes[0].get_legend().get_texts()] == ["pre-trained", "fine-tuned"]
    assert axes[0].figure.get_figwidth() <= PAGE_WIDTH_IN
    assert "axis from 0.7" in axes[0].get_ylabel()  # a zoomed accuracy axis says where it starts
    change = [Interval(-0.05, -0.08, -0.02)] * 4
    axes = plot_before_after(_report("upos", UPOS_TAGS), _report("upos", UPOS_TAGS, -0.05), change=change)
    assert len(axes) == 3 and "paired" in axes[2].get_title()
    assert any(list(line.get_ydata()) == [0, 0] for line in axes[2].lines)  # the zero line
    assert axes[2].containers[0].lines[0].get_ydata() == pytest.approx([-5.0] * 4)  # in points
    assert not small_text(axes[0].figure)
    with pytest.raises(ValueError, match="one Interval per layer"):
        plot_before_after(_report("upos", UPOS_TAGS), _report("upos", UPOS_TAGS), change=change[:2])
    with pytest.raises(ValueError, match="same task"):
        plot_before_after(_report("upos", UPOS_TAGS), _report("entity", ENTITY_CLASSES))
    with pytest.raises(ValueError, match="one Interval per layer"):
        plot_layer_intervals({"a": _report("upos", UPOS_TAGS).accuracy, "b": _report("upos", UPOS_TAGS).accuracy[:2]})
    no_control = ProbeReport("intent", ("a", "b"), _report("upos", UPOS_TAGS).accuracy, None, None, [], 0.5, 1, 1)
    with pytest.raises(ValueError, match="control task"):
        plot_probe_reports([no_control])
