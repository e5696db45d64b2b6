"""Lessons 04 and 10 (:mod:`helpers.classify`): the lesson in plain words, beside the numbers they phrase.

* which layer classifies best -- :func:`peak_layer_verdict`, :func:`layers_tied_with_peak`,
  :func:`layers_tied_with`, :func:`peak_finding`, :func:`ranking_finding`,
  :func:`layer_weights_finding`, :func:`family_table`, :func:`show_verdict`;
* against published numbers -- :data:`BERT_TABLE7`, :data:`BANKING77_PUBLISHED`,
  :data:`PUBLISHED_07`, :func:`reference_finding`; :func:`layer_name`.
"""

from __future__ import annotations

import numpy as np
import torch

from helpers.classify.comparisons import _runs, compare_paired, join_names, paired_comparison, points
from helpers.classify.strategies import layer_weights_summary
from helpers.common.stats import extreme_family, family_level


# Devlin et al. 2019, BERT paper, Table 7: feature-based approach on CoNLL-2003 NER,
# BERT-base, dev F1. Published reference numbers, not measured here.
BERT_TABLE7 = (
    ("embeddings", 91.0),
    ("second-to-last hidden", 95.6),
    ("last hidden", 94.9),
    ("weighted sum last four hidden", 95.9),
    ("concat last four hidden", 96.1),
    ("weighted sum all 12 layers", 95.5),
)


def layers_tied_with_peak(runs, margin: float | None = None) -> tuple[int, list[int], dict]:
    """``(peak, tied, verdicts)`` for per-layer :class:`SeededAccuracy` runs (index = layer): the layer
    with the highest accuracy, the layers **not shown lower** than it (every other layer compared
    with it paired on the same items; the peak is picked by the data, so the Bonferroni family is
    every pair of layers), and each layer's :class:`~helpers.common.stats.Verdict`. The peak is
    picked on the test items themselves, so its score is optimistic."""
    top = max(range(len(runs)), key=lambda l: runs[l].estimate)
    tied, verdicts = layers_tied_with(runs, top, margin, family=extreme_family(len(runs)))
    return top, tied, verdicts


def layers_tied_with(runs, layer: int, margin: float | None = None, family: int | None = None) -> tuple[list[int], dict]:
    """``(tied, verdicts)``: every other layer of per-layer :class:`SeededAccuracy` runs minus
    ``layer``, paired on the same items, one Bonferroni family (``family``: the other layers, or more
    when ``layer`` was picked from the same data); ``tied`` are the layers not shown lower than ``layer``."""
    if isinstance(layer, bool) or not isinstance(layer, int) or not 0 <= layer < len(runs):
        raise ValueError(f"layer must be an int in 0..{len(runs) - 1}, got {layer!r}.")
    others = [l for l in range(len(runs)) if l != layer]
    family = max(1, len(others)) if family is None else family
    comps = {l: paired_comparison(runs[l], runs[layer]) for l in others}
    verdicts = {l: comps[l].verdict(f"layer {l}", f"layer {layer}", margin=margin, family=family) for l in others}
    return [l for l in others if verdicts[l].kind != "lower"], verdicts


def peak_layer_verdict(runs, label: str, margin: float | None = None) -> str:
    """Where a list of per-layer :class:`SeededAccuracy` peaks, and which layers the paired
    comparisons (Bonferroni over every pair of layers) cannot place below it -- always computed, also when
    the peak is the last layer."""
    last = len(runs) - 1
    top, tied, verdicts = layers_tied_with_peak(runs, margin)
    where = "the last layer" if top == last else f"layer {top}"
    text = (f"{label} probes peak at {where}, {runs[top].interval().percent()} (picked on the test items, so "
            f"optimistic); not shown lower than it (Bonferroni over the {extreme_family(len(runs))} pairs of layers): "
            + (", ".join("emb" if l == 0 else str(l) for l in tied) if tied else "no other layer"))
    if top != last:
        text += f"; last layer: {verdicts[last].kind}, {points(verdicts[last].difference)}"
    return text


# --------------------------------------------------------------------------- findings, in plain words
def layer_name(layer: int) -> str:
    """``"layer 0 (the embeddings)"`` for 0, else ``"layer l"``."""
    return "layer 0 (the embeddings)" if layer == 0 else f"layer {layer}"


def _layers_text(layers) -> str:
    layers = list(layers)
    return ("layer " if len(layers) == 1 else "layers ") + join_names([str(l) for l in layers])


def peak_finding(runs, label: str) -> tuple[str, list[str]]:
    """``(sentence, details)``: where per-layer :class:`SeededAccuracy` runs peak, in plain words
    ("Mean-pooled probes score highest at layer 6 (84.5 %); every other layer scores lower."), and
    the paired comparisons behind it (every other layer minus the peak, Bonferroni over every pair
    of layers, since the peak is picked by the data) as the lines of a "How we know" block."""
    top, tied, verdicts = layers_tied_with_peak(runs)
    sentence = f"{label[0].upper()}{label[1:]} probes score highest at {layer_name(top)} ({100 * runs[top].estimate:.1f} %)"
    sentence += ("; every other layer scores lower." if not tied else
                 f"; {_layers_text(tied)} could be just as high.")
    details = [f"{label} probes: every other layer minus layer {top}, paired on the same test items, "
               f"{100 * family_level(extreme_family(len(runs))):.4g} % intervals (Bonferroni over the "
               f"{extreme_family(len(runs))} pairs of layers, since the peak is picked from the same data); layer "
               f"{top}: {runs[top].interval().percent()}, optimistic because picked on these items."]
    details += [verdicts[l].text for l in sorted(verdicts)]
    return sentence, details


def reference_finding(runs, reference: int, label: str, reference_name: str) -> tuple[str | None, list[str]]:
    """``(sentence or None, details)``: the layers that score **below** a reference layer chosen
    before looking (e.g. layer 0, the bag of words), each other layer minus it paired on the same
    test items, one Bonferroni family over the other layers. The sentence names every layer whose
    accuracy lies below the reference and says which of them the comparison shows lower -- "Mean-pooled
    layers 1 and 2 score below the layer-0 bag of words (72.8 %, 71.7 % vs 73.9 %); layer 2 is shown
    lower, for layer 1 we cannot tell." -- and is ``None`` when no layer lies below it."""
    tied, verdicts = layers_tied_with(runs, reference)
    ref = 100 * runs[reference].estimate
    # below by at least a twentieth of a point, so that a sentence never reads "74.5 % vs 74.5 %"
    below = [l for l in sorted(verdicts) if runs[l].estimate < runs[reference].estimate - 5e-4]
    details = [f"{label} probes: every other layer minus {reference_name} ({runs[reference].interval().percent()}), "
               f"paired on the same test items, Bonferroni over the {len(verdicts)} comparisons:"]
    details += [verdicts[l].text for l in sorted(verdicts)]
    if not below:
        return None, details
    shown = [l for l in below if verdicts[l].kind == "lower"]
    unsure = [l for l in below if verdicts[l].kind != "lower"]
    values = ", ".join(f"{100 * runs[l].estimate:.1f} %" for l in below)
    sentence = (f"{label} {_layers_text(below)} score{'s' if len(below) == 1 else ''} below {reference_name} "
                f"({values} vs {ref:.1f} %)")
    if not unsure:
        sentence += "; the comparison shows " + ("it" if len(below) == 1 else "each of them") + " lower."
    elif not shown:
        sentence += ("; with these data we cannot tell whether " + ("it is" if len(below) == 1 else "they are")
                     + " really lower.")
    else:
        sentence += (f"; {_layers_text(shown)} {'is' if len(shown) == 1 else 'are'} shown lower, for "
                     f"{_layers_text(unsure)} we cannot tell.")
    return sentence, details


def ranking_finding(named: dict, what: str = "scores highest", quote: bool = False) -> tuple[str, list[str]]:
    """``(sentence, details)`` for classifiers tested on the same items: the highest, and the others
    that could be just as high (each minus the best, paired; Bonferroni over every pair, since the
    best is picked by the data) -- "mean pooling, last layer scores highest (84.5 %); every other
    one scores lower." The details are :func:`compare_paired`'s lines. ``quote``: put the names in
    quotes (names that hold commas)."""
    est = {k: _runs(v).mean().item() for k, v in named.items()}
    q = (lambda k: f"'{k}'") if quote else (lambda k: k)  # noqa: E731
    best = max(named, key=est.__getitem__)
    others = [k for k in named if k != best]
    family = extreme_family(len(named))
    verdicts = {k: paired_comparison(named[k], named[best]).verdict(k, best, family=family) for k in others}
    tied = [k for k in others if verdicts[k].kind != "lower"]
    sentence = f"{q(best)} {what} ({100 * est[best]:.1f} %)"
    sentence = sentence[0].upper() + sentence[1:] if not quote else sentence
    sentence += ("; every other one scores lower." if not tied else
                 f"; {join_names([q(k) for k in tied])} could be just as high.")
    return sentence, compare_paired(named, width=None).split("\n") + [v.text for v in verdicts.values()]


def layer_weights_finding(weights) -> tuple[str, list[str]]:
    """``(sentence, details)`` for the learned scalar-mix weights ``[n_draws, L+1]``: where the
    weight sits ("The weighted-sum heads, with their pull toward equal weights chosen on the dev split, put
    40 % of their weight on layer 6 (mean over 5 draws; ...).")
    and the per-layer table of :func:`layer_weights_summary` as details."""
    weights = torch.as_tensor(weights, dtype=torch.float64, device="cpu")  # cpu: a table of results
    mean = weights.mean(0)
    top = int(mean.argmax())
    n = weights.shape[0]
    over = f"mean over {n} draws" if n > 1 else "one draw"
    sentence = (f"The weighted-sum heads, with their pull toward equal weights chosen on the dev split, put "
                f"{100 * mean[top]:.0f} % of their weight on {layer_name(top)} ({over}; a uniform mix would give "
                f"each of the {len(mean)} layers {100 / len(mean):.0f} %).")
    return sentence, layer_weights_summary(weights).split("\n")


def family_table(families: dict, title: str | None = None):
    """A :class:`~helpers.common.tables.TitledTable`, one row per head family (``families`` maps a
    name to its :class:`~helpers.common.training.TrainingRecord` list): how many heads, how many
    converged (the status column), the most L-BFGS iterations, the largest final gradient, the L2
    strengths the dev split chose, dev loss at step 0 and at the kept weights (median), training
    accuracy (range)."""
    from collections import Counter

    from helpers.common.tables import TitledTable, results_table
    from helpers.common.training import status_summary

    rows = []
    for name, records in families.items():
        records = list(records)
        chosen = Counter(r.choice for r in records)
        train = [r.train_accuracy for r in records]
        rows.append({
            "heads": name,
            "count": len(records),
            "status": status_summary(records),
            "L-BFGS iterations (most)": max(r.steps for r in records),
            "largest final gradient": f"{max(r.gradient for r in records):.1e}",
            "dev-split choice": "; ".join(f"{c} x{k}" for c, k in chosen.most_common()),
            "dev loss, step 0 -> kept (median)": (f"{float(np.median([r.step0[0] for r in records])):.2f} -> "
                                                  f"{float(np.median([r.kept[0] for r in records])):.2f}"),
            "training accuracy": (f"{100 * min(train):.1f} %" if min(train) == max(train)
                                  else f"{100 * min(train):.1f}-{100 * max(train):.1f} %"),
        })
    return TitledTable(results_table(rows, index="heads"), title)


# Casanueva et al. 2020, Efficient Intent Detection with Dual Sentence Encoders, Table 3: BANKING77, all 77
# intents, the full test set, accuracy in %. (training utterances per intent, None = the full training data;
# system; accuracy). Different models from any this course runs: published reference numbers, not measured here.
BANKING77_PUBLISHED = (
    (10, "USE+ConveRT (fixed dual sentence encoders + classifier)", 85.19),
    (None, "USE+ConveRT (fixed dual sentence encoders + classifier)", 93.36),
    (None, "BERT-Large fine-tuned on it (their BERT-TUNED)", 93.66),
)


# Lesson 10's "claims tested" table: the popular claim and the published finding (paper and
# model it was measured on). The lesson adds the middle column from its own run.
PUBLISHED_07 = {
    "fewshot": ("a frozen sentence encoder with a linear head is a strong few-shot intent classifier",
                "Casanueva et al. 2020, Table 3 (BANKING77, all 77 intents, full test set; different models): "
                "USE+ConveRT (fixed dual sentence encoders + classifier) 85.19% with 10 examples per intent, 93.36% "
                "with the full training data; BERT-Large fine-tuned on the full training data 93.66%"),
    "pooler": ("`pooler_output` is the [CLS] vector",
               "Devlin et al. 2019, BERT (BERT-base/large): the pooler is a dense + tanh layer on the final "
               "[CLS] vector, trained with next-sentence prediction"),
    "cls": ("[CLS] is the sentence representation",
            "Reimers & Gurevych 2019, Sentence-BERT, Table 1 (BERT-base, no fine-tuning, STS benchmark, "
            "Spearman x100; a similarity task, not a trained probe): [CLS] vector 16.50, mean of output vectors 46.35"),
    "last": ("the last layer gives the best features",
             "Liu et al. 2019, Linguistic Knowledge and Transferability of Contextual Representations (BERT-base/large, "
             "token-level probing tasks): the middle layers of transformers transfer best; Devlin et al. 2019 Table 7 "
             "(BERT-base, CoNLL-2003 NER dev F1): second-to-last 95.6 vs last 94.9"),
    "combine": ("combining layers beats the last layer",
                "Devlin et al. 2019 Table 7 (BERT-base, CoNLL-2003 NER dev F1): concat last four 96.1, "
                "weighted sum of last four 95.9, last hidden 94.9"),
}


def show_verdict(v, **sentence_kw):
    """:func:`~helpers.common.claims.show_claim` of a verdict whose sentence starts with a capital
    letter also when it opens with A's name ("the fine-tuned model beats ..."): name A and B in
    lower case, as they read in the middle of a sentence ("we cannot tell whether the fine-tuned
    model or ..."). Returns the :class:`~helpers.common.claims.Claim`."""
    from helpers.common.claims import claim, show_claim

    sentence = claim(v, **{k: w for k, w in sentence_kw.items() if k not in ("table", "extra")}).sentence
    return show_claim(v, sentence=sentence[0].upper() + sentence[1:], **sentence_kw)
