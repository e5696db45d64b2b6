"""course-mini's figure (:mod:`helpers.mini`): its two loss curves, training and dev, against tokens
seen (the model card's ``loss_curve.png``, :func:`helpers.mini.compute.write_card`)."""

from __future__ import annotations

import math

import matplotlib.pyplot as plt

from helpers.common.style import FIG_WIDTH_IN, HIGHLIGHT, NORMAL, use_course_style


def plot_loss_curve(train: list[dict], dev: list[dict], vocab_size: int, axes=None):
    """Masked-LM and next-sentence loss against tokens seen: ``train`` (the log's lines with
    ``mlm_loss``: the mean over each logged stretch of steps) and ``dev`` (lines with
    ``dev_mlm_loss``: the dev documents, scored on a timer), with chance levels (``ln V`` for a
    uniform guess over ``vocab_size`` WordPieces, ``ln 2`` for next-sentence). Returns the two axes."""
    use_course_style()
    if axes is None:
        _, axes = plt.subplots(1, 2, figsize=(FIG_WIDTH_IN, 3.0))  # the page's column
    fig = axes[0].figure
    for ax, key, name, chance, chance_label in ((axes[0], "mlm_loss", "masked-LM loss", math.log(vocab_size),
                                                 "ln V (uniform guess)"),
                                                (axes[1], "nsp_loss", "next-sentence loss", math.log(2), "ln 2 (a coin)")):
        ax.plot([x["tokens"] / 1e9 for x in train], [x[key] for x in train], color=NORMAL, lw=1.5, label="training")
        ax.plot([x["tokens"] / 1e9 for x in dev], [x[f"dev_{key}"] for x in dev], color=HIGHLIGHT, marker="o", ms=3,
                lw=1.2, label="dev documents")
        ax.axhline(chance, color="grey", ls="--", lw=1, label=chance_label)
        ax.set(xlabel="tokens seen (billions)", ylabel="cross-entropy (nats)", title=name, ylim=(0, chance * 1.15))
        ax.legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    return axes
