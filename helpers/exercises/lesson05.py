"""Checkers for lesson 05 (attention across layers)."""

from __future__ import annotations

from helpers.attention import compute
from helpers.exercises import Feedback, correct, no_answer, wrong


def check_exercise_1(answer, trace) -> Feedback:
    """Share of attention on [SEP] in the last layer of ``trace``."""
    if answer is None:
        return no_answer("Set answer_1 to a float: the [SEP] column(s) summed, averaged over heads and queries.")
    try:
        value = float(answer)
    except (TypeError, ValueError):
        return wrong(f"answer should be a number, but you gave a {type(answer).__name__}.", "Use .item() on a tensor.")
    shares = compute.attention_shares(trace)
    expected = float(shares[-1, 1])
    if value > 1:
        return wrong(f"{value} is more than 1: a share is a fraction, not a percentage.",
                     "Divide by 100, or average instead of summing over queries and heads.")
    if abs(value - float(shares[0, 1])) < 1e-4 and abs(value - expected) > 1e-4:
        return wrong("that is the first layer's share.", "trace.attention(trace.num_layers) is the last layer.")
    if abs(value - float(shares[-1, 0])) < 1e-4 and abs(value - expected) > 1e-4:
        return wrong("that is the share on [CLS] (position 0).", "[SEP] is the last token, not the first.")
    if abs(value - expected) > 1e-3:
        return wrong(f"{value:.3f} is not the [SEP] share of the last layer.",
                     "att = trace.attention(L); att[..., sep_position].mean() where sep_position = tokens.index('[SEP]').")
    return correct(f"{expected:.1%} of the last layer's attention goes to [SEP].")


def check_exercise_2(answer, trace) -> Feedback:
    """The ``(layer, head)`` with the highest offset -2 score on ``trace``."""
    if answer is None:
        return no_answer("Set answer_2 to a (layer, head) tuple.")
    if not isinstance(answer, (tuple, list)) or len(answer) != 2 or not all(
        isinstance(x, int) and not isinstance(x, bool) for x in answer
    ):
        return wrong(f"answer should be a (layer, head) pair of ints, got {answer!r}.",
                     "compute.best_head returns (layer, head, score): keep the first two.")
    if trace.seq_len < 3:
        return wrong("the sentence is too short for an offset of -2.", "Use a sentence with at least one word.")
    scores = compute.offset_head_scores(trace, -2)
    layer, head, score = compute.best_head(scores)
    if tuple(answer) == (layer - 1, head):
        return wrong("off by one in the layer: layers are counted from 1 here.", "Add 1 to a 0-based row index.")
    if tuple(answer) == compute.best_head(compute.offset_head_scores(trace, -1))[:2] and (layer, head) != tuple(answer):
        return wrong("that is the best previous-token head (offset -1).", "Use offset -2: attention from i to i - 2.")
    if tuple(answer) != (layer, head):
        return wrong(f"layer {answer[0]}, head {answer[1]} is not the best for offset -2.",
                     "compute.offset_head_scores(trace, -2), then compute.best_head.")
    return correct(f"layer {layer}, head {head} puts {score:.1%} of its attention two tokens back.")
