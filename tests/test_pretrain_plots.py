"""helpers/pretrain/plots.py on a real (tiny, few-step) run."""

import pytest

from helpers.common.stats import Interval
from helpers.common.style import small_text
from helpers.pretrain.compute import PretrainConfig, pretrain
from helpers.pretrain.data import corpus_hash, encode_documents, load_corpus, split_documents, train_wordpiece
from helpers.pretrain.plots import plot_by_layer, plot_fill_mask, plot_losses


@pytest.fixture(scope="module")
def run():
    cfg = PretrainConfig(layers=1, hidden=16, heads=2, intermediate=32, vocab_size=300, max_length=32, batch_size=4,
                         steps=8, max_documents=10)
    train, _ = split_documents(load_corpus(max_documents=10), 0.1)
    tok = train_wordpiece(train, 300, 32)
    return pretrain(cfg, tok, encode_documents(tok, train), corpus_hash(), progress=False, register=False), tok


def test_plot_losses_has_both_heads_and_chance_lines(run):
    r, tok = run
    axes = plot_losses(r, window=3, vocab_size=len(tok))
    assert "masked-LM" in axes[0].get_title() and "next-sentence" in axes[1].get_title()
    assert len(axes[0].lines[0].get_xdata()) == 8
    assert not small_text(axes[0].figure)


def test_plot_fill_mask_and_by_layer_name_the_guessers_at_their_ends():
    iv = [Interval(0.1, 0.05, 0.15), Interval(0.2, 0.15, 0.25)]
    nulls = {"most frequent tokens": 0.06, "from the two neighbours": 0.12}
    ax = plot_fill_mask([0, 10], iv, nulls, k=1)
    assert "top-1" in ax.get_title() and not small_text(ax.figure)
    assert {t.get_text() for t in ax.texts} == set(nulls)  # named at the line ends, no legend box
    assert ax.get_legend() is None
    ax = plot_by_layer({0: iv, 10: iv}, "accuracy", "lens accuracy per layer", baselines=nulls)
    assert [t.get_text() for t in ax.get_xticklabels()][0] in ("emb", "0", "embeddings")
    legend = ax.get_legend()
    assert [t.get_text() for t in legend.get_texts()] == ["step 0", "step 10"]
    # the legend sits under the axes, so it cannot cover a line
    fig = ax.figure
    fig.canvas.draw()
    assert legend.get_window_extent().y1 <= ax.get_window_extent().y0
    assert not small_text(fig)


def test_plot_beside_longer_run_leaves_out_step_zero_on_the_log_axis():
    from helpers.pretrain.plots import plot_beside_longer_run

    ax = plot_beside_longer_run({0: 1.0, 1000: 0.9, 4000: 0.8}, {0: 1.0, 100: 0.99, 10_000: 0.7, 1e6: 0.3})
    assert ax.get_xscale() == "log" and len(ax.lines[1].get_xdata()) == 2
    assert {t.get_text() for t in ax.texts} == {"course-mini", "your run"}
    assert not small_text(ax.figure)
