"""Lesson 10 solutions pass their checkers on the real model; typical wrong answers get the right hint."""

import numpy as np
import torch

from helpers.classify.comparisons import SeededAccuracy
from helpers.classify.compute import Draw
from helpers.classify.findings import layers_tied_with_peak
from helpers.classify.strategies import probe_draws
from helpers.common.training import stratified_dev_split
from helpers.common.stats import Interval
from helpers.exercises.lesson10 import check_exercise_1, check_exercise_2
from lessons.solutions import solutions_10 as sol


def test_exercise_1():
    probes = {"mean": [0.5, 0.9, 0.7], "cls": [0.1, 0.3, 0.8]}
    assert check_exercise_1(sol.exercise_1(probes), probes).ok
    fb = check_exercise_1(2, probes)
    assert not fb.ok and "probes['mean']" in fb.hint
    shifted = {"mean": [0.5, 0.9, 0.7], "cls": [0.3, 0.8, 0.1]}
    fb = check_exercise_1(2, shifted)  # best is index 1: counted from 1
    assert not fb.ok and "counted the layers from 1" in fb.message
    fb = check_exercise_1(0, shifted)  # an encoder.layer index
    assert not fb.ok and "encoder.layer" in fb.message
    for form in (np.int64(1), torch.tensor(1)):
        assert check_exercise_1(form, probes).ok
    assert "an int" in check_exercise_1(1.0, probes).message
    far = {"mean": [0.5, 0.9, 0.7, 0.6, 0.2], "cls": [0.1] * 5}
    fb = check_exercise_1(4, far)
    assert not fb.ok and "90" not in str(fb)  # the best accuracy is not given away
    assert "does not exist" in check_exercise_1(7, probes).message
    intervals = [Interval(0.5, 0.4, 0.6), Interval(0.9, 0.75, 1.0), Interval(0.7, 0.6, 0.8)]
    fb = check_exercise_1(1, probes, intervals)
    # separate intervals are no test of a difference: the checker asks for the paired outcomes
    assert fb.ok and "says nothing about the difference" in fb.message and "runs=" in fb.message
    assert "not distinguishable" not in fb.message and "overlaps no other" not in fb.message


def test_exercise_1_pairs_the_layers_on_the_test_items(intent_data):
    train, test, ft, fe = intent_data
    draws = {}
    for s in (0, 1):
        rows, dev = stratified_dev_split(train.labels, per_class=2, seed=s)
        draws[s] = Draw(ft.select(rows), [train.labels[i] for i in rows], ft.select(dev), [train.labels[i] for i in dev])
    runs = probe_draws(draws, fe, test.labels, train.num_classes, "mean", progress=False).runs
    probes = {"mean": [r.estimate for r in runs], "cls": [0.0] * len(runs)}
    best = sol.exercise_1(probes)
    fb = check_exercise_1(best, probes, runs=runs)
    assert fb.ok and "Bonferroni over the" in fb.message and "not distinguishable" not in fb.message
    # the layers it names are those the lesson's peak verdict cannot place below the peak
    top, tied, _ = layers_tied_with_peak(runs)
    assert top == best
    assert (f"layers {tied} are not shown lower: inconclusive" in fb.message) if tied else \
        ("every other layer is lower" in fb.message)


def test_exercise_1_adjusts_for_the_number_of_layers():
    # three layers each wrong on 6 items the best gets right: McNemar's test gives p = 0.014 each,
    # "lower" alone, but the best is picked from the data, so the family is the 6 pairs of layers
    # (Bonferroni): inconclusive
    best = torch.ones(100, dtype=torch.bool)
    runs = []
    for i in range(3):
        worse = best.clone()
        worse[6 * i:6 * i + 6] = False
        runs.append(SeededAccuracy(worse[None], (0,)))
    runs.append(SeededAccuracy(best[None], (0,)))
    probes = {"mean": [r.estimate for r in runs], "cls": [0.1] * 4}
    fb = check_exercise_1(3, probes, runs=runs)
    assert fb.ok and "layers [0, 1, 2] are not shown lower: inconclusive" in fb.message


def test_exercise_2():
    y, p = [0, 1, 1, 2], [1, 1, 1, 2]
    assert check_exercise_2(sol.exercise_2(y, p, 3), y, p, 3).ok
    fb = check_exercise_2(sol.exercise_2(y, p, 3).T, y, p, 3)
    assert not fb.ok and "cm[true, predicted]" in fb.hint and "swapped" in fb.message
    cm = sol.exercise_2(y, p, 3)
    fb = check_exercise_2(cm / cm.sum(axis=1, keepdims=True), y, p, 3)
    assert not fb.ok and "normalised" in fb.message
    assert check_exercise_2(torch.tensor(cm), y, p, 3).ok


def test_exercise_1_paired_is_sharper_than_overlap():
    # layer 1 is right on 95 items; layer 0 on the same items but 8 (87): their own intervals
    # overlap, yet item by item layer 0 is never better: the paired interval (8 of 8 discordant
    # items favour layer 1) places it lower
    best = torch.ones(100, dtype=torch.bool)
    best[:5] = False
    worse = best.clone()
    worse[5:13] = False
    runs = [SeededAccuracy(worse[None], (0,)), SeededAccuracy(best[None], (0,))]
    assert runs[0].interval().high > runs[1].interval().low  # the separate intervals overlap
    probes = {"mean": [0.87, 0.95], "cls": [0.1, 0.1]}
    fb = check_exercise_1(1, probes, runs=runs)
    assert fb.ok and "every other layer is lower" in fb.message


def test_exercise_1_comments_on_the_prediction_and_never_grades_it():
    probes = {"mean": [0.5, 0.9, 0.7], "cls": [0.1, 0.3, 0.8]}
    for prediction in (1, 2, None, "the last"):
        assert check_exercise_1(1, probes, prediction=prediction).ok, prediction
    assert "the measurement agrees" in check_exercise_1(1, probes, prediction=1).message
    assert "You predicted layer 2" in check_exercise_1(1, probes, prediction=2).message
    assert not check_exercise_1(2, probes, prediction=2).ok  # a wrong measurement stays wrong
