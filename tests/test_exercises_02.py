"""Lesson 02 solutions pass their checkers; typical wrong answers get the right hint."""

import math

import torch

from helpers.exercises.lesson02 import check_exercise_1, check_exercise_2
from lessons.solutions import solutions_02 as S


def test_exercise_1(model, sample_trace):
    L, A = sample_trace.num_layers, sample_trace.num_heads
    answer = S.solution_1(model, sample_trace, L, A - 1)
    assert check_exercise_1(answer, model, sample_trace, L, A - 1).ok
    fb = check_exercise_1(answer.T.contiguous(), model, sample_trace, L, A - 1)
    assert not fb.ok and "transpose" in fb.hint
    d = model.config.hidden_size // A
    unscaled = torch.softmax(torch.log(answer) * math.sqrt(d), dim=-1)  # undo the 1/sqrt(d) scaling
    fb = check_exercise_1(unscaled, model, sample_trace, L, A - 1)
    assert not fb.ok and "sqrt" in fb.hint
    fb = check_exercise_1(sample_trace.attention(L, 0), model, sample_trace, L, A - 1)
    assert not fb.ok and "head 0" in fb.message
    fb = check_exercise_1(S.solution_1(model, sample_trace, 1, 0), model, sample_trace, 2, 0)
    assert not fb.ok


def test_exercise_2(sample_trace):
    L, A = sample_trace.num_layers, sample_trace.num_heads
    layer, head = max(1, L // 2), A // 2  # the head lesson 02 asks about
    assert check_exercise_2(S.solution_2(sample_trace, layer, head), sample_trace, layer, head).ok
    # the typical slip, a column instead of row 0, on a head where the two differ
    layer, head = next((l, h) for l in range(1, L + 1) for h in range(A)
                       if int(sample_trace.attention(l, h)[:, 0].argmax()) != S.solution_2(sample_trace, l, h))
    column = int(sample_trace.attention(layer, head)[:, 0].argmax())
    fb = check_exercise_2(column, sample_trace, layer, head)
    assert not fb.ok and "Row 0" in fb.hint
    assert not check_exercise_2("1", sample_trace, layer, head).ok
    assert not check_exercise_2(None, sample_trace, layer, head).ok
