"""Lesson 06 (how we know) solutions pass their checkers; typical wrong answers get the right hint."""

import numpy as np
import pytest

from helpers.common.data import load_pos
from helpers.exercises.lesson06 import check_exercise_1, check_exercise_2, check_exercise_3
from helpers.model.trace import trace_text
from lessons.solutions import solutions_06 as S


@pytest.fixture(scope="module")
def traces(tokenizer, model):
    return [trace_text(tokenizer, model, s.text) for s in load_pos()[:20]]


def test_exercise_1_prediction_is_noted_not_graded(traces):
    ratio = S.solution_1(traces)
    assert ratio > 0
    for prediction in (None, "more", "less", "same", "sideways"):
        assert check_exercise_1(prediction, ratio, traces).ok
    fb = check_exercise_1("more", 1 / ratio, traces)
    assert not fb.ok and "upside down" in fb.message
    assert not check_exercise_1(None, ratio + 0.5, traces).ok
    assert not check_exercise_1(None, None, traces).ok


def test_exercise_2_reads_the_steps_as_one_family(traces):
    from helpers.common.stats import cluster_replicates
    from helpers.layerwalk.compute import cluster_labels, layer_norms_per_token

    rises = S.solution_2(traces)
    assert check_exercise_2(rises, traces).ok
    # independently: each step's family-level lower bound, from the replicates' own quantiles
    norms = layer_norms_per_token(traces).double().numpy()
    steps = cluster_replicates(norms, cluster_labels(traces)).steps()
    lows = [iv.low for iv in steps.intervals(1 - 0.05 / steps.k)]
    assert rises == [l + 1 for l, low in enumerate(lows) if low > 0]
    assert not check_exercise_2("1, 2", traces).ok
    assert not check_exercise_2(None, traces).ok
    if rises:
        fb = check_exercise_2([r - 1 for r in rises], traces)
        assert not fb.ok


def test_exercise_3_any_sensible_margin_is_accepted():
    rng = np.random.default_rng(0)
    a = (rng.random(100) < 0.9).astype(float)
    b = (rng.random(100) < 0.85).astype(float)
    assert check_exercise_3(S.solution_3(), a, b).ok
    fb = check_exercise_3(2, a, b)
    assert not fb.ok and "points" in fb.message
    assert not check_exercise_3(-0.1, a, b).ok
    assert not check_exercise_3(None, a, b).ok
