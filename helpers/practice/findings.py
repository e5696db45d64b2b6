"""Lesson 11's tables and printouts (:mod:`helpers.practice`), beside the numbers they phrase:
the timing verdict (:func:`time_finding`), how far fine-tuning turned the features
(:func:`direction_change`), the training table of statuses, its fold and its status sentence
(:func:`training_rows`, :func:`training_status`, :func:`training_details`, :func:`status_finding`),
the strategies' table (:func:`strategy_rows`), what the study can detect (:func:`power_finding`), memory (:func:`training_memory_text`, :func:`peak_memory_text`) and int8
(:func:`quantization_note`).
"""

from __future__ import annotations

import torch

from helpers.common.stats import sign_test_p
from helpers.practice.compute import compare_times, median_range, random_partners, relative_change


def time_finding(a_name: str, a, b_name: str, b, unit: str = "s") -> tuple[str, list[str], str]:
    """``(sentence, details, kind)``: :func:`compare_times` told in plain words first -- "the frozen
    half takes about 0.62x as long as full per step on this machine (faster in all 9 turns)" or "on
    this machine we cannot tell whether ... is faster" -- with :func:`compare_times`'s text (the turns,
    the ratios, the sign test) as the details; ``kind`` is ``"faster"``, ``"slower"`` (``b`` against
    ``a``) or ``"inconclusive"``."""
    text = compare_times(a_name, a, b_name, b, unit)
    ratios = [float(y) / float(x) for x, y in zip(a, b)]
    rr = median_range(ratios)
    above, below = sum(r > 1 for r in ratios), sum(r < 1 for r in ratios)
    n = len(ratios)
    p = sign_test_p(above, above + below) if above + below else 1.0
    if p < 0.05:
        kind = "slower" if above > below else "faster"
        sentence = (f"{b_name} takes about {rr.estimate:.2f}x as long as {a_name} on this machine ({kind} in "
                    f"{max(above, below)} of {n} turns).")
    else:
        kind = "inconclusive"
        sentence = (f"On this machine we cannot tell whether {b_name} or {a_name} is faster: in the median turn "
                    f"{b_name} took {rr.estimate:.2f}x as long, but the turns do not agree enough.")
    return sentence, [text], kind


def direction_change(reference: torch.Tensor, changed: torch.Tensor, seed: int = 0) -> dict:
    """Scale-free: how far each sentence's feature turned (``[N, H]`` before and after), beside how
    far apart two different sentences lie before, and, apart from that, how much its length
    changed. Medians over the sentences of: ``cosine`` between a sentence's feature before and
    after; ``cosine_between`` of two different sentences before (each with a random partner,
    :func:`random_partners`); ``length_ratio`` ``||after|| / ||before||``; and, for comparison,
    ``relative_change`` (:func:`relative_change`, which mixes turning with a change of length)."""
    if reference.shape != changed.shape or reference.ndim != 2 or reference.shape[0] < 2:
        raise ValueError(f"need two [N >= 2, H] feature matrices of the same shape, got {tuple(reference.shape)} "
                         f"and {tuple(changed.shape)}.")
    ref, new = reference.double(), changed.double().to(reference.device)
    partners = random_partners(len(ref), seed).to(ref.device)
    cos = torch.nn.functional.cosine_similarity
    return {"cosine": float(cos(ref, new, dim=-1).median()),
            "cosine_between": float(cos(ref, ref[partners], dim=-1).median()),
            "length_ratio": float((new.norm(dim=-1) / ref.norm(dim=-1).clamp(min=1e-12)).median()),
            "relative_change": float(relative_change(ref, new).median())}


# ----------------------------------------------------------------------------- lesson 11's tables and printouts
def training_rows(study) -> list[dict]:
    """One row per strategy of ``study`` (a :class:`~helpers.finetuning.compute.FinetuneStudy`) for
    lesson 11's table of how every strategy trained, as statuses a reader can scan: the setting the
    dev split chose (the learning rate of most draws, or the probe's L2 strength), what the runs did
    (:func:`training_status`: "moved", "stayed at the probe", with how many converged) and the
    median dev score at step 0 and at the weights kept. How the choice was made, the optimiser
    steps and the training accuracy are :func:`training_details`, for the fold beneath."""
    import numpy as np

    from helpers.finetuning.compute import FROZEN

    by_accuracy = getattr(study.config, "monitor", "loss") == "accuracy"
    rows = []
    for s in study.strategies:
        recs = study.records(s)
        if s == FROZEN:
            choice = recs[0].choice
        else:
            lrs = [r.lr for r in study.runs[s]]
            common = max(sorted(set(lrs)), key=lrs.count)
            choice = f"lr {common:g}" + ("" if lrs.count(common) == len(lrs)
                                         else f" ({lrs.count(common)} of {len(lrs)} draws)")
        if by_accuracy:
            dev = (f"{100 * np.median([r.step0[1] for r in recs]):.1f} \u2192"
                   f" {100 * np.median([r.kept[1] for r in recs]):.1f} %")
        else:
            dev = f"{np.median([r.step0[0] for r in recs]):.3f} \u2192 {np.median([r.kept[0] for r in recs]):.3f}"
        rows.append({
            "strategy": s,
            "chosen on the dev split": choice,
            "status": training_status(study, s),
            ("dev accuracy" if by_accuracy else "dev loss") + ", step 0 \u2192 kept (median)": dev,
        })
    return rows


def training_status(study, strategy: str) -> str:
    """What the runs of ``strategy`` did, in words: ``"moved; converged"`` when every run kept
    weights past its start and met its criterion, otherwise the counts (``"moved in 4 of 5; 3
    converged, 2 out of steps"``); a run that kept its start "stayed at the probe" (a strategy
    whose head starts from the linear probe) or "stayed at its start"; the probe itself "converged"
    (or how many of its fits did)."""
    from helpers.common.training import BUDGET_EXHAUSTED, CONVERGED, FIRST_EVALUATION
    from helpers.finetuning.compute import FROZEN
    from helpers.finetuning.strategies import FROM_PROBE

    runs, recs = study.runs[strategy], study.records(strategy)
    n = len(recs)
    done = sum(r.status == CONVERGED for r in recs)
    ends = [f"{done} converged" if done < n else "converged"]
    ends += [f"{k} {word}" for k, word in (
        (sum(r.status == FIRST_EVALUATION for r in recs), "stopped at the first evaluation"),
        (sum(r.status == BUDGET_EXHAUSTED for r in recs), "out of steps")) if k]
    if strategy == FROZEN:
        return ", ".join(ends) if done < n else "converged"
    moved = sum(r.moved for r in runs)
    start = "stayed at the probe" if strategy in FROM_PROBE else "stayed at its start"
    if moved == n:
        head = "moved"
    elif moved == 0:
        head = start
    else:
        head = f"moved in {moved} of {n} ({n - moved} {start})"
    return f"{head}; " + ", ".join(ends)


def training_details(study) -> list[str]:
    """The fold beneath lesson 11's training table, one line per strategy: how the dev split chose
    (each draw's learning rate, with how many lie at the grid's edge and how many draws tied; or the
    first draw's grid of dev scores), the optimiser steps and the accuracy on the runs' own
    training utterances."""
    from collections import Counter

    from helpers.finetuning.compute import FROZEN

    lines = []
    for s in study.strategies:
        first, recs, steps = study.runs[s][0], study.records(s), study.steps(s)
        if s == FROZEN:
            choice = f"{recs[0].choice}, chosen on the dev split"
        elif study.config.tune == "each seed":
            ties = sum(r.record.get("choice", "").startswith("no choice") for r in study.runs[s])
            counts = Counter(f"{r.lr:g}" for r in study.runs[s])
            choice = "lr per draw: " + ", ".join(f"{lr} x{n}" for lr, n in sorted(counts.items(), key=lambda x: float(x[0])))
            edge = sum(r.lr in (min(study.config.lrs), max(study.config.lrs)) for r in study.runs[s])
            if edge and len(study.config.lrs) > 2:  # the grid may not hold the best rate: say so
                choice += f"; {edge} at the grid's edge"
            choice += f" ({ties} tie{'s' if ties != 1 else ''}: no choice)" if ties else ""
        else:
            grid = "; ".join(f"{lr:g}: {loss:.3f}" for lr, (loss, *_) in first.grid.items()) if first.grid \
                else recs[0].choice
            choice = f"lr {first.lr:g}, chosen on the first draw (its dev loss per lr: {grid})"
        run_steps = "" if s == FROZEN else f"; {_span(steps)} optimiser steps"
        lines.append(f"{s}: {choice}{run_steps}; training accuracy "
                     f"{_span_pct([r.train_accuracy for r in recs])}")
    return lines


def _span(values) -> str:
    """``"171-300"``, or ``"300"`` when every value is the same."""
    return f"{min(values)}" if min(values) == max(values) else f"{min(values)}-{max(values)}"


def _span_pct(values) -> str:
    """``"93-100 %"``, or ``"100 %"`` when every value rounds alike."""
    low, high = f"{100 * min(values):.0f}", f"{100 * max(values):.0f}"
    return f"{low} %" if low == high else f"{low}-{high} %"


def moved_line(moved: dict, reliable: float = 0.8) -> str:
    """One line on whether fine-tuning left its start, from ``moved``
    (:func:`~helpers.finetuning.history.moved_counts`: ``{strategy: (runs moved, runs)}``): every
    strategy's count when each moved in at least ``reliable`` of its runs, otherwise the strategies
    that did not, named with their counts and said to say little in the comparison."""
    if not moved:
        raise ValueError("moved holds no fine-tuning strategy.")
    counts = "; ".join(f"{s}: {m} of {n} runs moved" for s, (m, n) in moved.items())
    stuck = {s: (m, n) for s, (m, n) in moved.items() if m < reliable * n}
    if not stuck:
        return (f"Fine-tuning moved off its start in at least {reliable:.0%} of the runs of every strategy ({counts}): "
                "the comparison below is about fine-tuning.")
    return ("On this run fine-tuning did not reliably move off its start ("
            + "; ".join(f"{s}: {m} of {n} runs moved" for s, (m, n) in stuck.items())
            + "): for those strategies the comparison below says little"
            + ("." if len(stuck) == len(moved) else
               "; the others: " + "; ".join(f"{s}: {m} of {n}" for s, (m, n) in moved.items() if s not in stuck)
               + "."))


def status_finding(study) -> tuple[str, list[str]]:
    """``(sentence, details)`` for :func:`helpers.common.claims.show_finding`: how many of the
    fine-tuning runs of ``study`` (every strategy but the frozen probe) moved from their starting
    point, converged, stopped at their first evaluation or ran out of steps; the details state the
    convergence criterion (``study.config``), the linear probes' status and, with gradual
    unfreezing in the study, the steps at which it had opened every layer."""
    from helpers.common.training import BUDGET_EXHAUSTED, CONVERGED, FIRST_EVALUATION, status_summary
    from helpers.finetuning.compute import FROZEN, GRADUAL

    tuned = [r for s in study.strategies if s != FROZEN for r in study.runs[s]]
    counts = {k: sum(r.status == k for r in tuned) for k in (CONVERGED, FIRST_EVALUATION, BUDGET_EXHAUSTED)}
    stayed = [r for r in tuned if not r.moved]
    sentence = (f"Of the {len(tuned)} fine-tuning runs, {len(tuned) - len(stayed)} kept weights past their"
                f" starting point and {len(stayed)} kept the start itself (not fine-tuned);"
                f" {counts[CONVERGED]} converged, {counts[FIRST_EVALUATION]} stopped at their first evaluation"
                " (nothing after it improved on the best)"
                f" and {counts[BUDGET_EXHAUSTED]} ran out of steps.")
    details = [f"criterion: {study.config.criterion()}",
               "not fine-tuned, by strategy: " + ("none" if not stayed else "; ".join(
                   f"{s} {sum(not r.moved for r in study.runs[s])} of {len(study.runs[s])}"
                   for s in study.strategies if s != FROZEN and any(not r.moved for r in study.runs[s])))
               + " (their runs stay out of the strategy verdicts)"]
    if FROZEN in study.runs:
        probes = study.records(FROZEN)
        details.append(f"the linear probes: {status_summary(probes)} ({probes[0].criterion})")
    if GRADUAL in study.runs:
        opened = [r.opened_at for r in study.runs[GRADUAL]]
        details.append(("gradual unfreezing opened every layer at step "
                        + (f"{min(opened)}" if min(opened) == max(opened) else f"{min(opened)}-{max(opened)}"))
                       if None not in opened else "gradual unfreezing did not open every layer in some runs")
    return sentence, details


def strategy_rows(study) -> list[dict]:
    """One row per strategy of ``study`` for lesson 11's table of test accuracy and cost: the
    accuracy over every draw's test utterances, the standard deviation and range of the per-draw
    accuracies (``"-"`` with one draw), the median and range of the wall-clock seconds per run
    (:func:`median_range`) and the number of trainable parameters."""
    rows = []
    for s in study.strategies:
        a = study.accuracy(s)
        spread = a.seed_spread()
        rows.append({
            "strategy": s,
            "test accuracy": f"{100 * a.estimate:.1f} %",
            "seed SD": "-" if spread is None else f"{100 * spread.sd:.1f}pt",
            "seed range": "-" if spread is None else f"{100 * min(spread.values):.1f}-{100 * max(spread.values):.1f}%",
            "s/run: median [range]": median_range(study.seconds(s)).format(".1f"),
            "trainable": f"{study.runs[s][0].trainable_params:,}",
        })
    return rows


def power_finding(mdd: float, need: int | None, n_draws: int, n_test: int, family: int,
                  items: str = "utterances") -> tuple[str, list[str]]:
    """``(sentence, details)``: what a design of ``n_draws`` draws of ``n_test`` test utterances can
    detect, told before any run -- ``mdd`` the smallest detectable difference (a fraction:
    :func:`helpers.finetuning.compute.detectable_difference`, Bonferroni over ``family``
    comparisons), against the literature's differences of about a point (0.01); ``need`` the draws
    a 1-point difference would need (:func:`~helpers.finetuning.compute.seeds_needed`; ``None``:
    more than it searched); ``items`` names the test items ("headlines" on THUCNews)."""
    tail = ("detectable here." if mdd <= 0.01 else "not detectable here"
            + (f" -- a 1-point difference would need about {need} draws of this size." if need else "."))
    reach = (f"only differences of about {100 * mdd:.1f} points or more" if mdd < 1 else
             f"no difference at all (the formula asks for {100 * mdd:.0f} points, more than the 100 an accuracy"
             " can differ by)")
    sentence = (f"With {n_draws} draws of {n_test} test {items}, this design detects (4 times in 5) {reach}"
                " between two strategies; the literature's differences, about a point, are " + tail)
    details = [
        f"assumed before any run: two strategies disagree on 10 % of the test {items}; their accuracy"
        " difference varies by 1 point (standard deviation) from draw to draw",
        f"80 % power, Bonferroni over the {family} comparisons with the probe, Student t with {n_draws - 1}"
        f" degree{'s' if n_draws != 2 else ''} of freedom (the seeds x items bootstrap's small-sample rule)",
        "so a comparison below that cannot come out 'higher' or 'lower' often: 'we cannot tell' is the"
        " expected answer for differences of a point",
    ]
    return sentence, details


def training_memory_text(clf, state: dict, memory: dict, method: str) -> str:
    """Lesson 11's printout under the figure of a training step's memory: ``clf``'s parameters and
    the bytes per parameter measured for weights + gradients + optimizer state (``state``, from
    :func:`training_state_bytes` after one step; parameters without a gradient counted), then per
    mode of ``memory`` (``{"plain": SavedForBackward, "checkpointed": ...}``, from
    :func:`saved_for_backward`) the activations, the layer forwards and the saved references to
    weights, and how much checkpointing (switched on by ``method``) shrank the activations and the
    whole step's memory (weights, gradients, optimizer state and activations)."""
    mib = 2 ** 20
    n_params = sum(p.numel() for p in clf.parameters())
    unused = sum(p.numel() for p in clf.parameters() if p.grad is None)
    lines = [
        f"{n_params:,} parameters; measured {sum(state.values()) / n_params:.1f} bytes per parameter for weights"
        f" + gradients + AdamW state:\n  {', '.join(f'{k} {v / mib:.0f} MiB' for k, v in state.items())};"
        f" {unused:,} parameters got no gradient\n  (not used by this classifier), so no optimizer state either"
    ]
    for mode, m in memory.items():
        lines.append(f"{mode}: activations {m.activation_bytes / mib:.1f} MiB in {m.activation_tensors} tensors;"
                     f" layer forwards {m.layer_calls_forward} + {m.layer_calls_backward} recomputed in backward\n"
                     f"  also saved: {m.parameter_tensors} references to weights ({m.parameter_bytes / mib:.0f} MiB,"
                     " not extra)")
    plain, ckpt = memory["plain"].activation_bytes, memory["checkpointed"].activation_bytes
    total = {mode: sum(state.values()) + m.activation_bytes for mode, m in memory.items()}
    lines.append(f"with {method}(): the activations shrink {plain / ckpt:.1f}x, the whole step's memory"
                 f" {total['plain'] / total['checkpointed']:.2f}x;\n  without it the activations are"
                 f" {plain / total['plain']:.0%} of the step's memory at this batch\n  (the activations grow with"
                 " batch size and length, the other parts do not)")
    return "\n".join(lines)


def peak_memory_text(peaks: dict, batch_size: int, gradient_bytes: int, items: str = "utterances") -> str:
    """Lesson 11's printout of :func:`peak_step_memory`: ``peaks`` is ``{input length: {"plain": bytes,
    "checkpointed": bytes}}`` for batches of ``batch_size`` utterances; one line per length (both
    peaks, their ratio, beside the ``gradient_bytes`` one step creates), then a wrapped sentence
    comparing the ratio at the shortest and the longest length."""
    import textwrap

    mib = 2 ** 20
    ratio = {length: peak["plain"] / peak["checkpointed"] for length, peak in peaks.items()}
    lines = [f"{batch_size} {items} x {length} tokens: peak memory of one step, plain {peak['plain'] / mib:.1f}"
             f" MiB, checkpointed {peak['checkpointed'] / mib:.1f} MiB ({ratio[length]:.2f}x); the gradients alone"
             f" are {gradient_bytes / mib:.1f} MiB" for length, peak in peaks.items()]
    short, long = min(peaks), max(peaks)
    lines.append(textwrap.fill(
        f"so checkpointing lowered the peak {ratio[short]:.2f}x at {short} tokens and {ratio[long]:.2f}x at {long}:"
        " where the gradients are most of the peak (short inputs, small batches), shrinking the saved activations"
        " barely moves it; the longer the inputs and the larger the batch, the more it pays.",
        110, subsequent_indent="    "))
    return "\n".join(lines)


def quantization_note(torch_version: str, messages: list[str]) -> str:
    """One wrapped line on what ``quantize_dynamic`` said in this torch version: the start of its
    deprecation warning if it gave one (``messages`` from :func:`quantize_int8_with_warnings`),
    otherwise that it gave none (and how many other warnings)."""
    import textwrap

    deprecated = [w for w in messages if "deprecat" in w.lower()]
    if deprecated:
        said = f"warned that it is deprecated: {deprecated[0][:160]}"
    else:
        said = "raised no deprecation warning" + (f" ({len(messages)} other warning(s))" if messages else "")
    return textwrap.fill(f"torch {torch_version}: quantize_dynamic {said}", 110, subsequent_indent="    ")
