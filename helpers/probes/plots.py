"""Lesson 14 figures: probe accuracy, control accuracy and selectivity per layer, with intervals."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from helpers.common.stats import Interval
from helpers.common.style import FIG_WIDTH_IN, layer_labels, note_axis_start

TASK_TITLES = {"upos": "part of speech", "entity": "entity type", "intent": "intent (sentence)"}


def _check_intervals(values, name: str) -> list[Interval]:
    values = list(values)
    if not values or not all(isinstance(v, Interval) for v in values):
        raise ValueError(f"{name} must be a non-empty list of Interval (one per layer, 0 = embeddings).")
    return values


def plot_layer_intervals(series: dict, ax=None, *, title: str = "", ylabel: str = "", ylim=None):
    """One line per entry of ``series`` (label -> list of Interval per layer), with its interval
    as a shaded band. Returns the axes."""
    if not series:
        raise ValueError("series must map a label to a list of Interval, one per layer.")
    if ax is None:
        _, ax = plt.subplots(figsize=(5, 3))
    n = None
    for label, values in series.items():
        values = _check_intervals(values, f"series[{label!r}]")
        if n is not None and len(values) != n:
            raise ValueError("every series must have one Interval per layer (the same number of layers).")
        n = len(values)
        x = np.arange(n)
        est = [v.estimate for v in values]
        line, = ax.plot(x, est, marker="o", ms=4, label=label)
        ax.fill_between(x, [v.low for v in values], [v.high for v in values], color=line.get_color(), alpha=0.2, lw=0)
    ax.set_xticks(range(n), layer_labels(n))
    ax.set_xlabel("layer")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    if ylim is not None:
        ax.set_ylim(*ylim)
    note_axis_start(ax)
    ax.legend(loc="best")
    return ax


def plot_probe_reports(reports, axes=None):
    """For each :class:`~helpers.probes.compute.ProbeReport`, one row: its task and control
    accuracy per layer (left) and its selectivity (right), with 95 % bootstrap intervals over
    test sentences. Panels of one column share their scale. Returns the ``[2, n]`` axes array
    (``axes[0, k]``: report k's accuracy, ``axes[1, k]``: its selectivity)."""
    reports = list(reports)
    if not reports or any(r.control is None for r in reports):
        raise ValueError("give a list of ProbeReport that have a control task (word_probe_report makes them).")
    if axes is None:
        _, grid = plt.subplots(len(reports), 2, figsize=(FIG_WIDTH_IN, 2.7 * len(reports) + 0.3), sharey="col",
                               squeeze=False)
        axes = grid.T  # one row per report on the page; [2, n] for the caller
    axes = np.asarray(axes).reshape(2, len(reports))
    for col, r in enumerate(reports):
        name = TASK_TITLES.get(r.task, r.task)
        ax = plot_layer_intervals({"task": r.accuracy, "control task": r.control}, axes[0, col],
                                  title=f"{name}: accuracy", ylabel="test accuracy", ylim=(0, 1.02))
        ax.axhline(r.majority, color="gray", ls=":", lw=1, label="most frequent tag")
        ax.get_legend().remove()  # one legend for the figure, under the panels: none covers a line
        plot_layer_intervals({"selectivity": r.selectivity}, axes[1, col],
                             title=f"{name}: selectivity", ylabel="task − control")
        axes[1, col].axhline(0, color="gray", lw=0.8)
        axes[1, col].get_legend().remove()
    for ax in axes.flat:  # the shared scale and the zero line changed the limits: note them anew
        note_axis_start(ax)
    fig = axes[0, 0].figure
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.tight_layout(rect=(0, 0.35 / fig.get_figheight(), 1, 1))  # room for the legend row
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), frameon=False, fontsize=8)
    return axes


def plot_before_after(before, after, labels=("pre-trained", "fine-tuned"), axes=None, change=None):
    """Task accuracy (top left) and selectivity (top right) of two probe reports of the same task,
    e.g. the pre-trained and the fine-tuned model; an axis that does not start at 0 says where it
    starts. With ``change`` (one :class:`~helpers.common.stats.Interval` per layer, the paired
    difference after − before, e.g. ``paired_accuracy_change``), a panel below draws what the
    text tests: the difference in points with its interval and a zero line. Returns the axes."""
    if before.task != after.task or before.selectivity is None or after.selectivity is None:
        raise ValueError("give two ProbeReport of the same task, both with a control task.")
    if change is not None:
        change = _check_intervals(change, "change")
        if len(change) != len(before.accuracy):
            raise ValueError(f"change needs one Interval per layer ({len(before.accuracy)}), got {len(change)}.")
    if axes is None:
        if change is None:
            _, axes = plt.subplots(1, 2, figsize=(FIG_WIDTH_IN, 3.0))
        else:
            fig = plt.figure(figsize=(FIG_WIDTH_IN, 5.6))
            grid = fig.add_gridspec(2, 2, height_ratios=[1, 1])
            axes = [fig.add_subplot(grid[0, 0]), fig.add_subplot(grid[0, 1]), fig.add_subplot(grid[1, :])]
    name = TASK_TITLES.get(before.task, before.task)
    plot_layer_intervals({labels[0]: before.accuracy, labels[1]: after.accuracy}, axes[0],
                         title=f"{name}: probe accuracy", ylabel="test accuracy")
    plot_layer_intervals({labels[0]: before.selectivity, labels[1]: after.selectivity}, axes[1],
                         title=f"{name}: selectivity", ylabel="task − control")
    if change is not None:
        ax = axes[2]
        x = np.arange(len(change))
        est = np.array([100 * c.estimate for c in change])
        err = np.array([[100 * (c.estimate - c.low) for c in change], [100 * (c.high - c.estimate) for c in change]])
        ax.errorbar(x, est, yerr=err, fmt="o", ms=5, capsize=3, color="tab:purple",
                    label=f"{labels[1]} − {labels[0]}, paired (95 % interval)")
        ax.axhline(0, color="black", lw=0.8)
        ax.set_xticks(x, layer_labels(len(x)))
        ax.set_xlabel("layer")
        ax.set_ylabel("accuracy change (points)")
        ax.set_title(f"{name}: paired change of the probe accuracy, {labels[1]} − {labels[0]}")
        ax.legend(loc="best", frameon=False)
    for ax in axes[:2]:
        note_axis_start(ax)
    axes[0].figure.tight_layout()
    return axes
