"""Worked solutions for lesson 05's exercises."""

import torch


def solution_1(trace) -> float:
    """Share of the last layer's attention (heads and queries averaged) on [SEP] tokens."""
    att = trace.attention(trace.num_layers)  # [heads, q, k]
    sep = [i for i, tok in enumerate(trace.tokens) if tok == "[SEP]"]
    return float(att[..., sep].sum(dim=-1).mean())


def solution_2(trace) -> tuple[int, int]:
    """(layer, head), layers from 1, with the highest mean attention from i to i - 2."""
    best, where = -1.0, None
    for layer in range(1, trace.num_layers + 1):
        for head in range(trace.num_heads):
            a = trace.attention(layer, head)
            score = torch.stack([a[i, i - 2] for i in range(2, trace.seq_len)]).mean().item()
            if score > best:
                best, where = score, (layer, head)
    return where
