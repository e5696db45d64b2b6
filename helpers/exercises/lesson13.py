"""Checkers for lesson 13 (attribution: which input tokens drove one decision)."""

from __future__ import annotations

import torch

from helpers.attribution.compute import IG_STEPS, attention_rollout, integrated_gradients
from helpers.exercises import Feedback, article, as_index, as_number, correct, no_answer, wrong
from helpers.exercises.prediction import prediction_note
from helpers.model.tokens import content_positions
from helpers.model.trace import device_of


def check_exercise_1(my_rollout, trace) -> Feedback:
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


def _comprehensiveness(tokenizer, model, classifier, trace, scores, target: int, fraction: float, *, how="drop",
                       signed=True) -> float:
    from helpers.attribution.erasure import removal_probabilities, top_tokens

    words = content_positions(trace)
    ranked = scores if signed else torch.as_tensor(scores, device=device_of(scores)).abs()
    top = top_tokens(ranked, words, fraction)
    p = removal_probabilities(tokenizer, model, classifier, trace, target, [[], top], how=how)
    return float(p[0] - p[1])


def check_exercise_2(answer, tokenizer, model, classifier, trace, scores, target: int) -> Feedback:
    """ERASER's comprehensiveness at k = 20% for one ranking: drop the top ``ceil(0.2 n)`` word
    tokens (by signed score, at least one), and give p(target | x) - p(target | x without them)."""
    if answer is None:
        return no_answer("Set answer_2 to a float: p(pred | SENTENCE) - p(pred | SENTENCE without its top 20% "
                         "Integrated-Gradients tokens).")
    answer, bad = as_number(answer, "answer_2")
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


def top_word(scores, trace) -> int:
    """The word token (not [CLS] or [SEP]) with the highest signed score (ties: the earlier one)."""
    words = content_positions(trace)
    values = torch.as_tensor(scores, device=device_of(scores)).float()
    return max(words, key=lambda i: (float(values[i]), -i))


def check_exercise_3(prediction, answer, tokenizer, model, classifier, trace, target: int, pad_scores) -> Feedback:
    """Predict, then measure: the position of the word token with the highest Integrated-Gradients
    score when the baseline is [MASK] instead of [PAD]. The position is graded; the prediction
    ("same" or "different" from the [PAD] baseline's top token) only gets a comment."""
    if answer is None:
        return no_answer("Write your prediction first, then set answer_3 to an int: the position of the top word "
                         "token with baseline='mask'.")
    position, bad = as_index(answer, "The position")
    if bad is not None:
        return bad
    masked = integrated_gradients(tokenizer, model, classifier, trace, target, baseline="mask", steps=IG_STEPS)
    expected, with_pad = top_word(masked.scores, trace), top_word(pad_scores, trace)
    outcome = "same" if expected == with_pad else "different"
    note = prediction_note(prediction, outcome, ("same", "different"))
    token = trace.tokens[expected]
    if position == expected:
        return correct(f"position {expected}, {token!r}: from [MASK] the top token is "
                       + ("the same as from [PAD]. " if outcome == "same" else
                          f"not [PAD]'s top token, {trace.tokens[with_pad]!r}. ") + note)
    if position == with_pad:
        return wrong("that is the top token from the [PAD] baseline.",
                     "Run integrated_gradients(..., baseline='mask') and rank its scores.")
    if position in (0, trace.seq_len - 1):
        return wrong("[CLS] and [SEP] are not word tokens.", "Rank only content_positions(trace).")
    if not 0 <= position < trace.seq_len:
        return wrong(f"position {position} is outside the sentence (0 to {trace.seq_len - 1}).",
                     "Give an index into trace.tokens.")
    return wrong(f"position {position} ({trace.tokens[position]!r}) is not the top word token from [MASK].",
                 "Take the highest signed score among the word tokens (not the largest absolute value).")
