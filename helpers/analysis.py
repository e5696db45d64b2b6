"""The numbers behind lessons 04-06: what changes from layer to layer.

Everything here works on :class:`helpers.trace.Trace` objects (one cached forward pass
each), so no function runs the model. Layers follow the course numbering: ``0`` is the
embedding output, ``1 .. L`` the encoder layers; attention exists for layers ``1 .. L``
only, so attention results have ``L`` rows where row ``i`` is layer ``i + 1``.
"""

from __future__ import annotations

import json
import unicodedata

import torch
import torch.nn.functional as F

from helpers.paths import data_file
from helpers.trace import Trace

TOKEN_CLASSES = ("[CLS]", "[SEP]", "punctuation", "other")


# -- argument checks --------------------------------------------------------
def _check_trace(trace) -> Trace:
    if not isinstance(trace, Trace):
        raise TypeError(f"expected a Trace from helpers.trace.trace_text, got {type(trace).__name__}.")
    return trace


def _check_traces(traces) -> list[Trace]:
    traces = list(traces) if not isinstance(traces, Trace) else [traces]
    if not traces:
        raise ValueError("need at least one Trace; got an empty list.")
    for t in traces:
        _check_trace(t)
    layers = {t.num_layers for t in traces}
    if len(layers) != 1:
        raise ValueError(f"all traces must come from the same model; got layer counts {sorted(layers)}.")
    return traces


# -- lesson 04: hidden states across layers -----------------------------------
def token_by_layer(trace: Trace, token: int) -> torch.Tensor:
    """The vector of one token after every layer: ``[L + 1, hidden]``."""
    _check_trace(trace).check_token(token)
    return torch.stack([trace.hidden(layer)[token] for layer in range(trace.num_layers + 1)])


def layer_norms(trace: Trace, token: int | None = None) -> torch.Tensor:
    """L2 norm per layer, ``[L + 1]``: of one token, or averaged over all tokens when ``token`` is None."""
    _check_trace(trace)
    if token is not None:
        return token_by_layer(trace, token).norm(dim=-1)
    return torch.stack([h.norm(dim=-1).mean() for h in trace.hidden_states])


def consecutive_cosines(trace: Trace, token: int | None = None) -> torch.Tensor:
    """Cosine between a token's vector after layer ``l`` and after layer ``l + 1``: ``[L]``.

    Entry ``i`` compares layer ``i`` with layer ``i + 1``. With ``token=None`` the cosine is
    computed for every token and averaged.
    """
    _check_trace(trace)
    stack = torch.stack(trace.hidden_states)  # [L+1, seq, hidden]
    if token is not None:
        stack = stack[:, trace.check_token(token) : token + 1]
    return F.cosine_similarity(stack[:-1], stack[1:], dim=-1).mean(dim=-1)


def interlayer_similarity(trace: Trace, token: int | None = None) -> torch.Tensor:
    """Cosine between every pair of layers, ``[L + 1, L + 1]`` (one token, or the token average)."""
    _check_trace(trace)
    stack = F.normalize(torch.stack(trace.hidden_states), dim=-1)  # [L+1, seq, hidden]
    if token is not None:
        stack = stack[:, trace.check_token(token) : token + 1]
    # [seq, L+1, hidden] @ [seq, hidden, L+1] -> per-token layer-by-layer cosines
    per_token = stack.transpose(0, 1) @ stack.permute(1, 2, 0)
    return per_token.mean(dim=0)


def content_positions(trace: Trace) -> list[int]:
    """Positions of the real tokens: everything except [CLS], [SEP] and padding."""
    specials = {"[CLS]", "[SEP]", "[PAD]"}
    return [i for i, t in enumerate(_check_trace(trace).tokens) if t not in specials]


def random_pair_baseline(traces, n_pairs: int = 500, seed: int = 0) -> torch.Tensor:
    """Mean cosine between random pairs of tokens, per layer: ``[L + 1]``.

    The anisotropy baseline of Ethayarajh (2019): two *unrelated* tokens (drawn from two
    different sentences, special tokens excluded) already have this similarity at that
    layer, so a similarity is only meaningful above it. The same seeded pairs are used at
    every layer, so the curve shows the layers, not sampling noise.
    """
    traces = _check_traces(traces)
    if len(traces) < 2:
        raise ValueError("the baseline pairs tokens from different sentences: give at least 2 traces.")
    if not isinstance(n_pairs, int) or n_pairs < 1:
        raise ValueError(f"n_pairs must be a positive int, got {n_pairs!r}.")
    pool = [(s, p) for s, t in enumerate(traces) for p in content_positions(t)]
    gen = torch.Generator().manual_seed(seed)
    pairs = []
    while len(pairs) < n_pairs:
        a, b = torch.randint(len(pool), (2,), generator=gen).tolist()
        if pool[a][0] != pool[b][0]:
            pairs.append((pool[a], pool[b]))
    result = []
    for layer in range(traces[0].num_layers + 1):
        left = torch.stack([traces[s].hidden(layer)[p] for (s, p), _ in pairs])
        right = torch.stack([traces[s].hidden(layer)[p] for _, (s, p) in pairs])
        result.append(F.cosine_similarity(left, right, dim=-1).mean())
    return torch.stack(result)


def baseline_adjusted(similarity: torch.Tensor, baseline: torch.Tensor) -> torch.Tensor:
    """``similarity - baseline`` per layer (Ethayarajh 2019's adjustment for anisotropy)."""
    similarity, baseline = torch.as_tensor(similarity), torch.as_tensor(baseline)
    if similarity.shape[-1] != baseline.shape[-1]:
        raise ValueError(
            f"similarity has {similarity.shape[-1]} layers but baseline has {baseline.shape[-1]}: "
            "compute both on the same model."
        )
    return similarity - baseline


def pca_trajectory(trace: Trace, tokens: list[int], n_components: int = 2) -> torch.Tensor:
    """Project the chosen tokens' vectors at every layer onto their top principal components.

    The components are fitted on the vectors of *all* tokens at *all* layers (so the picture
    is not tuned to the chosen tokens). Returns ``[len(tokens), L + 1, n_components]``.
    Signs are fixed so the largest-magnitude loading of each component is positive
    (SVD signs are otherwise arbitrary).
    """
    _check_trace(trace)
    if not tokens:
        raise ValueError("tokens must list at least one token position.")
    for t in tokens:
        trace.check_token(t)
    stack = torch.stack(trace.hidden_states)  # [L+1, seq, hidden]
    flat = stack.reshape(-1, stack.shape[-1])
    if not 1 <= n_components <= min(flat.shape):
        raise ValueError(f"n_components must be 1 to {min(flat.shape)}, got {n_components}.")
    mean = flat.mean(dim=0)
    _, _, vh = torch.linalg.svd(flat - mean, full_matrices=False)
    comps = vh[:n_components]
    signs = torch.sign(comps.gather(1, comps.abs().argmax(dim=1, keepdim=True)))
    comps = comps * signs
    chosen = stack[:, tokens].transpose(0, 1)  # [k, L+1, hidden]
    return (chosen - mean) @ comps.T


# -- lesson 05: attention ------------------------------------------------------
def token_class(token: str) -> str:
    """One of :data:`TOKEN_CLASSES` for a WordPiece token string."""
    if token == "[CLS]":
        return "[CLS]"
    if token == "[SEP]":
        return "[SEP]"
    text = token[2:] if token.startswith("##") else token
    if text and all(unicodedata.category(ch).startswith("P") for ch in text):
        return "punctuation"
    return "other"


def attention_shares(trace: Trace) -> torch.Tensor:
    """Share of attention landing on each token class, per layer: ``[L, 4]``.

    For every head and every query token the attention row sums to 1; we add up the
    weights on the keys of each class (:data:`TOKEN_CLASSES`) and average over queries
    and heads, so each row sums to 1. Row ``i`` is layer ``i + 1``.
    """
    _check_trace(trace)
    classes = [token_class(t) for t in trace.tokens]
    onehot = torch.tensor([[c == k for k in TOKEN_CLASSES] for c in classes], dtype=torch.float32)
    att = torch.stack(trace.attentions)  # [L, heads, q, k]
    return (att @ onehot).mean(dim=(1, 2))


def mean_attention_shares(traces) -> torch.Tensor:
    """:func:`attention_shares` averaged over several sentences: ``[L, 4]``."""
    return torch.stack([attention_shares(t) for t in _check_traces(traces)]).mean(dim=0)


def cls_attention(trace: Trace) -> torch.Tensor:
    """What [CLS] (query position 0) attends to, per layer and head: ``[L, heads, seq]``."""
    return torch.stack(_check_trace(trace).attentions)[:, :, 0, :]


def attention_entropy(trace: Trace) -> torch.Tensor:
    """Entropy (nats) of each head's attention rows, averaged over queries: ``[L, heads]``.

    Low entropy: the head looks at few tokens; ``log(seq_len)``: it spreads evenly.
    """
    att = torch.stack(_check_trace(trace).attentions)
    return -(att * torch.log(att.clamp_min(1e-12))).sum(dim=-1).mean(dim=-1)


def offset_head_scores(trace: Trace, offset: int) -> torch.Tensor:
    """Mean attention from position ``i`` to ``i + offset``: ``[L, heads]``.

    ``offset=-1`` scores previous-token heads, ``offset=+1`` next-token heads; queries
    whose ``i + offset`` falls outside the sequence are left out.
    """
    _check_trace(trace)
    if isinstance(offset, bool) or not isinstance(offset, int) or offset == 0:
        raise ValueError(f"offset must be a non-zero int such as -1 (previous) or +1 (next), got {offset!r}.")
    n = trace.seq_len
    if abs(offset) >= n:
        raise ValueError(f"offset {offset} is too large for a sequence of {n} tokens.")
    att = torch.stack(trace.attentions)
    queries = torch.arange(max(0, -offset), min(n, n - offset))
    return att[:, :, queries, queries + offset].mean(dim=-1)


def best_head(scores: torch.Tensor) -> tuple[int, int, float]:
    """``(layer, head, score)`` of the highest entry of an ``[L, heads]`` table; layer is 1-based."""
    scores = torch.as_tensor(scores)
    if scores.ndim != 2:
        raise ValueError(f"scores must be an [layers, heads] table, got shape {tuple(scores.shape)}.")
    flat = int(scores.argmax())
    layer, head = divmod(flat, scores.shape[1])
    return layer + 1, head, float(scores[layer, head])


# -- lesson 06: meaning in context ----------------------------------------------
def load_polysemy(name: str = "polysemy.json") -> dict[str, dict[str, list[str]]]:
    """``{word: {sense: [sentence, ...]}}`` from ``data/``."""
    with open(data_file(name), encoding="utf-8") as fh:
        return json.load(fh)


def load_sentences(name: str = "attention_sentences.txt") -> list[str]:
    """Non-empty lines of a text file in ``data/``."""
    return [line.strip() for line in data_file(name).read_text(encoding="utf-8").splitlines() if line.strip()]


def is_unknown(tokenizer, word: str) -> bool:
    """True when the tokenizer maps (part of) ``word`` to its unknown token."""
    return tokenizer.unk_token in tokenizer.tokenize(word)


def word_by_layer(trace: Trace, word: str, occurrence: int = 0) -> torch.Tensor:
    """The vector of ``word`` after every layer, ``[L + 1, hidden]``.

    A word split into several WordPieces is represented by the mean of its pieces.
    """
    span = _check_trace(trace).find_word(word, occurrence)
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


def sense_separation(groups: dict) -> torch.Tensor:
    """Leave-one-out nearest-centroid accuracy per layer: ``[layers]``.

    For every sentence, the sense centroids are recomputed without it, and it is assigned
    to the centroid with the highest cosine. Chance level is ``1 / n_senses``.
    """
    groups = _check_groups(groups)
    senses = list(groups)
    n_layers = next(iter(groups.values())).shape[1]
    correct = torch.zeros(n_layers)
    total = 0
    for true_idx, sense in enumerate(senses):
        vecs = groups[sense]
        for i in range(vecs.shape[0]):
            keep = torch.arange(vecs.shape[0]) != i
            centroids = torch.stack(
                [groups[s][keep].mean(0) if s == sense else groups[s].mean(0) for s in senses]
            )  # [senses, layers, hidden]
            cos = F.cosine_similarity(vecs[i].unsqueeze(0), centroids, dim=-1)  # [senses, layers]
            correct += (cos.argmax(dim=0) == true_idx).float()
            total += 1
    return correct / total


def nearest_neighbours(trace: Trace, token: int, layer: int, k: int = 3) -> list[tuple[int, str, float]]:
    """The ``k`` tokens of the same sentence closest (cosine) to ``token`` at ``layer``.

    Returns ``[(position, token, cosine), ...]``, best first, the token itself excluded.
    """
    _check_trace(trace).check_token(token)
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k < trace.seq_len:
        raise ValueError(f"k must be an int from 1 to {trace.seq_len - 1} (the other tokens), got {k!r}.")
    hidden = trace.hidden(layer)
    cos = F.cosine_similarity(hidden[token].unsqueeze(0), hidden, dim=-1)
    cos[token] = -float("inf")
    top = cos.topk(k)
    return [(int(i), trace.tokens[int(i)], float(c)) for c, i in zip(top.values, top.indices)]


def longest_word(trace: Trace, tokenizer) -> str:
    """The word of the input that splits into the most WordPieces (ties: the longest string)."""
    words = _check_trace(trace).words()
    return max(words, key=lambda w: (len(tokenizer.tokenize(w)), len(w)))
