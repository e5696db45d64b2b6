"""Lesson 03 numbers: parameter counts, counted on the model and from the config's formulas,
and how large each sub-layer's update is next to the residual stream it is added to."""

from __future__ import annotations

import torch

from helpers.common.checks import check_bert
from helpers.common.stats import Interval, bootstrap_ci
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


def pretraining_heads_formula(config) -> dict[str, int]:
    """What ``BertForPreTraining`` adds on top of ``BertModel``, from the config alone: the
    masked-LM transform (dense H -> H and a LayerNorm), the masked-LM output layer (its weight
    is the word-embedding table, as in BERT's pre-training, so only its bias is new) and the
    next-sentence classifier (dense H -> 2)."""
    if not getattr(config, "tie_word_embeddings", True):
        raise ValueError("this formula counts BERT's pre-training heads with the output layer tied to the word "
                         "table (config.tie_word_embeddings=True); the config unties them.")
    H, V = config.hidden_size, config.vocab_size
    return {
        "masked-LM transform": H * H + H + 2 * H,
        "masked-LM output bias": V,
        "next-sentence head": 2 * H + 2,
    }


def meta_pretraining_parameter_count(config) -> int:
    """Build ``BertForPreTraining(config)`` (``BertModel`` with the masked-LM and next-sentence
    heads BERT was pre-trained with) on the meta device and count; a tied weight counts once."""
    from transformers import BertForPreTraining

    with torch.device("meta"):
        return count_parameters(BertForPreTraining(config))


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


def per_sentence_medians(ratios: dict, traces) -> dict[str, torch.Tensor]:
    """Each sentence's median of every entry of :func:`update_ratios` ``(model, traces)``, per layer:
    ``{"attention": [n_sentences, L], "ffn": [...]}``. Tokens of one sentence are not independent,
    so the sentence is the unit every interval and comparison of lesson 03 resamples."""
    traces = check_traces(traces)
    lengths = [t.seq_len for t in traces]
    if len(traces) < 2:
        raise ValueError("an interval over sentences needs at least two traces.")
    result = {}
    for name, values in ratios.items():
        if values.shape[1] != sum(lengths):
            raise ValueError(f"ratios[{name!r}] covers {values.shape[1]} tokens but the traces hold {sum(lengths)}: "
                             "pass the traces the ratios were computed on.")
        result[name] = torch.stack([chunk.median(dim=1).values for chunk in torch.split(values, lengths, dim=1)])
    return result


def ratio_intervals(ratios: dict, traces, *, n_boot: int = 1000, seed: int = 0) -> dict[str, list[Interval]]:
    """Per layer, a number with an interval for each entry of :func:`update_ratios` ``(model, traces)``.

    Tokens of one sentence are not independent, so the sentence is the unit: each sentence's
    median ratio per layer (:func:`per_sentence_medians`), then their mean over sentences with a
    bootstrap interval that resamples sentences (:func:`helpers.common.stats.bootstrap_ci`). Returns
    ``{"attention": [Interval per layer], "ffn": [...]}``.
    """
    return {name: bootstrap_ci(per_sentence, n_boot=n_boot, seed=seed)  # [sentences, layers] -> per layer
            for name, per_sentence in per_sentence_medians(ratios, traces).items()}
