"""BERT's forward pass rebuilt by hand from the weight matrices.

Each function mirrors one module of ``transformers/models/bert/modeling_bert.py`` and uses
the same names (``word_embeddings``, ``query``/``key``/``value``, ``intermediate``,
``output``, ``LayerNorm``). The lessons compare every result with what the model itself
returns, so each function here is checked against the real thing.

Shapes: hidden states may be ``[seq, hidden]`` (one sentence, as in a
:class:`helpers.trace.Trace`) or ``[batch, seq, hidden]``; results keep the caller's form.
Everything runs in evaluation mode, where dropout is the identity, so dropout is skipped.
"""

from __future__ import annotations

import math

import torch

# ---------------------------------------------------------------------------
# validation
# ---------------------------------------------------------------------------


def _check_bert(model) -> None:
    from transformers import BertModel

    if not isinstance(model, BertModel):
        raise TypeError(
            f"model must be a transformers BertModel (e.g. from helpers.load_model), got {type(model).__name__}."
        )


def _check_layer_module(layer):
    """Accept a ``BertLayer`` (``model.encoder.layer[i]``) and say so clearly otherwise."""
    from transformers.models.bert.modeling_bert import BertLayer

    if not isinstance(layer, BertLayer):
        raise TypeError(
            f"layer must be one encoder layer, model.encoder.layer[i] (a BertLayer), got {type(layer).__name__}."
        )
    return layer


def _as_batch(hidden, hidden_size: int, name: str = "hidden"):
    """Return ``(hidden as [batch, seq, hidden], was_unbatched)`` after checking the shape."""
    if not isinstance(hidden, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(hidden).__name__}.")
    if hidden.dim() not in (2, 3) or hidden.shape[-1] != hidden_size:
        raise ValueError(
            f"{name} has shape {tuple(hidden.shape)}; expected [seq, {hidden_size}] or [batch, seq, {hidden_size}] "
            "(the last dimension is config.hidden_size)."
        )
    return (hidden.unsqueeze(0), True) if hidden.dim() == 2 else (hidden, False)


def _as_ids(ids, name: str, vocab: int | None = None):
    if not isinstance(ids, torch.Tensor) or ids.dtype not in (torch.long, torch.int, torch.int32):
        raise TypeError(f"{name} must be an integer torch.Tensor of shape [seq] or [batch, seq], got {ids!r:.80}.")
    if ids.dim() not in (1, 2):
        raise ValueError(f"{name} must have shape [seq] or [batch, seq], got {tuple(ids.shape)}.")
    if vocab is not None and ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= vocab):
        raise ValueError(f"{name} holds ids outside 0..{vocab - 1}.")
    return (ids.unsqueeze(0), True) if ids.dim() == 1 else (ids, False)


# ---------------------------------------------------------------------------
# lesson 01: the embedding layer
# ---------------------------------------------------------------------------


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
    _check_bert(model)
    emb = model.embeddings
    ids, unbatched = _as_ids(input_ids, "input_ids", model.config.vocab_size)
    if token_type_ids is None:
        types = torch.zeros_like(ids)
    else:
        types, _ = _as_ids(token_type_ids, "token_type_ids", model.config.type_vocab_size)
        if types.shape != ids.shape:
            raise ValueError(f"token_type_ids shape {tuple(types.shape)} differs from input_ids {tuple(ids.shape)}.")
    seq = ids.shape[1]
    if seq > model.config.max_position_embeddings:
        raise ValueError(f"{seq} tokens, but the model has only {model.config.max_position_embeddings} positions.")
    positions = torch.arange(seq)
    word = emb.word_embeddings.weight[ids]  # a lookup is just row indexing
    position = emb.position_embeddings.weight[positions]  # broadcasts over the batch
    token_type = emb.token_type_embeddings.weight[types]
    out = layer_norm_by_hand(word + position + token_type, emb.LayerNorm)
    return out[0] if unbatched else out


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
    rows = model.embeddings.word_embeddings.weight[torch.tensor(ids)]
    return rows.mean(dim=0).detach(), pieces


# ---------------------------------------------------------------------------
# lesson 02: self-attention
# ---------------------------------------------------------------------------


def project_qkv(self_attention, hidden: torch.Tensor):
    """The three projections $Q = XW_Q + b_Q$, $K = XW_K + b_K$, $V = XW_V + b_V$."""
    q = hidden @ self_attention.query.weight.T + self_attention.query.bias
    k = hidden @ self_attention.key.weight.T + self_attention.key.bias
    v = hidden @ self_attention.value.weight.T + self_attention.value.bias
    return q, k, v


def split_heads(x: torch.Tensor, num_heads: int) -> torch.Tensor:
    """``[batch, seq, hidden]`` -> ``[batch, heads, seq, hidden // heads]``."""
    batch, seq, width = x.shape
    if width % num_heads:
        raise ValueError(f"hidden size {width} is not divisible by {num_heads} heads.")
    return x.view(batch, seq, num_heads, width // num_heads).transpose(1, 2)


def merge_heads(x: torch.Tensor) -> torch.Tensor:
    """``[batch, heads, seq, d]`` -> ``[batch, seq, heads * d]`` (the inverse of split_heads)."""
    batch, heads, seq, d = x.shape
    return x.transpose(1, 2).reshape(batch, seq, heads * d)


def extended_attention_mask(attention_mask: torch.Tensor, dtype=torch.float32) -> torch.Tensor:
    """``[batch, seq]`` of 1 (real) / 0 (padding) -> additive ``[batch, 1, 1, seq]``.

    As in modeling_bert: ``(1 - mask) * finfo.min``, so a padded key's score becomes hugely
    negative and its softmax probability 0, for every query and every head.
    """
    mask, _ = _as_ids(attention_mask.long() if attention_mask.dtype == torch.bool else attention_mask, "attention_mask")
    if not set(mask.unique().tolist()) <= {0, 1}:
        raise ValueError("attention_mask must hold only 0 (padding) and 1 (real token).")
    return (1.0 - mask[:, None, None, :].to(dtype)) * torch.finfo(dtype).min


def attention_scores(q: torch.Tensor, k: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    r"""Scaled dot products $QK^\top/\sqrt{d_k}$ (+ the additive mask): ``[batch, heads, seq, seq]``."""
    scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    return scores if mask is None else scores + mask


def softmax_by_hand(scores: torch.Tensor) -> torch.Tensor:
    """Softmax over the keys (last dim); subtracting the row max first avoids overflow."""
    shifted = scores - scores.max(dim=-1, keepdim=True).values
    e = shifted.exp()
    return e / e.sum(dim=-1, keepdim=True)


def self_attention_by_hand(layer, hidden: torch.Tensor, attention_mask: torch.Tensor | None = None):
    """``BertSelfAttention`` of one encoder layer: returns ``(context, probs)``.

    ``context`` has the shape of ``hidden`` (heads merged, before the output dense);
    ``probs`` is ``[heads, seq, seq]`` (or ``[batch, heads, seq, seq]``) with query rows.
    """
    self_attention = _check_layer_module(layer).attention.self
    x, unbatched = _as_batch(hidden, self_attention.query.in_features)
    mask = None
    if attention_mask is not None:
        mask = extended_attention_mask(attention_mask, x.dtype)
        if mask.shape[0] != x.shape[0] or mask.shape[-1] != x.shape[1]:
            raise ValueError(f"attention_mask shape {tuple(attention_mask.shape)} does not match hidden {tuple(hidden.shape)}.")
    heads = self_attention.num_attention_heads
    q, k, v = (split_heads(t, heads) for t in project_qkv(self_attention, x))
    probs = softmax_by_hand(attention_scores(q, k, mask))
    context = merge_heads(probs @ v)
    return (context[0], probs[0]) if unbatched else (context, probs)


# ---------------------------------------------------------------------------
# lesson 03: the rest of the layer and the stack
# ---------------------------------------------------------------------------


def gelu_by_hand(x: torch.Tensor) -> torch.Tensor:
    r"""Exact GELU: $x \cdot \Phi(x) = x \cdot \tfrac12 (1 + \mathrm{erf}(x/\sqrt2))$."""
    return 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))


def _gelu_tanh(x: torch.Tensor) -> torch.Tensor:
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x.pow(3))))


ACTIVATIONS = {"gelu": gelu_by_hand, "gelu_new": _gelu_tanh, "gelu_pytorch_tanh": _gelu_tanh, "relu": torch.relu}


def activation_by_hand(config):
    """The intermediate activation named by ``config.hidden_act``, written out by hand."""
    name = config.hidden_act
    if not isinstance(name, str) or name not in ACTIVATIONS:
        raise ValueError(
            f"config.hidden_act is {name!r}; the by-hand rebuild supports {sorted(ACTIVATIONS)} "
            "(BERT checkpoints use 'gelu')."
        )
    return ACTIVATIONS[name]


def dense(x: torch.Tensor, linear: torch.nn.Linear) -> torch.Tensor:
    """$xW^\\top + b$ with the weights of an ``nn.Linear``."""
    return x @ linear.weight.T + linear.bias


def attention_output_by_hand(layer, context: torch.Tensor, hidden: torch.Tensor) -> torch.Tensor:
    """``BertSelfOutput``: LayerNorm(dense(context) + hidden) -- the first residual."""
    out = _check_layer_module(layer).attention.output
    return layer_norm_by_hand(dense(context, out.dense) + hidden, out.LayerNorm)


def feed_forward_by_hand(layer, attention_output: torch.Tensor) -> torch.Tensor:
    """``BertIntermediate`` + ``BertOutput``: LayerNorm(dense2(act(dense1(x))) + x)."""
    layer = _check_layer_module(layer)
    act = activation_by_hand(layer.attention.self.config)  # every BertLayer keeps the model config here
    inner = act(dense(attention_output, layer.intermediate.dense))
    return layer_norm_by_hand(dense(inner, layer.output.dense) + attention_output, layer.output.LayerNorm)


def layer_by_hand(layer, hidden: torch.Tensor, attention_mask: torch.Tensor | None = None):
    """One full ``BertLayer``: returns ``(layer output, attention probs)``."""
    context, probs = self_attention_by_hand(layer, hidden, attention_mask)
    attended = attention_output_by_hand(layer, context, hidden)
    return feed_forward_by_hand(layer, attended), probs


def encoder_by_hand(model, embeddings: torch.Tensor, attention_mask: torch.Tensor | None = None) -> list[torch.Tensor]:
    """Run every encoder layer by hand; returns ``[embeddings, layer 1, ..., layer L]``."""
    _check_bert(model)
    states = [embeddings]
    for layer in model.encoder.layer:
        states.append(layer_by_hand(layer, states[-1], attention_mask)[0])
    return states


# ---------------------------------------------------------------------------
# lesson 03: parameter counts
# ---------------------------------------------------------------------------


def count_parameters(module: torch.nn.Module) -> int:
    """Number of scalar parameters (works on meta-device models too)."""
    return sum(p.numel() for p in module.parameters())


def parameter_breakdown(model) -> dict[str, int]:
    """Counted on the model itself: embeddings, attention / FFN / LayerNorms of one layer, stack, pooler, total."""
    _check_bert(model)
    layer = model.encoder.layer[0]
    counts = {
        "embeddings": count_parameters(model.embeddings),
        "attention (one layer)": count_parameters(layer.attention),
        "feed-forward (one layer)": count_parameters(layer.intermediate) + count_parameters(layer.output),
        "one layer": count_parameters(layer),
        "all layers": count_parameters(model.encoder),
        "pooler": count_parameters(model.pooler) if model.pooler is not None else 0,
        "total": count_parameters(model),
    }
    return counts


def parameter_formula(config, add_pooler: bool = True) -> dict[str, int]:
    """The same counts from the config alone, written as formulas (weights + biases)."""
    H, I, L = config.hidden_size, config.intermediate_size, config.num_hidden_layers
    embeddings = (config.vocab_size + config.max_position_embeddings + config.type_vocab_size) * H + 2 * H
    attention = 4 * (H * H + H) + 2 * H  # query, key, value, output dense; one LayerNorm
    ffn = (H * I + I) + (I * H + H) + 2 * H  # intermediate dense, output dense; one LayerNorm
    layer = attention + ffn
    pooler = H * H + H if add_pooler else 0
    return {
        "embeddings": embeddings,
        "attention (one layer)": attention,
        "feed-forward (one layer)": ffn,
        "one layer": layer,
        "all layers": L * layer,
        "pooler": pooler,
        "total": embeddings + L * layer + pooler,
    }


def meta_model_parameter_count(config) -> int:
    """Build ``BertModel(config)`` on the meta device (no memory, no download) and count."""
    from transformers import BertModel

    with torch.device("meta"):
        return count_parameters(BertModel(config))
