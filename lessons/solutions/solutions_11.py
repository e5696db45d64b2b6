"""Worked solutions for lesson 11 (plain functions; the tests run them through the checkers)."""

import torch

from helpers.classify.compute import encode_batch
from helpers.practice.compute import keep_hidden_states, saved_for_backward


def exercise_1():
    def lrs(base_lr, decay, num_layers):
        return [base_lr * decay ** (num_layers + 1 - l) for l in range(num_layers + 1)]

    return lrs


def exercise_2(tokenizer, model, sentence):
    enc = encode_batch(tokenizer, [sentence], device=model.device)
    with keep_hidden_states(model, [1]) as kept, torch.no_grad():
        model(**enc)
    return kept


def exercise_3(clfs, tokenizer, train):
    device = clfs["plain"].bert.device
    batch = tokenizer(train.texts[:4], padding="max_length", truncation=True, max_length=64,
                      return_tensors="pt").to(device)
    inputs = {k: batch[k] for k in ("input_ids", "attention_mask")}
    labels = torch.tensor(train.labels[:4], device=device)
    memory = {mode: saved_for_backward(clf, inputs, labels) for mode, clf in clfs.items()}
    return memory["plain"].activation_bytes / memory["checkpointed"].activation_bytes
