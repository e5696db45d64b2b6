"""Argument checks shared by the by-hand rebuilds: each says what was wrong and what is valid."""

from __future__ import annotations

import torch


def check_bert(model) -> None:
    from transformers import BertModel

    if not isinstance(model, BertModel):
        raise TypeError(
            f"model must be a transformers BertModel (e.g. from helpers.model.loading.load_model), got {type(model).__name__}."
        )


def check_layer_module(layer):
    """Accept a ``BertLayer`` (``model.encoder.layer[i]``) and say so clearly otherwise."""
    from transformers.models.bert.modeling_bert import BertLayer

    if not isinstance(layer, BertLayer):
        raise TypeError(
            f"layer must be one encoder layer, model.encoder.layer[i] (a BertLayer), got {type(layer).__name__}."
        )
    return layer


def as_batch(hidden, hidden_size: int, name: str = "hidden"):
    """Return ``(hidden as [batch, seq, hidden], was_unbatched)`` after checking the shape."""
    if not isinstance(hidden, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(hidden).__name__}.")
    if hidden.dim() not in (2, 3) or hidden.shape[-1] != hidden_size:
        raise ValueError(
            f"{name} has shape {tuple(hidden.shape)}; expected [seq, {hidden_size}] or [batch, seq, {hidden_size}] "
            "(the last dimension is config.hidden_size)."
        )
    return (hidden.unsqueeze(0), True) if hidden.dim() == 2 else (hidden, False)


def as_ids(ids, name: str, vocab: int | None = None):
    if not isinstance(ids, torch.Tensor) or ids.dtype not in (torch.long, torch.int, torch.int32):
        raise TypeError(f"{name} must be an integer torch.Tensor of shape [seq] or [batch, seq], got {ids!r:.80}.")
    if ids.dim() not in (1, 2):
        raise ValueError(f"{name} must have shape [seq] or [batch, seq], got {tuple(ids.shape)}.")
    if vocab is not None and ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= vocab):
        raise ValueError(f"{name} holds ids outside 0..{vocab - 1}.")
    return (ids.unsqueeze(0), True) if ids.dim() == 1 else (ids, False)
