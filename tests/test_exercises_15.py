"""Lesson 15 solutions pass their checkers on the real m3e-small; typical wrong answers get the right hint."""

import numpy as np
import pytest
import torch

from helpers.chinese.compute import boundary_features, boundary_report, load_intents_zh, load_zh_words
from helpers.classify.compute import correct_per_item, extract_features, train_head
from helpers.exercises.lesson15 import check_exercise_1, check_exercise_2, check_exercise_3
from helpers.probes.compute import split_sentences
from lessons.solutions import solutions_15 as sol
from zh_support import zh_loaded, zh_model, zh_tokenizer  # noqa: F401 - fixtures


def test_exercise_1():
    sentences = load_zh_words()[:50]
    assert check_exercise_1(sol.exercise_1(), sentences).ok
    ends = check_exercise_1(lambda ws: {sum(map(len, ws[:i + 1])) for i in range(len(ws))}, sentences)
    assert not ends.ok and "end" in ends.message
    assert not check_exercise_1(None, sentences).ok
    assert not check_exercise_1(3, sentences).ok


@pytest.fixture(scope="module")
def heads_setup(zh_tokenizer, zh_model):
    train, test = load_intents_zh("train").subset(6), load_intents_zh("test").subset(3)
    f_train = extract_features(zh_tokenizer, zh_model, train.texts, progress=False)
    f_test = extract_features(zh_tokenizer, zh_model, test.texts, progress=False)
    seeds = (0, 1)
    L = f_train.num_layers
    mean = torch.stack([correct_per_item(train_head(f_train.layer(L, "mean"), train.labels, train.num_classes, seed=s,
                                                    progress=False), f_test.layer(L, "mean"), test.labels)
                        for s in seeds])
    return mean, f_train, f_test, train, test, seeds


def test_exercise_2(heads_setup):
    mean, f_train, f_test, train, test, seeds = heads_setup
    answer = sol.exercise_2(f_train, f_test, train, test, seeds)
    fb = check_exercise_2(answer, mean, f_train, f_test, train, test, seeds)
    assert fb.ok and "paired on the same" in fb.message
    assert check_exercise_2(answer.numpy(), mean, f_train, f_test, train, test, seeds).ok  # NumPy accepted
    same = check_exercise_2(mean, mean, f_train, f_test, train, test, seeds)
    if not torch.equal(answer, mean):
        assert not same.ok and "'cls'" in same.hint
    assert "shape" in check_exercise_2(answer[:1], mean, f_train, f_test, train, test, seeds).message


def test_exercise_3(zh_tokenizer, zh_model):
    sentences = load_zh_words()[::6]
    feats, labels = boundary_features(zh_tokenizer, zh_model, sentences, progress=False)
    tr, te = split_sentences(len(sentences), 0.25, seed=0)
    report = boundary_report(feats, labels, tr, te, seeds=(0, 1), progress=False, epochs=4)
    best, lower = sol.exercise_3(report)
    assert lower == (best not in report.tied_with_best("accuracy"))  # an independent reading of the solution
    for form in (best, np.int64(best), torch.tensor(best)):
        fb = check_exercise_3((form, lower), report)
        assert fb.ok and ("clearly lower" in fb.message) == lower
    wrong_flag = check_exercise_3((best, not lower), report)
    assert not wrong_flag.ok and "tied_with_best" in wrong_flag.hint
    other = (best + 1) % len(report.selectivity)
    fb = check_exercise_3((other, lower), report)
    assert not fb.ok and str(report.selectivity[best].estimate) not in fb.message
    assert "does not exist" in check_exercise_3((99, True), report).message
    assert not check_exercise_3(("2", True), report).ok
    assert not check_exercise_3(best, report).ok  # the flag is part of the answer
    assert not check_exercise_3(None, report).ok
