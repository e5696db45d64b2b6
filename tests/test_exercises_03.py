"""Lesson 03 solutions pass their checkers; typical wrong answers get the right hint."""

import torch
from transformers import BertConfig, BertModel

import numpy as np

from helpers.exercises.lesson01 import unbiased_layer_norm
from helpers.exercises.lesson03 import (check_exercise_1, check_exercise_2, check_exercise_3, check_exercise_4,
                                        embedding_share)
from helpers.attention.rebuild import self_attention_by_hand
from helpers.embeddings.rebuild import layer_norm_by_hand
from helpers.stack.compute import meta_model_parameter_count, parameter_formula
from helpers.stack.rebuild import attention_output_by_hand
from lessons.solutions import solutions_03 as S

LARGE = BertConfig(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096)
SMALL = BertConfig(num_hidden_layers=4, hidden_size=512, num_attention_heads=8, intermediate_size=2048)  # lesson 03, exercise 2


def test_exercise_1(model):
    for cfg in (LARGE, model.config):  # the lesson asks about BERT-large; any config works
        assert check_exercise_1(S.solution_1(cfg), cfg).ok
        # independently: the parameters of one layer of a meta-device BertModel
        with torch.device("meta"):
            assert S.solution_1(cfg) == sum(p.numel() for p in BertModel(cfg).encoder.layer[0].parameters())
        H, I = cfg.hidden_size, cfg.intermediate_size
        fb = check_exercise_1(4 * H * H + 2 * H * I, cfg)
        assert not fb.ok and "bias" in fb.hint
        fb = check_exercise_1(S.solution_1(cfg) - 4 * H, cfg)
        assert not fb.ok and "LayerNorm" in fb.message
    assert not check_exercise_1(None, LARGE).ok
    fb = check_exercise_1(1.5, LARGE)
    assert not fb.ok and "an int" in fb.message
    assert check_exercise_1(np.int64(S.solution_1(LARGE)), LARGE).ok
    assert check_exercise_1(torch.tensor(S.solution_1(LARGE)), LARGE).ok


def test_exercise_2():
    for cfg in (SMALL, LARGE):
        assert S.solution_2(cfg) == meta_model_parameter_count(cfg)
        assert check_exercise_2(S.solution_2(cfg), cfg).ok
    H = SMALL.hidden_size
    fb = check_exercise_2(S.solution_2(SMALL) - (H * H + H), SMALL)
    assert not fb.ok and "pooler" in fb.hint
    fb = check_exercise_2(S.solution_2(SMALL) - parameter_formula(SMALL)["embeddings"], SMALL)
    assert not fb.ok and "embedding" in fb.message
    assert not check_exercise_2(S.solution_2(LARGE), SMALL).ok  # the count of another size


def test_exercise_3_a_pre_ln_layer(model, sample_trace):
    from helpers.exercises.lesson03 import pre_ln_layer

    L = sample_trace.num_layers
    answer = S.solution_3(model, sample_trace, L)
    # independent of the checker's own rebuild: the model's modules, rewired by hand
    m = model.encoder.layer[L - 1]
    x = sample_trace.hidden(L - 1)
    with torch.no_grad():
        first = m.attention.output.LayerNorm(x)
        out = m.attention.self(first[None])
        context = out[0][0] if isinstance(out, tuple) else out[0]
        h = x + m.attention.output.dense(context)
        by_modules = h + m.output.dense(torch.nn.functional.gelu(m.intermediate.dense(m.output.LayerNorm(h))))
    assert torch.allclose(answer, by_modules, atol=1e-4) and torch.allclose(pre_ln_layer(m, x), by_modules, atol=1e-4)
    fb = check_exercise_3(answer, "far", model, sample_trace, L)
    assert fb.ok and "mean cosine" in fb.message and "predicted" in fb.message
    assert check_exercise_3(answer, None, model, sample_trace, L).ok  # a missing prediction is no error
    fb = check_exercise_3(sample_trace.hidden(L), "close", model, sample_trace, L)
    assert not fb.ok and "post-LN" in fb.message
    with torch.no_grad():
        renormed = layer_norm_by_hand(answer, m.output.LayerNorm)
    fb = check_exercise_3(renormed, None, model, sample_trace, L)
    assert not fb.ok and "after the last add" in fb.message
    assert not check_exercise_3(None, None, model, sample_trace, L).ok


def test_exercise_4_predict_then_measure(model):
    answer = S.solution_4(LARGE)
    assert abs(answer - embedding_share(LARGE)) < 1e-12
    # independently: the embedding module of a meta-device BERT-large
    with torch.device("meta"):
        big = BertModel(LARGE)
    counted = sum(p.numel() for p in big.embeddings.parameters())
    assert abs(answer - counted / sum(p.numel() for p in big.parameters())) < 1e-9
    actual = "higher" if answer > embedding_share(model.config) else "lower"
    other = "lower" if actual == "higher" else "higher"
    assert not check_exercise_4(answer, None, LARGE, model.config).ok
    fb = check_exercise_4(answer, actual, LARGE, model.config)
    assert fb.ok and "agrees" in fb.message
    fb = check_exercise_4(torch.tensor(answer), other, LARGE, model.config)
    assert fb.ok and f"You predicted '{other}'" in fb.message
    fb = check_exercise_4(100 * answer, actual, LARGE, model.config)
    assert not fb.ok and "percentage" in fb.message
    fb = check_exercise_4(embedding_share(model.config), actual, LARGE, model.config)
    assert not fb.ok and "loaded model" in fb.message
    fb = check_exercise_4(answer / 2, actual, LARGE, model.config)
    assert not fb.ok and f"{answer:.4f}" not in str(fb) and f"{answer:.1%}" not in str(fb)
