"""Checkers for lesson 04 (walking through the layers)."""

from __future__ import annotations

import torch

from helpers.common.stats import bootstrap_ci
from helpers.layerwalk import compute
from helpers.exercises import Feedback, check_shape, correct, no_answer, wrong


def check_exercise_1(answer, trace) -> Feedback:
    """The layer ``l`` whose transition ``l -> l + 1`` turns [CLS] the most."""
    if answer is None:
        return no_answer("Set answer_1 to an int: the l with the lowest cosine between layer l and l + 1.")
    if isinstance(answer, bool) or not isinstance(answer, int):
        return wrong(f"answer should be an int layer index, but you gave a {type(answer).__name__}.",
                     "Use int(tensor.argmin()) to turn a tensor index into an int.")
    cos = compute.consecutive_cosines(trace, 0)
    expected = int(cos.argmin())
    if answer == expected + 1:
        return wrong(f"off by one: {answer} is the layer the transition ends at.",
                     "Report l, the layer the transition starts from (0 = embeddings).")
    if not 0 <= answer < trace.num_layers:
        return wrong(f"{answer} is not a transition: valid values are 0 to {trace.num_layers - 1} "
                     f"(l means layer l -> l + 1).", "There are L transitions for L + 1 hidden states.")
    if answer == int(cos.argmax()):
        return wrong(f"layer {answer} -> {answer + 1} is the transition that changes [CLS] the *least*.",
                     "The lowest cosine means the biggest turn: use argmin, not argmax.")
    if answer != expected:
        return wrong(f"the cosine for {answer} -> {answer + 1} is {cos[answer]:.3f}, not the lowest.",
                     "Compute compute.consecutive_cosines(trace, 0) (or by hand) and take its argmin.")
    return correct(f"layer {expected} -> {expected + 1} turns [CLS] most (cosine {cos[expected]:.3f}).")


def check_exercise_2(my_norms, trace) -> Feedback:
    """A function ``my_norms(trace, token)`` -> ``[L + 1]`` L2 norms."""
    if my_norms is None:
        return no_answer("Define my_norms(trace, token) returning a tensor of shape [L + 1].")
    if not callable(my_norms):
        return wrong(f"my_norms should be a function, but you gave a {type(my_norms).__name__}.",
                     "Write `def my_norms(trace, token): ...` and pass the function itself.")
    for token in sorted({0, trace.seq_len // 2, trace.seq_len - 1}):
        try:
            result = my_norms(trace, token)
        except Exception as err:  # noqa: BLE001 - the learner's code may fail any way
            return wrong(f"my_norms(trace, {token}) raised {type(err).__name__}: {err}",
                         "Use trace.hidden(layer)[token] for layer in range(trace.num_layers + 1).")
        result = torch.as_tensor(result, dtype=torch.float32, device=trace.device)
        shaped = check_shape(result, (trace.num_layers + 1,), f"my_norms(trace, {token})")
        if shaped is not None:
            return shaped
        expected = compute.layer_norms(trace, token)
        if torch.allclose(result, expected.pow(2), atol=1e-3):
            return wrong("these are squared norms.", "Take the square root: norm = sqrt(sum of squares).")
        if not torch.allclose(result, expected, atol=1e-4):
            return wrong(f"for token {token} the norms differ from the model's vectors "
                         f"(first layer: {result[0]:.3f} vs {expected[0]:.3f}).",
                         "Norm one token's vector over the hidden dimension, at every layer including 0.")
    return correct("your norms match for every token tried.")


def check_exercise_3(answer, trace, token, others) -> Feedback:
    """Cosine between ``token`` at layer 1 and at the last layer, minus the matching control: a
    random token at layer 1 against a different random token (another sentence) at layer L
    (``others``: the data traces the control is drawn from)."""
    if answer is None:
        return no_answer("Set answer_3 to a float: the raw cosine between layer 1 and the last layer, minus the "
                         "matching control.")
    try:
        value = float(answer)
    except (TypeError, ValueError):
        return wrong(f"answer should be a number, but you gave a {type(answer).__name__}.", "Use .item() on a tensor.")
    L = trace.num_layers
    if L < 2:
        return wrong(f"this model has {L} layer: layer 1 is the last one, there is nothing to compare.",
                     "Run the lesson with a model of at least 2 layers.")
    raw = float(compute.interlayer_similarity(trace, token)[1, L])
    samples = compute.random_pair_cosines(others, n_pairs=500, seed=0, gap=L - 1)  # column l: layer l vs l + L - 1
    control = float(samples[:, 1].mean())
    expected = raw - control
    within = compute.random_pair_baseline(others, n_pairs=500, seed=0)
    emb_to_last = float(compute.random_pair_cosines(others, n_pairs=500, seed=0, gap=L)[:, 0].mean())

    def near(x: float) -> bool:
        return abs(value - x) < 1e-4 and abs(value - expected) > 1e-4

    if abs(value - raw) < 1e-4:
        return wrong(f"{value:.3f} is the raw cosine: the control has not been subtracted.",
                     "Subtract the mean cosine of random pairs taken one at layer 1, the other at the last layer.")
    if near(raw - float(samples[:, 0].mean())):
        return wrong("you took column 0 of the samples: that control compares the embeddings with layer L - 1.",
                     "Column l of random_pair_cosines(..., gap=g) compares layer l with layer l + g.")
    if near(raw - emb_to_last):
        return wrong("with gap=L the control compares the embeddings with the last layer, not layer 1.",
                     "The gap is the number of layers between layer 1 and the last layer.")
    if near(raw - float(within[1] + within[L]) / 2):
        return wrong("you subtracted the mean of the two same-layer baselines: that does not match a comparison "
                     "across layers.", "The control pairs two different tokens, one at layer 1, one at the last "
                     "layer: random_pair_cosines with a gap.")
    if near(raw - float(within[1])) or near(raw - float(within[L])):
        return wrong("you subtracted a same-layer baseline (gap=0).",
                     "The control compares a random token at layer 1 with a different one at the last layer.")
    if abs(value - expected) > 1e-3:
        return wrong(f"{value:.3f} is not the adjusted value.",
                     "Raw: the token's cosine between layer 1 and the last layer. Control: the mean of the column "
                     "of random_pair_cosines that pairs layer 1 with the last layer.")
    ci = bootstrap_ci(samples[:, 1])
    if raw > ci.high:
        verdict = "the raw cosine lies above the control's whole 95 % interval: something of the token is left"
    elif raw < ci.low:
        verdict = "the raw cosine lies below the control's 95 % interval: less alike than unrelated tokens"
    else:
        verdict = ("the raw cosine lies inside the control's 95 % interval: inconclusive -- this one token is "
                   "not shown to differ from unrelated tokens, which is not evidence that nothing is left")
    return correct(f"adjusted similarity {expected:.3f} (raw {raw:.3f}, control {ci}): {verdict}.")
