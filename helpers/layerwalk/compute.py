"""Lesson 04 numbers: a token's vector across layers -- norms, cosines, the anisotropy
baseline, PCA.

Everything works on cached :class:`~helpers.model.trace.Trace` objects. Layer ``0`` is the
embedding output, ``1 .. L`` the encoder layers."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from helpers.model.tokens import content_positions
from helpers.model.trace import Trace, check_trace, check_traces


def token_by_layer(trace: Trace, token: int) -> torch.Tensor:
    """The vector of one token after every layer: ``[L + 1, hidden]``."""
    check_trace(trace).check_token(token)
    return torch.stack([trace.hidden(layer)[token] for layer in range(trace.num_layers + 1)])


def layer_norms(trace: Trace, token: int | None = None) -> torch.Tensor:
    """L2 norm per layer, ``[L + 1]``: of one token, or averaged over all tokens when ``token`` is None."""
    check_trace(trace)
    if token is not None:
        return token_by_layer(trace, token).norm(dim=-1)
    return torch.stack([h.norm(dim=-1).mean() for h in trace.hidden_states])


def consecutive_cosines(trace: Trace, token: int | None = None) -> torch.Tensor:
    """Cosine between a token's vector after layer ``l`` and after layer ``l + 1``: ``[L]``.

    Entry ``i`` compares layer ``i`` with layer ``i + 1``. With ``token=None`` the cosine is
    computed for every token and averaged.
    """
    check_trace(trace)
    stack = torch.stack(trace.hidden_states)  # [L+1, seq, hidden]
    if token is not None:
        stack = stack[:, trace.check_token(token) : token + 1]
    return F.cosine_similarity(stack[:-1], stack[1:], dim=-1).mean(dim=-1)


def interlayer_similarity(trace: Trace, token: int | None = None) -> torch.Tensor:
    """Cosine between every pair of layers, ``[L + 1, L + 1]`` (one token, or the token average)."""
    check_trace(trace)
    stack = F.normalize(torch.stack(trace.hidden_states), dim=-1)  # [L+1, seq, hidden]
    if token is not None:
        stack = stack[:, trace.check_token(token) : token + 1]
    # [seq, L+1, hidden] @ [seq, hidden, L+1] -> per-token layer-by-layer cosines
    per_token = stack.transpose(0, 1) @ stack.permute(1, 2, 0)
    return per_token.mean(dim=0)


def random_pair_baseline(traces, n_pairs: int = 500, seed: int = 0) -> torch.Tensor:
    """Mean cosine between random pairs of tokens, per layer: ``[L + 1]``.

    The anisotropy baseline of Ethayarajh (2019): two *unrelated* tokens (drawn from two
    different sentences, special tokens excluded) already have this similarity at that
    layer, so a similarity is only meaningful above it. The same seeded pairs are used at
    every layer, so the curve shows the layers, not sampling noise.
    """
    traces = check_traces(traces)
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
    check_trace(trace)
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
