"""Lesson 07 exercises: the worked solutions pass, typical mistakes get the right hint."""

import numpy as np
import pytest
import torch

from helpers.common.data import load_sentences
from helpers.layerwalk import compute
from helpers.exercises import lesson07 as ex
from helpers.model.trace import trace_text
from lessons.solutions import solutions_07 as sol


@pytest.fixture(scope="module")
def others(tokenizer, model):
    return [trace_text(tokenizer, model, s) for s in load_sentences()[:4]]


def test_no_answer(sample_trace, others):
    for fb in (ex.check_exercise_1(None, sample_trace), ex.check_exercise_2(None, sample_trace),
               ex.check_exercise_3(None, sample_trace, 2, others)):
        assert not fb.ok and "no answer" in fb.message


def test_exercise_1(sample_trace):
    answer = sol.solution_1(sample_trace)
    assert ex.check_exercise_1(answer, sample_trace).ok
    off = ex.check_exercise_1(answer + 1, sample_trace)
    assert not off.ok and "off by one" in off.message
    worst = int(compute.consecutive_cosines(sample_trace, 0).argmax())
    if worst not in (answer, answer + 1):
        assert "argmax" in ex.check_exercise_1(worst, sample_trace).hint
    assert "an int" in ex.check_exercise_1("2", sample_trace).message
    # any integer form is accepted: NumPy integer, 0-d tensor
    assert ex.check_exercise_1(np.int64(answer), sample_trace).ok
    assert ex.check_exercise_1(torch.tensor(answer), sample_trace).ok
    # a wrong try never shows the right layer
    cos = compute.consecutive_cosines(sample_trace, 0)
    wrong_layer = next(l for l in range(sample_trace.num_layers) if l not in (answer, answer + 1,
                                                                               int(cos.argmax())))
    fb = ex.check_exercise_1(wrong_layer, sample_trace)
    assert not fb.ok and f"{cos[answer]:.3f}" not in str(fb)


def test_exercise_2(sample_trace):
    assert ex.check_exercise_2(sol.my_norms, sample_trace).ok
    squared = ex.check_exercise_2(lambda t, k: sol.my_norms(t, k) ** 2, sample_trace)
    assert not squared.ok and "square root" in squared.hint
    shape = ex.check_exercise_2(lambda t, k: sol.my_norms(t, k)[1:], sample_trace)
    assert not shape.ok and "shape" in shape.message
    assert "function" in ex.check_exercise_2(3, sample_trace).message
    assert "an int" in ex.check_exercise_2(3, sample_trace).message
    scaled = ex.check_exercise_2(lambda t, k: sol.my_norms(t, k) / sol.my_norms(t, k).max(),
                                 sample_trace)
    assert not scaled.ok and "rescaled" in scaled.message
    # a wrong function never shows the model's norms
    off = ex.check_exercise_2(lambda t, k: sol.my_norms(t, k) + 1.0, sample_trace)
    right = f"{float(sol.my_norms(sample_trace, 0)[0]):.3f}"
    assert not off.ok and right not in str(off)


def test_exercise_3(sample_trace, others):
    token = sample_trace.find_word("unbelievably").first
    L = sample_trace.num_layers
    good = ex.check_exercise_3(sol.solution_3(sample_trace, token, others), sample_trace, token, others)
    assert good.ok and "control" in good.message
    raw = float(compute.interlayer_similarity(sample_trace, token)[1, L])
    fb = ex.check_exercise_3(torch.tensor(raw), sample_trace, token, others)
    assert not fb.ok and "raw" in fb.message and "layer 1" in fb.hint
    # the formula must not be handed out: no hint names the gap or the column
    for hint in (fb.hint, ex.check_exercise_3(None, sample_trace, token, others).hint):
        assert "gap=L" not in hint and "[:, 1]" not in hint
    column0 = raw - float(compute.random_pair_cosines(others, n_pairs=500, seed=0, gap=L - 1)[:, 0].mean())
    fb = ex.check_exercise_3(column0, sample_trace, token, others)
    assert not fb.ok and "column 0" in fb.message
    emb = raw - float(compute.random_pair_cosines(others, n_pairs=500, seed=0, gap=L)[:, 0].mean())
    fb = ex.check_exercise_3(emb, sample_trace, token, others)
    assert not fb.ok and "gap=L" in fb.message
    within = compute.random_pair_baseline(others, n_pairs=500, seed=0)
    old_way = raw - float(within[1] + within[L]) / 2  # the mean of two same-layer baselines
    fb = ex.check_exercise_3(old_way, sample_trace, token, others)
    assert not fb.ok and "same-layer" in fb.message
    fb = ex.check_exercise_3(raw - float(within[L]), sample_trace, token, others)
    assert not fb.ok and "same-layer" in fb.message
    assert "number" in ex.check_exercise_3("x", sample_trace, token, others).message
    assert not ex.check_exercise_3(sol.solution_3(sample_trace, token, others) + 0.05, sample_trace, token, others).ok


def test_exercise_4_grades_the_measurement_and_only_comments_on_the_prediction(others):
    answer = sol.solution_4(others)
    outcome = "lower" if answer < 0 else "higher"
    other = "higher" if outcome == "lower" else "lower"
    for prediction in (outcome, other, None, "no idea"):
        fb = ex.check_exercise_4(prediction, answer, others)
        assert fb.ok, prediction  # the prediction never makes an answer wrong
    assert "agrees" in ex.check_exercise_4(outcome, answer, others).message
    assert "says" in ex.check_exercise_4(other, answer, others).message
    assert "no prediction" in ex.check_exercise_4(None, answer, others).message
    assert ex.check_exercise_4(outcome, torch.tensor(answer), others).ok


def test_exercise_4_slips(others):
    answer = sol.solution_4(others)
    mean, std = compute.layer_mean_std(others, "content")
    raw = compute.random_pair_cosines(others, n_pairs=500, seed=0).mean(dim=0)
    centred = compute.random_pair_cosines(others, n_pairs=500, seed=0, shift=mean).mean(dim=0)
    L = len(raw) - 1
    cases = {
        "sign": -answer,
        "itself": float(centred[L]),
        "L - 1": float(centred[L - 1] - raw[L - 1]),
        "embeddings": float(centred[0] - raw[0]),
        "standardising": float(compute.random_pair_cosines(others, n_pairs=500, seed=0, shift=mean,
                                                           scale=std).mean(dim=0)[L] - raw[L]),
    }
    for word, value in cases.items():
        fb = ex.check_exercise_4("lower", value, others)
        assert not fb.ok and word in fb.message, (word, fb)
        assert f"{answer:+.3f}" not in str(fb) and f"{answer:.3f}" not in str(fb)
    fb = ex.check_exercise_4("lower", answer + 0.05, others)
    assert not fb.ok and f"{answer:.3f}" not in str(fb)
    assert "a str" in ex.check_exercise_4("lower", "x", others).message
    assert "no answer" in ex.check_exercise_4("lower", None, others).message
