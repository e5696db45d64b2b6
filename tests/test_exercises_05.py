"""Lesson 05 solutions pass their checkers on real (tiny) pre-training; typical wrong answers get the right hint."""

import math

import pytest
import torch

from helpers.exercises.lesson05 import check_exercise_1, check_exercise_2, check_exercise_3
from helpers.pretrain.compute import PretrainConfig, heldout_batch, pretrain, unigram_counts
from helpers.pretrain.data import (PairSampler, corpus_hash, encode_documents, load_corpus, mask_tokens,
                                   split_documents, train_wordpiece)
from lessons.solutions import solutions_05 as sol


@pytest.fixture(scope="module")
def setup():
    cfg = PretrainConfig(layers=1, hidden=32, heads=2, intermediate=64, vocab_size=500, max_length=48, batch_size=4,
                         steps=4, max_documents=20)
    train, test = split_documents(load_corpus(max_documents=20), 0.1)
    tok = train_wordpiece(train, 500, 48)
    enc, enc_test = encode_documents(tok, train), encode_documents(tok, test)
    run = pretrain(cfg, tok, enc, corpus_hash(), progress=False, register=False)
    return tok, PairSampler(enc, tok, 48, seed=0), run, heldout_batch(tok, enc_test, 40, 48), unigram_counts(enc, 500)


def test_exercise_1(setup):
    tok, sampler, *_ = setup
    assert check_exercise_1(sol.exercise_1, sampler, tok).ok
    assert not check_exercise_1(None, sampler, tok).ok

    def all_mask(ids, special, mask_id, vocab_size, gen):  # forgets the 10 % random / 10 % kept
        return mask_tokens(ids, special, mask_token_id=mask_id, vocab_size=vocab_size, generator=gen, mask_share=1.0,
                           random_share=0.0)

    fb = check_exercise_1(all_mask, sampler, tok)
    assert not fb.ok and "80 %" in fb.hint

    def zero_labels(ids, special, mask_id, vocab_size, gen):  # 0 instead of -100
        inputs, labels = sol.exercise_1(ids, special, mask_id, vocab_size, gen)
        return inputs, labels.clamp(min=0)

    fb = check_exercise_1(zero_labels, sampler, tok)
    assert not fb.ok and "-100" in fb.hint

    def masks_specials(ids, special, mask_id, vocab_size, gen):
        return sol.exercise_1(ids, torch.zeros_like(special), mask_id, vocab_size, gen)

    fb = check_exercise_1(masks_specials, sampler, tok)
    assert not fb.ok and "special" in fb.hint.lower() + fb.message.lower()


def test_exercise_2_grades_the_reasoning_and_never_the_prediction(setup):
    tok, _, run, batch, _ = setup
    right = sol.exercise_2(tok)
    for prediction in (None, 2.0, 99.0, "a lot"):  # any prediction, or none: the answer decides
        fb = check_exercise_2(right, prediction, run, tok, batch)
        assert fb.ok and "untrained model measured" in fb.message
    assert "You predicted 2" in check_exercise_2(right, 2.0, run, tok, batch).message
    assert check_exercise_2(torch.tensor(right), None, run, tok, batch).ok
    fb = check_exercise_2(math.log(2), 5.0, run, tok, batch)
    assert not fb.ok and "1/V" in fb.hint and f"{math.log(len(tok)):.2f}" not in fb.message
    fb = check_exercise_2(math.log2(len(tok)), None, run, tok, batch)
    assert not fb.ok and "log2" in fb.hint
    assert not check_exercise_2(None, 5.0, run, tok, batch).ok


def test_exercise_3(setup):
    *_, batch, counts = setup
    answer = sol.exercise_3(counts, batch)
    assert check_exercise_3(answer, counts, batch).ok
    import numpy as np

    assert answer > 0.01  # the most frequent token is common enough to test the percentage hint
    assert check_exercise_3(np.float64(answer), counts, batch).ok
    assert check_exercise_3(torch.tensor(answer, dtype=torch.float64), counts, batch).ok
    fb = check_exercise_3(100 * answer, counts, batch)
    assert not fb.ok and "percentage" in fb.message
    scored_all = float((batch["labels"] == counts.argmax()).float().mean())  # forgets to drop the -100 positions
    fb = check_exercise_3(scored_all, counts, batch)
    assert not fb.ok and "-100" in fb.hint
