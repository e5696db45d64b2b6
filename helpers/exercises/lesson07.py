"""Checkers for lesson 07 (pooler and classification head)."""

from __future__ import annotations

import numpy as np
import torch

from helpers.classify.compute import correct_per_item, fit_head_split, layers_tied_with
from helpers.common.stats import extreme_family
from helpers.exercises import NO_ANSWER, Feedback, article, as_index, as_number, correct, no_answer, wrong
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


def check_exercise_2(layer, probes, intervals=None, runs=None) -> Feedback:
    """The layer (0..L) with the highest mean-pooled probe accuracy (ties: any best layer).

    ``runs`` (optional, one :class:`~helpers.classify.compute.SeededAccuracy` per layer) lets the
    feedback name the layers the paired comparisons cannot place below the answer: every other
    layer minus it on the same test items, Bonferroni over every pair of layers since the best is
    picked from the data (:func:`~helpers.classify.compute.layers_tied_with`), the same rule as the
    lesson's ``peak_layer_verdict``. Those layers are *inconclusive*, not "the same". ``intervals``
    (one :class:`~helpers.common.stats.Interval` per layer) cannot settle it: whether two separate
    intervals overlap is no test of their difference, so the feedback then asks for ``runs``.
    """
    if layer is None:
        return NO_ANSWER
    accs = probes["mean"]
    layer, bad = as_index(layer, "The layer")
    if bad is not None:
        return bad
    if not 0 <= layer < len(accs):
        return wrong(f"layer {layer} does not exist: valid layers are 0 to {len(accs) - 1}.", "Layer 0 is the embeddings.")
    best = max(accs)
    if accs[layer] == best:
        message = f"layer {layer} reaches {best:.1%}."
        for given, name in ((runs, "runs"), (intervals, "intervals")):
            if given is not None and len(given) != len(accs):
                raise ValueError(f"{name} must hold one entry per layer ({len(accs)}), got {len(given)}.")
        if runs is not None:
            family = extreme_family(len(accs))
            tied, _ = layers_tied_with(runs, int(layer), family=family)
            paired = (f"paired with it on the same test items (Bonferroni over the {family} pairs of layers, since "
                      "the best is picked from the same data)")
            message += (f" But {paired}, layers {tied} are not shown lower: inconclusive, so on a new test set one "
                        "of them could come out on top." if tied else f" {paired[0].upper()}{paired[1:]}, every "
                        "other layer is lower.")
        elif intervals is not None:
            message += (" Whether separate intervals overlap says nothing about the difference of two layers "
                        "measured on the same items: pass runs= for the paired comparison.")
        return correct(message)
    if probes["cls"][layer] == max(probes["cls"]):
        return wrong("that is the best [CLS] layer, not the best mean-pooled one.", "Look at probes['mean'].")
    if layer >= 1 and accs[layer - 1] == best:
        return wrong("off by one: you counted the layers from 1 (or skipped the embeddings).",
                     "Index l of probes['mean'] is hidden(l): 0 is the embeddings, l the output of "
                     "encoder.layer[l - 1]; report the index itself.")
    if layer + 1 < len(accs) and accs[layer + 1] == best:
        return wrong("off by one: that is an encoder.layer index, one below the hidden-state index.",
                     "hidden(l) is the output of encoder.layer[l - 1]; probes['mean'][l] is hidden(l).")
    return wrong(f"layer {layer} reaches {accs[layer]:.1%}, and another layer does better.",
                 "Take the argmax over probes['mean']; remember index 0 is the embeddings.")


def check_exercise_3(cm, y_true, y_pred, num_classes: int) -> Feedback:
    """``cm[i, j]`` = number of test items of true class i predicted as j."""
    if cm is None:
        return NO_ANSWER
    if hasattr(cm, "detach"):
        cm = cm.detach().cpu()
    cm = np.asarray(cm)
    ref = np.zeros((num_classes, num_classes), dtype=int)
    np.add.at(ref, (np.asarray(y_true), np.asarray(y_pred)), 1)
    if cm.shape != ref.shape:
        return wrong(f"shape {cm.shape}, expected {ref.shape}.", "One row and one column per class.")
    if np.array_equal(cm, ref):
        return correct("rows are true classes, columns predictions.")
    if np.array_equal(cm, ref.T):
        return wrong("your matrix is transposed: rows and columns are swapped.", "Index it as cm[true, predicted].")
    rows = ref.sum(axis=1, keepdims=True)
    if np.allclose(cm, ref / np.maximum(rows, 1)) or np.allclose(cm, ref / ref.sum()):
        return wrong("your matrix is normalised: the exercise asks for counts.",
                     "Leave out the division: each cell counts test items.")
    if cm.sum() != ref.sum():
        return wrong(f"your counts sum to {cm.sum()}, but there are {ref.sum()} test items.", "Add 1 per test item.")
    return wrong("some counts differ.", "For each (true, predicted) pair add 1 to cm[true, predicted].")


_HEAD_ACCURACY: dict = {}  # a head trains in a second or more on 2 cores: each setting once


def _fingerprint(X: torch.Tensor) -> tuple:
    """Shape and two moments of a feature matrix: a key for the cache above."""
    X = X.detach().double()
    return tuple(X.shape), float(X.sum()), float((X * X).sum())


def check_exercise_4(prediction, answer, feats_train, feats_test, train, test) -> Feedback:
    """Predict, then measure: the test accuracy of the head of this lesson's Part 1
    (``fit_head_split`` with ``dev_per_class=4, seed=0``) trained on the **layer-0 [CLS]** vector.
    Only the measurement is graded."""
    if answer is None:
        return no_answer("Write your prediction first, then set answer_4 to a float between 0 and 1: "
                         "the test accuracy of the head trained on the layer-0 [CLS] features.")
    value, bad = as_number(answer, "answer_4")
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
