"""Checkers for lesson 03 (feed-forward, residuals, LayerNorm, the stack, parameter counts)."""

from __future__ import annotations

import torch

from helpers.exercises import (NO_ANSWER, Feedback, as_index, as_number, check_prediction, check_shape,
                               check_type, correct, prediction_note, wrong)
from helpers.exercises.lesson01 import unbiased_layer_norm
from helpers.attention.rebuild import self_attention_by_hand
from helpers.embeddings.rebuild import layer_norm_by_hand
from helpers.stack.compute import parameter_formula
from helpers.stack.rebuild import gelu_tanh, attention_output_by_hand, dense


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


def pre_ln_layer(module, x: torch.Tensor) -> torch.Tensor:
    """Encoder layer ``module`` rewired as a pre-LN layer, with its own weights: each LayerNorm
    moved in front of its block, the residual adds left un-normalised,
    ``h = x + attn(LN1(x))``, ``out = h + ffn(LN2(h))``."""
    with torch.no_grad():
        first = layer_norm_by_hand(x, module.attention.output.LayerNorm)
        context, _ = self_attention_by_hand(module, first)
        h = x + dense(context, module.attention.output.dense)
        second = layer_norm_by_hand(h, module.output.LayerNorm)
        inner = torch.nn.functional.gelu(dense(second, module.intermediate.dense))
        return h + dense(inner, module.output.dense)


def check_exercise_3(answer, prediction, model, trace, layer: int) -> Feedback:
    """Exercise 3 (build it yourself, then read it): layer ``layer`` rewired as pre-LN with its own
    weights (:func:`pre_ln_layer`), from ``trace.hidden(layer - 1)``. The prediction ("close" or
    "far" from BERT's post-LN output) is recorded, never graded."""
    from helpers.exercises.prediction import prediction_note as note

    if answer is None:
        return NO_ANSWER
    if (bad := check_type(answer, torch.Tensor, "Your layer output")) is not None:
        return bad
    if (bad := check_shape(answer, tuple(trace.hidden(layer).shape), "Your layer output")) is not None:
        return bad
    answer = answer.detach().float()
    module = model.encoder.layer[layer - 1]
    x = trace.hidden(layer - 1)
    reference = pre_ln_layer(module, x)
    if torch.allclose(answer, reference, atol=1e-4):
        cos = torch.nn.functional.cosine_similarity(reference, trace.hidden(layer), dim=-1).mean().item()
        ratio = (reference.norm(dim=-1) / trace.hidden(layer).norm(dim=-1)).mean().item()
        outcome = "close" if cos > 0.9 else "far"
        return correct(f"your pre-LN layer: mean cosine with BERT's real output {cos:.2f}, length {ratio:.1f} times "
                       "as long. The weights were trained where a LayerNorm follows each add: move it and the same "
                       "numbers compute something else -- and without the final LayerNorm nothing resets the "
                       "stream's length. " + note(prediction, outcome, ("close", "far")))
    if torch.allclose(answer, trace.hidden(layer), atol=1e-4):
        return wrong("that is BERT's own (post-LN) layer.", "Move each LayerNorm in front of its block: "
                     "x + attention(LN(x)), then h + feed_forward(LN(h)), with no LayerNorm after the adds.")
    with torch.no_grad():
        normed_out = layer_norm_by_hand(reference, module.output.LayerNorm)
    if torch.allclose(answer, normed_out, atol=1e-4):
        return wrong("a LayerNorm is still applied after the last add.", "Pre-LN keeps the residual sum as it is.")
    return wrong("your tensor differs from the pre-LN layer.",
                 "LN1 = attention.output.LayerNorm in front of the attention, LN2 = output.LayerNorm in front of the "
                 "feed-forward block; h = x + attention-output dense(context); out = h + output dense(gelu(...)).")


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
