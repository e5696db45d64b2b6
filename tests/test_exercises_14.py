"""Lesson 14 solutions pass their checkers on the real model and data; typical wrong answers get the right hint."""

import copy

import numpy as np
import pytest
import torch

from helpers.common.data import UPOS_TAGS, load_pos
from helpers.exercises.lesson14 import check_exercise_1, check_exercise_2, check_exercise_3, check_exercise_4
from helpers.finetuning.compute import token_vectors
from helpers.probes.compute import control_labels, extract_word_features, split_sentences
from lessons.solutions import solutions_14 as sol


@pytest.fixture(scope="module")
def pos_features(tokenizer, model):
    return extract_word_features(tokenizer, model, load_pos()[:150], progress=False)


@pytest.fixture(scope="module")
def words_and_tags(pos_features):
    f = pos_features
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
    assert "an int" in check_exercise_1(3, words, tags, C).message


@pytest.fixture(scope="module")
def stacks(tokenizer, model):
    from helpers.common.data import load_intents

    texts = load_intents("test").texts[:20]
    tuned = copy.deepcopy(model)
    with torch.no_grad():
        for p in tuned.encoder.layer[-1].parameters():
            p.add_(0.05 * torch.randn(p.shape, generator=torch.Generator().manual_seed(0)))
        for p in tuned.encoder.layer[-2].parameters():  # the layer below moves less
            p.add_(0.02 * torch.randn(p.shape, generator=torch.Generator().manual_seed(1)))
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
    fb = check_exercise_2(lambda X, Y: sol.exercise_2(X, Y) * 0.9, before, after)
    right = f"{sol.exercise_2(before[1].double(), after[1].double()):.4f}"
    assert not fb.ok and right not in str(fb)  # the right CKA is not given away


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
    answer = sol.exercise_3(model, tuned)
    fb = check_exercise_3(100 * answer, model, tuned)
    assert not fb.ok and "percentage" in fb.message
    old2 = dict(model.encoder.layer[-2].named_parameters())
    new2 = dict(tuned.encoder.layer[-2].named_parameters())
    below = (sum(float((new2[k] - old2[k]).detach().double().pow(2).sum()) for k in old2)
             / sum(float(p.detach().double().pow(2).sum()) for p in old2.values())) ** 0.5
    fb = check_exercise_3(below, model, tuned)
    assert not fb.ok and "encoder.layer[-2]" in fb.message
    fb = check_exercise_3(answer * 1.5, model, tuned)
    assert not fb.ok and f"{answer:.5f}" not in str(fb)
    assert check_exercise_3(torch.tensor(answer), model, tuned).ok
    assert "a str" in check_exercise_3("x", model, tuned).message


@pytest.fixture(scope="module")
def control_split(pos_features, words_and_tags):
    words, tags = words_and_tags
    control = control_labels(words, tags, len(UPOS_TAGS), seed=0)
    train_ids, test_ids = split_sentences(int(pos_features.sentence.max()) + 1, test_fraction=0.25, seed=0)
    return control, train_ids, test_ids


def _independent_lookup(words, control, sentence, train_ids, test_ids):
    """The lookup table's test accuracy, counted in plain Python (Counter for the most common label)."""
    from collections import Counter

    train = [i for i, s in enumerate(sentence) if s in set(train_ids)]
    table = {words[i].lower(): control[i] for i in train}
    counts = Counter(control[i] for i in train)
    top = max(counts.values())
    out = []
    for default in sorted(c for c, n in counts.items() if n == top):
        test = [i for i, s in enumerate(sentence) if s in set(test_ids)]
        out.append(sum(table.get(words[i].lower(), default) == control[i] for i in test) / len(test))
    return out


def test_exercise_4_grades_the_measurement_and_only_comments_on_the_prediction(pos_features, control_split):
    control, train_ids, test_ids = control_split
    answer = sol.exercise_4(pos_features.words, control, pos_features.sentence, train_ids, test_ids)
    sentence, ctrl = pos_features.sentence.tolist(), control.tolist()
    assert any(abs(answer - a) < 1e-9 for a in _independent_lookup(pos_features.words, ctrl, sentence, train_ids,
                                                                     test_ids))
    assert 0 < answer < 1
    for prediction in (0.1, 0.9, None, "high"):
        fb = check_exercise_4(prediction, answer, pos_features, control, train_ids, test_ids)
        assert fb.ok, prediction
    assert "You predicted 0.1" in check_exercise_4(0.1, answer, pos_features, control, train_ids, test_ids).message
    assert check_exercise_4(None, np.float64(answer), pos_features, control, train_ids, test_ids).ok
    assert check_exercise_4(None, torch.tensor(answer, dtype=torch.float64), pos_features, control, train_ids,
                            test_ids).ok


def test_exercise_4_slips(pos_features, control_split):
    control, train_ids, test_ids = control_split
    words = pos_features.words
    answer = sol.exercise_4(words, control, pos_features.sentence, train_ids, test_ids)
    sentence = np.asarray(pos_features.sentence.tolist())
    test = np.isin(sentence, test_ids)
    train_types = {words[i].lower() for i in np.flatnonzero(np.isin(sentence, train_ids))}
    seen = float(np.mean([words[i].lower() in train_types for i in np.flatnonzero(test)]))
    args = (pos_features, control, train_ids, test_ids)
    cases = {"percentage": 100 * answer, "seen in training": seen, "training words": 1.0}
    for words_, value in cases.items():
        fb = check_exercise_4(0.5, value, *args)
        assert not fb.ok and words_ in fb.message, (words_, fb)
        assert f"{answer:.1%}" not in str(fb)
    ctrl = control.tolist()
    exact = {words[i]: ctrl[i] for i in np.flatnonzero(np.isin(sentence, train_ids))}
    default = int(np.bincount(np.asarray(ctrl)[np.isin(sentence, train_ids)]).argmax())
    cased = float(np.mean([exact.get(words[i], default) == ctrl[i] for i in np.flatnonzero(test)]))
    if abs(cased - answer) > 1e-6:
        fb = check_exercise_4(0.5, cased, *args)
        assert not fb.ok and "case-sensitive" in fb.message
    assert "a str" in check_exercise_4(0.5, "x", *args).message
    assert "no answer" in check_exercise_4(0.5, None, *args).message
    assert not check_exercise_4(0.5, answer + 0.05, *args).ok
