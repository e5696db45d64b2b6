"""Lesson 08 (:mod:`helpers.attention`): where attention goes, by token class.

* :data:`TOKEN_CLASSES` ([CLS], [SEP], punctuation, other), :func:`token_class`,
  :func:`class_onehot`; each row's share per class (:func:`attention_shares`,
  :func:`mean_attention_shares`, :func:`cls_attention`), the entropy of each row
  (:func:`attention_entropy`, :func:`normalized_entropy`), heads that look at an offset
  (:func:`offset_head_scores`, :func:`best_head`);
* like for like with Clark et al. (2019): sentence pairs (:func:`load_sentence_pairs`), which
  pairs each packed input joins (:func:`packed_pair_groups`, :func:`packed_pairs`), the share a
  uniform head would give (:func:`uniform_shares`), per sentence
  (:func:`attention_shares_per_sentence`).

Everything works on cached :class:`~helpers.model.trace.Trace` objects. Attention exists for
encoder layers ``1 .. L``: results have ``L`` rows, row ``i`` being layer ``i + 1``.
"""

from __future__ import annotations

import unicodedata

import torch

from helpers.common.data import load_sentence_pairs  # noqa: F401 (re-exported: lesson 08's sentence pairs)
from helpers.model.trace import Trace, check_trace, check_traces, device_of


TOKEN_CLASSES = ("[CLS]", "[SEP]", "punctuation", "other")


def token_class(token: str) -> str:
    """One of :data:`TOKEN_CLASSES` for a WordPiece token string."""
    if token == "[CLS]":
        return "[CLS]"
    if token == "[SEP]":
        return "[SEP]"
    text = token[2:] if token.startswith("##") else token
    if text and all(unicodedata.category(ch).startswith("P") for ch in text):
        return "punctuation"
    return "other"


def class_onehot(trace: Trace) -> torch.Tensor:
    """``[seq, 4]``: row ``j`` marks the class (:data:`TOKEN_CLASSES`) of token ``j``."""
    classes = [token_class(t) for t in check_trace(trace).tokens]
    return torch.tensor([[c == k for k in TOKEN_CLASSES] for c in classes], dtype=torch.float32, device=trace.device)


def attention_shares(trace: Trace, queries: list[int] | None = None) -> torch.Tensor:
    """Share of attention landing on each token class, per layer: ``[L, 4]``.

    For every head and every query token the attention row sums to 1; we add up the
    weights on the keys of each class (:data:`TOKEN_CLASSES`) and average over queries
    and heads, so each row sums to 1. Row ``i`` is layer ``i + 1``. ``queries`` restricts
    the average to some query positions (``[0]``: what [CLS] looks at).
    """
    check_trace(trace)
    att = torch.stack(trace.attentions)  # [L, heads, q, k]
    if queries is not None:
        for q in queries:
            trace.check_token(q)
        att = att[:, :, list(queries)]
    return (att @ class_onehot(trace)).mean(dim=(1, 2))


def mean_attention_shares(traces) -> torch.Tensor:
    """:func:`attention_shares` averaged over several sentences: ``[L, 4]``."""
    return torch.stack([attention_shares(t) for t in check_traces(traces)]).mean(dim=0)


def cls_attention(trace: Trace) -> torch.Tensor:
    """What [CLS] (query position 0) attends to, per layer and head: ``[L, heads, seq]``."""
    return torch.stack(check_trace(trace).attentions)[:, :, 0, :]


def attention_entropy(trace: Trace) -> torch.Tensor:
    """Entropy (nats) of each head's attention rows, averaged over queries: ``[L, heads]``.

    Low entropy: the head looks at few tokens; ``log(seq_len)``: it spreads evenly.
    """
    from helpers.layerwalk.compute import attention_row_entropy

    return attention_row_entropy(torch.stack(check_trace(trace).attentions)).mean(dim=-1)


def offset_head_scores(trace: Trace, offset: int) -> torch.Tensor:
    """Mean attention from position ``i`` to ``i + offset``: ``[L, heads]``.

    ``offset=-1`` scores previous-token heads, ``offset=+1`` next-token heads; queries
    whose ``i + offset`` falls outside the sequence are left out.
    """
    check_trace(trace)
    if isinstance(offset, bool) or not isinstance(offset, int) or offset == 0:
        raise ValueError(f"offset must be a non-zero int such as -1 (previous) or +1 (next), got {offset!r}.")
    n = trace.seq_len
    if abs(offset) >= n:
        raise ValueError(f"offset {offset} is too large for a sequence of {n} tokens.")
    att = torch.stack(trace.attentions)
    queries = torch.arange(max(0, -offset), min(n, n - offset), device=att.device)
    return att[:, :, queries, queries + offset].mean(dim=-1)


def best_head(scores: torch.Tensor) -> tuple[int, int, float]:
    """``(layer, head, score)`` of the highest entry of an ``[L, heads]`` table; layer is 1-based."""
    scores = torch.as_tensor(scores, device=device_of(scores))
    if scores.ndim != 2:
        raise ValueError(f"scores must be an [layers, heads] table, got shape {tuple(scores.shape)}.")
    flat = int(scores.argmax())
    layer, head = divmod(flat, scores.shape[1])
    return layer + 1, head, float(scores[layer, head])


# -- like for like with Clark et al. (2019): sentence pairs, lengths, the uniform share --------

def packed_pair_groups(pairs, tokenizer, max_tokens: int = 128) -> list[tuple[list[int], list[int]]]:
    """Which of ``pairs`` each input of :func:`packed_pairs` joins: per packed input, the indices
    of the pairs in segment A and in segment B. A pair belongs to at most one packed input (a last,
    incomplete input is dropped), so a packed input and the short inputs of its pairs share their
    sentences: a comparison between the two lengths can be paired on them."""
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 8:
        raise ValueError(f"max_tokens must be an int >= 8, got {max_tokens!r}.")
    sizes = [len(tokenizer.tokenize(f"{a} {b}")) for a, b in pairs]
    half = (max_tokens - 3) // 2
    groups, i = [], 0
    while i < len(sizes):
        segments = []
        for _ in range(2):
            chunk, used = [], 0
            while i < len(sizes) and used + sizes[i] <= half:
                chunk.append(i)
                used += sizes[i]
                i += 1
            if not chunk and i < len(sizes):  # one pair longer than half the budget: it fills the segment
                chunk.append(i)
                i += 1
            segments.append(chunk)
        if all(segments):
            groups.append((segments[0], segments[1]))
    return groups


def packed_pairs(pairs, tokenizer, max_tokens: int = 128) -> list[tuple[str, str]]:
    """Consecutive pairs joined into longer two-segment inputs of at most ``max_tokens`` tokens
    (special tokens included): segment A takes the next pairs while half the budget lasts,
    segment B the ones after (:func:`packed_pair_groups` says which). Clark et al. (2019) used
    such inputs: two consecutive paragraphs, up to 128 tokens."""
    texts = [f"{a} {b}" for a, b in pairs]
    return [(" ".join(texts[i] for i in a), " ".join(texts[i] for i in b))
            for a, b in packed_pair_groups(pairs, tokenizer, max_tokens)]


def uniform_shares(trace: Trace) -> torch.Tensor:
    """The share of each token class (:data:`TOKEN_CLASSES`) if every query spread its
    attention evenly over the ``n`` keys: ``count / n``, ``[4]``. Any share should be read
    against this: with 20 tokens, two [SEP] get 10 % by doing nothing special; with 128, 1.6 %."""
    check_trace(trace)
    classes = [token_class(t) for t in trace.tokens]
    return torch.tensor([classes.count(k) / len(classes) for k in TOKEN_CLASSES], device=trace.device)


def attention_shares_per_sentence(traces) -> torch.Tensor:
    """:func:`attention_shares` of every trace, ``[n_traces, L, 4]`` (for an interval over sentences)."""
    return torch.stack([attention_shares(t) for t in check_traces(traces)])


def normalized_entropy(trace: Trace) -> torch.Tensor:
    """:func:`attention_entropy` divided by ``log n``: 0 for one key, 1 for uniform attention,
    so inputs of different lengths compare: ``[L, heads]``."""
    check_trace(trace)
    if trace.seq_len < 2:
        raise ValueError("a normalized entropy needs at least 2 tokens.")
    return attention_entropy(trace) / torch.log(torch.tensor(float(trace.seq_len), device=trace.device))
