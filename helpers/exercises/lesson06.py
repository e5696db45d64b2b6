"""Checkers for lesson 06 (meaning in context)."""

from __future__ import annotations

import torch

from helpers.common.stats import accuracy_ci
from helpers.context import compute
from helpers.exercises import Feedback, correct, no_answer, wrong


def check_exercise_1(answer, groups) -> Feedback:
    """The lowest layer whose accuracy interval (``accuracy_ci`` over the sentences) overlaps the
    interval of the best layer (highest accuracy, the lowest such layer on a tie), for the first
    word in ``groups``."""
    if answer is None:
        return no_answer("Set answer_1 to an int layer (0 = embeddings).")
    if isinstance(answer, bool) or not isinstance(answer, int):
        return wrong(f"answer should be an int layer, but you gave a {type(answer).__name__}.",
                     "Use int(...) on a tensor index.")
    word, senses = next(iter(groups.items()))
    outcomes = compute.sense_separation_outcomes(senses)  # [n_sentences, layers]
    n = outcomes.shape[1]
    if not 0 <= answer < n:
        return wrong(f"layer {answer} does not exist: valid layers are 0 to {n - 1}.", "Layer 0 is the embeddings.")
    cis = [accuracy_ci(outcomes[:, l]) for l in range(n)]
    acc = outcomes.float().mean(dim=0)
    best = int(torch.nonzero(acc == acc.max())[0])
    overlapping = [l for l in range(n) if cis[l].overlaps(cis[best])]
    expected = overlapping[0]
    if answer == best and best != expected:
        return wrong(f"layer {best} is the best layer itself ({cis[best].percent(0)}); the question asks for the "
                     "lowest layer whose interval overlaps its interval.",
                     "Compare every layer's interval with the best layer's, starting from layer 0.")
    if answer != expected and answer in overlapping:
        return wrong(f"layer {answer}'s interval {cis[answer].percent(0)} does overlap the best layer's, but so does "
                     "a lower layer's.", "Start from layer 0 and take the first layer that overlaps.")
    if answer != expected:
        return wrong(f"layer {answer}'s interval {cis[answer].percent(0)} does not overlap the best layer's "
                     f"{cis[best].percent(0)}.",
                     "Two intervals overlap when each one's low end lies below the other's high end.")
    note = (": with ten sentences even the embeddings cannot be told apart from the best layer" if expected == 0
            else "")
    return correct(f"for {word!r} the best layer is {best} ({cis[best].percent(0)}), and layer {expected} "
                   f"({cis[expected].percent(0)}) is the lowest whose interval overlaps it{note}.")


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
