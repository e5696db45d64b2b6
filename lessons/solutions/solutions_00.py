"""Worked solutions for lesson 00's exercises."""


def solution_1(trace) -> float:
    """WordPiece tokens per word: every token but [CLS] and [SEP] belongs to a word."""
    in_words = [t for t in trace.tokens if t not in ("[CLS]", "[SEP]")]
    return len(in_words) / len(trace.words())  # words as the tokenizer split them, punctuation included


def solution_2(trace):
    """The shapes of the embedding output and of layer 1's attention."""
    return tuple(trace.hidden(0).shape), tuple(trace.attention(1).shape)


def solution_3(trace):
    """The exception class raised for layer 0: there is no attention before layer 1."""
    try:
        trace.attention(0)
    except Exception as err:  # noqa: BLE001 - the point is to see which one
        return type(err)
    return None
