"""Lesson 03 by hand: the rest of a ``BertLayer`` (attention output + residual + LayerNorm,
the feed-forward block) and the whole encoder.

Mirrors ``modeling_bert.py`` and uses its names (``intermediate``, ``output``, ``LayerNorm``).
Everything runs in evaluation mode, where dropout is the identity."""

from __future__ import annotations

import math

import torch

from helpers.attention.rebuild import self_attention_by_hand
from helpers.common.checks import check_bert, check_layer_module
from helpers.embeddings.rebuild import layer_norm_by_hand


def gelu_by_hand(x: torch.Tensor) -> torch.Tensor:
    r"""Exact GELU: $x \cdot \Phi(x) = x \cdot \tfrac12 (1 + \mathrm{erf}(x/\sqrt2))$."""
    return 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))


def gelu_tanh(x: torch.Tensor) -> torch.Tensor:
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x.pow(3))))


ACTIVATIONS = {"gelu": gelu_by_hand, "gelu_new": gelu_tanh, "gelu_pytorch_tanh": gelu_tanh, "relu": torch.relu}


def activation_by_hand(config):
    """The intermediate activation named by ``config.hidden_act``, written out by hand."""
    name = config.hidden_act
    if not isinstance(name, str) or name not in ACTIVATIONS:
        raise ValueError(
            f"config.hidden_act is {name!r}; the by-hand rebuild supports {sorted(ACTIVATIONS)} "
            "(BERT checkpoints use 'gelu')."
        )
    return ACTIVATIONS[name]


def dense(x: torch.Tensor, linear: torch.nn.Linear) -> torch.Tensor:
    """$xW^\\top + b$ with the weights of an ``nn.Linear``."""
    return x @ linear.weight.T + linear.bias


def attention_output_by_hand(layer, context: torch.Tensor, hidden: torch.Tensor) -> torch.Tensor:
    """``BertSelfOutput``: LayerNorm(dense(context) + hidden) -- the first residual."""
    out = check_layer_module(layer).attention.output
    return layer_norm_by_hand(dense(context, out.dense) + hidden, out.LayerNorm)


def feed_forward_by_hand(layer, attention_output: torch.Tensor) -> torch.Tensor:
    """``BertIntermediate`` + ``BertOutput``: LayerNorm(dense2(act(dense1(x))) + x)."""
    layer = check_layer_module(layer)
    act = activation_by_hand(layer.attention.self.config)  # every BertLayer keeps the model config here
    inner = act(dense(attention_output, layer.intermediate.dense))
    return layer_norm_by_hand(dense(inner, layer.output.dense) + attention_output, layer.output.LayerNorm)


def sublayer_updates_by_hand(layer, hidden: torch.Tensor, attention_mask: torch.Tensor | None = None) -> dict:
    """The two updates one ``BertLayer`` adds to its residual stream, and what it does with them.

    Post-LN: ``attended = LayerNorm(hidden + attention_update)`` and
    ``output = LayerNorm(attended + ffn_update)``. Returns a dict with ``attention_update``
    (``attention.output.dense`` of the merged context), ``attended``, ``ffn_update``
    (``output.dense`` of the activated intermediate) and ``output`` (= the layer's output).
    """
    layer = check_layer_module(layer)
    context, _ = self_attention_by_hand(layer, hidden, attention_mask)
    out = layer.attention.output
    attention_update = dense(context, out.dense)
    attended = layer_norm_by_hand(hidden + attention_update, out.LayerNorm)
    act = activation_by_hand(layer.attention.self.config)
    ffn_update = dense(act(dense(attended, layer.intermediate.dense)), layer.output.dense)
    output = layer_norm_by_hand(attended + ffn_update, layer.output.LayerNorm)
    return {"attention_update": attention_update, "attended": attended, "ffn_update": ffn_update, "output": output}


def layer_by_hand(layer, hidden: torch.Tensor, attention_mask: torch.Tensor | None = None):
    """One full ``BertLayer``: returns ``(layer output, attention probs)``."""
    context, probs = self_attention_by_hand(layer, hidden, attention_mask)
    attended = attention_output_by_hand(layer, context, hidden)
    return feed_forward_by_hand(layer, attended), probs


def encoder_by_hand(model, embeddings: torch.Tensor, attention_mask: torch.Tensor | None = None) -> list[torch.Tensor]:
    """Run every encoder layer by hand; returns ``[embeddings, layer 1, ..., layer L]``."""
    check_bert(model)
    states = [embeddings]
    for layer in model.encoder.layer:
        states.append(layer_by_hand(layer, states[-1], attention_mask)[0])
    return states
