"""Checkers for lesson 00 (the big picture)."""

from __future__ import annotations

from helpers.exercises import Feedback, NO_ANSWER, correct, wrong


def check_exercise_1(answer, trace, word: str) -> Feedback:
    """Exercise 1: how many WordPiece tokens ``word`` became in ``trace``."""
    if answer is None:
        return NO_ANSWER
    if not isinstance(answer, int) or isinstance(answer, bool):
        return wrong(f"the answer should be an int, not a {type(answer).__name__}.", "Use len(...) of the word's pieces.")
    span = trace.find_word(word)
    if answer == len(span.pieces):
        return correct(f"{word!r} became {len(span.pieces)} token(s): {span.pieces}.")
    if answer == len(word):
        return wrong(f"{answer} is the number of characters in {word!r}, not of its tokens.",
                     "WordPiece splits into sub-words, not letters: look at trace.find_word(word).pieces.")
    if answer == 1 and len(span.pieces) > 1:
        return wrong(f"{word!r} is one word but not one token.", "Count trace.find_word(word).pieces.")
    return wrong(f"{answer} is not the number of pieces of {word!r}.", "len(trace.find_word(word).pieces)")


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
