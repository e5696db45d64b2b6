"""Checkers for lesson 09 (interventions: ablate, skip, patch, attribute)."""

from __future__ import annotations

import torch

from helpers.common.stats import bootstrap_ci
from helpers.exercises import Feedback, article, as_index, as_number, correct, no_answer, wrong
from helpers.exercises.prediction import index_note
from helpers.interventions.compute import HeadAblation, attention_rollout, outcome_changes, word_cluster_shares
from helpers.model.trace import device_of


def _is_int(x) -> bool:
    return as_index(x, "value")[1] is None  # a Python int, a NumPy integer or a 0-d integer tensor


def _ints(values) -> list[int]:
    return [as_index(v, "value")[0] for v in values]


def check_exercise_1(answer, ablation: HeadAblation) -> Feedback:
    """``(layer, head)`` with the largest mean true-class logit drop; layers from 1."""
    if answer is None:
        return no_answer("Set answer_1 to a (layer, head) tuple, layers counted from 1.")
    if not isinstance(answer, (tuple, list)) or len(answer) != 2 or not all(_is_int(v) for v in answer):
        return wrong(f"answer should be a (layer, head) tuple of two ints, got {answer!r}.",
                     "For example (3, 7); convert tensor indices with int(...).")
    drops = ablation.logit_drop_items().mean(0)  # [L, A]
    n_layers, n_heads = drops.shape
    layer, head = _ints(answer)
    answer = (layer, head)
    best = drops.max()

    def is_best(row: int, col: int) -> bool:
        return 0 <= row < n_layers and 0 <= col < n_heads and bool(torch.isclose(drops[row, col], best))

    if is_best(layer - 1, head):
        return correct(f"layer {layer}, head {head}: removing it lowers the true-class logit by {best:.3f} "
                       "on average.")
    if is_best(layer, head):
        return wrong(f"layer {layer} is off by one: you gave the row index.",
                     "Row i of ablation.logit_drop_items().mean(0) is layer i + 1 (encoder.layer[i]).")
    if is_best(layer - 1, head - 1):
        return wrong(f"head {head} is off by one: heads are counted from 0.",
                     "Give the column index as it is.")
    if is_best(head - 1, layer):
        return wrong("layer and head are swapped.", "Give (layer, head): the row is the layer, the column the head.")
    if not 1 <= layer <= n_layers or not 0 <= head < n_heads:
        return wrong(f"{answer} is not a head of this model: layers are 1 to {n_layers}, heads 0 to {n_heads - 1}.",
                     "Layers are counted from 1 (row 0 of the table is layer 1); heads from 0.")
    acc_best = divmod(int(ablation.accuracy_drop().argmax()), n_heads)
    if (layer, head) == (acc_best[0] + 1, acc_best[1]):
        return wrong("that is the head with the largest *accuracy* drop.",
                     "The exercise asks for the true-class logit: use ablation.logit_drop_items().mean(0).")
    return wrong(f"removing layer {layer}, head {head} lowers the true-class logit by "
                 f"{drops[layer - 1, head]:.3f} on average; another head lowers it more.",
                 "Average ablation.logit_drop_items() over the test items (dim 0) and take the argmax.")


def check_exercise_2(answer, grads: torch.Tensor) -> Feedback:
    """Michel et al.'s ``I = E_x |dL/dxi|`` from per-item gradients ``[N, L, A]``."""
    if answer is None:
        return no_answer("Set answer_2 to an [L, A] tensor computed from grads.")
    if not isinstance(answer, torch.Tensor):
        given = type(answer).__name__
        return wrong(f"answer should be a torch.Tensor, got {article(given)}.", "Work with grads directly.")
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
        given = type(my_rollout).__name__
        return wrong(f"my_rollout should be a function, not {article(given)}.",
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
    """The width of a bootstrap over the pairs of patched layer 1 (``bootstrap_ci`` with its
    defaults) divided by the width of the lesson's interval resampling words
    (:func:`word_cluster_shares`)."""
    if answer is None:
        return no_answer("Set answer_4 to a float: the pair-bootstrap width divided by the word-bootstrap width.")
    if len(patch) < 2:
        return wrong("fewer than two ambiguous words were patched with this vocabulary.",
                     "Run the lesson with an English model.")
    answer, bad = as_number(answer, "answer_4")
    if bad is not None:
        return bad
    pooled, _, _ = word_cluster_shares(patch, "follows")

    def ratio(layer: int) -> float:
        pairs = bootstrap_ci(torch.cat([p["follows"][:, layer] for p in patch.values()]).cpu().numpy())
        width = pooled[layer].high - pooled[layer].low
        return (pairs.high - pairs.low) / width if width > 0 else float("nan")

    expected = ratio(1)
    if abs(answer - expected) <= 0.05 * abs(expected) + 1e-9:
        return correct(f"{expected:.2f}: resampling pairs as if independent gives an interval "
                       + (f"{1 / expected:.1f} times too narrow" if expected < 1 else "no narrower here")
                       + f" -- the {sum(len(p['pairs']) for p in patch.values())} pairs come from only "
                       f"{len(patch)} words.")
    if abs(answer - 1 / expected) <= 0.05 / abs(expected) + 1e-9:
        return wrong("that is the inverse ratio.", "Divide the pair-bootstrap width by the word-bootstrap width.")
    if pooled[0].high > pooled[0].low and abs(answer - ratio(0)) <= 0.05 * abs(ratio(0)) + 1e-9:
        return wrong("that is column 0, the embeddings.", "Patched layer 1 is column 1 of 'follows'.")
    return wrong(f"{answer:.2f} is not the ratio of the two widths.",
                 "Stack every word's follows[:, 1], bootstrap_ci with its defaults; width = high - low; divide "
                 "by the width of pooled[1].")


def _is_layer_list(answer) -> bool:
    return isinstance(answer, (list, tuple)) and all(_is_int(v) for v in answer)


def check_exercise_5(answer, skip_correct) -> Feedback:
    """The layers whose skip lowers the accuracy: each skip against nothing skipped on the same items
    (Tango's interval, :func:`~helpers.common.stats.mcnemar`), read as one Bonferroni family over
    the ``L`` layers: the interval at ``1 - 0.05 / L`` lies below 0 (:func:`outcome_changes`, the
    lesson's rule)."""
    if answer is None:
        return no_answer("Set answer_5 to a sorted list of layers (ints, counted from 1).")
    if not _is_layer_list(answer):
        return wrong(f"answer should be a list of int layers, got {answer!r}.",
                     "For example [1, 6]; convert tensor values with int(...).")
    answer = _ints(answer)
    outcomes = torch.as_tensor(skip_correct, device="cpu").float()  # cpu: outcomes for statistics
    n_layers = outcomes.shape[0] - 1
    changes = outcome_changes(outcomes[1:], outcomes[0], [f"layer {l}" for l in range(1, n_layers + 1)])
    expected = [l for l, c in enumerate(changes, start=1) if c.kind == "lower"]
    if expected and sorted(answer) == [l - 1 for l in expected]:
        return wrong("your layers are counted from 0: here layer l is row l of skip_correct (row 0 is "
                     "nothing skipped), and layer l is encoder.layer[l - 1].", "Add 1 to each index.")
    if any(not 1 <= layer <= n_layers for layer in answer):
        return wrong(f"layers are counted from 1 to {n_layers} here; got {sorted(answer)}.",
                     "Row l of skip_correct is layer l skipped; row 0 is nothing skipped, not a layer.")
    if list(answer) != sorted(set(answer)):
        return wrong("give each layer once, sorted.", "Use sorted(...).")
    if list(answer) == expected:
        return correct(f"layers {expected or 'none'}: " + ("; ".join(
            f"{l}: adjusted p = {changes[l - 1].adjusted_p:.2g}" for l in expected) if expected else
            "no skip is shown to lower the accuracy once the family is adjusted") + ".")
    unadjusted = [l for l, c in enumerate(changes, start=1) if c.p_value < 0.05 and c.difference.estimate < 0]
    if list(answer) == unadjusted and unadjusted != expected:
        return wrong("those are the layers whose 95 % interval lies below 0, each read on its own.",
                     f"Read the {n_layers} skips as one family: mcnemar(...).verdict(family={n_layers}) reads the "
                     f"{100 * (1 - 0.05 / n_layers):.4g} % interval.")
    either_way = [l for l, c in enumerate(changes, start=1) if c.kind in ("lower", "higher")]
    not_shown = [l for l, c in enumerate(changes, start=1) if c.kind != "lower"]
    if list(answer) == either_way and either_way != expected:
        return wrong("that list includes a layer whose skip *raises* the accuracy.",
                     "Keep only the layers with fewer right answers after the skip.")
    if list(answer) == not_shown:
        return wrong("those are the layers whose skip is *not* shown to lower the accuracy -- the old 'can go' "
                     "list, which mistakes an inconclusive test for no effect.",
                     "The exercise asks for the layers whose skip lowers the accuracy.")
    missing, extra = set(expected) - set(answer), set(answer) - set(expected)
    what = [text for text, flag in (("some layers are missing", missing),
                                    ("some listed layers are not shown to lower it", extra)) if flag]
    return wrong(f"not quite: {' and '.join(what)}.",
                 "mcnemar(skip_correct[l], skip_correct[0]).verdict(family=L) for l = 1..L, then keep the layers "
                 "whose verdict is 'lower'.")


def _comprehensiveness(tokenizer, model, classifier, trace, scores, target: int, fraction: float, *, how="drop",
                       signed=True) -> float:
    from helpers.interventions.compute import removal_probabilities, top_tokens
    from helpers.model.tokens import content_positions

    words = content_positions(trace)
    ranked = scores if signed else torch.as_tensor(scores, device=device_of(scores)).abs()
    top = top_tokens(ranked, words, fraction)
    p = removal_probabilities(tokenizer, model, classifier, trace, target, [[], top], how=how)
    return float(p[0] - p[1])


def check_exercise_6(answer, tokenizer, model, classifier, trace, scores, target: int) -> Feedback:
    """ERASER's comprehensiveness at k = 20% for one ranking: drop the top ``ceil(0.2 n)`` word
    tokens (by signed score, at least one), and give p(target | x) - p(target | x without them)."""
    if answer is None:
        return no_answer("Set answer_6 to a float: p(pred | SENTENCE) - p(pred | SENTENCE without its top 20% "
                         "Integrated-Gradients tokens).")
    answer, bad = as_number(answer, "answer_6")
    if bad is not None:
        return bad
    expected = _comprehensiveness(tokenizer, model, classifier, trace, scores, target, 0.2)
    close = lambda value: abs(answer - value) <= 1e-3 + 0.01 * abs(value)  # noqa: E731
    if close(expected):
        return correct(f"{expected:+.4f}: dropping the top 20% of the word tokens "
                       + ("lowers" if expected > 0 else "raises") + " the predicted intent's probability by "
                       f"{abs(expected):.4f}.")
    if close(-expected):
        return wrong("the sign is flipped.", "Comprehensiveness is p(full input) minus p(input without the tokens).")
    if close(_comprehensiveness(tokenizer, model, classifier, trace, scores, target, 0.2, how="mask")):
        return wrong("that replaces the tokens by [MASK]; the lesson drops them.",
                     "Build the shorter id sequence without the removed positions.")
    if close(_comprehensiveness(tokenizer, model, classifier, trace, scores, target, 0.2, signed=False)):
        return wrong("that ranks by |score|; the lesson ranks by the signed score, highest first.",
                     "A token that argues against the intent is removed last.")
    return wrong(f"{answer:+.4f} is not the comprehensiveness of this ranking.",
                 "Word tokens: every position but [CLS] and [SEP]; take the ceil(0.2 * n) with the highest score; "
                 "softmax the head's logits with and without them and subtract.")


def skip_logit_drops(skip_logits, y) -> torch.Tensor:
    """``[L]``: mean over the test items of the true-class logit with nothing skipped minus with
    layer ``l`` skipped (index ``l - 1``)."""
    logits = torch.as_tensor(skip_logits, device=device_of(skip_logits)).float()
    y = torch.as_tensor(y, device=logits.device).long()
    true = logits.gather(-1, y.expand(logits.shape[0], -1).unsqueeze(-1)).squeeze(-1)  # [L + 1, N]
    return (true[0] - true[1:]).mean(-1)


def check_exercise_7(prediction, answer, skip_logits, y) -> Feedback:
    """Predict, then measure: the layer (counted from 1) whose skip lowers the true-class logit
    most on average. The measurement is graded; the predicted layer only gets a comment."""
    if answer is None:
        return no_answer("Write your prediction first, then set answer_7 to an int: the layer (from 1) "
                         "whose skip lowers the true-class logit most on average.")
    drops = skip_logit_drops(skip_logits, y)
    n_layers = len(drops)
    layer, bad = as_index(answer, "The layer")
    if bad is not None:
        return bad
    expected = int(drops.argmax()) + 1
    if layer == expected:
        return correct(f"skipping layer {expected} lowers the true-class logit most, by "
                       f"{float(drops[expected - 1]):.2f} on average. " + index_note(prediction, expected))
    if layer == expected - 1:
        return wrong("off by one: that is the row of skip_logits[1:], or encoder.layer's index.",
                     "Row l of skip_logits is layer l skipped (row 0: nothing skipped); layer l is "
                     "encoder.layer[l - 1].")
    if not 1 <= layer <= n_layers:
        return wrong(f"layers are counted from 1 to {n_layers} here.", "Row 0 of skip_logits is nothing skipped.")
    if n_layers > 1 and layer == int(drops.argmin()) + 1:
        return wrong(f"skipping layer {layer} hurts the true-class logit the *least*.",
                     "Take the largest drop (full minus skipped), not the smallest.")
    logits = torch.as_tensor(skip_logits, device=drops.device)
    correct_ = (logits.argmax(-1) == torch.as_tensor(y, device=drops.device)).float()
    acc_drop = correct_[0] - correct_[1:]
    acc_layers = (acc_drop.mean(-1) == acc_drop.mean(-1).max()).nonzero().flatten() + 1
    if layer in acc_layers.tolist():
        return wrong("that layer's skip costs the most *accuracy*; the exercise asks for the true-class "
                     "logit.", "Gather each item's true-class logit from skip_logits, then compare.")
    return wrong(f"skipping layer {layer} is not the one that lowers the true-class logit most.",
                 "skip_logits[l, i, y[i]] is item i's true-class logit with layer l skipped: subtract it "
                 "from row 0's, average over the items, take the largest.")
