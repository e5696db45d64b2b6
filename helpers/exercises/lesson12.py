"""Checkers for lesson 12 (interventions: ablate, prune, skip, patch)."""

from __future__ import annotations

import torch

from helpers.common.stats import bootstrap_ci
from helpers.exercises import Feedback, as_index, as_number, correct, no_answer, wrong
from helpers.exercises.prediction import index_note, prediction_note
from helpers.interventions.compute import HeadAblation, PruningComparison, pruning_curve, word_cluster_shares
from helpers.model.trace import device_of


def mean_ablation_drop(mean_ablation: HeadAblation, gap) -> float:
    """The mean true-class logit drop when head ``gap = (layer - 1, head)`` is set to its mean,
    over the test items of ``mean_ablation`` (the lesson's one per class: utterances and intents for
    BANKING77, headlines and topics for THUCNews)."""
    row, head = (int(v) for v in gap)
    return float(mean_ablation.logit_drop_items()[:, row, head].mean())


def check_exercise_1(answer, mean_ablation: HeadAblation, zero_some: HeadAblation, gap) -> Feedback:
    """Build it yourself: the mean true-class logit drop with head ``gap`` (``(layer - 1, head)``)
    replaced by its mean context, measured with the learner's own pre-hook; checked against the
    lesson's ``ablate_every_head(..., fill=head_means)``."""
    if answer is None:
        return no_answer("Set answer_1 to a float: the mean true-class logit drop (unchanged minus "
                         "mean-ablated) over the some_run test items.")
    answer, bad = as_number(answer, "answer_1")
    if bad is not None:
        return bad
    expected = mean_ablation_drop(mean_ablation, gap)
    zeroed = mean_ablation_drop(zero_some, gap)
    close = lambda value: abs(answer - value) <= 1e-3 + 0.01 * abs(value)  # noqa: E731
    layer, head = int(gap[0]) + 1, int(gap[1])
    if close(expected):
        return correct(f"{expected:+.3f}: with layer {layer}, head {head} set to its mean the true class loses "
                       f"{expected:+.3f} of its logit on average; set to zero it loses {zeroed:+.3f}.")
    if close(-expected):
        return wrong("the sign is flipped.", "The drop is the unchanged logit minus the mean-ablated one.")
    if close(zeroed):
        return wrong("that is the head set to zero, not to its mean.",
                     "Replace the head's columns by head_means[layer][h * d:(h + 1) * d] instead of 0.")
    row = mean_ablation.logit_drop_items().mean(0)
    off = [(r, h) for r, h in ((int(gap[0]) - 1, head), (int(gap[0]) + 1, head), (int(gap[0]), head - 1),
                               (int(gap[0]), head + 1))
           if 0 <= r < row.shape[0] and 0 <= h < row.shape[1]]
    if any(close(float(row[r, h])) for r, h in off):
        return wrong("that is a neighbouring head or layer.",
                     f"gap = {tuple(int(v) for v in gap)} is (layer - 1, head): hook model.encoder.layer[gap[0]] and "
                     "the columns gap[1] * d to (gap[1] + 1) * d.")
    return wrong(f"{answer:+.3f} is not the mean drop with that head mean-ablated.",
                 "Clone the context in the pre-hook, overwrite head h's d columns with its mean, return (context, "
                 "*args[1:]); run continue_from(...) from the embeddings with the hook registered, then classifier; "
                 "gather each item's true-class logit and average unchanged minus changed.")


def reversed_accuracy(model, classifier, run, labels, by_importance, fraction: float) -> float:
    """The accuracy on ``run`` with the first ``fraction`` of the heads of ``by_importance`` reversed
    (most important first) removed together."""
    correct_, _ = pruning_curve(model, classifier, run, labels, list(by_importance)[::-1], (fraction,))
    return float(correct_.mean())


def check_exercise_2(prediction, answer, model, classifier, run, labels, by_importance, fraction: float,
                     comparison: PruningComparison) -> Feedback:
    """Predict, then measure: the accuracy at ``fraction`` removed when the **most** important heads
    go first. The measurement is graded; the prediction (below / inside / above the random orders)
    only gets a comment."""
    if answer is None:
        return no_answer("Write your prediction first, then set answer_2 to a float: the accuracy (0 to 1) with "
                         "the reversed order at HALF removed.")
    answer, bad = as_number(answer, "answer_2")
    if bad is not None:
        return bad
    expected = reversed_accuracy(model, classifier, run, labels, by_importance, fraction)
    low, high = float(comparison.random_scores.min()), float(comparison.random_scores.max())
    where = "below" if expected < low else "above" if expected > high else "inside"
    note = prediction_note(prediction, where, ("below", "inside", "above"))
    if abs(answer - expected) <= 1e-6 or abs(answer - 100 * expected) <= 0.05:
        scale = "" if abs(answer - expected) <= 1e-6 else " (as a percentage; a share 0-1 was asked, fine)"
        return correct(f"{expected:.1%}{scale}: the random orders keep {low:.1%} to {high:.1%}, the least-important-"
                       f"first order {comparison.score:.1%}; most important first lands {where} them. " + note)
    forward = comparison.score
    if abs(answer - forward) <= 1e-6:
        return wrong("that is the lesson's order, least important first.", "Reverse it: by_importance[::-1].")
    return wrong(f"{answer:.3f} is not the accuracy with the reversed order.",
                 "pruning_curve(model, classifier, prune_run, prune_labels, by_importance[::-1], (HALF,)) returns "
                 "(correct, loss); average correct.")


def check_exercise_3(answer, patch: dict) -> Feedback:
    """The width of a bootstrap over the pairs of patched layer 1 (``bootstrap_ci`` with its
    defaults) divided by the width of the lesson's interval resampling words
    (:func:`word_cluster_shares`)."""
    if answer is None:
        return no_answer("Set answer_3 to a float: the pair-bootstrap width divided by the word-bootstrap width.")
    if len(patch) < 2:
        return wrong("fewer than two ambiguous words were patched with this vocabulary.",
                     "Run the lesson with an English model.")
    answer, bad = as_number(answer, "answer_3")
    if bad is not None:
        return bad
    pooled, _, _ = word_cluster_shares(patch, "follows")

    def ratio(layer: int) -> float:
        pairs = bootstrap_ci(torch.cat([p["follows"][:, layer] for p in patch.values()]).cpu().numpy())
        width = pooled[layer].high - pooled[layer].low
        return (pairs.high - pairs.low) / width if width > 0 else float("nan")

    expected = ratio(1)
    if abs(answer - expected) <= 0.05 * abs(expected) + 1e-9:
        return correct(f"{expected:.2f}: resampling pairs as if independent gives an interval "
                       + (f"{1 / expected:.1f} times too narrow" if expected < 1 else "no narrower here")
                       + f" -- the {sum(len(p['pairs']) for p in patch.values())} pairs come from only "
                       f"{len(patch)} words.")
    if abs(answer - 1 / expected) <= 0.05 / abs(expected) + 1e-9:
        return wrong("that is the inverse ratio.", "Divide the pair-bootstrap width by the word-bootstrap width.")
    if pooled[0].high > pooled[0].low and abs(answer - ratio(0)) <= 0.05 * abs(ratio(0)) + 1e-9:
        return wrong("that is column 0, the embeddings.", "Patched layer 1 is column 1 of 'follows'.")
    return wrong(f"{answer:.2f} is not the ratio of the two widths.",
                 "Stack every word's follows[:, 1], bootstrap_ci with its defaults; width = high - low; divide "
                 "by the width of pooled[1].")


def skip_logit_drops(skip_logits, y) -> torch.Tensor:
    """``[L]``: mean over the test items of the true-class logit with nothing skipped minus with
    layer ``l`` skipped (index ``l - 1``)."""
    logits = torch.as_tensor(skip_logits, device=device_of(skip_logits)).float()
    y = torch.as_tensor(y, device=logits.device).long()
    true = logits.gather(-1, y.expand(logits.shape[0], -1).unsqueeze(-1)).squeeze(-1)  # [L + 1, N]
    return (true[0] - true[1:]).mean(-1)


def check_exercise_4(prediction, answer, skip_logits, y) -> Feedback:
    """Predict, then measure: the layer (counted from 1) whose skip lowers the true-class logit
    most on average. The measurement is graded; the predicted layer only gets a comment."""
    if answer is None:
        return no_answer("Write your prediction first, then set answer_4 to an int: the layer (from 1) "
                         "whose skip lowers the true-class logit most on average.")
    drops = skip_logit_drops(skip_logits, y)
    n_layers = len(drops)
    layer, bad = as_index(answer, "The layer")
    if bad is not None:
        return bad
    expected = int(drops.argmax()) + 1
    if layer == expected:
        return correct(f"skipping layer {expected} lowers the true-class logit most, by "
                       f"{float(drops[expected - 1]):.2f} on average. " + index_note(prediction, expected))
    if layer == expected - 1:
        return wrong("off by one: that is the row of skip_logits[1:], or encoder.layer's index.",
                     "Row l of skip_logits is layer l skipped (row 0: nothing skipped); layer l is "
                     "encoder.layer[l - 1].")
    if not 1 <= layer <= n_layers:
        return wrong(f"layers are counted from 1 to {n_layers} here.", "Row 0 of skip_logits is nothing skipped.")
    if n_layers > 1 and layer == int(drops.argmin()) + 1:
        return wrong(f"skipping layer {layer} hurts the true-class logit the *least*.",
                     "Take the largest drop (full minus skipped), not the smallest.")
    logits = torch.as_tensor(skip_logits, device=drops.device)
    correct_ = (logits.argmax(-1) == torch.as_tensor(y, device=drops.device)).float()
    acc_drop = correct_[0] - correct_[1:]
    acc_layers = (acc_drop.mean(-1) == acc_drop.mean(-1).max()).nonzero().flatten() + 1
    if layer in acc_layers.tolist():
        return wrong("that layer's skip costs the most *accuracy*; the exercise asks for the true-class "
                     "logit.", "Gather each item's true-class logit from skip_logits, then compare.")
    return wrong(f"skipping layer {layer} is not the one that lowers the true-class logit most.",
                 "skip_logits[l, i, y[i]] is item i's true-class logit with layer l skipped: subtract it "
                 "from row 0's, average over the items, take the largest.")
