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
    """Encoder layer ``layer`` rewired as pre-LN with its own weights: each LayerNorm in front of
    its block, the residual sums left as they are."""
    m = model.encoder.layer[layer - 1]
    x = trace.hidden(layer - 1)
    A = model.config.num_attention_heads
    d = model.config.hidden_size // A

    def layer_norm(v, ln):  # written out: mean 0, variance 1 over the H numbers, then gain and bias
        centred = v - v.mean(-1, keepdim=True)
        return centred / torch.sqrt(centred.pow(2).mean(-1, keepdim=True) + ln.eps) * ln.weight + ln.bias

    with torch.no_grad():
        first = layer_norm(x, m.attention.output.LayerNorm)
        q, k, v = (lin(first).view(-1, A, d).transpose(0, 1)
                   for lin in (m.attention.self.query, m.attention.self.key, m.attention.self.value))
        context = (torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(d), dim=-1) @ v).transpose(0, 1).reshape(x.shape)
        h = x + m.attention.output.dense(context)
        second = layer_norm(h, m.output.LayerNorm)
        return h + m.output.dense(torch.nn.functional.gelu(m.intermediate.dense(second)))
# The prediction, read off the checker: "far". The layer's weights were trained to work on
# normalised sums; fed un-normalised ones, and with no LayerNorm to reset the length after
# each add, the same numbers compute a different vector.


def solution_4(large) -> float:
    """BERT-large's share of parameters in the embedding layer."""
    H = large.hidden_size
    embeddings = (large.vocab_size + large.max_position_embeddings + large.type_vocab_size) * H + 2 * H
    return embeddings / solution_2(large)
# The prediction: "lower" for the bundled model (and for BERT-base): the embedding tables
# grow with H only, (V + P + T) x H, while every layer grows with H^2 (and H x I), and
# BERT-large has 24 of them. A model that is already deep and wide can have a lower share
# than BERT-large; the checker compares with the loaded model's own share.
