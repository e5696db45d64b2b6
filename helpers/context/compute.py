"""Lesson 06 numbers: a word's vector in different contexts -- self-similarity, sense
separation, nearest neighbours."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from helpers.model.trace import Trace, check_trace


def word_by_layer(trace: Trace, word: str, occurrence: int = 0) -> torch.Tensor:
    """The vector of ``word`` after every layer, ``[L + 1, hidden]``.

    A word split into several WordPieces is represented by the mean of its pieces.
    """
    span = check_trace(trace).find_word(word, occurrence)
    stack = torch.stack(trace.hidden_states)  # [L+1, seq, hidden]
    return stack[:, span.positions].mean(dim=1)


def _check_groups(groups: dict) -> dict[str, torch.Tensor]:
    if not isinstance(groups, dict) or len(groups) < 2:
        raise ValueError("give a dict {sense: tensor [n, L+1, hidden]} with at least two senses.")
    out = {}
    for sense, vecs in groups.items():
        vecs = torch.as_tensor(vecs)
        if vecs.ndim != 3 or vecs.shape[0] < 2:
            raise ValueError(
                f"sense {sense!r}: expected a tensor [n_sentences >= 2, layers, hidden], got shape {tuple(vecs.shape)}."
            )
        out[sense] = vecs
    if len({v.shape[1:] for v in out.values()}) != 1:
        raise ValueError("all senses must have the same [layers, hidden] shape.")
    return out


def _pairwise_cos(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``[layers, n_a, n_b]`` cosines between rows of ``a [n_a, layers, h]`` and ``b``."""
    a, b = F.normalize(a, dim=-1).transpose(0, 1), F.normalize(b, dim=-1).transpose(0, 1)
    return a @ b.transpose(1, 2)


def self_similarity(vectors: torch.Tensor) -> torch.Tensor:
    """Mean cosine between a word's vectors in different contexts, per layer: ``[layers]``.

    ``vectors`` is ``[n_contexts, layers, hidden]``; the diagonal (a context with itself) is
    left out. This is Ethayarajh's (2019) *self-similarity*.
    """
    vectors = torch.as_tensor(vectors)
    if vectors.ndim != 3 or vectors.shape[0] < 2:
        raise ValueError(f"vectors must be [n_contexts >= 2, layers, hidden], got shape {tuple(vectors.shape)}.")
    n = vectors.shape[0]
    cos = _pairwise_cos(vectors, vectors)
    off_diag = ~torch.eye(n, dtype=torch.bool)
    return cos[:, off_diag].mean(dim=-1)


def within_across_similarity(groups: dict) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean cosine between uses of the *same* sense and between *different* senses, per layer."""
    groups = _check_groups(groups)
    within = torch.stack([self_similarity(v) for v in groups.values()]).mean(dim=0)
    senses = list(groups)
    across = [
        _pairwise_cos(groups[a], groups[b]).mean(dim=(1, 2))
        for i, a in enumerate(senses)
        for b in senses[i + 1 :]
    ]
    return within, torch.stack(across).mean(dim=0)


def sense_separation_outcomes(groups: dict) -> torch.Tensor:
    """One row per sentence, one column per layer: was the sentence assigned to its own sense
    by the leave-one-out nearest-centroid rule? ``[n_sentences, layers]`` bool (senses in
    order). The per-item outcomes give an accuracy its bootstrap interval."""
    groups = _check_groups(groups)
    senses = list(groups)
    rows = []
    for true_idx, sense in enumerate(senses):
        vecs = groups[sense]
        for i in range(vecs.shape[0]):
            keep = torch.arange(vecs.shape[0]) != i
            centroids = torch.stack(
                [groups[s][keep].mean(0) if s == sense else groups[s].mean(0) for s in senses]
            )  # [senses, layers, hidden]
            cos = F.cosine_similarity(vecs[i].unsqueeze(0), centroids, dim=-1)  # [senses, layers]
            rows.append(cos.argmax(dim=0) == true_idx)
    return torch.stack(rows)


def sense_separation(groups: dict) -> torch.Tensor:
    """Leave-one-out nearest-centroid accuracy per layer: ``[layers]``.

    For every sentence, the sense centroids are recomputed without it, and it is assigned
    to the centroid with the highest cosine. Chance level is ``1 / n_senses``.
    """
    return sense_separation_outcomes(groups).float().mean(dim=0)


def within_across_gap(groups: dict) -> torch.Tensor:
    """Within-sense minus across-sense mean cosine, per layer: ``[layers]``."""
    within, across = within_across_similarity(groups)
    return within - across


def centroid_similarity(vector: torch.Tensor, groups: dict) -> dict[str, torch.Tensor]:
    """Cosine between one use of a word (``[layers, hidden]``) and each sense's centroid:
    ``{sense: [layers]}``."""
    groups = _check_groups(groups)
    vector = torch.as_tensor(vector)
    shape = next(iter(groups.values())).shape[1:]
    if vector.shape != shape:
        raise ValueError(f"vector must be [layers, hidden] = {tuple(shape)}, got {tuple(vector.shape)}.")
    return {sense: F.cosine_similarity(vector, vecs.mean(0), dim=-1) for sense, vecs in groups.items()}


def nearest_neighbours(trace: Trace, token: int, layer: int, k: int = 3) -> list[tuple[int, str, float]]:
    """The ``k`` tokens of the same sentence closest (cosine) to ``token`` at ``layer``.

    Returns ``[(position, token, cosine), ...]``, best first, the token itself excluded.
    """
    check_trace(trace).check_token(token)
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k < trace.seq_len:
        raise ValueError(f"k must be an int from 1 to {trace.seq_len - 1} (the other tokens), got {k!r}.")
    hidden = trace.hidden(layer)
    cos = F.cosine_similarity(hidden[token].unsqueeze(0), hidden, dim=-1)
    cos[token] = -float("inf")
    top = cos.topk(k)
    return [(int(i), trace.tokens[int(i)], float(c)) for c, i in zip(top.values, top.indices)]
