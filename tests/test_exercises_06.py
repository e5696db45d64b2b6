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
    ratio, icc = S.solution_1(traces)
    assert ratio > 0
    for prediction in (None, "more", "less", "same", "sideways"):
        assert check_exercise_1(prediction, ratio, traces, icc=icc).ok
    fb = check_exercise_1("more", 1 / ratio, traces, icc=icc)
    assert not fb.ok and "upside down" in fb.message
    assert not check_exercise_1(None, ratio + 0.5, traces, icc=icc).ok
    assert not check_exercise_1(None, None, traces).ok
    assert not check_exercise_1(None, ratio, traces).ok, "the correlation is asked for too"
    assert not check_exercise_1(None, ratio, traces, icc=icc + 0.1).ok


def test_exercise_2_reads_the_steps_as_one_family_of_sentence_redraws(traces):
    """The right answer passes; per-step 95 % and token resampling each fail with their own hint
    (issue 44: all three used to pass alike)."""
    from helpers.common.stats import cluster_replicates
    from helpers.layerwalk.compute import attention_entropy_per_token, cluster_labels

    rises = S.solution_2(traces)
    assert check_exercise_2(rises, traces).ok
    # independently: each step's family-level lower bound, from the replicates' own quantiles
    spread = attention_entropy_per_token(traces).double().numpy()
    steps = cluster_replicates(spread, cluster_labels(traces)).steps()
    lows = [iv.low for iv in steps.intervals(1 - 0.05 / steps.k)]
    assert rises == [l + 2 for l, low in enumerate(lows) if low > 0]
    alone = [l + 2 for l, iv in enumerate(steps.intervals(0.95)) if iv.low > 0]
    tokens = [l + 2 for l, iv in enumerate(cluster_replicates(spread).steps().intervals(1 - 0.05 / steps.k))
              if iv.low > 0]
    assert tokens != rises, "on these sentences token resampling must give another answer, or the test teaches nothing"
    assert alone != rises, "per-step 95 % must give another answer on these sentences"
    fb = check_exercise_2(tokens, traces)
    assert not fb.ok and "tokens are redrawn" in fb.message
    fb = check_exercise_2(alone, traces)
    assert not fb.ok and "95 % each" in fb.message
    assert not check_exercise_2("1, 2", traces).ok
    assert not check_exercise_2(None, traces).ok


def test_exercise_3_any_sensible_margin_is_accepted():
    rng = np.random.default_rng(0)
    a = (rng.random(100) < 0.9).astype(float)
    b = (rng.random(100) < 0.85).astype(float)
    assert check_exercise_3(S.solution_3(), a, b).ok
    fb = check_exercise_3(2, a, b)
    assert not fb.ok and "points" in fb.message
    assert not check_exercise_3(-0.1, a, b).ok
    assert not check_exercise_3(None, a, b).ok


def test_section_1_example_shows_its_idea(traces):
    """Lesson 06's first example must show what it teaches (issue 44): tokens of a sentence move
    together (positive correlation), so the sentence redraw is the wider interval."""
    from helpers.common.stats import cluster_replicates, intra_cluster_correlation
    from helpers.layerwalk.compute import attention_entropy_per_token, cluster_labels

    spread = attention_entropy_per_token(traces)[:, 0].double().numpy()
    labels = cluster_labels(traces)
    assert intra_cluster_correlation(spread, labels) > 0.2
    ratio = cluster_replicates(spread, labels).interval().width / cluster_replicates(spread).interval().width
    assert ratio > 1.5
