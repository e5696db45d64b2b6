"""Lesson 08 solutions pass their checkers on the real model; typical wrong answers get the right hint."""

import torch

from helpers.practice.compute import SavedForBackward, keep_hidden_states
from helpers.exercises.lesson08 import check_exercise_1, check_exercise_2, check_exercise_3
from lessons.solutions import solutions_08 as sol

SENTENCE = "add eggs to my shopping list"


def test_exercise_1():
    assert check_exercise_1(sol.exercise_1()).ok
    fb = check_exercise_1(lambda b, d, n: [b * d ** l for l in range(1, n + 2)])
    assert not fb.ok and "reversed" in fb.message
    assert not check_exercise_1(None).ok


def test_exercise_2(tokenizer, model):
    assert check_exercise_2(sol.exercise_2(tokenizer, model, SENTENCE), tokenizer, model, SENTENCE).ok
    fb = check_exercise_2({}, tokenizer, model, SENTENCE)
    assert not fb.ok and "inside the with block" in fb.hint
    wrong_layer = {1: torch.zeros(1, 3, model.config.hidden_size)}
    assert not check_exercise_2(wrong_layer, tokenizer, model, SENTENCE).ok


def test_exercise_3():
    memory = {"plain": SavedForBackward(1000, 400, 10, 4), "checkpointed": SavedForBackward(100, 50, 2, 1)}
    assert check_exercise_3(sol.exercise_3(memory), memory).ok
    fb = check_exercise_3(0.1, memory)
    assert not fb.ok and "other way round" in fb.message
    fb = check_exercise_3(1400 / 150, memory)
    assert not fb.ok and "references to the weights" in fb.message
    assert not check_exercise_3("10", memory).ok


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
