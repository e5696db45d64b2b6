"""Worked solutions for lesson 00's exercises."""


def solution_1(trace) -> float:
    """WordPiece tokens per word: every token but [CLS] and [SEP] belongs to a word."""
    in_words = [t for t in trace.tokens if t not in ("[CLS]", "[SEP]")]
    return len(in_words) / len(trace.words())  # words as the tokenizer split them, punctuation included


def solution_2(config, n_tokens: int) -> int:
    """(L + 1) hidden states of n x H, plus L attention maps of A x n x n."""
    L, H, A = config.num_hidden_layers, config.hidden_size, config.num_attention_heads
    return (L + 1) * n_tokens * H + L * A * n_tokens * n_tokens


REFLECTION_2 = """The prediction: "attention". The hidden states grow in proportion to the number of
tokens n (one vector of H numbers per token per layer), the attention maps with n squared (one
weight per pair of tokens, per head, per layer). Past a few dozen tokens the attention weights
are the larger part: one reason long inputs are expensive."""


def solution_3(tokenizer, model, text: str) -> int:
    """Tokens the cut drops: the tokenizer's count without truncation minus the ids encode keeps
    (encode truncates at the model's maximum; its second return value is the same count)."""
    import warnings

    from helpers.model.trace import encode

    full = len(tokenizer(text, verbose=False)["input_ids"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inputs, _ = encode(tokenizer, model, text)
    return full - int(inputs["input_ids"].shape[1])


def prediction_3(tokenizer, model, sentence: str, copies: int) -> int:
    """The arithmetic the prediction asks for: every copy adds the sentence's tokens without
    [CLS] and [SEP]; those two come once; the model keeps its maximum."""
    from helpers.model.trace import max_input_tokens

    per_copy = len(tokenizer(sentence)["input_ids"]) - 2
    return copies * per_copy + 2 - max_input_tokens(tokenizer, model)


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
