"""Lesson 12 (:mod:`helpers.interventions`): remove many heads, in an order or at random.

* :func:`pruning_curve` -- heads removed cumulatively in a given order (:data:`PRUNE_FRACTIONS`);
* :func:`random_orders`, :func:`pruning_outcomes` -- many random orders, every order of one share
  removed in one batch;
* :func:`pruning_comparison` -> :class:`PruningComparison` -- a Monte Carlo rank test and a
  two-level bootstrap over the test items and the random orders.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from helpers.common.progress import progress as progress_bar
from helpers.common.stats import Interval, Replicates, Verdict, verdict
from helpers.interventions.ranking import _as_float_array
from helpers.interventions.runs import CachedRun, _labels, length_buckets
from helpers.model.layers import check_head, check_layer, continue_from, model_sizes


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
