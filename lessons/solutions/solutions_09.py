"""Worked solutions for lesson 09's exercises."""

import torch
import torch.nn.functional as F


def solution_1(groups):
    """The pooled accuracy of the last layer minus the embeddings', paired per sentence, with a 95 %
    interval that resamples words: the leave-one-out nearest-centroid outcomes by hand, then
    ``cluster_bootstrap_ci`` with each sentence's word as its cluster."""
    from helpers.common.stats import cluster_bootstrap_ci

    differences, word_of = [], []
    for word, by_sense in groups.items():
        senses = list(by_sense.values())
        last = senses[0].shape[1] - 1
        for true, vecs in enumerate(senses):
            for i in range(vecs.shape[0]):
                rest = [torch.cat([v[:i], v[i + 1:]]) if s == true else v for s, v in enumerate(senses)]
                right = []
                for layer in (0, last):
                    centroids = torch.stack([r[:, layer].mean(0) for r in rest])
                    guess = F.cosine_similarity(vecs[i, layer].unsqueeze(0), centroids, dim=-1).argmax()
                    right.append(float(guess == true))
                differences.append(right[1] - right[0])
                word_of.append(word)
    return cluster_bootstrap_ci(torch.tensor(differences), word_of, seed=0)


def my_self_similarity(vectors) -> float:
    """Mean cosine over pairs of different rows of a [n, H] tensor."""
    normed = F.normalize(vectors, dim=-1)
    cos = normed @ normed.T
    n = cos.shape[0]
    return float((cos.sum() - cos.diagonal().sum()) / (n * (n - 1)))


def solution_3(groups) -> float:
    """Share of words whose raw self-similarity (both senses pooled) is lower at the last layer
    than at the layer before. The prediction is the learner's own; the measurement is this."""
    falls = []
    for by_sense in groups.values():
        uses = torch.cat(list(by_sense.values()))  # [n, L + 1, H]
        last = uses.shape[1] - 1
        sims = [my_self_similarity(uses[:, layer]) for layer in (last - 1, last)]
        falls.append(sims[1] < sims[0])
    return sum(falls) / len(falls)
