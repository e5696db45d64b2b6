"""Worked solutions for lesson 07's exercises."""

import torch


def solution_1(trace) -> int:
    """The transition l -> l + 1 with the lowest cosine for [CLS] (token 0)."""
    vectors = torch.stack([trace.hidden(layer)[0] for layer in range(trace.num_layers + 1)])
    cos = torch.nn.functional.cosine_similarity(vectors[:-1], vectors[1:], dim=-1)
    return int(cos.argmin())


def my_norms(trace, token) -> torch.Tensor:
    """L2 norm of one token's vector at every layer, [L + 1]."""
    return torch.stack([trace.hidden(layer)[token].pow(2).sum().sqrt() for layer in range(trace.num_layers + 1)])


def solution_3(trace, token, others) -> float:
    """Cosine(layer 1, last layer) of ``token`` minus the matching control: a random content
    token at layer 1 against a different random one (another sentence) at layer L."""
    from helpers.layerwalk import compute

    L = trace.num_layers
    raw = torch.nn.functional.cosine_similarity(trace.hidden(1)[token], trace.hidden(L)[token], dim=0)
    # gap = L - 1 layers apart; column l pairs layer l with layer l + gap, so column 1 is layer 1 vs L
    control = compute.random_pair_cosines(others, n_pairs=500, seed=0, gap=L - 1)[:, 1].mean()
    return float(raw - control)


def solution_4(others) -> float:
    """Mean-centred minus raw random-pair cosine at the last layer (500 pairs, seed 0).
    The prediction is the learner's own; the measurement is this number."""
    from helpers.layerwalk import compute

    mean, _ = compute.layer_mean_std(others, "content")
    raw = compute.random_pair_cosines(others, n_pairs=500, seed=0)
    centred = compute.random_pair_cosines(others, n_pairs=500, seed=0, shift=mean)
    return float(centred[:, -1].mean() - raw[:, -1].mean())
