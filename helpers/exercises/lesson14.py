"""Checkers for lesson 14 (what each layer knows, what fine-tuning changes)."""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np
import torch

from helpers.exercises import Feedback, article, as_number, correct, no_answer, wrong
from helpers.exercises.prediction import number_note
from helpers.finetuning.compute import linear_cka


def _as_ids(values, n: int, num_classes: int, what: str):
    try:
        array = np.asarray(values.tolist() if isinstance(values, torch.Tensor) else values)
    except Exception:  # noqa: BLE001 - the learner's value, report its type
        given = type(values).__name__
        return None, wrong(f"{what} should be a list or tensor of class ids, you gave {article(given)}.",
                           "Return one int per word.")
    if array.shape != (n,):
        return None, wrong(f"{what} has shape {array.shape}, expected ({n},): one label per word.",
                           "Return one label per occurrence, in the order of `words`.")
    if not np.issubdtype(array.dtype, np.integer) or array.min() < 0 or array.max() >= num_classes:
        return None, wrong(f"{what} must hold class ids 0..{num_classes - 1}.", "Draw ids, not tag names or probabilities.")
    return array, None


def check_exercise_1(control_task, words, labels, num_classes: int) -> Feedback:
    """``control_task(words, labels, num_classes, seed)``: one label per word type, drawn from
    the empirical distribution of ``labels``, the same for every occurrence."""
    if control_task is None:
        return no_answer("Define `def control_task(words, labels, num_classes, seed): ...` returning one id per word.")
    if not callable(control_task):
        given = type(control_task).__name__
        return wrong(f"control_task should be a function, you gave {article(given)}.",
                     "Define `def control_task(words, labels, num_classes, seed): ...`.")
    labels = np.asarray(torch.as_tensor(labels, device="cpu").tolist())  # cpu: read into NumPy
    outputs = []
    for seed in (0, 1):
        try:
            got = control_task(list(words), torch.as_tensor(labels), num_classes, seed)  # cpu: drawn with a CPU generator
        except Exception as err:  # noqa: BLE001 - the learner's code, report what broke
            return wrong(f"control_task(..., seed={seed}) raised {type(err).__name__}: {err}",
                         "It receives the words (list of str), the labels (tensor of ids), num_classes and a seed.")
        got, problem = _as_ids(got, len(words), num_classes, "the control labels")
        if problem is not None:
            return problem
        outputs.append(got)
    got = outputs[0]
    by_type, by_exact = defaultdict(set), defaultdict(set)
    for w, c in zip(words, got):
        by_type[w.lower()].add(int(c))
        by_exact[w].add(int(c))
    if any(len(v) > 1 for v in by_type.values()):
        if all(len(v) == 1 for v in by_exact.values()):
            return wrong("'The' and 'the' get different control labels: the word types are case-sensitive.",
                         "Key the types on w.lower() (the model is uncased).")
        clash = next(w for w, v in by_type.items() if len(v) > 1)
        return wrong(f"the word {clash!r} gets different control labels at different occurrences.",
                     "Draw one label per word *type* (a dict type -> label), then look every occurrence up.")
    if np.array_equal(got, labels):
        return wrong("these are the real task labels, not a control task.", "Draw the labels at random.")
    if np.array_equal(outputs[0], outputs[1]):
        return wrong("seed 0 and seed 1 give the same labels: the seed is ignored.",
                     "Use torch.Generator().manual_seed(seed) (or np.random.default_rng(seed)).")
    empirical = np.bincount(labels, minlength=num_classes) / len(labels)
    first_of_type = {}
    for w, c in zip(words, got):
        first_of_type.setdefault(w.lower(), int(c))
    drawn = np.bincount(list(first_of_type.values()), minlength=num_classes) / len(first_of_type)
    distance = 0.5 * np.abs(drawn - empirical).sum()
    if distance > 0.15:
        uniform = 0.5 * np.abs(np.full(num_classes, 1 / num_classes) - empirical).sum()
        hint = ("Draw from the empirical distribution (torch.bincount(labels) / len(labels)), not uniformly."
                if abs(distance - uniform) < 0.1 else "Each type's label is drawn from bincount(labels) / len(labels).")
        return wrong(f"the labels drawn per word type are far from the empirical label distribution "
                     f"(total variation {distance:.2f}).", hint)
    return correct(f"{len(by_type)} word types, one random label each, distributed like the real labels.")


def check_exercise_2(cka, before: torch.Tensor, after: torch.Tensor) -> Feedback:
    """``cka(X, Y)``: linear CKA of two ``[n, H]`` matrices (feature-space form, column-centred)."""
    if cka is None:
        return no_answer("Define `def cka(X, Y): ...` returning a float.")
    if not callable(cka):
        given = type(cka).__name__
        return wrong(f"cka should be a function, you gave {article(given)}.", "Define `def cka(X, Y): ...`.")
    L = before.shape[0] - 1
    for l in sorted({1, L}):
        X, Y = before[l].double(), after[l].double()
        try:
            got = float(cka(X, Y))
        except Exception as err:  # noqa: BLE001 - the learner's code
            return wrong(f"cka(X, Y) raised {type(err).__name__}: {err}", "X and Y are [n, H] tensors; return a float.")
        expected = linear_cka(X, Y)
        if math.isclose(got, expected, rel_tol=1e-5, abs_tol=1e-7):
            continue
        uncentred = float(torch.linalg.matrix_norm(Y.T @ X) ** 2
                          / (torch.linalg.matrix_norm(X.T @ X) * torch.linalg.matrix_norm(Y.T @ Y)))
        if math.isclose(got, uncentred, rel_tol=1e-5):
            return wrong("you did not centre the columns.", "Subtract X.mean(0) and Y.mean(0) first.")
        Xc, Yc = X - X.mean(0), Y - Y.mean(0)
        not_squared = float(torch.linalg.matrix_norm(Yc.T @ Xc)
                            / (torch.linalg.matrix_norm(Xc.T @ Xc) * torch.linalg.matrix_norm(Yc.T @ Yc)))
        if math.isclose(got, not_squared, rel_tol=1e-5):
            return wrong("the numerator must be squared.", "||Yc^T Xc||_F ** 2 / (||Xc^T Xc||_F ||Yc^T Yc||_F).")
        return wrong(f"layer {l}: your CKA is {got:.4f}, which is not the linear CKA of the two layers.",
                     "Centre both, then ||Yc^T Xc||_F^2 / (||Xc^T Xc||_F ||Yc^T Yc||_F) (torch.linalg.matrix_norm).")
    return correct("your CKA matches on the first and the last layer.")


def check_exercise_3(value, model, tuned) -> Feedback:
    """Relative weight change of the last encoder layer, all its parameters taken together."""
    if value is None:
        return no_answer("Compute sqrt(sum ||dW||^2) / sqrt(sum ||W||^2) over every parameter of the last layer.")
    try:
        value = float(value)
    except (TypeError, ValueError):
        given = type(value).__name__
        return wrong(f"give a number, you gave {article(given)}.", "Convert with float(...).")
    old = dict(model.encoder.layer[-1].named_parameters())
    new = dict(tuned.encoder.layer[-1].named_parameters())
    diff = {k: (new[k].detach().double() - old[k].detach().double()) for k in old}
    expected = math.sqrt(sum(float(d.pow(2).sum()) for d in diff.values())
                         / sum(float(p.detach().double().pow(2).sum()) for p in old.values()))
    if math.isclose(value, expected, rel_tol=1e-4):
        return correct(f"the last layer moved by {expected:.4f} of its size.")
    norm = lambda ps: math.sqrt(sum(float(p.detach().double().pow(2).sum()) for p in ps))  # noqa: E731
    if math.isclose(value, abs(norm(new.values()) / norm(old.values()) - 1), rel_tol=1e-3):
        return wrong("that is the change of the norm, not the norm of the change.", "Subtract the weights first: ||W_after - W_before||.")
    per_param = np.mean([float(diff[k].norm() / old[k].detach().double().norm()) for k in old])
    if math.isclose(value, per_param, rel_tol=1e-4):
        return wrong("you averaged per-parameter ratios.", "Take all parameters together: sum the squares first, then one ratio.")
    if math.isclose(value, 100 * expected, rel_tol=1e-4):
        return wrong("that is a percentage: give the ratio itself.", "Divide by 100.")
    if len(model.encoder.layer) > 1:
        below = dict(model.encoder.layer[-2].named_parameters())
        below_tuned = dict(tuned.encoder.layer[-2].named_parameters())
        d2 = sum(float((below_tuned[k].detach().double() - below[k].detach().double()).pow(2).sum()) for k in below)
        if math.isclose(value, math.sqrt(d2 / norm(below.values()) ** 2), rel_tol=1e-4):
            return wrong("that is the layer below the last one (encoder.layer[-2]).",
                         "The last encoder layer is encoder.layer[-1] = encoder.layer[L - 1], whose output is "
                         "hidden(L).")
    return wrong(f"your value {value:.5f} is not the relative change of the last layer.",
                 "Loop over model.encoder.layer[-1].named_parameters() and the tuned layer's, sum squared differences and squared weights.")


def lookup_accuracies(words, control, sentence, train_ids, test_ids) -> tuple[list[float], float]:
    """The test accuracy on the control task of a lookup table from each lower-cased training word
    type to its control label, unseen types getting the most common training control label: one
    value per tied most-common label. Also the share of test words whose type was seen."""
    control = np.asarray(torch.as_tensor(control, device="cpu").tolist())  # cpu: counting
    sentence = np.asarray(torch.as_tensor(sentence, device="cpu").tolist())  # cpu: counting
    train = np.isin(sentence, list(train_ids))
    test = np.isin(sentence, list(test_ids))
    table = {words[i].lower(): int(control[i]) for i in np.flatnonzero(train)}
    counts = np.bincount(control[train])
    modes = np.flatnonzero(counts == counts.max())
    test_idx = np.flatnonzero(test)
    seen = np.array([words[i].lower() in table for i in test_idx])
    accs = [float(np.mean([table.get(words[i].lower(), int(m)) == control[i] for i in test_idx])) for m in modes]
    return accs, float(seen.mean())


def check_exercise_4(prediction, answer, features, control, train_ids, test_ids) -> Feedback:
    """Predict, then measure: the control-task test accuracy of a word-type lookup table (the
    simplest memoriser). Only the measurement is graded."""
    if answer is None:
        return no_answer("Write your prediction first, then set answer_4 to a float between 0 and 1: the "
                         "lookup table's accuracy on the control labels of the test words.")
    value, bad = as_number(answer, "answer_4")
    if bad is not None:
        return bad
    words = list(features.words)
    accs, seen = lookup_accuracies(words, control, features.sentence, train_ids, test_ids)
    if any(abs(value - a) < 1e-6 for a in accs):
        a = next(a for a in accs if abs(value - a) < 1e-6)
        return correct(f"a lookup of word types scores {a:.1%} on the control task; {seen:.1%} of the test "
                       "words have a type seen in training, and memorising those is all the control task "
                       "rewards. " + number_note(prediction, a))
    if any(abs(value - 100 * a) < 1e-4 for a in accs):
        return wrong("that is a percentage: give a fraction between 0 and 1.", "Divide by 100.")
    if abs(value - seen) < 1e-6:
        return wrong("that is the share of test words whose type was seen in training: the unseen ones still "
                     "get the most common label, and some of those guesses are right.",
                     "Score every test word, seen or not.")
    if abs(value - 1.0) < 1e-6:
        return wrong("1.0 is the lookup's accuracy on the training words it was built from.",
                     "Score the words of the test sentences (test_ids).")
    control_np = np.asarray(torch.as_tensor(control, device="cpu").tolist())  # cpu: counting
    sentence = np.asarray(torch.as_tensor(features.sentence, device="cpu").tolist())  # cpu: counting
    train, test = np.isin(sentence, list(train_ids)), np.isin(sentence, list(test_ids))
    exact = {words[i]: int(control_np[i]) for i in np.flatnonzero(train)}
    counts = np.bincount(control_np[train])
    cased = [float(np.mean([exact.get(words[i], int(m)) == control_np[i] for i in np.flatnonzero(test)]))
             for m in np.flatnonzero(counts == counts.max())]
    if any(abs(value - c) < 1e-6 for c in cased):
        return wrong("your table is case-sensitive: 'The' and 'the' are one type in the control task.",
                     "Key the table on w.lower().")
    return wrong(f"{value:.3f} is not the lookup table's test accuracy.",
                 "Build {word.lower(): control label} from the words of the training sentences; give unseen "
                 "types the most common training control label; score the test words.")
