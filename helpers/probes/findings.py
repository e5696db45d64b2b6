"""Lesson 14 (:mod:`helpers.probes`): the lesson's tables and findings, laid out from the numbers.

* probes -- :func:`word_probe_table`, :func:`intent_probe_table`, :func:`peak_findings`,
  :func:`probe_status_finding`, :func:`layer_tag_table`; the popular layer table scaled to any
  depth (:data:`POPULAR_TABLE`, :func:`scaled_layers`, :func:`table_verdict`);
* what fine-tuning changed -- :func:`layer_change_table`, :func:`cka_depth_finding`,
  :func:`weight_norm_table`, the swap-in test (:func:`swap_in_table`, :func:`swap_in_finding`),
  :func:`pos_change_table`, :func:`pos_change_finding`;
* the size of the vectors per layer (:func:`norm_quartiles`, :func:`norm_lines`).
"""

from __future__ import annotations

import math

import numpy as np
import torch

from helpers.common.data import UPOS_TAGS
from helpers.common.stats import Interval, extreme_family, family_level, seeds_interval
from helpers.probes.features import WordFeatures
from helpers.probes.probing import ProbeReport


# The popular table, for BERT-base (12 layers): where each kind of knowledge is said to live.
POPULAR_TABLE = (("upos", "part of speech", 1, 3), ("entity", "entities", 4, 8), ("intent", "sentence meaning", 9, 12))


POPULAR_TABLE_DEPTH = 12


def scaled_layers(first: int, last: int, num_layers: int, of: int = POPULAR_TABLE_DEPTH) -> list[int]:
    """Layers ``first..last`` of an ``of``-layer model mapped to ``num_layers`` by relative depth:
    layer ``l`` counts when its middle, ``(l - 1/2) / L``, lies in ``((first-1)/of, last/of]``.
    (Tenney et al. 2019 saw tasks sit at the same depth *relative to the top* in BERT-base and
    BERT-large.)"""
    if not 1 <= first <= last <= of:
        raise ValueError(f"need 1 <= first <= last <= {of}, got {first}..{last}.")
    return [l for l in range(1, num_layers + 1) if (first - 1) / of < (l - 0.5) / num_layers <= last / of]


def table_verdict(report: ProbeReport, claimed: list[int], measure: str = "accuracy") -> str:
    """How the measured peak of ``measure`` relates to the table's (scaled) layers: the best
    layer and every layer the paired difference cannot rank below it count
    (:meth:`ProbeReport.tied_with_best`). When the embeddings (layer 0) are among them, the
    probe cannot show that any layer adds what it reads: the row is not testable here."""
    best, tied = report.best_layer(measure), report.tied_with_best(measure)
    if 0 in tied:
        return f"not testable here: layer 0 already at {report.measure(measure)[0].estimate:.1%}, tied with the best"
    if set(tied) <= set(claimed):
        return "peak inside the table's layers"
    if best in claimed:
        return "best layer inside, tied with layers outside"
    if set(tied) & set(claimed):
        return "best layer outside, tied with a layer inside"
    return "peak outside the table's layers"


def summarize_layers(layers) -> str:
    """``[0, 1, 2, 5]`` -> ``'emb-2, 5'`` (``emb`` is layer 0)."""
    name = lambda l: "emb" if l == 0 else str(l)  # noqa: E731
    runs: list[list[int]] = []
    for l in sorted(layers):
        if runs and l == runs[-1][1] + 1:
            runs[-1][1] = l
        else:
            runs.append([l, l])
    return ", ".join(name(a) if a == b else f"{name(a)}-{name(b)}" for a, b in runs) or "none"


def norm_quartiles(features: WordFeatures) -> np.ndarray:
    """``[3, L+1]``: 25th, 50th and 75th percentile of the word vectors' L2 norms at each layer."""
    return np.percentile(features.vectors.norm(dim=-1).cpu().numpy(), [25, 50, 75], axis=1)


# ----------------------------------------------------------------------------- lesson 14's tables and findings
# Each returns what the lesson shows: ``(rows, title)`` for :func:`~helpers.common.tables.show_table`
# or ``(sentence, details)`` for :func:`~helpers.common.claims.show_finding`; every word comes from
# the numbers passed in.


def layer_label(l: int):
    """A table's layer column: ``'emb'`` for layer 0 (the embeddings), else the layer number."""
    return "emb" if l == 0 else l


def word_probe_table(report: ProbeReport) -> tuple[list[dict], str]:
    """``(rows, title)``: per layer, a word probe report's test accuracy, control accuracy and
    selectivity (intervals over test sentences) and the training accuracy of the task probe and
    of the control probes (mean over seeds); the title gives the seeds, the word counts, the
    number of classes and the most-frequent-tag rate."""
    if report.control is None or report.train_accuracy is None or report.control_correct is None:
        raise ValueError("word_probe_table needs a word_probe_report (control task, training contract).")
    r = report
    rows = [{"layer": layer_label(l), "task accuracy": r.accuracy[l].percent(), "control": r.control[l].percent(),
             "selectivity": r.selectivity[l].percent(), "task, on its training words": f"{r.train_accuracy[l]:.1%}",
             "control, on its training words": f"{r.control_train_accuracy[l]:.1%}"}
            for l in range(r.num_layers + 1)]
    title = (f"{r.task} probes: accuracy on test words, selectivity = task - control (control averaged over"
             f" {r.control_correct.shape[0]} seeds) [in brackets: uncertainty from resampling test sentences];"
             f" and each probe's accuracy on the words it was trained on\n{r.n_train} train / {r.n_test} test words,"
             f" {len(r.classes)} classes; most frequent training tag on test: {r.majority:.1%}")
    return rows, title


def probe_status_finding(records) -> tuple[str, list[str], object]:
    """``(sentence, details, table)`` for :func:`~helpers.common.claims.show_finding`: how many of
    the word probes' :class:`~helpers.common.training.TrainingRecord` met the convergence
    criterion, the criterion and the L2 rule, and every record's row
    (:func:`~helpers.common.training.records_table`)."""
    from helpers.common.training import records_table, status_summary

    records = list(records)
    if not records:
        raise ValueError("give the word probes' training records (ProbeReport.records).")
    summary = status_summary(records)
    sentence = (f"Of the {len(records)} word probes (task and control, every layer),"
                + (" every one met the convergence criterion." if summary.startswith("all") else f" {summary}."))
    details = [f"criterion: {records[0].criterion}; L2 strength: the task probe's dev loss chooses it (dev split:"
               " a fifth of the training sentences), the control probes take the task's (Hewitt & Liang)"]
    table = records_table(records, title="every word probe: the dev split's choice, dev loss and accuracy at step 0"
                          " and at the kept weights, training accuracy, L-BFGS iterations, status")
    return sentence, details, table


def intent_probe_table(report: ProbeReport, bench=None) -> tuple[list[dict], str]:
    """``(rows, title)``: per layer, a :func:`sentence_probe_report`'s test accuracy (mean over the
    draws, interval over draws and test items) and its accuracy on the training items, in the words
    of ``bench`` (lesson 14's benchmark, with ``classes`` and ``items``: "topics", "headlines" for
    THUCNews; default BANKING77's "intents", "utterances")."""
    one, items = ("intent", "utterances") if bench is None else (bench.one, bench.items)
    if report.pairing != "seeds" or report.train_accuracy is None or report.task_correct is None:
        raise ValueError("intent_probe_table needs a sentence_probe_report.")
    rows = [{"layer": layer_label(l), f"{one} accuracy": iv.percent(),
             f"on its training {items}": f"{report.train_accuracy[l]:.1%}"}
            for l, iv in enumerate(report.accuracy)]
    title = (f"{one} probe (lesson 10's probe) per layer, mean over the {report.task_correct.shape[0]} draws"
             f" [in brackets: uncertainty from resampling draws and test {items}]")
    return rows, title


def peak_findings(reports: dict, table=POPULAR_TABLE) -> tuple[list[dict], str, list[tuple[str, list[str]]]]:
    """``(rows, title, findings)`` for every row ``(task, name, first, last)`` of the popular
    table: where the probe of ``reports[task]`` peaks (the best layer, the layers tied with it:
    :meth:`ProbeReport.tied_with_best`), the gain over the embeddings, the most selective layer,
    the table's layers scaled to the report's depth (:func:`scaled_layers`) and
    :func:`table_verdict`; ``findings`` holds one ``(sentence, details)`` per row, the details
    giving every other layer minus the best at the Bonferroni level over every pair of layers."""
    rows, findings = [], []
    for task, name, first, last in table:
        r = reports[task]
        L = r.num_layers
        claimed = scaled_layers(first, last, L)
        best, tied = r.best_layer(), r.tied_with_best()
        others = [l for l in tied if l != best]
        gain, verdict_text = r.gain_over_embeddings(), table_verdict(r, claimed)
        rows.append({"task": name, "best layer": summarize_layers([best]), "could be as high": summarize_layers(others),
                     "gain over emb, points": f"{100 * gain.estimate:+.1f}",
                     "most selective": summarize_layers([r.best_layer("selectivity")]) if r.selectivity else "n/a",
                     "table, scaled": summarize_layers(claimed), "verdict": verdict_text})
        sentence = (f"{name[0].upper()}{name[1:]} is read best at {'the embeddings' if best == 0 else f'layer {best}'}"
                    f" ({100 * r.accuracy[best].estimate:.1f} %)"
                    + (f"; {summarize_layers(others)} could be as high" if others else "")
                    + f"; against the popular table ({summarize_layers(claimed)}): {verdict_text}.")
        family = extreme_family(L + 1)
        diffs = r.differences(best, level=family_level(family))
        details = [f"{name}: every other layer minus layer {best}, paired on the same test items,"
                   f" {100 * family_level(family):.4g} % intervals (Bonferroni over the {family} pairs of layers,"
                   " since the best is picked from the same data): "
                   + "; ".join(f"{layer_label(l)}: {100 * d.estimate:+.1f} [{100 * d.low:+.1f}, {100 * d.high:+.1f}]"
                               for l, d in enumerate(diffs) if l != best),
                   f"gain over emb (best minus layer 0, 95 %): {100 * gain.estimate:+.1f} [{100 * gain.low:+.1f},"
                   f" {100 * gain.high:+.1f}] points"]
        findings.append((sentence, details))
    title = ("where each kind of knowledge peaks on this model: the best layer, the layers the paired comparisons"
             " cannot place below it, the best layer minus the embeddings, and the popular table's layers scaled to"
             " this model")
    return rows, title, findings


def layer_tag_table(words, tags, classes=UPOS_TAGS, *, max_shown: int = 12,
                    max_listed: int = 20) -> tuple[str, list[dict], str]:
    """``(line, rows, title)`` for the tags ``[L+1, n_words]`` (class ids) that each layer's probe
    gives the ``words`` of one sentence: ``line`` lists (up to ``max_listed``) the words every
    layer tags alike, with that tag; ``rows`` (one per layer, empty when all agree) give each
    layer's tag of the first ``max_shown`` words on which the layers disagree, a column per word
    named with its position (``'book (#2)'``: a word can occur twice)."""
    tags = torch.as_tensor(tags).cpu()  # cpu: a table of tag ids for printing
    if tags.ndim != 2 or tags.shape[1] != len(words):
        raise ValueError(f"tags must be [L+1, {len(words)}] (a tag per layer and word), got {tuple(tags.shape)}.")
    agreed = [i for i in range(len(words)) if len(set(tags[:, i].tolist())) == 1]
    disputed = [i for i in range(len(words)) if i not in agreed]
    same = " ".join(f"{words[i]}/{classes[tags[0, i]]}" for i in agreed[:max_listed]) + (
        " ..." if len(agreed) > max_listed else "")
    line = (f"every layer gives each of the {len(words)} words the same tag: {same}" if not disputed
            else f"{len(agreed)} of {len(words)} words get the same tag from every layer: {same}")
    shown = disputed[:max_shown]
    columns = [f"{words[i]} (#{i})" for i in shown]
    rows = [{"layer": layer_label(l)} | {c: classes[tags[l, i]] for c, i in zip(columns, shown)}
            for l in range(tags.shape[0])] if disputed else []
    title = (f"words on which the layers disagree ({len(disputed)}, at most {max_shown} shown; #: the word's"
             " position): the tag of each layer's probe")
    return line, rows, title


def layer_change_table(change, cka, moved, n_utterances: int, items: str = "utterances") -> tuple[list[dict], str]:
    """``(rows, title)``: per layer, the seed-averaged CKA with its jackknife interval (``cka``, one
    :class:`~helpers.common.stats.Interval` per layer), the range of the per-seed CKA
    (``change.cka``, ``[seeds, L+1]``) and the relative weight change over the seeds (``moved``);
    ``items`` names the ``n_utterances`` test items (a benchmark's word: "headlines" for THUCNews)."""
    seeds = change.cka.shape[0]
    if not len(cka) == len(moved) == change.cka.shape[1]:
        raise ValueError(f"give one CKA and one weight-change interval per layer ({change.cka.shape[1]}).")
    rows = []
    for l in range(len(cka)):
        spread = seeds_interval(change.cka[:, l])
        rows.append({"layer": layer_label(l), "CKA": cka[l].format(".4f"),
                     "CKA seed range": f"{spread.low:.4f}-{spread.high:.4f}",
                     "relative weight change (seed range)": moved[l].format(".4f")})
    title = (f"Pre-trained vs fine-tuned, mean of {seeds} runs: CKA [in brackets: uncertainty from leaving out one"
             f" of the {n_utterances} {items} at a time]; relative weight change with [min, max] over the runs")
    return rows, title


def cka_depth_finding(cka, loo) -> tuple[str, list[str]] | None:
    """``(sentence, details)`` on where fine-tuning changed the encoder most (``None`` with one
    layer): CKA of layer ``L`` minus layer 1, and every encoder layer minus the most changed one
    (lowest CKA, picked by the data, so at the Bonferroni level over every pair of encoder
    layers), each paired -- the same utterance left out of both -- from the leave-one-out values
    ``loo`` ``[utterances, L+1]`` (:func:`~helpers.finetuning.compute.jackknife_interval`). The
    sentence compares layer ``L`` with layer 1 against Merchant et al. (2020)."""
    from helpers.common.stats import verdict
    from helpers.finetuning.compute import jackknife_interval

    L = len(cka) - 1
    if loo.shape[1] != L + 1:
        raise ValueError(f"loo must be [utterances, {L + 1}] (one column per layer), got {tuple(loo.shape)}.")
    if L <= 1:
        return None

    def paired(a: int, b: int, level: float = 0.95) -> Interval:
        return jackknife_interval(cka[a].estimate - cka[b].estimate, loo[:, a] - loo[:, b], level=level)

    top = verdict(paired(L, 1), a=f"CKA at layer {L}", b="at layer 1")
    if top.kind == "lower":
        sentence = (f"Layer {L} changed more than layer 1, as Merchant et al. found: its CKA is lower"
                    f" ({cka[L].estimate:.3f} vs {cka[1].estimate:.3f}).")
    elif top.kind == "higher":
        sentence = (f"Layer 1 changed more than layer {L}, unlike Merchant et al.: its CKA is lower"
                    f" ({cka[1].estimate:.3f} vs {cka[L].estimate:.3f}).")
    else:
        sentence = (f"With these data we cannot tell whether layer {L} or layer 1 changed more"
                    f" (CKA {cka[L].estimate:.3f} vs {cka[1].estimate:.3f}).")
    most = min(range(1, L + 1), key=lambda l: cka[l].estimate)
    family = extreme_family(L)
    level = family_level(family)
    others = [l for l in range(1, L + 1) if l != most and paired(l, most, level).low <= 0]
    sentence += (f" Layer {most} changed most (CKA {cka[most].estimate:.3f})"
                 + (f"; {summarize_layers(others)} could have changed as much." if others
                    else "; every other encoder layer changed less."))
    details = [top.text,
               f"every other encoder layer minus layer {most}, jackknife intervals at {100 * level:.4g} %"
               f" (Bonferroni over the {family} pairs of encoder layers, since the most changed is picked from the"
               " same data): " + "; ".join(f"{l}: {paired(l, most, level).format('.4f')}"
                                           for l in range(1, L + 1) if l != most)]
    return sentence, details


def weight_norm_table(size, step) -> tuple[list[dict], str, str | None]:
    """``(rows, title, split)``: per layer the Frobenius norm of the pre-trained weights ``size``
    ``||W||``, of their change ``step`` ``||dW||`` and the ratio; ``split`` (``None`` with one
    layer) divides the change of ``log(||dW|| / ||W||)`` from layer 1 to layer ``L`` into
    ``log(||dW||_L / ||dW||_1)`` and ``-log(||W||_L / ||W||_1)`` and names the larger."""
    if len(size) != len(step):
        raise ValueError(f"give ||W|| and ||dW|| for the same layers, got {len(size)} and {len(step)}.")
    rows = [{"layer": layer_label(l), "||W||": f"{size[l]:.2f}", "||dW|| (mean of seeds)": f"{step[l]:.4f}",
             "ratio": f"{step[l] / size[l]:.4f}"} for l in range(len(size))]
    title = ("Frobenius norms per layer: pre-trained weights W, their change dW in fine-tuning, and the ratio"
             " ||dW|| / ||W||")
    L = len(size) - 1
    split = None
    if L > 1:
        from_step, from_size = math.log(step[L] / step[1]), -math.log(size[L] / size[1])
        driver = "||dW||" if abs(from_step) > abs(from_size) else "||W||"
        split = (f"layer 1 -> {L}: log ratio changes by {from_step + from_size:+.3f} = {from_step:+.3f} from ||dW||"
                 f" {from_size:+.3f} from ||W||: mostly {driver}.")
    return rows, title, split


SWAP_MEANING = {"lower": "accuracy falls: its own change is needed", "higher": "accuracy rises: its change hurt",
                "inconclusive": "we cannot tell"}


def swap_in_table(verdicts, items: str = "utterances") -> tuple[list[dict], str]:
    """``(rows, title)``: per layer put back (``verdicts[d]``: the swap of layer ``d``, 0 = the
    embeddings, against the fine-tuned model), the accuracy change in points and what its verdict
    says (:data:`SWAP_MEANING`); ``items`` names the test items."""
    rows = [{"layer put back": layer_label(d), "accuracy change, points": f"{100 * v.difference.estimate:+.1f}",
             "what it says": SWAP_MEANING[v.kind]} for d, v in enumerate(verdicts)]
    title = ("Test accuracy with one layer's pre-trained weights put back, minus the fine-tuned model's (same"
             f" {items} and draws), in points")
    return rows, title


def _moves_sentence(lower: list[int], higher: list[int], n: int, *, fall: str, none: str, rise: str,
                    rest: str) -> str:
    """``fall`` (with the layers of ``lower``) or ``none``; then ``rise`` with ``higher``; then
    ``rest`` when some of the ``n`` layers are in neither."""
    return ((fall.format(summarize_layers(lower)) if lower else none)
            + (rise.format(summarize_layers(higher)) if higher else "")
            + (rest if len(lower) + len(higher) < n else "."))


def swap_in_finding(verdicts, n_draws: int, n_items: int, items: str = "utterances") -> tuple[str, list[str]]:
    """``(sentence, details)``: which swaps lower the accuracy (the fine-tuned model needs those
    layers' own changes), which raise it, and for which we cannot tell; the details name the
    units (``n_items`` test ``items`` per draw: "headlines" for THUCNews) and the Bonferroni family
    (one swap per layer) and hold every verdict's text."""
    verdicts = list(verdicts)
    lower = [d for d, v in enumerate(verdicts) if v.kind == "lower"]
    higher = [d for d, v in enumerate(verdicts) if v.kind == "higher"]
    sentence = _moves_sentence(
        lower, higher, len(verdicts),
        fall="Putting back {} lowers the accuracy: the fine-tuned model needs those layers' own changes",
        none="For no single layer is putting back its pre-trained weights shown to lower the accuracy",
        rise="; putting back {} raises it", rest="; for the others we cannot tell.")
    details = [f"{n_draws} draws x {n_items} test {items}, paired with the fine-tuned model; intervals resample"
               f" draws and items, Bonferroni over the {len(verdicts)} swaps", *(v.text for v in verdicts)]
    return sentence, details


def pos_change_table(before: ProbeReport, after: ProbeReport, change, seed) -> tuple[list[dict], str]:
    """``(rows, title)``: per layer the part-of-speech probe's test accuracy before and after
    fine-tuning (the fine-tuned model of draw ``seed``), the paired change ``change`` in points
    (:func:`paired_accuracy_change`), the selectivity and the training accuracy after."""
    if not len(before.accuracy) == len(after.accuracy) == len(change):
        raise ValueError("before, after and change must cover the same layers.")
    rows = [{"layer": layer_label(l), "accuracy before": before.accuracy[l].percent(),
             "accuracy after": after.accuracy[l].percent(), "after - before, points": f"{100 * d.estimate:+.1f}",
             "selectivity after": after.selectivity[l].percent(),
             "after, on its training words": f"{after.train_accuracy[l]:.1%}"} for l, d in enumerate(change)]
    title = (f"POS probes, pre-trained (before) and fine-tuned draw {seed} (after), both trained to convergence:"
             " test accuracy [in brackets: uncertainty from resampling test sentences] and the paired change")
    return rows, title


def pos_change_finding(change, family: int, records) -> tuple[str, list[str]]:
    """``(sentence, details)``: the layers at which the part-of-speech probe reads less (or more)
    after fine-tuning, each layer's paired change ``change`` (read at
    ``family_level(family)``) turned into a verdict, Bonferroni over ``family`` layers; the details
    add the fine-tuned probes' training status (``records``)."""
    from helpers.common.stats import verdict
    from helpers.common.training import status_summary

    verdicts = [verdict(d, a=f"layer {l} after", b="before", family=family, percent=True)
                for l, d in enumerate(change)]
    lower = [l for l, v in enumerate(verdicts) if v.kind == "lower"]
    higher = [l for l, v in enumerate(verdicts) if v.kind == "higher"]
    sentence = _moves_sentence(
        lower, higher, len(verdicts),
        fall="After fine-tuning, the part-of-speech probe reads less at"
             + (" layer {}" if len(lower) == 1 else " layers {}"),
        none="No layer's part-of-speech accuracy is shown to fall after fine-tuning",
        rise="; it reads more at {}", rest="; for the other layers we cannot tell.")
    details = [f"paired per word, test sentences resampled once for both; {100 * family_level(family):.4g} %"
               f" intervals, Bonferroni over the {family} layers", *(v.text for v in verdicts),
               f"fine-tuned probes: {status_summary(records)}"]
    return sentence, details


def norm_lines(quartiles) -> str:
    """The word-vector norms per layer (``quartiles``: :func:`norm_quartiles`) as printed text: the
    median [25th, 75th percentile] of every layer, then the largest median over the smallest and
    the median at layer ``L`` over layer 1."""
    q25, med, q75 = quartiles
    L = len(med) - 1
    small, large = int(med.argmin()), int(med.argmax())
    return ("word-vector norm per layer, median [25th, 75th percentile]:\n  "
            + "; ".join(f"{layer_label(l)}: {med[l]:.1f} [{q25[l]:.1f}, {q75[l]:.1f}]" for l in range(L + 1))
            + "\n" + (f"largest median / smallest median: {med[large] / med[small]:.2f} (layer {large} / layer"
                      f" {small}); median at layer {L} / layer 1: {med[L] / med[1]:.2f}" if L > 0 else ""))
