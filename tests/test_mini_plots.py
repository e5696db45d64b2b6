"""helpers/mini/plots.py: the loss curves of the shipped run, drawn from its log."""

import json
import math

import matplotlib.pyplot as plt

from helpers.common.style import small_text, too_wide
from helpers.mini.compute import read_log
from helpers.mini.plots import plot_loss_curve
from helpers.model.paths import COURSE_MINI_DIR


def test_loss_curves_show_the_logged_losses_and_chance_levels():
    train, dev = read_log(COURSE_MINI_DIR)
    vocab_size = json.loads((COURSE_MINI_DIR / "config.json").read_text())["vocab_size"]
    axes = plot_loss_curve(train, dev, vocab_size)
    fig = axes[0].figure
    try:
        for ax, key, chance in ((axes[0], "mlm_loss", math.log(vocab_size)), (axes[1], "nsp_loss", math.log(2))):
            lines = {line.get_label(): line for line in ax.get_lines()}
            assert list(lines["training"].get_ydata()) == [x[key] for x in train]
            assert list(lines["dev documents"].get_ydata()) == [x[f"dev_{key}"] for x in dev]
            assert list(lines["training"].get_xdata()) == [x["tokens"] / 1e9 for x in train]
            chance_lines = [line for line in ax.get_lines() if line.get_label().startswith("ln")]
            assert len(chance_lines) == 1 and abs(chance_lines[0].get_ydata()[0] - chance) < 1e-9
            assert ax.get_title() and "loss" in ax.get_title()
        assert not small_text(fig) and not too_wide(fig)
    finally:
        plt.close(fig)
