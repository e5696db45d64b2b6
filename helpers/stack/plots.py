"""Lesson 03 figures: parameter counts."""

from __future__ import annotations

from helpers.common.style import new_axes


def bar_chart(values: dict[str, float], ax=None, title: str | None = None, ylabel: str = "", log: bool = False):
    """Bars labelled by the dict keys; returns ``(fig, ax, bars)``."""
    if not isinstance(values, dict) or not values:
        raise ValueError("values must be a non-empty dict of label -> number.")
    ax = new_axes(ax, (max(5.0, 0.9 * len(values) + 2), 3.5))
    fig = ax.figure
    labels = list(values)
    bars = ax.bar(range(len(labels)), [float(values[k]) for k in labels], color="tab:blue")
    ax.set_xticks(range(len(labels)), labels, rotation=30, ha="right")
    if log:
        ax.set_yscale("log")
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    fig.tight_layout()
    return fig, ax, bars
