"""Worked solutions for lesson 14 (plain functions; the tests run them through the checkers)."""

import math

import torch


def exercise_1(words, labels, num_classes, seed):
    """Hewitt & Liang's control task: one random label per (lower-cased) word type."""
    p = torch.bincount(torch.as_tensor(labels), minlength=num_classes).double()
    g = torch.Generator().manual_seed(seed)
    label_of = {}
    for w in words:
        if w.lower() not in label_of:
            label_of[w.lower()] = int(torch.multinomial(p / p.sum(), 1, generator=g))
    return [label_of[w.lower()] for w in words]


def exercise_2(X, Y):
    """Linear CKA, feature-space form."""
    X, Y = X - X.mean(0), Y - Y.mean(0)
    num = torch.linalg.matrix_norm(Y.T @ X) ** 2
    return float(num / (torch.linalg.matrix_norm(X.T @ X) * torch.linalg.matrix_norm(Y.T @ Y)))


def exercise_3(model, tuned):
    """||theta_after - theta_before|| / ||theta_before|| over every parameter of the last layer."""
    before = {k: p.detach() for k, p in model.encoder.layer[-1].named_parameters()}
    after = {k: p.detach() for k, p in tuned.encoder.layer[-1].named_parameters()}
    diff = sum(float((after[k] - before[k]).pow(2).sum()) for k in before)
    base = sum(float(p.pow(2).sum()) for p in before.values())
    return math.sqrt(diff / base)


def exercise_4(words, control, sentence, train_ids, test_ids):
    """Control-task test accuracy of a lookup table from lower-cased training word types to their
    control label (unseen types: the most common training control label). The prediction is the
    learner's own; the measurement is this number."""
    train, test = set(train_ids), set(test_ids)
    sentence = [int(s) for s in sentence]
    control = [int(c) for c in control]
    table = {words[i].lower(): control[i] for i, s in enumerate(sentence) if s in train}
    counts = torch.bincount(torch.tensor([control[i] for i, s in enumerate(sentence) if s in train]))
    default = int(counts.argmax())
    hits = [table.get(words[i].lower(), default) == control[i] for i, s in enumerate(sentence) if s in test]
    return sum(hits) / len(hits)
