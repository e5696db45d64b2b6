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
