"""Lesson 08 numbers: where attention goes, layer by layer and head by head.

Everything works on cached :class:`~helpers.model.trace.Trace` objects, so nothing runs the
model. Attention exists for encoder layers ``1 .. L``: results have ``L`` rows, row ``i``
being layer ``i + 1``.

One module per part of the lesson, all re-exported here (``from helpers.attention.compute import
attention_shares`` keeps working): ``shares.py`` (token classes, shares, entropy, sentence pairs
like for like with Clark et al.), ``norms.py`` (norm-based attention, Kobayashi et al.),
``comparisons.py`` (layers and heads compared, Bonferroni) and ``findings.py`` (the lesson in plain
words). This module keeps the heads lesson 02 picks to show (:func:`mean_max_weight`,
:func:`clearest_head`, :func:`row_column_head`, ...) and attention by word
(:func:`attention_by_word`, Clark et al. 2019)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from helpers.common.stats import (ALPHA, Interval, bootstrap_size, cluster_replicates, rank_layers,
                                  replicate_verdicts)
from helpers.model.paths import data_file
from helpers.model.trace import Trace, check_trace, check_traces, device_of, model_device
from helpers.attention.shares import (TOKEN_CLASSES, attention_entropy, attention_shares,  # noqa: F401
                                      attention_shares_per_sentence, best_head, class_onehot, cls_attention,
                                      load_sentence_pairs, mean_attention_shares, normalized_entropy,
                                      offset_head_scores, packed_pair_groups, packed_pairs, token_class,
                                      uniform_shares)
from helpers.attention.norms import (norm_attention, norm_attention_layer, norm_attention_shares,  # noqa: F401
                                     norm_attention_shares_layer, transformed_value_norms, transformed_values,
                                     untrained_like, value_norms_by_class)
from helpers.attention.comparisons import (MIN_HEADS, above_threshold, compare_layers, compare_sentence,  # noqa: F401
                                           compare_unpaired_layers, deep_heads_verdict, deep_layers_verdict,
                                           extreme_layer, head_key_ratio, head_key_share, head_token_share,
                                           heads_above, paired_p_values)
from helpers.attention.findings import (SINK_FLOOR, boundary_finding, claim_rows, cls_heads_finding,  # noqa: F401
                                        favourite_key_rows, layer_rows, length_finding, norm_finding,
                                        other_sink_finding, punct_finding, self_attention_finding, sink_finding,
                                        sink_from_ratio, sink_layers_phrase, sink_of, sink_test)


# -- picking heads to show (lesson 02) -----------------------------------------------------

HEAD_PATTERNS = ("previous token", "next token", "self", "[CLS]", "[SEP]")


def mean_max_weight(trace: Trace) -> torch.Tensor:
    """Each head's largest weight per query row, averaged over the rows: ``[L, heads]``.

    1 means every query puts all its attention on one key; ``1 / seq_len`` means every row
    is uniform. Lesson 02 shows the head where it is largest as "a clear pattern"."""
    att = torch.stack(check_trace(trace).attentions)  # [L, heads, queries, keys]
    return att.max(dim=-1).values.mean(dim=-1)


def clearest_head(trace: Trace) -> tuple[int, int, float]:
    """``(layer, head, mean max weight)`` of the head with the largest :func:`mean_max_weight`
    (layer 1-based, head 0-based)."""
    return best_head(mean_max_weight(trace))


def most_diffuse_head(trace: Trace) -> tuple[int, int, float]:
    """``(layer, head, entropy in nats)`` of the head with the largest mean row entropy
    (:func:`attention_entropy`): the one that spreads its attention most evenly."""
    return best_head(attention_entropy(trace))


def pattern_shares(trace: Trace, layer: int, head: int) -> dict[str, float]:
    """How much of one head's attention goes to each simple pattern of :data:`HEAD_PATTERNS`,
    as the mean over query rows of the weight on: the previous token, the next token, the
    query itself, ``[CLS]`` (key 0) and the ``[SEP]`` keys together.

    Rows with no previous (or next) token are left out of that pattern's mean; a pattern no
    row can have (a one-token input) is ``nan``."""
    check_trace(trace)
    trace.check_layer(layer, allow_embeddings=False)
    trace.check_head(head)
    probs = trace.attention(layer, head)
    n = trace.seq_len
    rows = torch.arange(n, device=probs.device)
    sep = torch.tensor([t == "[SEP]" for t in trace.tokens], device=probs.device)
    nan = float("nan")
    return {
        "previous token": probs[rows[1:], rows[1:] - 1].mean().item() if n > 1 else nan,
        "next token": probs[rows[:-1], rows[:-1] + 1].mean().item() if n > 1 else nan,
        "self": probs.diagonal().mean().item(),
        "[CLS]": probs[:, 0].mean().item(),
        "[SEP]": probs[:, sep].sum(dim=-1).mean().item() if sep.any() else nan,
    }


def main_pattern(shares: dict[str, float]) -> tuple[str, float]:
    """The pattern of :func:`pattern_shares` with the largest share, and that share."""
    known = {k: v for k, v in shares.items() if v == v}  # drop nan
    if not known:
        raise ValueError("no pattern can be measured on this input (too few tokens).")
    name = max(known, key=known.get)
    return name, known[name]


def row_column_head(trace: Trace, query: int = 0) -> tuple[int, int] | None:
    """A head where "the key row ``query`` attends to most" (argmax of row ``query``) and "the
    query that attends most to key ``query``" (argmax of column ``query``) are different
    positions, so a row/column mix-up gives a wrong answer. Heads are tried from the middle
    layer and the middle head outwards; ``None`` when no head of any layer separates them."""
    check_trace(trace)
    if not 0 <= query < trace.seq_len:
        raise ValueError(f"query must be a position 0 to {trace.seq_len - 1}, got {query}.")
    L, heads = trace.num_layers, trace.num_heads
    layers = sorted(range(1, L + 1), key=lambda l: (abs(l - max(1, L // 2)), l))
    order = sorted(range(heads), key=lambda h: (abs(h - heads // 2), h))
    for layer in layers:
        probs = trace.attention(layer)  # [heads, queries, keys]
        for head in order:
            if int(probs[head, query].argmax()) != int(probs[head, :, query].argmax()):
                return layer, head
    return None


# -- attention by word ---------------------------------------------------------------------------
#
# The rule of Clark et al. (2019, "What Does BERT Look At?", section 4, and their code,
# `get_word_word_attention` in clarkkev/attention-analysis, bpe_utils.py, whose comment says
# "we use 'mean' in the paper"): attention *to* a word split into several WordPieces is the sum of
# the weights on its pieces (attention a query gives is additive over keys); attention *from* such
# a word is the mean of its pieces' rows (each row is a distribution, and the mean of
# distributions is one). Every word row then still sums to 1.


@dataclass(frozen=True)
class WordGroups:
    """The words of a traced input: ``positions[w]`` are word ``w``'s token positions, ``labels[w]``
    its text; special tokens ([CLS], [SEP]) are words of their own."""

    positions: tuple
    labels: tuple

    def __len__(self) -> int:
        return len(self.positions)

    def membership(self, n_tokens: int, device=None) -> torch.Tensor:
        """``[W, T]``: 1 where token ``t`` belongs to word ``w``."""
        m = torch.zeros(len(self), n_tokens, device=device)
        for w, positions in enumerate(self.positions):
            m[w, list(positions)] = 1.0
        return m


def word_groups(trace: Trace, word_starts=None) -> WordGroups:
    """The tokens of each word of ``trace``'s input, in order.

    Without ``word_starts`` the words are the fast tokenizer's (``word_ids``, per segment of a
    pair). BERT's basic tokenizer makes every CJK character a word of its own, so for Chinese give
    ``word_starts``: the character offsets in the text where a word begins (lesson 15's jieba
    segmentation: ``SegmentedSentence.word_starts()`` in ``helpers/chinese/compute.py``); a token
    then joins the word whose span its first character falls in."""
    trace = check_trace(trace)
    if word_starts is not None and trace.text_pair is not None:
        raise ValueError("word_starts describes one text: give a trace of a single sentence, not a pair.")
    starts = None if word_starts is None else sorted({int(s) for s in word_starts} | {0})
    groups: dict = {}
    for pos, (seq, wid) in enumerate(zip(trace.sequence_ids, trace.word_ids)):
        span = trace._char_spans[pos] if pos < len(trace._char_spans) else None
        if wid is None or span is None:
            key = ("special", pos)  # [CLS], [SEP]: a word of their own
        elif starts is not None:
            key = ("word", 0, int(np.searchsorted(starts, span[0], side="right")) - 1)
        else:
            key = ("word", seq, wid)
        groups.setdefault(key, []).append(pos)
    positions = tuple(tuple(p) for p in groups.values())
    labels = []
    for key, pos in zip(groups, positions):
        if key[0] == "special":
            labels.append(trace.tokens[pos[0]])
        else:
            source = trace.text if key[1] == 0 else trace.text_pair
            labels.append(source[trace._char_spans[pos[0]][0]:trace._char_spans[pos[-1]][1]])
    return WordGroups(positions, tuple(labels))


def attention_by_word(attention, groups: WordGroups) -> torch.Tensor:
    """``[..., T, T]`` token attention -> ``[..., W, W]`` word attention: columns (keys) summed over
    a word's tokens, rows (queries) averaged over them (Clark et al. 2019; see above). Rows that sum
    to 1 over tokens sum to 1 over words."""
    attention = torch.as_tensor(attention, device=device_of(attention))
    n = attention.shape[-1]
    if attention.shape[-2] != n or sum(len(p) for p in groups.positions) != n:
        raise ValueError(f"attention must be [..., {n}, {n}] and the words must cover its {n} tokens once; "
                         f"got shape {tuple(attention.shape)} and {sum(len(p) for p in groups.positions)} tokens.")
    m = groups.membership(n, attention.device).to(attention.dtype)  # [W, T]
    keys_summed = attention @ m.T  # [..., T, W]
    return (m / m.sum(1, keepdim=True)) @ keys_summed  # [..., W, W]


def summed_query_attention(attention, queries) -> torch.Tensor:
    """``[..., Q, K]`` attention -> ``[..., K]``: the attention of several queries (tokens or words)
    added up, what the selected queries together give each key (as bertviz #125 asks); it sums to
    ``len(queries)`` where each row sums to 1."""
    attention = torch.as_tensor(attention, device=device_of(attention))
    queries = sorted({int(q) for q in queries})
    if not queries or queries[0] < 0 or queries[-1] >= attention.shape[-2]:
        raise ValueError(f"queries must be a non-empty set of positions 0 to {attention.shape[-2] - 1}, "
                         f"got {queries}.")
    return attention[..., queries, :].sum(-2)
