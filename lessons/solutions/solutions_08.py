"""Worked solutions for lesson 08's exercises."""

import torch


def solution_1(trace) -> float:
    """Share of the last layer's attention (heads and queries averaged) on [SEP] tokens."""
    att = trace.attention(trace.num_layers)  # [heads, q, k]
    sep = [i for i, tok in enumerate(trace.tokens) if tok == "[SEP]"]
    return float(att[..., sep].sum(dim=-1).mean())


def solution_2(trace) -> tuple[int, int]:
    """(layer, head), layers from 1, with the highest mean attention from i to i - 2."""
    best, where = -1.0, None
    for layer in range(1, trace.num_layers + 1):
        for head in range(trace.num_heads):
            a = trace.attention(layer, head)
            score = torch.stack([a[i, i - 2] for i in range(2, trace.seq_len)]).mean().item()
            if score > best:
                best, where = score, (layer, head)
    return where


def solution_3(tokenizer, model, sentence) -> float:
    """[CLS] share (layers, heads and queries averaged) of the sentence written twice, over that
    of the sentence. The prediction is the learner's own; the measurement is this number."""
    from helpers.model.trace import trace_text

    def cls_share(trace) -> torch.Tensor:
        att = torch.stack(trace.attentions)  # [L, heads, q, k]
        return att[..., 0].mean()  # the key column of [CLS]

    short = trace_text(tokenizer, model, sentence)
    long = trace_text(tokenizer, model, f"{sentence} {sentence}")
    return float(cls_share(long) / cls_share(short))
