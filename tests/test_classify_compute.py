"""helpers.classify.compute on the real bundled model."""

import pytest
import torch

from helpers.classify.compute import STRATEGIES, accuracy, compare_strategies, extract_features, last_k_layers, predict, probe_per_layer, strategy_features, train_head


def test_features_match_a_single_forward_pass(tokenizer, model, intent_data):
    train, _, ft, _ = intent_data
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


def test_head_learns_and_predicts_argmax(intent_data):
    train, test, ft, fe = intent_data
    L = ft.num_layers
    head = train_head(ft.layer(L, "mean"), train.labels, train.num_classes, progress=False)
    assert accuracy(head, fe.layer(L, "mean"), test.labels) > 0.6  # chance is 0.1
    X = fe.layer(L, "mean")
    assert torch.equal(predict(head, X), head(X).argmax(-1))
    with pytest.raises(ValueError, match="labels"):
        train_head(ft.layer(L), [0, 1], 10, progress=False)


def test_batched_probes_equal_separate_training_in_accuracy_range(intent_data):
    train, test, ft, fe = intent_data
    accs = probe_per_layer(ft, train.labels, fe, test.labels, train.num_classes, "mean", progress=False)
    assert len(accs) == ft.num_layers + 1 and all(0 <= a <= 1 for a in accs)
    assert max(accs) > 0.6
    cls = probe_per_layer(ft, train.labels, fe, test.labels, train.num_classes, "cls", progress=False)
    assert cls[0] <= 0.2, "layer-0 [CLS] is identical for every sentence: chance level"


def test_strategies_and_last_four_note(intent_data):
    train, test, ft, fe = intent_data
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
