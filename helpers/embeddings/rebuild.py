"""Lesson 01 by hand: the embedding layer (word + position + token type, then LayerNorm).

Mirrors ``BertEmbeddings`` in ``transformers/models/bert/modeling_bert.py`` and uses its
names; lesson 01 checks every result against the model. Runs in evaluation mode, where
dropout is the identity, so dropout is skipped."""

from __future__ import annotations

import torch

from helpers.common.checks import as_ids, check_bert


def layer_norm_by_hand(x: torch.Tensor, layer_norm: torch.nn.LayerNorm) -> torch.Tensor:
    r"""$\mathrm{LN}(x) = \gamma \odot (x - \mu) / \sqrt{\sigma^2 + \epsilon} + \beta$ over the last dim."""
    mean = x.mean(dim=-1, keepdim=True)
    var = x.var(dim=-1, keepdim=True, unbiased=False)  # LayerNorm uses the biased variance
    return layer_norm.weight * (x - mean) / torch.sqrt(var + layer_norm.eps) + layer_norm.bias


def embeddings_by_hand(model, input_ids: torch.Tensor, token_type_ids: torch.Tensor | None = None) -> torch.Tensor:
    """``hidden_states[0]``: LayerNorm(word + position + token-type embeddings).

    ``input_ids`` is ``[seq]`` or ``[batch, seq]``; ``token_type_ids`` defaults to all zeros
    (one sentence), as in the model. Positions are ``0 .. seq-1``.
    """
    check_bert(model)
    emb = model.embeddings
    ids, unbatched = as_ids(input_ids, "input_ids", model.config.vocab_size)
    if token_type_ids is None:
        types = torch.zeros_like(ids)
    else:
        types, _ = as_ids(token_type_ids, "token_type_ids", model.config.type_vocab_size)
        if types.shape != ids.shape:
            raise ValueError(f"token_type_ids shape {tuple(types.shape)} differs from input_ids {tuple(ids.shape)}.")
    seq = ids.shape[1]
    if seq > model.config.max_position_embeddings:
        raise ValueError(f"{seq} tokens, but the model has only {model.config.max_position_embeddings} positions.")
    positions = torch.arange(seq, device=emb.position_embeddings.weight.device)
    word = emb.word_embeddings.weight[ids]  # a lookup is just row indexing
    position = emb.position_embeddings.weight[positions]  # broadcasts over the batch
    token_type = emb.token_type_embeddings.weight[types]
    out = layer_norm_by_hand(word + position + token_type, emb.LayerNorm)
    return out[0] if unbatched else out


def embedding_parts(model, input_ids: torch.Tensor, token_type_ids: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
    """Every step of ``BertEmbeddings`` for one input ``[seq]``, each ``[seq, hidden]``:
    ``word``, ``position`` and ``token_type`` rows, their ``sum``, and the ``layernorm`` output
    (which is ``hidden_states[0]``). For the step picture of lesson 01."""
    check_bert(model)
    ids, unbatched = as_ids(input_ids, "input_ids", model.config.vocab_size)
    if not unbatched:
        raise ValueError(f"input_ids must be one input [seq], got shape {tuple(input_ids.shape)}.")
    types = torch.zeros_like(ids) if token_type_ids is None else as_ids(
        token_type_ids, "token_type_ids", model.config.type_vocab_size)[0]
    if types.shape != ids.shape:
        raise ValueError(f"token_type_ids shape {tuple(types.shape)} differs from input_ids {tuple(ids.shape)}.")
    emb = model.embeddings
    with torch.no_grad():
        parts = {
            "word": emb.word_embeddings.weight[ids[0]],
            "position": emb.position_embeddings.weight[torch.arange(ids.shape[1], device=emb.position_embeddings.weight.device)],
            "token_type": emb.token_type_embeddings.weight[types[0]],
        }
        parts["sum"] = parts["word"] + parts["position"] + parts["token_type"]
        parts["layernorm"] = layer_norm_by_hand(parts["sum"], emb.LayerNorm)
    return {k: v.detach().clone() for k, v in parts.items()}


def static_word_vector(model, tokenizer, word: str) -> tuple[torch.Tensor | None, list[str]]:
    """The input-embedding row(s) of ``word``: ``(vector, pieces)``.

    A word split into several WordPieces gets the mean of their rows. A word the vocabulary
    only knows as ``[UNK]`` returns ``(None, pieces)`` so the caller can skip it with a note.
    """
    if not isinstance(word, str) or not word.strip():
        raise ValueError(f"word must be a non-empty string, got {word!r}.")
    pieces = tokenizer.tokenize(word.strip())
    ids = tokenizer.convert_tokens_to_ids(pieces)
    if not ids or tokenizer.unk_token_id in ids:
        return None, pieces
    rows = model.embeddings.word_embeddings.weight[torch.tensor(ids, device=model.embeddings.word_embeddings.weight.device)]
    return rows.mean(dim=0).detach(), pieces
