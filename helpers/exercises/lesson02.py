"""Checkers for lesson 02 (self-attention)."""

from __future__ import annotations

import math

import torch

from helpers.exercises import (NO_ANSWER, Feedback, as_index, as_number, check_prediction, check_shape,
                               check_type, correct, prediction_note, wrong)
from helpers.attention.rebuild import project_qkv, split_heads


def _causal_reference(model, trace, layer: int, head: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``(causal, scores)``: the head's attention with every later key hidden (a left-to-right
    model's mask), and its scaled scores before any mask."""
    with torch.no_grad():
        self_attention = model.encoder.layer[layer - 1].attention.self
        q, k, _ = (split_heads(t[None], trace.num_heads)[0, head]
                   for t in project_qkv(self_attention, trace.hidden(layer - 1)))
        scores = q @ k.T / math.sqrt(q.shape[-1])
        later = torch.ones_like(scores, dtype=torch.bool).triu(1)  # key j > query i
        return scores.masked_fill(later, float("-inf")).softmax(-1), scores


def check_exercise_1(answer, model, trace, layer: int, head: int) -> Feedback:
    """Exercise 1 (build it yourself): the head's attention ``[seq, seq]`` as a left-to-right model
    would compute it: every query sees only itself and the tokens before it."""
    if answer is None:
        return NO_ANSWER
    if (bad := check_type(answer, torch.Tensor, "Your attention matrix")) is not None:
        return bad
    if (bad := check_shape(answer, (trace.seq_len, trace.seq_len), "Your attention matrix")) is not None:
        return bad
    answer = answer.detach().float().cpu()
    causal, scores = (t.cpu() for t in _causal_reference(model, trace, layer, head))
    if torch.allclose(answer, causal, atol=1e-5):
        own = float(causal[0, 0])
        later = float(trace.attention(layer, head)[0, 1:].sum())
        return correct(f"with the causal mask [CLS] (row 0) can only look at itself: weight {own:.2f}. In BERT "
                       f"the same head gives {later:.0%} of [CLS]'s attention to the tokens after it: that is what "
                       "'bidirectional' means.")
    if torch.allclose(answer, trace.attention(layer, head).cpu(), atol=1e-5):
        return wrong("that is the model's own attention: every query still sees the whole sentence.",
                     "Before the softmax, set the scores of keys after the query (j > i) to -inf.")
    if torch.allclose(answer, causal.T, atol=1e-5):
        return wrong("that is the transpose: rows should be queries and columns keys.", "Q @ K.T, rows = queries.")
    upper = torch.ones_like(scores, dtype=torch.bool).tril(-1)  # the mirror-image mask: earlier keys hidden
    if torch.allclose(answer, scores.masked_fill(upper, float("-inf")).softmax(-1), atol=1e-5):
        return wrong("your mask hides the earlier tokens instead of the later ones.",
                     "Query i (a row) may see keys 0..i (columns): which side of the diagonal must go?")
    if torch.allclose(answer, (scores * math.sqrt(trace.hidden(layer).shape[-1] // trace.num_heads)).masked_fill(
            torch.ones_like(scores, dtype=torch.bool).triu(1), float("-inf")).softmax(-1), atol=1e-5):
        return wrong("the scores were not scaled.", "Compare your scores with the formula of the section on "
                     "scaled dot-product attention: what are they divided by?")
    later = torch.ones_like(scores, dtype=torch.bool).triu(1)
    zeroed_after = scores.softmax(-1).masked_fill(later, 0.0)
    if torch.allclose(answer, zeroed_after, atol=1e-5):
        return wrong("you hid the later keys after the softmax: the rows no longer add up to 1.",
                     "Where must the mask act so that what is left is still a probability distribution?")
    return wrong("your matrix differs from the causal attention of this head.",
                 "Rebuild the head's scores as the section did (from the layer's input, trace.hidden(layer - 1)); "
                 "then ask which keys a query may see, and at which step hiding the others keeps each row a "
                 "probability distribution.")


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
