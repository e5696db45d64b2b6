"""Checkers for lesson 04 (the pooler and a classification head: the mechanics)."""

from __future__ import annotations

import torch

from helpers.classify.compute import correct_per_item, fit_head_split
from helpers.exercises import Feedback, as_number, correct, no_answer, wrong
from helpers.exercises.prediction import number_note


def _mean_cosine(raw: torch.Tensor, pooled: torch.Tensor, dim: int = -1) -> float:
    with torch.no_grad():  # a checker's arithmetic must not warn the learner about gradients
        return float(torch.nn.functional.cosine_similarity(raw, pooled, dim=dim).mean())


# float32 cosines computed in different orders agree to about 1e-7; leaving out the tanh moves the
# bundled model's mean cosine by about 7e-5 (its pre-activations are small), so the checker can
# still tell the two apart
TOLERANCE_1 = 1e-5


def check_exercise_1(answer, prediction, model, feats_test, layer: int) -> Feedback:
    """Predict, then measure: the mean over the test utterances of the cosine between the raw
    last-layer [CLS] vector (``feats_test.cls[layer]``, ``[N, H]``) and its pooled vector
    ``tanh(W h + b)``, computed from ``model.pooler.dense``. The prediction (a number) is only
    commented on."""
    if answer is None:
        return no_answer("Write your prediction first, then set answer_1 to a float: the mean cosine "
                         "between the raw [CLS] vectors and their pooled vectors.")
    value, bad = as_number(answer, "answer_1")
    if bad is not None:
        return bad
    with torch.no_grad():
        raw = feats_test.cls[layer].float()
        dense = model.pooler.dense
        W, b = dense.weight.to(raw.device), dense.bias.to(raw.device)
        pre = raw @ W.T + b
        pooled = torch.tanh(pre)
        cos = torch.nn.functional.cosine_similarity(raw, pooled, dim=-1)
    expected = float(cos.mean())
    without_tanh = _mean_cosine(raw, pre)

    def near(x: float) -> bool:
        return abs(value - x) < TOLERANCE_1 and abs(value - expected) > TOLERANCE_1

    if abs(value - expected) < TOLERANCE_1:
        reading = ("the pooler keeps [CLS]'s direction" if expected > 0.8 else
                   "the pooler turns [CLS] a good deal" if abs(expected) > 0.3 else
                   "the pooler turns [CLS] to a nearly unrelated direction")
        return correct(f"mean cosine {expected:.2f} over the {len(raw)} test utterances (from "
                       f"{float(cos.min()):.2f} to {float(cos.max()):.2f}): {reading}. pooler_output is "
                       "a different vector, not a cleaned-up copy of [CLS]. Without the tanh it would be "
                       f"{without_tanh:.4f}; the largest |W h + b| here is {float(pre.abs().max()):.2f}. "
                       + number_note(prediction, expected))
    if near(without_tanh):
        return wrong(f"that leaves out the tanh ({value:.5f}; with it: a little different).",
                     "pooler_output is the dense layer followed by an activation: which one does BERT's pooler use?")
    if near(_mean_cosine(raw, torch.tanh(raw @ W + b))):
        return wrong("W is applied the wrong way round.", "nn.Linear computes x @ W.T + b (W is [out, in]).")
    if near(_mean_cosine(raw, pooled, dim=0)):
        return wrong("that compares columns (dimensions), not utterances.",
                     "cosine_similarity(raw, pooled, dim=-1): one cosine per row, then the mean.")
    return wrong(f"{value:.3f} is not the mean cosine of the raw and pooled [CLS] vectors.",
                 "Pool every row of feats_test.cls[L] as the pooler section did, check it equals "
                 "feats_test.pooler, then take one cosine per utterance (a row) and their mean.")


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
                     "Use feats_train.layer(0, 'cls') and feats_test.layer(0, 'cls').")
    last = feats_train.num_layers
    if near(accuracy(last, "cls")):
        return wrong("that is the last layer's [CLS] head.", "Layer 0 is the embeddings: .layer(0, 'cls').")
    if last >= 1 and near(accuracy(1, "cls")):
        return wrong("that is layer 1, the output of encoder.layer[0]: hidden(0) is the embeddings.",
                     "Use .layer(0, 'cls').")
    return wrong(f"{value:.3f} is not the test accuracy of that head.",
                 "fit_head_split(feats_train.layer(0, 'cls'), train_set.labels, C, dev_per_class=4, seed=0) "
                 "returns (head, record); then correct_per_item on the test features, averaged.")
