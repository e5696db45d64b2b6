"""Worked solutions for lesson 03's exercises."""

import math

import torch


def solution_1(config) -> int:
    """Parameters of one encoder layer: six dense layers' weights and biases, two LayerNorms."""
    H, I = config.hidden_size, config.intermediate_size
    attention = 4 * (H * H + H)  # query, key, value, attention.output.dense
    ffn = (H * I + I) + (I * H + H)  # intermediate.dense, output.dense
    return attention + ffn + 2 * 2 * H  # two LayerNorms (gain + bias)


def solution_2(config) -> int:
    """Total of BertModel(config): embeddings, L layers, pooler."""
    H = config.hidden_size
    embeddings = (config.vocab_size + config.max_position_embeddings + config.type_vocab_size) * H + 2 * H
    return embeddings + config.num_hidden_layers * solution_1(config) + (H * H + H)


def solution_3(model, trace, layer: int) -> torch.Tensor:
    """Encoder layer ``layer`` written out from its input hidden_states[layer - 1]."""
    m = model.encoder.layer[layer - 1]
    x = trace.hidden(layer - 1)
    A = model.config.num_attention_heads
    d = model.config.hidden_size // A
    with torch.no_grad():
        heads = [lin(x).view(-1, A, d).transpose(0, 1) for lin in (m.attention.self.query, m.attention.self.key, m.attention.self.value)]
        probs = torch.softmax(heads[0] @ heads[1].transpose(-1, -2) / math.sqrt(d), dim=-1)
        context = (probs @ heads[2]).transpose(0, 1).reshape(x.shape)
        attended = m.attention.output.LayerNorm(m.attention.output.dense(context) + x)
        inner = m.intermediate.dense(attended)
        inner = 0.5 * inner * (1 + torch.erf(inner / math.sqrt(2)))  # exact GELU
        return m.output.LayerNorm(m.output.dense(inner) + attended)


def _layer_norm(x, ln):
    """LayerNorm written out: the variance divides by H (unbiased=False), not H - 1."""
    mu = x.mean(dim=-1, keepdim=True)
    var = x.var(dim=-1, keepdim=True, unbiased=False)
    return ln.weight * (x - mu) / torch.sqrt(var + ln.eps) + ln.bias


def solution_3_by_hand(model, trace, layer: int) -> torch.Tensor:
    """Exercise 3 as the lesson asks it: both LayerNorms written out."""
    m = model.encoder.layer[layer - 1]
    x = trace.hidden(layer - 1)
    heads = model.config.num_attention_heads
    d = model.config.hidden_size // heads
    att = m.attention
    with torch.no_grad():
        q, k, v = (lin(x).view(-1, heads, d).transpose(0, 1)
                   for lin in (att.self.query, att.self.key, att.self.value))
        probs = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(d), dim=-1)
        context = (probs @ v).transpose(0, 1).reshape(x.shape)
        attn_out = _layer_norm(att.output.dense(context) + x, att.output.LayerNorm)
        inner = m.intermediate.dense(attn_out)
        inner = 0.5 * inner * (1 + torch.erf(inner / math.sqrt(2)))  # exact GELU
        return _layer_norm(m.output.dense(inner) + attn_out, m.output.LayerNorm)


def solution_4(large) -> float:
    """BERT-large's share of parameters in the embedding layer."""
    H = large.hidden_size
    embeddings = (large.vocab_size + large.max_position_embeddings + large.type_vocab_size) * H + 2 * H
    return embeddings / solution_2(large)
# The prediction: "lower" for the bundled model (and for BERT-base): the embedding tables
# grow with H only, (V + P + T) x H, while every layer grows with H^2 (and H x I), and
# BERT-large has 24 of them. A model that is already deep and wide can have a lower share
# than BERT-large; the checker compares with the loaded model's own share.
