"""Worked solutions for lesson 13's exercises (attribution)."""

import math

import torch

from helpers.attribution.compute import IG_STEPS, integrated_gradients


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


def solution_2(tokenizer, model, classifier, trace, scores, target: int) -> float:
    """Comprehensiveness at k = 20%: drop the ceil(0.2 n) word tokens with the highest signed score,
    run again, and subtract the predicted intent's probabilities."""
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


def solution_3(tokenizer, model, classifier, trace, target: int) -> int:
    """Integrated Gradients from the [MASK] baseline; the word token (not [CLS]/[SEP]) with the highest
    signed score. The prediction ("same" or "different" from [PAD]'s top token) is the learner's own."""
    ig = integrated_gradients(tokenizer, model, classifier, trace, target, baseline="mask", steps=IG_STEPS)
    words = [i for i, t in enumerate(trace.tokens) if t not in (tokenizer.cls_token, tokenizer.sep_token)]
    return max(words, key=lambda i: (float(ig.scores[i]), -i))
