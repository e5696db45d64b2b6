"""Checkers for lesson 07 (walking through the layers)."""

from __future__ import annotations

import torch

from helpers.layerwalk import compute
from helpers.exercises import Feedback, article, as_index, as_number, check_shape, correct, no_answer, wrong
from helpers.exercises.prediction import prediction_note


def check_exercise_1(answer, trace) -> Feedback:
    """The layer ``l`` whose transition ``l -> l + 1`` turns [CLS] the most."""
    if answer is None:
        return no_answer("Set answer_1 to an int: the l with the lowest cosine between layer l and l + 1.")
    answer, bad = as_index(answer, "The layer l")
    if bad is not None:
        return bad
    cos = compute.consecutive_cosines(trace, 0)
    expected = int(cos.argmin())
    if answer == expected + 1:
        return wrong(f"off by one: {answer} is the layer the transition ends at (or you counted "
                     "the cosines from 1).",
                     "Report l, the layer the transition starts from: index i of "
                     "consecutive_cosines is the step hidden(i) -> hidden(i + 1), 0 = embeddings.")
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
        given = type(my_norms).__name__
        return wrong(f"my_norms should be a function, but you gave {article(given)}.",
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
        if torch.allclose(result, expected / expected.max(), atol=1e-4) or torch.allclose(
                result, expected / expected.sum(), atol=1e-4):
            return wrong("these norms are rescaled (divided by their largest value or their sum).",
                         "Report the plain L2 norm of each vector: no normalisation afterwards.")
        if not torch.allclose(result, expected, atol=1e-4):
            return wrong(f"for token {token} the norms differ from the model's vectors "
                         f"(your embedding-layer value: {result[0]:.3f}).",
                         "Norm one token's vector over the hidden dimension, at every layer including 0.")
    return correct("your norms match for every token tried.")


def check_exercise_3(answer, trace, token, others) -> Feedback:
    """Cosine between ``token`` at layer 1 and at the last layer, minus the matching control: a
    random token at layer 1 against a different random token (another sentence) at layer L
    (``others``: the data traces the control is drawn from)."""
    if answer is None:
        return no_answer("Set answer_3 to a float: the raw cosine between layer 1 and the last layer, minus the "
                         "matching control.")
    value, bad = as_number(answer, "answer_3")
    if bad is not None:
        return bad
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
    # the control's pairs share sentences: its interval resamples sentences (pigeonhole bootstrap)
    ci = compute.random_pair_intervals(samples[:, 1:2], compute.random_pair_units(others, n_pairs=500, seed=0))[0]
    if raw > ci.high:
        verdict = "the raw cosine lies above the control's whole 95 % CI: something of the token is left"
    elif raw < ci.low:
        verdict = "the raw cosine lies below the control's 95 % CI: less alike than unrelated tokens"
    else:
        verdict = ("the raw cosine lies inside the control's 95 % CI: we cannot tell whether this one token "
                   "differs from unrelated tokens, which is not evidence that nothing is left")
    return correct(f"adjusted similarity {expected:.3f} (raw {raw:.3f}, control {ci}): {verdict}.")


def check_exercise_4(prediction, answer, others) -> Feedback:
    """Predict, then measure: the mean-centred random-pair cosine at the last layer minus the
    raw one. The measurement is graded; the prediction (``"higher"``/``"lower"``) only gets a
    comment."""
    if answer is None:
        return no_answer("Write your prediction first, then set answer_4 to a float: the "
                         "mean-centred random-pair cosine at the last layer minus the raw one.")
    value, bad = as_number(answer, "answer_4")
    if bad is not None:
        return bad
    mean, std = compute.layer_mean_std(others, "content")

    def pair_means(**kw) -> torch.Tensor:  # [L + 1]: the same 500 pairs every time
        return compute.random_pair_cosines(others, n_pairs=500, seed=0, **kw).mean(dim=0)

    raw, centred = pair_means(), pair_means(shift=mean)
    standardised = pair_means(shift=mean, scale=std)
    change = centred - raw
    L = len(change) - 1
    expected = float(change[L])

    def near(x) -> bool:
        return abs(value - float(x)) < 1e-4 and abs(value - expected) > 1e-4

    if abs(value - expected) < 1e-4:
        outcome = "lower" if expected < 0 else "higher"
        return correct(f"mean-centring changes the last layer's random-pair cosine by "
                       f"{expected:+.3f} (raw {raw[L]:.3f}, centred {centred[L]:.3f}). "
                       + prediction_note(prediction, outcome, ("higher", "lower")))
    if near(-expected):
        return wrong("the sign is flipped: you took raw minus centred.",
                     "The question asks for the centred cosine minus the raw one.")
    if near(centred[L]):
        return wrong("that is the centred cosine itself, not its change.",
                     "Subtract the raw random-pair cosine of the same layer.")
    if L >= 1 and near(change[L - 1]):
        return wrong("that is the change at layer L - 1: column l of random_pair_cosines is "
                     "hidden(l), so column 0 is the embeddings and column L the last layer.",
                     "Take the column of the last layer (index L, or -1).")
    if near(change[0]):
        return wrong("that is the change at the embeddings (column 0).",
                     "Take the column of the last layer (index L, or -1).")
    if near(standardised[L] - raw[L]):
        return wrong("you also divided by the standard deviation: that is standardising.",
                     "Pass only shift=mean (the layer means), not scale=std.")
    return wrong(f"{value:.3f} is not the change.",
                 "Draw the same 500 pairs (seed=0) twice with compute.random_pair_cosines, once "
                 "with shift=mean from compute.layer_mean_std(others, 'content'); compare the "
                 "means of the last layer's column.")
