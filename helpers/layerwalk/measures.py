"""Lesson 07 (:mod:`helpers.layerwalk`): a token's vector across layers, measured.

* one trace -- :func:`token_by_layer`, :func:`layer_norms`, :func:`consecutive_cosines`,
  :func:`interlayer_similarity`, :func:`baseline_adjusted`, PCA
  (:func:`pca_trajectory`, :func:`pca_variance_ratio`);
* many traces -- the aggregate every per-layer story is read from: tokens of a kind
  (:data:`TOKEN_KINDS`, :func:`positions_of_kind`, :func:`pooled_vectors`) and their per-token
  measures (:func:`consecutive_cosines_per_token`, :func:`layer_norms_per_token`,
  :func:`interlayer_similarity_per_token`, :func:`interlayer_similarity_all_tokens`).

Layer ``0`` is the embedding output, ``1 .. L`` the encoder layers.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from helpers.model.tokens import content_positions
from helpers.model.trace import Trace, check_trace, check_traces, device_of


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


def baseline_adjusted(similarity: torch.Tensor, baseline: torch.Tensor) -> torch.Tensor:
    """``similarity - baseline`` per layer (Ethayarajh 2019's adjustment for anisotropy)."""
    device = device_of(similarity, baseline)
    similarity, baseline = torch.as_tensor(similarity, device=device), torch.as_tensor(baseline, device=device)
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


def pca_variance_ratio(trace: Trace, n_components: int = 2) -> torch.Tensor:
    """Share of the variance of all tokens at all layers that each of the first
    ``n_components`` principal components (those of :func:`pca_trajectory`) explains."""
    check_trace(trace)
    flat = torch.stack(trace.hidden_states).reshape(-1, trace.hidden_size)
    if not 1 <= n_components <= min(flat.shape):
        raise ValueError(f"n_components must be 1 to {min(flat.shape)}, got {n_components}.")
    singular = torch.linalg.svdvals(flat - flat.mean(dim=0))
    return (singular[:n_components] ** 2) / (singular**2).sum()


# -- over many tokens: the aggregate every per-layer story is read from (issue 13) ----------

TOKEN_KINDS = ("content", "[CLS]", "[SEP]", "all")


def positions_of_kind(trace: Trace, kind: str = "content") -> list[int]:
    """Positions of one kind of token: ``"content"`` (everything but [CLS]/[SEP]/[PAD]),
    ``"[CLS]"``, ``"[SEP]"`` or ``"all"``."""
    check_trace(trace)
    if kind == "content":
        return content_positions(trace)
    if kind == "all":
        return list(range(trace.seq_len))
    if kind in ("[CLS]", "[SEP]"):
        return [i for i, t in enumerate(trace.tokens) if t == kind]
    raise ValueError(f"kind {kind!r} is not valid: choose one of {TOKEN_KINDS}.")


def pooled_vectors(traces, kind: str = "content") -> torch.Tensor:
    """The vectors of every token of ``kind`` in ``traces``, at every layer: ``[L + 1, N, hidden]``."""
    traces = check_traces(traces)
    parts = [torch.stack(t.hidden_states)[:, positions_of_kind(t, kind)] for t in traces]
    pooled = torch.cat(parts, dim=1)
    if pooled.shape[1] == 0:
        raise ValueError(f"the traces hold no {kind!r} token: choose another kind from {TOKEN_KINDS}.")
    return pooled


def consecutive_cosines_per_token(traces, kind: str = "content", shift=None, scale=None) -> torch.Tensor:
    """:func:`consecutive_cosines` of every token of ``kind``: ``[N, L]`` (one row per token);
    ``shift``/``scale`` as in :func:`random_pair_cosines`."""
    stack = _transformed(pooled_vectors(traces, kind), shift, scale)
    return F.cosine_similarity(stack[:-1], stack[1:], dim=-1).T


def layer_norms_per_token(traces, kind: str = "content") -> torch.Tensor:
    """L2 norm of every token of ``kind`` at every layer: ``[N, L + 1]``."""
    return pooled_vectors(traces, kind).norm(dim=-1).T


def interlayer_similarity_per_token(traces, kind: str = "content") -> torch.Tensor:
    """:func:`interlayer_similarity` of every token of ``kind``: ``[N, L + 1, L + 1]``."""
    stack = F.normalize(pooled_vectors(traces, kind), dim=-1).transpose(0, 1)  # [N, L+1, hidden]
    return stack @ stack.transpose(1, 2)


def interlayer_similarity_all_tokens(trace: Trace) -> torch.Tensor:
    """Every token's layer-by-layer cosine matrix of one trace at once: ``[seq, L + 1, L + 1]``
    (what the explorer caches; one batched product instead of a loop over tokens)."""
    stack = F.normalize(torch.stack(check_trace(trace).hidden_states), dim=-1).transpose(0, 1)
    return stack @ stack.transpose(1, 2)


def _transformed(stack: torch.Tensor, shift=None, scale=None) -> torch.Tensor:
    """``(stack - shift) / scale`` per layer for ``stack [L + 1, n, hidden]`` (each ``[L + 1, hidden]``
    or None: left as it is)."""
    if shift is not None:
        stack = stack - torch.as_tensor(shift, device=stack.device)[:, None]
    if scale is not None:
        stack = stack / torch.as_tensor(scale, device=stack.device)[:, None]
    return stack
