"""Lesson 13 (:mod:`helpers.attribution`): Integrated Gradients, with Captum and written out by hand.

* :func:`integrated_gradients` -- Captum's ``LayerIntegratedGradients`` on the word embeddings
  from a stated baseline (:data:`IG_BASELINES`, :func:`baseline_ids`), with its convergence delta
  (:class:`IntegratedGradients`); :func:`integrated_gradients_by_embedding`;
* :func:`integrated_gradients_by_hand` -- the same integral on a Gauss-Legendre path
  (:func:`gauss_legendre_path`), to check Captum; :func:`gradient_x_input_captum` -- Captum's
  ``InputXGradient`` beside the course's :func:`~helpers.attribution.compute.gradient_x_input`.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import torch

from helpers.model.layers import continue_from
from helpers.model.trace import Trace, check_trace


def _check_target(target, logits: torch.Tensor) -> int:
    n = logits.shape[-1]
    if isinstance(target, bool) or not isinstance(target, (int, np.integer)) or not 0 <= target < n:
        raise ValueError(f"target {target!r} is not a class of this head: valid classes are 0 to {n - 1}.")
    return int(target)


def _trace_inputs(trace: Trace) -> dict:
    ids = trace.input_ids[None]
    return {"input_ids": ids, "token_type_ids": trace.token_type_ids[None], "attention_mask": torch.ones_like(ids)}


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
