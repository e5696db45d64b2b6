"""Checkers for lesson 06 (meaning in context)."""

from __future__ import annotations

import numpy as np
import torch

from helpers.common.stats import Interval, bootstrap_ci, cluster_bootstrap_ci, verdict
from helpers.context import compute
from helpers.exercises import Feedback, correct, no_answer, wrong


def _last_minus_embeddings(groups):
    """Per sentence of every word: outcome at the last layer minus at the embeddings (1, 0 or -1),
    and the word of each sentence."""
    diffs, words = [], []
    for word, senses in groups.items():
        outcomes = compute.sense_separation_outcomes(senses).float()  # [n_sentences, layers]
        diffs.append(outcomes[:, -1] - outcomes[:, 0])
        words += [word] * len(outcomes)
    return torch.cat(diffs), np.array(words)


def _as_interval(answer):
    if isinstance(answer, Interval):
        return answer
    try:
        estimate, low, high = (float(x) for x in answer)
    except (TypeError, ValueError):
        return None
    return Interval(estimate, low, high)


def check_exercise_1(answer, groups) -> Feedback:
    """The pooled accuracy of the last layer minus the embeddings', paired per sentence, with a 95 %
    interval that resamples **words** (``cluster_bootstrap_ci(differences, word_of_each_sentence,
    seed=0)``): a word's sentences share its centroids, so the word is the independent unit."""
    if answer is None:
        return no_answer("Set answer_1 to the Interval returned by cluster_bootstrap_ci (or (estimate, low, high)).")
    if len(groups) < 2:
        return wrong(f"this needs at least two words to resample, but groups holds {len(groups)}.",
                     "Run the lesson with the full polysemy data (every word of `groups`).")
    got = _as_interval(answer)
    if got is None:
        return wrong(f"answer should be an Interval or three numbers (estimate, low, high), not a "
                     f"{type(answer).__name__}.", "cluster_bootstrap_ci(values, clusters) returns an Interval.")
    diffs, words = _last_minus_embeddings(groups)
    expected = cluster_bootstrap_ci(diffs, words, seed=0)

    def same(a: Interval, b: Interval, tol: float = 1e-6) -> bool:
        return all(abs(x - y) < tol for x, y in ((a.estimate, b.estimate), (a.low, b.low), (a.high, b.high)))

    if abs(got.estimate + expected.estimate) < 1e-6 and abs(expected.estimate) > 1e-6:
        return wrong(f"your estimate {got.estimate:+.3f} has the wrong sign: that is the embeddings minus the last "
                     "layer.", "Subtract the embeddings' outcome (layer 0) from the last layer's, sentence by "
                     "sentence.")
    if abs(got.estimate - expected.estimate) > 1e-6:
        return wrong(f"the estimate {got.estimate:+.3f} is not the mean paired difference over all "
                     f"{len(diffs)} sentences.", "Per sentence: outcome at the last layer minus outcome at layer 0 "
                     "(each 0 or 1), then the mean over every sentence of every word.")
    by_sentence = [bootstrap_ci(diffs, n_boot=n, seed=0) for n in (1000, 2000)]
    if any(same(got, b) for b in by_sentence):
        return wrong(f"your interval [{got.low:+.3f}, {got.high:+.3f}] resamples sentences one by one; a word's "
                     f"sentences share its centroids, so they are not independent (the word-resampled interval is "
                     f"[{expected.low:+.3f}, {expected.high:+.3f}]).",
                     "Use cluster_bootstrap_ci(differences, clusters=word_of_each_sentence, seed=0).")
    if not same(got, expected):
        return wrong(f"the interval [{got.low:+.3f}, {got.high:+.3f}] is not the one that resamples words.",
                     "cluster_bootstrap_ci(differences, clusters=word_of_each_sentence, seed=0), with the sentences "
                     "in the order of `groups` and the other arguments left at their defaults.")
    v = verdict(expected, a="last layer", b="embeddings", percent=True)
    return correct(f"over {len(diffs)} sentences of {len(groups)} words, resampling words: {v}.")


def check_exercise_2(my_self_similarity, groups) -> Feedback:
    """A function ``[n, H] -> float`` mean off-diagonal cosine."""
    if my_self_similarity is None:
        return no_answer("Define my_self_similarity(vectors) for a [n, H] tensor.")
    if not callable(my_self_similarity):
        return wrong(f"my_self_similarity should be a function, not a {type(my_self_similarity).__name__}.",
                     "Write `def my_self_similarity(vectors): ...` and pass the function.")
    for word, senses in groups.items():
        uses = torch.cat(list(senses.values()))  # [n, L+1, H]
        for layer in (0, uses.shape[1] - 1):
            vectors = uses[:, layer]
            try:
                value = float(my_self_similarity(vectors))
            except Exception as err:  # noqa: BLE001 - learner code
                return wrong(f"my_self_similarity raised {type(err).__name__}: {err}",
                             "Normalise the rows, take v @ v.T, and average the off-diagonal entries.")
            expected = float(compute.self_similarity(vectors.unsqueeze(1))[0])
            normed = torch.nn.functional.normalize(vectors, dim=-1)
            with_diag = float((normed @ normed.T).mean())
            if abs(value - with_diag) < 1e-4 and abs(value - expected) > 1e-4:
                return wrong("your mean includes each context compared with itself (cosine 1).",
                             "Leave out the diagonal: only pairs of different contexts count.")
            if abs(value - expected) > 1e-4:
                return wrong(f"for {word!r} at layer {layer} you got {value:.4f}, expected {expected:.4f}.",
                             "Use cosine similarity (normalise first), not raw dot products.")
    return correct("your self-similarity matches on every word, at the first and last layer.")
