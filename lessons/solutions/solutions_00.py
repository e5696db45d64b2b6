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


REFLECTION_2 = """hidden(0) is [n, H]: n = the number of tokens of this input ([CLS] and [SEP]
included; not a config field, capped by config.max_position_embeddings), H =
config.hidden_size. attention(1) is [A, n, n]: A = config.num_attention_heads, then one row
per query token and one column per key token."""

REFLECTION_3 = """Layer 0 is the embedding output: each token's vector is a lookup (word + position
+ token type, then LayerNorm) that never looks at the other tokens. Attention happens only
inside the encoder layers 1..L, so attention(l) exists for l = 1..L."""


def solution_4(tokenizer, model, sentence: str, longer: str) -> float:
    """Token 1's last-layer vector in both inputs, compared by cosine."""
    import torch
    from helpers.model.trace import trace_text

    last = model.config.num_hidden_layers
    a = trace_text(tokenizer, model, sentence).hidden(last)[1]
    b = trace_text(tokenizer, model, longer).hidden(last)[1]
    return torch.nn.functional.cosine_similarity(a, b, dim=0).item()
# The prediction: "different". BERT's attention is bidirectional, so every token's vector
# after layer 1 depends on the words after it too. (In a left-to-right model such as GPT
# the cosine would be 1.) At hidden(0) the two vectors are identical: the embeddings look
# at one token only.
