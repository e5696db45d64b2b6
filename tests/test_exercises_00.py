"""Lesson 00 solutions pass their checkers; typical wrong answers get the right hint."""

import torch

from helpers.exercises.lesson00 import (check_exercise_1, check_exercise_2, check_exercise_3,
                                        check_exercise_4)
from helpers.model.trace import trace_text
from lessons.solutions import solutions_00 as S


def test_exercise_1(sample_trace):
    answer = S.solution_1(sample_trace)
    assert check_exercise_1(answer, sample_trace).ok
    words = sample_trace.words()
    # an independent count: the model's input ids minus the two special tokens, per pre-tokenized word
    assert abs(answer - (len(sample_trace.input_ids) - 2) / len(words)) < 1e-9
    fb = check_exercise_1(sample_trace.seq_len / len(words), sample_trace)
    assert not fb.ok and "[CLS]" in fb.message
    split = sample_trace.text.split()
    assert len(split) != len(words)  # the sample sentence ends in a period glued to its word
    fb = check_exercise_1((sample_trace.seq_len - 2) / len(split), sample_trace)
    assert not fb.ok and "trace.words()" in fb.hint
    fb = check_exercise_1(1 / answer, sample_trace)
    assert not fb.ok and "inverse" in fb.message
    assert not check_exercise_1("1.3", sample_trace).ok
    assert not check_exercise_1(None, sample_trace).ok


def test_exercise_1_accepts_a_rounded_ratio(sample_trace):
    answer = S.solution_1(sample_trace)
    assert check_exercise_1(round(answer, 2), sample_trace).ok
    assert not check_exercise_1(round(answer, 1) + 0.1, sample_trace).ok


def test_exercise_2_counts_against_real_runs(tokenizer, model):
    config = model.config
    assert check_exercise_2(S.solution_2, None, tokenizer, model).ok
    fb = check_exercise_2(S.solution_2, "attention", tokenizer, model)
    assert fb.ok and "agrees" in fb.message
    L, H, A = config.num_hidden_layers, config.hidden_size, config.num_attention_heads
    fb = check_exercise_2(lambda c, n: (L + 1) * n * H, "hidden", tokenizer, model)
    assert not fb.ok and "hidden states only" in fb.message
    fb = check_exercise_2(lambda c, n: L * n * H + L * A * n * n, None, tokenizer, model)
    assert not fb.ok and "L + 1" in fb.hint
    fb = check_exercise_2(lambda c, n: (L + 1) * n * H + L * n * n, None, tokenizer, model)
    assert not fb.ok and "one head" in fb.message
    assert not check_exercise_2(42, None, tokenizer, model).ok
    assert not check_exercise_2(None, None, tokenizer, model).ok


def test_exercise_3_the_cut_at_the_maximum(tokenizer, model):
    from helpers.model.trace import max_input_tokens

    text = " ".join([SENTENCE] * 200)
    dropped = S.solution_3(tokenizer, model, text)
    full = len(tokenizer(text, truncation=False, verbose=False)["input_ids"])
    limit = max_input_tokens(tokenizer, model)
    assert dropped == full - limit > 0
    # the arithmetic of the prediction gives the same count (each copy tokenizes alike)
    assert S.prediction_3(tokenizer, model, SENTENCE, 200) == dropped
    fb = check_exercise_3(dropped, 100, tokenizer, model, text)
    assert fb.ok and "You predicted 100" in fb.message
    fb = check_exercise_3(full, None, tokenizer, model, text)
    assert not fb.ok and "before the cut" in fb.message
    fb = check_exercise_3(limit, None, tokenizer, model, text)
    assert not fb.ok and "keeps" in fb.message
    fb = check_exercise_3(dropped - 2, None, tokenizer, model, text)
    assert not fb.ok and "[CLS]" in fb.message
    fb = check_exercise_3(dropped + 7, None, tokenizer, model, text)
    assert not fb.ok and str(dropped) not in str(fb)
    assert not check_exercise_3(1.5, None, tokenizer, model, text).ok


SENTENCE = "The bank by the river was unbelievably quiet this morning."
LONGER = SENTENCE + " Nobody else was there."


def test_exercise_4_prediction_then_measurement(tokenizer, model):
    answer = S.solution_4(tokenizer, model, SENTENCE, LONGER)
    assert answer < 1 - 1e-4  # bidirectional attention: the appended words reach token 1
    fb = check_exercise_4(answer, None, tokenizer, model, SENTENCE, LONGER)
    assert not fb.ok and "prediction" in fb.message
    fb = check_exercise_4(answer, "different", tokenizer, model, SENTENCE, LONGER)
    assert fb.ok and "agrees" in fb.message
    fb = check_exercise_4(torch.tensor(answer), "same", tokenizer, model, SENTENCE, LONGER)
    assert fb.ok and "You predicted 'same'" in fb.message
    # slips: the embeddings (cosine 1, before attention), token 0 instead of token 1
    fb = check_exercise_4(1.0, "same", tokenizer, model, SENTENCE, LONGER)
    assert not fb.ok and "hidden(0)" in fb.message
    L = model.config.num_hidden_layers
    a, b = (trace_text(tokenizer, model, t).hidden(L)[0] for t in (SENTENCE, LONGER))
    cls = torch.nn.functional.cosine_similarity(a, b, dim=0).item()
    fb = check_exercise_4(cls, "different", tokenizer, model, SENTENCE, LONGER)
    assert not fb.ok and "[CLS]" in fb.message
    fb = check_exercise_4(0.5, "different", tokenizer, model, SENTENCE, LONGER)
    assert not fb.ok and f"{answer:.4f}" not in str(fb)
    assert not check_exercise_4("0.9", "different", tokenizer, model, SENTENCE, LONGER).ok
