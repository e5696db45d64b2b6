"""Lesson 09 exercises: the worked solutions pass, typical mistakes get the right hint."""

import pytest
import torch
import torch.nn.functional as F

from helpers.common.data import load_polysemy
from helpers.context import compute
from helpers.exercises import lesson09 as ex
from helpers.model.trace import trace_text
from lessons.solutions import solutions_09 as sol


@pytest.fixture(scope="module")
def groups(tokenizer, model):
    data = load_polysemy()
    out = {}
    for word in list(data)[:4]:
        out[word] = {s: torch.stack([compute.word_by_layer(trace_text(tokenizer, model, x), word) for x in xs])
                     for s, xs in data[word].items()}
    return out


def test_no_answer(groups):
    assert "no answer" in ex.check_exercise_1(None, groups).message
    assert "no answer" in ex.check_exercise_2(None, groups).message
    assert "no answer" in ex.check_exercise_3(0.5, None, groups).message


def test_exercise_1(groups):
    import numpy as np

    from helpers.common.stats import bootstrap_ci, cluster_bootstrap_ci

    answer = sol.solution_1(groups)
    fb = ex.check_exercise_1(answer, groups)
    assert fb.ok, fb
    # independent of the solution: the per-sentence differences from the helper's outcomes
    diffs = torch.cat([(o[:, -1] - o[:, 0]) for o in
                       (compute.sense_separation_outcomes(s).float() for s in groups.values())])
    words = np.array([w for w, s in groups.items() for _ in range(sum(len(v) for v in s.values()))])
    assert answer.estimate == pytest.approx(float(diffs.mean()))
    expected = cluster_bootstrap_ci(diffs, words, seed=0)
    assert (answer.low, answer.high) == pytest.approx((expected.low, expected.high))
    # the verdict follows the interval: inconclusive exactly when it includes 0
    assert ("inconclusive" in fb.message) == (expected.low <= 0 <= expected.high)
    assert ex.check_exercise_1((answer.estimate, answer.low, answer.high), groups).ok
    # resampling sentences one by one is the mistake the checker names
    by_sentence = bootstrap_ci(diffs, n_boot=2000, seed=0)
    fb = ex.check_exercise_1(by_sentence, groups)
    assert not fb.ok and "resamples sentences" in fb.message and "cluster_bootstrap_ci" in fb.hint
    assert f"{expected.low:+.3f}" not in str(fb)  # the right interval is not given away
    flipped = ex.check_exercise_1((-answer.estimate, -answer.high, -answer.low), groups)
    assert not flipped.ok and ("wrong sign" in flipped.message or answer.estimate == 0)
    assert "not the one that resamples words" in ex.check_exercise_1(
        (answer.estimate, answer.low - 0.1, answer.high), groups).message
    assert "Interval or three numbers" in ex.check_exercise_1(1.0, groups).message
    one_word = dict(list(groups.items())[:1])
    assert "at least two words" in ex.check_exercise_1(answer, one_word).message


def test_exercise_2(groups):
    assert ex.check_exercise_2(sol.my_self_similarity, groups).ok

    def with_diagonal(v):
        n = F.normalize(v, dim=-1)
        return (n @ n.T).mean()

    fb = ex.check_exercise_2(with_diagonal, groups)
    assert not fb.ok and "diagonal" in fb.hint

    def raw_dot(v):
        d = v @ v.T
        n = d.shape[0]
        return (d.sum() - d.diagonal().sum()) / (n * (n - 1))

    fb = ex.check_exercise_2(raw_dot, groups)
    assert not fb.ok and "unnormalised" in fb.message
    # a wrong function is never shown the right value
    word, senses = next(iter(groups.items()))
    right = sol.my_self_similarity(torch.cat(list(senses.values()))[:, 0])
    fb = ex.check_exercise_2(lambda v: sol.my_self_similarity(v) + 0.01, groups)
    assert not fb.ok and f"{right:.4f}" not in str(fb)
    assert "not an int" in ex.check_exercise_2(3, groups).message


def test_exercise_3_grades_the_measurement_and_only_comments_on_the_prediction(groups):
    answer = sol.solution_3(groups)
    for prediction in (0.0, 1.0, None, "most"):
        assert ex.check_exercise_3(prediction, answer, groups).ok, prediction
    assert "You predicted 0.5" in ex.check_exercise_3(0.5, answer, groups).message
    assert ex.check_exercise_3(0.5, torch.tensor(answer), groups).ok


def test_exercise_3_slips(groups):
    answer = sol.solution_3(groups)
    sims = torch.stack([compute.self_similarity(torch.cat(list(s.values()))) for s in groups.values()])
    L = sims.shape[1] - 1
    cases = {
        "rises": float((sims[:, L] > sims[:, L - 1]).float().mean()),
        "layer L - 1": float((sims[:, L - 1] < sims[:, L - 2]).float().mean()),
        "embeddings": float((sims[:, L] < sims[:, 0]).float().mean()),
        "count": float((sims[:, L] < sims[:, L - 1]).sum()),
    }
    if answer > 0:
        cases["percentage"] = 100 * answer
    tested = 0
    for words, value in cases.items():
        others = [v for w, v in cases.items() if w != words] + [answer]
        if any(abs(value - v) < 1e-6 for v in others):
            continue  # on these few words two readings give the same number: nothing to tell apart
        fb = ex.check_exercise_3(0.5, value, groups)
        assert not fb.ok and words in fb.message, (words, fb)
        assert f"{answer:.0%}" not in str(fb)
        tested += 1
    assert tested >= 2
    assert "a str" in ex.check_exercise_3(0.5, "x", groups).message
