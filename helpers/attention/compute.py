"""Lesson 05 numbers: where attention goes, layer by layer and head by head.

Everything works on cached :class:`~helpers.model.trace.Trace` objects, so nothing runs the
model. Attention exists for encoder layers ``1 .. L``: results have ``L`` rows, row ``i``
being layer ``i + 1``."""

from __future__ import annotations

import unicodedata

import torch

from helpers.model.trace import Trace, check_trace, check_traces


TOKEN_CLASSES = ("[CLS]", "[SEP]", "punctuation", "other")


def token_class(token: str) -> str:
    """One of :data:`TOKEN_CLASSES` for a WordPiece token string."""
    if token == "[CLS]":
        return "[CLS]"
    if token == "[SEP]":
        return "[SEP]"
    text = token[2:] if token.startswith("##") else token
    if text and all(unicodedata.category(ch).startswith("P") for ch in text):
        return "punctuation"
    return "other"


def attention_shares(trace: Trace) -> torch.Tensor:
    """Share of attention landing on each token class, per layer: ``[L, 4]``.

    For every head and every query token the attention row sums to 1; we add up the
    weights on the keys of each class (:data:`TOKEN_CLASSES`) and average over queries
    and heads, so each row sums to 1. Row ``i`` is layer ``i + 1``.
    """
    check_trace(trace)
    classes = [token_class(t) for t in trace.tokens]
    onehot = torch.tensor([[c == k for k in TOKEN_CLASSES] for c in classes], dtype=torch.float32)
    att = torch.stack(trace.attentions)  # [L, heads, q, k]
    return (att @ onehot).mean(dim=(1, 2))


def mean_attention_shares(traces) -> torch.Tensor:
    """:func:`attention_shares` averaged over several sentences: ``[L, 4]``."""
    return torch.stack([attention_shares(t) for t in check_traces(traces)]).mean(dim=0)


def cls_attention(trace: Trace) -> torch.Tensor:
    """What [CLS] (query position 0) attends to, per layer and head: ``[L, heads, seq]``."""
    return torch.stack(check_trace(trace).attentions)[:, :, 0, :]


def attention_entropy(trace: Trace) -> torch.Tensor:
    """Entropy (nats) of each head's attention rows, averaged over queries: ``[L, heads]``.

    Low entropy: the head looks at few tokens; ``log(seq_len)``: it spreads evenly.
    """
    att = torch.stack(check_trace(trace).attentions)
    return -(att * torch.log(att.clamp_min(1e-12))).sum(dim=-1).mean(dim=-1)


def offset_head_scores(trace: Trace, offset: int) -> torch.Tensor:
    """Mean attention from position ``i`` to ``i + offset``: ``[L, heads]``.

    ``offset=-1`` scores previous-token heads, ``offset=+1`` next-token heads; queries
    whose ``i + offset`` falls outside the sequence are left out.
    """
    check_trace(trace)
    if isinstance(offset, bool) or not isinstance(offset, int) or offset == 0:
        raise ValueError(f"offset must be a non-zero int such as -1 (previous) or +1 (next), got {offset!r}.")
    n = trace.seq_len
    if abs(offset) >= n:
        raise ValueError(f"offset {offset} is too large for a sequence of {n} tokens.")
    att = torch.stack(trace.attentions)
    queries = torch.arange(max(0, -offset), min(n, n - offset))
    return att[:, :, queries, queries + offset].mean(dim=-1)


def best_head(scores: torch.Tensor) -> tuple[int, int, float]:
    """``(layer, head, score)`` of the highest entry of an ``[L, heads]`` table; layer is 1-based."""
    scores = torch.as_tensor(scores)
    if scores.ndim != 2:
        raise ValueError(f"scores must be an [layers, heads] table, got shape {tuple(scores.shape)}.")
    flat = int(scores.argmax())
    layer, head = divmod(flat, scores.shape[1])
    return layer + 1, head, float(scores[layer, head])
