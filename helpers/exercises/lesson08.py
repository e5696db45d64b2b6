"""Checkers for lesson 08 (attention across layers)."""

from __future__ import annotations

from helpers.attention import compute
from helpers.exercises import Feedback, as_index, as_number, correct, no_answer, wrong
from helpers.exercises.prediction import number_note
from helpers.model.trace import trace_text


def check_exercise_1(answer, trace) -> Feedback:
    """Share of attention on [SEP] in the last layer of ``trace``."""
    if answer is None:
        return no_answer("Set answer_1 to a float: the [SEP] column(s) summed, averaged over heads and queries.")
    value, bad = as_number(answer, "answer_1")
    if bad is not None:
        return bad
    shares = compute.attention_shares(trace)
    expected = float(shares[-1, 1])

    def near(x) -> bool:
        return abs(value - float(x)) < 1e-4 and abs(value - expected) > 1e-4

    if value > 1 and abs(value / 100 - expected) < 1e-3:
        return wrong(f"{value:.1f} is a percentage: the exercise asks for a fraction between 0 and 1.",
                     "Divide by 100.")
    if value > 1:
        return wrong(f"{value:.3f} is more than 1: a share of one attention row cannot exceed 1.",
                     "Average over queries and heads instead of summing over them.")
    if near(shares[0, 1]):
        return wrong("that is the first layer's share.", "trace.attention(trace.num_layers) is the last layer.")
    if len(shares) > 1 and near(shares[-2, 1]):
        return wrong("that is layer L - 1: trace.attention(l) is outputs.attentions[l - 1], so the "
                     "last layer is trace.attention(L), i.e. outputs.attentions[L - 1].",
                     "Use trace.attention(trace.num_layers).")
    if near(shares[-1, 0]):
        return wrong("that is the share on [CLS] (position 0).", "[SEP] is the last token, not the first.")
    if near(1 / trace.seq_len):
        return wrong("you averaged the [SEP] row (where [SEP] looks), not its column: every row "
                     "sums to 1, so its mean is 1 / n.",
                     "The share *on* [SEP] is the key column: att[..., sep_position].")
    if abs(value - expected) > 1e-3:
        return wrong(f"{value:.3f} is not the [SEP] share of the last layer.",
                     "Take the last layer's attention, pick the [SEP] key column(s), sum over them, "
                     "then average over heads and queries.")
    return correct(f"{expected:.1%} of the last layer's attention goes to [SEP].")


def check_exercise_2(answer, trace) -> Feedback:
    """The ``(layer, head)`` with the highest offset -2 score on ``trace``."""
    if answer is None:
        return no_answer("Set answer_2 to a (layer, head) tuple.")
    if not isinstance(answer, (tuple, list)) or len(answer) != 2:
        return wrong(f"answer should be a (layer, head) pair of ints, got {answer!r}.",
                     "compute.best_head returns (layer, head, score): keep the first two.")
    layer_given, bad = as_index(answer[0], "The layer")
    if bad is None:
        head_given, bad = as_index(answer[1], "The head")
    if bad is not None:
        return bad
    given = (layer_given, head_given)
    if trace.seq_len < 3:
        return wrong("the sentence is too short for an offset of -2.", "Use a sentence with at least one word.")
    scores = compute.offset_head_scores(trace, -2)
    layer, head, score = compute.best_head(scores)
    if given == (layer, head):
        return correct(f"layer {layer}, head {head} puts {score:.1%} of its attention two tokens back.")
    if given == (layer - 1, head):
        return wrong("off by one in the layer: layers are counted from 1 here (attention(l) is "
                     "outputs.attentions[l - 1]).", "Add 1 to a 0-based row index.")
    if given == (layer, head + 1):
        return wrong("off by one in the head: heads are counted from 0.",
                     "Use the head's index as it is, without adding 1.")
    if given == compute.best_head(compute.offset_head_scores(trace, 2))[:2]:
        return wrong("that is the best head for offset +2: rows and columns are swapped (a query "
                     "attending to the token two places *ahead*).",
                     "Row i of an attention map is the query, column j the key: read att[i, i - 2].")
    if given == compute.best_head(compute.offset_head_scores(trace, -1))[:2]:
        return wrong("that is the best previous-token head (offset -1).", "Use offset -2: attention from i to i - 2.")
    if not 1 <= layer_given <= trace.num_layers or not 0 <= head_given < trace.num_heads:
        return wrong(f"({layer_given}, {head_given}) is not a head of this model.",
                     f"Layers run from 1 to {trace.num_layers}, heads from 0 to {trace.num_heads - 1}.")
    return wrong(f"layer {layer_given}, head {head_given} is not the best for offset -2.",
                 "compute.offset_head_scores(trace, -2), then compute.best_head.")


def cls_share(trace, queries=None) -> float:
    """Attention on [CLS], averaged over layers, heads and queries."""
    return float(compute.attention_shares(trace, queries=queries)[:, 0].mean())


def check_exercise_3(prediction, answer, tokenizer, model, sentence: str) -> Feedback:
    """Predict, then measure: the [CLS] share of ``sentence`` written twice, divided by that of
    ``sentence`` (both averaged over layers, heads and queries). Only the measurement is graded."""
    if answer is None:
        return no_answer("Write your prediction first, then set answer_3 to a float: the [CLS] share "
                         "of the doubled sentence divided by that of SENTENCE.")
    value, bad = as_number(answer, "answer_3")
    if bad is not None:
        return bad
    short = trace_text(tokenizer, model, sentence)
    long = trace_text(tokenizer, model, f"{sentence} {sentence}")
    expected = cls_share(long) / cls_share(short)

    def near(x) -> bool:
        return abs(value - float(x)) < 1e-3 and abs(value - expected) > 1e-3

    if abs(value - expected) < 1e-3:
        uniform = short.seq_len / long.seq_len
        return correct(f"the [CLS] share changes by a factor {expected:.2f} when the sentence doubles "
                       f"({short.seq_len} -> {long.seq_len} tokens; a uniform spread would give "
                       f"{uniform:.2f}). " + number_note(prediction, expected))
    if near(1 / expected):
        return wrong("the ratio is upside down: you divided the short sentence's share by the long one's.",
                     "Long (doubled) over short.")
    if near(cls_share(long) - cls_share(short)):
        return wrong("that is a difference, not a ratio.", "Divide the two shares.")
    if near(float(compute.attention_shares(long)[-1, 0] / compute.attention_shares(short)[-1, 0])):
        return wrong("that is the last layer only.", "Average the [CLS] share over all layers first.")
    if near(float(compute.attention_shares(long)[0, 0] / compute.attention_shares(short)[0, 0])):
        return wrong("that is the first layer only.", "Average the [CLS] share over all layers first.")
    if near(cls_share(long, [0]) / cls_share(short, [0])):
        return wrong("you read what [CLS] attends to (its row) instead of the attention it "
                     "receives (its column).", "Average over every query, keep the key [CLS].")
    if near(float(compute.attention_shares(long)[:, 1].mean() / compute.attention_shares(short)[:, 1].mean())):
        return wrong("that is the [SEP] share.", "[CLS] is position 0.")
    return wrong(f"{value:.3f} is not the ratio.",
                 "Trace f'{SENTENCE} {SENTENCE}' with trace_text; for each trace average "
                 "compute.attention_shares(t)[:, 0] over the layers; divide long by short.")
