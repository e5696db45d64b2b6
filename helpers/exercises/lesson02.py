"""Checkers for lesson 02 (self-attention)."""

from __future__ import annotations

import math

import torch

from helpers.exercises import (NO_ANSWER, Feedback, as_index, as_number, check_prediction, check_shape,
                               check_type, correct, prediction_note, wrong)
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
    """Exercise 2: the key position the [CLS] query attends to most (row 0's argmax)."""
    answer, bad = as_index(answer, "The position")
    if bad is not None:
        return bad
    probs = trace.attention(layer, head)
    best = int(probs[0].argmax())
    if answer == best:
        return correct(f"[CLS] puts {probs[0, best]:.2f} of its attention on token {best} ({trace.tokens[best]!r}).")
    if answer == int(probs[:, 0].argmax()):
        return wrong("that is the query that attends most *to* [CLS] (column 0), not where [CLS] looks.",
                     "Row 0 is [CLS] as the query: rows are queries, columns are keys.")
    if not 0 <= answer < trace.seq_len:
        return wrong(f"{answer} is not a position: there are {trace.seq_len} tokens (0 to {trace.seq_len - 1}).",
                     "Positions count from 0, [CLS] is 0.")
    return wrong(f"[CLS] gives token {answer} only {probs[0, answer]:.2f} of its attention; another key gets more.",
                 "Look at row 0 of trace.attention(layer, head) and take its argmax.")


def unscaled_entropy(model, trace, layer: int = 1) -> float:
    """Mean entropy (nats) over heads and queries of ``softmax(Q K^T)`` in ``layer``, without the
    division by sqrt(d)."""
    self_attention = model.encoder.layer[layer - 1].attention.self
    with torch.no_grad():
        q, k, _ = (split_heads(t[None], trace.num_heads)[0] for t in project_qkv(self_attention, trace.hidden(layer - 1)))
        probs = (q @ k.transpose(-1, -2)).softmax(dim=-1)
    return _entropy(probs)


def _entropy(probs: torch.Tensor, log=torch.log) -> float:
    return -(probs * log(probs.clamp_min(1e-30))).sum(dim=-1).mean().item()


def check_exercise_3(answer, prediction, model, trace) -> Feedback:
    """Exercise 3 (predict, then measure): layer 1's mean row entropy without the 1/sqrt(d)."""
    if (bad := check_prediction(prediction, ("lower", "higher"))) is not None:
        return bad
    if answer is None:
        return NO_ANSWER
    answer, bad = as_number(answer, "The answer",
                            "Average the entropy of every row over heads and queries, then .item().")
    if bad is not None:
        return bad
    ref = unscaled_entropy(model, trace)
    scaled = _entropy(trace.attention(1))
    close = lambda x: abs(answer - x) < 1e-3 * max(1.0, abs(x))  # noqa: E731
    if close(ref):
        actual = "lower" if ref < scaled else "higher"
        return correct(f"{ref:.3f} nats without the scaling, {scaled:.3f} with it: larger scores make the "
                       f"softmax sharper. {prediction_note(prediction, actual)}")
    if close(scaled):
        return wrong("that is the entropy of the real P, with the 1/sqrt(d).",
                     "Recompute the scores as Q K^T without dividing, then the softmax and the entropy.")
    self_attention = model.encoder.layer[0].attention.self
    with torch.no_grad():
        q, k, _ = (split_heads(t[None], trace.num_heads)[0] for t in project_qkv(self_attention, trace.hidden(0)))
        unscaled = (q @ k.transpose(-1, -2)).softmax(dim=-1)
    if close(_entropy(unscaled, torch.log2)):
        return wrong("that entropy is in bits (log base 2).", "Use the natural log, torch.log, for nats.")
    if close(-(unscaled * torch.log(unscaled.clamp_min(1e-30))).sum(dim=-1).mean(dim=-1)[0].item()):
        return wrong("that is one head's entropy.", "Average over every head and every query of layer 1.")
    return wrong(f"{answer:.3f} is not the mean entropy of softmax(Q K^T) in layer 1.",
                 "Entropy of a row: -(p * log p).sum(); average it over heads and queries.")
