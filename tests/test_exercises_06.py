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
    best = sol.solution_1(groups)
    assert ex.check_exercise_1(best, groups).ok
    acc = compute.sense_separation(next(iter(groups.values())))
    worst = int(acc.argmin())
    if acc[worst] < acc.max():
        assert not ex.check_exercise_1(worst, groups).ok
    assert "does not exist" in ex.check_exercise_1(len(acc), groups).message


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
