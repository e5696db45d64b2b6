"""Lesson 07 (:mod:`helpers.layerwalk`): norms and outlier dimensions: every hidden state is the output of a
LayerNorm.

* :func:`final_layer_norms`, :func:`layer_norm_inputs`, :func:`norm_parts` -- the LayerNorm norm
  decomposed;
* outlier dimensions -- :func:`energy_by_dimension`, :func:`top_dimensions`,
  :func:`layer_norm_outliers`, counted per dimension (:func:`outlier_counts`,
  :func:`outliers_in_every_layer`; the sentence: ``findings.outlier_sentence``); :func:`path_lengths`;
  :func:`cluster_labels` (the sentence of every token: the unit to resample).
"""

from __future__ import annotations

import numpy as np
import torch

from helpers.layerwalk.measures import pooled_vectors, positions_of_kind
from helpers.model.trace import check_traces, device_of


# -- norms: every hidden state is the output of a LayerNorm ---------------------------------

def final_layer_norms(model) -> list:
    """The LayerNorm that produces each hidden state, layers ``0 .. L``: the embeddings'
    ``embeddings.LayerNorm``, then each layer's ``output.LayerNorm`` (BERT is post-LN)."""
    bert = getattr(model, "bert", model)
    if not hasattr(bert, "embeddings") or not hasattr(bert, "encoder"):
        raise TypeError(f"expected a BertModel (or a model with a .bert), got {type(model).__name__}.")
    return [bert.embeddings.LayerNorm] + [layer.output.LayerNorm for layer in bert.encoder.layer]


def layer_norm_inputs(tokenizer, model, text: str, text_pair: str | None = None) -> list[torch.Tensor]:
    """Run the model once with forward hooks and return what each final LayerNorm received,
    ``[seq, hidden]`` for layers ``0 .. L`` (the residual sum before normalisation)."""
    from helpers.model.trace import encode

    captured = {}
    hooks = [ln.register_forward_hook(lambda mod, args, out, i=i: captured.__setitem__(i, args[0][0].detach()))
             for i, ln in enumerate(final_layer_norms(model))]
    try:
        enc, _ = encode(tokenizer, model, text, text_pair)
        enc.pop("offset_mapping")
        with torch.no_grad():
            model(**enc)
    finally:
        for hook in hooks:
            hook.remove()
    return [captured[i] for i in range(len(captured))]


def norm_parts(traces, model, kind: str = "content") -> dict[str, torch.Tensor]:
    """Split every token's length into what the LayerNorm that made it contributes.

    Each hidden state is ``h = gamma * z_hat + beta`` with ``z_hat`` of mean 0 and variance 1
    over the hidden dimension, so ``||z_hat|| = sqrt(H)`` for *every* token. With
    ``s = gamma * z_hat = h - beta`` (no division needed):

    ``||h||^2 = ||s||^2 + 2 <s, beta> + ||beta||^2``.

    Returns ``[N, L + 1]`` tensors ``norm`` (||h||), ``scaled`` (||gamma * z_hat||),
    ``cross`` (2 <s, beta>) and ``[L + 1]`` tensors ``gamma`` (||gamma||: what ``||s||``
    would be if ``z_hat`` spread its energy evenly over the dimensions) and ``beta`` (||beta||).
    """
    stack = pooled_vectors(traces, kind)  # [L+1, N, hidden]
    lns = final_layer_norms(model)
    if len(lns) != stack.shape[0]:
        raise ValueError(f"the traces have {stack.shape[0]} hidden states but the model {len(lns)} LayerNorms.")
    gamma = torch.stack([ln.weight.detach() for ln in lns])  # [L+1, hidden]
    beta = torch.stack([ln.bias.detach() for ln in lns])
    scaled = stack - beta[:, None]
    return {
        "norm": stack.norm(dim=-1).T,
        "scaled": scaled.norm(dim=-1).T,
        "cross": (2 * (scaled * beta[:, None]).sum(-1)).T,
        "gamma": gamma.norm(dim=-1),
        "beta": beta.norm(dim=-1),
    }


def energy_by_dimension(traces, kind: str = "content") -> torch.Tensor:
    """Share of the squared length ``||h||^2`` carried by each dimension, per layer:
    ``[L + 1, hidden]`` (mean ``h_i^2`` over the tokens, divided by mean ``||h||^2``; rows sum to 1)."""
    sq = pooled_vectors(traces, kind).pow(2)  # [L+1, N, hidden]
    return sq.mean(dim=1) / sq.sum(dim=-1).mean(dim=1, keepdim=True)


def top_dimensions(shares: torch.Tensor, k: int = 3) -> tuple[torch.Tensor, torch.Tensor]:
    """The ``k`` dimensions with the largest share per layer and the share they carry together:
    ``(dims [L + 1, k], share [L + 1])``."""
    shares = torch.as_tensor(shares, device=device_of(shares))
    if shares.ndim != 2 or not 1 <= k <= shares.shape[1]:
        raise ValueError(f"shares must be [layers, hidden] and k from 1 to hidden, got {tuple(shares.shape)}, k={k}.")
    top = shares.topk(k, dim=1)
    return top.indices, top.values.sum(dim=1)


def layer_norm_outliers(model, n_sigma: float = 3.0) -> list[list[int]]:
    """Dimensions whose LayerNorm scale or bias lies more than ``n_sigma`` standard deviations
    from that vector's mean, per layer ``0 .. L``. The course's test, in the spirit of Kovaleva
    et al. (2021, *BERT Busters*; high-magnitude output-LayerNorm scales and biases at the same
    position in every layer of BERT-base); their paper's exact threshold is not reproduced here.
    :func:`outliers_in_every_layer` adds their second condition, the same position throughout."""
    out = []
    for ln in final_layer_norms(model):
        flagged = set()
        for vec in (ln.weight.detach(), ln.bias.detach()):
            z = (vec - vec.mean()) / vec.std().clamp_min(1e-12)
            flagged |= set(torch.nonzero(z.abs() > n_sigma).flatten().tolist())
        out.append(sorted(flagged))
    return out


# -- the unit to resample: a token's sentence ----------------------------------------------------

def cluster_labels(traces, kind: str = "content") -> np.ndarray:
    """The sentence (trace index) of every token of ``kind`` in ``traces``, in the order of
    :func:`pooled_vectors` and the ``*_per_token`` functions: the cluster labels that make a
    bootstrap resample whole sentences (tokens of one sentence are not independent)."""
    traces = check_traces(traces)
    return np.concatenate([np.full(len(positions_of_kind(t, kind)), i) for i, t in enumerate(traces)])


def outlier_counts(outliers: list[list[int]], top_dims=None) -> list[dict]:
    """Per flagged dimension, in how many of the ``L + 1`` LayerNorms it is a 3-sigma outlier
    (:func:`layer_norm_outliers`) and, with ``top_dims [L + 1, k]`` (:func:`top_dimensions`), in
    which layers it is among the top contributors too: one dict per dimension flagged at least
    twice, most often flagged first (``{"dimension", "flagged in", "layers", "top contributor in"}``)."""
    counts: dict[int, list[int]] = {}
    for layer, flagged in enumerate(outliers):
        for d in flagged:
            counts.setdefault(int(d), []).append(layer)
    top = None if top_dims is None else [set(torch.as_tensor(t).tolist()) for t in top_dims]  # cpu: ids as a list
    rows = []
    for d, layers in counts.items():
        if len(layers) < 2:
            continue
        row = {"dimension": d, "flagged in": len(layers), "layers": layers}
        if top is not None:
            row["top contributor in"] = [l for l, dims in enumerate(top) if d in dims]
        rows.append(row)
    return sorted(rows, key=lambda r: (-r["flagged in"], -len(r.get("top contributor in", ())), r["dimension"]))


def outliers_in_every_layer(outliers: list[list[int]]) -> list[int]:
    """The dimensions flagged (:func:`layer_norm_outliers`) in *every* layer: Kovaleva et al.
    (2021) found BERT-base's outliers at the same positions throughout the model."""
    if not outliers:
        return []
    common = set(outliers[0])
    for flagged in outliers[1:]:
        common &= set(flagged)
    return sorted(common)


def path_lengths(coords) -> torch.Tensor:
    """Length of each path ``[k, layers, d]`` (e.g. :func:`pca_trajectory`): the sum of its
    step lengths, ``[k]``, in the units of the projection."""
    coords = torch.as_tensor(coords, device=device_of(coords))
    if coords.ndim != 3 or coords.shape[1] < 2:
        raise ValueError(f"coords must be [paths, layers >= 2, dims], got shape {tuple(coords.shape)}.")
    return (coords[:, 1:] - coords[:, :-1]).norm(dim=-1).sum(dim=1)
