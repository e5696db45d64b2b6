"""helpers.classify, classify_plots, classify_widgets on the real bundled model."""

import numpy as np
import pytest
import torch

from helpers.classify import (
    STRATEGIES, accuracy, compare_strategies, confusion_matrix, extract_features, last_k_layers,
    pooler_by_hand, predict, probe_per_layer, strategy_features, train_head,
)
from helpers.classify_plots import plot_confusion, plot_logits, plot_probe_curves
from helpers.intents import load_intents


@pytest.fixture(scope="module")
def data(tokenizer, model):
    train, test = load_intents("train").subset(8), load_intents("test").subset(4)
    return train, test, extract_features(tokenizer, model, train.texts, progress=False), \
        extract_features(tokenizer, model, test.texts, progress=False)


def test_pooler_by_hand_matches_model(model, sample_trace):
    out = pooler_by_hand(model, sample_trace.vector(sample_trace.num_layers, 0))
    assert torch.allclose(out, sample_trace.pooler_output, atol=1e-5)
    assert not torch.allclose(out, sample_trace.vector(sample_trace.num_layers, 0), atol=1e-2)
    with pytest.raises(ValueError, match="hidden_size"):
        pooler_by_hand(model, torch.zeros(3))


def test_features_match_a_single_forward_pass(tokenizer, model, data):
    train, _, ft, _ = data
    L, H = model.config.num_hidden_layers, model.config.hidden_size
    assert ft.cls.shape == (L + 1, len(train), H) and ft.mean.shape == ft.cls.shape
    enc = tokenizer(train.texts[3], return_tensors="pt")
    with torch.no_grad():
        hs = model(**enc, output_hidden_states=True).hidden_states
    assert torch.allclose(ft.cls[2, 3], hs[2][0, 0], atol=1e-5)
    assert torch.allclose(ft.mean[L, 3], hs[L][0].mean(0), atol=1e-5)  # padding ignored
    with pytest.raises(ValueError, match="out of range"):
        ft.layer(L + 1)
    with pytest.raises(ValueError, match="list"):
        extract_features(tokenizer, model, "one string", progress=False)


def test_head_learns_and_predicts_argmax(data):
    train, test, ft, fe = data
    L = ft.num_layers
    head = train_head(ft.layer(L, "mean"), train.labels, train.num_classes, progress=False)
    assert accuracy(head, fe.layer(L, "mean"), test.labels) > 0.6  # chance is 0.1
    X = fe.layer(L, "mean")
    assert torch.equal(predict(head, X), head(X).argmax(-1))
    with pytest.raises(ValueError, match="labels"):
        train_head(ft.layer(L), [0, 1], 10, progress=False)


def test_batched_probes_equal_separate_training_in_accuracy_range(data):
    train, test, ft, fe = data
    accs = probe_per_layer(ft, train.labels, fe, test.labels, train.num_classes, "mean", progress=False)
    assert len(accs) == ft.num_layers + 1 and all(0 <= a <= 1 for a in accs)
    assert max(accs) > 0.6
    cls = probe_per_layer(ft, train.labels, fe, test.labels, train.num_classes, "cls", progress=False)
    assert cls[0] <= 0.2, "layer-0 [CLS] is identical for every sentence: chance level"


def test_strategies_and_last_four_note(data):
    train, test, ft, fe = data
    assert last_k_layers(6) == ([3, 4, 5, 6], "layers 3..6")
    layers, note = last_k_layers(3)
    assert layers == [1, 2, 3] and "only 3" in note
    assert strategy_features(ft, "concat last four [CLS]").shape[1] == 4 * ft.cls.shape[-1]
    res = compare_strategies(ft, train.labels, fe, test.labels, train.num_classes, progress=False, epochs=30)
    assert set(STRATEGIES) <= set(res)
    w = res["_layer_weights"]
    assert w.shape == (ft.num_layers + 1,) and torch.isclose(w.sum(), torch.tensor(1.0))
    with pytest.raises(ValueError, match="unknown strategy"):
        strategy_features(ft, "best")


def test_confusion_matrix_and_plots():
    cm = confusion_matrix([0, 0, 1, 2], [0, 1, 1, 2], 3)
    assert cm.tolist() == [[1, 1, 0], [0, 1, 0], [0, 0, 1]]
    ax = plot_confusion(cm, ["a", "b", "c"])
    assert ax.images[0].get_array().shape == (3, 3)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["a", "b", "c"]
    ax = plot_probe_curves({"x": [0.1, 0.5, 0.9], "y": [0.2, 0.3, 0.4]}, chance=0.1)
    assert len(ax.lines) == 3 and [t.get_text() for t in ax.get_xticklabels()] == ["emb", "1", "2"]
    ax, bars = plot_logits(np.array([0.1, 2.0, -1.0]), ["a", "b", "c"])
    assert len(bars) == 3 and bars[1].get_height() == 2.0
    with pytest.raises(ValueError, match="one value per class"):
        plot_logits([1, 2], ["a", "b", "c"])


def test_logits_box_updates_bars_and_caches(tokenizer, model, data):
    from helpers.classify_widgets import LogitsBox

    train, _, ft, _ = data
    L = ft.num_layers
    head = train_head(ft.layer(L, "mean"), train.labels, train.num_classes, progress=False)
    box = LogitsBox(tokenizer, model, head, train.names, layer=L, pooling="mean", sentence="play some jazz please")
    before_png, before_heights = box.image.value, [b.get_height() for b in box.bars]
    calls = []
    handle = model.register_forward_hook(lambda *a: calls.append(1))
    try:
        box.text.value = "wake me up at six tomorrow"
        assert not calls, "typing alone must not run the model"
        box.button.click()
        assert len(calls) == 1
        assert [b.get_height() for b in box.bars] != before_heights and box.image.value != before_png
        assert train.names[box.prediction] in box.ax.get_title()
        box.update(sentence="play some jazz please")  # seen before: cached
        assert len(calls) == 1 and [b.get_height() for b in box.bars] == before_heights
    finally:
        handle.remove()
    box.update(sentence="   ")
    assert [b.get_height() for b in box.bars] == before_heights, "an empty sentence changes nothing"
    b2, values = LogitsBox.for_benchmark(tokenizer, model)
    b2.update(**values[0])


def test_logits_box_keeps_one_y_scale_that_holds_every_logit(tokenizer, model, data):
    from helpers.classify_widgets import LogitsBox

    train, _, ft, _ = data
    L = ft.num_layers
    head = train_head(ft.layer(L, "cls"), train.labels, train.num_classes, progress=False)
    box = LogitsBox(tokenizer, model, head, train.names, layer=L, sentence=train.texts[0])
    limits = [box.ax.get_ylim()]
    for text in train.texts[:: max(1, len(train.texts) // 8)]:
        box.update(sentence=text)
        lo, hi = box.ax.get_ylim()
        logits = box.logits_for(text)
        assert lo < min(0.0, float(logits.min())) and max(0.0, float(logits.max())) < hi, "a bar is cut off"
        assert lo <= limits[-1][0] and hi >= limits[-1][1], "the scale must never shrink between sentences"
        limits.append((lo, hi))
