"""Lesson 13 (:mod:`helpers.attribution`): is a ranking faithful? ERASER's comprehensiveness and sufficiency.

* :func:`erasure_curves` -- the top tokens of a ranking dropped, or replaced by [MASK]/[PAD]
  (:data:`REMOVALS`), at :data:`FAITHFULNESS_FRACTIONS`; :func:`random_rankings`;
* :func:`faithfulness_study` -> :class:`Faithfulness` -- every method over many utterances against
  random rankings; :func:`versus_random` -- each method against the random ranking paired over the
  utterances, one Bonferroni family over the methods; :func:`rollout_versus_raw`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from helpers.attribution.compute import METHODS, _as_float_array, _erased_batch, sentence_logits, six_attributions
from helpers.attribution.gradients import IG_STEPS
from helpers.common.progress import progress as progress_bar
from helpers.common.stats import (Verdict, bootstrap_size, cluster_replicates, paired_difference_ci,
                                  replicate_verdicts, verdict)
from helpers.model.trace import Trace, check_trace


REMOVALS = ("drop", "mask", "pad")


FAITHFULNESS_FRACTIONS = (0.1, 0.2, 0.3, 0.4, 0.5)  # shares of the word tokens removed or kept


def top_tokens(scores, positions: list, fraction: float) -> list[int]:
    """The ``ceil(fraction * n)`` positions of ``positions`` (at least one) with the highest
    **signed** score (ties: the earlier position first)."""
    if not 0 < fraction <= 1:
        raise ValueError(f"fraction must lie in (0, 1], got {fraction!r}.")
    positions = list(positions)
    if not positions:
        raise ValueError("no positions to rank.")
    values = _as_float_array(scores)
    order = sorted(positions, key=lambda p: (-values[p], p))
    return order[:max(1, math.ceil(fraction * len(positions)))]


@torch.no_grad()
def removal_probabilities(tokenizer, model, classifier, trace: Trace, target: int, removed: list, *,
                          how: str = "drop", batch: int = 128) -> torch.Tensor:
    """``[len(removed)]``: the softmax probability of ``target`` with the positions ``removed[r]``
    taken out of the input (:data:`REMOVALS`: dropped, or replaced by ``[MASK]`` or ``[PAD]``)."""
    if how not in REMOVALS:
        raise ValueError(f"how {how!r} is not valid: choose one of {REMOVALS}.")
    fill = {"mask": tokenizer.mask_token_id, "pad": tokenizer.pad_token_id}.get(how)
    out = []
    for start in range(0, len(removed), batch):
        ids, types, mask = _erased_batch(check_trace(trace), removed[start:start + batch], how, fill)
        logits = classifier(model(input_ids=ids, token_type_ids=types, attention_mask=mask).last_hidden_state, mask)
        out.append(logits.softmax(-1)[:, target])
    return torch.cat(out)


def erasure_curves(tokenizer, model, classifier, trace: Trace, target: int, rankings: dict, positions: list, *,
                   fractions=FAITHFULNESS_FRACTIONS, how: str = "drop") -> dict:
    """ERASER's comprehensiveness and sufficiency (DeYoung et al. 2020) of every ranking, one
    utterance: for each ``{name: [T] scores}`` of ``rankings`` and each fraction ``k``, with ``r`` the
    top-``k`` tokens of ``positions`` (:func:`top_tokens`, by signed score) and ``p`` the probability
    of ``target``: comprehensiveness ``p(x) - p(x without r)``, sufficiency ``p(x) - p(r only)``
    (special tokens always stay). All variants run in one batch. Returns
    ``{name: {"comprehensiveness": [K], "sufficiency": [K]}}`` (numpy) and ``"p_full"``."""
    positions, fractions = list(positions), list(fractions)
    sets = {name: [top_tokens(s, positions, k) for k in fractions] for name, s in rankings.items()}
    removed = [[]]
    for top in sets.values():
        removed += top + [[p for p in positions if p not in set(t)] for t in top]
    # Rankings often agree on their top tokens and short utterances round several k to the same
    # count: each distinct set of removed positions runs once.
    distinct = list(dict.fromkeys(tuple(sorted(r)) for r in removed))
    unique = _as_float_array(removal_probabilities(tokenizer, model, classifier, trace, target,
                                                   [list(r) for r in distinct], how=how))
    where = {r: i for i, r in enumerate(distinct)}
    probs = unique[[where[tuple(sorted(r))] for r in removed]]
    full, rest, K = probs[0], probs[1:], len(fractions)
    out = {"p_full": float(full)}
    for i, name in enumerate(sets):
        chunk = rest[2 * K * i: 2 * K * (i + 1)]
        out[name] = {"comprehensiveness": full - chunk[:K], "sufficiency": full - chunk[K:]}
    return out


def random_rankings(positions: list, seq_len: int, n: int, seed: int = 0, device=None) -> dict:
    """``{"random 0": [T], ...}``: ``n`` random scores of the ``positions`` (a random order each)."""
    gen = torch.Generator().manual_seed(seed)
    return {f"random {i}": torch.rand(seq_len, generator=gen).to(device) for i in range(n)}  # cpu: seeded draw


# -- ERASER over many utterances, against random rankings ------------------------------------------------


@dataclass
class Faithfulness:
    """ERASER's curves over many utterances: ``curves[how][method][key]`` is ``[n, K]`` (one row
    per utterance, one column per fraction of :data:`FAITHFULNESS_FRACTIONS`), ``key``
    ``"comprehensiveness"`` or ``"sufficiency"``, ``method`` one of :data:`METHODS` or ``"random"``
    (the mean of ``n_random`` random rankings of the same utterance); ``ig_gaps`` each utterance's
    Integrated-Gradients ``|delta| / |f(x) - f(x')|``."""

    texts: list
    targets: list
    curves: dict
    ig_gaps: list
    n_random: int
    fractions: tuple = FAITHFULNESS_FRACTIONS
    methods: tuple = METHODS

    def __len__(self) -> int:
        return len(self.texts)

    def aopc(self, method: str, key: str = "comprehensiveness", how: str = "drop") -> np.ndarray:
        """``[n]``: each utterance's mean over the fractions (ERASER's area over the perturbation
        curve, AOPC)."""
        if how not in self.curves or method not in self.curves[how] or key not in ("comprehensiveness",
                                                                                   "sufficiency"):
            raise ValueError(f"no curve for how={how!r}, method={method!r}, key={key!r}: how is one of "
                             f"{tuple(self.curves)}, method one of {self.methods + ('random',)}, key "
                             "'comprehensiveness' or 'sufficiency'.")
        return self.curves[how][method][key].mean(1)


def faithfulness_study(tokenizer, model, classifier, texts, *, ig_steps=IG_STEPS[:2], n_random: int = 5,
                       removals=REMOVALS, progress: bool = True) -> Faithfulness:
    """For each text: its predicted intent, the six attributions of that logit
    (:func:`six_attributions`), ``n_random`` random rankings, and every ranking's
    comprehensiveness and sufficiency curves under each way of removing a token
    (:func:`erasure_curves`). Each text is traced once (:func:`~helpers.model.trace.trace_text`,
    truncated to the model's maximum with the course's warning)."""
    from helpers.model.tokens import content_positions
    from helpers.model.trace import trace_text

    texts = list(texts)
    if not texts or not all(isinstance(t, str) and t.strip() for t in texts):
        raise ValueError("texts must be a non-empty list of non-empty strings.")
    if isinstance(n_random, bool) or not isinstance(n_random, int) or n_random < 1:
        raise ValueError(f"n_random must be a positive int, got {n_random!r}.")
    removals = tuple(removals)
    if not removals or any(h not in REMOVALS for h in removals):
        raise ValueError(f"removals must be taken from {REMOVALS}, got {removals!r}.")
    keys = ("comprehensiveness", "sufficiency")
    rows = {how: {m: {k: [] for k in keys} for m in METHODS + ("random",)} for how in removals}
    targets, gaps = [], []
    for i, text in enumerate(progress_bar(texts, desc="attributing and erasing test utterances",
                                          disable=not progress)):
        t = trace_text(tokenizer, model, text)
        target = int(sentence_logits(classifier, t).argmax())
        scores, ig = six_attributions(tokenizer, model, classifier, t, target, ig_steps=ig_steps)
        targets.append(target)
        gaps.append(abs(ig.delta) / max(abs(ig.gap), 1e-6))
        positions = content_positions(t)
        rankings = scores | random_rankings(positions, t.seq_len, n_random, seed=i + 1, device=t.device)
        for how in removals:
            curves = erasure_curves(tokenizer, model, classifier, t, target, rankings, positions, how=how)
            for k in keys:
                for m in METHODS:
                    rows[how][m][k].append(curves[m][k])
                rows[how]["random"][k].append(np.mean([curves[f"random {r}"][k] for r in range(n_random)], 0))
    curves = {how: {m: {k: np.stack(v) for k, v in c.items()} for m, c in f.items()} for how, f in rows.items()}
    return Faithfulness(texts, targets, curves, gaps, n_random)


FAITHFULNESS_METRICS = 2  # comprehensiveness and sufficiency, read in one sentence: one family


def versus_random(faith: Faithfulness, key: str = "comprehensiveness", how: str = "drop", *, seed: int = 0,
                  metrics: int = FAITHFULNESS_METRICS) -> dict:
    """``{method: Verdict}``: each method's AOPC minus the random ranking's, paired over the
    utterances (one bootstrap draw of utterances for all methods), one Bonferroni family over the
    methods times the ``metrics`` read together (:func:`faithfulness_finding` states both in one
    sentence; :func:`~helpers.common.stats.replicate_verdicts`). For comprehensiveness "higher" is
    more faithful; for sufficiency "lower"."""
    family = len(faith.methods) * metrics
    diffs = np.stack([faith.aopc(m, key, how) - faith.aopc("random", key, how) for m in faith.methods], 1)
    reps = cluster_replicates(diffs, n_boot=bootstrap_size(family), seed=seed, unit="utterances")
    verdicts = replicate_verdicts(reps, list(faith.methods), b="random ranking", family=family)
    return dict(zip(faith.methods, verdicts))


def rollout_versus_raw(faith: Faithfulness, how: str = "drop") -> Verdict:
    """Abnar & Zuidema's story as one comparison: rollout's comprehensiveness AOPC minus raw
    attention's, paired over the utterances (95 % interval, no family)."""
    diff = paired_difference_ci(faith.aopc("attention rollout", how=how), faith.aopc("raw attention", how=how))
    return verdict(diff, a="attention rollout", b="raw attention")
