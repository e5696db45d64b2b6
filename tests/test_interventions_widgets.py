"""helpers.interventions.widgets: the explorer on the real bundled model; a control move never
runs the model and only looks results up."""

import time

import numpy as np
import pytest
import torch

from helpers.classify.compute import LinearHead, train_head
from helpers.common.data import load_banking77
from helpers.common.style import small_text
from helpers.interventions.compute import SentenceHead, pooled_features, sentence_interventions
from helpers.interventions.widgets import MAX_BARS, SKIP, InterventionExplorer, shown_classes


@pytest.fixture(scope="module")
def effects(tokenizer, model):
    """A head on 20 BANKING77 intents (more than the explorer's bars), a banking request's effects."""
    train_all = load_banking77("train")
    train = train_all.only(train_all.names[:20]).sample(4, seed=0)
    head = train_head(pooled_features(tokenizer, model, train.texts, max_length=64, progress=False), train.labels,
                      train.num_classes, progress=False)
    classifier = SentenceHead(head, "mean")
    text = "I still have not received my new card, what should I do?"
    return sentence_interventions(tokenizer, model, classifier, text, progress=False), train.names


def test_the_bars_show_every_prediction_and_the_highest_logits(effects):
    eff, names = effects
    shown = shown_classes(eff)
    predicted = {int(eff.base.argmax())} | set(eff.heads.argmax(-1).flatten().tolist()) | set(
        eff.skips.argmax(-1).tolist())
    assert predicted <= set(shown) and len(shown) == max(MAX_BARS, len(predicted)) < len(names)
    base = eff.base.numpy()
    assert list(base[shown]) == sorted(base[shown], reverse=True)
    rest = [c for c in range(len(names)) if c not in shown]
    if len(predicted) < MAX_BARS:  # the fill: no class left out has a higher unchanged logit than a filled one
        filled = [c for c in shown if c not in predicted]
        assert base[rest].max() <= base[filled].min()
    assert shown_classes(eff, max_bars=1) == sorted(predicted, key=lambda c: -base[c])
    with pytest.raises(ValueError, match="positive int"):
        shown_classes(eff, max_bars=0)


def test_explorer_shows_the_cached_logits(effects, no_model_calls):
    eff, names = effects
    ex = InterventionExplorer(eff, names, layer=2, head=3)
    lo, hi = ex.ax_bars.get_ylim()
    shown = ex.shown
    assert shown == shown_classes(eff) and len(ex.bars) == len(shown)
    assert [t.get_text() for t in ex.ax_bars.get_xticklabels()] == [names[c] for c in shown]
    every_head = torch.cat([eff.base[None], eff.heads.flatten(0, 1)])[:, shown]
    assert lo < float(every_head.min()) and float(every_head.max()) < hi, "the scale holds every head removal"
    assert np.allclose([b.get_height() for b in ex.bars], eff.heads[1, 3, shown].numpy())
    before = ex.image.value
    L = eff.num_layers
    ex.update(layer=L, head=SKIP)  # the model would fail the test if it ran (no_model_calls)
    skipped = eff.skips[L - 1].numpy()[shown]
    assert np.allclose([b.get_height() for b in ex.bars], np.clip(skipped, lo, hi))
    for label, value in zip(ex.cut_labels, skipped):  # a bar cut at the edge carries its value
        assert label.get_visible() == (not lo <= value <= hi)
        if label.get_visible():
            assert label.get_text() == f"{value:.0f}"
    assert ex.frame.get_xy() == (eff.num_heads - 0.5, L - 1 - 0.5)
    assert f"layer {L} skipped" in ex.title.get_text() and ex.image.value != before
    pred = shown.index(int(eff.skips[L - 1].argmax()))  # the new prediction always has a bar
    assert ex.bars[pred].get_facecolor() != ex.bars[(pred + 1) % len(shown)].get_facecolor()
    assert ex.controls["layer"].value == L and ex.controls["head"].value == SKIP
    ex.update(layer=1, head=0)
    assert not any(label.get_visible() for label in ex.cut_labels)
    skip_column = [t.get_text() for t in ex.ax_map.texts]
    assert len(skip_column) == L  # the skip column's values are written in
    assert not small_text(ex.fig)
    assert ex.fig.get_figwidth() <= 9.0
    shift = (torch.cat([eff.heads[..., ex.pred0], eff.skips[:, ex.pred0, None]], 1) - eff.base[ex.pred0]).abs()
    cbar = next(a for a in ex.fig.axes if a.get_label() == "<colorbar>")
    beyond = bool(shift[:, -1].max() > shift[:, :-1].max())
    assert ("clipped" in cbar.get_ylabel()) == beyond, "the colour bar says when the skip column is clipped"


def test_explorer_rejects_bad_values(effects):
    eff, names = effects
    with pytest.raises(ValueError, match="valid layers are 1 to"):
        InterventionExplorer(eff, names, layer=0)
    ex = InterventionExplorer(eff, names)
    with pytest.raises(ValueError, match="valid heads are 0 to"):
        ex.update(head=eff.num_heads)
    with pytest.raises(ValueError, match="one name per class"):
        InterventionExplorer(eff, names[:3])
    with pytest.raises(TypeError, match="sentence_interventions"):
        InterventionExplorer({"base": 1}, names)


@pytest.mark.slow
def test_explorer_is_fast_at_the_maximum_input_length(tokenizer, model):
    """Precompute once (not timed: it is the progress-bar step), then build <= 2 s, update p95 <= 50 ms."""
    from helpers.model.trace import max_input_tokens

    head = SentenceHead(LinearHead(model.config.hidden_size, 10).eval())
    words = " ".join(["alarm"] * max_input_tokens(tokenizer, model))
    with pytest.warns(UserWarning, match="truncated"):
        eff = sentence_interventions(tokenizer, model, head, words, progress=False)
    assert len(eff.tokens) == max_input_tokens(tokenizer, model)
    t0 = time.perf_counter()
    ex = InterventionExplorer(eff, [f"class {i}" for i in range(10)])
    build = time.perf_counter() - t0
    times = []
    for i in range(30):
        t0 = time.perf_counter()
        ex.update(layer=1 + i % eff.num_layers, head=SKIP if i % 5 == 4 else i % eff.num_heads)
        times.append(time.perf_counter() - t0)
    assert build <= 2.0, f"build took {build:.2f} s"
    # benchmarks/run_benchmarks.py holds p95 to 50 ms on an idle machine; a shared test runner
    # gets headroom for the tail, not for the typical update.
    assert np.median(times) <= 0.05 and sorted(times)[int(0.95 * (len(times) - 1))] <= 0.1
