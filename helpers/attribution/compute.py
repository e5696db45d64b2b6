"""Lesson 13 numbers: which input tokens drove one decision, and is the answer faithful?

Every method explains one logit of a classifier read off BERT's last hidden state (lesson 12's
``SentenceHead``) on one traced sentence (:class:`~helpers.model.trace.Trace`):

* attention -- :func:`raw_attention_scores` (last layer, heads averaged), :func:`attention_rollout`
  (Abnar & Zuidema 2020) and :func:`norm_attention_scores` (lesson 08's norm-based attention,
  Kobayashi et al. 2020);
* gradients -- :func:`gradient_x_input` (by hand with ``torch.autograd``; Captum's
  ``InputXGradient`` in :func:`gradient_x_input_captum` checks it), :func:`integrated_gradients`
  (Captum's ``LayerIntegratedGradients``, steps raised until the completeness gap is small;
  :func:`integrated_gradients_by_hand` is the same sum written out, to check Captum;
  :func:`integrated_gradients_by_embedding` splits it over word / segment / position);
* perturbation -- :func:`occlusion_scores` (drop a token, run again) and :func:`value_zeroing`
  (Mohebbi et al. 2023: a token's value vector zeroed inside one layer);
* all six for one sentence -- :func:`six_attributions`;
* faithfulness (DeYoung et al. 2020, ERASER) -- :func:`erasure_curves`: comprehensiveness and
  sufficiency of each ranking's top tokens, removed by :func:`removal_probabilities` (dropped, or
  replaced by [MASK] or [PAD]); :func:`faithfulness_study` runs them over many utterances against
  random rankings; :func:`versus_random` reads each method against the random ranking (paired over
  the utterances, one Bonferroni family over the methods) and :func:`rollout_versus_raw` the one
  comparison of Abnar & Zuidema's story;
* the lesson's findings in plain words (:func:`completeness_finding`, :func:`faithfulness_finding`,
  :func:`rollout_finding`) and its stories (:data:`STORIES`, the rows of
  :func:`helpers.interventions.compute.claim_rows`).

Layer numbering is the course's: ``0`` is the embedding output, ``1 .. L`` the encoder layers.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from helpers.common.progress import progress as progress_bar
from helpers.common.stats import (Verdict, bootstrap_size, cluster_replicates, paired_difference_ci,
                                  replicate_verdicts, verdict)
from helpers.model.layers import additive_mask, continue_from, run_layer
from helpers.model.trace import Trace, check_trace, device_of

OCCLUSION_PASSES = 64  # past this many tokens, occlusion drops runs of neighbouring tokens together


def _as_float_array(values) -> np.ndarray:
    if isinstance(values, torch.Tensor):
        values = values.detach().cpu().double().numpy()  # cpu: numpy needs host memory
    return np.asarray(values, dtype=float)


# -- which tokens drove one decision ---------------------------------------------------------------


def _pool_rows(matrix: torch.Tensor, pooling: str) -> torch.Tensor:
    """The row(s) of a ``[T, T]`` token-to-token matrix that the sentence vector reads: row 0
    for [CLS] pooling, the mean of all rows for mean pooling."""
    return matrix[0] if pooling == "cls" else matrix.mean(0)


def raw_attention_scores(trace: Trace, pooling: str = "mean") -> torch.Tensor:
    """``[T]``: last-layer attention, heads averaged, read by the pooled vector."""
    att = check_trace(trace).attention(trace.num_layers).mean(0)
    return _pool_rows(att, pooling)


def attention_rollout(attentions) -> torch.Tensor:
    r"""Abnar & Zuidema (2020): $\tilde A_l = \mathrm{rownorm}(0.5\,\bar A_l + 0.5\,I)$ with
    $\bar A_l$ the heads' average, and $R = \tilde A_L \cdots \tilde A_1$: ``[T, T]``, row ``i``
    how much output token ``i`` draws on input token ``j``."""
    layers = [torch.as_tensor(a, device=device_of(*attentions)) for a in attentions]
    if not layers or any(a.ndim != 3 or a.shape[-1] != a.shape[-2] for a in layers):
        raise ValueError("attentions must be a non-empty list of [heads, T, T] maps, one per layer.")
    eye = torch.eye(layers[0].shape[-1], device=layers[0].device)
    rollout = eye
    for a in layers:
        mixed = 0.5 * a.mean(0) + 0.5 * eye
        mixed = mixed / mixed.sum(-1, keepdim=True)
        rollout = mixed @ rollout
    return rollout


def rollout_scores(trace: Trace, pooling: str = "mean") -> torch.Tensor:
    """``[T]``: the rows of the attention rollout that the pooled vector reads."""
    return _pool_rows(attention_rollout(check_trace(trace).attentions), pooling)


def _check_target(target, logits: torch.Tensor) -> int:
    n = logits.shape[-1]
    if isinstance(target, bool) or not isinstance(target, (int, np.integer)) or not 0 <= target < n:
        raise ValueError(f"target {target!r} is not a class of this head: valid classes are 0 to {n - 1}.")
    return int(target)


def _trace_inputs(trace: Trace) -> dict:
    ids = trace.input_ids[None]
    return {"input_ids": ids, "token_type_ids": trace.token_type_ids[None], "attention_mask": torch.ones_like(ids)}


def gradient_x_input(model, classifier, trace: Trace, target: int) -> torch.Tensor:
    """``[T]``: (d logit_target / d e_j) . e_j summed over the hidden size, with ``e`` the
    embedding output (``hidden_states[0]``); a first-order estimate of what each token adds."""
    inputs = _trace_inputs(check_trace(trace))
    with torch.enable_grad():
        emb = trace.hidden(0)[None].clone().requires_grad_(True)
        last = continue_from(model, emb, inputs["attention_mask"], 0)
        logits = classifier(last, inputs["attention_mask"])[0]
        logit = logits[_check_target(target, logits)]
        (grad,) = torch.autograd.grad(logit, emb)
    return (grad * emb).sum(-1)[0].detach()


def occlusion_windows(positions: list, max_passes: int) -> list[list[int]]:
    """Split ``positions`` into at most ``max_passes`` runs of consecutive positions."""
    if isinstance(max_passes, bool) or not isinstance(max_passes, int) or max_passes < 1:
        raise ValueError(f"max_passes must be a positive int, got {max_passes!r}.")
    width = max(1, math.ceil(len(positions) / max_passes))
    return [positions[i:i + width] for i in range(0, len(positions), width)]


@torch.no_grad()
def occlusion_scores(model, classifier, trace: Trace, target: int, positions: list | None = None,
                     max_passes: int = OCCLUSION_PASSES) -> torch.Tensor:
    """``[T]``: how much the ``target`` logit falls when a token is dropped from the input
    (the sequence gets one token shorter) and the model runs again. Special tokens are never
    dropped (NaN). Past ``max_passes`` tokens, runs of consecutive tokens are dropped together
    and each token of a run gets the run's score, so the cost stays at ``max_passes`` passes."""
    check_trace(trace)
    if positions is None:
        positions = [i for i, t in enumerate(trace.tokens) if t not in ("[CLS]", "[SEP]", "[PAD]")]
    inputs = _trace_inputs(trace)
    base_logits = classifier(model(**inputs).last_hidden_state, inputs["attention_mask"])[0]
    base = base_logits[_check_target(target, base_logits)]
    scores = torch.full((trace.seq_len,), float("nan"), device=trace.device)
    windows = occlusion_windows(list(positions), max_passes)
    for chunk in range(0, len(windows), 16):
        group = windows[chunk:chunk + 16]
        ids, types, mask = _erased_batch(trace, group, "drop", None)
        logits = classifier(model(input_ids=ids, token_type_ids=types, attention_mask=mask).last_hidden_state, mask)
        for r, w in enumerate(group):
            scores[w] = base - logits[r, target]
    return scores


ATTRIBUTION_METHODS = ("raw attention", "attention rollout", "gradient x input", "occlusion")


def attribution_scores(model, classifier, trace: Trace, target: int, pooling: str = "mean",
                       max_passes: int = OCCLUSION_PASSES) -> dict:
    """``{method: [T]}`` for the four methods of :data:`ATTRIBUTION_METHODS`, explaining the
    ``target`` logit of ``classifier`` on ``trace``'s sentence."""
    return {
        "raw attention": raw_attention_scores(trace, pooling),
        "attention rollout": rollout_scores(trace, pooling),
        "gradient x input": gradient_x_input(model, classifier, trace, target),
        "occlusion": occlusion_scores(model, classifier, trace, target, max_passes=max_passes),
    }


# -- Integrated Gradients with Captum, and the faithfulness of a ranking (ERASER) ------------------

IG_BASELINES = ("pad", "mask")
IG_STEPS = (32, 64, 128, 256)  # Integrated Gradients: steps tried in turn until the completeness gap is small
IG_TOLERANCE = 0.01  # ... smaller than this share of |f(x) - f(x')|


def _special_ids(tokenizer) -> set:
    return {i for i in (tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.pad_token_id) if i is not None}


def baseline_ids(tokenizer, input_ids: torch.Tensor, baseline: str = "pad") -> torch.Tensor:
    """``input_ids`` with every token except ``[CLS]`` and ``[SEP]`` replaced by ``[PAD]``
    (``baseline="pad"``, Captum's BERT tutorial) or ``[MASK]`` (``"mask"``): the input ``x'``
    from which Integrated Gradients integrates."""
    if baseline not in IG_BASELINES:
        raise ValueError(f"baseline {baseline!r} is not valid: choose one of {IG_BASELINES}.")
    fill = tokenizer.pad_token_id if baseline == "pad" else tokenizer.mask_token_id
    if fill is None:
        raise ValueError(f"this tokenizer has no {baseline.upper()} token: choose another baseline.")
    keep = torch.isin(input_ids, torch.tensor([tokenizer.cls_token_id, tokenizer.sep_token_id],
                                              device=input_ids.device))
    return torch.where(keep, input_ids, torch.full_like(input_ids, fill))


def logits_from_ids(model, classifier):
    """``forward(input_ids, token_type_ids, attention_mask, position_ids=None) -> logits [B, C]``:
    the model and the head as one function of token ids, the form Captum attributes."""

    def forward(input_ids, token_type_ids, attention_mask, position_ids=None):
        hidden = model(input_ids=input_ids, token_type_ids=token_type_ids, attention_mask=attention_mask,
                       position_ids=position_ids).last_hidden_state
        return classifier(hidden, attention_mask)

    return forward


@dataclass
class IntegratedGradients:
    """Integrated Gradients of one logit (Sundararajan et al. 2017) with Captum's
    ``LayerIntegratedGradients`` on ``embeddings.word_embeddings``.

    ``scores`` ``[T]`` (each token's attribution, summed over the hidden size); ``f_input`` and
    ``f_baseline`` are the logit at the input and at the baseline; ``delta`` Captum's convergence
    delta, ``sum(scores) - (f_input - f_baseline)``, at the ``steps`` finally used; ``history`` every
    ``(steps, delta)`` tried."""

    scores: torch.Tensor
    f_input: float
    f_baseline: float
    delta: float
    steps: int
    baseline: str
    history: list
    tolerance: float

    @property
    def gap(self) -> float:
        return self.f_input - self.f_baseline

    @property
    def converged(self) -> bool:
        return abs(self.delta) < self.tolerance * max(abs(self.gap), 1e-6)


def _ids_of(trace: Trace) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    inputs = _trace_inputs(check_trace(trace))
    return inputs["input_ids"], inputs["token_type_ids"], inputs["attention_mask"]


def _internal_batch(seq_len: int) -> int:
    return max(1, 4096 // seq_len)  # interpolation steps per backward pass: bounded memory at any length


def integrated_gradients(tokenizer, model, classifier, trace: Trace, target: int, *, baseline: str = "pad",
                         steps=IG_STEPS, tolerance: float = IG_TOLERANCE) -> IntegratedGradients:
    """Integrated Gradients of the ``target`` logit on ``trace``'s sentence, attributed to the word
    embeddings, from the baseline of :func:`baseline_ids` (attention mask all ones, as in Captum's
    BERT tutorial). ``steps`` are tried in order (Gauss-Legendre, Captum's default) until
    ``|delta| < tolerance * |f(x) - f(x')|`` (completeness); the last one tried is kept either way
    (``.converged`` says whether it met the tolerance)."""
    from captum.attr import LayerIntegratedGradients

    steps = list(steps)
    if not steps or any(isinstance(n, bool) or not isinstance(n, int) or n < 2 for n in steps):
        raise ValueError(f"steps must be a non-empty list of ints >= 2, got {steps!r}.")
    if not 0 < tolerance < 1:
        raise ValueError(f"tolerance must lie between 0 and 1 (a share of |f(x) - f(x')|), got {tolerance!r}.")
    ids, types, mask = _ids_of(trace)
    ref = baseline_ids(tokenizer, ids, baseline)
    forward = logits_from_ids(model, classifier)
    with torch.no_grad():
        f_x, f_ref = forward(ids, types, mask)[0], forward(ref, types, mask)[0]
    target = _check_target(target, f_x)
    lig = LayerIntegratedGradients(forward, model.embeddings.word_embeddings)
    history = []
    for n in steps:
        with torch.enable_grad():
            attr, delta = lig.attribute(inputs=ids, baselines=ref, target=target, additional_forward_args=(types, mask),
                                        n_steps=n, internal_batch_size=_internal_batch(ids.shape[1]),
                                        return_convergence_delta=True)
        history.append((n, float(delta)))
        result = IntegratedGradients(attr.sum(-1)[0].detach(), float(f_x[target]), float(f_ref[target]),
                                     float(delta), n, baseline, history, tolerance)
        if result.converged:
            break
    return result


def integrated_gradients_by_embedding(tokenizer, model, classifier, trace: Trace, target: int, *,
                                      baseline: str = "pad", steps: int = 64) -> dict:
    """One Integrated Gradients run split over the three embedding tables, as Captum's BERT tutorial
    does (``LayerIntegratedGradients`` on ``word_embeddings``, ``token_type_embeddings`` and
    ``position_embeddings`` at once): baselines :func:`baseline_ids`, token type 0 everywhere and
    position 0 everywhere. Returns ``{"word" | "segment" | "position": [T], "delta": float,
    "gap": f(x) - f(x')}``; the three parts sum (over tokens) to ``gap + delta``."""
    from captum.attr import LayerIntegratedGradients

    ids, types, mask = _ids_of(trace)
    positions = torch.arange(ids.shape[1], device=ids.device)[None]
    refs = (baseline_ids(tokenizer, ids, baseline), torch.zeros_like(types), torch.zeros_like(positions))
    forward = logits_from_ids(model, classifier)

    def by_parts(input_ids, token_type_ids, position_ids, attention_mask):
        return forward(input_ids, token_type_ids, attention_mask, position_ids)

    emb = model.embeddings
    with warnings.catch_warnings():  # "each layer not solely dependent on another": true of three tables read from ids
        warnings.filterwarnings("ignore", message="Multiple layers provided")
        lig = LayerIntegratedGradients(by_parts, [emb.word_embeddings, emb.token_type_embeddings,
                                                  emb.position_embeddings])
    with torch.no_grad():
        f_x, f_ref = by_parts(ids, types, positions, mask)[0], by_parts(*refs, mask)[0]
    target = _check_target(target, f_x)
    with torch.enable_grad():
        parts, delta = lig.attribute(inputs=(ids, types, positions), baselines=refs, target=target,
                                     additional_forward_args=(mask,), n_steps=steps,
                                     internal_batch_size=_internal_batch(ids.shape[1]), return_convergence_delta=True)
    word, segment, position = (p.sum(-1)[0].detach() for p in parts)
    return {"word": word, "segment": segment, "position": position, "delta": float(delta),
            "gap": float(f_x[target] - f_ref[target])}


def gradient_x_input_captum(model, classifier, trace: Trace, target: int) -> torch.Tensor:
    """``[T]``: Captum's ``InputXGradient`` on the embedding output ``e`` (``hidden_states[0]``),
    summed over the hidden size -- an independent computation of :func:`gradient_x_input`."""
    from captum.attr import InputXGradient

    mask = _trace_inputs(check_trace(trace))["attention_mask"]

    def from_embeddings(emb):
        return classifier(continue_from(model, emb, mask.expand(emb.shape[0], -1), 0), mask.expand(emb.shape[0], -1))

    emb = trace.hidden(0)[None].clone().requires_grad_(True)
    with torch.enable_grad():
        target = _check_target(target, from_embeddings(emb)[0])
        attr = InputXGradient(from_embeddings).attribute(emb, target=target)
    return attr.sum(-1)[0].detach()


def gauss_legendre_path(steps: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``(alphas, weights)``: the ``steps`` Gauss-Legendre nodes moved from ``[-1, 1]`` to
    ``[0, 1]`` and their weights (summing to 1) -- the rule Captum's Integrated Gradients uses by
    default (``method="gausslegendre"``)."""
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 2:
        raise ValueError(f"steps must be an int >= 2, got {steps!r}.")
    nodes, weights = np.polynomial.legendre.leggauss(steps)
    return torch.tensor(0.5 * (1 + nodes)), torch.tensor(0.5 * weights)  # cpu: moved to the path's device by the caller


def integrated_gradients_by_hand(tokenizer, model, classifier, trace: Trace, target: int, *,
                                 baseline: str = "pad", steps: int = 32) -> torch.Tensor:
    """``[T]``: Integrated Gradients of the ``target`` logit written out with ``torch.autograd``,
    an independent computation of :func:`integrated_gradients` (Captum) at the same ``steps``.

    The word-embedding vectors ``w`` move on the straight line from the baseline's ``w'``
    (:func:`baseline_ids`), ``w' + alpha (w - w')``, the position and segment embeddings staying
    the input's; token ``j`` gets ``sum_k weight_k * (d logit / d w_j)(alpha_k) . (w_j - w'_j)``
    with :func:`gauss_legendre_path`'s nodes and weights."""
    ids, types, mask = _ids_of(trace)
    table = model.embeddings.word_embeddings
    with torch.no_grad():
        start, end = table(baseline_ids(tokenizer, ids, baseline)), table(ids)  # [1, T, H]
        target = _check_target(target, classifier(model(input_ids=ids, token_type_ids=types,
                                                         attention_mask=mask).last_hidden_state, mask)[0])
    alphas, weights = gauss_legendre_path(steps)
    total = torch.zeros_like(end)
    size = _internal_batch(ids.shape[1])
    for first in range(0, steps, size):
        a = alphas[first:first + size].to(end)[:, None, None]  # [k, 1, 1]
        path = (start + a * (end - start)).requires_grad_(True)  # [k, T, H]
        handle = table.register_forward_hook(lambda module, args, out: path)  # the lookup returns the path
        try:
            with torch.enable_grad():
                k = path.shape[0]
                hidden = model(input_ids=ids.expand(k, -1), token_type_ids=types.expand(k, -1),
                               attention_mask=mask.expand(k, -1)).last_hidden_state
                logits = classifier(hidden, mask.expand(k, -1))[:, target]
                (grad,) = torch.autograd.grad(logits.sum(), path)
        finally:
            handle.remove()
        total += (weights[first:first + size].to(grad)[:, None, None] * grad).sum(0, keepdim=True)
    return (total * (end - start)).sum(-1)[0].detach()


def norm_attention_scores(trace: Trace, model, pooling: str = "mean") -> torch.Tensor:
    """``[T]``: lesson 08's norm-based attention (Kobayashi et al. 2020, ``alpha_ij ||f(x_j)||``,
    :func:`~helpers.attention.compute.norm_attention`) of the last layer, heads averaged, read by
    the pooled vector as :func:`raw_attention_scores` reads the weights."""
    from helpers.attention.compute import norm_attention

    weighted = norm_attention(check_trace(trace), model)[-1].mean(0)  # [T, T]
    return _pool_rows(weighted, pooling)


@torch.no_grad()
def value_zeroing(model, trace: Trace, layer: int) -> torch.Tensor:
    """Value zeroing (Mohebbi et al. 2023) for encoder ``layer`` (1..L): ``[T, T]``, row ``i`` how
    much output token ``i`` of the layer depends on token ``j``'s **value** vector.

    The layer runs ``T`` times on its cached input, copy ``j`` with token ``j``'s value vector zeroed
    in every head (a forward hook on ``attention.self.value``; keys and queries, so the attention
    pattern, stay as they are); ``C_ij`` is the cosine distance between output ``i`` of copy ``j``
    and the unchanged output ``i``, and each row is divided by its sum. Unlike attention weights it
    accounts for the value vectors, the output projection, the residual connections, LayerNorm and
    the feed-forward block of the whole layer. As in the authors' code (github.com/hmohebbi/
    ValueZeroing, ``scoring/value_zeroing.py``): the token's own column ``j = i`` is kept, each
    layer runs on the unchanged output of the layer below, and rows are normalised to sum to 1."""
    layer = check_trace(trace).check_layer(layer, allow_embeddings=False)
    module = model.encoder.layer[layer - 1]
    T = trace.seq_len
    inputs = trace.hidden(layer - 1)[None].expand(T + 1, -1, -1)  # copies 0..T-1, and copy T unchanged
    rows = torch.arange(T, device=trace.device)

    def zero_value(mod, args, output):
        output = output.clone()
        output[rows, rows] = 0.0  # copy j: token j's value vector, all heads
        return output

    handle = module.attention.self.value.register_forward_hook(zero_value)
    try:
        out = run_layer(module, inputs, additive_mask(torch.ones(T + 1, T, dtype=torch.long, device=trace.device)))
    finally:
        handle.remove()
    out = out.double()  # 1 - cos of nearly equal vectors: keep the digits
    distance = 1.0 - F.cosine_similarity(out[:T], out[T][None], dim=-1)  # [j, i]
    scores = distance.T.clamp_min(0.0).float()
    return scores / scores.sum(-1, keepdim=True).clamp_min(1e-12)


def value_zeroing_rollout(matrices) -> torch.Tensor:
    """``[T, T]``: the per-layer value-zeroing matrices (bottom layer first) multiplied through the
    layers as attention rollout multiplies its matrices (no added identity: the residual path is
    already inside what value zeroing measures)."""
    matrices = list(matrices)
    if not matrices:
        raise ValueError("give at least one [T, T] value-zeroing matrix.")
    out = matrices[0]
    for m in matrices[1:]:
        out = m @ out
    return out


REMOVALS = ("drop", "mask", "pad")
FAITHFULNESS_FRACTIONS = (0.1, 0.2, 0.3, 0.4, 0.5)  # shares of the word tokens removed or kept


def top_tokens(scores, positions: list, fraction: float) -> list[int]:
    """The ``ceil(fraction * n)`` positions of ``positions`` (at least one) with the highest
    **signed** score (ties: the earlier position first)."""
    if not 0 < fraction <= 1:
        raise ValueError(f"fraction must lie in (0, 1], got {fraction!r}.")
    positions = list(positions)
    if not positions:
        raise ValueError("no positions to rank.")
    values = _as_float_array(scores)
    order = sorted(positions, key=lambda p: (-values[p], p))
    return order[:max(1, math.ceil(fraction * len(positions)))]


def _erased_batch(trace: Trace, removed: list, how: str, fill_id: int | None):
    """Ids, token types and attention masks ``[B, W]``: row ``r`` is ``trace``'s input with the
    positions ``removed[r]`` dropped (``how="drop"``: the sequence gets shorter) or replaced by
    ``fill_id`` (``"mask"``/``"pad"``: same length and positions, attention mask kept at 1)."""
    ids, types = trace.input_ids, trace.token_type_ids
    if how != "drop":
        rows = ids.repeat(len(removed), 1)
        for r, pos in enumerate(removed):
            rows[r, list(pos)] = fill_id
        return rows, types.repeat(len(removed), 1), torch.ones_like(rows)
    keeps = [[i for i in range(trace.seq_len) if i not in set(pos)] for pos in removed]
    width = max(len(k) for k in keeps)
    out_ids = torch.zeros(len(removed), width, dtype=torch.long, device=ids.device)
    out_types, out_mask = torch.zeros_like(out_ids), torch.zeros_like(out_ids)
    for r, keep in enumerate(keeps):
        out_ids[r, : len(keep)], out_types[r, : len(keep)], out_mask[r, : len(keep)] = ids[keep], types[keep], 1
    return out_ids, out_types, out_mask


@torch.no_grad()
def removal_probabilities(tokenizer, model, classifier, trace: Trace, target: int, removed: list, *,
                          how: str = "drop", batch: int = 128) -> torch.Tensor:
    """``[len(removed)]``: the softmax probability of ``target`` with the positions ``removed[r]``
    taken out of the input (:data:`REMOVALS`: dropped, or replaced by ``[MASK]`` or ``[PAD]``)."""
    if how not in REMOVALS:
        raise ValueError(f"how {how!r} is not valid: choose one of {REMOVALS}.")
    fill = {"mask": tokenizer.mask_token_id, "pad": tokenizer.pad_token_id}.get(how)
    out = []
    for start in range(0, len(removed), batch):
        ids, types, mask = _erased_batch(check_trace(trace), removed[start:start + batch], how, fill)
        logits = classifier(model(input_ids=ids, token_type_ids=types, attention_mask=mask).last_hidden_state, mask)
        out.append(logits.softmax(-1)[:, target])
    return torch.cat(out)


def erasure_curves(tokenizer, model, classifier, trace: Trace, target: int, rankings: dict, positions: list, *,
                   fractions=FAITHFULNESS_FRACTIONS, how: str = "drop") -> dict:
    """ERASER's comprehensiveness and sufficiency (DeYoung et al. 2020) of every ranking, one
    utterance: for each ``{name: [T] scores}`` of ``rankings`` and each fraction ``k``, with ``r`` the
    top-``k`` tokens of ``positions`` (:func:`top_tokens`, by signed score) and ``p`` the probability
    of ``target``: comprehensiveness ``p(x) - p(x without r)``, sufficiency ``p(x) - p(r only)``
    (special tokens always stay). All variants run in one batch. Returns
    ``{name: {"comprehensiveness": [K], "sufficiency": [K]}}`` (numpy) and ``"p_full"``."""
    positions, fractions = list(positions), list(fractions)
    sets = {name: [top_tokens(s, positions, k) for k in fractions] for name, s in rankings.items()}
    removed = [[]]
    for top in sets.values():
        removed += top + [[p for p in positions if p not in set(t)] for t in top]
    # Rankings often agree on their top tokens and short utterances round several k to the same
    # count: each distinct set of removed positions runs once.
    distinct = list(dict.fromkeys(tuple(sorted(r)) for r in removed))
    unique = _as_float_array(removal_probabilities(tokenizer, model, classifier, trace, target,
                                                   [list(r) for r in distinct], how=how))
    where = {r: i for i, r in enumerate(distinct)}
    probs = unique[[where[tuple(sorted(r))] for r in removed]]
    full, rest, K = probs[0], probs[1:], len(fractions)
    out = {"p_full": float(full)}
    for i, name in enumerate(sets):
        chunk = rest[2 * K * i: 2 * K * (i + 1)]
        out[name] = {"comprehensiveness": full - chunk[:K], "sufficiency": full - chunk[K:]}
    return out


def random_rankings(positions: list, seq_len: int, n: int, seed: int = 0, device=None) -> dict:
    """``{"random 0": [T], ...}``: ``n`` random scores of the ``positions`` (a random order each)."""
    gen = torch.Generator().manual_seed(seed)
    return {f"random {i}": torch.rand(seq_len, generator=gen).to(device) for i in range(n)}  # cpu: seeded draw


# -- the lesson's six methods, for one sentence ---------------------------------------------------------

METHODS = ("raw attention", "attention rollout", "norm-based attention", "gradient x input",
           "integrated gradients", "occlusion")


def sentence_logits(classifier, trace: Trace) -> torch.Tensor:
    """``[C]``: the classifier's logits on ``trace``'s last hidden state (every token real)."""
    check_trace(trace)
    mask = torch.ones(1, trace.seq_len, dtype=torch.long, device=trace.device)
    with torch.no_grad():
        return classifier(trace.hidden(trace.num_layers)[None], mask)[0]


def six_attributions(tokenizer, model, classifier, trace: Trace, target: int, *, ig_steps=IG_STEPS,
                     pooling: str = "mean") -> tuple[dict, IntegratedGradients]:
    """``({method: [T]} for the six :data:`METHODS`, the Integrated Gradients run)``: every
    attribution of the ``target`` logit on ``trace``'s sentence, Integrated Gradients from the
    [PAD] baseline with ``ig_steps`` tried in turn (:func:`integrated_gradients`)."""
    scores = attribution_scores(model, classifier, trace, target, pooling)
    scores["norm-based attention"] = norm_attention_scores(trace, model, pooling)
    ig = integrated_gradients(tokenizer, model, classifier, trace, target, steps=ig_steps)
    scores["integrated gradients"] = ig.scores
    return {m: scores[m] for m in METHODS}, ig


# -- ERASER over many utterances, against random rankings ------------------------------------------------


@dataclass
class Faithfulness:
    """ERASER's curves over many utterances: ``curves[how][method][key]`` is ``[n, K]`` (one row
    per utterance, one column per fraction of :data:`FAITHFULNESS_FRACTIONS`), ``key``
    ``"comprehensiveness"`` or ``"sufficiency"``, ``method`` one of :data:`METHODS` or ``"random"``
    (the mean of ``n_random`` random rankings of the same utterance); ``ig_gaps`` each utterance's
    Integrated-Gradients ``|delta| / |f(x) - f(x')|``."""

    texts: list
    targets: list
    curves: dict
    ig_gaps: list
    n_random: int
    fractions: tuple = FAITHFULNESS_FRACTIONS
    methods: tuple = METHODS

    def __len__(self) -> int:
        return len(self.texts)

    def aopc(self, method: str, key: str = "comprehensiveness", how: str = "drop") -> np.ndarray:
        """``[n]``: each utterance's mean over the fractions (ERASER's area over the perturbation
        curve, AOPC)."""
        if how not in self.curves or method not in self.curves[how] or key not in ("comprehensiveness",
                                                                                   "sufficiency"):
            raise ValueError(f"no curve for how={how!r}, method={method!r}, key={key!r}: how is one of "
                             f"{tuple(self.curves)}, method one of {self.methods + ('random',)}, key "
                             "'comprehensiveness' or 'sufficiency'.")
        return self.curves[how][method][key].mean(1)


def faithfulness_study(tokenizer, model, classifier, texts, *, ig_steps=IG_STEPS[:2], n_random: int = 5,
                       removals=REMOVALS, progress: bool = True) -> Faithfulness:
    """For each text: its predicted intent, the six attributions of that logit
    (:func:`six_attributions`), ``n_random`` random rankings, and every ranking's
    comprehensiveness and sufficiency curves under each way of removing a token
    (:func:`erasure_curves`). Each text is traced once (:func:`~helpers.model.trace.trace_text`,
    truncated to the model's maximum with the course's warning)."""
    from helpers.model.tokens import content_positions
    from helpers.model.trace import trace_text

    texts = list(texts)
    if not texts or not all(isinstance(t, str) and t.strip() for t in texts):
        raise ValueError("texts must be a non-empty list of non-empty strings.")
    if isinstance(n_random, bool) or not isinstance(n_random, int) or n_random < 1:
        raise ValueError(f"n_random must be a positive int, got {n_random!r}.")
    removals = tuple(removals)
    if not removals or any(h not in REMOVALS for h in removals):
        raise ValueError(f"removals must be taken from {REMOVALS}, got {removals!r}.")
    keys = ("comprehensiveness", "sufficiency")
    rows = {how: {m: {k: [] for k in keys} for m in METHODS + ("random",)} for how in removals}
    targets, gaps = [], []
    for i, text in enumerate(progress_bar(texts, desc="attributing and erasing test utterances",
                                          disable=not progress)):
        t = trace_text(tokenizer, model, text)
        target = int(sentence_logits(classifier, t).argmax())
        scores, ig = six_attributions(tokenizer, model, classifier, t, target, ig_steps=ig_steps)
        targets.append(target)
        gaps.append(abs(ig.delta) / max(abs(ig.gap), 1e-6))
        positions = content_positions(t)
        rankings = scores | random_rankings(positions, t.seq_len, n_random, seed=i + 1, device=t.device)
        for how in removals:
            curves = erasure_curves(tokenizer, model, classifier, t, target, rankings, positions, how=how)
            for k in keys:
                for m in METHODS:
                    rows[how][m][k].append(curves[m][k])
                rows[how]["random"][k].append(np.mean([curves[f"random {r}"][k] for r in range(n_random)], 0))
    curves = {how: {m: {k: np.stack(v) for k, v in c.items()} for m, c in f.items()} for how, f in rows.items()}
    return Faithfulness(texts, targets, curves, gaps, n_random)


FAITHFULNESS_METRICS = 2  # comprehensiveness and sufficiency, read in one sentence: one family


def versus_random(faith: Faithfulness, key: str = "comprehensiveness", how: str = "drop", *, seed: int = 0,
                  metrics: int = FAITHFULNESS_METRICS) -> dict:
    """``{method: Verdict}``: each method's AOPC minus the random ranking's, paired over the
    utterances (one bootstrap draw of utterances for all methods), one Bonferroni family over the
    methods times the ``metrics`` read together (:func:`faithfulness_finding` states both in one
    sentence; :func:`~helpers.common.stats.replicate_verdicts`). For comprehensiveness "higher" is
    more faithful; for sufficiency "lower"."""
    family = len(faith.methods) * metrics
    diffs = np.stack([faith.aopc(m, key, how) - faith.aopc("random", key, how) for m in faith.methods], 1)
    reps = cluster_replicates(diffs, n_boot=bootstrap_size(family), seed=seed, unit="utterances")
    verdicts = replicate_verdicts(reps, list(faith.methods), b="random ranking", family=family)
    return dict(zip(faith.methods, verdicts))


def rollout_versus_raw(faith: Faithfulness, how: str = "drop") -> Verdict:
    """Abnar & Zuidema's story as one comparison: rollout's comprehensiveness AOPC minus raw
    attention's, paired over the utterances (95 % interval, no family)."""
    diff = paired_difference_ci(faith.aopc("attention rollout", how=how), faith.aopc("raw attention", how=how))
    return verdict(diff, a="attention rollout", b="raw attention")


FAITHFUL_WORDS = {
    "comprehensiveness": {"higher": "more comprehensive", "lower": "LESS comprehensive"},
    "sufficiency": {"lower": "more sufficient", "higher": "LESS sufficient"},
}


def faithful_word(v: Verdict, key: str) -> str:
    """The verdict of a method against the random ranking in the metric's own words ("more
    comprehensive", "LESS sufficient", "cannot tell")."""
    return FAITHFUL_WORDS[key].get(v.kind, "cannot tell")


# -- the lesson's findings in plain words, and its claims table -------------------------------------------


def _names(items) -> str:
    items = list(items)
    if not items:
        return "none"
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def completeness_finding(ig: IntegratedGradients, faith: Faithfulness | None = None) -> tuple[str, list]:
    """Does Integrated Gradients' sum reach ``f(x) - f(x')`` on the lesson's sentence (and on the
    utterances of ``faith``)? Plain sentence and "How we know" lines."""
    sentence = (f"Integrated Gradients' attributions add up to the change of the logit on the lesson's sentence "
                f"after {ig.steps} steps" if ig.converged else
                f"After {ig.steps} steps Integrated Gradients' attributions still miss the change of the logit on the "
                "lesson's sentence by more than the tolerance")
    details = [f"f(x) - f(x') = {ig.gap:.3f}; convergence delta {ig.delta:+.2e} (tolerance {IG_TOLERANCE:.0%} of "
               "|f(x) - f(x')|); steps tried: " + ", ".join(f"{n} ({d:+.1e})" for n, d in ig.history)]
    if faith is not None:
        below = sum(g < IG_TOLERANCE for g in faith.ig_gaps)
        sentence += f", and on {below} of the {len(faith)} test utterances of the faithfulness test"
        details.append(f"test utterances: largest |delta| / |f(x) - f(x')| = {max(faith.ig_gaps):.2%}")
    return sentence + ".", details


def faithfulness_finding(comprehensiveness: dict, sufficiency: dict, faith: Faithfulness) -> tuple[str, list]:
    """Which methods beat a random choice of tokens (:func:`versus_random` for both metrics), in
    plain words, and the "How we know" lines."""
    better_c = [m for m, v in comprehensiveness.items() if v.kind == "higher"]
    better_s = [m for m, v in sufficiency.items() if v.kind == "lower"]
    worse = [m for m in faith.methods if comprehensiveness[m].kind == "lower" or sufficiency[m].kind == "higher"]
    unsure = [m for m in faith.methods if m not in better_c and m not in better_s and m not in worse]
    sentence = (f"On {len(faith)} test utterances, removing the top tokens hurts the prediction more than removing "
                f"random ones for {_names(better_c)}; keeping only the top tokens keeps it better than random ones "
                f"for {_names(better_s)}")
    if worse:
        sentence += f"; {_names(worse)} did worse than random on at least one of the two"
    if unsure:
        sentence += f"; for {_names(unsure)} we cannot tell either way"
    family = next(iter(comprehensiveness.values())).family
    details = [f"each method's AOPC minus the random ranking's ({faith.n_random} random rankings per utterance, "
               f"averaged), paired over the {len(faith)} utterances (resampled), Bonferroni over {family} "
               f"comparisons ({len(faith.methods)} methods x the two measures this sentence reads)"]
    details += [f"comprehensiveness: {comprehensiveness[m].text}" for m in faith.methods]
    details += [f"sufficiency: {sufficiency[m].text}" for m in faith.methods]
    return sentence + ".", details


def rollout_finding(v: Verdict, n: int) -> tuple[str, list]:
    """Abnar & Zuidema's story (:func:`rollout_versus_raw`) in plain words."""
    if v.kind == "higher":
        sentence = "Rollout's top tokens matter more to the decision than raw attention's"
    elif v.kind == "lower":
        sentence = "Raw attention's top tokens matter more to the decision than rollout's"
    else:
        sentence = f"With {n} utterances we cannot tell whether rollout or raw attention picks the tokens that matter more"
    size = abs(v.difference.estimate)
    if v.differs:
        sentence += f": removing them costs about {size:.2f} more of the predicted intent's probability, on average"
    return sentence + ".", [f"comprehensiveness AOPC, tokens dropped: {v.text}"]


STORIES = {  # key: (the popular story, the published finding with its paper and model)
    "completeness": ("Integrated Gradients' attributions add up to the change of the logit",
                     "Sundararajan et al. 2017 (completeness, an axiom of the method; image and text models)"),
    "faithfulness": ("attribution methods point at the tokens the decision used",
                     "DeYoung et al. 2020 (ERASER; BERT- and LSTM-based models on seven English tasks): the metrics, "
                     "not a ranking of these methods"),
    "rollout": ("attention rollout explains a decision better than raw attention",
                "Abnar & Zuidema 2020 (a small Transformer they trained for subject-verb agreement; applied to BERT): "
                "rollout and flow agree better with blank-out and input gradients than raw attention"),
}
