"""Worked solutions for lesson 06's exercises."""

import torch
import torch.nn.functional as F


def solution_1(groups) -> int:
    """Lowest layer whose accuracy interval overlaps the best layer's, first word: the
    leave-one-out nearest-centroid outcomes by hand, then ``accuracy_ci`` per layer."""
    from helpers.common.stats import accuracy_ci

    senses = list(next(iter(groups.values())).values())
    n_layers = senses[0].shape[1]
    outcomes = []  # one row per sentence: correct at each layer?
    for true, vecs in enumerate(senses):
        for i in range(vecs.shape[0]):
            rest = [torch.cat([v[:i], v[i + 1:]]) if s == true else v for s, v in enumerate(senses)]
            row = []
            for layer in range(n_layers):
                centroids = torch.stack([r[:, layer].mean(0) for r in rest])
                guess = F.cosine_similarity(vecs[i, layer].unsqueeze(0), centroids, dim=-1).argmax()
                row.append(bool(guess == true))
            outcomes.append(row)
    outcomes = torch.tensor(outcomes)
    accuracy = outcomes.float().mean(dim=0)
    best = int(accuracy.argmax())  # argmax returns the first (lowest) of tied maxima
    intervals = [accuracy_ci(outcomes[:, layer]) for layer in range(n_layers)]
    return next(layer for layer in range(n_layers)
                if intervals[layer].low <= intervals[best].high and intervals[best].low <= intervals[layer].high)


def my_self_similarity(vectors) -> float:
    """Mean cosine over pairs of different rows of a [n, H] tensor."""
    normed = F.normalize(vectors, dim=-1)
    cos = normed @ normed.T
    n = cos.shape[0]
    return float((cos.sum() - cos.diagonal().sum()) / (n * (n - 1)))
