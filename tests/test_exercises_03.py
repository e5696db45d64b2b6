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
    assert check_exercise_3(S.solution_3_by_hand(model, sample_trace, L), model, sample_trace, L).ok
    x = sample_trace.hidden(L - 1)
    with torch.no_grad():
        # ReLU in place of GELU
        relu = m.output.LayerNorm(m.output.dense(torch.relu(m.intermediate.dense(att))) + att)
        # both LayerNorms with torch's default, unbiased variance
        att_u = unbiased_layer_norm(m.attention.output.dense(ctx) + x, m.attention.output.LayerNorm)
        inner_u = torch.nn.functional.gelu(m.intermediate.dense(att_u))
        unbiased = unbiased_layer_norm(m.output.dense(inner_u) + att_u, m.output.LayerNorm)
    for slip, says in ((relu, "ReLU"), (unbiased, "H - 1")):
        assert not torch.allclose(slip, sample_trace.hidden(L), atol=1e-5)
        fb = check_exercise_3(slip, model, sample_trace, L)
        assert not fb.ok and says in fb.message


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
