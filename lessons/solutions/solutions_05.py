"""Worked solutions for lesson 05 (plain functions; the tests run them through the checkers)."""

import math

import torch


def exercise_1(input_ids, special_tokens_mask, mask_token_id, vocab_size, generator):
    """BERT's masking: 15 % of the non-special positions; 80 % [MASK], 10 % random, 10 % kept."""
    chosen = (torch.rand(input_ids.shape, generator=generator) < 0.15) & ~special_tokens_mask.bool()
    labels = torch.where(chosen, input_ids, torch.full_like(input_ids, -100))
    u = torch.rand(input_ids.shape, generator=generator)
    inputs = input_ids.clone()
    inputs[chosen & (u < 0.8)] = mask_token_id
    rand = chosen & (u >= 0.8) & (u < 0.9)
    inputs[rand] = torch.randint(vocab_size, input_ids.shape, generator=generator)[rand]
    return inputs, labels


def exercise_2(tokenizer):
    """A uniform guess among V entries gives the right token 1/V: cross-entropy ln V."""
    return math.log(len(tokenizer))


def exercise_3(counts, batch):
    """Share of scored labels equal to the most frequent id."""
    scored = batch["labels"][batch["labels"] != -100]
    return float((scored == counts.argmax()).float().mean())


REFLECTION_3 = """The loss scores the probability the model gives to the right token; top-1
accuracy only asks whether the right token ranks first. A model that uses a little context
can raise the right token's probability (say from 1 % to 5 %) while the most frequent
tokens still rank first: the loss falls, the top-1 guesses, and so the accuracy, stay
those of the most-frequent-token guesser. Section 8 prints both for every checkpoint.

At a [MASK] the embedding layer sees only the [MASK] vector, the position and the segment:
the most frequent token at each position and segment is the best it could possibly do, so
beating the plain most-frequent guesser there says nothing about context. A layer that
beats the position guesser must have taken something from the other tokens."""
