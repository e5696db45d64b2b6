"""Worked solutions for lesson 09's exercises."""

import torch

from helpers.interventions.compute import pair_cluster_bootstrap


def solution_1(ablation) -> tuple[int, int]:
    """The head whose removal lowers the true-class logit most on average; layers from 1."""
    drops = ablation.logit_drop_items().mean(0)  # [L, A], row 0 is layer 1
    layer, head = divmod(int(drops.argmax()), drops.shape[1])
    return layer + 1, head


def solution_2(grads: torch.Tensor) -> torch.Tensor:
    """Michel et al.: I_h = E_x |dL(x)/d xi_h| -- absolute value per item first, then the mean."""
    return grads.abs().mean(0)


def my_rollout(attentions) -> torch.Tensor:
    """Attention rollout (Abnar & Zuidema 2020) from a list of [A, T, T] maps, bottom layer first."""
    n = attentions[0].shape[-1]
    eye = torch.eye(n, device=attentions[0].device)
    rollout = eye
    for att in attentions:
        mixed = 0.5 * att.mean(0) + 0.5 * eye  # heads averaged, residual as an identity path
        mixed = mixed / mixed.sum(-1, keepdim=True)  # each row a distribution again
        rollout = mixed @ rollout  # the new layer mixes what the layers below produced
    return rollout


def solution_4(patch: dict) -> int | None:
    """The lesson's rule on the first word alone: the first patched layer whose interval (a
    cluster bootstrap over that word's sentences) lies above one half; None if there is none."""
    intervals = pair_cluster_bootstrap([next(iter(patch.values()))], "follows")  # one Interval per layer 0..L
    return next((layer for layer, ci in enumerate(intervals) if ci.low > 0.5), None)
