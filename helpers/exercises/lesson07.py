"""Checkers for lesson 07 (pooler and classification head)."""

from __future__ import annotations

import numpy as np
import torch

from helpers.classify.compute import layers_tied_with
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

    ``runs`` (optional, one :class:`~helpers.classify.compute.SeededAccuracy` per layer) lets the
    feedback name the layers the paired comparisons cannot place below the answer: every other
    layer minus it on the same test items, p-values Holm-adjusted over the layers
    (:func:`~helpers.classify.compute.layers_tied_with`), the same rule as the lesson's
    ``peak_layer_verdict``. Those layers are *inconclusive*, not "the same". ``intervals`` (one
    :class:`~helpers.common.stats.Interval` per layer) only says whose intervals overlap, which on
    its own settles nothing.
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
        message = f"layer {layer} reaches {best:.1%}."
        for given, name in ((runs, "runs"), (intervals, "intervals")):
            if given is not None and len(given) != len(accs):
                raise ValueError(f"{name} must hold one entry per layer ({len(accs)}), got {len(given)}.")
        if runs is not None:
            tied, _ = layers_tied_with(runs, int(layer))
            others = f"the {len(accs) - 1} other layer{'s' if len(accs) > 2 else ''}"
            paired = f"paired with it on the same test items (p-values Holm-adjusted over {others})"
            message += (f" But {paired}, layers {tied} are not shown lower: inconclusive, so on a new test set one "
                        "of them could come out on top." if tied else f" {paired[0].upper()}{paired[1:]}, every "
                        "other layer is lower.")
        elif intervals is not None:
            tied = [l for l, i in enumerate(intervals) if l != layer and i.overlaps(intervals[layer])]
            message += (f" The intervals of layers {tied} overlap its interval: overlap alone is inconclusive "
                        "(pass runs= for the paired test on the same items)." if tied else
                        " Its interval overlaps no other layer's.")
        return correct(message)
    if probes["cls"][layer] == max(probes["cls"]):
        return wrong("that is the best [CLS] layer, not the best mean-pooled one.", "Look at probes['mean'].")
    return wrong(f"layer {layer} reaches {accs[layer]:.1%}, but another reaches {best:.1%}.",
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
