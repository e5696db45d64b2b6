"""Lesson 01 solutions pass their checkers; typical wrong answers get the right hint."""

import numpy as np
import torch

from helpers.exercises.lesson01 import (check_exercise_1, check_exercise_2, check_exercise_3,
                                        check_exercise_4, unbiased_layer_norm)
from helpers.model.trace import trace_text
from lessons.solutions import solutions_01 as S

SENTENCE = "The bank by the river was unbelievably quiet this morning."


def test_exercise_1(tokenizer, model):
    trace = trace_text(tokenizer, model, SENTENCE)
    right = S.solution_1(trace, "quiet")
    assert check_exercise_1(right, trace, "quiet").ok
    # an index may come as a NumPy integer or a 0-d tensor
    assert check_exercise_1(np.int64(right), trace, "quiet").ok
    assert check_exercise_1(torch.tensor(right), trace, "quiet").ok
    fb = check_exercise_1(float(right), trace, "quiet")
    assert not fb.ok and "an int" in fb.message
    naive = SENTENCE.split().index("quiet") + 1
    fb = check_exercise_1(naive, trace, "quiet")
    assert not fb.ok and "find_word" in fb.hint
    fb = check_exercise_1(S.solution_1(trace, "quiet") - 1, trace, "quiet")
    assert not fb.ok and "[CLS]" in fb.hint
    assert not check_exercise_1(None, trace, "quiet").ok


def test_exercise_2(tokenizer, model):
    assert check_exercise_2(S.solution_2(model, tokenizer, "bank", "river"), model, tokenizer, "bank", "river").ok
    table = model.embeddings.word_embeddings.weight.detach()
    a, b = (table[tokenizer.convert_tokens_to_ids(w)] for w in ("bank", "river"))
    fb = check_exercise_2(float(a @ b), model, tokenizer, "bank", "river")
    assert not fb.ok and "length" in fb.hint
    assert check_exercise_2(S.solution_2(model, tokenizer, "bank", "🦜"), model, tokenizer, "bank", "🦜").ok


def test_exercise_3(tokenizer, model):
    pair = trace_text(tokenizer, model, SENTENCE, "It had rained all night.")
    assert check_exercise_3(S.solution_3(model, pair), model, pair).ok
    emb = model.embeddings
    with torch.no_grad():
        no_types = emb.LayerNorm(emb.word_embeddings.weight[pair.input_ids] + emb.position_embeddings.weight[: pair.seq_len]
                                 + emb.token_type_embeddings.weight[0])
        no_ln = (emb.word_embeddings.weight[pair.input_ids] + emb.position_embeddings.weight[: pair.seq_len]
                 + emb.token_type_embeddings.weight[pair.token_type_ids])
    fb = check_exercise_3(no_types, model, pair)
    assert not fb.ok and "token_type_ids" in fb.hint
    fb = check_exercise_3(no_ln, model, pair)
    assert not fb.ok and "LayerNorm" in fb.hint
    assert not check_exercise_3(torch.zeros(2, 2), model, pair).ok
    assert check_exercise_3(S.solution_3_by_hand(model, pair), model, pair).ok
    # the slip of a LayerNorm rebuilt with torch's default (unbiased) variance
    with torch.no_grad():
        unbiased = unbiased_layer_norm(no_ln, emb.LayerNorm)
    assert not torch.allclose(unbiased, pair.hidden(0), atol=1e-5)
    fb = check_exercise_3(unbiased, model, pair)
    assert not fb.ok and "H - 1" in fb.message and "unbiased=False" in fb.hint


def test_exercise_4(tokenizer, model):
    repeat = trace_text(tokenizer, model, "unbelievably and unbelievably again")
    a, b = (repeat.find_word("unbelievably", occurrence=k).first for k in (0, 1))
    answer = S.solution_4(repeat, a, b)
    assert answer < 1 - 1e-4  # the position rows differ
    assert not check_exercise_4(answer, None, repeat, a, b).ok
    fb = check_exercise_4(answer, "different", repeat, a, b)
    assert fb.ok and "agrees" in fb.message
    fb = check_exercise_4(torch.tensor(answer), "same", repeat, a, b)
    assert fb.ok and "You predicted 'same'" in fb.message
    fb = check_exercise_4(1.0, "same", repeat, a, b)  # the word-table rows: one row
    assert not fb.ok and "word-table" in fb.message
    last = repeat.hidden(repeat.num_layers)
    after = torch.nn.functional.cosine_similarity(last[a], last[b], dim=0).item()
    fb = check_exercise_4(after, "different", repeat, a, b)
    assert not fb.ok and "hidden(0)" in fb.hint
    fb = check_exercise_4(0.1, "different", repeat, a, b)
    assert not fb.ok and f"{answer:.4f}" not in str(fb)
