"""Lesson 11 solutions pass their checkers on the real model; typical wrong answers get the right hint."""

import copy

import pytest
import torch

from helpers.exercises.lesson11 import check_exercise_1, check_exercise_2, check_exercise_3, exercise_3_batch
from helpers.finetuning.compute import SentenceClassifier
from helpers.practice.compute import enable_checkpointing, keep_hidden_states, saved_for_backward
from lessons.solutions import solutions_11 as sol

SENTENCE = "add eggs to my shopping list"


def test_exercise_1():
    assert check_exercise_1(sol.exercise_1()).ok
    fb = check_exercise_1(lambda b, d, n: [b * d ** l for l in range(1, n + 2)])
    assert not fb.ok and "reversed" in fb.message
    assert not check_exercise_1(None).ok
    assert "an int" in check_exercise_1(3).message
    fb = check_exercise_1(lambda b, d, n: [b * d ** (n - l) for l in range(n + 1)])  # exponent L - l
    assert not fb.ok and "too large" in fb.message and "off by one" in fb.message
    fb = check_exercise_1(lambda b, d, n: [b * d ** (n + 2 - l) for l in range(n + 1)])
    assert not fb.ok and "too small" in fb.message
    fb = check_exercise_1(lambda b, d, n: [b] * (n + 1))
    assert not fb.ok
    right = f"{1e-3 * 0.8 ** 7:.3g}"
    assert right not in str(fb)  # the right rates are not given away


def test_exercise_2(tokenizer, model):
    assert check_exercise_2(sol.exercise_2(tokenizer, model, SENTENCE), tokenizer, model, SENTENCE).ok
    fb = check_exercise_2({}, tokenizer, model, SENTENCE)
    assert not fb.ok and "inside the with block" in fb.hint
    wrong_layer = {1: torch.zeros(1, 3, model.config.hidden_size)}
    assert not check_exercise_2(wrong_layer, tokenizer, model, SENTENCE).ok
    with keep_hidden_states(model, [0]) as kept0, torch.no_grad():
        from helpers.classify.compute import encode_batch
        model(**encode_batch(tokenizer, [SENTENCE], device=model.device))
    fb = check_exercise_2(kept0, tokenizer, model, SENTENCE)
    assert not fb.ok and "embeddings" in fb.message and "encoder.layer[0]" in fb.message
    assert "a list" in check_exercise_2([1], tokenizer, model, SENTENCE).message


def _classifiers(model, train):
    """The lesson's two classifiers: plain and with checkpointing switched on."""
    torch.manual_seed(0)
    clfs = {mode: SentenceClassifier(copy.deepcopy(model), train.num_classes) for mode in ("plain", "checkpointed")}
    enable_checkpointing(clfs["checkpointed"].bert)
    return clfs


@pytest.mark.slow  # one of the heaviest fast tests; the --all tier (CI) runs it
def test_exercise_3(tokenizer, model, intent_splits):
    train, _ = intent_splits
    clfs = _classifiers(model, train)
    batch = tokenizer(train.texts[:8], padding="max_length", truncation=True, max_length=32, return_tensors="pt")
    inputs, labels = {k: batch[k] for k in ("input_ids", "attention_mask")}, torch.tensor(train.labels[:8])
    memory = {mode: saved_for_backward(clf, inputs, labels) for mode, clf in clfs.items()}
    answer = sol.exercise_3(clfs, tokenizer, train)
    fb = check_exercise_3(answer, clfs, tokenizer, train, memory)
    assert fb.ok and "4 x 64" in fb.message
    # an independent count of the new batch agrees with the worked solution
    inputs4, labels4 = exercise_3_batch(tokenizer, train)
    assert inputs4["input_ids"].shape == (4, 64)
    plain, ckpt = (saved_for_backward(clfs[mode], inputs4, labels4) for mode in ("plain", "checkpointed"))
    assert answer == plain.activation_bytes / ckpt.activation_bytes
    lesson_ratio = memory["plain"].activation_bytes / memory["checkpointed"].activation_bytes
    assert abs(answer - lesson_ratio) > 0.01 * lesson_ratio, "the exercise must ask for a number the lesson does not print"
    fb = check_exercise_3(lesson_ratio, clfs, tokenizer, train, memory)
    assert not fb.ok and "8 x 32" in fb.message
    fb = check_exercise_3(1 / answer, clfs, tokenizer, train, memory)
    assert not fb.ok and "other way round" in fb.message
    with_weights = (plain.activation_bytes + plain.parameter_bytes) / (ckpt.activation_bytes + ckpt.parameter_bytes)
    fb = check_exercise_3(with_weights, clfs, tokenizer, train, memory)
    assert not fb.ok and "references to the weights" in fb.message
    assert "a str" in check_exercise_3("10", clfs, tokenizer, train, memory).message
    # any number form is accepted; the prediction is only commented on, never graded
    import numpy as np
    trend = "grows" if answer > lesson_ratio else "shrinks"
    other = "shrinks" if trend == "grows" else "grows"
    fb = check_exercise_3(np.float64(answer), clfs, tokenizer, train, memory, prediction=trend[:-1])
    assert fb.ok and "agrees" in fb.message
    fb = check_exercise_3(torch.tensor(answer), clfs, tokenizer, train, memory, prediction=other)
    assert fb.ok and "says" in fb.message
    fb = check_exercise_3(answer * 1.1, clfs, tokenizer, train, memory, prediction=trend)
    assert not fb.ok and f"{answer:.2f}" not in str(fb)
    assert not check_exercise_3(None, clfs, tokenizer, train, memory).ok


def test_exercise_2_accepts_any_truncation_of_a_long_sentence(tokenizer, model):
    from helpers.model.trace import encode

    long = " ".join(["Remind me to buy oat milk on the way home."] * 8)  # more than 32 tokens
    enc, _ = encode(tokenizer, model, long)
    enc.pop("offset_mapping")
    with keep_hidden_states(model, [1]) as kept, torch.no_grad():
        model(**enc)
    assert kept[1].shape[1] > 32
    assert check_exercise_2(kept, tokenizer, model, long).ok
    assert check_exercise_2(sol.exercise_2(tokenizer, model, long), tokenizer, model, long).ok
    assert not check_exercise_2(kept, tokenizer, model, SENTENCE).ok
