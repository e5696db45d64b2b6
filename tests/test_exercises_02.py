"""Lesson 02 solutions pass their checkers; typical wrong answers get the right hint."""

import math

import torch

import numpy as np

from helpers.attention.compute import row_column_head
from helpers.exercises.lesson02 import check_exercise_1, check_exercise_2, check_exercise_3, unscaled_entropy
from lessons.solutions import solutions_02 as S


def test_exercise_1_a_causal_head(model, sample_trace):
    L, A = sample_trace.num_layers, sample_trace.num_heads
    answer = S.solution_1(model, sample_trace, L, A - 1)
    assert torch.allclose(answer.triu(1), torch.zeros_like(answer))  # nothing after the query
    assert torch.allclose(answer.sum(-1), torch.ones(sample_trace.seq_len), atol=1e-5)
    fb = check_exercise_1(answer, model, sample_trace, L, A - 1)
    assert fb.ok and "bidirectional" in fb.message
    fb = check_exercise_1(sample_trace.attention(L, A - 1), model, sample_trace, L, A - 1)
    assert not fb.ok and "-inf" in fb.hint  # BERT's own attention: the mask is missing
    fb = check_exercise_1(answer.T.contiguous(), model, sample_trace, L, A - 1)
    assert not fb.ok and "transpose" in fb.message
    # the later keys zeroed after the softmax: rows no longer add up to 1, and the hint says why
    zeroed = sample_trace.attention(L, A - 1).masked_fill(
        torch.ones_like(answer, dtype=torch.bool).triu(1), 0.0)
    fb = check_exercise_1(zeroed, model, sample_trace, L, A - 1)
    assert not fb.ok and "after the softmax" in fb.message and "triu" not in fb.hint
    flipped = torch.flip(S.solution_1(model, sample_trace, L, A - 1), dims=(0, 1))  # not the mirror mask itself
    assert not check_exercise_1(flipped, model, sample_trace, L, A - 1).ok
    assert not check_exercise_1(None, model, sample_trace, L, A - 1).ok
    assert not check_exercise_1(answer[:-1], model, sample_trace, L, A - 1).ok


def test_exercise_2(sample_trace):
    # the head the lesson asks about: one where row 0 and column 0 give different answers
    layer, head = row_column_head(sample_trace)
    right = S.solution_2(sample_trace, layer, head)
    assert check_exercise_2(right, sample_trace, layer, head).ok
    assert check_exercise_2(np.int64(right), sample_trace, layer, head).ok
    assert check_exercise_2(sample_trace.attention(layer, head)[0].argmax(), sample_trace, layer, head).ok
    # the typical slip, a column instead of row 0
    column = int(sample_trace.attention(layer, head)[:, 0].argmax())
    assert column != right
    fb = check_exercise_2(column, sample_trace, layer, head)
    assert not fb.ok and "Row 0" in fb.hint and f"token {right}" not in str(fb)
    other = next(i for i in range(sample_trace.seq_len) if i not in (right, column))
    fb = check_exercise_2(other, sample_trace, layer, head)
    assert not fb.ok and f"token {right}" not in str(fb)
    fb = check_exercise_2(1.0, sample_trace, layer, head)
    assert not fb.ok and "an int" in fb.message
    assert not check_exercise_2("1", sample_trace, layer, head).ok
    assert not check_exercise_2(None, sample_trace, layer, head).ok
    assert not check_exercise_2(sample_trace.seq_len, sample_trace, layer, head).ok


def test_exercise_3_predict_then_measure(model, sample_trace):
    answer = S.solution_3(model, sample_trace)
    scaled = -(sample_trace.attention(1) * sample_trace.attention(1).clamp_min(1e-30).log()).sum(-1).mean().item()
    assert answer < scaled  # larger scores, sharper softmax
    assert abs(answer - unscaled_entropy(model, sample_trace)) < 1e-5
    assert not check_exercise_3(answer, None, model, sample_trace).ok
    fb = check_exercise_3(answer, "lower", model, sample_trace)
    assert fb.ok and "agrees" in fb.message
    fb = check_exercise_3(torch.tensor(answer), "higher", model, sample_trace)
    assert fb.ok and "You predicted 'higher'" in fb.message
    fb = check_exercise_3(scaled, "lower", model, sample_trace)  # forgot to drop the scaling
    assert not fb.ok and "sqrt(d)" in fb.message
    fb = check_exercise_3(answer / math.log(2), "lower", model, sample_trace)  # bits
    assert not fb.ok and "bits" in fb.message
    fb = check_exercise_3(answer + 0.5, "lower", model, sample_trace)
    assert not fb.ok and f"{answer:.3f}" not in str(fb)
