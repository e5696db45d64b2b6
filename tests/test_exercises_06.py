"""Lesson 06 exercises: the worked solutions pass, typical mistakes get the right hint."""

import pytest
import torch
import torch.nn.functional as F

from helpers.common.data import load_polysemy
from helpers.context import compute
from helpers.exercises import lesson06 as ex
from helpers.model.trace import trace_text
from lessons.solutions import solutions_06 as sol


@pytest.fixture(scope="module")
def groups(tokenizer, model):
    data = load_polysemy()
    out = {}
    for word in list(data)[:2]:
        out[word] = {s: torch.stack([compute.word_by_layer(trace_text(tokenizer, model, x), word) for x in xs])
                     for s, xs in data[word].items()}
    return out


def test_no_answer(groups):
    assert "no answer" in ex.check_exercise_1(None, groups).message
    assert "no answer" in ex.check_exercise_2(None, groups).message


def test_exercise_1(groups):
    from helpers.common.stats import accuracy_ci

    best = sol.solution_1(groups)
    fb = ex.check_exercise_1(best, groups)
    assert fb.ok
    outcomes = compute.sense_separation_outcomes(next(iter(groups.values())))
    acc = outcomes.float().mean(0)
    top = int(acc.argmax())
    cis = [accuracy_ci(outcomes[:, l]) for l in range(len(acc))]
    assert cis[best].overlaps(cis[top]) and not any(cis[l].overlaps(cis[top]) for l in range(best))
    if top != best:
        wrong_best = ex.check_exercise_1(top, groups)
        assert not wrong_best.ok and "best layer itself" in wrong_best.message
    later = [l for l in range(best + 1, len(acc)) if l != top and cis[l].overlaps(cis[top])]
    if later:
        assert "lower layer" in ex.check_exercise_1(later[0], groups).message
    apart = [l for l in range(len(acc)) if not cis[l].overlaps(cis[top])]
    if apart:
        assert "does not overlap" in ex.check_exercise_1(apart[0], groups).message
    assert "does not exist" in ex.check_exercise_1(len(acc), groups).message
    assert "int" in ex.check_exercise_1(1.0, groups).message


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
    assert not fb.ok and "normalise" in fb.hint
