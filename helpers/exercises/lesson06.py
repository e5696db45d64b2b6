"""Checkers for lesson 06 (how we know: the course's statistics)."""

from __future__ import annotations

import numpy as np

from helpers.common.stats import (cluster_replicates, equivalence_level, family_level, mcnemar, verdict)
from helpers.exercises import Feedback, as_number, correct, no_answer, wrong
from helpers.exercises.prediction import prediction_note


def _spread(traces):
    """Every token's attention spread at every layer (``[tokens, L]``) and its sentence."""
    from helpers.layerwalk.compute import attention_entropy_per_token, cluster_labels

    return attention_entropy_per_token(traces).double().cpu().numpy(), cluster_labels(traces)


def _width_ratio(values, clusters) -> float:
    by_token = cluster_replicates(values).interval(0.95)
    by_sentence = cluster_replicates(values, clusters).interval(0.95)
    return by_sentence.width / by_token.width


def check_exercise_1(prediction, ratio, traces, icc=None) -> Feedback:
    """``ratio``: the width of the sentence-level interval of the mean attention spread in the
    last layer divided by the token-level one (defaults of ``cluster_replicates``); ``icc``: the
    intra-sentence correlation there. The prediction ("more", "less", "same" than in layer 1) is
    never graded."""
    from helpers.common.stats import intra_cluster_correlation

    if ratio is None:
        return no_answer("Set ratio_1 = (sentence interval width) / (token interval width) in the last layer.")
    value, problem = as_number(ratio, "ratio_1")
    if problem is not None:
        return problem
    spread, clusters = _spread(traces)
    first, last = _width_ratio(spread[:, 0], clusters), _width_ratio(spread[:, -1], clusters)
    if abs(value - 1 / last) < 1e-6:
        return wrong("that is the ratio turned upside down (token width over sentence width).",
                     "Divide the width of the interval that redraws sentences by the one that redraws tokens.")
    if abs(value - first) < 1e-6 and abs(first - last) > 1e-6:
        return wrong("that is the ratio in layer 1, as in section 1.", "Take the last column of "
                     "attention_entropy_per_token(traces): [:, -1].")
    if abs(value - last) > 1e-6:
        return wrong(f"{value:.3f} is not the ratio of the two widths in the last layer.",
                     "cluster_replicates(values).interval(0.95) and cluster_replicates(values, "
                     "cluster_labels(traces)).interval(0.95); width = high - low.")
    true_icc = intra_cluster_correlation(spread[:, -1], clusters)
    if icc is None:
        return wrong(f"half done: the ratio is right ({last:.2f}); icc_1 is still None.",
                     "Set icc_1 to the intra-sentence correlation of the same column (section 1 computed one).")
    icc_value, problem = as_number(icc, "icc_1")
    if problem is not None:
        return problem
    if abs(icc_value - true_icc) > 1e-6:
        return wrong(f"{icc_value:.3f} is not the intra-sentence correlation of the last layer's spread.",
                     "intra_cluster_correlation(spread[:, -1], cluster_labels(traces)).")
    outcome = "more" if last > first * 1.05 else "less" if last < first / 1.05 else "same"
    return correct(f"in the last layer redrawing sentences widens the interval {last:.2f} times (two tokens of a "
                   f"sentence correlate {true_icc:+.2f}), in layer 1 {first:.2f} times ({outcome} in the last layer, "
                   "within 5 % counted as the same): the more tokens of a sentence move together, the wider the "
                   "honest interval. " + prediction_note(prediction, outcome, ("more", "less", "same")))


def _rises(intervals) -> list[int]:
    return [l + 2 for l, iv in enumerate(intervals) if iv.low > 0]  # step l ends at layer l + 2 (layers 1..L)


def check_exercise_2(rises, traces) -> Feedback:
    """The layers (2..L) whose step of the mean attention spread from the layer before is surely a
    rise, the L - 1 steps read as one Bonferroni family, sentences resampled. Two instructive wrong
    answers fail with their own message whenever they differ from the right one: each step read at
    95 % alone, and tokens resampled one by one."""
    if rises is None:
        return no_answer("Set rises_2 to a sorted list of layers, e.g. [2, 4] (or [] for none).")
    if not isinstance(rises, (list, tuple)) or not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool)
                                                        for v in rises):
        return wrong(f"rises_2 should be a list of ints, got {rises!r}.", "For example [2, 4]; use int(...).")
    spread, clusters = _spread(traces)
    steps = cluster_replicates(spread, clusters).steps()
    k = steps.k
    expected = _rises(steps.intervals(family_level(k)))
    alone = _rises(steps.intervals(0.95))
    by_token = _rises(cluster_replicates(spread).steps().intervals(family_level(k)))
    answer = sorted(int(v) for v in rises)
    if answer == expected:
        return correct(f"rises at layers {expected or 'none'} (each step read at {100 * family_level(k):.4g} %, "
                       f"Bonferroni over the {k} steps, whole sentences redrawn).")
    if answer == alone and answer == by_token:
        return wrong("that list is what a reading too sure of itself gives here: each step read at 95 % on its "
                     "own, or tokens redrawn one by one (here both give this list; using all the sentences "
                     "instead of the pilot's 20 can too).",
                     f"Check three things: that you used pilot, the unit you redraw (section 1), and the level "
                     f"each of the {k} steps is read at when they are read together (section 4).")
    if answer == alone:
        return wrong("those steps rise at 95 % each, read one at a time.",
                     f"The {k} steps are read together, as one family: which level does section 4 give each?")
    if answer == by_token:
        return wrong("those are the rises when tokens are redrawn one by one.",
                     "What is the unit that was sampled here (section 1)? Redraw that.")
    if answer == [l - 1 for l in expected] and expected:
        return wrong("your layers are off by one.", "Step l goes from layer l - 1 to layer l: count it as layer l; "
                     "column 0 of the spread is layer 1.")
    return wrong("not the layers whose step is surely a rise.",
                 "Use pilot only, redraw its sentences (cluster_labels(pilot)), take the steps, read them as one "
                 "family, and keep the layer a step ends at where the whole interval lies above 0.")


def check_exercise_3(margin, a_correct, b_correct, stated=None) -> Feedback:
    """Runs the equivalence test with the learner's ``margin`` (a share) on two paired outcome
    vectors and says what it allows to conclude. ``stated`` is the margin as it was when the
    lesson computed those outcomes (``margin_when_shown``): a margin set or changed afterwards is
    refused -- chosen after seeing the numbers, it proves nothing. Any positive margin below 0.5
    set beforehand is accepted: what counts as "the same" is the learner's judgement."""
    if margin is None:
        return no_answer("Set margin_3 to the difference you would call 'the same', as a share (0.02 = two points), "
                         "in section 3 before its numbers, and run the lesson from there.")
    value, problem = as_number(margin, "margin_3")
    if problem is not None:
        return problem
    if 1 <= value < 50:
        return wrong("that looks like points, not a share.", "Two points is 0.02.")
    if not 0 < value < 0.5:
        return wrong(f"a margin of {value!r} makes no sense for an accuracy difference.",
                     "A small positive share, e.g. 0.01 to 0.05.")
    if stated is None or stated != margin:
        return wrong("your margin was set (or changed) after section 3 computed its numbers.",
                     "A margin chosen after seeing the difference can be stretched to fit it. Set margin_3 in its "
                     "cell in section 3 and run the lesson again from there, before reading the numbers.")
    m = mcnemar(a_correct, b_correct)
    d, eq = m.interval(family_level(1)), m.interval(equivalence_level(1))  # 95 % and 90 % for one test
    v = verdict(d, a="mean pooling", b="[CLS]", margin=value, percent=True, equivalence_interval=eq)
    inside = -value < eq.low and eq.high < value
    beyond = eq.low > value or eq.high < -value
    span = f"90 % interval {100 * eq.low:+.1f} to {100 * eq.high:+.1f} points"
    if v.kind in ("higher", "lower"):
        reading = (f"a difference: mean pooling is surely {v.kind} (the 95 % interval, {100 * d.low:+.1f} to "
                   f"{100 * d.high:+.1f} points, leaves out 0)"
                   + (f"; it also lies inside your margin ({span}), so by your standard it is real but small "
                      "enough to ignore" if inside else
                      f", and surely larger than your margin ({span}, all of it beyond +/-{100 * value:.1f})"
                      if beyond else
                      f"; whether it is larger than your margin we cannot tell ({span}: it reaches both sides of "
                      f"{100 * value:.1f})"))
    elif v.kind == "equivalent":
        reading = (f"equivalent within your margin (90 % interval {100 * eq.low:+.1f} to {100 * eq.high:+.1f} "
                   "points, inside it)")
    else:
        reading = (f"inconclusive: neither surely different nor surely inside your margin (90 % interval "
                   f"{100 * eq.low:+.1f} to {100 * eq.high:+.1f} points)")
    return correct(f"with a margin of {100 * value:.1f} points, set before the numbers, the result is {reading}. "
                   "Fixed before looking, the margin is a claim about what matters; chosen after, it can be "
                   "stretched to fit any result.")
