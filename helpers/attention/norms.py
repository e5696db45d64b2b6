"""Lesson 08 (:mod:`helpers.attention`): norm-based attention (Kobayashi et al. 2020): each weight times the
norm of the transformed value it mixes in (:func:`transformed_values`, :func:`norm_attention`,
:func:`norm_attention_shares`, per layer :func:`norm_attention_layer`); value norms by token class
(:func:`value_norms_by_class`); an untrained copy of a model (:func:`untrained_like`).
"""

from __future__ import annotations

import torch

from helpers.attention.shares import class_onehot
from helpers.model.trace import Trace, check_trace, check_traces, model_device


# -- norm-based attention (Kobayashi et al. 2020) --------------------------------------------

def _attention_modules(model):
    bert = getattr(model, "bert", model)
    if not hasattr(bert, "encoder"):
        raise TypeError(f"expected a BertModel (or a model with a .bert), got {type(model).__name__}.")
    return [layer.attention for layer in bert.encoder.layer]


def transformed_values(trace: Trace, model, layer: int) -> torch.Tensor:
    """Kobayashi et al.'s (2020) ``f(x_j)`` for every head and key of encoder ``layer`` (1..L):
    ``[heads, seq, hidden]``.

    ``f_h(x) = (x W_V + b_V)_h W_O^h``: the head's slice of the ``value`` vector, sent through
    the matching columns of ``attention.output.dense`` (its bias, added once after the sum,
    is left out). The attention block's output is then
    ``output.dense(context)_i = sum_h sum_j alpha^h_ij f_h(x_j) + b_O``.
    """
    check_trace(trace).check_layer(layer, allow_embeddings=False)
    attn = _attention_modules(model)[layer - 1]
    heads, hidden = trace.num_heads, trace.hidden_size
    size = hidden // heads
    with torch.no_grad():
        value = attn.self.value(trace.hidden(layer - 1)).view(-1, heads, size).transpose(0, 1)  # [A, n, d]
        w_out = attn.output.dense.weight.view(hidden, heads, size)  # [hidden, A, d]
        return torch.einsum("anv,dav->and", value, w_out)


def transformed_value_norms(trace: Trace, model) -> torch.Tensor:
    """``||f_h(x_j)||`` for every layer, head and key: ``[L, heads, seq]``."""
    return torch.stack([transformed_values(trace, model, l).norm(dim=-1) for l in range(1, trace.num_layers + 1)])


def norm_attention(trace: Trace, model, norms: torch.Tensor | None = None) -> torch.Tensor:
    """Norm-based attention ``||alpha_ij f(x_j)|| = alpha_ij ||f(x_j)||``: ``[L, heads, q, k]``.
    Pass ``norms`` from :func:`transformed_value_norms` to reuse them."""
    norms = transformed_value_norms(trace, model) if norms is None else norms
    return torch.stack(check_trace(trace).attentions) * norms[:, :, None, :]


def norm_attention_shares(trace: Trace, model, norms: torch.Tensor | None = None) -> torch.Tensor:
    """:func:`attention_shares` computed on ``||alpha_ij f(x_j)||`` instead of ``alpha_ij``
    (each query's row rescaled to sum to 1): ``[L, 4]``."""
    weighted = norm_attention(trace, model, norms)
    weighted = weighted / weighted.sum(dim=-1, keepdim=True).clamp_min(1e-12)
    return (weighted @ class_onehot(trace)).mean(dim=(1, 2))


def norm_attention_layer(trace: Trace, model) -> torch.Tensor:
    """Kobayashi et al.'s (2020) norm-based attention of a whole layer, heads summed before the norm:
    ``||sum_h alpha^h_ij f_h(x_j)||`` for every layer, query and key: ``[L, q, k]``. (The
    per-head :func:`norm_attention` takes the norm of each head's term on its own.) Computed from
    the heads' Gram matrix per key, ``G_j[h, g] = <f_h(x_j), f_g(x_j)>``, so no ``[q, k, hidden]``
    tensor is built: ``||.||^2 = sum_{h,g} alpha^h_ij alpha^g_ij G_j[h, g]``."""
    check_trace(trace)
    out = []
    for layer in range(1, trace.num_layers + 1):
        f = transformed_values(trace, model, layer)  # [A, k, hidden]
        gram = torch.einsum("akd,bkd->kab", f, f)  # [k, A, A]
        alpha = trace.attention(layer)  # [A, q, k]
        out.append(torch.einsum("aqk,kab,bqk->qk", alpha, gram, alpha).clamp_min(0).sqrt())
    return torch.stack(out)


def norm_attention_shares_layer(trace: Trace, model) -> torch.Tensor:
    """:func:`attention_shares` on the layer-level :func:`norm_attention_layer` (Kobayashi et al.'s
    definition; each query's row rescaled to sum to 1), averaged over queries: ``[L, 4]``."""
    weighted = norm_attention_layer(trace, model)
    weighted = weighted / weighted.sum(dim=-1, keepdim=True).clamp_min(1e-12)
    return (weighted @ class_onehot(trace)).mean(dim=1)


def value_norms_by_class(traces, model) -> torch.Tensor:
    """Mean ``||f(x_j)||`` (over heads and keys) of each token class, per layer and input:
    ``[n_traces, L, 4]`` (NaN where an input has no token of a class)."""
    out = []
    for trace in check_traces(traces):
        norms = transformed_value_norms(trace, model).mean(dim=1)  # [L, seq]
        onehot = class_onehot(trace)
        counts = onehot.sum(dim=0)
        out.append((norms @ onehot) / counts.where(counts > 0, torch.tensor(float("nan"), device=counts.device)))
    return torch.stack(out)


def untrained_like(model, seed: int = 0):
    """A BERT with the same configuration as ``model`` and freshly initialised (random) weights,
    in eval mode: a model that has *not* learned where to look. Only for comparisons."""
    import copy

    from transformers import BertModel

    config = copy.deepcopy(getattr(model, "bert", model).config)
    config._attn_implementation = "eager"  # attention weights are returned, as load_model's models do
    with torch.random.fork_rng():  # seeded, without touching the caller's random state
        torch.manual_seed(seed)
        return BertModel(config, add_pooling_layer=False).eval().to(model_device(model))  # drawn on the CPU, then moved
