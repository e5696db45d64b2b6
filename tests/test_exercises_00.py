"""Lesson 00 solutions pass their checkers; typical wrong answers get the right hint."""

from helpers.exercises.lesson00 import check_exercise_1, check_exercise_2, check_exercise_3
from lessons.solutions import solutions_00 as S


def test_exercise_1(sample_trace):
    answer = S.solution_1(sample_trace)
    assert check_exercise_1(answer, sample_trace).ok
    words = sample_trace.words()
    # an independent count: the model's input ids minus the two special tokens, per pre-tokenized word
    assert abs(answer - (len(sample_trace.input_ids) - 2) / len(words)) < 1e-9
    fb = check_exercise_1(sample_trace.seq_len / len(words), sample_trace)
    assert not fb.ok and "[CLS]" in fb.message
    split = sample_trace.text.split()
    assert len(split) != len(words)  # the sample sentence ends in a period glued to its word
    fb = check_exercise_1((sample_trace.seq_len - 2) / len(split), sample_trace)
    assert not fb.ok and "trace.words()" in fb.hint
    fb = check_exercise_1(1 / answer, sample_trace)
    assert not fb.ok and "inverse" in fb.message
    assert not check_exercise_1("1.3", sample_trace).ok
    assert not check_exercise_1(None, sample_trace).ok


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
