"""Checkers for lesson 04 (the pooler and a classification head: the mechanics)."""

from __future__ import annotations

import torch

from helpers.classify.compute import correct_per_item, fit_head_split
from helpers.exercises import NO_ANSWER, Feedback, article, as_number, correct, no_answer, wrong
from helpers.exercises.prediction import number_note


def check_exercise_1(pool, model, trace) -> Feedback:
    """``pool(h_cls)`` must equal the model's pooler_output for the traced sentence."""
    if pool is None:
        return NO_ANSWER
    if not callable(pool):
        given = type(pool).__name__
        return wrong(f"pool should be a function, you gave {article(given)}.", "Define `def pool(h): ...`.")
    h = trace.vector(trace.num_layers, 0)
    try:
        out = pool(h)
    except Exception as err:  # noqa: BLE001 - the learner's code, report what broke
        return wrong(f"pool(h_cls) raised {type(err).__name__}: {err}", "h_cls has shape [H]; W is [H, H]: use h @ W.T + b.")
    if not isinstance(out, torch.Tensor) or out.shape != trace.pooler_output.shape:
        return wrong(f"pool(h_cls) returned shape {getattr(out, 'shape', type(out).__name__)}, expected {tuple(trace.pooler_output.shape)}.",
                     "Return one vector of size H.")
    W, b = model.pooler.dense.weight, model.pooler.dense.bias
    if torch.allclose(out, trace.pooler_output, atol=1e-5):
        return correct("your pooler matches pooler_output.")
    if torch.allclose(out, h @ W.T + b, atol=1e-5):
        return wrong("you applied the dense layer but not the activation.", "The pooler ends with torch.tanh.")
    if torch.allclose(out, torch.tanh(h @ W + b), atol=1e-5):
        return wrong("W is applied the wrong way round.", "nn.Linear computes x @ W.T + b (W is [out, in]).")
    return wrong("your output differs from pooler_output.", "pooler_output = tanh(W h_[CLS] + b) with model.pooler.dense.")


_HEAD_ACCURACY: dict = {}  # a head trains in a second or more on 2 cores: each setting once


def _fingerprint(X: torch.Tensor) -> tuple:
    """Shape and two moments of a feature matrix: a key for the cache above."""
    X = X.detach().double()
    return tuple(X.shape), float(X.sum()), float((X * X).sum())


def check_exercise_2(prediction, answer, feats_train, feats_test, train, test) -> Feedback:
    """Predict, then measure: the test accuracy of the head of this lesson
    (``fit_head_split`` with ``dev_per_class=4, seed=0``) trained on the **layer-0 [CLS]** vector.
    Only the measurement is graded."""
    if answer is None:
        return no_answer("Write your prediction first, then set answer_2 to a float between 0 and 1: "
                         "the test accuracy of the head trained on the layer-0 [CLS] features.")
    value, bad = as_number(answer, "answer_2")
    if bad is not None:
        return bad

    def accuracy(layer: int, pooling: str) -> float:
        X, X_test = feats_train.layer(layer, pooling), feats_test.layer(layer, pooling)
        key = (_fingerprint(X), _fingerprint(X_test), tuple(train.labels), tuple(test.labels))
        if key not in _HEAD_ACCURACY:
            head, _ = fit_head_split(X, train.labels, train.num_classes, dev_per_class=4, seed=0)
            _HEAD_ACCURACY[key] = float(correct_per_item(head, X_test, test.labels).float().mean())
        return _HEAD_ACCURACY[key]

    expected = accuracy(0, "cls")

    def near(x) -> bool:
        return abs(value - x) < 1e-6 and abs(value - expected) > 1e-6

    if abs(value - expected) < 1e-6:
        cls0 = feats_test.layer(0, "cls")
        spread = float((cls0 - cls0[0]).abs().max())
        return correct(f"the layer-0 [CLS] head reaches {expected:.1%} (chance {1 / train.num_classes:.1%}). "
                       f"Every test utterance has the same layer-0 [CLS] vector (largest difference "
                       f"{spread:.1e}): token [CLS] at position 0, before any layer has mixed in the "
                       "other tokens, so the head gives one intent to all. "
                       + number_note(prediction, expected))
    if near(100 * expected):
        return wrong("that is a percentage: give a fraction between 0 and 1.", "Divide by 100.")
    if near(accuracy(0, "mean")):
        return wrong("that is the mean-pooled layer 0, not the [CLS] vector.",
                     "Use feats10_train.layer(0, 'cls') and feats10_test.layer(0, 'cls').")
    last = feats_train.num_layers
    if near(accuracy(last, "cls")):
        return wrong("that is the last layer's [CLS] head.", "Layer 0 is the embeddings: .layer(0, 'cls').")
    if last >= 1 and near(accuracy(1, "cls")):
        return wrong("that is layer 1, the output of encoder.layer[0]: hidden(0) is the embeddings.",
                     "Use .layer(0, 'cls').")
    return wrong(f"{value:.3f} is not the test accuracy of that head.",
                 "fit_head_split(feats10_train.layer(0, 'cls'), train10.labels, C10, dev_per_class=4, seed=0) "
                 "returns (head, record); then correct_per_item on the test features, averaged.")
