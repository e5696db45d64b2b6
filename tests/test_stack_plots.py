"""helpers.stack.plots: what each function drew."""

import matplotlib.pyplot as plt
import pytest

from helpers.stack.plots import bar_chart


def test_bar_chart():
    fig, ax, bars = bar_chart({"x": 1, "y": 10, "z": 100}, log=True, title="p")
    assert len(bars) == 3 and [b.get_height() for b in bars] == [1, 10, 100]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["x", "y", "z"]
    assert ax.get_yscale() == "log"
    plt.close(fig)
    with pytest.raises(ValueError):
        bar_chart({})
