"""Worked solutions for lesson 12's exercises (interventions)."""

import torch

from helpers.common.stats import bootstrap_ci
from helpers.interventions.compute import continue_from, pruning_curve


def solution_1(model, classifier, some_run, labels, head_means: dict, gap) -> float:
    """Mean ablation with our own pre-hook: head ``gap[1]`` of layer ``gap[0] + 1`` replaced by its
    mean context; the mean true-class logit drop (unchanged minus mean-ablated) over ``some_run``."""
    layer, h = gap[0] + 1, gap[1]
    d = model.config.hidden_size // model.config.num_attention_heads
    mean = head_means[layer][h * d:(h + 1) * d]

    def mean_hook(module, args):
        context = args[0].clone()  # [batch, seq, A * d]
        context[..., h * d:(h + 1) * d] = mean  # the head's mean context, at every token
        return (context, *args[1:])

    y = torch.as_tensor(labels, device=some_run.attention_mask.device)
    mask = some_run.attention_mask
    with torch.no_grad():
        base = classifier(some_run.hidden(model.config.num_hidden_layers), mask)
        handle = model.encoder.layer[layer - 1].attention.output.register_forward_pre_hook(mean_hook)
        try:
            changed = classifier(continue_from(model, some_run.hidden(0), mask, 0), mask)
        finally:
            handle.remove()
    drop = (base - changed).gather(1, y[:, None])[:, 0]
    return float(drop.mean())


def solution_2(model, classifier, prune_run, prune_labels, by_importance, half: float) -> float:
    """The most important heads first: reverse the order, remove half of them together."""
    correct, _ = pruning_curve(model, classifier, prune_run, prune_labels, list(by_importance)[::-1], (half,))
    return float(correct.mean())


def solution_3(patch: dict, pooled) -> float:
    """Width of a bootstrap over the pairs of patched layer 1 (as if independent) divided by the width
    of the lesson's interval, which resamples words (``pooled[1]``)."""
    pairs = bootstrap_ci(torch.cat([p["follows"][:, 1] for p in patch.values()]).cpu().numpy())
    return (pairs.high - pairs.low) / (pooled[1].high - pooled[1].low)


def solution_4(skip_logits, y) -> int:
    """The layer (from 1) whose skip lowers the true-class logit most on average. The prediction is
    the learner's own; the measurement is this layer."""
    items = torch.arange(skip_logits.shape[1], device=skip_logits.device)
    true = skip_logits[:, items, y]  # [L + 1, N]: each item's true-class logit
    drops = (true[0] - true[1:]).mean(-1)  # row l - 1: layer l skipped
    return int(drops.argmax()) + 1
