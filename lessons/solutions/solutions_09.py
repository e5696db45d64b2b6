"""Worked solutions for lesson 09's exercises."""

import torch

from helpers.common.stats import bootstrap_ci, mcnemar


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


def solution_4(patch: dict, pooled) -> float:
    """Width of a bootstrap over the pairs of patched layer 1 (as if independent) divided by the width
    of the lesson's interval, which resamples words (``pooled[1]``)."""
    pairs = bootstrap_ci(torch.cat([p["follows"][:, 1] for p in patch.values()]).cpu().numpy())
    return (pairs.high - pairs.low) / (pooled[1].high - pooled[1].low)


def solution_5(skip_correct) -> list[int]:
    """Layers whose skip lowers the accuracy: each skip against nothing skipped on the same items
    (Tango's interval), the L skips read as one Bonferroni family."""
    n_layers = len(skip_correct) - 1
    tests = [mcnemar(skip_correct[layer], skip_correct[0]) for layer in range(1, n_layers + 1)]
    return [layer for layer, t in enumerate(tests, start=1)
            if t.verdict("skipped", "unchanged", family=n_layers).kind == "lower"]


def solution_6(tokenizer, model, classifier, trace, scores, target: int) -> float:
    """Comprehensiveness at k = 20%: drop the ceil(0.2 n) word tokens with the highest signed score,
    run again, and subtract the predicted intent's probabilities."""
    import math

    words = [i for i, t in enumerate(trace.tokens) if t not in (tokenizer.cls_token, tokenizer.sep_token)]
    k = max(1, math.ceil(0.2 * len(words)))
    top = sorted(words, key=lambda i: (-float(scores[i]), i))[:k]
    ids = trace.input_ids.tolist()

    def probability(keep):
        x = torch.tensor([[ids[i] for i in keep]], device=trace.input_ids.device)
        with torch.no_grad():
            logits = classifier(model(input_ids=x).last_hidden_state, torch.ones_like(x))
        return float(logits.softmax(-1)[0, target])

    return probability(range(len(ids))) - probability([i for i in range(len(ids)) if i not in top])


def solution_7(skip_logits, y) -> int:
    """The layer (from 1) whose skip lowers the true-class logit most on average. The prediction is
    the learner's own; the measurement is this layer."""
    items = torch.arange(skip_logits.shape[1], device=skip_logits.device)
    true = skip_logits[:, items, y]  # [L + 1, N]: each item's true-class logit
    drops = (true[0] - true[1:]).mean(-1)  # row l - 1: layer l skipped
    return int(drops.argmax()) + 1
