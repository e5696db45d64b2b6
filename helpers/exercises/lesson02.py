"""Checkers for lesson 02 (self-attention)."""

from __future__ import annotations

import math

import torch

from helpers.exercises import Feedback, NO_ANSWER, check_shape, check_type, correct, wrong
from helpers.attention.rebuild import project_qkv, split_heads


def check_exercise_1(answer, model, trace, layer: int, head: int) -> Feedback:
    """Exercise 1: one head's attention probabilities ``[seq, seq]`` rebuilt by hand."""
    if answer is None:
        return NO_ANSWER
    if (bad := check_type(answer, torch.Tensor, "Your attention matrix")) is not None:
        return bad
    if (bad := check_shape(answer, (trace.seq_len, trace.seq_len), "Your attention matrix")) is not None:
        return bad
    answer = answer.detach().float()
    reference = trace.attention(layer, head)
    if torch.allclose(answer, reference, atol=1e-5):
        return correct(f"layer {layer}, head {head} rebuilt; every row sums to 1.")
    if torch.allclose(answer.T, reference, atol=1e-5):
        return wrong("that is the transpose: rows should be queries and columns keys.", "Compute Q @ K.transpose(-1, -2), not K @ Q^T.")
    with torch.no_grad():
        self_attention = model.encoder.layer[layer - 1].attention.self
        q, k, _ = (split_heads(t[None], trace.num_heads)[0, head] for t in project_qkv(self_attention, trace.hidden(layer - 1)))
        raw = q @ k.T
        if torch.allclose(answer, raw.softmax(-1), atol=1e-5):
            return wrong("the scores were not scaled.", f"Divide Q K^T by sqrt(d_head) = sqrt({q.shape[-1]}) = {math.sqrt(q.shape[-1]):.3f} before the softmax.")
        if torch.allclose(answer, (raw / math.sqrt(q.shape[-1])).softmax(0), atol=1e-5):
            return wrong("the softmax ran over the queries.", "Normalise each row (softmax over dim=-1, the keys).")
        if torch.allclose(answer, raw / math.sqrt(q.shape[-1]), atol=1e-5):
            return wrong("those are the scores before the softmax.", "Apply a softmax over the last dimension.")
        input_hidden = trace.hidden(layer)  # a common slip: the layer's output instead of its input
        q2, k2, _ = (split_heads(t[None], trace.num_heads)[0, head] for t in project_qkv(self_attention, input_hidden))
        if torch.allclose(answer, (q2 @ k2.T / math.sqrt(q2.shape[-1])).softmax(-1), atol=1e-5):
            return wrong(f"you fed hidden_states[{layer}] into layer {layer}.", f"Layer {layer} reads its input, trace.hidden({layer - 1}).")
    for other in range(trace.num_heads):
        if other != head and torch.allclose(answer, trace.attention(layer, other), atol=1e-5):
            return wrong(f"that is head {other}, not head {head}.", "Heads are the second dimension after split_heads: [batch, heads, seq, d].")
    return wrong("your matrix differs from the model's.", "query/key projections of trace.hidden(layer - 1), split into heads, Q K^T / sqrt(d), softmax over keys.")


def check_exercise_2(answer, trace, layer: int, head: int) -> Feedback:
    """Exercise 2: the key position the [CLS] query attends to most."""
    if answer is None:
        return NO_ANSWER
    if (bad := check_type(answer, int, "The position")) is not None:
        return bad
    probs = trace.attention(layer, head)
    best = int(probs[0].argmax())
    if answer == best:
        return correct(f"[CLS] puts {probs[0, best]:.2f} of its attention on token {best} ({trace.tokens[best]!r}).")
    if answer == int(probs[:, 0].argmax()):
        return wrong("that is the query that attends most *to* [CLS] (a column).", "Row 0 is [CLS] as the query: take attention(layer, head)[0].argmax().")
    return wrong(f"[CLS] gives token {answer} only {probs[0, answer]:.2f}." if 0 <= answer < trace.seq_len else f"{answer} is not a position.",
                 "Look at row 0 of trace.attention(layer, head) and take its argmax.")
