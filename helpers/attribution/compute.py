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
* all six for one sentence -- :func:`six_attributions`; a test item the head gets right and one it
  gets wrong, to show beside it -- :func:`right_and_wrong`;
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

Where the code lives: this module holds the scores of one decision (raw attention, rollout,
norm-based attention, gradient x input, occlusion, value zeroing) and all six for one sentence
(:func:`six_attributions`); Integrated Gradients, with Captum and by hand, is in
``helpers/attribution/gradients.py`` (re-exported here); ERASER over many utterances in
``erasure.py`` and the lesson in plain words in ``findings.py`` (both build on this module).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from helpers.common.progress import progress as progress_bar
from helpers.common.stats import (Verdict, bootstrap_size, cluster_replicates, paired_difference_ci,
                                  replicate_verdicts, verdict)
from helpers.model.layers import additive_mask, continue_from, run_layer
from helpers.model.trace import Trace, check_trace, device_of
from helpers.attribution.gradients import (IG_BASELINES, IG_STEPS, IG_TOLERANCE, IntegratedGradients, _check_target,  # noqa: F401
                                           _trace_inputs, baseline_ids, gauss_legendre_path,
                                           gradient_x_input_captum, integrated_gradients,
                                           integrated_gradients_by_embedding, integrated_gradients_by_hand,
                                           logits_from_ids)

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


# -- test items the head gets right and wrong, to show beside the lesson's sentence -------------------


@dataclass
class ClassifiedExamples:
    """The first test item the head classifies right and the first it gets wrong, each
    ``(text, true class, predicted class)`` as class ids (``None`` when there is none); ``correct``
    of the ``n_draw`` items of the lesson's test draw are right; ``extra``: items read beyond the
    draw, from the rest of the benchmark's test split, to find a wrong one."""

    right: tuple | None
    wrong: tuple | None
    correct: int
    n_draw: int
    extra: int = 0


@torch.no_grad()
def right_and_wrong(tokenizer, model, task, *, more: int = 256, batch_size: int = 64) -> ClassifiedExamples:
    """Classify ``task``'s test draw (lesson 12's :class:`~helpers.interventions.compute.BankingSetup`)
    with its head and pick the first item it gets right and the first it gets wrong, in the
    draw's order. Where it gets every one right, read on through the benchmark's other test items
    of the same classes (a seeded order, ``batch_size`` at a time, at most ``more``) for a wrong one."""
    import random

    from helpers.interventions.compute import pooled_features

    def predict(texts):
        feats = pooled_features(tokenizer, model, texts, max_length=task.max_len, progress=False)
        return task.head(feats).argmax(-1).tolist()

    test = task.test
    found = {"right": None, "wrong": None}
    predicted = predict(test.texts)
    for text, label, p in zip(test.texts, test.labels, predicted):
        key = "right" if p == label else "wrong"
        found[key] = found[key] or (text, label, p)
    correct, extra = sum(p == y for p, y in zip(predicted, test.labels)), 0
    if found["wrong"] is None and task.benchmark is not None:
        rest = task.benchmark.load("test").only(test.names)
        seen = set(test.texts)
        rows = [i for i in range(len(rest)) if rest.texts[i] not in seen]
        random.Random(0).shuffle(rows)
        rows = rows[:more]
        for start in range(0, len(rows), batch_size):
            chunk = rows[start:start + batch_size]
            extra += len(chunk)
            for i, p in zip(chunk, predict([rest.texts[i] for i in chunk])):
                if p != rest.labels[i]:
                    found["wrong"] = (rest.texts[i], rest.labels[i], p)
                    break
            if found["wrong"] is not None:
                break
    return ClassifiedExamples(found["right"], found["wrong"], correct, len(test), extra)
