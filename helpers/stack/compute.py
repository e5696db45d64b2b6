"""Lesson 03 numbers: parameter counts, counted on the model and from the config's formulas,
and how large each sub-layer's update is next to the residual stream it is added to."""

from __future__ import annotations

import torch

from helpers.common.checks import check_bert
from helpers.model.trace import check_traces
from helpers.stack.rebuild import sublayer_updates_by_hand


def count_parameters(module: torch.nn.Module) -> int:
    """Number of scalar parameters (works on meta-device models too)."""
    return sum(p.numel() for p in module.parameters())


def parameter_breakdown(model) -> dict[str, int]:
    """Counted on the model itself: embeddings, attention / FFN / LayerNorms of one layer, stack, pooler, total."""
    check_bert(model)
    layer = model.encoder.layer[0]
    counts = {
        "embeddings": count_parameters(model.embeddings),
        "attention (one layer)": count_parameters(layer.attention),
        "feed-forward (one layer)": count_parameters(layer.intermediate) + count_parameters(layer.output),
        "one layer": count_parameters(layer),
        "all layers": count_parameters(model.encoder),
        "pooler": count_parameters(model.pooler) if model.pooler is not None else 0,
        "total": count_parameters(model),
    }
    return counts


def parameter_formula(config, add_pooler: bool = True) -> dict[str, int]:
    """The same counts from the config alone, written as formulas (weights + biases)."""
    H, I, L = config.hidden_size, config.intermediate_size, config.num_hidden_layers
    embeddings = (config.vocab_size + config.max_position_embeddings + config.type_vocab_size) * H + 2 * H
    attention = 4 * (H * H + H) + 2 * H  # query, key, value, output dense; one LayerNorm
    ffn = (H * I + I) + (I * H + H) + 2 * H  # intermediate dense, output dense; one LayerNorm
    layer = attention + ffn
    pooler = H * H + H if add_pooler else 0
    return {
        "embeddings": embeddings,
        "attention (one layer)": attention,
        "feed-forward (one layer)": ffn,
        "one layer": layer,
        "all layers": L * layer,
        "pooler": pooler,
        "total": embeddings + L * layer + pooler,
    }


def meta_model_parameter_count(config) -> int:
    """Build ``BertModel(config)`` on the meta device (no memory, no download) and count."""
    from transformers import BertModel

    with torch.device("meta"):
        return count_parameters(BertModel(config))


@torch.no_grad()
def update_ratios(model, traces) -> dict[str, torch.Tensor]:
    """Per layer and token: how large each update is next to the stream it is added to.

    For encoder layer ``l`` with input ``x = hidden_states[l-1]``:
    ``attention = |attention update| / |x|`` and ``ffn = |FFN update| / |attended|``, where
    ``attended`` = LayerNorm(x + attention update) is the stream the feed-forward update is
    added to. Computed by hand from each trace's cached hidden states (the model does not
    run). Returns ``{"attention": [L, N], "ffn": [L, N]}`` over the N tokens of all traces.
    """
    check_bert(model)
    traces = check_traces(traces)
    if traces[0].num_layers != model.config.num_hidden_layers:
        raise ValueError(f"the traces have {traces[0].num_layers} layers but the model has "
                         f"{model.config.num_hidden_layers}: trace with this model.")
    per_layer = {"attention": [], "ffn": []}
    for l, layer in enumerate(model.encoder.layer, start=1):
        att, ffn = [], []
        for trace in traces:
            x = trace.hidden(l - 1)
            parts = sublayer_updates_by_hand(layer, x)
            att.append(parts["attention_update"].norm(dim=-1) / x.norm(dim=-1))
            ffn.append(parts["ffn_update"].norm(dim=-1) / parts["attended"].norm(dim=-1))
        per_layer["attention"].append(torch.cat(att))
        per_layer["ffn"].append(torch.cat(ffn))
    return {k: torch.stack(v) for k, v in per_layer.items()}
