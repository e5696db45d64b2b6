"""Checkers for lesson 10 (which vector, which layer: classifying BANKING77)."""

from __future__ import annotations

import numpy as np

from helpers.classify.findings import layers_tied_with
from helpers.common.stats import extreme_family
from helpers.exercises import NO_ANSWER, Feedback, as_index, correct, wrong
from helpers.exercises.prediction import index_note


def check_exercise_1(layer, probes, intervals=None, runs=None, prediction=None) -> Feedback:
    """The layer (0..L) with the highest mean-pooled probe accuracy (ties: any best layer).

    ``runs`` (optional, one :class:`~helpers.classify.compute.SeededAccuracy` per layer) lets the
    feedback name the layers the paired comparisons cannot place below the answer: every other
    layer minus it on the same test items, Bonferroni over every pair of layers since the best is
    picked from the data (:func:`~helpers.classify.compute.layers_tied_with`), the same rule as the
    lesson's ``peak_layer_verdict``. Those layers are *inconclusive*, not "the same". ``intervals``
    (one :class:`~helpers.common.stats.Interval` per layer) cannot settle it: whether two separate
    intervals overlap is no test of their difference, so the feedback then asks for ``runs``.
    ``prediction`` (the layer the learner predicted first) is commented on, never graded.
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
        return correct(message + " " + index_note(prediction, int(layer)))
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


def check_exercise_2(cm, y_true, y_pred, num_classes: int) -> Feedback:
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
