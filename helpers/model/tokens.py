"""Token-level helpers over a :class:`~helpers.model.trace.Trace`: which positions are real words,
which word splits most, whether the vocabulary knows a word."""

from __future__ import annotations

from helpers.model.trace import Trace, check_trace


def content_positions(trace: Trace) -> list[int]:
    """Positions of the real tokens: everything except [CLS], [SEP] and padding."""
    specials = {"[CLS]", "[SEP]", "[PAD]"}
    return [i for i, t in enumerate(check_trace(trace).tokens) if t not in specials]


def is_unknown(tokenizer, word: str) -> bool:
    """True when the tokenizer maps (part of) ``word`` to its unknown token."""
    return tokenizer.unk_token in tokenizer.tokenize(word)


def longest_word(trace: Trace, tokenizer) -> str:
    """The word of the input that splits into the most WordPieces (ties: the longest string)."""
    words = check_trace(trace).words()
    return max(words, key=lambda w: (len(tokenizer.tokenize(w)), len(w)))
