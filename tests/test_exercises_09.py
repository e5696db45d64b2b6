"""Lesson 09 exercises: the worked solutions pass, typical mistakes get the right hint."""

import pytest
import torch

from helpers.classify.compute import train_head
from helpers.common.data import load_polysemy
from helpers.exercises import lesson09 as ex
from helpers.interventions import compute as C
from helpers.model.trace import trace_text
from lessons.solutions import solutions_09 as sol


@pytest.fixture(scope="module")
def measured(tokenizer, model, intent_data):
    train, test, f_train, _ = intent_data
    L = f_train.num_layers
    head = train_head(f_train.layer(L, "mean"), train.labels, train.num_classes, progress=False)
    classifier = C.SentenceHead(head, "mean")
    run = C.run_cached(tokenizer, model, test.texts[:12])
    y = test.labels[:12]
    ablation = C.ablate_every_head(model, classifier, run, y, progress=False)
    return ablation, C.head_gate_gradients(model, classifier, run, y)


@pytest.fixture(scope="module")
def patch(tokenizer, model):
    senses = load_polysemy()["bank"]
    traces = {s: [trace_text(tokenizer, model, x) for x in xs[:3]] for s, xs in senses.items()}
    a, b = list(traces)
    return {"bank": C.sense_patching(model, traces[a], traces[b], "bank")}


def test_no_answer(measured, patch, sample_trace):
    ablation, grads = measured
    assert "no answer" in ex.check_exercise_1(None, ablation).message
    assert "no answer" in ex.check_exercise_2(None, grads).message
    assert "no answer" in ex.check_exercise_3(None, sample_trace).message
    assert "no answer" in ex.check_exercise_4(..., patch).message


def test_exercise_1(measured):
    ablation, _ = measured
    layer, head = sol.solution_1(ablation)
    assert ex.check_exercise_1((layer, head), ablation).ok
    fb = ex.check_exercise_1((layer - 1, head), ablation)  # counted from 0
    assert not fb.ok and ("off by one" in fb.message or layer == 1)
    assert "not a head" in ex.check_exercise_1((0, head), ablation).message
    assert not ex.check_exercise_1([layer, head], ablation).ok
    drops = ablation.logit_drop_items().mean(0)
    weakest = divmod(int(drops.argmin()), drops.shape[1])
    assert not ex.check_exercise_1((weakest[0] + 1, weakest[1]), ablation).ok


def test_exercise_2(measured):
    _, grads = measured
    assert ex.check_exercise_2(sol.solution_2(grads), grads).ok
    fb = ex.check_exercise_2(grads.mean(0).abs(), grads)
    assert not fb.ok and "absolute value of the mean" in fb.message
    fb = ex.check_exercise_2(grads.abs().sum(0), grads)
    assert not fb.ok and "summed" in fb.message
    assert "shape" in ex.check_exercise_2(grads.abs().mean(1), grads).message


def test_exercise_3(sample_trace):
    assert ex.check_exercise_3(sol.my_rollout, sample_trace).ok

    def no_residual(attentions):
        r = torch.eye(attentions[0].shape[-1])
        for a in attentions:
            r = a.mean(0) @ r
        return r

    fb = ex.check_exercise_3(no_residual, sample_trace)
    assert not fb.ok and "residual" in fb.message

    def wrong_order(attentions):
        eye = torch.eye(attentions[0].shape[-1])
        r = eye
        for a in attentions:
            m = 0.5 * a.mean(0) + 0.5 * eye
            r = r @ (m / m.sum(-1, keepdim=True))
        return r

    fb = ex.check_exercise_3(wrong_order, sample_trace)
    assert not fb.ok and "order" in fb.message
    assert "shape" in ex.check_exercise_3(lambda att: att[0], sample_trace).message
    assert "raised" in ex.check_exercise_3(lambda att: 1 / 0, sample_trace).message


def test_exercise_4(patch):
    intervals = C.pair_cluster_bootstrap([patch["bank"]], "follows")
    first = sol.solution_4(patch)
    assert first == next((l for l, ci in enumerate(intervals) if ci.low > 0.5), None)  # the lesson's rule
    assert ex.check_exercise_4(first, patch).ok
    n = len(intervals)
    for answer in [None, *range(n)]:
        if answer != first:
            assert not ex.check_exercise_4(answer, patch).ok
    rates = patch["bank"]["follows"].mean(0)
    by_point = next((l for l in range(n) if rates[l] >= 0.5), None)
    if by_point is not None and by_point != first:
        assert "interval" in ex.check_exercise_4(by_point, patch).message
    assert "does not exist" in ex.check_exercise_4(n, patch).message
    assert not ex.check_exercise_4(1.0, patch).ok


def test_exercise_4_interval_rule_differs_from_the_point_rule():
    """Synthetic patch results: 10 x 10 pairs, layer 0 followed by the pairs of 5 donors (a share
    of one half, an interval around it), layer 1 by all (rule of three: [70%, 100%]). The point
    rule says 0, the lesson's rule 1; with no layer above one half, the answer is None."""
    pairs = [(i, j) for i in range(10) for j in range(10)]
    follows = torch.zeros(100, 2)
    follows[:50, 0] = 1  # pairs are ordered by donor: donors 0-4
    follows[:, 1] = 1
    result = {"w": {"follows": follows, "control": torch.ones(100), "pairs": pairs}}
    assert sol.solution_4(result) == 1 and ex.check_exercise_4(1, result).ok
    fb = ex.check_exercise_4(0, result)
    assert not fb.ok and "interval" in fb.message
    none = {"w": {"follows": follows[:, :1], "control": torch.ones(100), "pairs": pairs}}
    assert sol.solution_4(none) is None and ex.check_exercise_4(None, none).ok
    assert not ex.check_exercise_4(0, none).ok
