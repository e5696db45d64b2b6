"""Worked solutions for lesson 04's exercises."""

import torch


def solution_1(trace) -> int:
    """The transition l -> l + 1 with the lowest cosine for [CLS] (token 0)."""
    vectors = torch.stack([trace.hidden(layer)[0] for layer in range(trace.num_layers + 1)])
    cos = torch.nn.functional.cosine_similarity(vectors[:-1], vectors[1:], dim=-1)
    return int(cos.argmin())


def my_norms(trace, token) -> torch.Tensor:
    """L2 norm of one token's vector at every layer, [L + 1]."""
    return torch.stack([trace.hidden(layer)[token].pow(2).sum().sqrt() for layer in range(trace.num_layers + 1)])


def solution_3(trace, token, baseline) -> float:
    """Cosine(embedding, last layer) minus the mean of those layers' random-pair baselines."""
    L = trace.num_layers
    first, last = trace.hidden(0)[token], trace.hidden(L)[token]
    raw = torch.nn.functional.cosine_similarity(first, last, dim=0)
    return float(raw - (baseline[0] + baseline[L]) / 2)
