"""Lesson 04 by hand: ``BertPooler``, ``tanh(W h_[CLS] + b)``."""

from __future__ import annotations

import torch


def pooler_by_hand(model, cls_vector: torch.Tensor) -> torch.Tensor:
    """``tanh(W h_[CLS] + b)`` with the weights of ``model.pooler.dense``."""
    pooler = getattr(model, "pooler", None)
    if pooler is None:
        raise ValueError("this model was loaded without a pooler (add_pooling_layer=False): it has no pooler_output.")
    if not isinstance(cls_vector, torch.Tensor) or cls_vector.shape[-1] != model.config.hidden_size:
        raise ValueError(f"cls_vector must be a tensor whose last dimension is hidden_size={model.config.hidden_size}, "
                         f"got {getattr(cls_vector, 'shape', type(cls_vector).__name__)}.")
    W, b = pooler.dense.weight, pooler.dense.bias
    return torch.tanh(cls_vector @ W.T + b)
