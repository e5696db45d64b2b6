"""Lesson 12 numbers: change the model, measure what breaks.

Everything here starts from hidden states that were computed once (:class:`CachedRun`) and
re-runs only the encoder layers *above* the change: an intervention at layer ``l`` leaves
layers ``1 .. l-1`` untouched, so their output is read from the cache.

* head ablation -- :func:`gated_heads` multiplies each head's context vector by a gate in a
  forward pre-hook on ``layer.attention.output`` (``BertSelfOutput``, whose ``dense`` is the
  output projection); gate 0 removes the head, replaced by zeros or by its mean context
  (:func:`mean_head_contexts`). :func:`ablate_every_head` does it for every head of every layer,
  in batches;
* gradient head importance (Michel et al. 2019) -- :func:`head_gate_gradients`, the same gates
  with ``requires_grad``, one forward and one backward pass per group of texts;
  :func:`normalize_by_layer` (their per-layer l2 normalisation) and :func:`pruning_curve` (heads
  removed cumulatively in a given order);
* layer skipping -- :func:`skip_every_layer`, layer ``l`` replaced by the identity;
* activation patching -- :func:`patch_word_vectors`, one word's vector swapped in at layer ``l``;
* pruning against random orders -- :func:`random_orders`, :func:`pruning_outcomes` (many orders
  in one batch per share removed) and :func:`pruning_comparison` (a Monte Carlo rank test and a
  two-level bootstrap over the test items and the random orders);
* verdicts -- :func:`outcome_changes` (an intervention's accuracy change on the same items:
  Tango's score interval and McNemar's test, or a cluster bootstrap when items share a unit;
  Bonferroni over the interventions; "equivalent" only inside a margin stated beforehand, TOST on
  the family's equivalence interval), :meth:`HeadAblation.changes` (every head, Bonferroni over
  ``L x A``), :meth:`HeadAblation.tied_with` (heads the data cannot rule out as the worst),
  :func:`share_verdicts` (a patched share above or below one half: a bootstrap over the words with
  the small-sample rule, Bonferroni over the layers);
* statistics -- :func:`spearman`, :func:`spearman_ci` (a bootstrap over the test items),
  :func:`within_group_spearman_ci` (rho within each layer, averaged: no ranking of layers),
  :func:`paired_spearman_ci` (a bootstrap over the ranked units) and
  :func:`word_cluster_shares` (patched pairs pooled over words, resampling words);
* the lesson in plain words -- :func:`head_finding`, :func:`skip_finding`, :func:`patch_finding`,
  :func:`pruning_finding`, :func:`rank_sentence` (a sentence generated from the numbers and a few
  "How we know" lines each) and :func:`claim_rows` (the claims table from those findings);
* the lesson's machinery, assembled from its numbers -- findings :func:`zero_vs_mean_finding`,
  :func:`pattern_finding`, :func:`gradient_finding`, :func:`pruning_curve_finding`,
  :func:`probe_finding`, :func:`skip_verdicts`; table rows :func:`pruning_rows`, :func:`skip_rows`,
  :func:`patch_rows`; printouts :func:`resolution_lines`, :func:`flip_lines` (the parity table's, :func:`~helpers.parity.compute.parity_lines`, is in ``helpers/parity/compute.py``);
  bookkeeping :func:`first_per_class`, :meth:`CachedRun.subset`, :meth:`HeadAblation.subset`,
  :func:`sense_groups`, :func:`join_claims`.

The attributions of lesson 13 (rollout, gradients, Integrated Gradients, occlusion, value zeroing,
ERASER) are in ``helpers/attribution/compute.py``.

Runs over many texts go in groups of similar length (:func:`length_buckets`), each padded only
to its own longest text.

Layer numbering is the course's: ``0`` is the embedding output, ``1 .. L`` the encoder layers
(``model.encoder.layer[l - 1]``); heads are ``0 .. A-1``.
"""

from __future__ import annotations

import contextlib
import math
import warnings
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from helpers.attention.compute import TOKEN_CLASSES, token_class
from helpers.classify.compute import mean_pool
from helpers.common.progress import progress as progress_bar
from helpers.common.stats import (Interval, Replicates, Verdict, accuracy_ci, bootstrap_size, clopper_pearson,
                                  cluster_bootstrap_ci, cluster_replicates, equivalence_level, extreme_family,
                                  family_level, format_p, mcnemar_p, sign_test_p, tango_interval, verdict)
from helpers.model.trace import check_trace, device_of, encode, model_device
from helpers.model.layers import (additive_mask, check_head, check_layer, continue_from, gated_heads, model_sizes,  # noqa: F401
                                  run_layer)


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


def ablation_gate(model, head: int) -> torch.Tensor:
    """``[A]`` ones with a 0 at ``head``."""
    gate = torch.ones(model_sizes(model)[1], device=model_device(model))
    gate[check_head(model, head)] = 0.0
    return gate


@contextlib.contextmanager
def ablate_head(model, layer: int, head: int):
    """Zero one head's context vector while the ``with`` block runs (any forward pass)."""
    with gated_heads(model, {check_layer(model, layer): ablation_gate(model, head)}):
        yield


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


# -- 1. every head, ablated one at a time ----------------------------------------------------------


@dataclass
class HeadAblation:
    """Logits of every test item with no head removed (``base``, ``[N, C]``) and with head
    ``h`` of layer ``l`` removed (``ablated[l-1, h]``, ``[N, C]``)."""

    base: torch.Tensor
    ablated: torch.Tensor  # [L, A, N, C]
    labels: torch.Tensor

    def correct(self) -> torch.Tensor:
        """``[L, A, N]`` 1 where the ablated model still classifies item ``n`` correctly."""
        return (self.ablated.argmax(-1) == self.labels).float()

    def base_correct(self) -> torch.Tensor:
        return (self.base.argmax(-1) == self.labels).float()

    def subset(self, items) -> HeadAblation:
        """The same ablation on the items ``items`` only (indices, in that order)."""
        items = [int(i) for i in items]
        return HeadAblation(self.base[items], self.ablated[:, :, items], self.labels[items])

    def accuracy_drop_items(self) -> torch.Tensor:
        """``[N, L, A]`` per item: 1 (was right, now wrong), -1 (the reverse) or 0."""
        return (self.base_correct()[None, None] - self.correct()).permute(2, 0, 1)

    def accuracy_drop(self) -> torch.Tensor:
        """``[L, A]`` base accuracy minus accuracy with the head removed."""
        return self.accuracy_drop_items().mean(0)

    def logit_drop_items(self) -> torch.Tensor:
        """``[N, L, A]`` how much the true class's logit fell."""
        idx = self.labels[:, None]
        base = self.base.gather(1, idx)[:, 0]
        abl = self.ablated.gather(-1, idx.expand(*self.ablated.shape[:2], -1, 1))[..., 0]  # [L, A, N]
        return (base[None, None] - abl).permute(2, 0, 1)

    def loss_increase_items(self) -> torch.Tensor:
        """``[N, L, A]`` cross-entropy with the head removed minus without."""
        base = F.cross_entropy(self.base, self.labels, reduction="none")
        L, A, N, C = self.ablated.shape
        abl = F.cross_entropy(self.ablated.reshape(-1, C), self.labels.repeat(L * A), reduction="none")
        return (abl.view(L, A, N) - base[None, None]).permute(2, 0, 1)

    def _check(self, layer: int, head: int) -> None:
        n_layers, n_heads = self.ablated.shape[:2]
        if not (1 <= layer <= n_layers and 0 <= head < n_heads):
            raise ValueError(f"({layer}, {head}) is not a head: layers are 1 to {n_layers}, heads 0 to {n_heads - 1}.")

    def heads(self) -> list[tuple[int, int]]:
        """Every ``(layer, head)``, layers from 1, in the order of :meth:`changes`."""
        n_layers, n_heads = self.ablated.shape[:2]
        return [(l, h) for l in range(1, n_layers + 1) for h in range(n_heads)]

    def change(self, layer: int, head: int, margin: float | None = None) -> OutcomeChange:
        """Accuracy with this one head removed minus without, paired on the test items (Tango's
        interval, :func:`outcome_changes`); no adjustment, as it is a single comparison."""
        self._check(layer, head)
        return outcome_changes(self.correct()[layer - 1, head][None], self.base_correct(),
                               [f"layer {layer}, head {head} removed"], margin=margin)[0]

    def changes(self, margin: float | None = None) -> list[OutcomeChange]:
        """:meth:`change` of every head (order of :meth:`heads`), one Bonferroni family over all
        ``L x A`` heads (intervals at ``1 - 0.05 / (L A)``, equivalence at ``1 - 0.1 / (L A)``)."""
        n_layers, n_heads = self.ablated.shape[:2]
        correct = self.correct().reshape(n_layers * n_heads, -1)
        names = [f"layer {l}, head {h} removed" for l, h in self.heads()]
        return outcome_changes(correct, self.base_correct(), names, margin=margin)

    def tied_with(self, layer: int, head: int) -> list[tuple[int, int]]:
        """The heads ``(layer, head)`` whose accuracy drop the data cannot rank below the drop of
        the given head: each other head's accuracy (with it removed) is compared with the given
        head's on the same items (Tango's interval); a head is tied unless its accuracy is shown
        higher, i.e. its drop shown smaller. The given head itself is included. The given head is
        usually the worst one, picked from the same data, so the family is the course's one rule
        for an extreme picked from the data, every pair of the ``L x A`` heads
        (:func:`~helpers.common.stats.extreme_family`, as :func:`~helpers.common.stats.rank_layers`
        uses): the claims hold whichever head turns out worst. Layers count from 1."""
        self._check(layer, head)
        correct = self.correct()
        others = [k for k in self.heads() if k != (layer, head)]
        if not others:
            return [(layer, head)]
        rows = torch.stack([correct[l - 1, h] for l, h in others])
        changes = outcome_changes(rows, correct[layer - 1, head], [f"{l}.{h}" for l, h in others],
                                  family=extreme_family(len(others) + 1))
        shown_smaller = {k for k, c in zip(others, changes) if c.kind == "higher"}
        return [k for k in self.heads() if k not in shown_smaller]


@torch.no_grad()
def ablate_every_head(model, classifier, run: CachedRun, labels, *, bucket: int = 4, max_tokens: int = 24_000,
                      progress: bool = True, fill: dict | None = None) -> HeadAblation:
    """Remove each head of each layer in turn and classify every item of ``run`` (``fill``: replace
    the head by its mean context instead of zeros, :func:`mean_head_contexts`).

    For layer ``l`` the cached state after layer ``l-1`` is repeated once per head, each copy
    with a different head gated to 0, and only layers ``l .. L`` run: one batch of ``A x n``
    sequences per group of ``bucket`` items of similar length (heads split further so that at
    most ``max_tokens`` tokens run at once). Small groups keep the padding low; with ``A`` copies
    of every item a batch is still large enough to run efficiently.
    """
    L, A = model_sizes(model)
    if run.num_layers != L:
        raise ValueError(f"the cached run has {run.num_layers} layers but the model has {L}.")
    y = _labels(labels, len(run), run.attention_mask.device)
    base = classifier(run.hidden(L), run.attention_mask)
    out = torch.empty(L, A, len(run), base.shape[-1], device=base.device)
    buckets = length_buckets(run.attention_mask, bucket)
    desc = f"{'mean' if fill else 'zero'}-ablating every head, layer by layer"
    for layer in progress_bar(range(1, L + 1), desc=desc, disable=not progress):
        for items, width in buckets:
            start = run.hidden(layer - 1)[items, :width]
            mask = run.attention_mask[items, :width]
            n = len(items)
            per_batch = max(1, max_tokens // (n * width))  # heads per forward pass
            for first in range(0, A, per_batch):
                heads = list(range(first, min(A, first + per_batch)))
                gate = torch.ones(len(heads), n, A, device=start.device)
                for k, h in enumerate(heads):
                    gate[k, :, h] = 0.0  # copy k of every item loses head h
                masks = mask.repeat(len(heads), 1)
                last = continue_from(model, start.repeat(len(heads), 1, 1), masks, layer - 1,
                                     {layer: gate.view(-1, A)}, fill)
                logits = classifier(last, masks).view(len(heads), n, -1)
                out[layer - 1, first:first + len(heads)][:, items] = logits
    return HeadAblation(base, out, y)


# -- 2. gradient head importance (Michel et al. 2019) ------------------------------------------------


def head_gate_gradients(model, classifier, run: CachedRun, labels, *, bucket: int = 64) -> torch.Tensor:
    """``[N, L, A]``: d loss(item n) / d gate(l, h), at gate = 1.

    Every item gets its own gates (all ones), so one backward pass of the summed loss gives
    every item's gradient; the items run in groups of ``bucket`` of similar length (one forward
    and one backward pass per group). Michel et al.'s head importance is the mean of their
    absolute values.
    """
    L, A = model_sizes(model)
    device = run.attention_mask.device
    y = _labels(labels, len(run), device)
    grads = torch.zeros(len(run), L, A, device=device)
    for items, width in length_buckets(run.attention_mask, bucket):
        mask = run.attention_mask[items, :width]
        gates = torch.ones(len(items), L, A, requires_grad=True, device=device)
        with torch.enable_grad():
            last = continue_from(model, run.hidden(0)[items, :width], mask, 0,
                                 {layer: gates[:, layer - 1] for layer in range(1, L + 1)})
            loss = F.cross_entropy(classifier(last, mask), y[items], reduction="sum")
            (grad,) = torch.autograd.grad(loss, gates)
        grads[items] = grad
    return grads


@torch.no_grad()
def mean_head_contexts(model, run: CachedRun, *, bucket: int = 64) -> dict:
    """``{layer: [A*d]}``: every head's context vector (the input of ``attention.output``) averaged
    over the real tokens of ``run`` -- what mean ablation puts in place of a removed head."""
    L, _ = model_sizes(model)
    sums = {layer: torch.zeros(model.config.hidden_size, device=run.attention_mask.device) for layer in range(1, L + 1)}
    count = run.attention_mask.sum()
    current = {}

    def record(layer):
        def hook(module, args):
            real = current["mask"].bool()
            sums[layer] += args[0][real].sum(0)
        return hook

    handles = [model.encoder.layer[l - 1].attention.output.register_forward_pre_hook(record(l)) for l in sums]
    try:
        for items, width in length_buckets(run.attention_mask, bucket):
            current["mask"] = run.attention_mask[items, :width]
            continue_from(model, run.hidden(0)[items, :width], current["mask"], 0)
    finally:
        for handle in handles:
            handle.remove()
    return {layer: total / count for layer, total in sums.items()}


def normalize_by_layer(importance) -> torch.Tensor:
    """``[L, A]`` head importances, each layer's row divided by its l2 norm (Michel et al. 2019,
    after Molchanov et al. 2017): heads of layers with large gradients no longer outrank the rest."""
    scores = torch.as_tensor(importance, dtype=torch.float32, device=device_of(importance))
    if scores.ndim != 2:
        raise ValueError(f"importance must be [layers, heads], got shape {tuple(scores.shape)}.")
    return scores / scores.norm(dim=1, keepdim=True).clamp_min(1e-20)


PRUNE_FRACTIONS = tuple(i / 10 for i in range(10))  # 0 %, 10 %, ..., 90 % of all heads removed


@torch.no_grad()
def pruning_curve(model, classifier, run: CachedRun, labels, order, fractions=PRUNE_FRACTIONS, *,
                  bucket: int = 64, unchanged: tuple | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Remove heads cumulatively in ``order`` (a list of ``(layer, head)``, layers from 1, first
    removed first): for each fraction ``f``, the first ``round(f * L * A)`` heads are gated to 0
    together. Returns ``(correct [K, N], loss [K, N])`` on ``run``'s items, one row per fraction.
    ``unchanged``: ``(correct [N], loss [N])`` of the unchanged model on the same items (row 0 of
    an earlier curve), reused wherever a fraction removes no head instead of running it again."""
    L, A = model_sizes(model)
    order = [(check_layer(model, l), check_head(model, h)) for l, h in order]
    if len(set(order)) != L * A:
        raise ValueError(f"order must list each of the {L * A} heads exactly once, got {len(set(order))} distinct.")
    y = _labels(labels, len(run), run.attention_mask.device)
    correct = torch.empty(len(fractions), len(run), device=y.device)
    loss = torch.empty_like(correct)
    for k, fraction in enumerate(fractions):
        if not 0 <= fraction <= 1:
            raise ValueError(f"fractions must lie in [0, 1], got {fraction!r}.")
        removed = order[:round(fraction * L * A)]
        if not removed and unchanged is not None:
            correct[k], loss[k] = unchanged[0].to(y.device), unchanged[1].to(y.device)
            continue
        gates = {layer: torch.ones(A, device=y.device) for layer in range(1, L + 1)}
        for layer, head in removed:
            gates[layer][head] = 0.0
        for items, width in length_buckets(run.attention_mask, bucket):
            mask = run.attention_mask[items, :width]
            logits = classifier(continue_from(model, run.hidden(0)[items, :width], mask, 0, gates), mask)
            correct[k, items] = (logits.argmax(-1) == y[items]).float()
            loss[k, items] = F.cross_entropy(logits, y[items], reduction="none")
    return correct, loss


def random_orders(model, n: int, seed: int = 0) -> list[list[tuple[int, int]]]:
    """``n`` random pruning orders of every ``(layer, head)`` (layers from 1), order ``i`` drawn
    with ``random.Random(seed + i)``: the same orders on every run."""
    import random

    L, A = model_sizes(model)
    heads = [(l, h) for l in range(1, L + 1) for h in range(A)]
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive int (how many random orders), got {n!r}.")
    return [random.Random(seed + i).sample(heads, len(heads)) for i in range(n)]


@torch.no_grad()
def pruning_outcomes(model, classifier, run: CachedRun, labels, orders, fractions, *, bucket: int = 16,
                     max_tokens: int = 32_000, progress: bool = True) -> torch.Tensor:
    """``[R, K, N]`` 0/1: item ``n`` still right after the first ``round(fractions[k] * L * A)``
    heads of ``orders[r]`` are removed together -- :func:`pruning_curve`'s ``correct`` for many
    orders at once. One fraction of every order runs as one batch (each copy of an item carries its
    order's gates), split so that at most ``max_tokens`` tokens run at once: many random orders
    cost far less than one :func:`pruning_curve` call each."""
    L, A = model_sizes(model)
    orders = [[(check_layer(model, l), check_head(model, h)) for l, h in order] for order in orders]
    if not orders or any(len(set(o)) != L * A for o in orders):
        raise ValueError(f"orders must be a non-empty list of orders, each listing the {L * A} heads once.")
    fractions = list(fractions)
    if not fractions or any(not 0 <= f <= 1 for f in fractions):
        raise ValueError(f"fractions must be a non-empty list of shares in [0, 1], got {fractions!r}.")
    y = _labels(labels, len(run), run.attention_mask.device)
    device = y.device
    out = torch.empty(len(orders), len(fractions), len(run), device=device)
    unchanged = (classifier(run.hidden(L), run.attention_mask).argmax(-1) == y).float()
    buckets = length_buckets(run.attention_mask, bucket)
    for k in progress_bar(range(len(fractions)), desc=f"pruning in {len(orders)} random orders",
                          disable=not progress):
        n_removed = round(fractions[k] * L * A)
        if n_removed == 0:
            out[:, k] = unchanged
            continue
        gates = torch.ones(len(orders), L, A, device=device)  # [R, L, A]
        for r, order in enumerate(orders):
            for layer, head in order[:n_removed]:
                gates[r, layer - 1, head] = 0.0
        for items, width in buckets:
            n = len(items)
            per_batch = max(1, max_tokens // (n * width))  # orders per forward pass
            start, mask = run.hidden(0)[items, :width], run.attention_mask[items, :width]
            for first in range(0, len(orders), per_batch):
                g = gates[first:first + per_batch]  # [r, L, A]
                r = g.shape[0]
                masks = mask.repeat(r, 1)
                layer_gates = {l: g[:, l - 1].repeat_interleave(n, 0) for l in range(1, L + 1)}  # [r * n, A]
                logits = classifier(continue_from(model, start.repeat(r, 1, 1), masks, 0, layer_gates), masks)
                out[first:first + r, k][:, items] = (logits.argmax(-1) == y[items].repeat(r)).view(r, n).float()
    return out


@dataclass(frozen=True)
class PruningComparison:
    """One pruning order (e.g. Michel et al.'s importance) against ``R`` random orders, on the same
    test items: ``score`` is each order's mean accuracy over the curve's steps.

    * ``rank_p``: the share of random orders that keep at least as much accuracy, counted as a
      Monte Carlo rank test (:func:`~helpers.common.stats.rank_p_value`; exact for any ``R``, its
      floor ``1 / (R + 1)``);
    * ``difference``: the order's score minus the random orders' mean score, with a two-level
      bootstrap that resamples the test items **and** the random orders (a new run would draw both),
      under the small-sample rule; ``verdict`` is read off it."""

    score: float
    random_scores: np.ndarray  # [R]
    rank_p: float
    beaten: int  # random orders that keep less accuracy than this one
    difference: Interval
    verdict: Verdict

    @property
    def n_orders(self) -> int:
        return int(self.random_scores.size)


def pruning_comparison(order_correct, random_correct, *, name: str = "importance order", seed: int = 0,
                       n_boot: int = 2000) -> PruningComparison:
    """Compare one pruning curve's 0/1 outcomes ``order_correct [K, N]`` (``K`` steps, ``N`` test
    items) with ``random_correct [R, K, N]`` from ``R`` random orders on the same items and steps."""
    a = _as_float_array(order_correct)
    r = _as_float_array(random_correct)
    if a.ndim != 2 or r.ndim != 3 or r.shape[1:] != a.shape or r.shape[0] < 2:
        raise ValueError(f"order_correct must be [K, N] and random_correct [R >= 2, K, N] on the same steps and items; "
                         f"got {a.shape} and {r.shape}.")
    per_item = a.mean(0)  # [N]: each item's accuracy over the steps
    random_items = r.mean(1)  # [R, N]
    score, random_scores = float(per_item.mean()), random_items.mean(1)
    R, N = random_items.shape
    from helpers.common.stats import rank_p_value, unit_weights

    wi, wo = unit_weights(N, n_boot, seed), unit_weights(R, n_boot, seed + 1)
    boots = (wi @ per_item) / N - ((wo @ random_items) * wi).sum(1) / (R * N)
    reps = Replicates(np.array([score - random_scores.mean()]), boots[:, None], min(N, R), "items and random orders")
    diff = reps.interval(0.95)
    v = verdict(diff, a=name, b="random orders", p_value=float(reps.p_values()[0]), p_floor=reps.p_floor,
                percent=True)
    return PruningComparison(score, random_scores, rank_p_value(score, random_scores),
                             int((random_scores < score).sum()), diff, v)


# -- verdicts on paired right/wrong outcomes ------------------------------------------------------------

CHANGE_WORDS = {"lower": "lowers", "higher": "raises", "equivalent": "equivalent within the margin",
                "inconclusive": "inconclusive"}


def unseen_rate(n: int, level: float = 0.90) -> float:
    """The exact (Clopper-Pearson, two-sided ``level``) upper bound on a rate never observed in ``n``
    independent units: about ``3 / n`` at 90% (the rule of three). A change that no item showed may
    still happen to this share of items, so a difference measured on ``n`` units is never known to be
    smaller than this."""
    return clopper_pearson(0, n, level).high


@dataclass(frozen=True)
class OutcomeChange:
    """Accuracy with an intervention minus accuracy without it, on the **same** items.

    ``difference`` is the interval the verdict was read from: 95 % for one intervention,
    Bonferroni-widened (``1 - 0.05 / K``) when ``K`` interventions are compared together;
    ``equivalence_interval`` the matching ``1 - 2 x 0.05 / K`` interval that the equivalence test
    (TOST) reads; ``adjusted_p`` is the Bonferroni-adjusted p of the same test; ``verdict`` follows
    :func:`~helpers.common.stats.verdict`, so interval, p and verdict always agree."""

    name: str
    after: Interval  # accuracy with the intervention
    difference: Interval
    equivalence_interval: Interval | None
    p_value: float
    adjusted_p: float
    verdict: Verdict
    method: str
    n_changed: int  # items whose outcome changed (either way)
    family: int = 1

    @property
    def kind(self) -> str:
        return self.verdict.kind

    def describe(self) -> str:
        """``accuracy 81.2% [..], change -1.3 pt [-2.1, -0.5] (99.9 % interval, Bonferroni over 72),
        adjusted p = 0.004 -> lowers``."""
        d = self.difference
        level = f"{100 * d.level:.4g} %" + ("" if self.family == 1 else f", Bonferroni over {self.family}")
        return (f"accuracy {self.after.percent()}, change {100 * d.estimate:+.1f} pt [{100 * d.low:+.1f}, "
                f"{100 * d.high:+.1f}] ({level}), {self.verdict.p_text} -> {CHANGE_WORDS[self.kind]}")


def outcome_changes(changed, unchanged, names, *, margin: float | None = None, clusters=None,
                    reference: str = "unchanged", n_boot: int | None = None, seed: int = 0,
                    family: int | None = None) -> list[OutcomeChange]:
    """One :class:`OutcomeChange` per intervention: ``changed`` is ``[K, n]`` 0/1 outcomes with each
    of ``K`` interventions (``names[k]``), ``unchanged`` ``[n]`` the outcomes without, on the same items.
    The ``K`` comparisons form one family (Bonferroni): each is read off its ``1 - 0.05 / K``
    interval, and with a ``margin`` (an accuracy difference, e.g. 0.01, stated before the
    measurement) its equivalence off the ``1 - 0.1 / K`` interval.

    * independent items (``clusters=None``, e.g. test utterances): Tango's score interval and
      McNemar's test (:func:`~helpers.common.stats.mcnemar`);
    * items that share a unit (``clusters[i]`` names item i's word, say): the per-item differences
      resampled by cluster (:func:`~helpers.common.stats.cluster_replicates`, small-sample rule
      included); when no item changed, the interval is the share of units that could change unseen
      (:func:`unseen_rate`), never zero-width.

    ``family``: a larger Bonferroni family than the ``K`` rows (a reference picked from the data
    among them: :func:`~helpers.common.stats.extreme_family`).
    """
    changed, unchanged = _as_float_array(changed), _as_float_array(unchanged).ravel()
    if changed.ndim != 2 or changed.shape[1] != unchanged.size or not np.isin(changed, (0.0, 1.0)).all() \
            or not np.isin(unchanged, (0.0, 1.0)).all():
        raise ValueError(f"changed must be [K, n] and unchanged [n] 0/1 outcomes on the same items; got shapes "
                         f"{changed.shape} and {unchanged.shape}.")
    names = list(names)
    if len(names) != changed.shape[0]:
        raise ValueError(f"give one name per intervention: {len(names)} names for {changed.shape[0]} rows.")
    if margin is not None and not margin > 0:
        raise ValueError(f"margin must be > 0 (an accuracy difference, e.g. 0.01), got {margin!r}.")
    n = unchanged.size
    family = max(1, changed.shape[0]) if family is None else int(family)
    level, eq_level = family_level(family), equivalence_level(family)
    if clusters is not None:
        labels = np.asarray(clusters)
        if labels.shape != (n,):
            raise ValueError(f"clusters must name one unit per item ({n}), got shape {labels.shape}.")
        units = int(np.unique(labels).size)
        method = f"cluster bootstrap over {units} units"
        n_boot = bootstrap_size(family) if n_boot is None else n_boot
    else:
        method = "Tango's score interval, McNemar's test"
    out = []
    if clusters is None:  # every intervention's Tango interval in one vectorised solve
        b_only = ((changed == 1) & (unchanged == 0)).sum(1)  # right only with the intervention
        c_only = ((changed == 0) & (unchanged == 1)).sum(1)
        lows, highs = tango_interval(b_only[:, None], c_only[:, None], n, [level, eq_level])
        p_all = mcnemar_p(b_only, c_only)
    for k in range(changed.shape[0]):
        diff = changed[k] - unchanged
        n_changed = int((diff != 0).sum())
        if clusters is None:
            est = float((b_only[k] - c_only[k]) / n)
            d = Interval(est, float(lows[k, 0]), float(highs[k, 0]), level)
            eq = Interval(est, float(lows[k, 1]), float(highs[k, 1]), eq_level) if margin is not None else None
            p = float(p_all[k])
            after = accuracy_ci(changed[k])
        else:
            after = cluster_bootstrap_ci(changed[k], labels, seed=seed)
            if n_changed:
                reps = cluster_replicates(diff, labels, n_boot=n_boot, seed=seed)
                d, p = reps.interval(level), float(reps.p_values()[0])
                eq = reps.interval(eq_level) if margin is not None else None
            else:  # nothing changed: bounded by what the units could hide, not zero-width
                d = Interval(0.0, -unseen_rate(units, level), unseen_rate(units, level), level)
                eq = Interval(0.0, -unseen_rate(units, eq_level), unseen_rate(units, eq_level), eq_level)
                p = 1.0
        adj = min(1.0, p * family)
        v = verdict(d, a=names[k], b=reference, margin=margin, equivalence_interval=eq, p_value=adj, family=family,
                    percent=True)
        out.append(OutcomeChange(names[k], after, d, eq, float(p), float(adj), v, method, n_changed, family))
    return out


def count_kinds(changes) -> dict:
    """``{kind: count}`` over :class:`OutcomeChange` objects, every kind present (0 when absent)."""
    counts = {kind: 0 for kind in CHANGE_WORDS}
    for change in changes:
        counts[change.kind] += 1
    return counts


# -- rank statistics ---------------------------------------------------------------------------------


def ranks(values) -> np.ndarray:
    """Ranks 1..n, ties sharing their average rank (as Spearman's rho needs)."""
    v = _as_float_array(values).ravel()
    order = np.argsort(v, kind="mergesort")
    r = np.empty(len(v))
    r[order] = np.arange(1, len(v) + 1)
    uniq, inverse = np.unique(v, return_inverse=True)
    sums = np.bincount(inverse, weights=r)
    counts = np.bincount(inverse)
    return (sums / counts)[inverse]


def spearman(a, b) -> float:
    """Spearman's rank correlation: Pearson's correlation of the ranks. NaN when either side is constant."""
    a, b = _as_float_array(a).ravel(), _as_float_array(b).ravel()
    if a.shape != b.shape or a.size < 3:
        raise ValueError(f"need two equally long sequences of at least 3 values, got {a.size} and {b.size}.")
    ra, rb = ranks(a), ranks(b)
    ra, rb = ra - ra.mean(), rb - rb.mean()
    denom = math.sqrt(float((ra**2).sum() * (rb**2).sum()))
    return float((ra * rb).sum() / denom) if denom > 0 else float("nan")


def _as_float_array(values) -> np.ndarray:
    if isinstance(values, torch.Tensor):
        values = values.detach().cpu().double().numpy()
    return np.asarray(values, dtype=float)


@dataclass(frozen=True)
class RankInterval(Interval):
    """A rank correlation with its bootstrap interval; ``undefined`` is the share of resamples
    in which one side did not vary (rho undefined): they are left out of the interval."""

    undefined: float = 0.0


def _defined_bootstrap(statistic, n: int, *, n_boot: int = 1000, level: float = 0.95, seed: int = 0) -> RankInterval:
    """Percentile bootstrap of ``statistic(indices)`` over ``n`` units, leaving out the
    resamples where it is NaN (undefined) and reporting their share."""
    if isinstance(n_boot, bool) or not isinstance(n_boot, int) or n_boot < 100:
        raise ValueError(f"n_boot must be an int >= 100, got {n_boot!r}.")
    rng = np.random.default_rng(seed)
    values = np.array([statistic(idx) for idx in rng.integers(0, n, size=(n_boot, n))])
    defined = values[~np.isnan(values)]
    estimate = statistic(np.arange(n))
    if not defined.size:
        return RankInterval(estimate, math.nan, math.nan, level, 1.0)
    alpha = (1 - level) / 2
    low, high = np.quantile(defined, [alpha, 1 - alpha])
    return RankInterval(estimate, float(low), float(high), level, 1 - defined.size / values.size)


def spearman_ci(items_a, items_b, **kw) -> RankInterval | None:
    """Spearman's rho between two scores of the same ``K`` units (e.g. heads), each the mean
    over ``N`` test items of a per-item table ``[N, K]``, with a bootstrap interval that
    resamples the items and recomputes both means.

    ``None`` when a score does not vary on the full sample (rho is undefined). A resample in
    which one side does not vary is left out of the interval; ``.undefined`` says how often
    that happened (a large share means the score hardly varies: read the interval with care)."""
    a, b = _as_float_array(items_a), _as_float_array(items_b)
    if a.ndim != 2 or a.shape != b.shape:
        raise ValueError(f"give two [items, units] tables of one shape, got {a.shape} and {b.shape}.")
    if math.isnan(spearman(a.mean(0), b.mean(0))):
        return None
    return _defined_bootstrap(lambda i: spearman(a[i].mean(0), b[i].mean(0)), a.shape[0], **kw)


@dataclass(frozen=True)
class PooledRankInterval(RankInterval):
    """The mean of several groups' rank correlations (e.g. one per layer) with its bootstrap
    interval; ``per_group`` holds each group's rho on the full sample (NaN: undefined there)."""

    per_group: tuple = ()


def within_group_spearman_ci(items_a, items_b, **kw) -> PooledRankInterval | None:
    """Spearman's rho computed **within each group** and averaged over the groups.

    ``items_a`` and ``items_b`` are ``[N, G, K]`` per-item tables (e.g. ``[utterances, layers,
    heads]``); each side is averaged over the ``N`` items, then rho is taken over the ``K`` units
    of each group separately, and the mean over groups is reported. Ranking units only against
    others of their own group removes whatever differs *between* groups (e.g. a layer whose
    heads all score high on both sides). The interval resamples the ``N`` items and recomputes
    everything; a group whose rho is undefined in a resample (one side constant) is left out of
    that resample's mean. ``None`` when no group has a defined rho on the full sample."""
    a, b = _as_float_array(items_a), _as_float_array(items_b)
    if a.ndim != 3 or a.shape != b.shape or a.shape[2] < 3:
        raise ValueError(f"give two [items, groups, units] tables of one shape with at least 3 units per group, "
                         f"got {a.shape} and {b.shape}.")

    def per_group(idx) -> np.ndarray:
        ma, mb = a[idx].mean(0), b[idx].mean(0)
        return np.array([spearman(ma[g], mb[g]) for g in range(a.shape[1])])

    def pooled(idx) -> float:
        rhos = per_group(idx)
        return float(np.nanmean(rhos)) if not np.isnan(rhos).all() else math.nan

    full = per_group(np.arange(a.shape[0]))
    if np.isnan(full).all():
        return None
    ci = _defined_bootstrap(pooled, a.shape[0], **kw)
    return PooledRankInterval(ci.estimate, ci.low, ci.high, ci.level, ci.undefined, tuple(float(r) for r in full))


def paired_spearman_ci(a, b, **kw) -> RankInterval | None:
    """Spearman's rho between two scores of the same units (e.g. the tokens of a sentence),
    with a bootstrap interval that resamples the units (resamples where a side is constant
    are left out, see :class:`RankInterval`). ``None`` when a score is constant."""
    a, b = _as_float_array(a).ravel(), _as_float_array(b).ravel()
    if math.isnan(spearman(a, b)):
        return None
    return _defined_bootstrap(lambda i: spearman(a[i], b[i]), a.size, **kw)


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


# -- 3. layer skipping -----------------------------------------------------------------------------


@torch.no_grad()
def skip_layer(model, run: CachedRun, layer: int) -> torch.Tensor:
    """The last hidden state ``[B, T, H]`` with encoder layer ``layer`` replaced by the identity:
    its input, the state after layer ``layer - 1``, passes straight on to layer ``layer + 1``."""
    layer = check_layer(model, layer)
    return continue_from(model, run.hidden(layer - 1), run.attention_mask, layer)


@torch.no_grad()
def skip_every_layer(model, run: CachedRun, progress: bool = True, readout=None, bucket: int = 64) -> torch.Tensor:
    """Index 0 the unchanged last hidden state, index ``l`` the one with layer ``l`` skipped
    (:func:`skip_layer`): ``[L + 1, B, T, H]``. With a ``readout(hidden, attention_mask)`` (e.g. a
    :class:`SentenceHead`) only its output is kept, ``[L + 1, B, ...]``, not the hidden states.
    Items run in groups of ``bucket`` of similar length."""
    L, _ = model_sizes(model)
    mask = run.attention_mask
    if readout is None:
        states = [run.hidden(L)] + [torch.zeros_like(run.hidden(L)) for _ in range(L)]
    else:
        base = readout(run.hidden(L), mask)
        states = [base] + [torch.empty_like(base) for _ in range(L)]
    buckets = length_buckets(mask, bucket)
    for layer in progress_bar(range(1, L + 1), desc="skipping each layer", disable=not progress):
        for items, width in buckets:
            part = mask[items, :width]
            last = continue_from(model, run.hidden(layer - 1)[items, :width], part, layer)
            if readout is None:
                states[layer][items, :width] = last
            else:
                states[layer][items] = readout(last, part)
    return torch.stack(states)


def word_vectors(hidden: torch.Tensor, spans: list) -> torch.Tensor:
    """``[..., B, T, H]`` hidden states -> ``[..., B, H]``: item ``i``'s word as the mean of its
    WordPiece positions ``spans[i]`` (as lesson 09's ``word_by_layer``)."""
    return torch.stack([hidden[..., i, list(pos), :].mean(-2) for i, pos in enumerate(spans)], -2)


# -- 4. activation patching ------------------------------------------------------------------------


@torch.no_grad()
def patch_word_vectors(model, target: CachedRun, target_spans: list, donors: torch.Tensor,
                       layer: int) -> torch.Tensor:
    """Overwrite the word of every target item at ``layer`` (0 = embeddings) with ``donors``
    (``[B, n_pieces, H]``, the donor sentence's vectors of the same word at the same layer),
    run the layers above, and return the last hidden state ``[B, T, H]``."""
    layer = check_layer(model, layer, allow_embeddings=True)
    hidden = target.hidden(layer).clone()
    for i, pos in enumerate(target_spans):
        if len(pos) != donors.shape[1]:
            raise ValueError(f"item {i}: the word has {len(pos)} pieces here but {donors.shape[1]} in the donor.")
        hidden[i, list(pos)] = donors[i]
    return continue_from(model, hidden, target.attention_mask, layer)


def _cosine_votes(vectors: torch.Tensor, centroid_a: torch.Tensor, centroid_b: torch.Tensor) -> torch.Tensor:
    """1 where a vector is closer (cosine) to centroid ``a`` than to ``b``."""
    closer_a = F.cosine_similarity(vectors, centroid_a, dim=-1) > F.cosine_similarity(vectors, centroid_b, dim=-1)
    return closer_a.float()


def sense_patching(model, traces_a: list, traces_b: list, word: str, progress: bool = False) -> dict:
    """Patch ``word``'s vector from each sense-``a`` sentence into each sense-``b`` sentence.

    For every pair ``(i, j)`` and every layer ``l = 0 .. L``, sentence ``b_j`` runs with its
    ``word`` vector after layer ``l`` replaced by ``a_i``'s, and lesson 09's sense probe reads
    the word at the last layer: nearest centroid (cosine), the centroids being the unpatched
    last-layer vectors of the *other* sentences (``a`` without ``i``, ``b`` without ``j``).

    The probe reads the very position that was patched, so at the last layer it reads the donor's
    vector itself. A second probe reads the **rest of the sentence** instead: the mean of the last
    layer over every real token except the word, with centroids of the other sentences' such means.
    It follows the patch only when the layers above carried the patched sense into other tokens.

    Returns ``{"follows": [pairs, L + 1]`` (1 = the probe says sense ``a``, the patch's sense),
    ``"follows_context": [pairs, L + 1]`` (the same, read from the rest of the sentence),
    ``"control": [pairs]`` (1 = unpatched ``b_j`` is read as ``b``), ``"control_context": [pairs]``
    (the same for the rest of the sentence), ``"pairs": [(i, j), ...]}``.
    """
    traces_a, traces_b = [check_trace(t) for t in traces_a], [check_trace(t) for t in traces_b]
    if len(traces_a) < 2 or len(traces_b) < 2:
        raise ValueError("need at least two sentences of each sense (a centroid leaves one out).")
    L, _ = model_sizes(model)
    spans_a = [t.find_word(word).positions for t in traces_a]
    spans_b = [t.find_word(word).positions for t in traces_b]
    last_a = torch.stack([t.hidden(L)[p].mean(0) for t, p in zip(traces_a, spans_a)])
    last_b = torch.stack([t.hidden(L)[p].mean(0) for t, p in zip(traces_b, spans_b)])
    pairs = [(i, j) for i in range(len(traces_a)) for j in range(len(traces_b))]
    keep_a = [torch.arange(len(traces_a), device=last_a.device) != i for i, _ in pairs]
    keep_b = [torch.arange(len(traces_b), device=last_b.device) != j for _, j in pairs]
    cent_a = torch.stack([last_a[k].mean(0) for k in keep_a])
    cent_b = torch.stack([last_b[k].mean(0) for k in keep_b])
    rest_a = torch.stack([_rest_mean(t.hidden(L), p) for t, p in zip(traces_a, spans_a)])
    rest_b = torch.stack([_rest_mean(t.hidden(L), p) for t, p in zip(traces_b, spans_b)])
    ctx_a = torch.stack([rest_a[k].mean(0) for k in keep_a])
    ctx_b = torch.stack([rest_b[k].mean(0) for k in keep_b])
    target = run_from_traces([traces_b[j] for _, j in pairs])
    spans = [spans_b[j] for _, j in pairs]
    follows, follows_context = [], []
    for layer in progress_bar(range(L + 1), desc=f"patching {word!r} layer by layer", disable=not progress):
        donors = torch.stack([traces_a[i].hidden(layer)[spans_a[i]] for i, _ in pairs])
        last = patch_word_vectors(model, target, spans, donors, layer)
        follows.append(_cosine_votes(word_vectors(last, spans), cent_a, cent_b))
        rest = torch.stack([_rest_mean(last[r][target.attention_mask[r].bool()], p) for r, p in enumerate(spans)])
        follows_context.append(_cosine_votes(rest, ctx_a, ctx_b))
    own = [j for _, j in pairs]
    return {"follows": torch.stack(follows, 1), "follows_context": torch.stack(follows_context, 1),
            "control": 1.0 - _cosine_votes(last_b[own], cent_a, cent_b),
            "control_context": 1.0 - _cosine_votes(rest_b[own], ctx_a, ctx_b), "pairs": pairs}


def _rest_mean(hidden: torch.Tensor, span) -> torch.Tensor:
    """``[H]``: the mean of ``hidden`` (``[T, H]``, real tokens only) over every position outside ``span``."""
    keep = torch.ones(hidden.shape[0], dtype=torch.bool, device=hidden.device)
    keep[list(span)] = False
    return hidden[keep].mean(0)


def word_cluster_shares(results: dict, key: str = "follows", *, n_boot: int | None = None, seed: int = 0):
    """The share of patched pairs with outcome 1, pooled over the words of ``results``
    (``{word: sense_patching result}``), with a bootstrap that resamples **words**: a word's pairs
    reuse its few sentences, so the word (its pair of senses) is the independent unit
    (:func:`~helpers.common.stats.cluster_bootstrap_ci`).

    Returns ``(intervals, boots, word_shares)``: one interval per column (patched layer), the
    replicates ``[n_boot, K]`` and each word's own share ``[n_words, K]``. ``n_boot`` defaults to
    enough replicates for the ``K`` columns read as one family (:func:`bootstrap_size`), so that a
    p-value at the bootstrap's floor still lies below the family's level when the interval says so. A column where every pair
    has the same outcome gets the exact interval of ``n_words`` out of ``n_words`` (a zero-width
    interval would look like certainty)."""
    if not isinstance(results, dict) or len(results) < 2 or any(key not in r for r in results.values()):
        raise ValueError(f"give {{word: sense_patching result}} for at least two words, each with {key!r}.")
    values = [_as_float_array(r[key]).reshape(len(r["pairs"]), -1) for r in results.values()]
    clusters = np.concatenate([[w] * len(v) for w, v in zip(results, values)])
    n_boot = bootstrap_size(values[0].shape[1]) if n_boot is None else n_boot
    intervals, boots = cluster_bootstrap_ci(np.concatenate(values), clusters, n_boot=n_boot, seed=seed,
                                            return_boots=True)
    boots, pooled = boots.reshape(n_boot, -1), np.concatenate(values)
    n_words = len(results)
    out = []
    for k, ci in enumerate(intervals):
        if pooled[:, k].min() == pooled[:, k].max():  # every pair alike
            exact = clopper_pearson(int(round(ci.estimate * n_words)), n_words)
            out.append(Interval(ci.estimate, exact.low, exact.high, ci.level))
        else:
            out.append(ci)
    return out, boots, np.stack([v.mean(0) for v in values])


@dataclass(frozen=True)
class ShareVerdict:
    """Is a share above or below one half? ``kind`` is ``"above"`` (e.g. a majority of the pairs
    follows the patch), ``"below"`` or ``"inconclusive"``, read off ``share``: the interval at the
    level of a Bonferroni family over the columns (layers) tested together; ``adjusted_p`` is the
    p-value of the same test, adjusted to match."""

    share: Interval
    p_value: float
    adjusted_p: float
    kind: str
    why: str = ""  # why an interval that clears one half is still "inconclusive" (too few words)
    adjusted_floor: float | None = None  # the smallest adjusted p these words can give

    @property
    def p_text(self) -> str:
        """The adjusted p, printed as a bound at its floor (:func:`~helpers.common.stats.format_p`)."""
        return format_p(self.adjusted_p, self.adjusted_floor)


def share_verdicts(intervals, boots, unit_shares, half: float = 0.5, alpha: float = 0.05) -> list[ShareVerdict]:
    """One :class:`ShareVerdict` per column (e.g. per patched layer) of :func:`word_cluster_shares`'
    output, the columns one Bonferroni family. One estimand -- the share of all patched pairs with
    outcome 1 -- and one rule per column, whose interval and p come from the same procedure:

    * the words differ: the bootstrap over the words (:class:`~helpers.common.stats.Replicates`,
      the course's small-sample rule, never narrower than the t interval over ``n_words`` units);
    * every word gave the same share: the exact (Clopper-Pearson) interval and binomial p of that
      count of words (a zero-width bootstrap interval would look like certainty).

    "above" when the interval at ``1 - alpha / K`` lies above ``half`` *and* the adjusted p is
    below ``alpha``, "below" likewise; they part only where the p cannot go that low -- too few
    words for ``K`` comparisons -- and the verdict is then "inconclusive" (``why`` says so), as in
    :func:`~helpers.common.stats.verdict`."""
    boots, unit_shares = _as_float_array(boots), _as_float_array(unit_shares)
    boots = boots[:, None] if boots.ndim == 1 else boots
    unit_shares = unit_shares[:, None] if unit_shares.ndim == 1 else unit_shares
    intervals = list(intervals)
    if boots.shape[1] != len(intervals) or unit_shares.shape[1] != len(intervals):
        raise ValueError(f"need one column of replicates and of unit shares per interval: {boots.shape[1]} and "
                         f"{unit_shares.shape[1]} vs {len(intervals)}.")
    family, n_units = max(1, len(intervals)), unit_shares.shape[0]
    level = family_level(family, alpha)
    est = np.array([ci.estimate for ci in intervals])
    reps = Replicates(est - half, boots - half, n_units, "words")
    shifted, p = reps.intervals(level), reps.p_values()
    out = []
    for k, ci in enumerate(intervals):
        if unit_shares[:, k].min() == unit_shares[:, k].max():  # every word alike: exact over the words
            count = int(round(ci.estimate * n_units))
            exact = clopper_pearson(count, n_units, level)
            share = Interval(ci.estimate, exact.low, exact.high, level)
            p_k = sign_test_p(count, n_units)
            floor = float(min(1.0, 2 * 0.5 ** n_units))
        else:
            share = Interval(ci.estimate, max(0.0, shifted[k].low + half), min(1.0, shifted[k].high + half), level)
            p_k, floor = float(p[k]), reps.p_floor
        adjusted, adjusted_floor = min(1.0, family * p_k), min(1.0, family * floor)
        side = "above" if share.low > half else "below" if share.high < half else "inconclusive"
        why = ""
        if side != "inconclusive" and not adjusted < alpha:
            why = (f"too few words for {family} comparison{'s' if family > 1 else ''}: the smallest p they "
                   f"can give is {adjusted_floor:.2g}, not below {alpha:g}")
            side = "inconclusive"
        out.append(ShareVerdict(share, p_k, adjusted, side, why, adjusted_floor))
    return out


# -- 6. everything the explorer shows, for one sentence ---------------------------------------------


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


def sentence_interventions(tokenizer, model, classifier, text: str, progress: bool = True) -> SentenceInterventions:
    """Run ``text`` once (truncated to the model's maximum, with the course's warning), then
    every head ablation (one batch of ``A`` copies per layer) and every layer skip."""
    L, A = model_sizes(model)
    enc, n_dropped = encode(tokenizer, model, text)  # called from here, so the warning names the caller's line
    enc.pop("offset_mapping", None)
    with torch.no_grad():
        out = model(**enc, output_hidden_states=True, return_dict=True)
        run = CachedRun(tuple(out.hidden_states), enc["attention_mask"],
                        [tokenizer.convert_ids_to_tokens(enc["input_ids"][0].tolist())])
        mask = run.attention_mask
        base = classifier(run.hidden(L), mask)[0]
        heads = torch.empty(L, A, base.shape[-1], device=base.device)
        skips = torch.empty(L, base.shape[-1], device=base.device)
        for layer in progress_bar(range(1, L + 1), desc="precomputing every ablation and skip",
                                  disable=not progress):
            start = run.hidden(layer - 1)
            gate = 1.0 - torch.eye(A, device=base.device)  # row h: head h removed
            last = continue_from(model, start.expand(A, -1, -1), mask.expand(A, -1), layer - 1, {layer: gate})
            heads[layer - 1] = classifier(last, mask.expand(A, -1))
            skips[layer - 1] = classifier(continue_from(model, start, mask, layer), mask)[0]
    return SentenceInterventions(text, run.tokens[0], base, heads, skips, n_dropped)


# -- the lesson's data plumbing: lesson 09's ambiguous words, traced once -----------------------------


@dataclass
class PolysemyTraces:
    """Lesson 09's ambiguous words, every sentence traced once: ``words`` ``{word: {sense:
    [sentences]}}``, ``jobs`` one ``(word, sense, sentence)`` per trace, ``traces`` and each trace's
    word ``spans`` (token positions), ``left_out`` the words the tokenizer cannot read."""

    words: dict
    jobs: list
    traces: list
    spans: list
    left_out: list

    def of(self, word: str, sense: str) -> list:
        """The traces of ``word``'s sentences of ``sense``."""
        return [t for (w, s, _), t in zip(self.jobs, self.traces) if (w, s) == (word, sense)]


def polysemy_traces(tokenizer, model, n_words: int | None = None, progress: bool = True) -> PolysemyTraces:
    """Load ``data/polysemy.json`` and ``data/polysemy_more.json`` as lesson 09 does (two senses per
    word, five sentences per sense), leave out words the tokenizer maps to its unknown token, keep
    the first ``n_words`` (all when None) and trace every sentence."""
    from helpers.common.data import load_polysemy
    from helpers.model.tokens import is_unknown
    from helpers.model.trace import trace_text

    everything = {**load_polysemy(), **load_polysemy("polysemy_more.json")}
    left_out = [w for w in everything if is_unknown(tokenizer, w)]
    known = [w for w in everything if w not in left_out]
    words = {w: everything[w] for w in known[:n_words]}
    jobs = [(w, s, x) for w, senses in words.items() for s, xs in senses.items() for x in xs]
    traces = [trace_text(tokenizer, model, x) for _, _, x in progress_bar(jobs, desc="tracing polysemy sentences",
                                                                          disable=not progress)]
    spans = [t.find_word(w).positions for (w, _, _), t in zip(jobs, traces)]
    return PolysemyTraces(words, jobs, traces, spans, left_out)


def patch_every_word(model, poly: PolysemyTraces) -> dict:
    """``{word: sense_patching result + "senses"}``: every (first sense, second sense) sentence pair
    of every word, the first sense's vector patched into the second's sentence (:func:`sense_patching`)."""
    out = {}
    for w, senses in poly.words.items():
        s_a, s_b = list(senses)[:2]
        out[w] = sense_patching(model, poly.of(w, s_a), poly.of(w, s_b), w)
        out[w]["senses"] = (s_a, s_b)
    return out


def pooling_note(name: str, pooling) -> str:
    """One sentence on whether the mean-pooled last layer is the checkpoint's own sentence vector,
    from its sentence-transformers pooling (``None``: it has no such configuration)."""
    if pooling is not None and "mean_tokens" in pooling:
        return (f"{name}: its sentence-transformers configuration pools the mean of the tokens, so the mean-pooled "
                "last layer is the sentence vector it was trained to produce")
    if pooling is not None:
        return (f"{name}: its sentence-transformers configuration pools by {', '.join(pooling) or 'nothing'}, so "
                "mean pooling is our choice here, not the model's")
    return (f"{name}: no sentence-transformers configuration: it was not trained to produce a sentence vector, and "
            "mean pooling is our choice here, not the model's")


# -- the lesson's findings, in plain words ---------------------------------------------------------------


def equivalence_resolution(n: int, family: int = 1) -> float:
    """The smallest margin within which a change measured on ``n`` paired right/wrong items could
    ever be shown equivalent, ``family`` changes judged together: the half-width of Tango's interval
    at the family's equivalence level when **no** item changes. A margin below it always reads
    "inconclusive", however harmless the change."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be a positive int (test items), got {n!r}.")
    _, high = tango_interval(0, 0, int(n), equivalence_level(family))
    return float(high)


def _join(items) -> str:
    items = [str(i) for i in items]
    if not items:
        return "none"
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _kinds(changes, labels) -> dict:
    out = {kind: [] for kind in CHANGE_WORDS}
    for label, change in zip(labels, changes):
        out[change.kind].append(label)
    return out


def change_method(changes) -> str:
    """How a family of :class:`OutcomeChange` was judged, in one line for the "How we know" fold."""
    c = changes[0]
    eq = "" if c.equivalence_interval is None else (
        f"; equivalent only when the {100 * c.equivalence_interval.level:.4g} % interval lies inside "
        f"+/-{100 * c.verdict.margin:.1f} points")
    family = "" if c.family == 1 else f", Bonferroni over {c.family} comparisons"
    return (f"each change paired on the same items ({c.method}); {100 * c.difference.level:.4g} % intervals"
            f"{family}{eq}")


def worst_head(accuracy_drop, tiebreak=None) -> int:
    """The index (in the flattened ``[L, A]`` map) of the largest accuracy drop; among equal drops,
    the largest ``tiebreak`` (e.g. the true-class logit drop), then the first."""
    drop = torch.as_tensor(accuracy_drop).flatten().double()  # cpu: a ranking of numbers
    ties = torch.zeros_like(drop) if tiebreak is None else torch.as_tensor(tiebreak).flatten().double().to(drop.device)  # cpu: as drop
    best = drop == drop.max()
    return int(torch.where(best, ties, torch.full_like(ties, -math.inf)).argmax())


def head_finding(changes, heads, accuracy_drop, *, margin: float, n_items: int, tiebreak=None) -> tuple[str, list]:
    """Lesson 12's verdict on every single-head removal in plain words, and its "How we know" lines.
    ``changes`` (:meth:`HeadAblation.changes`), ``heads`` their ``(layer, head)``, ``accuracy_drop``
    ``[L, A]``; the largest drop is named by :func:`worst_head` (``tiebreak``: e.g. the true-class
    logit drop)."""
    labels = [f"{l}.{h}" for l, h in heads]
    kinds = _kinds(changes, labels)
    drop = torch.as_tensor(accuracy_drop).flatten()  # cpu: a ranking of numbers
    worst = worst_head(accuracy_drop, tiebreak)
    n, m = len(heads), 100 * margin
    parts = []
    if kinds["lower"]:
        parts.append(f"removing {len(kinds['lower'])} of the {n} heads on its own lowers the accuracy "
                     f"({_join(kinds['lower'])})")
    else:
        parts.append(f"no one of the {n} heads lowers the accuracy measurably when removed on its own")
    if kinds["higher"]:
        parts.append(f"removing {_join(kinds['higher'])} raises it")
    if kinds["equivalent"]:
        parts.append(f"for {len(kinds['equivalent'])} heads we can tell the change stays within +/-{m:.1f} points")
    if kinds["inconclusive"]:
        parts.append(f"for {len(kinds['inconclusive'])} we cannot tell whether the change stays within "
                     f"+/-{m:.1f} points")
    sentence = ("On " + f"{n_items} test utterances, " + "; ".join(parts) + ". The largest drop, "
                f"{100 * float(drop[worst]):.1f} points, comes from removing head {labels[worst]} (layer.head).")
    details = [change_method(changes), f"largest drop: {changes[worst].describe()}"]
    resolution = equivalence_resolution(n_items, changes[0].family)
    if resolution >= margin:
        details.append(f"with {n_items} items and {changes[0].family} changes judged together, even a change no item "
                       f"shows could reach {100 * resolution:.2f} points at this level: no head can be shown "
                       f"equivalent within +/-{m:.1f}")
    return sentence[0].upper() + sentence[1:], details


def rank_sentence(rho, *, subject: str, more: str, less: str, units: str) -> str:
    """One plain sentence for a rank correlation's interval (``rho``: a :class:`RankInterval` or
    None): ``more`` when it lies above 0, ``less`` below, else "we cannot tell"."""
    if rho is None:
        return f"{subject[0].upper() + subject[1:]}: undefined, one side does not vary."
    if rho.low > 0:
        return f"{more[0].upper() + more[1:]} (rank correlation {rho.estimate:+.2f}, {units})."
    if rho.high < 0:
        return f"{less[0].upper() + less[1:]} (rank correlation {rho.estimate:+.2f}, {units})."
    return (f"With {units} we cannot tell whether {subject} go together or against each other (rank correlation "
            f"{rho.estimate:+.2f}, and it could be 0).")


def rank_details(rho, across=None, name: str = "") -> list[str]:
    """The "How we know" lines of a within-layer rank correlation (and the one across all units)."""
    if rho is None:
        return ["no layer has a defined rank correlation"]
    lines = [f"{name}mean within layers: rho = {rho} ({100 * rho.level:.4g} % interval, resampling the items and "
             "recomputing both sides)",
             "per layer: " + ", ".join(f"{l}: {r:+.2f}" for l, r in enumerate(rho.per_group, start=1))]
    if rho.undefined:
        lines.append(f"undefined in {rho.undefined:.0%} of the resamples (left out)")
    if across is not None:
        lines.append(f"over all units at once (this also ranks the layers): rho = {across}")
    return lines


def skip_finding(name: str, changes, *, head_mismatch: bool = False) -> tuple[str, list]:
    """One measure's verdict on skipping each layer (``changes[l - 1]``: layer ``l`` skipped), in
    plain words. ``head_mismatch``: the last layer's skip hands a fixed head vectors it never saw, so
    that layer is set apart, not read as a layer effect."""
    L = len(changes)
    labels = list(range(1, L + 1))
    kinds = _kinds(changes, labels)
    if head_mismatch:
        for k in kinds.values():
            if L in k:
                k.remove(L)
    parts = []
    if kinds["lower"]:
        parts.append(f"skipping layer{'s' if len(kinds['lower']) > 1 else ''} {_join(kinds['lower'])} lowers it")
    if kinds["higher"]:
        parts.append(f"skipping {_join(kinds['higher'])} raises it")
    if kinds["equivalent"]:
        parts.append(f"skipping {_join(kinds['equivalent'])} changes it by less than the margin")
    if kinds["inconclusive"]:
        parts.append(f"for {_join(kinds['inconclusive'])} we cannot tell")
    sentence = f"{name[0].upper() + name[1:]}: " + "; ".join(parts or ["no layer to read"]) + "."
    if head_mismatch:
        sentence += f" (Layer {L} is set apart: skipping it feeds the fixed head vectors it never saw.)"
    details = [change_method(changes)] + [f"layer {l}: {c.describe()}" for l, c in enumerate(changes, start=1)]
    return sentence, details


def share_words(kind: str) -> str:
    """A patched share's verdict in words (:func:`share_verdicts`)."""
    return {"above": "follows the patch", "below": "follows the context"}.get(kind, "cannot tell")


def patch_finding(verdicts, context_verdicts, n_words: int) -> tuple[str, list]:
    """Where the patched word's own vector wins, in plain words: the first patched layer from which
    a majority of pairs is shown to follow the patch, the layers where the context wins, the rest;
    and the rest-of-the-sentence control."""
    names = ["the embeddings" if l == 0 else f"layer {l}" for l in range(len(verdicts))]
    below = [n for n, v in zip(names, verdicts) if v.kind == "below"]
    unsure = [n for n, v in zip(names, verdicts) if v.kind == "inconclusive"]
    first = next((l for l, v in enumerate(verdicts) if v.kind == "above"), None)
    if first is None:
        sentence = f"With {n_words} words, no patched layer is followed by a clear majority of the sentence pairs"
    else:
        sentence = (f"Patched at {names[first]} or above, most sentence pairs follow the patch: from there the word's "
                    "own vector carries its sense")
    if below:
        sentence += f"; patched at {_join(below)}, the context wins"
    if unsure:
        sentence += f"; at {_join(unsure)} we cannot tell"
    followed = [n for n, v in zip(names, context_verdicts) if v.kind == "above"]
    sentence += (". The rest of the sentence follows the patch at " + _join(followed) + "." if followed else
                 ". The rest of the sentence never follows it: the layers above do not carry the patched sense into "
                 "the other tokens.")
    v0 = verdicts[0]
    details = [f"share of pairs following the patch per layer, resampling the {n_words} words (the small-sample rule), "
               f"{100 * v0.share.level:.4g} % intervals, Bonferroni over the {len(verdicts)} patched layers"]
    details += [f"{n}: at the word {v.share.percent(0)} (Bonferroni-adjusted {v.p_text}{_why(v)}); rest of the "
                f"sentence {c.share.percent(0)} ({c.p_text}{_why(c)})"
                for n, v, c in zip(names, verdicts, context_verdicts)]
    return sentence, details


def pruning_finding(comparison: PruningComparison, fraction: float, n_items: int) -> tuple[str, list]:
    """The importance order against the random orders at one share of heads removed, in plain words,
    and the "How we know" lines (the two-level interval, the rank test and its floor)."""
    c, R = comparison, comparison.n_orders
    low, high = float(c.random_scores.min()), float(c.random_scores.max())
    head = (f"With {fraction:.0%} of the heads removed, the importance order keeps {c.score:.1%} of the {n_items} "
            f"test utterances right, more than {c.beaten} of {R} random orders (they keep {low:.1%} to {high:.1%})")
    v = c.verdict
    if v.kind == "higher":
        tail = f"; it beats their mean by about {100 * v.difference.estimate:.1f} points"
        tail += ("." if c.rank_p <= 0.05 else f", yet {R - c.beaten} of the {R} keep as much or more: a lucky random "
                 "order can do as well.")
    elif v.kind == "lower":
        tail = f"; it falls below their mean by about {100 * -v.difference.estimate:.1f} points."
    else:
        tail = "; we cannot tell whether it keeps more than a random order would."
    details = [v.text + " (resampling the test items and the random orders, two levels)",
               f"rank test: p = {c.rank_p:.3g}, the share of random orders at least as good, counted with the "
               f"order itself ((1 + {R - c.beaten}) / ({R} + 1)); with {R} random orders it cannot go below "
               f"1/(R + 1) = {1 / (R + 1):.3g}"]
    return head + tail, details


# -- the lesson's printouts, tables and findings, assembled from its numbers ----------------------------


def resolution_lines(n_items: int, families: dict, margin: float) -> list[str]:
    """One printed line per family of comparisons (``families``: ``{what: how many are judged
    together}``): the smallest margin :func:`equivalence_resolution` lets ``n_items`` paired items
    ever confirm, and whether ``margin`` lies above it (then it "can" be shown)."""
    lines = []
    for what, family in families.items():
        reach = equivalence_resolution(n_items, family)
        lines.append(f"{what:>16} on {n_items} utterances: smallest margin that can read 'equivalent' "
                     f"{100 * reach:.2f} points -> " + ("can" if reach < margin else "can never")
                     + " be shown equivalent within the margin")
    return lines


def head_ablation_details(ablation: HeadAblation, accuracy_drop, logit_drops, n_items: int) -> list[str]:
    """Two more "How we know" lines for the every-head verdict: the heads the data cannot rank below
    the largest drop (:meth:`HeadAblation.tied_with` of :func:`worst_head`, listed when at most 12,
    else counted) and the scale (one item in points; the median and largest ``logit_drops``, the
    ``[L, A]`` mean true-class logit drops)."""
    worst = ablation.heads()[worst_head(accuracy_drop, tiebreak=logit_drops)]
    tied = ablation.tied_with(*worst)  # includes the worst head itself
    n_heads = len(ablation.heads())
    return [f"heads the data cannot rank below {worst[0]}.{worst[1]}: "
            + (", ".join(f"{l}.{h}" for l, h in tied) if len(tied) <= 12 else f"{len(tied)} of {n_heads}")
            + f" (Bonferroni over all {extreme_family(n_heads):,} pairs of heads: the worst is picked from the data)",
            f"one utterance is {100 / n_items:.2f} points; true-class logit drop over all heads: median "
            f"{logit_drops.median():.3f}, largest {logit_drops.max():.3f}"]


def zero_vs_mean_finding(zero: HeadAblation, mean: HeadAblation, gap, *, margin: float) -> tuple[str, list]:
    """Zero against mean ablation of every head on the same items, in plain words: do the two rank
    the heads' loss increase alike within a layer (:func:`within_group_spearman_ci`), and the head
    ``gap`` (``(layer - 1, head)``) where zeroing raises the mean loss most beyond mean ablation; the
    "How we know" lines add each method's verdict counts over all heads (:func:`count_kinds`)."""
    n_items, n_heads = zero.base.shape[0], len(zero.heads())
    agree = within_group_spearman_ci(zero.loss_increase_items(), mean.loss_increase_items())
    zero_dl, mean_dl = zero.loss_increase_items().mean(0), mean.loss_increase_items().mean(0)
    counts = {name: count_kinds(a.changes(margin=margin)) for name, a in (("zero", zero), ("mean", mean))}
    sentence = (rank_sentence(agree, subject="the two ways of removing a head",
                              more="within a layer, zeroing a head and setting it to its mean rank the heads' "
                                   "damage alike",
                              less="within a layer, zeroing and mean-ablation rank the heads' damage in opposite "
                                   "orders",
                              units=f"{n_items} utterances")
                + f" Zeroing hurts most beyond the mean at head {gap[0] + 1}.{gap[1]}"
                f" (loss {float(zero_dl[gap]):+.3f} vs {float(mean_dl[gap]):+.3f}).")
    details = rank_details(agree) + [f"{name}-ablation, {n_heads} heads on {n_items} utterances: "
                                     + ", ".join(f"{k} {n}" for k, n in c.items()) for name, c in counts.items()]
    return sentence, details


def parking_details(shares: dict) -> list[str]:
    """For each token's ``[L, A]`` map of mean attention shares (``shares``: ``{token: map}``) one
    "How we know" line: the largest share of one head, and how many heads send more than half their
    attention there."""
    return [f"{name}: largest share of one head {s.max():.2f}; heads with more than half their attention "
            f"there: {int((s > 0.5).sum())} of {s.numel()}" for name, s in shares.items()]


def pattern_finding(shares, loss, token: str, *, level: float = 0.95) -> tuple[str, list]:
    """Does a head's attention share on ``token`` rank with the damage its removal does? ``shares``
    and ``loss`` are ``[N, L, A]`` per test item (the head's share on ``token``; the loss increase with
    the head removed). The sentence reads the rank correlation **within each layer**
    (:func:`within_group_spearman_ci` at ``level``); the one over all heads, which also ranks the
    layers (:func:`spearman_ci`), is only in the "How we know" lines."""
    shares, loss = torch.as_tensor(shares).cpu(), torch.as_tensor(loss).cpu()  # cpu: rank statistics on results
    rho = within_group_spearman_ci(shares, loss, level=level)
    across = spearman_ci(shares.flatten(1), loss.flatten(1), level=level)
    sentence = rank_sentence(rho, subject=f"a head's share on {token} and the damage its removal does",
                             more=f"within a layer, heads with more attention on {token} matter more",
                             less=f"within a layer, heads with more attention on {token} matter less",
                             units=f"{len(shares)} utterances")
    return sentence, rank_details(rho, across)


def gradient_finding(grads, loss, normalized, *, seconds: tuple) -> tuple[str, list]:
    """Michel et al.'s one-gradient importance against removal, like for like, in plain words.
    ``grads`` ``[N, L, A]``: each item's gradient of the loss with respect to each head's gate;
    ``loss`` ``[N, L, A]``: each item's loss change with the head removed; ``normalized``: ``|grads|``
    divided per layer by the norm of that layer's importances (:func:`normalize_by_layer`, per item);
    ``seconds``: ``(gradient, removal)`` wall times. The sentence reads ``E|g|`` against ``E|dL|``
    ranked within each layer (:func:`within_group_spearman_ci`); the signed pair ``E[-g]`` against
    ``E[dL]`` and the three correlations over all heads (:func:`spearman_ci`) are "How we know"
    lines."""
    g, dl, gn = (torch.as_tensor(t).cpu() for t in (grads, loss, normalized))  # cpu: statistics on results
    n_items, n_heads = g.shape[0], g[0].numel()
    rho = within_group_spearman_ci(g.abs(), dl.abs())
    signed = within_group_spearman_ci(-g, dl)
    across = {name: spearman_ci(a.flatten(1), b.flatten(1)) for name, a, b in (
        ("E|g| vs E|dL|", g.abs(), dl.abs()), ("E[-g] vs E[dL] (signed)", -g, dl),
        ("E|g| normalised per layer vs E|dL|", gn, dl.abs()))}
    sentence = (rank_sentence(rho, subject="the one-gradient importance and removal",
                              more="within a layer, the one gradient ranks the heads like their removal does",
                              less="within a layer, the one gradient ranks the heads opposite to their removal",
                              units=f"{n_items} utterances")
                + f" It took {seconds[0]:.1f} s, the removal {seconds[1]:.1f} s.")
    details = (rank_details(rho, name="E|g| vs E|dL|, ")
               + [f"signed, E[-g] vs E[dL], mean within layers: rho = {signed}"]
               + [f"{k}, across all {n_heads} heads: rho = {v}" for k, v in across.items()])
    return sentence, details


def pruning_rows(fractions, correct, changes) -> list[dict]:
    """The pruning table, one row per share of heads removed: ``correct[k]`` the 0/1 outcomes with
    ``fractions[k]`` removed (``fractions[0]``: nothing), ``changes[k - 1]`` its
    :class:`OutcomeChange` against nothing removed (``-`` in the first row)."""
    return [{"removed": f"{f:.0%}", "accuracy": accuracy_ci(correct[k]).percent(),
             "change [interval]": "-" if k == 0 else changes[k - 1].difference.format("+.3f"),
             "against nothing removed": "-" if k == 0 else CHANGE_WORDS[changes[k - 1].kind]}
            for k, f in enumerate(fractions)]


def pruning_curve_finding(changes, fractions, comparison: PruningComparison, fraction: float,
                          n_items: int) -> tuple[str, list]:
    """The whole pruning finding in plain words: the first share removed (``fractions[k]``, its
    change ``changes[k - 1]``; ``fractions[0]`` is nothing removed) at which the accuracy is shown
    lower than with nothing removed, then :func:`pruning_finding` (the order against the random
    orders at ``fraction``); the "How we know" lines start with the family's method."""
    first_lower = next((f for f, ch in zip(fractions[1:], changes) if ch.kind == "lower"), None)
    start = ("Removing the least important heads first, the accuracy is first measurably lower than with "
             f"nothing removed at {first_lower:.0%}." if first_lower is not None else
             "Removing the least important heads first, no share removed lowers the accuracy measurably.")
    sentence, details = pruning_finding(comparison, fraction, n_items)
    return start + " " + sentence, [change_method(changes)] + details


def sense_groups(vectors: torch.Tensor, poly) -> dict:
    """``vectors`` ``[V, S, H]`` (``V`` variants, e.g. nothing skipped and each layer skipped; one
    vector per sentence of ``poly.jobs``) regrouped as ``{word: {sense: [n, V, H]}}``, the
    ``n`` sentences of that word and sense in the order of ``poly.jobs``."""
    return {w: {s: vectors[:, [i for i, j in enumerate(poly.jobs) if j[:2] == (w, s)]].transpose(0, 1)
                for s in senses} for w, senses in poly.words.items()}


def skip_verdicts(measures: dict, *, margin: float) -> tuple[dict, dict]:
    """Every layer skip against nothing skipped, per measure. ``measures``: ``{name: (correct, clusters,
    ylabel, chance)}``, ``correct`` ``[L + 1, n]`` 0/1 outcomes (row 0 nothing skipped, row ``l`` layer
    ``l`` skipped), ``clusters`` each item's unit or ``None`` (independent items). Returns
    ``({name: [OutcomeChange per layer]}, {name: panel})``: the changes by :func:`outcome_changes`
    (the ``L`` layers one family; resampled by cluster when given), and the panel that
    :func:`~helpers.interventions.plots.plot_skip_effects` draws, ``(accuracy with nothing skipped,
    accuracy with each layer skipped, ylabel, chance)``."""
    changes, panels = {}, {}
    for name, (c, clusters, ylabel, chance) in measures.items():
        changes[name] = outcome_changes(c[1:], c[0], [f"skipping layer {l}" for l in range(1, len(c))],
                                        margin=margin, clusters=clusters, reference="nothing skipped")
        unchanged = accuracy_ci(c[0]) if clusters is None else cluster_bootstrap_ci(c[0], clusters, n_boot=2000)
        panels[name] = (unchanged, [ch.after for ch in changes[name]], ylabel, chance)
    return changes, panels


def skip_rows(changes, *, head_mismatch: bool = False) -> list[dict]:
    """One measure's table of layer skips (``changes[l - 1]``: layer ``l`` skipped); with
    ``head_mismatch`` the last layer's verdict is marked "(head mismatch)"."""
    L = len(changes)
    return [{"layer skipped": str(l), "accuracy": ch.after.percent(),
             "change [interval]": ch.difference.format("+.3f"),
             "against nothing skipped": CHANGE_WORDS[ch.kind] + (" (head mismatch)" if head_mismatch and l == L
                                                                 else "")}
            for l, ch in enumerate(changes, start=1)]


def probe_finding(control: ShareVerdict, n_pairs: int, n_words: int) -> tuple[str, list]:
    """The patching probe's control in plain words: without a patch, how often lesson 09's probe
    reads the target's own sense (``control``, :func:`share_verdicts` over ``n_words`` words), and
    whether that is shown better than a coin (else the follow rates mean little)."""
    sentence = (f"Without a patch, the probe reads the target's own sense in {control.share.estimate:.0%} of the "
                f"{n_pairs} sentence pairs"
                + (", better than a coin." if control.kind == "above" else
                   "; we cannot tell it from a coin, so the follow rates below mean little."))
    return sentence, [f"{n_words} words resampled: {control.share.percent()}, {control.p_text}{_why(control)}"]


def _why(v: ShareVerdict) -> str:
    return f"; inconclusive: {v.why}" if v.why else ""


def patch_rows(verdicts, context_verdicts) -> list[dict]:
    """The patching table, one row per patched layer (0: the embeddings, shown "emb"): the share of
    pairs following the patch at the word and in the rest of the sentence, each with its verdict in
    words (:func:`share_words`)."""
    return [{"patched layer": "emb" if l == 0 else l, "at the word": v.share.percent(0),
             "a majority": share_words(v.kind), "rest of the sentence": c.share.percent(0),
             "a majority (rest)": share_words(c.kind)}
            for l, (v, c) in enumerate(zip(verdicts, context_verdicts))]


def flip_lines(effects: SentenceInterventions, names, what: str = "SENTENCE") -> list[str]:
    """How many single-head removals and which layer skips change ``effects``' predicted class
    (``names``: the class names), and for each such skip how far the old and the new winner's logits
    moved."""
    pred = int(effects.base.argmax())
    L, A = effects.num_layers, effects.num_heads
    flips_heads = int((effects.heads.argmax(-1) != pred).sum())
    flips_skips = [l for l in range(1, L + 1) if int(effects.skips[l - 1].argmax()) != pred]
    lines = [f"{flips_heads} of {L * A} single-head removals change the predicted intent of {what}; skipping "
             f"layer(s) {flips_skips or 'none'} does"]
    for l in flips_skips:
        new = int(effects.skips[l - 1].argmax())
        moved = effects.skips[l - 1] - effects.base
        lines.append(f"  skipping layer {l}: the {names[pred]!r} logit changes by {moved[pred]:+.1f}, the "
                     f"{names[new]!r} logit by {moved[new]:+.1f}, so {names[new]!r} wins")
    return lines


def join_claims(*claims):
    """One :class:`~helpers.common.claims.Claim` from several: their sentences joined by a space,
    their "How we know" lines one after another."""
    from helpers.common.claims import Claim

    return Claim(" ".join(c.sentence for c in claims), [d for c in claims for d in c.details])


# -- the lesson's claims table ----------------------------------------------------------------------------

STORIES = {  # key: (the popular story, the published finding with its paper and model)
    "heads": ("most single heads can be removed",
              "Michel et al. 2019 (BERT-base fine-tuned on MNLI; a Transformer for translation): most single heads "
              "removed at test time without a detectable loss"),
    "parking": ("attention parked on [SEP] or [CLS] marks an unimportant head",
                "Clark et al. 2019 (bert-base): over half the attention of layers 6-10 on [SEP], read as a no-op"),
    "mean": ("removing a head means setting it to zero",
             "a choice of method; mean ablation is common in circuit analysis (no single paper's number quoted)"),
    "gradient": ("one gradient ranks heads like removing them",
                 "Michel et al. 2019 (BERT-base on MNLI): the gradient importance, used to prune heads"),
    "pruning": ("pruning the least important heads first keeps the accuracy longest",
                "Michel et al. 2019 (BERT-base on MNLI): a large part of the heads pruned with little or no loss; "
                "most must stay"),
    "skip": ("every layer is an indispensable expert", "a popular story; no published number quoted here"),
    "patch": ("a word's own vector carries its sense from some layer on",
              "lesson 09 (this model): where the senses separate"),
}


def claim_rows(findings: dict, stories: dict = STORIES) -> list[tuple[str, str, str, str]]:
    """The claims table from the findings the lesson showed: ``findings`` ``{key: Claim}`` (each the
    plain sentence generated from the numbers, with its "How we know" lines), ``stories`` ``{key:
    (story, published finding)}``. One row per key of ``stories`` found in ``findings``, in the order
    of ``stories``: ``(story, this run in plain words, published finding, the statistics behind it)``.
    A finding that could not be measured on this model (say, fewer than two ambiguous words) is left
    out, never filled in by hand."""
    unknown = set(findings) - set(stories)
    if unknown:
        raise ValueError(f"no story for {sorted(unknown)}: the keys are {list(stories)}.")
    return [(story, findings[key].sentence, paper, " ".join(findings[key].details))
            for key, (story, paper) in stories.items() if findings.get(key) is not None]


# -- the classifier both lessons 12 and 13 judge the model by -------------------------------------------


@dataclass
class BankingSetup:
    """Lesson 12's task and classifier: BANKING77 ``train`` / ``test`` draws, ``max_len`` (every
    utterance cut to it), the trained linear ``head`` and ``classifier`` (:class:`SentenceHead`, mean
    pooling of the last layer)."""

    train: object
    test: object
    max_len: int
    head: object
    classifier: SentenceHead


def banking_setup(tokenizer, model, budget, *, progress: bool = True) -> BankingSetup:
    """Exactly lesson 12's first cells, as one call (lesson 13 and the tests use it): under the full
    budget 30 training utterances of each of BANKING77's 77 intents and 5 test utterances per intent
    (seed 0; the quick budget: 5 intents, 8 and 2), cut to ``min(128, the model's maximum)`` tokens,
    mean-pooled last-layer features (:func:`pooled_features`) and a linear head (lesson 10's ``LinearHead``) trained by
    :func:`~helpers.classify.compute.train_head` (full-batch Adam, no dev split: not lesson 10's contract)
    for ``HEAD_STEPS`` full-batch steps (seed 0). Warns when utterances are cut."""
    import random

    from helpers.classify.compute import HEAD_STEPS, train_head
    from helpers.common.data import load_banking77
    from helpers.model.trace import max_input_tokens

    n_intents, shots, per_intent = budget.pick((77, 30, 5), (5, 8, 2))
    train_all, test_all = load_banking77("train"), load_banking77("test")
    intents = tuple(sorted(random.Random(0).sample(train_all.names, n_intents)))
    train = train_all.only(intents).sample(shots, seed=0)
    test = test_all.only(intents).sample(per_intent, seed=0)
    max_len = min(128, max_input_tokens(tokenizer, model))
    n_cut = count_truncated(tokenizer, train.texts + test.texts, max_len)
    if n_cut:
        warnings.warn(f"{n_cut} utterances are longer than MAX_LEN = {max_len} tokens and are cut.", stacklevel=2)
    features = pooled_features(tokenizer, model, train.texts, max_length=max_len, progress=progress)
    head = train_head(features, train.labels, train.num_classes, epochs=HEAD_STEPS, seed=0, progress=progress)
    return BankingSetup(train, test, max_len, head, SentenceHead(head, pooling="mean"))
