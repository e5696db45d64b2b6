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


def test_exercise_2(sample_trace):
    assert check_exercise_2(S.solution_2(sample_trace), sample_trace).ok
    hidden, attention = S.solution_2(sample_trace)
    fb = check_exercise_2(((1, *hidden), attention), sample_trace)
    assert not fb.ok and "batch" in fb.message
    fb = check_exercise_2((hidden, attention[1:]), sample_trace)
    assert not fb.ok and "num_attention_heads" in fb.hint
    assert not check_exercise_2("shapes", sample_trace).ok
    # a wrong shape is named, the right one is not given away
    n, H = hidden
    fb = check_exercise_2(((n + 1, H), attention), sample_trace)
    assert not fb.ok and str((n, H)) not in str(fb)


def test_exercise_3(sample_trace):
    assert check_exercise_3(S.solution_3(sample_trace)).ok
    fb = check_exercise_3(ValueError("x"))
    assert not fb.ok and "class" in fb.message
    fb = check_exercise_3(IndexError)
    assert not fb.ok and "IndexError" in fb.message


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
