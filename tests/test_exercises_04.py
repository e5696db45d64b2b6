"""Lesson 04 solutions pass their checkers on the real model; typical wrong answers get the right hint."""

import warnings

import numpy as np
import torch

from helpers.classify.compute import correct_per_item, fit_head_split
from helpers.exercises.lesson04 import check_exercise_1, check_exercise_2
from lessons.solutions import solutions_04 as sol


def test_exercise_1_mean_cosine_of_raw_and_pooled_cls(model, intent_data):
    _, test, _, fe = intent_data
    L = model.config.num_hidden_layers
    answer = sol.exercise_1(model, fe, L)
    # independent: the model's own pooler outputs (kept by extract_features), cosine by hand
    raw, pooled = fe.cls[L].double(), fe.pooler.double()
    by_hand = ((raw * pooled).sum(1) / (raw.norm(dim=1) * pooled.norm(dim=1))).mean().item()
    assert abs(answer - by_hand) < 1e-4
    fb = check_exercise_1(answer, 0.9, model, fe, layer=L)
    assert fb.ok and "You predicted 0.9" in fb.message
    assert check_exercise_1(answer, None, model, fe, layer=L).ok  # the prediction is never graded
    W, b = model.pooler.dense.weight, model.pooler.dense.bias
    X = fe.cls[L]
    cos = torch.nn.functional.cosine_similarity
    with torch.no_grad():
        no_tanh = cos(X, X @ W.T + b, dim=-1).mean().item()
        by_column = cos(X, torch.tanh(X @ W.T + b), dim=0).mean().item()
    # the bundled model's pre-activations are small (tanh nearly the identity: the two differ by
    # about 7e-5), yet leaving out the tanh is still refused, and the right answer says how close
    assert abs(no_tanh - answer) > 1e-5
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no PyTorch warning may reach the learner
        fb = check_exercise_1(no_tanh, 0.5, model, fe, layer=L)
    assert not fb.ok and "tanh" in fb.message
    assert f"Without the tanh it would be {no_tanh:.4f}" in check_exercise_1(answer, None, model, fe, layer=L).message
    fb = check_exercise_1(by_column, 0.5, model, fe, layer=L)
    assert not fb.ok and "columns" in fb.message
    fb = check_exercise_1(answer + 0.3, 0.5, model, fe, layer=L)
    assert not fb.ok and f"{answer:.2f}" not in str(fb)
    assert "no answer" in check_exercise_1(None, 0.5, model, fe, layer=L).message
    assert not check_exercise_1("x", 0.5, model, fe, layer=L).ok


def test_exercise_2_grades_the_measurement_and_only_comments_on_the_prediction(intent_data):
    train, test, ft, fe = intent_data
    answer = sol.exercise_2(ft, fe, train, test)
    # the layer-0 [CLS] vector is the same for every utterance: the head cannot beat a constant guess
    assert answer <= max(np.bincount(test.labels)) / len(test) + 1e-6
    for prediction in (0.1, 0.9, None, "low"):
        assert check_exercise_2(prediction, answer, ft, fe, train, test).ok, prediction
    fb = check_exercise_2(0.9, answer, ft, fe, train, test)
    assert "same layer-0 [CLS] vector" in fb.message and "You predicted 0.9" in fb.message


def test_exercise_2_slips(intent_data):
    train, test, ft, fe = intent_data
    answer = sol.exercise_2(ft, fe, train, test)

    def acc(layer, pooling):
        head, _ = fit_head_split(ft.layer(layer, pooling), train.labels, train.num_classes, dev_per_class=4, seed=0)
        return float(correct_per_item(head, fe.layer(layer, pooling), test.labels).float().mean())

    cases = {"percentage": 100 * answer, "mean-pooled": acc(0, "mean"), "last layer": acc(ft.num_layers, "cls"),
             "layer 1": acc(1, "cls")}
    tested = 0
    for words, value in cases.items():
        if any(abs(value - v) < 1e-6 for w, v in cases.items() if w != words) or abs(value - answer) < 1e-6:
            continue
        fb = check_exercise_2(0.5, value, ft, fe, train, test)
        assert not fb.ok and words in fb.message, (words, fb)
        assert f"{answer:.1%}" not in str(fb)
        tested += 1
    assert tested >= 3
    assert "a str" in check_exercise_2(0.5, "x", ft, fe, train, test).message
    assert "no answer" in check_exercise_2(0.5, None, ft, fe, train, test).message
