"""Lesson 12 (:mod:`helpers.interventions`): remove a head.

* :func:`ablate_head` / :func:`ablation_gate` -- one head's context vector zeroed through the gates
  of ``helpers/model/layers.py`` (:func:`~helpers.model.layers.gated_heads`);
* :func:`ablate_every_head` -> :class:`HeadAblation` -- every head of every layer, in batches, from
  cached hidden states, zero- or mean-ablated (:func:`mean_head_contexts`); its verdicts
  (:meth:`HeadAblation.changes`: Bonferroni over ``L x A``; :meth:`HeadAblation.tied_with`: heads
  the data cannot rule out as the worst);
* gradient head importance (Michel et al. 2019) -- :func:`head_gate_gradients`, the same gates with
  ``requires_grad``; :func:`normalize_by_layer`, their per-layer l2 normalisation.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from helpers.common.progress import progress as progress_bar
from helpers.common.stats import extreme_family
from helpers.interventions.outcomes import OutcomeChange, outcome_changes
from helpers.interventions.runs import CachedRun, _labels, length_buckets
from helpers.model.layers import check_head, check_layer, continue_from, gated_heads, model_sizes
from helpers.model.trace import device_of, model_device


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
