"""Checkers for lesson 00 (the big picture)."""

from __future__ import annotations

import torch

from helpers.exercises import Feedback, NO_ANSWER, correct, wrong


def _close(a: float, b: float) -> bool:
    return abs(a - b) < 1e-6 * max(1.0, abs(b))


def check_exercise_1(answer, trace) -> Feedback:
    """Exercise 1: WordPiece tokens per word of the traced input (tokens of [CLS]/[SEP] excluded)."""
    if answer is None:
        return NO_ANSWER
    if isinstance(answer, torch.Tensor) and answer.numel() == 1:
        answer = answer.item()
    if isinstance(answer, bool) or not isinstance(answer, (int, float)):
        return wrong(f"the answer should be a float, not a {type(answer).__name__}.",
                     "Divide the number of word tokens by the number of words.")
    words = trace.words()
    in_words = sum(wid is not None for wid in trace.word_ids)  # tokens the tokenizer maps back to a word
    ref = in_words / len(words)
    if _close(answer, ref):
        return correct(f"{in_words} tokens for {len(words)} words: {ref:.3f} tokens per word.")
    if _close(answer, trace.seq_len / len(words)):
        return wrong("that counts [CLS] and [SEP] as pieces of words.",
                     f"Leave out the special tokens: {trace.seq_len} tokens in all, but not all belong to a word.")
    split = trace.text.split()
    if split and _close(answer, in_words / len(split)):
        return wrong("text.split() glues punctuation to its word, but the tokenizer splits it off as a word of its own.",
                     f"Count trace.words() ({len(words)} words), not text.split() ({len(split)}).")
    if answer and _close(1 / answer, ref):
        return wrong("that is words per token, the inverse.", "Tokens divided by words.")
    return wrong(f"{answer} is not the number of tokens per word.",
                 "len(trace.words()) words; count the tokens other than [CLS] and [SEP]; divide.")


def check_exercise_2(answer, trace) -> Feedback:
    """Exercise 2: ``(shape of trace.hidden(0), shape of trace.attention(1))`` as tuples."""
    if answer is None:
        return NO_ANSWER
    try:
        hidden, attention = (tuple(int(x) for x in shape) for shape in answer)
    except (TypeError, ValueError):
        return wrong("give a pair of shapes, e.g. ((a, b), (c, d, e)).", "Use tuple(trace.hidden(0).shape).")
    n, H, A = trace.seq_len, trace.hidden_size, trace.num_heads
    if hidden != (n, H):
        if hidden == (1, n, H):
            return wrong("the trace has no batch dimension.", "trace.hidden(0) is [tokens, hidden].")
        return wrong(f"hidden(0) has shape {(n, H)}, not {hidden}.", "Rows are tokens, columns are config.hidden_size.")
    if attention != (A, n, n):
        if attention == (n, n):
            return wrong("that is one head; trace.attention(1) holds all heads.", "The first dimension is config.num_attention_heads.")
        return wrong(f"attention(1) has shape {(A, n, n)}, not {attention}.", "Heads x query tokens x key tokens.")
    return correct(f"hidden(0) is {n} tokens x {H} dims; attention(1) is {A} heads x {n} queries x {n} keys.")


def check_exercise_3(answer) -> Feedback:
    """Exercise 3: the exception type ``trace.attention(0)`` raises."""
    if answer is None:
        return NO_ANSWER
    if answer is ValueError:
        return correct("layer 0 is the embedding output: attention only happens inside encoder layers 1..L.")
    if isinstance(answer, BaseException):
        return wrong("give the exception class, not an instance.", "e.g. answer_3 = type(err).")
    if answer is IndexError:
        return wrong("the trace checks the layer before indexing, so it is not an IndexError.",
                     "Wrap trace.attention(0) in try/except Exception as err and look at type(err).")
    return wrong(f"{answer!r} is not what trace.attention(0) raises.", "Run it in a try/except and print type(err).")
