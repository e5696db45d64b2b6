"""Checkers for lesson 15 (a Chinese BERT layer by layer)."""

from __future__ import annotations

import numpy as np
import torch

from helpers.exercises import Feedback, correct, no_answer, wrong


def check_exercise_1(word_starts, sentences) -> Feedback:
    """``word_starts(words)`` must give the character offsets where the words begin, for every
    segmented sentence of ``sentences`` (:func:`helpers.chinese.compute.load_zh_words`)."""
    if word_starts is None:
        return no_answer("Define `def word_starts(words): ...` returning a set of offsets.")
    if not callable(word_starts):
        return wrong(f"word_starts should be a function, you gave a {type(word_starts).__name__}.",
                     "Define `def word_starts(words): ...`.")
    for s in sentences:
        try:
            got = word_starts(list(s.words))
        except Exception as err:  # noqa: BLE001 - the learner's code, report what broke
            return wrong(f"word_starts raised {type(err).__name__}: {err}", "Walk the words, adding up their lengths.")
        try:
            got = {int(v) for v in got}
        except (TypeError, ValueError):
            return wrong(f"word_starts returned {got!r}, not a collection of integers.", "Return a set of ints.")
        want = s.word_starts()
        if got != want:
            if got == {o + len(w) for o, w in zip(sorted(want), s.words)}:
                return wrong(f"for {' | '.join(s.words)} you gave the offsets where words end.",
                             "A word starts where the previous one ended: the first starts at 0.")
            return wrong(f"for {' | '.join(s.words)} your offsets differ from where the words begin.",
                         "Offset of a word = total length of the words before it.")
    return correct(f"your offsets match the word starts of all {len(sentences)} sentences.")


def check_exercise_2(cls_correct, mean_correct, f_train, f_test, train_set, test_set, seeds) -> Feedback:
    """``cls_correct``: ``[seeds, n_test]`` outcomes of heads trained on the last layer's [CLS]
    features. Checked against heads the checker trains the same way; then both pooling schemes
    are compared paired on the same test utterances (exact McNemar over the items)."""
    from helpers.classify.comparisons import SeededAccuracy, compare_two_paired
    from helpers.classify.compute import correct_per_item, train_head

    hint = "Train one head per seed on f_train.layer(L, 'cls'), then stack correct_per_item(head, ...) per seed."
    if cls_correct is None:
        return no_answer(hint)
    try:
        got = torch.as_tensor(np.asarray(cls_correct)).bool().cpu()  # cpu: the learner's outcomes
    except (TypeError, ValueError):
        return wrong(f"cls_correct must be a [seeds, n_test] boolean tensor, you gave a {type(cls_correct).__name__}.",
                     hint)
    seeds = list(seeds)
    if tuple(got.shape) != (len(seeds), len(test_set)):
        return wrong(f"cls_correct has shape {tuple(got.shape)}, expected ({len(seeds)}, {len(test_set)}).", hint)
    L = f_train.num_layers
    X_train, X_test = f_train.layer(L, "cls"), f_test.layer(L, "cls")
    want = torch.stack([correct_per_item(train_head(X_train, train_set.labels, train_set.num_classes, seed=s,
                                                    progress=False), X_test, test_set.labels) for s in seeds]).cpu()
    mean = torch.as_tensor(mean_correct).bool().cpu()  # cpu: outcomes
    if torch.equal(got, mean):
        return wrong("these are the mean-pooled outcomes from the lesson.", "Use the 'cls' pooling, not 'mean'.")
    agree = (got == want).double().mean().item()
    if agree < 0.97:
        return wrong(f"your outcomes agree with [CLS] heads on only {agree:.0%} of the items.", hint)
    text = compare_two_paired("[CLS]", SeededAccuracy(got, seeds), "mean pooling", SeededAccuracy(mean, seeds))
    return correct(f"{text}. Compare with your prediction.")


def check_exercise_3(answer, report) -> Feedback:
    """``answer = (layer, lower)``: the layer (0..L) with the highest selectivity in ``report``, and
    whether its task accuracy is clearly **lower** than the most accurate layer's (it is not among
    ``report.tied_with_best("accuracy")``). Hewitt & Liang's caveat: selectivity can rise because the
    control falls, not because the task is read better."""
    hint = ("Give (layer, lower): the layer whose report.selectivity[l].estimate is largest, and True when that "
            "layer is not in report.tied_with_best('accuracy').")
    if answer is None:
        return no_answer(hint)
    if not isinstance(answer, (tuple, list)) or len(answer) != 2:
        return wrong(f"give a pair (layer, lower), you gave {answer!r}.", hint)
    layer, lower = answer
    if isinstance(layer, torch.Tensor) and layer.ndim == 0:
        layer = layer.item()
    if isinstance(layer, bool) or not isinstance(layer, (int, np.integer)):
        return wrong(f"give the layer as an int, you gave a {type(layer).__name__}.", hint)
    if not isinstance(lower, (bool, np.bool_)):
        return wrong(f"lower must be True or False, you gave {lower!r}.", hint)
    layer, lower = int(layer), bool(lower)
    n = len(report.selectivity)
    if not 0 <= layer < n:
        return wrong(f"layer {layer} does not exist: valid layers are 0 (embeddings) to {n - 1}.", hint)
    best = report.best_layer("selectivity")
    if layer != best:
        if layer == report.best_layer("accuracy"):
            return wrong("that layer has the highest task accuracy, not the highest selectivity.",
                         "Selectivity = task accuracy - control accuracy: look at report.selectivity.")
        return wrong(f"layer {layer} is not the most selective one.", hint)
    top = report.best_layer("accuracy")
    tied = report.tied_with_best("accuracy")
    really_lower = best not in tied
    if lower != really_lower:
        return wrong(f"layer {best} is the most selective one, but your 'lower' is not what the paired comparison "
                     "says.", "Compare with report.tied_with_best('accuracy'): the layers not shown lower than the "
                     "most accurate one.")
    acc, ctl = report.accuracy, report.control
    why = (f"its task accuracy ({acc[best].percent()}) is clearly lower than layer {top}'s ({acc[top].percent()}); "
           f"selectivity rose because the control accuracy fell ({ctl[top].percent()} at layer {top}, "
           f"{ctl[best].percent()} at layer {best}). Hewitt & Liang's caveat: the most selective layer is not the one "
           "that reads word starts best" if really_lower else
           f"its task accuracy ({acc[best].percent()}) is not shown lower than the best ({acc[top].percent()} at "
           f"layer {top}), so here high selectivity and high accuracy go together")
    return correct(f"layer {best}, selectivity {report.selectivity[best].percent()}; {why}.")
