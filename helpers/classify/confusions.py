"""Lessons 04 and 10 (:mod:`helpers.classify`): which intents a head mixes up: :func:`confusion_matrix`, the most
frequent (true -> predicted) confusions (:func:`top_confusions`) and the matrix restricted to their
intents (:func:`confusion_subset`).
"""

from __future__ import annotations

import numpy as np
import torch


def confusion_matrix(y_true, y_pred, num_classes: int) -> np.ndarray:
    """``cm[i, j]`` = how many items of true class ``i`` were predicted as ``j``. ``y_pred`` may be
    ``[n_runs, n_items]`` (one row per seed or draw): the counts of all runs are added."""
    y_true, y_pred = (np.asarray(y.cpu() if isinstance(y, torch.Tensor) else y) for y in (y_true, y_pred))
    if y_pred.ndim == 2 and y_true.ndim == 1:
        y_true = np.broadcast_to(y_true, y_pred.shape)
    if y_true.shape != y_pred.shape:
        raise ValueError(f"y_true and y_pred differ in shape: {y_true.shape} vs {y_pred.shape}.")
    cm = np.zeros((num_classes, num_classes), dtype=int)
    np.add.at(cm, (y_true.ravel(), y_pred.ravel()), 1)
    return cm


def top_confusions(cm, k: int = 10) -> list[tuple[int, int, int]]:
    """The ``k`` largest off-diagonal counts of a confusion matrix as ``(true, predicted, count)``,
    largest first (ties: lower true id, then lower predicted id); never a zero count."""
    cm = np.asarray(cm)
    if cm.ndim != 2 or cm.shape[0] != cm.shape[1]:
        raise ValueError(f"cm must be a square confusion matrix, got shape {cm.shape}.")
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be a positive int, got {k!r}.")
    pairs = [(int(i), int(j), int(cm[i, j])) for i, j in zip(*np.nonzero(cm)) if i != j]
    return sorted(pairs, key=lambda p: (-p[2], p[0], p[1]))[:k]


def confusion_subset(cm, classes) -> np.ndarray:
    """The rows and columns of ``classes`` (in that order) of a confusion matrix, plus one last column
    that counts the predictions of every other class: ``[k, k + 1]``, each row keeps its total."""
    cm = np.asarray(cm)
    classes = [int(c) for c in classes]
    if not classes or len(set(classes)) != len(classes) or not all(0 <= c < cm.shape[0] for c in classes):
        raise ValueError(f"classes must be distinct class ids in 0..{cm.shape[0] - 1}, got {classes}.")
    sub = cm[np.ix_(classes, classes)]
    return np.concatenate([sub, (cm[classes].sum(1) - sub.sum(1))[:, None]], axis=1)
