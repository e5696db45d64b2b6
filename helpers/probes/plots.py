"""Lesson 10 figures: probe accuracy, control accuracy and selectivity per layer, with intervals."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from helpers.common.stats import Interval
from helpers.common.style import layer_labels

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
    ax.legend(loc="best")
    return ax


def plot_probe_reports(reports, axes=None):
    """For each :class:`~helpers.probes.compute.ProbeReport`: its task and control accuracy per
    layer (top) and its selectivity (bottom), with 95 % bootstrap intervals over test sentences.
    Panels of one row share their scale. Returns the ``[2, n]`` axes array."""
    reports = list(reports)
    if not reports or any(r.control is None for r in reports):
        raise ValueError("give a list of ProbeReport that have a control task (word_probe_report makes them).")
    if axes is None:
        _, axes = plt.subplots(2, len(reports), figsize=(min(9.0, 4.5 * len(reports)), 5.6), sharey="row",
                               squeeze=False)
    axes = np.asarray(axes).reshape(2, len(reports))
    for col, r in enumerate(reports):
        name = TASK_TITLES.get(r.task, r.task)
        ax = plot_layer_intervals({"task": r.accuracy, "control task": r.control}, axes[0, col],
                                  title=f"{name}: probe accuracy", ylabel="test accuracy", ylim=(0, 1.02))
        ax.axhline(r.majority, color="gray", ls=":", lw=1, label="most frequent tag")
        ax.legend(loc="lower right")
        plot_layer_intervals({"selectivity": r.selectivity}, axes[1, col],
                             title=f"{name}: selectivity = task − control", ylabel="accuracy difference")
        axes[1, col].axhline(0, color="gray", lw=0.8)
        axes[1, col].get_legend().remove()
    axes[0, 0].figure.tight_layout()
    return axes


def plot_before_after(before, after, labels=("pre-trained", "fine-tuned"), axes=None):
    """Task accuracy (left) and selectivity (right) of two probe reports of the same task,
    e.g. the pre-trained and the fine-tuned model. Returns the two axes."""
    if before.task != after.task or before.selectivity is None or after.selectivity is None:
        raise ValueError("give two ProbeReport of the same task, both with a control task.")
    if axes is None:
        _, axes = plt.subplots(1, 2, figsize=(9.0, 3.2))
    name = TASK_TITLES.get(before.task, before.task)
    plot_layer_intervals({labels[0]: before.accuracy, labels[1]: after.accuracy}, axes[0],
                         title=f"{name}: probe accuracy", ylabel="test accuracy")
    plot_layer_intervals({labels[0]: before.selectivity, labels[1]: after.selectivity}, axes[1],
                         title=f"{name}: selectivity = task − control", ylabel="accuracy difference")
    axes[0].figure.tight_layout()
    return axes
