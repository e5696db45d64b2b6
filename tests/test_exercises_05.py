"""Lesson 05 exercises: the worked solutions pass, typical mistakes get the right hint."""

from helpers.attention import compute
from helpers.exercises import lesson05 as ex
from lessons.solutions import solutions_05 as sol


def test_no_answer(sample_trace):
    assert "no answer" in ex.check_exercise_1(None, sample_trace).message
    assert "no answer" in ex.check_exercise_2(None, sample_trace).message


def test_exercise_1(sample_trace):
    assert ex.check_exercise_1(sol.solution_1(sample_trace), sample_trace).ok
    percent = ex.check_exercise_1(100 * sol.solution_1(sample_trace), sample_trace)
    assert not percent.ok and "percentage" in percent.message
    cls = float(compute.attention_shares(sample_trace)[-1, 0])
    fb = ex.check_exercise_1(cls, sample_trace)
    assert not fb.ok and "[CLS]" in fb.message


def test_exercise_2(sample_trace):
    layer, head = sol.solution_2(sample_trace)
    assert ex.check_exercise_2((layer, head), sample_trace).ok
    off = ex.check_exercise_2((layer - 1, head), sample_trace)
    assert not off.ok and "off by one" in off.message
    assert "pair of ints" in ex.check_exercise_2("1,2", sample_trace).message
    prev = compute.best_head(compute.offset_head_scores(sample_trace, -1))[:2]
    if prev != (layer, head) and prev != (layer - 1, head):
        assert "offset -1" in ex.check_exercise_2(prev, sample_trace).message
