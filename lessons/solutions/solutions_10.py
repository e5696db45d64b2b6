"""Worked solutions for lesson 10 (plain functions; the tests run them through the checkers)."""

import numpy as np


def exercise_1(probes):
    accs = probes["mean"]
    return max(range(len(accs)), key=accs.__getitem__)


def exercise_2(y_true, y_pred, num_classes):
    cm = np.zeros((num_classes, num_classes), dtype=int)
    for t, p in zip(y_true, y_pred):
        cm[t, p] += 1
    return cm
