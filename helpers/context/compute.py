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


# -- what a leave-one-out accuracy looks like with no signal: a label-permutation null --------

def permutation_accuracy(groups: dict, n_perm: int = 200, seed: int = 0) -> torch.Tensor:
    """Leave-one-out nearest-centroid accuracy (:func:`sense_separation`) after shuffling the
    sense labels, ``[n_perm, layers]``: what the same rule scores on these very vectors when the
    labels carry no information. Use its spread instead of a flat ``1 / n_senses`` line: with
    no signal, a sentence's own centroid rests on one sentence fewer than the other senses',
    so it is noisier and, for vectors that share a mean (as a layer's vectors do), on average
    a little farther away: the rule tends to score below chance. A confound (e.g. the word's
    position) shows up as a score outside this spread. Each shuffle keeps the number of sentences per
    sense; all shuffles are seeded."""
    groups = _check_groups(groups)
    if isinstance(n_perm, bool) or not isinstance(n_perm, int) or n_perm < 1:
        raise ValueError(f"n_perm must be a positive int, got {n_perm!r}.")
    vecs = torch.cat(list(groups.values()))  # [n, layers, hidden]
    sizes = [v.shape[0] for v in groups.values()]
    labels = torch.cat([torch.full((s,), i) for i, s in enumerate(sizes)])
    gen = torch.Generator().manual_seed(seed)
    perms = torch.stack([labels[torch.randperm(len(labels), generator=gen)] for _ in range(n_perm)])  # [P, n]
    return _loo_outcomes(vecs, perms, len(sizes)).float().mean(dim=1)


def _loo_outcomes(vecs: torch.Tensor, labels: torch.Tensor, n_senses: int) -> torch.Tensor:
    """Leave-one-out nearest-centroid outcomes for every row of ``labels [P, n]`` at once:
    ``[P, n, layers]`` bool. Sentence ``i``'s own centroid is ``(sum of its sense - h_i) / (count - 1)``."""
    onehot = torch.nn.functional.one_hot(labels, n_senses).to(vecs.dtype)  # [P, n, S]
    sums = torch.einsum("pns,nld->psld", onehot, vecs)  # [P, S, layers, hidden]
    counts = onehot.sum(dim=1)  # [P, S]
    own = onehot[..., None, None]  # [P, n, S, 1, 1]
    centroids = (sums[:, None] - own * vecs[None, :, None]) / (counts[:, None, :, None, None] - own)
    cos = F.cosine_similarity(vecs[None, :, None], centroids, dim=-1)  # [P, n, S, layers]
    return cos.argmax(dim=2) == labels[..., None]


# -- one use of a word against the senses' centroids, with an interval ------------------------

def centroid_margin(vector: torch.Tensor, groups: dict, n_boot: int = 1000, seed: int = 0) -> list:
    """``cos(vector, centroid of sense 1) - cos(vector, centroid of sense 2)`` per layer, with a
    bootstrap 95 % interval that resamples the sentences of each sense (the centroids rest on a
    handful of sentences each): a list of :class:`~helpers.common.stats.Interval`, one per layer.
    A layer whose interval contains 0 cannot say which sense is nearer. Exactly two senses."""
    from helpers.common.stats import Interval

    groups = _check_groups(groups)
    if len(groups) != 2:
        raise ValueError(f"a margin compares exactly two senses; got {len(groups)}: {list(groups)}.")
    if isinstance(n_boot, bool) or not isinstance(n_boot, int) or n_boot < 100:
        raise ValueError(f"n_boot must be an int >= 100, got {n_boot!r}.")
    vector = torch.as_tensor(vector)
    a, b = groups.values()
    if vector.shape != a.shape[1:]:
        raise ValueError(f"vector must be [layers, hidden] = {tuple(a.shape[1:])}, got {tuple(vector.shape)}.")
    gen = torch.Generator().manual_seed(seed)

    def margin(ca, cb):  # [..., layers, hidden] centroids -> [..., layers]
        return F.cosine_similarity(vector, ca, dim=-1) - F.cosine_similarity(vector, cb, dim=-1)

    boot_a = a[torch.randint(len(a), (n_boot, len(a)), generator=gen)].mean(dim=1)  # [n_boot, layers, hidden]
    boot_b = b[torch.randint(len(b), (n_boot, len(b)), generator=gen)].mean(dim=1)
    boots = margin(boot_a, boot_b)  # [n_boot, layers]
    low, high = torch.quantile(boots.double(), torch.tensor([0.025, 0.975], dtype=torch.float64), dim=0)
    est = margin(a.mean(0), b.mean(0))
    return [Interval(float(e), float(lo), float(hi)) for e, lo, hi in zip(est, low, high)]


# -- nearest neighbours of a whole word (the mean of its pieces), its own pieces left out ----

def word_neighbours(trace: Trace, word: str, layer: int, k: int = 3, occurrence: int = 0) -> list[tuple[int, str, float]]:
    """The ``k`` tokens of the sentence closest (cosine) to ``word`` at ``layer``, the word being
    the mean of its pieces (as :func:`word_by_layer`) and its own pieces left out (a piece of
    the word says nothing about its neighbours). ``[(position, token, cosine), ...]``, best first."""
    span = check_trace(trace).find_word(word, occurrence)
    trace.check_layer(layer)
    others = [i for i in range(trace.seq_len) if i not in span.positions]
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= len(others):
        raise ValueError(f"k must be an int from 1 to {len(others)} (the tokens outside the word), got {k!r}.")
    hidden = trace.hidden(layer)
    vec = hidden[span.positions].mean(dim=0)
    cos = F.cosine_similarity(vec.unsqueeze(0), hidden[others], dim=-1)
    top = cos.topk(k)
    return [(others[int(i)], trace.tokens[others[int(i)]], float(c)) for c, i in zip(top.values, top.indices)]


# -- lesson 06's "claims tested" table --------------------------------------------------------

def claim_rows(*, raw_self, adj_self, gap, accuracy, chance_null, n_senses: int) -> list[tuple[str, str, str]]:
    """Lesson 06's claims table: ``(popular claim, this model's live numbers and verdict,
    published finding with paper and model)``; every verdict is computed.

    ``raw_self``/``adj_self``: :class:`~helpers.layerwalk.compute.LayerRanking` (lowest first)
    of the raw and baseline-adjusted self-similarity; ``gap``: ranking (highest first) of the
    within-minus-across gap; ``accuracy``: ranking (highest first) of the pooled accuracy;
    ``chance_null``: the pooled permutation accuracy at layer 0 as an Interval (mean and 95 %
    range of the shuffles)."""
    L = len(raw_self.intervals) - 1

    def layers(ranking):
        return [("emb" if j == 0 else j) for j in ranking.tied]

    emb_acc = accuracy.intervals[0]
    emb_vs_null = ("inside" if chance_null.low <= emb_acc.estimate <= chance_null.high else "outside")
    return [
        ("Self-similarity falls with depth",
         f"raw: lowest at layers {layers(raw_self)} (last layer {'among' if L in raw_self.tied else 'not among'} "
         f"them); minus the random-pair baseline: lowest at layers {layers(adj_self)} (last layer "
         f"{'among' if L in adj_self.tied else 'not among'} them)",
         "Ethayarajh 2019 (BERT-base): self-similarity is lowest in the upper layers"),
        ("Senses separate in the upper layers",
         f"pooled accuracy: emb {emb_acc.percent(0)}, best at layers {layers(accuracy)} "
         f"({accuracy.intervals[accuracy.extreme].percent(0)}); the embeddings "
         f"{'are' if 0 in accuracy.tied else 'are not'} among the best",
         "Coenen et al. 2019 (BERT-base): a nearest-centroid word-sense classifier reaches F1 71.1, its "
         "accuracy rising through the layers"),
        ("Same-sense uses are closer than different-sense uses",
         f"within- minus across-sense cosine largest at layers {layers(gap)} ({gap.intervals[gap.extreme]}); "
         f"at the embeddings {gap.intervals[0]}: "
         + ("a gap above 0 in every layer past the embeddings" if all(i.low > 0 for i in gap.intervals[1:])
            else "not above 0 in every layer past the embeddings"),
         "Coenen et al. 2019 (BERT-base): the uses of a word form well-separated clusters by sense"),
        ("The embedding layer knows nothing about the sense",
         f"emb accuracy {emb_acc.percent(0)}; shuffled labels give {chance_null.percent(0)} (mean and 95 % range; "
         f"chance {1 / n_senses:.0%}): {emb_vs_null} the shuffled range",
         "by construction: layer 0 is token + position + segment embedding, so only the word's position "
         "can separate its uses"),
    ]
