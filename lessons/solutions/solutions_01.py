"""Worked solutions for lesson 01's exercises."""

import torch


def solution_1(model, tokenizer, word: str = "bank") -> list[str]:
    """The five rows of the word-embedding table nearest (cosine) to ``word``'s row, the word
    itself and the special tokens left out."""
    table = model.embeddings.word_embeddings.weight.detach()
    wid = tokenizer.convert_tokens_to_ids(word)
    sims = torch.nn.functional.cosine_similarity(table, table[wid][None], dim=-1)
    sims[[wid, *tokenizer.all_special_ids]] = -2.0  # never pick these
    return tokenizer.convert_ids_to_tokens(sims.topk(5).indices.tolist())


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
# Reflection question: the checker prints both numbers, so the comparison is read there. Rows
# grow close when training moves them the same way: words that appear in similar contexts (loan,
# mortgage) get similar updates, whether or not they ever appear side by side.


def solution_3(model, trace) -> dict:
    """Each looked-up part's mean share of the embedding sum: part . sum / ||sum||^2 per token."""
    emb = model.embeddings
    with torch.no_grad():
        parts = {"word": emb.word_embeddings.weight[trace.input_ids],
                 "position": emb.position_embeddings.weight[torch.arange(trace.seq_len)],
                 "segment": emb.token_type_embeddings.weight[trace.token_type_ids]}
        total = parts["word"] + parts["position"] + parts["segment"]
        norm2 = (total * total).sum(dim=-1)
        return {k: float(((v * total).sum(dim=-1) / norm2).mean()) for k, v in parts.items()}
# The prediction is read off the checker: on all-MiniLM-L6-v2 the word rows carry most of the
# sum; the position rows and the segment row share the rest, almost equally (the checker prints
# the three shares: read which is smaller there, it may change with the sentence).


def solution_4(trace, first: int, second: int) -> float:
    """The hidden(0) rows of two occurrences of one word, compared by cosine."""
    rows = trace.hidden(0)
    return torch.nn.functional.cosine_similarity(rows[first], rows[second], dim=0).item()
# The prediction: "different". The word-table row is the same, but the position rows differ
# (position i and position j), and the LayerNorm of two different sums differs.
