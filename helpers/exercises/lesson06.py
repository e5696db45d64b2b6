"""Checkers for lesson 06 (meaning in context)."""

from __future__ import annotations

import torch

from helpers.context import compute
from helpers.exercises import Feedback, correct, no_answer, wrong


def check_exercise_1(answer, groups) -> Feedback:
    """Lowest layer with the highest sense-separation accuracy for the first word in ``groups``."""
    if answer is None:
        return no_answer("Set answer_1 to an int layer (0 = embeddings).")
    if isinstance(answer, bool) or not isinstance(answer, int):
        return wrong(f"answer should be an int layer, but you gave a {type(answer).__name__}.",
                     "Use int(tensor.argmax()).")
    word, senses = next(iter(groups.items()))
    acc = compute.sense_separation(senses)
    n = acc.shape[0]
    if not 0 <= answer < n:
        return wrong(f"layer {answer} does not exist: valid layers are 0 to {n - 1}.", "Layer 0 is the embeddings.")
    best = int(torch.nonzero(acc == acc.max())[0])
    if acc[answer] == acc.max() and answer != best:
        return wrong(f"layer {answer} ties for the best accuracy, but it is not the lowest such layer.",
                     "torch.argmax returns the first maximum; or scan from layer 0 upwards.")
    if answer != best:
        return wrong(f"layer {answer} reaches {acc[answer]:.0%}, below the best {acc.max():.0%}.",
                     f"Compute compute.sense_separation(groups[{word!r}]) and take the argmax.")
    return correct(f"for {word!r}, layer {best} is the first to reach {acc.max():.0%}.")


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
