"""Lesson 01 solutions pass their checkers; typical wrong answers get the right hint."""

import torch

from helpers.exercises.lesson01 import check_exercise_1, check_exercise_2, check_exercise_3
from helpers.model.trace import trace_text
from lessons.solutions import solutions_01 as S

SENTENCE = "The bank by the river was unbelievably quiet this morning."


def test_exercise_1(tokenizer, model):
    trace = trace_text(tokenizer, model, SENTENCE)
    assert check_exercise_1(S.solution_1(trace, "quiet"), trace, "quiet").ok
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
