"""Checkers for lesson 03 (feed-forward, residuals, LayerNorm, the stack, parameter counts)."""

from __future__ import annotations

import torch

from helpers.exercises import Feedback, NO_ANSWER, check_shape, check_type, correct, wrong
from helpers.attention.rebuild import self_attention_by_hand
from helpers.embeddings.rebuild import layer_norm_by_hand
from helpers.stack.compute import parameter_formula
from helpers.stack.rebuild import _gelu_tanh, attention_output_by_hand, dense


def _check_int(answer, what):
    if answer is None:
        return NO_ANSWER
    if isinstance(answer, bool) or not isinstance(answer, int):
        return wrong(f"{what} should be an int, got {type(answer).__name__}.", "Return a whole number, e.g. int(...).")
    return None


def check_exercise_1(answer, config) -> Feedback:
    """Exercise 1: parameters of one encoder layer, from the config alone."""
    if (bad := _check_int(answer, "The count")) is not None:
        return bad
    H, I = config.hidden_size, config.intermediate_size
    ref = parameter_formula(config)["one layer"]
    if answer == ref:
        return correct(f"one layer has {ref:,} parameters.")
    if answer == 4 * H * H + 2 * H * I:
        return wrong("you counted the weight matrices only.", "Every nn.Linear also has a bias vector of its output size.")
    if answer == ref - 4 * H:
        return wrong("the two LayerNorms are missing.", "Each LayerNorm has a gain and a bias of size hidden_size.")
    if answer == parameter_formula(config)["attention (one layer)"]:
        return wrong("that is the attention block only.", "Add the feed-forward block: intermediate (H -> I) and output (I -> H) dense layers.")
    return wrong(f"{answer:,} is not the count.", "query, key, value, attention-output dense, intermediate dense, output dense, two LayerNorms.")


def check_exercise_2(answer, config) -> Feedback:
    """Exercise 2: the total parameter count of ``BertModel(config)`` (with the pooler)."""
    if (bad := _check_int(answer, "The count")) is not None:
        return bad
    parts = parameter_formula(config)
    ref = parts["total"]
    if answer == ref:
        return correct(f"{ref:,} parameters (about {ref / 1e6:.0f}M).")
    if answer == ref - parts["pooler"]:
        return wrong("the pooler is missing.", "BertModel ends with a pooler: one H x H dense layer with a bias.")
    H = config.hidden_size
    if answer == ref - (config.max_position_embeddings + config.type_vocab_size) * H:
        return wrong("you counted only the word embeddings.", "Add the position and token-type tables.")
    if answer == ref - parts["embeddings"]:
        return wrong("the embedding layer is missing.", "Word, position and token-type tables plus a LayerNorm.")
    return wrong(f"{answer:,} is not the count.", "Check with helpers.stack.compute.meta_model_parameter_count(config).")


def check_exercise_3(answer, model, trace, layer: int) -> Feedback:
    """Exercise 3: the output of encoder layer ``layer`` rebuilt from ``trace.hidden(layer - 1)``."""
    if answer is None:
        return NO_ANSWER
    if (bad := check_type(answer, torch.Tensor, "Your layer output")) is not None:
        return bad
    if (bad := check_shape(answer, tuple(trace.hidden(layer).shape), "Your layer output")) is not None:
        return bad
    answer = answer.detach()
    if torch.allclose(answer, trace.hidden(layer), atol=1e-5):
        return correct(f"your layer {layer} equals hidden_states[{layer}].")
    module = model.encoder.layer[layer - 1]
    with torch.no_grad():
        context, _ = self_attention_by_hand(module, trace.hidden(layer - 1))
        attended = attention_output_by_hand(module, context, trace.hidden(layer - 1))
        inner = dense(attended, module.intermediate.dense)
        no_residual = layer_norm_by_hand(dense(torch.nn.functional.gelu(inner), module.output.dense), module.output.LayerNorm)
        tanh = layer_norm_by_hand(dense(_gelu_tanh(inner), module.output.dense) + attended, module.output.LayerNorm)
        no_ln = dense(torch.nn.functional.gelu(inner), module.output.dense) + attended
    if torch.allclose(answer, no_residual, atol=1e-5):
        return wrong("the second residual is missing.", "Add the feed-forward block's input back before the last LayerNorm.")
    if torch.allclose(answer, no_ln, atol=1e-5):
        return wrong("the last LayerNorm is missing.", "Apply module.output.LayerNorm to dense(...) + attention output.")
    if torch.allclose(answer, tanh, atol=1e-4) and not torch.allclose(tanh, trace.hidden(layer), atol=1e-5):
        return wrong("you used the tanh approximation of GELU.", "config.hidden_act is 'gelu': the exact x * Phi(x) with erf.")
    return wrong(f"your tensor differs from hidden_states[{layer}].", "attention -> dense + residual + LayerNorm -> intermediate + GELU -> dense + residual + LayerNorm.")
