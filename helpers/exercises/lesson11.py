"""Checkers for lesson 11 (using layers in practice)."""

from __future__ import annotations

import math

import torch

from helpers.exercises import NO_ANSWER, Feedback, article, correct, no_answer, wrong
from helpers.exercises.prediction import prediction_note
from helpers.model.trace import model_device


def check_exercise_1(lrs) -> Feedback:
    """``lrs(base_lr, decay, num_layers)`` -> [lr for embeddings, layer 1, ..., layer L]."""
    if lrs is None:
        return NO_ANSWER
    if not callable(lrs):
        given = type(lrs).__name__
        return wrong(f"lrs should be a function, you gave {article(given)}.",
                     "Define `def lrs(base_lr, decay, num_layers): ...`.")
    for base, xi, n in ((1e-3, 0.8, 6), (2e-5, 0.9, 12), (0.1, 0.5, 3)):
        expected = [base * xi ** (n + 1 - l) for l in range(n + 1)]
        try:
            got = list(lrs(base, xi, n))
        except Exception as err:  # noqa: BLE001 - the learner's code
            return wrong(f"lrs({base}, {xi}, {n}) raised {type(err).__name__}: {err}", "Return a list of floats.")
        if len(got) != n + 1:
            return wrong(f"lrs(..., num_layers={n}) returned {len(got)} rates, expected {n + 1}.",
                         "One for the embeddings (index 0) and one per layer 1..L.")
        if all(math.isclose(g, e, rel_tol=1e-9) for g, e in zip(got, expected)):
            continue
        if all(math.isclose(g, e, rel_tol=1e-9) for g, e in zip(got, expected[::-1])):
            return wrong("the order is reversed: the embeddings should get the smallest rate.", "Layer l gets base * decay**(L+1-l).")
        if all(math.isclose(g, e / xi, rel_tol=1e-9) for g, e in zip(got, expected)):
            return wrong("every rate is one factor of decay too large: the exponent is off by one.",
                         "The head alone gets base; layer L, just below it, already gets base * decay.")
        if all(math.isclose(g, e * xi, rel_tol=1e-9) for g, e in zip(got, expected)):
            return wrong("every rate is one factor of decay too small: the exponent is off by one.",
                         "Layer L, just below the head, gets base * decay (exponent L + 1 - L = 1).")
        return wrong(f"lrs({base}, {xi}, {n}) starts {[f'{g:.3g}' for g in got[:3]]}: not the layer-wise "
                     "decay.", "Layer l gets base * decay**(L+1-l); the head alone gets base.")
    return correct("the lower the layer, the smaller its learning rate.")


def check_exercise_2(kept, tokenizer, model, sentence) -> Feedback:
    """A dict {1: tensor} equal to hidden_states[1] of ``sentence``."""
    if kept is None:
        return NO_ANSWER
    if not isinstance(kept, dict):
        given = type(kept).__name__
        return wrong(f"give the dict the context manager yielded, not {article(given)}.",
                     "with keep_hidden_states(model, [1]) as kept: model(**enc)")
    if not kept:
        return wrong("the dict is empty: the forward pass must run inside the `with` block.", "Call model(**enc) inside the with block.")
    if set(kept) == {0}:
        return wrong("you kept layer 0, the embeddings: layer 1 is hidden(1), the output of "
                     "encoder.layer[0].", "keep_hidden_states counts like hidden_states: pass [1].")
    if set(kept) != {1}:
        return wrong(f"you kept layers {sorted(kept)}, only layer 1 was asked for.", "Pass [1] as the layers.")
    got = kept[1]
    if not isinstance(got, torch.Tensor) or got.ndim != 3 or got.shape[0] != 1:
        return wrong(f"kept[1] should be a [1, tokens, H] tensor, got {getattr(got, 'shape', type(got).__name__)}.",
                     "Run the model on one encoded sentence inside the with block.")
    # Any truncation length is fine (encode_batch keeps 32 tokens, the lesson's `encode` the model's
    # maximum): compare with SENTENCE encoded to as many tokens as the kept tensor has.
    enc = tokenizer([sentence], return_tensors="pt", truncation=True, max_length=got.shape[1]).to(model_device(model))
    with torch.no_grad():
        ref = model(**enc, output_hidden_states=True).hidden_states[1]
    if got.shape != ref.shape or not torch.allclose(got, ref, atol=1e-5):
        return wrong("the kept tensor is not layer 1's output for SENTENCE.", "Encode SENTENCE with encode_batch(tokenizer, [SENTENCE]).")
    return correct("one layer kept, equal to hidden_states[1].")


EXERCISE_3_BATCH = (4, 64)  # utterances, padded length


def exercise_3_batch(tokenizer, train, device=None):
    """The batch exercise 3 asks for: the first 4 training utterances padded to 64 tokens, and their
    labels, on ``device`` (the classifier's; default the CPU)."""
    n, length = EXERCISE_3_BATCH
    device = "cpu" if device is None else device
    batch = tokenizer(train.texts[:n], padding="max_length", truncation=True, max_length=length,
                      return_tensors="pt").to(device)
    return {k: batch[k] for k in ("input_ids", "attention_mask")}, torch.tensor(train.labels[:n], device=device)


def check_exercise_3(ratio, clfs, tokenizer, train, memory, prediction=None) -> Feedback:
    """Predict, then measure: plain activation bytes / checkpointed activation bytes for the batch
    of :func:`exercise_3_batch`, measured here with ``saved_for_backward`` on ``clfs``.
    ``memory`` holds the lesson's own measurement (8 x 32), to recognise it when it is handed in.
    ``prediction`` (``"grows"``/``"shrinks"``) is only commented on, never graded."""
    if ratio is None:
        return no_answer("Write your prediction first, then set ratio to a number: plain activation "
                         "bytes / checkpointed activation bytes for the new batch.")
    if hasattr(ratio, "ndim") and getattr(ratio, "ndim", None) == 0 and hasattr(ratio, "item"):
        ratio = ratio.item()  # a 0-d tensor or NumPy scalar
    if isinstance(ratio, bool) or not isinstance(ratio, (int, float)):
        given = type(ratio).__name__
        return wrong(f"give a number, you gave {article(given)}.", "memory[mode].activation_bytes is an int.")
    from helpers.practice.compute import saved_for_backward

    ratio = float(ratio)
    inputs, labels = exercise_3_batch(tokenizer, train, model_device(clfs["plain"]))
    plain, ckpt = (saved_for_backward(clfs[mode], inputs, labels) for mode in ("plain", "checkpointed"))
    expected = plain.activation_bytes / ckpt.activation_bytes
    lesson = memory["plain"].activation_bytes / memory["checkpointed"].activation_bytes
    n, length = EXERCISE_3_BATCH
    if math.isclose(ratio, expected, rel_tol=1e-3):
        trend = "grows" if expected > lesson else "shrinks" if expected < lesson else "stays the same"
        word = prediction.strip().lower() if isinstance(prediction, str) else prediction
        word = {"grow": "grows", "shrink": "shrinks"}.get(word, word)
        return correct(f"{expected:.2f}x fewer activation bytes with checkpointing at {n} x {length} tokens, "
                       f"against {lesson:.2f}x at the lesson's batch: with longer sentences the ratio {trend}. "
                       + prediction_note(word, trend, ("grows", "shrinks", "stays the same")))
    if math.isclose(ratio, lesson, rel_tol=1e-3):
        return wrong("that is the ratio for the lesson's batch of 8 x 32 tokens, printed in section 3.",
                     f"Build a new batch of the first {n} training utterances padded to {length} tokens and measure "
                     "it with saved_for_backward.")
    if math.isclose(ratio, 1 / expected, rel_tol=1e-3):
        return wrong("you divided the other way round.", "plain bytes / checkpointed bytes.")
    with_weights = (plain.activation_bytes + plain.parameter_bytes) / (ckpt.activation_bytes + ckpt.parameter_bytes)
    if math.isclose(ratio, with_weights, rel_tol=1e-3):
        return wrong("you included the saved references to the weights.",
                     "Those are the model's own weights, no extra memory: use .activation_bytes only.")
    return wrong(f"{ratio} is not the ratio of saved activation bytes for {n} utterances x {length} tokens.",
                 f"tokenizer(train.texts[:{n}], padding='max_length', truncation=True, max_length={length}), then "
                 "saved_for_backward(clfs[mode], inputs, labels).activation_bytes for both modes.")
