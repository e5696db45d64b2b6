"""Lesson 10 solutions pass their checkers on the real model and data; typical wrong answers get the right hint."""

import copy

import pytest
import torch

from helpers.common.data import UPOS_TAGS, load_pos
from helpers.exercises.lesson10 import check_exercise_1, check_exercise_2, check_exercise_3
from helpers.finetuning.compute import token_vectors
from helpers.probes.compute import extract_word_features
from lessons.solutions import solutions_10 as sol


@pytest.fixture(scope="module")
def words_and_tags(tokenizer, model):
    f = extract_word_features(tokenizer, model, load_pos()[:150], progress=False)
    return f.words, f.labels(load_pos(), "upos")


def test_exercise_1(words_and_tags):
    words, tags = words_and_tags
    C = len(UPOS_TAGS)
    assert check_exercise_1(sol.exercise_1, words, tags, C).ok
    assert not check_exercise_1(None, words, tags, C).ok

    def per_token(words, labels, num_classes, seed):  # a new draw at every occurrence
        g = torch.Generator().manual_seed(seed)
        p = torch.bincount(labels, minlength=num_classes).double()
        return torch.multinomial(p / p.sum(), len(words), replacement=True, generator=g)

    fb = check_exercise_1(per_token, words, tags, C)
    assert not fb.ok and "type" in fb.hint

    def uniform(words, labels, num_classes, seed):  # one label per type, but uniform over the classes
        g = torch.Generator().manual_seed(seed)
        label_of = {}
        return [label_of.setdefault(w.lower(), int(torch.randint(num_classes, (1,), generator=g))) for w in words]

    fb = check_exercise_1(uniform, words, tags, C)
    assert not fb.ok and "empirical" in fb.hint

    def case_sensitive(words, labels, num_classes, seed):  # 'The' and 'the' become two types
        g = torch.Generator().manual_seed(seed)
        p = torch.bincount(labels, minlength=num_classes).double()
        label_of = {}
        for w in words:
            if w not in label_of:
                label_of[w] = int(torch.multinomial(p / p.sum(), 1, generator=g))
        return [label_of[w] for w in words]

    fb = check_exercise_1(case_sensitive, words, tags, C)
    assert not fb.ok and "lower" in fb.hint
    assert not check_exercise_1(lambda w, l, c, s: l, words, tags, C).ok  # the real labels


@pytest.fixture(scope="module")
def stacks(tokenizer, model):
    from helpers.common.data import load_intents

    texts = load_intents("test").texts[:20]
    tuned = copy.deepcopy(model)
    with torch.no_grad():
        for p in tuned.encoder.layer[-1].parameters():
            p.add_(0.05 * torch.randn(p.shape, generator=torch.Generator().manual_seed(0)))
    return token_vectors(tokenizer, model, texts), token_vectors(tokenizer, tuned, texts), tuned


def test_exercise_2(stacks):
    before, after, _ = stacks
    assert check_exercise_2(sol.exercise_2, before, after).ok
    assert not check_exercise_2(None, before, after).ok

    def uncentred(X, Y):
        return float(torch.linalg.matrix_norm(Y.T @ X) ** 2
                     / (torch.linalg.matrix_norm(X.T @ X) * torch.linalg.matrix_norm(Y.T @ Y)))

    fb = check_exercise_2(uncentred, before, after)
    assert not fb.ok and "centre" in fb.message

    def not_squared(X, Y):
        X, Y = X - X.mean(0), Y - Y.mean(0)
        return float(torch.linalg.matrix_norm(Y.T @ X)
                     / (torch.linalg.matrix_norm(X.T @ X) * torch.linalg.matrix_norm(Y.T @ Y)))

    fb = check_exercise_2(not_squared, before, after)
    assert not fb.ok and "squared" in fb.message


def test_exercise_3(model, stacks):
    tuned = stacks[2]
    assert check_exercise_3(sol.exercise_3(model, tuned), model, tuned).ok
    assert not check_exercise_3(None, model, tuned).ok
    norm = lambda layer: sum(float(p.detach().double().pow(2).sum()) for p in layer.parameters()) ** 0.5  # noqa: E731
    ratio_of_norms = abs(norm(tuned.encoder.layer[-1]) / norm(model.encoder.layer[-1]) - 1)
    fb = check_exercise_3(ratio_of_norms, model, tuned)
    assert not fb.ok and "norm of the change" in fb.message
    old, new = dict(model.encoder.layer[-1].named_parameters()), dict(tuned.encoder.layer[-1].named_parameters())
    mean_ratio = sum(float((new[k] - old[k]).detach().norm() / old[k].detach().norm()) for k in old) / len(old)
    fb = check_exercise_3(mean_ratio, model, tuned)
    assert not fb.ok and "averaged" in fb.message
