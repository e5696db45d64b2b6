"""Lesson 02 by hand: ``BertSelfAttention`` -- Q/K/V projections, heads, scaled dot product,
the padding mask and the softmax.

Mirrors ``modeling_bert.py`` and uses its names (``query``/``key``/``value``). Shapes: hidden
states may be ``[seq, hidden]`` or ``[batch, seq, hidden]``; results keep the caller's form."""

from __future__ import annotations

import math

import torch

from helpers.common.checks import as_batch, as_ids, check_layer_module


def project_qkv(self_attention, hidden: torch.Tensor):
    """The three projections $Q = XW_Q + b_Q$, $K = XW_K + b_K$, $V = XW_V + b_V$."""
    q = hidden @ self_attention.query.weight.T + self_attention.query.bias
    k = hidden @ self_attention.key.weight.T + self_attention.key.bias
    v = hidden @ self_attention.value.weight.T + self_attention.value.bias
    return q, k, v


def split_heads(x: torch.Tensor, num_heads: int) -> torch.Tensor:
    """``[batch, seq, hidden]`` -> ``[batch, heads, seq, hidden // heads]``."""
    batch, seq, width = x.shape
    if width % num_heads:
        raise ValueError(f"hidden size {width} is not divisible by {num_heads} heads.")
    return x.view(batch, seq, num_heads, width // num_heads).transpose(1, 2)


def merge_heads(x: torch.Tensor) -> torch.Tensor:
    """``[batch, heads, seq, d]`` -> ``[batch, seq, heads * d]`` (the inverse of split_heads)."""
    batch, heads, seq, d = x.shape
    return x.transpose(1, 2).reshape(batch, seq, heads * d)


def extended_attention_mask(attention_mask: torch.Tensor, dtype=torch.float32) -> torch.Tensor:
    """``[batch, seq]`` of 1 (real) / 0 (padding) -> additive ``[batch, 1, 1, seq]``.

    As in modeling_bert: ``(1 - mask) * finfo.min``, so a padded key's score becomes hugely
    negative and its softmax probability 0, for every query and every head.
    """
    mask, _ = as_ids(attention_mask.long() if attention_mask.dtype == torch.bool else attention_mask, "attention_mask")
    if not set(mask.unique().tolist()) <= {0, 1}:
        raise ValueError("attention_mask must hold only 0 (padding) and 1 (real token).")
    return (1.0 - mask[:, None, None, :].to(dtype)) * torch.finfo(dtype).min


def attention_scores(q: torch.Tensor, k: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    r"""Scaled dot products $QK^\top/\sqrt{d_k}$ (+ the additive mask): ``[batch, heads, seq, seq]``."""
    scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    return scores if mask is None else scores + mask


def softmax_by_hand(scores: torch.Tensor) -> torch.Tensor:
    """Softmax over the keys (last dim); subtracting the row max first avoids overflow."""
    shifted = scores - scores.max(dim=-1, keepdim=True).values
    e = shifted.exp()
    return e / e.sum(dim=-1, keepdim=True)


def self_attention_by_hand(layer, hidden: torch.Tensor, attention_mask: torch.Tensor | None = None):
    """``BertSelfAttention`` of one encoder layer: returns ``(context, probs)``.

    ``context`` has the shape of ``hidden`` (heads merged, before the output dense);
    ``probs`` is ``[heads, seq, seq]`` (or ``[batch, heads, seq, seq]``) with query rows.
    """
    self_attention = check_layer_module(layer).attention.self
    x, unbatched = as_batch(hidden, self_attention.query.in_features)
    mask = None
    if attention_mask is not None:
        mask = extended_attention_mask(attention_mask, x.dtype)
        if mask.shape[0] != x.shape[0] or mask.shape[-1] != x.shape[1]:
            raise ValueError(f"attention_mask shape {tuple(attention_mask.shape)} does not match hidden {tuple(hidden.shape)}.")
    heads = self_attention.num_attention_heads
    q, k, v = (split_heads(t, heads) for t in project_qkv(self_attention, x))
    probs = softmax_by_hand(attention_scores(q, k, mask))
    context = merge_heads(probs @ v)
    return (context[0], probs[0]) if unbatched else (context, probs)
