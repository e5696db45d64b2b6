"""Checkers for lesson 06 (how we know: the course's statistics)."""

from __future__ import annotations

import numpy as np

from helpers.common.stats import (cluster_replicates, equivalence_level, family_level, mcnemar, verdict)
from helpers.exercises import Feedback, as_number, correct, no_answer, wrong
from helpers.exercises.prediction import prediction_note


def _last_and_first(traces):
    from helpers.layerwalk.compute import cluster_labels, layer_norms_per_token

    norms = layer_norms_per_token(traces).double().cpu().numpy()
    return norms, cluster_labels(traces)


def _width_ratio(values, clusters) -> float:
    by_token = cluster_replicates(values).interval(0.95)
    by_sentence = cluster_replicates(values, clusters).interval(0.95)
    return by_sentence.width / by_token.width


def check_exercise_1(prediction, ratio, traces) -> Feedback:
    """``ratio``: the width of the sentence-level interval of the mean vector length at layer 0
    divided by the token-level one (defaults of ``cluster_replicates``). The prediction
    ("more", "less", "same" than at the last layer) is never graded."""
    if ratio is None:
        return no_answer("Set ratio_1 = (sentence interval width) / (token interval width) at layer 0.")
    value, problem = as_number(ratio, "ratio_1")
    if problem is not None:
        return problem
    norms, clusters = _last_and_first(traces)
    first, last = _width_ratio(norms[:, 0], clusters), _width_ratio(norms[:, -1], clusters)
    if abs(value - 1 / first) < 1e-6:
        return wrong("that is the ratio turned upside down (token width over sentence width).",
                     "Divide the width of the interval that redraws sentences by the one that redraws tokens.")
    if abs(value - last) < 1e-6 and abs(first - last) > 1e-6:
        return wrong("that is the ratio at the last layer, as in section 1.", "Take column 0 of "
                     "layer_norms_per_token(traces): the embeddings.")
    if abs(value - first) > 1e-6:
        return wrong(f"{value:.3f} is not the ratio of the two widths at layer 0.",
                     "cluster_replicates(values).interval(0.95) and cluster_replicates(values, "
                     "cluster_labels(traces)).interval(0.95); width = high - low.")
    outcome = "more" if first > last * 1.05 else "less" if first < last / 1.05 else "same"
    return correct(f"at layer 0 redrawing sentences widens the interval {first:.2f} times, at the last layer "
                   f"{last:.2f} times ({outcome} at layer 0, within 5 % counted as the same). "
                   + prediction_note(prediction, outcome, ("more", "less", "same")))


def check_exercise_2(rises, traces) -> Feedback:
    """The layers (1..L) whose step of the mean length from the layer before is surely a rise,
    the L steps read as one Bonferroni family, sentences resampled."""
    if rises is None:
        return no_answer("Set rises_2 to a sorted list of layers, e.g. [1, 3] (or [] for none).")
    if not isinstance(rises, (list, tuple)) or not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool)
                                                        for v in rises):
        return wrong(f"rises_2 should be a list of ints, got {rises!r}.", "For example [1, 3]; use int(...).")
    norms, clusters = _last_and_first(traces)
    steps = cluster_replicates(norms, clusters).steps()
    L = steps.k
    family = steps.intervals(family_level(L))
    single = steps.intervals(0.95)
    expected = [l + 1 for l, iv in enumerate(family) if iv.low > 0]
    alone = [l + 1 for l, iv in enumerate(single) if iv.low > 0]
    answer = sorted(int(v) for v in rises)
    if answer == expected:
        return correct(f"rises at layers {expected or 'none'} (each step read at {100 * family_level(L):.4g} %, "
                       f"Bonferroni over the {L} steps).")
    if answer == alone and alone != expected:
        return wrong("those steps rise at 95 % each, read one at a time.",
                     f"The {L} steps are read together: take steps.intervals(family_level({L})).")
    if answer == [l - 1 for l in expected] and expected:
        return wrong("your layers are off by one.", "Step l goes from layer l - 1 to layer l: count it as layer l.")
    return wrong("not the layers whose step is surely a rise.",
                 "cluster_replicates(norms, cluster_labels(traces)).steps(); keep l + 1 where "
                 "the interval at family_level(L) has low > 0.")


def check_exercise_3(margin, a_correct, b_correct) -> Feedback:
    """Runs the equivalence test with the learner's ``margin`` (a share) on two paired outcome
    vectors and says what it allows to conclude; any positive margin below 0.5 is accepted."""
    if margin is None:
        return no_answer("Set margin_3 to the difference you would call 'the same', as a share (0.02 = two points).")
    value, problem = as_number(margin, "margin_3")
    if problem is not None:
        return problem
    if 1 <= value < 50:
        return wrong("that looks like points, not a share.", "Two points is 0.02.")
    if not 0 < value < 0.5:
        return wrong(f"a margin of {value!r} makes no sense for an accuracy difference.",
                     "A small positive share, e.g. 0.01 to 0.05.")
    m = mcnemar(a_correct, b_correct)
    v = verdict(m.interval(family_level(1)), a="mean pooling", b="[CLS]", margin=value, percent=True,
                equivalence_interval=m.interval(equivalence_level(1)))
    eq = m.interval(0.90)
    reading = {"equivalent": "equivalent within your margin",
               "higher": "different (mean pooling higher), so not equivalent",
               "lower": "different (mean pooling lower), so not equivalent",
               "inconclusive": "inconclusive: neither surely different nor surely inside your margin"}[v.kind]
    return correct(f"with a margin of {100 * value:.1f} points the result is {reading} (90 % interval "
                   f"{100 * eq.low:+.1f} to {100 * eq.high:+.1f} points). Fixed before looking, the margin is a "
                   "claim about what matters; chosen after, it can be stretched to fit any result.")
