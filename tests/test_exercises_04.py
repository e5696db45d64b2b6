"""Lesson 04 exercises: the worked solutions pass, typical mistakes get the right hint."""

import pytest
import torch

from helpers.common.data import load_sentences
from helpers.layerwalk import compute
from helpers.exercises import lesson04 as ex
from helpers.model.trace import trace_text
from lessons.solutions import solutions_04 as sol


@pytest.fixture(scope="module")
def baseline(tokenizer, model):
    return compute.random_pair_baseline([trace_text(tokenizer, model, s) for s in load_sentences()[:4]])


def test_no_answer(sample_trace, baseline):
    for fb in (ex.check_exercise_1(None, sample_trace), ex.check_exercise_2(None, sample_trace),
               ex.check_exercise_3(None, sample_trace, 2, baseline)):
        assert not fb.ok and "no answer" in fb.message


def test_exercise_1(sample_trace):
    answer = sol.solution_1(sample_trace)
    assert ex.check_exercise_1(answer, sample_trace).ok
    off = ex.check_exercise_1(answer + 1, sample_trace)
    assert not off.ok and "off by one" in off.message
    worst = int(compute.consecutive_cosines(sample_trace, 0).argmax())
    if worst not in (answer, answer + 1):
        assert "argmax" in ex.check_exercise_1(worst, sample_trace).hint
    assert "int" in ex.check_exercise_1("2", sample_trace).message


def test_exercise_2(sample_trace):
    assert ex.check_exercise_2(sol.my_norms, sample_trace).ok
    squared = ex.check_exercise_2(lambda t, k: sol.my_norms(t, k) ** 2, sample_trace)
    assert not squared.ok and "square root" in squared.hint
    shape = ex.check_exercise_2(lambda t, k: sol.my_norms(t, k)[1:], sample_trace)
    assert not shape.ok and "shape" in shape.message
    assert "function" in ex.check_exercise_2(3, sample_trace).message


def test_exercise_3(sample_trace, baseline):
    token = sample_trace.find_word("unbelievably").first
    assert ex.check_exercise_3(sol.solution_3(sample_trace, token, baseline), sample_trace, token, baseline).ok
    raw = float(compute.interlayer_similarity(sample_trace, token)[0, sample_trace.num_layers])
    fb = ex.check_exercise_3(torch.tensor(raw), sample_trace, token, baseline)
    assert not fb.ok and "raw" in fb.message and "Subtract" in fb.hint
