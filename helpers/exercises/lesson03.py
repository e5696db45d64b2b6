"""Checkers for lesson 03 (feed-forward, residuals, LayerNorm, the stack, parameter counts)."""

from __future__ import annotations

import torch

from helpers.exercises import (NO_ANSWER, Feedback, as_index, as_number, check_prediction, check_shape,
                               check_type, correct, prediction_note, wrong)
from helpers.exercises.lesson01 import unbiased_layer_norm
from helpers.attention.rebuild import self_attention_by_hand
from helpers.embeddings.rebuild import layer_norm_by_hand
from helpers.stack.compute import parameter_formula
from helpers.stack.rebuild import _gelu_tanh, attention_output_by_hand, dense


def _as_count(answer, what):
    """``(int, None)`` or ``(None, feedback)``: a count may be an int, a NumPy integer or a 0-d tensor."""
    return as_index(answer, what)


def check_exercise_1(answer, config) -> Feedback:
    """Exercise 1: parameters of one encoder layer, from the config alone."""
    answer, bad = _as_count(answer, "The count")
    if bad is not None:
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
    answer, bad = _as_count(answer, "The count")
    if bad is not None:
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
    x = trace.hidden(layer - 1)
    with torch.no_grad():
        context, _ = self_attention_by_hand(module, x)
        attended = attention_output_by_hand(module, context, x)
        inner = dense(attended, module.intermediate.dense)
        update = dense(torch.nn.functional.gelu(inner), module.output.dense)
        no_residual = layer_norm_by_hand(update, module.output.LayerNorm)
        tanh = layer_norm_by_hand(dense(_gelu_tanh(inner), module.output.dense) + attended, module.output.LayerNorm)
        relu = layer_norm_by_hand(dense(torch.relu(inner), module.output.dense) + attended, module.output.LayerNorm)
        no_ln = update + attended
        unbiased = _layer_with_unbiased_variance(module, context, x)
    if torch.allclose(answer, no_residual, atol=1e-5):
        return wrong("the second residual is missing.", "Add the feed-forward block's input back before the last LayerNorm.")
    if torch.allclose(answer, no_ln, atol=1e-5):
        return wrong("the last LayerNorm is missing.", "Apply module.output.LayerNorm to dense(...) + attention output.")
    if torch.allclose(answer, relu, atol=1e-4):
        return wrong("you used ReLU between the two dense layers.",
                     f"config.hidden_act is {model.config.hidden_act!r}: GELU, x * Phi(x), not max(x, 0).")
    if torch.allclose(answer, unbiased, atol=1e-5):
        return wrong("your LayerNorms divide the variance by H - 1 (torch's default unbiased variance).",
                     "LayerNorm's variance divides by H: var(dim=-1, unbiased=False).")
    if torch.allclose(answer, tanh, atol=1e-4) and not torch.allclose(tanh, trace.hidden(layer), atol=1e-5):
        return wrong("you used the tanh approximation of GELU.", "config.hidden_act is 'gelu': the exact x * Phi(x) with erf.")
    return wrong(f"your tensor differs from hidden_states[{layer}].", "attention -> dense + residual + LayerNorm -> intermediate + GELU -> dense + residual + LayerNorm.")


def _layer_with_unbiased_variance(module, context, x):
    """The whole layer with both LayerNorms rebuilt the common wrong way (variance / (H - 1))."""
    out = module.attention.output
    attended = unbiased_layer_norm(dense(context, out.dense) + x, out.LayerNorm)
    inner = torch.nn.functional.gelu(dense(attended, module.intermediate.dense))
    return unbiased_layer_norm(dense(inner, module.output.dense) + attended, module.output.LayerNorm)


def embedding_share(config) -> float:
    """The share of ``BertModel(config)``'s parameters in the embedding layer."""
    parts = parameter_formula(config)
    return parts["embeddings"] / parts["total"]


def check_exercise_4(answer, prediction, large, loaded) -> Feedback:
    """Exercise 4 (predict, then measure): BERT-large's share of parameters in its embeddings,
    set beside the loaded model's (config ``loaded``)."""
    if (bad := check_prediction(prediction, ("higher", "lower"))) is not None:
        return bad
    if answer is None:
        return NO_ANSWER
    answer, bad = as_number(answer, "The answer",
                            "parameter_formula(config) gives the counts; divide one by the total.")
    if bad is not None:
        return bad
    ref, mine = embedding_share(large), embedding_share(loaded)
    if abs(answer - ref) < 1e-4:
        actual = "higher" if ref > mine else "lower"
        return correct(f"{ref:.1%} in BERT-large against {mine:.1%} in the loaded model: the embedding "
                       f"tables grow with H, the layers with H^2 and L. {prediction_note(prediction, actual)}")
    if abs(answer - 100 * ref) < 1e-2:
        return wrong("that is a percentage.", "Give a fraction between 0 and 1.")
    if abs(answer - mine) < 1e-4:
        return wrong("that is the loaded model's share.", "Use sizes['large'], the BERT-large config.")
    parts = parameter_formula(large)
    if abs(answer - parts["embeddings"] / parts["all layers"]) < 1e-4:
        return wrong("that divides by the encoder layers only.", "Divide by parameter_formula(config)['total'].")
    return wrong(f"{answer:.4f} is not BERT-large's embedding share.",
                 "parameter_formula(sizes['large']): 'embeddings' divided by 'total'.")
