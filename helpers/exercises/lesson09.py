"""Checkers for lesson 09 (interventions: ablate, skip, patch, attribute)."""

from __future__ import annotations

import torch

from helpers.exercises import Feedback, correct, no_answer, wrong
from helpers.interventions.compute import HeadAblation, attention_rollout, pair_cluster_bootstrap


def _is_int(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def check_exercise_1(answer, ablation: HeadAblation) -> Feedback:
    """``(layer, head)`` with the largest mean true-class logit drop; layers from 1."""
    if answer is None:
        return no_answer("Set answer_1 to a (layer, head) tuple, layers counted from 1.")
    if not isinstance(answer, tuple) or len(answer) != 2 or not all(_is_int(v) for v in answer):
        return wrong(f"answer should be a (layer, head) tuple of two ints, got {answer!r}.",
                     "For example (3, 7); convert tensor indices with int(...).")
    drops = ablation.logit_drop_items().mean(0)  # [L, A]
    n_layers, n_heads = drops.shape
    layer, head = answer
    if not 1 <= layer <= n_layers or not 0 <= head < n_heads:
        return wrong(f"{answer} is not a head of this model: layers are 1 to {n_layers}, heads 0 to {n_heads - 1}.",
                     "Layers are counted from 1 (row 0 of the table is layer 1); heads from 0.")
    best = drops.max()
    if torch.isclose(drops[layer - 1, head], best):
        return correct(f"layer {layer}, head {head}: removing it lowers the true-class logit by {best:.3f} "
                       "on average.")
    if 0 <= layer < n_layers and torch.isclose(drops[layer, head], best):
        return wrong(f"layer {layer} is off by one.", "Row i of ablation.logit_drop_items().mean(0) is layer i + 1.")
    acc_best = divmod(int(ablation.accuracy_drop().argmax()), n_heads)
    if (layer, head) == (acc_best[0] + 1, acc_best[1]):
        return wrong("that is the head with the largest *accuracy* drop.",
                     "The exercise asks for the true-class logit: use ablation.logit_drop_items().mean(0).")
    return wrong(f"removing layer {layer}, head {head} lowers the true-class logit by "
                 f"{drops[layer - 1, head]:.3f} on average; another head lowers it by {best:.3f}.",
                 "Average ablation.logit_drop_items() over the test items (dim 0) and take the argmax.")


def check_exercise_2(answer, grads: torch.Tensor) -> Feedback:
    """Michel et al.'s ``I = E_x |dL/dxi|`` from per-item gradients ``[N, L, A]``."""
    if answer is None:
        return no_answer("Set answer_2 to an [L, A] tensor computed from grads.")
    if not isinstance(answer, torch.Tensor):
        return wrong(f"answer should be a torch.Tensor, got a {type(answer).__name__}.", "Work with grads directly.")
    expected = grads.abs().mean(0)
    if tuple(answer.shape) != tuple(expected.shape):
        return wrong(f"answer has shape {tuple(answer.shape)}, expected {tuple(expected.shape)} = [L, A].",
                     "Average over the items, dimension 0 of grads.")
    answer = answer.detach().float()
    if torch.allclose(answer, expected, atol=1e-6, rtol=1e-4):
        return correct("that is Michel et al.'s head importance, one number per head.")
    if torch.allclose(answer, grads.mean(0).abs(), atol=1e-6, rtol=1e-4):
        return wrong("you took the absolute value of the mean gradient.",
                     "Take the absolute value of each item's gradient first, then average: gradients of "
                     "opposite sign must not cancel.")
    if torch.allclose(answer, grads.abs().sum(0), atol=1e-5, rtol=1e-4):
        return wrong("you summed over the items.", "Michel et al. take the expectation: the mean over items.")
    if torch.allclose(answer, grads.mean(0), atol=1e-6, rtol=1e-4):
        return wrong("you averaged the signed gradients.", "Use the absolute values: .abs() before .mean(0).")
    return wrong("the values differ from E_x |dL/dxi|.", "Compute grads.abs().mean(0).")


def check_exercise_3(my_rollout, trace) -> Feedback:
    """A function ``list of [A, T, T] -> [T, T]``: the attention rollout with 0.5 A + 0.5 I."""
    if my_rollout is None:
        return no_answer("Define my_rollout(attentions) and pass the function.")
    if not callable(my_rollout):
        return wrong(f"my_rollout should be a function, not a {type(my_rollout).__name__}.",
                     "Write `def my_rollout(attentions): ...` and pass the function itself.")
    attentions = list(trace.attentions)
    try:
        got = torch.as_tensor(my_rollout(attentions), device=trace.device).float()
    except Exception as err:  # noqa: BLE001 - learner code
        return wrong(f"my_rollout raised {type(err).__name__}: {err}",
                     "Average the heads, mix in the identity, renormalise the rows, multiply layer by layer.")
    expected = attention_rollout(attentions)
    if tuple(got.shape) != tuple(expected.shape):
        return wrong(f"the result has shape {tuple(got.shape)}, expected {tuple(expected.shape)} = [T, T].",
                     "Average over the heads (dim 0) of each layer's map.")
    if torch.allclose(got, expected, atol=1e-5):
        return correct("your rollout matches, layer by layer.")
    eye = torch.eye(expected.shape[0], device=expected.device)
    mixed = [0.5 * a.mean(0) + 0.5 * eye for a in attentions]
    mixed = [m / m.sum(-1, keepdim=True) for m in mixed]
    reversed_order = eye
    for m in mixed:
        reversed_order = reversed_order @ m
    if torch.allclose(got, reversed_order, atol=1e-5):
        return wrong("the layers are multiplied in the wrong order.",
                     "The top layer mixes what the layers below produced: R = A_L ... A_2 A_1, so each new "
                     "layer multiplies from the left.")
    no_residual = eye
    for a in attentions:
        no_residual = a.mean(0) @ no_residual
    if torch.allclose(got, no_residual, atol=1e-5):
        return wrong("the residual connection is missing.",
                     "Use 0.5 * A + 0.5 * I for every layer, then renormalise rows.")
    return wrong("the values differ from the rollout.",
                 "For each layer: A = heads' mean; A = 0.5 A + 0.5 I; divide each row by its sum; R = A @ R.")


def check_exercise_4(answer, patch: dict) -> Feedback:
    """The lesson's rule on the first word alone: the lowest patched layer whose interval of the
    share of pairs following the patch (:func:`pair_cluster_bootstrap` on that word's result)
    lies above one half; ``None`` when no layer's does. ``...`` means "not answered yet"."""
    if answer is Ellipsis:
        return no_answer("Set answer_4 to an int layer (0 = embeddings), or None if no layer's interval lies "
                         "above one half.")
    if not patch:
        return wrong("no ambiguous word was patched with this vocabulary.", "Run the lesson with an English model.")
    if answer is not None and not _is_int(answer):
        return wrong(f"answer should be an int layer or None, got a {type(answer).__name__}.", "Use int(...).")
    word, result = next(iter(patch.items()))
    intervals = pair_cluster_bootstrap([result], "follows")
    n = len(intervals)
    first = next((layer for layer, ci in enumerate(intervals) if ci.low > 0.5), None)
    rates = result["follows"].mean(0)
    by_point = next((layer for layer in range(n) if rates[layer] >= 0.5), None)
    if answer is not None and not 0 <= answer < n:
        return wrong(f"layer {answer} does not exist: valid layers are 0 (embeddings) to {n - 1}.",
                     "Layer 0 is the embedding output.")
    if answer == first:
        if first is None:
            best = max(range(n), key=lambda layer: intervals[layer].low)
            return correct(f"for {word!r} no layer's interval lies above one half: the highest lower bound is "
                           f"layer {best}'s, {intervals[best].percent()}.")
        return correct(f"for {word!r}, layer {first} is the first whose interval lies above one half: "
                       f"{intervals[first].percent()}.")
    if answer is None:
        return wrong(f"layer {first}'s interval, {intervals[first].percent()}, lies above one half.",
                     "Compare each layer's interval's lower bound (.low) with 0.5.")
    if first is None:
        if answer == by_point:
            return wrong(f"at layer {answer} the share reaches one half ({rates[answer]:.0%}), but its interval, "
                         f"{intervals[answer].percent()}, does not lie above one half.",
                         "The lesson's rule reads the interval, not the share: here no layer qualifies, so the "
                         "answer is None.")
        return wrong(f"at layer {answer} the interval is {intervals[answer].percent()}: it does not lie above "
                     "one half.", "Check every layer's interval; if none lies above one half, answer None.")
    if answer == by_point and intervals[answer].low <= 0.5:
        return wrong(f"layer {answer} is the first whose share reaches one half ({rates[answer]:.0%}), but its "
                     f"interval, {intervals[answer].percent()}, does not lie above one half.",
                     "Use pair_cluster_bootstrap([patch[word]]) and the first layer whose interval has .low > 0.5.")
    if intervals[answer].low > 0.5:
        return wrong(f"layer {answer}'s interval lies above one half, but an earlier layer's already does.",
                     "Scan from layer 0 upwards and stop at the first interval with .low > 0.5.")
    return wrong(f"at layer {answer} the interval is {intervals[answer].percent()}: it does not lie above one half.",
                 "Compute pair_cluster_bootstrap([patch[word]], 'follows'): one interval per layer.")
