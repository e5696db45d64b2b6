"""Worked solutions for lesson 02's exercises."""

import math

import torch


def solution_1(model, trace, layer: int, head: int) -> torch.Tensor:
    """One head's attention as a left-to-right model would compute it: later keys hidden."""
    self_attention = model.encoder.layer[layer - 1].attention.self
    x = trace.hidden(layer - 1)  # layer l reads hidden_states[l - 1]
    d = model.config.hidden_size // model.config.num_attention_heads
    cols = slice(head * d, (head + 1) * d)  # this head's slice of the projections
    with torch.no_grad():
        q = x @ self_attention.query.weight[cols].T + self_attention.query.bias[cols]
        k = x @ self_attention.key.weight[cols].T + self_attention.key.bias[cols]
        scores = q @ k.T / math.sqrt(d)
        later = torch.ones_like(scores, dtype=torch.bool).triu(1)  # key after the query
        return torch.softmax(scores.masked_fill(later, float("-inf")), dim=-1)


def solution_2(trace, layer: int, head: int) -> int:
    """The key [CLS] (row 0) attends to most."""
    return int(trace.attention(layer, head)[0].argmax())


def solution_3(model, trace) -> float:
    """Layer 1 without the 1/sqrt(d): mean row entropy (nats) of softmax(Q K^T)."""
    self_attention = model.encoder.layer[0].attention.self
    x = trace.hidden(0)
    heads, d = model.config.num_attention_heads, model.config.hidden_size // model.config.num_attention_heads
    with torch.no_grad():
        q = self_attention.query(x).view(-1, heads, d).transpose(0, 1)  # [heads, seq, d]
        k = self_attention.key(x).view(-1, heads, d).transpose(0, 1)
        p = torch.softmax(q @ k.transpose(-1, -2), dim=-1)  # no / sqrt(d)
        return -(p * torch.log(p.clamp_min(1e-30))).sum(dim=-1).mean().item()
# The prediction: "lower". Without the division every score is sqrt(d) times larger, and a
# softmax of larger scores is sharper (more weight on the top key), so every row's entropy
# goes down (or stays the same for a row whose scores are all equal).
