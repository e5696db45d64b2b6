"""Checkers for lesson 09 (meaning in context)."""

from __future__ import annotations

import numpy as np
import torch

from helpers.common.stats import Interval, bootstrap_ci, cluster_bootstrap_ci, verdict
from helpers.context import compute
from helpers.exercises import Feedback, article, as_number, correct, no_answer, wrong
from helpers.exercises.prediction import number_note


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
        given = type(answer).__name__
        return wrong(f"answer should be an Interval or three numbers (estimate, low, high), not "
                     f"{article(given)}.", "cluster_bootstrap_ci(values, clusters) returns an Interval.")
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
                     "sentences share its centroids, so they are not independent.",
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
        given = type(my_self_similarity).__name__
        return wrong(f"my_self_similarity should be a function, not {article(given)}.",
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
            dots = vectors @ vectors.T
            n = len(vectors)
            unnormalised = float((dots.sum() - dots.diagonal().sum()) / (n * (n - 1)))
            if abs(value - unnormalised) < 1e-3 * max(1.0, abs(unnormalised)):
                return wrong("these are unnormalised dot products, not cosines.",
                             "Divide each vector by its length first (F.normalize), then take v @ v.T.")
            if abs(value - expected) > 1e-4:
                return wrong(f"for {word!r} at layer {layer} your function gives {value:.4f}, which is not "
                             "the mean cosine over pairs of different contexts.",
                             "Normalise the rows, take v @ v.T, and average the off-diagonal entries.")
    return correct("your self-similarity matches on every word, at the first and last layer.")


def _self_similarity_by_word(groups) -> torch.Tensor:
    """Raw self-similarity of every word (both senses pooled), ``[words, L + 1]``."""
    return torch.stack([compute.self_similarity(torch.cat(list(s.values()))) for s in groups.values()])


def check_exercise_3(prediction, answer, groups) -> Feedback:
    """Predict, then measure: the share of words whose raw self-similarity is lower at the last
    layer than at the layer before it. Only the measurement is graded."""
    if answer is None:
        return no_answer("Write your prediction first, then set answer_3 to a float between 0 and 1: "
                         "the share of words whose self-similarity falls at the last step.")
    value, bad = as_number(answer, "answer_3")
    if bad is not None:
        return bad
    by_word = _self_similarity_by_word(groups)
    L = by_word.shape[1] - 1
    falls = by_word[:, L] < by_word[:, L - 1]
    expected = float(falls.float().mean())
    n = len(by_word)

    def near(x) -> bool:
        return abs(value - float(x)) < 1e-6 and abs(value - expected) > 1e-6

    if abs(value - expected) < 1e-6:
        return correct(f"the self-similarity falls at the last step (layer {L - 1} -> {L}) for "
                       f"{int(falls.sum())} of {n} words ({expected:.0%}). "
                       + number_note(prediction, expected))
    if near(100 * expected):
        return wrong("that is a percentage: give a fraction between 0 and 1.", "Divide by 100.")
    if near(falls.sum()):
        return wrong("that is a count of words, not a share.", "Divide by the number of words.")
    if near((by_word[:, L] > by_word[:, L - 1]).float().mean()):
        return wrong("that is the share of words whose self-similarity *rises* at the last step.",
                     "Count the words whose value at layer L is below the one at layer L - 1.")
    if L >= 2 and near((by_word[:, L - 1] < by_word[:, L - 2]).float().mean()):
        return wrong("that is the step into layer L - 1: column l of the self-similarity is hidden(l) "
                     "(column 0 the embeddings), so the last step compares columns L - 1 and L.",
                     "Compare the last column with the one before it.")
    if near((by_word[:, L] < by_word[:, 0]).float().mean()):
        return wrong("you compared the last layer with the embeddings, not with the layer before it.",
                     "Compare columns L - 1 and L.")
    return wrong(f"{value:.3f} is not the share.",
                 "Per word: compute.self_similarity over all its sentences (both senses) gives one "
                 "value per layer; count the words whose last value is below the one before it.")
