"""Lesson 03 solutions pass their checkers; typical wrong answers get the right hint."""

import torch
from transformers import BertConfig

from helpers.exercises.lesson03 import check_exercise_1, check_exercise_2, check_exercise_3
from helpers.attention.rebuild import self_attention_by_hand
from helpers.embeddings.rebuild import layer_norm_by_hand
from helpers.stack.compute import meta_model_parameter_count
from helpers.stack.rebuild import attention_output_by_hand
from lessons.solutions import solutions_03 as S

LARGE = BertConfig(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096)


def test_exercise_1(model):
    cfg = model.config
    assert check_exercise_1(S.solution_1(cfg), cfg).ok
    H, I = cfg.hidden_size, cfg.intermediate_size
    fb = check_exercise_1(4 * H * H + 2 * H * I, cfg)
    assert not fb.ok and "bias" in fb.hint
    assert not check_exercise_1(None, cfg).ok
    assert not check_exercise_1(1.5, cfg).ok


def test_exercise_2():
    assert S.solution_2(LARGE) == meta_model_parameter_count(LARGE)
    assert check_exercise_2(S.solution_2(LARGE), LARGE).ok
    fb = check_exercise_2(S.solution_2(LARGE) - (1024 * 1024 + 1024), LARGE)
    assert not fb.ok and "pooler" in fb.hint


def test_exercise_3(model, sample_trace):
    L = sample_trace.num_layers
    assert check_exercise_3(S.solution_3(model, sample_trace, L), model, sample_trace, L).ok
    m = model.encoder.layer[L - 1]
    with torch.no_grad():
        ctx, _ = self_attention_by_hand(m, sample_trace.hidden(L - 1))
        att = attention_output_by_hand(m, ctx, sample_trace.hidden(L - 1))
        no_res = layer_norm_by_hand(m.output.dense(torch.nn.functional.gelu(m.intermediate.dense(att))), m.output.LayerNorm)
    fb = check_exercise_3(no_res, model, sample_trace, L)
    assert not fb.ok and "residual" in fb.message
    assert not check_exercise_3(sample_trace.hidden(L - 1), model, sample_trace, L).ok
