"""Lesson 12 (:mod:`helpers.interventions`): the lesson in plain words, beside the numbers they phrase
(as ``helpers/common/claims.py`` does).

* findings, each a sentence generated from the numbers and a few "How we know" lines --
  :func:`head_finding`, :func:`skip_finding`, :func:`patch_finding`, :func:`pruning_finding`,
  :func:`zero_vs_mean_finding`, :func:`pattern_finding`, :func:`gradient_finding`,
  :func:`pruning_curve_finding`, :func:`probe_finding`, :func:`rank_sentence`;
* table rows -- :func:`pruning_rows`, :func:`skip_rows`, :func:`patch_rows`; verdicts
  :func:`skip_verdicts`;
* printouts -- :func:`resolution_lines`, :func:`head_ablation_details`, :func:`parking_details`,
  :func:`rank_details`, :func:`flip_lines`, :func:`pooling_note`;
* the claims table -- :func:`claim_rows` from the findings, the popular stories (:data:`STORIES`),
  :func:`join_claims`; :func:`sense_groups`.
"""

from __future__ import annotations

import math

import torch

from helpers.common.stats import accuracy_ci, cluster_bootstrap_ci, extreme_family
from helpers.interventions.ablation import HeadAblation
from helpers.interventions.outcomes import CHANGE_WORDS, count_kinds, equivalence_resolution, outcome_changes
from helpers.interventions.patching import ShareVerdict
from helpers.interventions.pruning import PruningComparison
from helpers.interventions.runs import SentenceInterventions
from helpers.interventions.ranking import spearman_ci, within_group_spearman_ci


def pooling_note(name: str, pooling) -> str:
    """One sentence on whether the mean-pooled last layer is the checkpoint's own sentence vector,
    from its sentence-transformers pooling (``None``: it has no such configuration)."""
    if pooling is not None and "mean_tokens" in pooling:
        return (f"{name}: its sentence-transformers configuration pools the mean of the tokens, so the mean-pooled "
                "last layer is the sentence vector it was trained to produce")
    if pooling is not None:
        return (f"{name}: its sentence-transformers configuration pools by {', '.join(pooling) or 'nothing'}, so "
                "mean pooling is our choice here, not the model's")
    return (f"{name}: no sentence-transformers configuration: it was not trained to produce a sentence vector, and "
            "mean pooling is our choice here, not the model's")


def _join(items) -> str:
    items = [str(i) for i in items]
    if not items:
        return "none"
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _kinds(changes, labels) -> dict:
    out = {kind: [] for kind in CHANGE_WORDS}
    for label, change in zip(labels, changes):
        out[change.kind].append(label)
    return out


def change_method(changes) -> str:
    """How a family of :class:`OutcomeChange` was judged, in one line for the "How we know" fold."""
    c = changes[0]
    eq = "" if c.equivalence_interval is None else (
        f"; equivalent only when the {100 * c.equivalence_interval.level:.4g} % interval lies inside "
        f"+/-{100 * c.verdict.margin:.1f} points")
    family = "" if c.family == 1 else f", Bonferroni over {c.family} comparisons"
    return (f"each change paired on the same items ({c.method}); {100 * c.difference.level:.4g} % intervals"
            f"{family}{eq}")


def worst_head(accuracy_drop, tiebreak=None) -> int:
    """The index (in the flattened ``[L, A]`` map) of the largest accuracy drop; among equal drops,
    the largest ``tiebreak`` (e.g. the true-class logit drop), then the first."""
    drop = torch.as_tensor(accuracy_drop).flatten().double()  # cpu: a ranking of numbers
    ties = torch.zeros_like(drop) if tiebreak is None else torch.as_tensor(tiebreak).flatten().double().to(drop.device)  # cpu: as drop
    best = drop == drop.max()
    return int(torch.where(best, ties, torch.full_like(ties, -math.inf)).argmax())


def head_finding(changes, heads, accuracy_drop, *, margin: float, n_items: int, tiebreak=None,
                 items: str = "utterances") -> tuple[str, list]:
    """Lesson 12's verdict on every single-head removal in plain words, and its "How we know" lines.
    ``changes`` (:meth:`HeadAblation.changes`), ``heads`` their ``(layer, head)``, ``accuracy_drop``
    ``[L, A]``; the largest drop is named by :func:`worst_head` (``tiebreak``: e.g. the true-class
    logit drop)."""
    labels = [f"{l}.{h}" for l, h in heads]
    kinds = _kinds(changes, labels)
    drop = torch.as_tensor(accuracy_drop).flatten()  # cpu: a ranking of numbers
    worst = worst_head(accuracy_drop, tiebreak)
    n, m = len(heads), 100 * margin
    parts = []
    if kinds["lower"]:
        parts.append(f"removing {len(kinds['lower'])} of the {n} heads on its own lowers the accuracy "
                     f"({_join(kinds['lower'])})")
    else:
        parts.append(f"no one of the {n} heads lowers the accuracy measurably when removed on its own")
    if kinds["higher"]:
        parts.append(f"removing {_join(kinds['higher'])} raises it")
    if kinds["equivalent"]:
        parts.append(f"for {len(kinds['equivalent'])} heads we can tell the change stays within +/-{m:.1f} points")
    if kinds["inconclusive"]:
        parts.append(f"for {len(kinds['inconclusive'])} we cannot tell whether the change stays within "
                     f"+/-{m:.1f} points")
    sentence = ("On " + f"{n_items} test {items}, " + "; ".join(parts) + ". The largest drop, "
                f"{100 * float(drop[worst]):.1f} points, comes from removing head {labels[worst]} (layer.head).")
    details = [change_method(changes), f"largest drop: {changes[worst].describe()}"]
    resolution = equivalence_resolution(n_items, changes[0].family)
    if resolution >= margin:
        details.append(f"with {n_items} items and {changes[0].family} changes judged together, even a change no item "
                       f"shows could reach {100 * resolution:.2f} points at this level: no head can be shown "
                       f"equivalent within +/-{m:.1f}")
    return sentence[0].upper() + sentence[1:], details


def rank_sentence(rho, *, subject: str, more: str, less: str, units: str) -> str:
    """One plain sentence for a rank correlation's interval (``rho``: a :class:`RankInterval` or
    None): ``more`` when it lies above 0, ``less`` below, else "we cannot tell"."""
    if rho is None:
        return f"{subject[0].upper() + subject[1:]}: undefined, one side does not vary."
    if rho.low > 0:
        return f"{more[0].upper() + more[1:]} (rank correlation {rho.estimate:+.2f}, {units})."
    if rho.high < 0:
        return f"{less[0].upper() + less[1:]} (rank correlation {rho.estimate:+.2f}, {units})."
    return (f"With {units} we cannot tell whether {subject} go together or against each other (rank correlation "
            f"{rho.estimate:+.2f}, and it could be 0).")


def rank_details(rho, across=None, name: str = "") -> list[str]:
    """The "How we know" lines of a within-layer rank correlation (and the one across all units)."""
    if rho is None:
        return ["no layer has a defined rank correlation"]
    lines = [f"{name}mean within layers: rho = {rho} ({100 * rho.level:.4g} % interval, resampling the items and "
             "recomputing both sides)",
             "per layer: " + ", ".join(f"{l}: {r:+.2f}" for l, r in enumerate(rho.per_group, start=1))]
    if rho.undefined:
        lines.append(f"undefined in {rho.undefined:.0%} of the resamples (left out)")
    if across is not None:
        lines.append(f"over all units at once (this also ranks the layers): rho = {across}")
    return lines


def skip_finding(name: str, changes, *, head_mismatch: bool = False) -> tuple[str, list]:
    """One measure's verdict on skipping each layer (``changes[l - 1]``: layer ``l`` skipped), in
    plain words. ``head_mismatch``: the last layer's skip hands a fixed head vectors it never saw, so
    that layer is set apart, not read as a layer effect."""
    L = len(changes)
    labels = list(range(1, L + 1))
    kinds = _kinds(changes, labels)
    if head_mismatch:
        for k in kinds.values():
            if L in k:
                k.remove(L)
    parts = []
    if kinds["lower"]:
        parts.append(f"skipping layer{'s' if len(kinds['lower']) > 1 else ''} {_join(kinds['lower'])} lowers it")
    if kinds["higher"]:
        parts.append(f"skipping {_join(kinds['higher'])} raises it")
    if kinds["equivalent"]:
        parts.append(f"skipping {_join(kinds['equivalent'])} changes it by less than the margin")
    if kinds["inconclusive"]:
        parts.append(f"for {_join(kinds['inconclusive'])} we cannot tell")
    sentence = f"{name[0].upper() + name[1:]}: " + "; ".join(parts or ["no layer to read"]) + "."
    if head_mismatch:
        sentence += f" (Layer {L} is set apart: skipping it feeds the fixed head vectors it never saw.)"
    details = [change_method(changes)] + [f"layer {l}: {c.describe()}" for l, c in enumerate(changes, start=1)]
    return sentence, details


def share_words(kind: str) -> str:
    """A patched share's verdict in words (:func:`share_verdicts`)."""
    return {"above": "follows the patch", "below": "follows the context"}.get(kind, "cannot tell")


def patch_finding(verdicts, context_verdicts, n_words: int) -> tuple[str, list]:
    """Where the patched word's own vector wins, in plain words: the first patched layer from which
    a majority of pairs is shown to follow the patch, the layers where the context wins, the rest;
    and the rest-of-the-sentence control."""
    names = ["the embeddings" if l == 0 else f"layer {l}" for l in range(len(verdicts))]
    below = [n for n, v in zip(names, verdicts) if v.kind == "below"]
    unsure = [n for n, v in zip(names, verdicts) if v.kind == "inconclusive"]
    first = next((l for l, v in enumerate(verdicts) if v.kind == "above"), None)
    if first is None:
        sentence = f"With {n_words} words, no patched layer is followed by a clear majority of the sentence pairs"
    else:
        sentence = (f"Patched at {names[first]} or above, most sentence pairs follow the patch: from there the word's "
                    "own vector carries its sense")
    if below:
        sentence += f"; patched at {_join(below)}, the context wins"
    if unsure:
        sentence += f"; at {_join(unsure)} we cannot tell"
    followed = [n for n, v in zip(names, context_verdicts) if v.kind == "above"]
    sentence += (". The rest of the sentence follows the patch at " + _join(followed) + "." if followed else
                 ". The rest of the sentence never follows it: the layers above do not carry the patched sense into "
                 "the other tokens.")
    v0 = verdicts[0]
    details = [f"share of pairs following the patch per layer, resampling the {n_words} words (the small-sample rule), "
               f"{100 * v0.share.level:.4g} % intervals, Bonferroni over the {len(verdicts)} patched layers"]
    details += [f"{n}: at the word {v.share.percent(0)} (Bonferroni-adjusted {v.p_text}{_why(v)}); rest of the "
                f"sentence {c.share.percent(0)} ({c.p_text}{_why(c)})"
                for n, v, c in zip(names, verdicts, context_verdicts)]
    return sentence, details


def pruning_finding(comparison: PruningComparison, fraction: float, n_items: int,
                    items: str = "utterances") -> tuple[str, list]:
    """The importance order against the random orders at one share of heads removed, in plain words,
    and the "How we know" lines (the two-level interval, the rank test and its floor)."""
    c, R = comparison, comparison.n_orders
    low, high = float(c.random_scores.min()), float(c.random_scores.max())
    head = (f"With {fraction:.0%} of the heads removed, the importance order keeps {c.score:.1%} of the {n_items} "
            f"test {items} right, more than {c.beaten} of {R} random orders (they keep {low:.1%} to {high:.1%})")
    v = c.verdict
    if v.kind == "higher":
        tail = f"; it beats their mean by about {100 * v.difference.estimate:.1f} points"
        tail += ("." if c.rank_p <= 0.05 else f", yet {R - c.beaten} of the {R} keep as much or more: a lucky random "
                 "order can do as well.")
    elif v.kind == "lower":
        tail = f"; it falls below their mean by about {100 * -v.difference.estimate:.1f} points."
    else:
        tail = "; we cannot tell whether it keeps more than a random order would."
    details = [v.text + " (resampling the test items and the random orders, two levels)",
               f"rank test: p = {c.rank_p:.3g}, the share of random orders at least as good, counted with the "
               f"order itself ((1 + {R - c.beaten}) / ({R} + 1)); with {R} random orders it cannot go below "
               f"1/(R + 1) = {1 / (R + 1):.3g}"]
    return head + tail, details


# -- the lesson's printouts, tables and findings, assembled from its numbers ----------------------------


def resolution_lines(n_items: int, families: dict, margin: float, items: str = "utterances") -> list[str]:
    """One printed line per family of comparisons (``families``: ``{what: how many are judged
    together}``): the smallest margin :func:`equivalence_resolution` lets ``n_items`` paired items
    ever confirm, and whether ``margin`` lies above it (then it "can" be shown)."""
    lines = []
    for what, family in families.items():
        reach = equivalence_resolution(n_items, family)
        lines.append(f"{what:>16} on {n_items} {items}: smallest margin that can read 'equivalent' "
                     f"{100 * reach:.2f} points -> " + ("can" if reach < margin else "can never")
                     + " be shown equivalent within the margin")
    return lines


def head_ablation_details(ablation: HeadAblation, accuracy_drop, logit_drops, n_items: int,
                          items: str = "utterances") -> list[str]:
    """Two more "How we know" lines for the every-head verdict: the heads the data cannot rank below
    the largest drop (:meth:`HeadAblation.tied_with` of :func:`worst_head`, listed when at most 12,
    else counted) and the scale (one item in points; the median and largest ``logit_drops``, the
    ``[L, A]`` mean true-class logit drops)."""
    worst = ablation.heads()[worst_head(accuracy_drop, tiebreak=logit_drops)]
    tied = ablation.tied_with(*worst)  # includes the worst head itself
    n_heads = len(ablation.heads())
    return [f"heads the data cannot rank below {worst[0]}.{worst[1]}: "
            + (", ".join(f"{l}.{h}" for l, h in tied) if len(tied) <= 12 else f"{len(tied)} of {n_heads}")
            + f" (Bonferroni over all {extreme_family(n_heads):,} pairs of heads: the worst is picked from the data)",
            f"one {items[:-1]} is {100 / n_items:.2f} points; true-class logit drop over all heads: median "
            f"{logit_drops.median():.3f}, largest {logit_drops.max():.3f}"]


def zero_vs_mean_finding(zero: HeadAblation, mean: HeadAblation, gap, *, margin: float,
                         items: str = "utterances") -> tuple[str, list]:
    """Zero against mean ablation of every head on the same items, in plain words: do the two rank
    the heads' loss increase alike within a layer (:func:`within_group_spearman_ci`), and the head
    ``gap`` (``(layer - 1, head)``) where zeroing raises the mean loss most beyond mean ablation; the
    "How we know" lines add each method's verdict counts over all heads (:func:`count_kinds`)."""
    n_items, n_heads = zero.base.shape[0], len(zero.heads())
    agree = within_group_spearman_ci(zero.loss_increase_items(), mean.loss_increase_items())
    zero_dl, mean_dl = zero.loss_increase_items().mean(0), mean.loss_increase_items().mean(0)
    counts = {name: count_kinds(a.changes(margin=margin)) for name, a in (("zero", zero), ("mean", mean))}
    sentence = (rank_sentence(agree, subject="the two ways of removing a head",
                              more="within a layer, zeroing a head and setting it to its mean rank the heads' "
                                   "damage alike",
                              less="within a layer, zeroing and mean-ablation rank the heads' damage in opposite "
                                   "orders",
                              units=f"{n_items} {items}")
                + f" Zeroing hurts most beyond the mean at head {gap[0] + 1}.{gap[1]}"
                f" (loss {float(zero_dl[gap]):+.3f} vs {float(mean_dl[gap]):+.3f}).")
    details = rank_details(agree) + [f"{name}-ablation, {n_heads} heads on {n_items} {items}: "
                                     + ", ".join(f"{k} {n}" for k, n in c.items()) for name, c in counts.items()]
    return sentence, details


def parking_details(shares: dict) -> list[str]:
    """For each token's ``[L, A]`` map of mean attention shares (``shares``: ``{token: map}``) one
    "How we know" line: the largest share of one head, and how many heads send more than half their
    attention there."""
    return [f"{name}: largest share of one head {s.max():.2f}; heads with more than half their attention "
            f"there: {int((s > 0.5).sum())} of {s.numel()}" for name, s in shares.items()]


def pattern_finding(shares, loss, token: str, *, level: float = 0.95, items: str = "utterances") -> tuple[str, list]:
    """Does a head's attention share on ``token`` rank with the damage its removal does? ``shares``
    and ``loss`` are ``[N, L, A]`` per test item (the head's share on ``token``; the loss increase with
    the head removed). The sentence reads the rank correlation **within each layer**
    (:func:`within_group_spearman_ci` at ``level``); the one over all heads, which also ranks the
    layers (:func:`spearman_ci`), is only in the "How we know" lines."""
    shares, loss = torch.as_tensor(shares).cpu(), torch.as_tensor(loss).cpu()  # cpu: rank statistics on results
    rho = within_group_spearman_ci(shares, loss, level=level)
    across = spearman_ci(shares.flatten(1), loss.flatten(1), level=level)
    sentence = rank_sentence(rho, subject=f"a head's share on {token} and the damage its removal does",
                             more=f"within a layer, heads with more attention on {token} matter more",
                             less=f"within a layer, heads with more attention on {token} matter less",
                             units=f"{len(shares)} {items}")
    return sentence, rank_details(rho, across)


def gradient_finding(grads, loss, normalized, *, seconds: tuple, items: str = "utterances") -> tuple[str, list]:
    """Michel et al.'s one-gradient importance against removal, like for like, in plain words.
    ``grads`` ``[N, L, A]``: each item's gradient of the loss with respect to each head's gate;
    ``loss`` ``[N, L, A]``: each item's loss change with the head removed; ``normalized``: ``|grads|``
    divided per layer by the norm of that layer's importances (:func:`normalize_by_layer`, per item);
    ``seconds``: ``(gradient, removal)`` wall times. The sentence reads ``E|g|`` against ``E|dL|``
    ranked within each layer (:func:`within_group_spearman_ci`); the signed pair ``E[-g]`` against
    ``E[dL]`` and the three correlations over all heads (:func:`spearman_ci`) are "How we know"
    lines."""
    g, dl, gn = (torch.as_tensor(t).cpu() for t in (grads, loss, normalized))  # cpu: statistics on results
    n_items, n_heads = g.shape[0], g[0].numel()
    rho = within_group_spearman_ci(g.abs(), dl.abs())
    signed = within_group_spearman_ci(-g, dl)
    across = {name: spearman_ci(a.flatten(1), b.flatten(1)) for name, a, b in (
        ("E|g| vs E|dL|", g.abs(), dl.abs()), ("E[-g] vs E[dL] (signed)", -g, dl),
        ("E|g| normalised per layer vs E|dL|", gn, dl.abs()))}
    sentence = (rank_sentence(rho, subject="the one-gradient importance and removal",
                              more="within a layer, the one gradient ranks the heads like their removal does",
                              less="within a layer, the one gradient ranks the heads opposite to their removal",
                              units=f"{n_items} {items}")
                + f" It took {seconds[0]:.1f} s, the removal {seconds[1]:.1f} s.")
    details = (rank_details(rho, name="E|g| vs E|dL|, ")
               + [f"signed, E[-g] vs E[dL], mean within layers: rho = {signed}"]
               + [f"{k}, across all {n_heads} heads: rho = {v}" for k, v in across.items()])
    return sentence, details


def pruning_rows(fractions, correct, changes) -> list[dict]:
    """The pruning table, one row per share of heads removed: ``correct[k]`` the 0/1 outcomes with
    ``fractions[k]`` removed (``fractions[0]``: nothing), ``changes[k - 1]`` its
    :class:`OutcomeChange` against nothing removed (``-`` in the first row)."""
    return [{"removed": f"{f:.0%}", "accuracy": accuracy_ci(correct[k]).percent(),
             "change [interval]": "-" if k == 0 else changes[k - 1].difference.format("+.3f"),
             "against nothing removed": "-" if k == 0 else CHANGE_WORDS[changes[k - 1].kind]}
            for k, f in enumerate(fractions)]


def pruning_curve_finding(changes, fractions, comparison: PruningComparison, fraction: float,
                          n_items: int, items: str = "utterances") -> tuple[str, list]:
    """The whole pruning finding in plain words: the first share removed (``fractions[k]``, its
    change ``changes[k - 1]``; ``fractions[0]`` is nothing removed) at which the accuracy is shown
    lower than with nothing removed, then :func:`pruning_finding` (the order against the random
    orders at ``fraction``); the "How we know" lines start with the family's method."""
    first_lower = next((f for f, ch in zip(fractions[1:], changes) if ch.kind == "lower"), None)
    start = ("Removing the least important heads first, the accuracy is first measurably lower than with "
             f"nothing removed at {first_lower:.0%}." if first_lower is not None else
             "Removing the least important heads first, no share removed lowers the accuracy measurably.")
    sentence, details = pruning_finding(comparison, fraction, n_items, items)
    return start + " " + sentence, [change_method(changes)] + details


def sense_groups(vectors: torch.Tensor, poly) -> dict:
    """``vectors`` ``[V, S, H]`` (``V`` variants, e.g. nothing skipped and each layer skipped; one
    vector per sentence of ``poly.jobs``) regrouped as ``{word: {sense: [n, V, H]}}``, the
    ``n`` sentences of that word and sense in the order of ``poly.jobs``."""
    return {w: {s: vectors[:, [i for i, j in enumerate(poly.jobs) if j[:2] == (w, s)]].transpose(0, 1)
                for s in senses} for w, senses in poly.words.items()}


def skip_verdicts(measures: dict, *, margin: float) -> tuple[dict, dict]:
    """Every layer skip against nothing skipped, per measure. ``measures``: ``{name: (correct, clusters,
    ylabel, chance)}``, ``correct`` ``[L + 1, n]`` 0/1 outcomes (row 0 nothing skipped, row ``l`` layer
    ``l`` skipped), ``clusters`` each item's unit or ``None`` (independent items). Returns
    ``({name: [OutcomeChange per layer]}, {name: panel})``: the changes by :func:`outcome_changes`
    (the ``L`` layers one family; resampled by cluster when given), and the panel that
    :func:`~helpers.interventions.plots.plot_skip_effects` draws, ``(accuracy with nothing skipped,
    accuracy with each layer skipped, ylabel, chance)``."""
    changes, panels = {}, {}
    for name, (c, clusters, ylabel, chance) in measures.items():
        changes[name] = outcome_changes(c[1:], c[0], [f"skipping layer {l}" for l in range(1, len(c))],
                                        margin=margin, clusters=clusters, reference="nothing skipped")
        unchanged = accuracy_ci(c[0]) if clusters is None else cluster_bootstrap_ci(c[0], clusters, n_boot=2000)
        panels[name] = (unchanged, [ch.after for ch in changes[name]], ylabel, chance)
    return changes, panels


def skip_rows(changes, *, head_mismatch: bool = False) -> list[dict]:
    """One measure's table of layer skips (``changes[l - 1]``: layer ``l`` skipped); with
    ``head_mismatch`` the last layer's verdict is marked "(head mismatch)"."""
    L = len(changes)
    return [{"layer skipped": str(l), "accuracy": ch.after.percent(),
             "change [interval]": ch.difference.format("+.3f"),
             "against nothing skipped": CHANGE_WORDS[ch.kind] + (" (head mismatch)" if head_mismatch and l == L
                                                                 else "")}
            for l, ch in enumerate(changes, start=1)]


def probe_finding(control: ShareVerdict, n_pairs: int, n_words: int) -> tuple[str, list]:
    """The patching probe's control in plain words: without a patch, how often lesson 09's probe
    reads the target's own sense (``control``, :func:`share_verdicts` over ``n_words`` words), and
    whether that is shown better than a coin (else the follow rates mean little)."""
    sentence = (f"Without a patch, the probe reads the target's own sense in {control.share.estimate:.0%} of the "
                f"{n_pairs} sentence pairs"
                + (", better than a coin." if control.kind == "above" else
                   "; we cannot tell it from a coin, so the follow rates below mean little."))
    return sentence, [f"{n_words} words resampled: {control.share.percent()}, {control.p_text}{_why(control)}"]


def _why(v: ShareVerdict) -> str:
    return f"; inconclusive: {v.why}" if v.why else ""


def patch_rows(verdicts, context_verdicts) -> list[dict]:
    """The patching table, one row per patched layer (0: the embeddings, shown "emb"): the share of
    pairs following the patch at the word and in the rest of the sentence, each with its verdict in
    words (:func:`share_words`)."""
    return [{"patched layer": "emb" if l == 0 else l, "at the word": v.share.percent(0),
             "a majority": share_words(v.kind), "rest of the sentence": c.share.percent(0),
             "a majority (rest)": share_words(c.kind)}
            for l, (v, c) in enumerate(zip(verdicts, context_verdicts))]


def flip_lines(effects: SentenceInterventions, names, what: str = "SENTENCE") -> list[str]:
    """How many single-head removals and which layer skips change ``effects``' predicted class
    (``names``: the class names), and for each such skip how far the old and the new winner's logits
    moved."""
    pred = int(effects.base.argmax())
    L, A = effects.num_layers, effects.num_heads
    flips_heads = int((effects.heads.argmax(-1) != pred).sum())
    flips_skips = [l for l in range(1, L + 1) if int(effects.skips[l - 1].argmax()) != pred]
    lines = [f"{flips_heads} of {L * A} single-head removals change the predicted class of {what}; skipping "
             f"layer(s) {flips_skips or 'none'} does"]
    for l in flips_skips:
        new = int(effects.skips[l - 1].argmax())
        moved = effects.skips[l - 1] - effects.base
        lines.append(f"  skipping layer {l}: the {names[pred]!r} logit changes by {moved[pred]:+.1f}, the "
                     f"{names[new]!r} logit by {moved[new]:+.1f}, so {names[new]!r} wins")
    return lines


def join_claims(*claims):
    """One :class:`~helpers.common.claims.Claim` from several: their sentences joined by a space,
    their "How we know" lines one after another."""
    from helpers.common.claims import Claim

    return Claim(" ".join(c.sentence for c in claims), [d for c in claims for d in c.details])


# -- the lesson's claims table ----------------------------------------------------------------------------

STORIES = {  # key: (the popular story, the published finding with its paper and model)
    "heads": ("most single heads can be removed",
              "Michel et al. 2019 (BERT-base fine-tuned on MNLI; a Transformer for translation): most single heads "
              "removed at test time without a detectable loss"),
    "parking": ("attention parked on [SEP] or [CLS] marks an unimportant head",
                "Clark et al. 2019 (bert-base): over half the attention of layers 6-10 on [SEP], read as a no-op"),
    "mean": ("removing a head means setting it to zero",
             "a choice of method; mean ablation is common in circuit analysis (no single paper's number quoted)"),
    "gradient": ("one gradient ranks heads like removing them",
                 "Michel et al. 2019 (BERT-base on MNLI): the gradient importance, used to prune heads"),
    "pruning": ("pruning the least important heads first keeps the accuracy longest",
                "Michel et al. 2019 (BERT-base on MNLI): a large part of the heads pruned with little or no loss; "
                "most must stay"),
    "skip": ("every layer is an indispensable expert", "a popular story; no published number quoted here"),
    "patch": ("a word's own vector carries its sense from some layer on",
              "lesson 09 (this model): where the senses separate"),
}


def claim_rows(findings: dict, stories: dict = STORIES) -> list[tuple[str, str, str, str]]:
    """The claims table from the findings the lesson showed: ``findings`` ``{key: Claim}`` (each the
    plain sentence generated from the numbers, with its "How we know" lines), ``stories`` ``{key:
    (story, published finding)}``. One row per key of ``stories`` found in ``findings``, in the order
    of ``stories``: ``(story, this run in plain words, published finding, the statistics behind it)``.
    A finding that could not be measured on this model (say, fewer than two ambiguous words) is left
    out, never filled in by hand."""
    unknown = set(findings) - set(stories)
    if unknown:
        raise ValueError(f"no story for {sorted(unknown)}: the keys are {list(stories)}.")
    return [(story, findings[key].sentence, paper, " ".join(findings[key].details))
            for key, (story, paper) in stories.items() if findings.get(key) is not None]
