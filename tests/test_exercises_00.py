"""Lesson 00 solutions pass their checkers; typical wrong answers get the right hint."""

from helpers.exercises.lesson00 import check_exercise_1, check_exercise_2, check_exercise_3
from lessons.solutions import solutions_00 as S


def test_exercise_1(sample_trace):
    word = "unbelievably"
    assert check_exercise_1(S.solution_1(sample_trace, word), sample_trace, word).ok
    fb = check_exercise_1(len(word), sample_trace, word)
    assert not fb.ok and "characters" in fb.message
    fb = check_exercise_1(1, sample_trace, word)
    assert not fb.ok and "pieces" in fb.hint
    assert not check_exercise_1(None, sample_trace, word).ok


def test_exercise_2(sample_trace):
    assert check_exercise_2(S.solution_2(sample_trace), sample_trace).ok
    hidden, attention = S.solution_2(sample_trace)
    fb = check_exercise_2(((1, *hidden), attention), sample_trace)
    assert not fb.ok and "batch" in fb.message
    fb = check_exercise_2((hidden, attention[1:]), sample_trace)
    assert not fb.ok and "num_attention_heads" in fb.hint
    assert not check_exercise_2("shapes", sample_trace).ok


def test_exercise_3(sample_trace):
    assert check_exercise_3(S.solution_3(sample_trace)).ok
    fb = check_exercise_3(ValueError("x"))
    assert not fb.ok and "class" in fb.message
    fb = check_exercise_3(IndexError)
    assert not fb.ok and "IndexError" in fb.message
