"""Worked solutions for lesson 01's exercises."""

import torch


def solution_1(trace, word: str) -> int:
    """Where ``word`` starts: find_word counts WordPiece tokens and [CLS]."""
    return trace.find_word(word).first


def solution_2(model, tokenizer, word_a: str, word_b: str):
    """Cosine similarity of two words' input-embedding rows (a split word: mean of its pieces)."""
    table = model.embeddings.word_embeddings.weight.detach()
    vectors = []
    for word in (word_a, word_b):
        ids = tokenizer.convert_tokens_to_ids(tokenizer.tokenize(word))
        if tokenizer.unk_token_id in ids:
            return None  # the vocabulary does not know this word
        vectors.append(table[torch.tensor(ids)].mean(dim=0))
    return torch.nn.functional.cosine_similarity(vectors[0], vectors[1], dim=0).item()


def solution_3(model, trace) -> torch.Tensor:
    """hidden_states[0] of a (pair) trace: three lookups, a sum, LayerNorm."""
    emb = model.embeddings
    with torch.no_grad():
        total = (emb.word_embeddings.weight[trace.input_ids]
                 + emb.position_embeddings.weight[torch.arange(trace.seq_len)]
                 + emb.token_type_embeddings.weight[trace.token_type_ids])
        return emb.LayerNorm(total)


def solution_3_by_hand(model, trace) -> torch.Tensor:
    """Exercise 3 with the LayerNorm written out, as the lesson asks: the variance divides by
    H (``unbiased=False``), not H - 1."""
    emb = model.embeddings
    ln = emb.LayerNorm
    with torch.no_grad():
        total = (emb.word_embeddings.weight[trace.input_ids]
                 + emb.position_embeddings.weight[torch.arange(trace.seq_len)]
                 + emb.token_type_embeddings.weight[trace.token_type_ids])
        mu = total.mean(dim=-1, keepdim=True)
        var = total.var(dim=-1, keepdim=True, unbiased=False)
        return ln.weight * (total - mu) / torch.sqrt(var + ln.eps) + ln.bias


def solution_4(trace, first: int, second: int) -> float:
    """The hidden(0) rows of two occurrences of one word, compared by cosine."""
    rows = trace.hidden(0)
    return torch.nn.functional.cosine_similarity(rows[first], rows[second], dim=0).item()
# The prediction: "different". The word-table row is the same, but the position rows differ
# (position i and position j), and the LayerNorm of two different sums differs.
