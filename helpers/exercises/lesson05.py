"""Checkers for lesson 05 (pre-training a tiny BERT)."""

from __future__ import annotations

import math

import torch

from helpers.common.stats import clopper_pearson
from helpers.exercises import Feedback, as_number, correct, no_answer, wrong
from helpers.pretrain.data import IGNORE, masking_counts

EXPECTED = {"chosen": 0.15, "mask": 0.80, "changed": 0.10, "kept": 0.10}


def check_exercise_1(bert_mask, sampler, tokenizer, n_batches: int = 20) -> Feedback:
    """``bert_mask(input_ids, special_tokens_mask, mask_token_id, vocab_size, generator)`` ->
    ``(inputs, labels)``: every share must be consistent (exact 99.9 % interval) with 15 / 80 / 10 / 10 %."""
    if bert_mask is None:
        return no_answer("Define `def bert_mask(input_ids, special_tokens_mask, mask_token_id, vocab_size, generator)`.")
    if not callable(bert_mask):
        return wrong(f"bert_mask should be a function, you gave a {type(bert_mask).__name__}.",
                     "Define it with `def bert_mask(...)`.")
    gen = torch.Generator().manual_seed(123)
    totals = dict.fromkeys(["candidates", "chosen", "mask", "changed", "kept"], 0)
    for _ in range(n_batches):
        b = sampler.batch(32)
        ids, special = b["input_ids"], b["special_tokens_mask"]
        try:
            out = bert_mask(ids.clone(), special.clone(), tokenizer.mask_token_id, len(tokenizer), gen)
            inputs, labels = (torch.as_tensor(x).cpu() for x in out)  # cpu: compared with CPU batches
        except Exception as err:  # noqa: BLE001 - the learner's code, report what broke
            return wrong(f"bert_mask raised {type(err).__name__}: {err}",
                         "It gets LongTensors input_ids and a bool special_tokens_mask of the same shape, two ints "
                         "and a torch.Generator; return (inputs, labels).")
        if inputs.shape != ids.shape or labels.shape != ids.shape:
            return wrong(f"inputs and labels must have the input's shape {tuple(ids.shape)}.",
                         "Return two tensors shaped like input_ids.")
        if not ((labels == IGNORE) | (labels == ids)).all():
            return wrong("some labels are neither -100 nor the original id.",
                         "labels = the original id where a position is chosen, -100 everywhere else.")
        if (inputs[labels == IGNORE] != ids[labels == IGNORE]).any():
            return wrong("positions that are not predicted (label -100) were changed in the inputs.",
                         "Only chosen positions may become [MASK] or a random id.")
        try:
            c = masking_counts(ids, inputs, labels, special, tokenizer.mask_token_id)
        except ValueError as err:
            return wrong(str(err), "Never choose [CLS], [SEP] or [PAD]: use special_tokens_mask.")
        for k in totals:
            totals[k] += c[k]
    if totals["chosen"] == 0:
        return wrong("no position was chosen.", "Choose each non-special position with probability 0.15.")
    for part, whole in (("chosen", "candidates"), ("mask", "chosen"), ("changed", "chosen"), ("kept", "chosen")):
        iv = clopper_pearson(totals[part], totals[whole], level=0.999)
        if not iv.contains(EXPECTED[part]):
            return wrong(f"the share '{part}' among '{whole}' is {iv.percent()} (99.9 % interval), "
                         f"not consistent with {EXPECTED[part]:.0%}.",
                         "15 % of the non-special positions; of those 80 % [MASK], 10 % random id, 10 % unchanged.")
    return correct(f"over {totals['candidates']:,} positions your masking gives the BERT proportions "
                   f"(chosen {totals['chosen'] / totals['candidates']:.1%}), labels -100 elsewhere.")


def check_exercise_2(uniform_loss, predicted, run, tokenizer, batch) -> Feedback:
    """``uniform_loss``: the cross-entropy of a uniform guess over the vocabulary, ``ln V`` (graded).
    ``predicted``: the learner's prediction of the untrained model's held-out loss, written before
    section 5 -- never graded: the feedback sets it beside the measured loss."""
    from helpers.exercises.prediction import number_note
    from helpers.pretrain.compute import losses

    if uniform_loss is None:
        return no_answer("Write `uniform_loss = ...`: the loss of giving every one of the V entries probability 1/V.")
    value, problem = as_number(uniform_loss, "uniform_loss")
    if problem is not None:
        return problem
    v = len(tokenizer)
    if abs(value - math.log(v)) > 1e-3:
        if abs(value - math.log2(v)) < 1e-3:
            return wrong("that is the loss in bits (log base 2); PyTorch's cross-entropy uses the natural log.",
                         "Use math.log, not math.log2.")
        return wrong(f"{value:.3f} is not the cross-entropy of a uniform guess over this vocabulary.",
                     "The right token gets probability 1/V; cross-entropy is -ln(probability of the right token).")
    with torch.no_grad():
        measured, _ = losses(run.load(0), batch, batch["inputs"], batch["labels"])
    note = number_note(predicted, float(measured), " nats")
    return correct(f"ln V = {math.log(v):.3f} for V = {v}; the untrained model measured {float(measured):.3f} on "
                   f"held-out text. {note}")


def check_exercise_3(baseline_top1, counts, batch) -> Feedback:
    """Top-1 accuracy of always guessing the most frequent id, on the scored labels of ``batch``."""
    if baseline_top1 is None:
        return no_answer("Write `baseline_top1 = ...` (a share between 0 and 1).")
    value, problem = as_number(baseline_top1, "baseline_top1")
    if problem is not None:
        return problem
    labels = torch.as_tensor(batch["labels"]).cpu()  # cpu: statistics
    scored = labels[labels != IGNORE]
    top = int(torch.as_tensor(counts).argmax())  # cpu: one index
    truth = float((scored == top).double().mean())
    if 1 < value <= 100 and abs(value / 100 - truth) < 1e-6:
        return wrong("that looks like a percentage.", "Give a share between 0 and 1.")
    if abs(value - truth) < 1e-6:
        return correct(f"{truth:.4f}: the share of scored positions whose answer is the most frequent token.")
    return wrong(f"{value:.4f} is not the baseline's top-1 accuracy on these positions.",
                 "Only positions with a label other than -100 count; the guess is counts.argmax() everywhere.")
