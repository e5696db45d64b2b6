"""helpers.model.tokens on the real bundled tokenizer."""

from helpers.model.tokens import is_unknown, longest_word


def test_is_unknown(tokenizer):
    assert not is_unknown(tokenizer, "bank")
    assert is_unknown(tokenizer, "\U0001F600")  # an emoji is not in the uncased WordPiece vocab


def test_longest_word(sample_trace, tokenizer):
    assert longest_word(sample_trace, tokenizer) == "unbelievably"
