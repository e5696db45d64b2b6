"""Checkers for lesson 00 (the big picture)."""

from __future__ import annotations

import torch

from helpers.exercises import (NO_ANSWER, Feedback, as_number, check_prediction, correct, prediction_note,
                               wrong)
from helpers.model.trace import trace_text


def _close(a: float, b: float) -> bool:
    return abs(a - b) < 1e-6 * max(1.0, abs(b))


def check_exercise_1(answer, trace) -> Feedback:
    """Exercise 1: WordPiece tokens per word of the traced input (tokens of [CLS]/[SEP] excluded)."""
    if answer is None:
        return NO_ANSWER
    answer, bad = as_number(answer, "The answer", "Divide the number of word tokens by the number of words.")
    if bad is not None:
        return bad
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
        return wrong(f"{hidden} is not the shape of trace.hidden(0).",
                     "Rows are tokens, columns are the numbers of one token vector; print its .shape.")
    if attention != (A, n, n):
        if attention == (n, n):
            return wrong("that is one head; trace.attention(1) holds all heads.",
                         "The first dimension is config.num_attention_heads.")
        return wrong(f"{attention} is not the shape of trace.attention(1).",
                     "Heads x query tokens x key tokens; print its .shape.")
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


def _first_token_cosine(tokenizer, model, text_a: str, text_b: str, layer: int) -> float:
    a, b = trace_text(tokenizer, model, text_a), trace_text(tokenizer, model, text_b)
    return torch.nn.functional.cosine_similarity(a.hidden(layer)[1], b.hidden(layer)[1], dim=0).item()


def check_exercise_4(answer, prediction, tokenizer, model, sentence: str, longer: str) -> Feedback:
    """Exercise 4 (predict, then measure): the cosine between token 1's last-layer vectors in
    ``sentence`` and in ``longer`` (``sentence`` with words appended)."""
    if (bad := check_prediction(prediction, ("same", "different"))) is not None:
        return bad
    if answer is None:
        return NO_ANSWER
    answer, bad = as_number(answer, "The answer",
                            "torch.nn.functional.cosine_similarity(u, v, dim=0).item() of the two vectors.")
    if bad is not None:
        return bad
    L = model.config.num_hidden_layers
    ref = _first_token_cosine(tokenizer, model, sentence, longer, L)
    if abs(answer - ref) < 1e-4:
        actual = "same" if ref > 1 - 1e-5 else "different"
        why = ("every layer's attention reads the whole input, the words after token 1 included"
               if actual == "different" else
               "the appended words were cut off (the input is past the maximum length), so both "
               "runs saw the same tokens")
        return correct(f"cosine {ref:.4f}: {why}. {prediction_note(prediction, actual)}")
    if abs(answer - _first_token_cosine(tokenizer, model, sentence, longer, 0)) < 1e-4:
        return wrong("that compares the embeddings, hidden(0), before any attention has run.",
                     "Use the last layer: trace.hidden(L) of each run.")
    cls = trace_text(tokenizer, model, sentence).hidden(L)[0]
    cls_b = trace_text(tokenizer, model, longer).hidden(L)[0]
    if abs(answer - torch.nn.functional.cosine_similarity(cls, cls_b, dim=0).item()) < 1e-4:
        return wrong("that compares token 0, [CLS], not token 1.", "Row 1 of hidden(L), not row 0.")
    return wrong(f"{answer:.4f} is not the cosine of token 1's last-layer vectors.",
                 "Trace both texts with trace_text, take .hidden(L)[1] of each, and compare them "
                 "with torch.nn.functional.cosine_similarity(..., dim=0).")
