"""Checkers for lesson 07 (pooler and classification head)."""

from __future__ import annotations

import numpy as np
import torch

from helpers.classify.compute import paired_difference
from helpers.common.stats import differs
from helpers.exercises import Feedback, NO_ANSWER, correct, wrong


def check_exercise_1(pool, model, trace) -> Feedback:
    """``pool(h_cls)`` must equal the model's pooler_output for the traced sentence."""
    if pool is None:
        return NO_ANSWER
    if not callable(pool):
        return wrong(f"pool should be a function, you gave a {type(pool).__name__}.", "Define `def pool(h): ...`.")
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

    ``runs`` (optional, one :class:`~helpers.classify.compute.SeededAccuracy` per layer) lets
    the feedback name the layers that are not distinguishable from the best one, compared
    item by item on the test set (:func:`~helpers.classify.compute.paired_difference`);
    ``intervals`` (one :class:`~helpers.common.stats.Interval` per layer) does the same by
    overlap, for when only intervals are at hand.
    """
    if layer is None:
        return NO_ANSWER
    accs = probes["mean"]
    if isinstance(layer, bool) or not isinstance(layer, (int, np.integer)):
        return wrong(f"give the layer as an int, you gave a {type(layer).__name__}.", "Use max(range(...), key=accs.__getitem__).")
    if not 0 <= layer < len(accs):
        return wrong(f"layer {layer} does not exist: valid layers are 0 to {len(accs) - 1}.", "Layer 0 is the embeddings.")
    best = max(accs)
    if accs[layer] == best:
        message = f"layer {layer} reaches {best:.0%}."
        for given, name in ((runs, "runs"), (intervals, "intervals")):
            if given is not None and len(given) != len(accs):
                raise ValueError(f"{name} must hold one entry per layer ({len(accs)}), got {len(given)}.")
        if runs is not None:
            tied = [l for l in range(len(accs)) if l != layer and not differs(paired_difference(runs[l], runs[layer]))]
            message += (f" But paired with it on the same test items, layers {tied} are not distinguishable from it "
                        "(the interval of the difference includes 0)." if tied else
                        " Paired on the same test items, every other layer is distinguishable from it.")
        elif intervals is not None:
            tied = [l for l, i in enumerate(intervals) if l != layer and i.overlaps(intervals[layer])]
            message += (f" But the intervals of layers {tied} overlap its interval: on this test set they are not "
                        "distinguishable from it." if tied else " Its interval overlaps no other layer's.")
        return correct(message)
    if probes["cls"][layer] == max(probes["cls"]):
        return wrong("that is the best [CLS] layer, not the best mean-pooled one.", "Look at probes['mean'].")
    return wrong(f"layer {layer} reaches {accs[layer]:.0%}, but another reaches {best:.0%}.",
                 "Take the argmax over probes['mean']; remember index 0 is the embeddings.")


def check_exercise_3(cm, y_true, y_pred, num_classes: int) -> Feedback:
    """``cm[i, j]`` = number of test items of true class i predicted as j."""
    if cm is None:
        return NO_ANSWER
    cm = np.asarray(cm)
    ref = np.zeros((num_classes, num_classes), dtype=int)
    np.add.at(ref, (np.asarray(y_true), np.asarray(y_pred)), 1)
    if cm.shape != ref.shape:
        return wrong(f"shape {cm.shape}, expected {ref.shape}.", "One row and one column per class.")
    if np.array_equal(cm, ref):
        return correct("rows are true classes, columns predictions.")
    if np.array_equal(cm, ref.T):
        return wrong("your matrix is transposed.", "Index it as cm[true, predicted].")
    if cm.sum() != ref.sum():
        return wrong(f"your counts sum to {cm.sum()}, but there are {ref.sum()} test items.", "Add 1 per test item.")
    return wrong("some counts differ.", "For each (true, predicted) pair add 1 to cm[true, predicted].")
