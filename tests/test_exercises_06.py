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
    assert not fb.ok and "tokens" in fb.message and "redrawn one by one" in fb.message
    fb = check_exercise_2(alone, traces)
    assert not fb.ok and "95 %" in fb.message and "one" in fb.message
    assert not check_exercise_2("1, 2", traces).ok
    assert not check_exercise_2(None, traces).ok


def test_exercise_3_any_sensible_margin_set_first_is_accepted():
    rng = np.random.default_rng(0)
    a = (rng.random(100) < 0.9).astype(float)
    b = (rng.random(100) < 0.85).astype(float)
    margin = S.solution_3()
    assert check_exercise_3(margin, a, b, stated=margin).ok
    # set (or changed) after section 3 computed its numbers: refused, whatever the margin
    late = check_exercise_3(margin, a, b, stated=None)
    assert not late.ok and "after section 3" in late.message
    assert not check_exercise_3(0.25, a, b, stated=0.01).ok
    fb = check_exercise_3(2, a, b, stated=2)
    assert not fb.ok and "points" in fb.message
    assert not check_exercise_3(-0.1, a, b, stated=-0.1).ok
    assert not check_exercise_3(None, a, b).ok


def test_exercise_3_a_clear_difference_inside_a_wide_margin_is_said_plainly():
    """A reader's contradiction (issue 44): a clear difference whose 90 % interval lies inside a
    wide margin must not read "not equivalent (interval inside the margin)"."""
    a = np.r_[np.ones(90), np.zeros(10)]
    b = np.r_[np.ones(75), np.zeros(25)]  # mean pooling 15 points higher, every flip one way
    fb = check_exercise_3(0.3, a, b, stated=0.3)
    assert fb.ok and "surely higher" in fb.message and "inside your margin" in fb.message
    assert "not equivalent" not in fb.message
    fb = check_exercise_3(0.02, a, b, stated=0.02)
    assert "surely larger than your margin" in fb.message
    # a margin inside the 90 % interval: neither inside nor beyond it, and said so (a reader's find)
    fb = check_exercise_3(0.15, a, b, stated=0.15)
    assert "we cannot tell" in fb.message and "surely larger" not in fb.message


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
