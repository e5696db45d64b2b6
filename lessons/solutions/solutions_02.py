"""Worked solutions for lesson 02's exercises."""

import math

import torch


def solution_1(model, trace, layer: int, head: int) -> torch.Tensor:
    """One head's attention probabilities, from the layer's input hidden states."""
    self_attention = model.encoder.layer[layer - 1].attention.self
    x = trace.hidden(layer - 1)  # layer l reads hidden_states[l - 1]
    d = model.config.hidden_size // model.config.num_attention_heads
    cols = slice(head * d, (head + 1) * d)  # this head's slice of the projections
    with torch.no_grad():
        q = x @ self_attention.query.weight[cols].T + self_attention.query.bias[cols]
        k = x @ self_attention.key.weight[cols].T + self_attention.key.bias[cols]
        return torch.softmax(q @ k.T / math.sqrt(d), dim=-1)


def solution_2(trace, layer: int, head: int) -> int:
    """The key [CLS] (row 0) attends to most."""
    return int(trace.attention(layer, head)[0].argmax())
