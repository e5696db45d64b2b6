"""Lesson 12 (:mod:`helpers.interventions`): one batched run with every hidden state kept, and the classifier on top.

* :class:`CachedRun` / :func:`run_cached` / :func:`run_from_traces` -- hidden states computed once,
  in groups of similar length (:func:`length_buckets`), each padded only to its own longest text;
  an intervention at layer ``l`` re-runs only the layers above it (``helpers/model/layers.py``);
* :class:`SentenceHead` and :func:`pooled_features` -- the lesson's linear head on the pooled last
  hidden state;
* :func:`head_token_class_shares` -- where each head's attention goes, by token class;
* bookkeeping -- :func:`first_per_class`, :func:`count_truncated`.

Layer numbering is the course's: ``0`` is the embedding output, ``1 .. L`` the encoder layers.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import torch

from helpers.attention.compute import TOKEN_CLASSES, token_class
from helpers.classify.compute import mean_pool
from helpers.common.progress import progress as progress_bar
from helpers.model.layers import model_sizes
from helpers.model.trace import check_trace, model_device


# -- one batched run, every hidden state kept -------------------------------------------------


@dataclass
class CachedRun:
    """A padded batch run through the model once: ``hidden_states[l]`` is ``[B, T, H]``
    after layer ``l`` (0 = embeddings); ``attentions[l-1]`` is ``[B, A, T, T]`` when kept."""

    hidden_states: tuple
    attention_mask: torch.Tensor  # [B, T], 1 = real token
    tokens: list  # one list of token strings per item (padding left out)
    attentions: tuple | None = None
    n_truncated: int = 0  # how many texts were longer than max_length and lost tokens
    token_shares: torch.Tensor | None = None  # [B, L, A, 4] per head, see head_token_class_shares

    @property
    def num_layers(self) -> int:
        return len(self.hidden_states) - 1

    def __len__(self) -> int:
        return self.attention_mask.shape[0]

    def hidden(self, layer: int) -> torch.Tensor:
        if isinstance(layer, bool) or not isinstance(layer, int) or not 0 <= layer <= self.num_layers:
            raise ValueError(f"layer {layer!r} is out of range: valid layers are 0 (embeddings) "
                             f"to {self.num_layers}.")
        return self.hidden_states[layer]

    def subset(self, items) -> CachedRun:
        """The run of the items ``items`` only (indices, in that order): their hidden states, mask,
        tokens and, when kept, attention maps and token shares. The columns stay padded to the
        longest item of the whole run; ``n_truncated`` is not carried over (0)."""
        items = [int(i) for i in items]
        return CachedRun(tuple(h[items] for h in self.hidden_states), self.attention_mask[items],
                         [self.tokens[i] for i in items],
                         None if self.attentions is None else tuple(a[items] for a in self.attentions),
                         0, None if self.token_shares is None else self.token_shares[items])


def first_per_class(labels, k: int = 1) -> list[int]:
    """The indices of the first ``k`` items of every class in ``labels`` (fewer where a class has
    fewer), sorted: e.g. one or two test utterances of every intent."""
    labels = [int(c) for c in labels]
    return sorted(i for c in set(labels) for i in [j for j, v in enumerate(labels) if v == c][:k])


def _check_texts(texts) -> list[str]:
    if isinstance(texts, str) or not len(texts) or not all(isinstance(t, str) and t.strip() for t in texts):
        raise ValueError("texts must be a non-empty list of non-empty strings (wrap a single sentence in a list).")
    return list(texts)


def count_truncated(tokenizer, texts, max_length: int) -> int:
    """How many of ``texts`` have more than ``max_length`` tokens (special tokens included),
    i.e. lose tokens when truncated to ``max_length``."""
    if isinstance(max_length, bool) or not isinstance(max_length, int) or max_length < 3:
        raise ValueError(f"max_length must be an int >= 3 (room for [CLS], a token and [SEP]), got {max_length!r}.")
    lengths = [len(ids) for ids in tokenizer(_check_texts(texts), truncation=False, verbose=False)["input_ids"]]
    return sum(n > max_length for n in lengths)


def length_buckets(attention_mask: torch.Tensor, size: int = 10) -> list[tuple[list[int], int]]:
    """Items sorted by length in groups of ``size``: ``[(item indices, longest length), ...]``.
    Each group is padded only to its own longest item, so short items waste no work on padding."""
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ValueError(f"size must be a positive int, got {size!r}.")
    lengths = attention_mask.sum(1)
    order = torch.argsort(lengths, stable=True).tolist()
    groups = [order[i:i + size] for i in range(0, len(order), size)]
    return [(g, int(lengths[g].max())) for g in groups]


def _token_class_onehot(tokens: list, width: int) -> torch.Tensor:
    """``[B, width, 4]``: one-hot token class (:data:`TOKEN_CLASSES`) of every key position."""
    onehot = torch.zeros(len(tokens), width, len(TOKEN_CLASSES))  # cpu: filled cell by cell, then moved
    for i, toks in enumerate(tokens):
        for j, tok in enumerate(toks):
            onehot[i, j, TOKEN_CLASSES.index(token_class(tok))] = 1.0
    return onehot


def _token_class_shares(att: torch.Tensor, mask: torch.Tensor, tokens: list) -> torch.Tensor:
    """``att`` ``[B, L, A, T, T]`` -> ``[B, L, A, 4]``: share of each head's attention on keys of
    each token class, averaged over the real queries."""
    per_query = att @ _token_class_onehot(tokens, att.shape[-1]).to(att.device)[:, None, None]  # [B, L, A, T, 4]
    q = mask[:, None, None, :, None].to(att.dtype)
    return (per_query * q).sum(3) / q.sum(3)


@torch.no_grad()
def run_cached(tokenizer, model, texts, *, max_length: int = 32, attentions: bool = False,
               token_shares: bool = False, batch_size: int = 64) -> CachedRun:
    """Pad + truncate ``texts`` to ``max_length`` tokens (as lesson 10's ``extract_features``
    does), run them once and keep every hidden state. Warns when a text is longer than
    ``max_length`` and is cut (``.n_truncated`` counts them).

    The texts run in groups of ``batch_size`` of similar length (:func:`length_buckets`), each
    padded only to its own longest text: a set of mostly short utterances with a few long ones
    costs what its tokens cost. The kept states are padded to the longest text; only the positions
    the attention mask marks as real carry meaning.

    ``attentions=True`` keeps every attention map (``[N, A, T, T]`` per layer: for small runs);
    ``token_shares=True`` keeps only each head's attention share per token class
    (``.token_shares``, ``[N, L, A, 4]``, see :func:`head_token_class_shares`)."""
    texts = _check_texts(texts)
    n_truncated = count_truncated(tokenizer, texts, max_length)
    if n_truncated:
        warnings.warn(f"{n_truncated} of {len(texts)} texts are longer than max_length={max_length} tokens and "
                      "were truncated: the model sees only their first tokens.", stacklevel=2)
    device = model_device(model)
    enc = tokenizer(texts, padding=True, truncation=True, max_length=max_length, return_tensors="pt").to(device)
    enc.pop("offset_mapping", None)
    mask = enc["attention_mask"]
    tokens = [tokenizer.convert_ids_to_tokens(ids[m.bool()].tolist()) for ids, m in zip(enc["input_ids"], mask)]
    (N, T), (L, A), H = mask.shape, model_sizes(model), model.config.hidden_size
    states = [torch.zeros(N, T, H, device=device) for _ in range(L + 1)]
    maps = [torch.zeros(N, A, T, T, device=device) for _ in range(L)] if attentions else None
    shares = torch.zeros(N, L, A, len(TOKEN_CLASSES), device=device) if token_shares else None
    for items, width in length_buckets(mask, batch_size):
        batch = {k: v[items, :width] for k, v in enc.items()}
        out = model(**batch, output_hidden_states=True, output_attentions=attentions or token_shares, return_dict=True)
        if (attentions or token_shares) and not out.attentions:
            raise RuntimeError("The model returned no attention weights: load it with attn_implementation='eager' "
                               "(helpers.model.loading.load_model does).")
        for layer, hidden in enumerate(out.hidden_states):
            states[layer][items, :width] = hidden
        if attentions:
            for layer, att in enumerate(out.attentions):
                maps[layer][items, :, :width, :width] = att
        if token_shares:
            shares[items] = _token_class_shares(torch.stack(out.attentions, 1), batch["attention_mask"],
                                                [tokens[i] for i in items])
    return CachedRun(tuple(states), mask, tokens, tuple(maps) if attentions else None, n_truncated, shares)


def run_from_traces(traces) -> CachedRun:
    """The hidden states of several traced sentences, right-padded into one batch."""
    traces = [check_trace(t) for t in traces]
    if not traces:
        raise ValueError("need at least one Trace.")
    longest = max(t.seq_len for t in traces)
    n_layers = traces[0].num_layers
    mask = torch.zeros(len(traces), longest, dtype=torch.long, device=traces[0].device)
    states = []
    for layer in range(n_layers + 1):
        batch = torch.zeros(len(traces), longest, traces[0].hidden_size, device=traces[0].device)
        for i, t in enumerate(traces):
            batch[i, : t.seq_len] = t.hidden_states[layer]
        states.append(batch)
    for i, t in enumerate(traces):
        mask[i, : t.seq_len] = 1
    return CachedRun(tuple(states), mask, [list(t.tokens) for t in traces])


# -- the classifier on top ---------------------------------------------------------------------


class SentenceHead:
    """A lesson-07 linear head read off the last hidden state: ``logits = head(pool(h))``."""

    def __init__(self, head, pooling: str = "mean"):
        if pooling not in ("mean", "cls"):
            raise ValueError(f"pooling {pooling!r} is not valid: choose 'mean' or 'cls'.")
        self.head, self.pooling = head, pooling

    def __call__(self, hidden: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        pooled = mean_pool(hidden, attention_mask) if self.pooling == "mean" else hidden[:, 0]
        return self.head(pooled)


def _labels(labels, n: int, device=None) -> torch.Tensor:
    y = torch.as_tensor(labels, dtype=torch.long, device=device)
    if y.shape != (n,):
        raise ValueError(f"labels must hold one class id per item ({n}), got shape {tuple(y.shape)}.")
    return y


@torch.no_grad()
def pooled_features(tokenizer, model, texts, *, max_length: int = 32, pooling: str = "mean", batch_size: int = 64,
                    progress: bool = True) -> torch.Tensor:
    """``[N, H]``: the last layer of every text pooled as a :class:`SentenceHead` reads it (the
    mean over real tokens, or [CLS]). Lesson 10's ``extract_features`` gives the same vectors (for
    every layer); here the texts run sorted by length, in batches padded only to their own
    longest text, which matters for a training set of mostly short texts with a few long ones."""
    texts = _check_texts(texts)
    if pooling not in ("mean", "cls"):
        raise ValueError(f"pooling {pooling!r} is not valid: choose 'mean' or 'cls'.")
    n_truncated = count_truncated(tokenizer, texts, max_length)
    if n_truncated:
        warnings.warn(f"{n_truncated} of {len(texts)} texts are longer than max_length={max_length} tokens and "
                      "were truncated: the model sees only their first tokens.", stacklevel=2)
    lengths = [len(ids) for ids in tokenizer(texts, truncation=True, max_length=max_length)["input_ids"]]
    order = sorted(range(len(texts)), key=lengths.__getitem__)
    out = torch.empty(len(texts), model.config.hidden_size, device=model_device(model))
    for start in progress_bar(range(0, len(texts), batch_size), desc="features of the training set",
                              disable=not progress):
        rows = order[start:start + batch_size]
        enc = tokenizer([texts[i] for i in rows], padding=True, truncation=True, max_length=max_length,
                        return_tensors="pt").to(out.device)
        hidden = model(**enc).last_hidden_state
        out[rows] = mean_pool(hidden, enc["attention_mask"]) if pooling == "mean" else hidden[:, 0]
    return out


# -- lesson 08's statistics, per head ----------------------------------------------------------------


def head_token_class_shares(run: CachedRun) -> torch.Tensor:
    """``[N, L, A, 4]``: per item, layer and head, the share of attention on keys of each
    class of :data:`~helpers.attention.compute.TOKEN_CLASSES`, averaged over real queries.

    Read from ``run.token_shares`` when :func:`run_cached` kept them (``token_shares=True``),
    else computed from the kept attention maps. Lesson 08's ``attention_shares`` is this averaged
    over heads, for one sentence."""
    if run.token_shares is not None:
        return run.token_shares
    if run.attentions is None:
        raise ValueError("this run kept neither attention maps nor shares: use run_cached(..., token_shares=True).")
    return _token_class_shares(torch.stack(run.attentions, 1), run.attention_mask, run.tokens)


@dataclass
class SentenceInterventions:
    """One sentence's logits: unchanged (``base``, ``[C]``), with head ``h`` of layer ``l``
    removed (``heads[l-1, h]``, ``[C]``) and with layer ``l`` skipped (``skips[l-1]``)."""

    text: str
    tokens: list
    base: torch.Tensor
    heads: torch.Tensor  # [L, A, C]
    skips: torch.Tensor  # [L, C]
    n_truncated: int = 0

    @property
    def num_layers(self) -> int:
        return self.heads.shape[0]

    @property
    def num_heads(self) -> int:
        return self.heads.shape[1]

    def logits(self, layer: int, head: int | None) -> torch.Tensor:
        """``head=None``: layer skipped; ``layer=0``: nothing changed."""
        L, A = self.num_layers, self.num_heads
        if isinstance(layer, bool) or not isinstance(layer, (int, np.integer)) or not 0 <= layer <= L:
            raise ValueError(f"layer {layer!r} is out of range: valid layers are 0 (nothing changed) to {L}.")
        if head is not None and (isinstance(head, bool) or not isinstance(head, (int, np.integer))
                                 or not 0 <= head < A):
            raise ValueError(f"head {head!r} is out of range: valid heads are 0 to {A - 1}, "
                             "or None to skip the layer.")
        if layer == 0:
            return self.base
        return self.skips[layer - 1] if head is None else self.heads[layer - 1, head]
