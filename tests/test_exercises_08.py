"""Lesson 08 exercises: the worked solutions pass, typical mistakes get the right hint."""

import numpy as np
import pytest
import torch

from helpers.attention import compute
from helpers.exercises import lesson08 as ex
from helpers.model.trace import trace_text
from lessons.solutions import solutions_08 as sol

SENTENCE = "The bank by the river was unbelievably quiet."


def test_no_answer(sample_trace, tokenizer, model):
    assert "no answer" in ex.check_exercise_1(None, sample_trace).message
    assert "no answer" in ex.check_exercise_2(None, sample_trace).message
    assert "no answer" in ex.check_exercise_3(1.0, None, tokenizer, model, SENTENCE).message


def test_exercise_1(sample_trace):
    answer = sol.solution_1(sample_trace)
    assert ex.check_exercise_1(answer, sample_trace).ok
    assert ex.check_exercise_1(torch.tensor(answer), sample_trace).ok
    percent = ex.check_exercise_1(100 * answer, sample_trace)
    assert not percent.ok and "percentage" in percent.message
    summed = ex.check_exercise_1(answer * sample_trace.num_heads * sample_trace.seq_len, sample_trace)
    assert not summed.ok and "more than 1" in summed.message
    shares = compute.attention_shares(sample_trace)
    fb = ex.check_exercise_1(float(shares[-1, 0]), sample_trace)
    assert not fb.ok and "[CLS]" in fb.message
    fb = ex.check_exercise_1(float(shares[-2, 1]), sample_trace)  # attention(L - 1)
    assert not fb.ok and "L - 1" in fb.message
    fb = ex.check_exercise_1(float(shares[0, 1]), sample_trace)
    assert not fb.ok and "first layer" in fb.message
    att = sample_trace.attention(sample_trace.num_layers)
    row = float(att[:, -1, :].mean())  # the [SEP] row: where [SEP] looks
    fb = ex.check_exercise_1(row, sample_trace)
    assert not fb.ok and "row" in fb.message
    for fb in (ex.check_exercise_1(answer + 0.05, sample_trace), percent, summed):
        assert f"{answer:.3f}" not in str(fb) and f"{answer:.1%}" not in str(fb)
    assert "a str" in ex.check_exercise_1("x", sample_trace).message


def test_exercise_2(sample_trace):
    layer, head = sol.solution_2(sample_trace)
    for form in ((layer, head), (np.int64(layer), np.int32(head)), (torch.tensor(layer), torch.tensor(head))):
        assert ex.check_exercise_2(form, sample_trace).ok
    off = ex.check_exercise_2((layer - 1, head), sample_trace)
    assert not off.ok and "off by one in the layer" in off.message
    if head + 1 < sample_trace.num_heads:
        off = ex.check_exercise_2((layer, head + 1), sample_trace)
        assert not off.ok and "off by one in the head" in off.message
    assert "pair of ints" in ex.check_exercise_2("1,2", sample_trace).message
    assert "an int" in ex.check_exercise_2((1.0, 2), sample_trace).message
    ahead = compute.best_head(compute.offset_head_scores(sample_trace, 2))[:2]
    assert ahead not in ((layer, head), (layer - 1, head), (layer, head + 1))  # a real test on this sentence
    fb = ex.check_exercise_2(ahead, sample_trace)
    assert not fb.ok and "swapped" in fb.message
    prev = compute.best_head(compute.offset_head_scores(sample_trace, -1))[:2]
    if prev not in ((layer, head), (layer - 1, head), (layer, head + 1), ahead):
        assert "offset -1" in ex.check_exercise_2(prev, sample_trace).message
    fb = ex.check_exercise_2((sample_trace.num_layers + 1, 0), sample_trace)
    assert not fb.ok and "not a head" in fb.message
    for fb in (off, ex.check_exercise_2(ahead, sample_trace)):
        assert f"layer {layer}, head {head}" not in str(fb)


@pytest.fixture(scope="module")
def doubled(tokenizer, model):
    return trace_text(tokenizer, model, SENTENCE), trace_text(tokenizer, model, f"{SENTENCE} {SENTENCE}")


def test_exercise_3_grades_the_measurement_and_only_comments_on_the_prediction(tokenizer, model):
    answer = sol.solution_3(tokenizer, model, SENTENCE)
    for prediction in (0.5, 1.0, None, "half"):
        fb = ex.check_exercise_3(prediction, answer, tokenizer, model, SENTENCE)
        assert fb.ok, prediction
    assert "You predicted 0.5" in ex.check_exercise_3(0.5, answer, tokenizer, model, SENTENCE).message
    assert "no prediction" in ex.check_exercise_3(None, answer, tokenizer, model, SENTENCE).message
    assert ex.check_exercise_3(np.float32(0.5), torch.tensor(answer), tokenizer, model, SENTENCE).ok


def test_exercise_3_slips(tokenizer, model, doubled):
    short, long = doubled
    answer = sol.solution_3(tokenizer, model, SENTENCE)
    s, l_ = compute.attention_shares(short), compute.attention_shares(long)
    cases = {
        "upside down": 1 / answer,
        "difference": float(l_[:, 0].mean() - s[:, 0].mean()),
        "last layer": float(l_[-1, 0] / s[-1, 0]),
        "first layer": float(l_[0, 0] / s[0, 0]),
        "its row": float(compute.attention_shares(long, [0])[:, 0].mean()
                         / compute.attention_shares(short, [0])[:, 0].mean()),
        "[SEP]": float(l_[:, 1].mean() / s[:, 1].mean()),
    }
    for words, value in cases.items():
        fb = ex.check_exercise_3(0.5, value, tokenizer, model, SENTENCE)
        assert not fb.ok and words in fb.message, (words, fb)
        assert f"{answer:.2f}" not in str(fb)
    assert not ex.check_exercise_3(0.5, answer + 0.05, tokenizer, model, SENTENCE).ok
    assert "a list" in ex.check_exercise_3(0.5, [1], tokenizer, model, SENTENCE).message
