# ---
# jupyter:
#   jupytext:
#     cell_metadata_filter: mystnb,tags,-all
#     formats: ipynb,py:percent
#     notebook_metadata_filter: kernelspec,jupytext,-all
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 09 — From word meaning to meaning in context
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/bert-layer-by-layer/bert-layer-by-layer/blob/main/lessons/09_meaning_in_context.ipynb)
#
# Names and counting ($L, H, A, d, I, n$; layers from 1, heads from 0): see the [conventions](00_big_picture.ipynb#conventions) box of lesson 00.
#
# The embedding layer gives "bank" one vector whatever the sentence; the encoder layers
# mix in the context. In this lesson we measure when the two senses of an ambiguous word
# come apart, how much a word's vector varies across contexts at each layer, and which
# tokens of a sentence a token is closest to as it climbs the stack.
#
# Every per-layer statistic is measured over the ambiguous words of the course data (printed
# below). Each measured claim is printed as one plain sentence generated from the numbers, with
# its evidence folded in a *How we know* block beneath (click to open). The evidence resamples
# **words**, since a word's sentences share its sense centroids and are not independent; where a
# statistic peaks is never one layer read off the means, but the peak with every layer that "could
# be just as high" ("could be", never "the same"); "we cannot tell" means the data do not decide.
# Where your `SENTENCE` contains one of the words, it is placed beside the aggregate.
#
# Ethayarajh (2019) measured **BERT-base** (masked-LM and next-sentence pre-training). The
# bundled checkpoint has a longer history: all-MiniLM-L6-v2 was fine-tuned contrastively as a
# sentence encoder from a 6-layer model that keeps **every second layer** of MiniLM-L12-H384,
# which Wang et al. (2020, *MiniLM*) distilled from a BERT-base-sized teacher by copying its
# self-attention. Its layer numbers therefore do not map to BERT-base's, and the self-similarity
# profile may come from that history rather than from BERT's architecture. When the loaded
# checkpoint is not BERT-base (the load cell says, with `paper_comparison` from
# `helpers/model/loading.py`), the comparison is labelled "different model and training
# objective"; a section near the end repeats the measure on **course-mini**, a small BERT the
# course pre-trained with BERT's own objectives. `MODEL = "bert-base-uncased"` in the Parameters
# cell reruns the lesson on BERT-base (it needs the Hugging Face hub).
#
# The first cell installs the course when you run it on Google Colab; on your own
# machine it does nothing.

# %%
# NBVAL_CHECK_OUTPUT
import sys

# Colab: fetch the course, keep Colab's torch and ipywidgets
if "google.colab" in sys.modules:
    import subprocess

    url = "https://github.com/bert-layer-by-layer/bert-layer-by-layer"
    subprocess.run(["git", "clone", "-q", "--depth", "1", url,
                    "/content/course"])
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "-e",
                    "/content/course"], check=True)
    sys.path.insert(0, "/content/course")
else:
    print("Running locally: nothing to install.")

# %% [markdown]
# ## Parameters
#
# `MODEL` names the checkpoint (`None`: the course chooses; any hub id or local folder
# works). `SENTENCE` is placed beside the aggregate when it contains one of the data's words,
# and gives the example of the nearest-neighbour section. Nothing below depends on a
# particular size or sentence.
#
# `LANGUAGE` picks the language of the data (`None`: the one the model's tokenizer reads,
# `model_language` in `helpers/common/language.py`; `"en"` or `"zh"` for a model that reads both).

# %% tags=["parameters"]
MODEL = None
SENTENCE = "The bank by the river was unbelievably quiet this morning."
LANGUAGE = None  # None: the data follow the model; or "en", "zh"

# %% [markdown]
# ## The data: ambiguous words in context
#
# `data/polysemy.json` and `data/polysemy_more.json` hold ambiguous English words, two senses
# each, written for this course (CC0); `data/polysemy_zh.json` holds twelve Chinese ones (行,
# 打, 花, 会, ...). The data follow the model: its tokenizer says which language it reads
# (`model_language` in `helpers/common/language.py`) and `polysemy_for` loads that set. The cell
# below prints the words and the number of sentences per sense. If the tokenizer maps a word to
# its unknown token, we say so and skip it.
#
# The modules used: `helpers/model/loading.py` (`load_model`, `paper_comparison`), `helpers/model/trace.py`
# (`trace_text`), `helpers/model/tokens.py` (`is_unknown`, `longest_word`),
# `helpers/common/data.py` (`load_polysemy`), `helpers/common/stats.py` (the intervals and
# verdicts behind every claim, gathered from `helpers/common/intervals.py`: `Interval`,
# `accuracy_ci`, and `helpers/common/bootstrap.py`: `cluster_bootstrap_ci`),
# `helpers/common/claims.py` (`show_finding`: a claim in plain words, its evidence folded),
# `helpers/layerwalk/baselines.py` (`random_pair_cosines`, `random_pair_units`,
# `random_pair_intervals`, `pair_difference`), `helpers/layerwalk/findings.py`
# (`profile_finding`), `helpers/common/ranking.py` (`rank_layers`),
# `helpers/attention/comparisons.py` (`above_threshold`) and this lesson's
# `helpers/context/compute.py` and `helpers/context/plots.py`.

# %%
import matplotlib.pyplot as plt
import numpy as np
import torch
import torch.nn.functional as F

from helpers.model.loading import load_model, paper_comparison
from helpers.model.trace import trace_text
from helpers.common.language import model_language, polysemy_for
from helpers.common.progress import progress
from helpers.common.tables import show_table
from helpers.attention.compute import above_threshold
from helpers.common.claims import show_finding
from helpers.common.stats import Interval, accuracy_ci, cluster_bootstrap_ci
from helpers.context import compute, plots
from helpers.layerwalk.compute import (
    names_phrase,
    pair_difference,
    profile_finding,
    random_pair_cosines,
    random_pair_intervals,
    random_pair_units,
    rank_layers,
)
from helpers.model.tokens import is_unknown, longest_word

loaded = load_model(MODEL)
tokenizer, model = loaded
language = model_language(tokenizer, lesson="09",
                          choice=LANGUAGE)  # the data follow the model
L = model.config.num_hidden_layers
polysemy = polysemy_for(language)
# is this the BERT-base that Ethayarajh (2019) measured?
paper = paper_comparison(loaded)
print(f"against Ethayarajh's BERT-base: {paper.label}")
for word, senses in polysemy.items():
    print(
        f"{word!r}: "
        + ", ".join(f"{s} ({len(v)} sentences)" for s, v in senses.items())
    )


# %% [markdown]
# Where this lesson sits on the map of lesson 00 (`you_are_here`, in
# `helpers/architecture/plots.py`):

# %% mystnb={"figure": {"caption": "The course's map of BERT from lesson 00, with the encoder layer repeated $L$ times in the loaded model. The orange frame marks what this lesson follows: the whole encoder layer, through which context is mixed into each word's vector.", "name": "fig-09-you-are-here"}}
from helpers.architecture.plots import LESSON_PARTS, you_are_here

you_are_here(model.config, LESSON_PARTS["09"]);

# %% [markdown]
# We trace every sentence once and keep the target word's vector at every layer. A word
# that the tokenizer splits into several WordPieces is represented by the **mean of its
# pieces** (a Chinese word of two characters, such as 意思, is two tokens, one per character,
# found by its character span: the mean of its characters) (`compute.word_by_layer` in `helpers/context/compute.py`, which finds them with
# `trace.find_word`). As a check that does not go through that helper, the pieces found
# must spell the word (up to case). We also keep the word's position in each sentence and its
# token ids.

# %%
jobs = [
    (w, s, x)
    for w, senses in polysemy.items()
    for s, xs in senses.items()
    for x in xs
]
vectors, positions, ids, traces = {}, {}, {}, []
for word, sense, text in progress(jobs, desc="tracing polysemy sentences"):
    if is_unknown(tokenizer, word):
        continue
    t = trace_text(tokenizer, model, text)
    span = t.find_word(word)
    spelled = "".join(p.removeprefix("##") for p in span.pieces)
    if spelled.lower() != word.lower():
        raise ValueError(
            f"in {text!r} the pieces {span.pieces} found for {word!r} spell"
            f" {spelled!r}, not the word."
        )
    traces.append(t)
    vectors.setdefault(word, {}).setdefault(sense, []).append(
        compute.word_by_layer(t, word)
    )
    positions.setdefault(word, {}).setdefault(sense, []).append(span.first)
    ids.setdefault(word, set()).add(
        tuple(t.input_ids[span.positions].tolist())
    )
groups = {
    w: {s: torch.stack(v) for s, v in senses.items()}
    for w, senses in vectors.items()
}
skipped = [w for w in polysemy if w not in groups]
if not groups:
    raise ValueError(
        "this tokenizer maps every target word of the polysemy data to"
        f" {tokenizer.unk_token}: use an English vocabulary (e.g. MODEL = None"
        " or 'bert-base-uncased') for this lesson."
    )
print(
    f"{len(traces)} sentences traced for {len(groups)} words; vectors per"
    " sense: [n_sentences, L + 1, H] ="
    f" {tuple(next(iter(next(iter(groups.values())).values())).shape)}"
)
print(
    "words split into several pieces:"
    f" {[w for w in groups if len(tokenizer.tokenize(w)) > 1] or 'none'};"
    f" skipped (unknown to the tokenizer): {skipped or 'none'}"
)
if language == "zh":
    many = [w for w in groups if len(w) > 1]
    print(f"Chinese: every character is one token, so {len(many)} words of"
          f" several characters ({', '.join(many) or 'none'}) are the mean"
          " of their characters' vectors")
# e.g. 'Spring' and 'spring' differ in a cased vocabulary
same_ids = all(len(v) == 1 for v in ids.values())
print(
    "every word has the same token ids in all its sentences"
    if same_ids
    else (
        "words with different token ids in different sentences:"
        f" {[w for w, v in ids.items() if len(v) > 1]}"
    )
)

# %% [markdown]
# ## The anisotropy baseline, again
#
# As in lesson 07, we first measure how similar two *random* tokens of different sentences
# are at each layer (Ethayarajh, 2019, who defined this within-layer baseline):
# similarities below only mean something above it. `random_pair_cosines` is defined in
# `helpers/layerwalk/baselines.py`. The 500 pairs come from the 120 data sentences, so every
# sentence sits in many pairs: the interval of each mean resamples **sentences**, not pairs
# (`random_pair_units` names each pair's two sentences; `random_pair_intervals`).

# %%
# [500, L+1]
baseline_samples = random_pair_cosines(traces, n_pairs=500, seed=0)
pair_units = random_pair_units(traces, n_pairs=500, seed=0)
baseline = baseline_samples.mean(dim=0)
baseline_ci = random_pair_intervals(baseline_samples, pair_units)
baseline_table = show_table(
    [
        {"layer": "emb" if l == 0 else l, "random-pair cosine": str(ci)}
        for l, ci in enumerate(baseline_ci)
    ],
    index="layer",
    title="random-pair cosine per layer, 500 pairs: mean [95 % CI,"
    " resampling sentences]",
)

# %% [markdown]
# ## Same sense vs different sense
#
# For each word: the mean cosine between uses of the **same** sense (pairs of different
# sentences) minus the mean cosine between uses of **different** senses
# (`compute.within_across_gap`). At layer 0 the word's token embedding is the same
# everywhere and only the position embedding differs; the gap that opens in higher layers
# is what context adds. Each word is a grey line; the blue line is the mean over words
# (`plots.plot_words_and_mean`, in `helpers/context/plots.py`). The largest gap is named with
# every layer that could be just as large (`rank_layers`: the layers compared on the same words),
# and each layer's gap is checked against 0 (`above_threshold`, in `helpers/attention/comparisons.py`).

# %% mystnb={"figure": {"caption": "For each ambiguous word of the course data: mean cosine between uses of the same sense minus mean cosine between uses of different senses, per layer. Grey: each word; blue: mean over words, band: 95 % CI resampling words; dashed: no gap. See at which layers the band lies above the dashed line.", "name": "fig-09-within-across-gap"}}
gaps = {
    word: compute.within_across_gap(senses) for word, senses in groups.items()
}
ax = plots.plot_words_and_mean(
    gaps,
    title="within-sense minus across-sense cosine",
    ylabel="cosine gap",
    reference=0.0,
    reference_label="no gap",
)
plt.show()

# %%
gap_values = torch.stack(list(gaps.values()))  # [words, L + 1]
gap_rank = rank_layers(gap_values, lowest=False, unit="words")
gap_ci = gap_rank.intervals
best_gap = gap_rank.extreme
layer_labels = ["the embeddings"] + [f"layer {l}" for l in range(1, L + 1)]
# 0-based columns = layers
gap_test = above_threshold(gap_values, 0.0)
gap_above_zero = gap_test["above"]
gap_table = show_table(
    [
        {
            "layer": "emb" if l == 0 else l,
            "mean gap over words [95 % CI]": str(ci),
        }
        for l, ci in enumerate(gap_ci)
    ],
    index="layer",
    title=f"within- minus across-sense cosine, {len(gaps)} words",
)
unsure = [layer_labels[l] for l in range(L + 1) if l not in gap_above_zero]
sentence, details = profile_finding(
    gap_rank, layer_labels, what="the mean gap between same-sense and"
    " different-sense uses"
)
gap_claim = show_finding(
    sentence + (" It is above 0 at every layer." if not unsure else
                f" We cannot tell whether it is above 0 at"
                f" {names_phrase(unsure)}."),
    details + [
        "above 0, one-sided, Bonferroni over the layers (the lower end of"
        " each interval is the one-sided bound): "
        + "; ".join(f"{layer_labels[l]} {iv} (adjusted p"
                    f" {gap_test['p_adjusted'][l]:.2g})"
                    for l, iv in enumerate(gap_test["intervals"]))
    ],
)

# %% [markdown]
# ## Can a layer tell the senses apart?
#
# The *sense-separation score* of a layer is a leave-one-out nearest-centroid accuracy:
# leave one sentence out, average the vectors of each sense over the rest,
# $c_s = \frac{1}{|S_s|}\sum_{i \in S_s} h_i$, and assign the left-out sentence to the sense
# with the most similar centroid, $\arg\max_s \cos(h, c_s)$. Each sentence is one test item,
# so one word's accuracy gets the exact (Clopper-Pearson) interval over its sentences
# (`accuracy_ci`); one word has only the sentences printed above, which the width of its interval
# shows. Pooled over all words, the sentences of one word are not independent (they share the
# word's centroids and vectors), so the pooled accuracy's interval resamples **words**
# (`cluster_bootstrap_ci`); with a dozen words it is widened to what so few units allow (the
# course's small-sample rule, `helpers/common/bootstrap.py`). First one item by hand:

# %%
word0, senses0 = next(iter(groups.items()))
names = list(senses0)
held_out = senses0[names[0]][0]
centroids = torch.stack(
    [senses0[names[0]][1:].mean(0), senses0[names[1]].mean(0)]
)
by_hand = (
    F.cosine_similarity(held_out.unsqueeze(0), centroids, dim=-1).argmax(0)
    == 0
)
# {word: [n, L+1]}
outcomes = {w: compute.sense_separation_outcomes(s) for w, s in groups.items()}
print(
    f"{word0!r}, first {names[0]!r} sentence classified correctly per layer,"
    f" by hand: {by_hand.tolist()}"
)
print(
    "compute.sense_separation_outcomes agrees:"
    f" {bool((outcomes[word0][0] == by_hand).all())}"
)

# %% [markdown]
# Chance would be 50 % for two senses, but a flat 50 % line is the wrong reference here.
# With no signal, a sentence's own centroid rests on one sentence fewer than the other
# sense's, so it is noisier and, for vectors that share a common direction (as a layer's
# vectors do), on average a little farther away: the rule tends to score **below** chance.
# The right reference is the same rule on the same vectors with the sense labels shuffled
# (`compute.permutation_null`: 200 seeded shuffles per word, each word with its own seed, so the
# words' shuffles are independent and their pooled null is not made wider by shuffling every
# word the same way): the grey band below. The best layer is named with every layer that could be
# just as good: the same sentences at every layer, whole words resampled (`rank_layers` with
# `clusters`).

# %% mystnb={"figure": {"caption": "Leave-one-out nearest-centroid accuracy per layer: each held-out sentence goes to the sense with the nearest centroid (cosine). First panel: all words pooled (band: 95 % CI resampling words); then one panel per word (band: exact Clopper-Pearson interval). Hatched grey: 95 % range of 200 label shuffles, dashed: their mean. Compare each curve with its hatched band, not 50 %.", "name": "fig-09-sense-separation"}}
# every sentence of every word, [sentences, L + 1]
pooled = torch.cat(list(outcomes.values())).float()
# each sentence's word: the cluster
word_of = np.concatenate([[w] * len(o) for w, o in outcomes.items()])
# resampling words, one interval per layer
pooled_ci = cluster_bootstrap_ci(pooled, word_of, n_boot=2000)
# the same sentences at every layer, whole words resampled
acc_rank = rank_layers(pooled, lowest=False, clusters=word_of, unit="words")
word_ci = {
    w: [accuracy_ci(o[:, l]) for l in range(L + 1)]
    for w, o in outcomes.items()
}
null = compute.permutation_null(groups, n_perm=200, seed=0)
plots.plot_accuracy_panels(word_ci, pooled=pooled_ci, null=null)
plt.show()

# %%
best_acc = acc_rank.extreme
shuffles = null["all words, pooled"].cpu().numpy()  # [shuffles, L + 1]
null_low, null_high = np.percentile(shuffles, [2.5, 97.5], axis=0)
pooled_table = show_table(
    [
        {
            "layer": "emb" if l == 0 else l,
            "accuracy [95 % CI]": ci.percent(0),
            "shuffled labels: mean (95 % range)": (
                f"{shuffles[:, l].mean():.0%}"
                f" ({null_low[l]:.0%}-{null_high[l]:.0%})"
            ),
        }
        for l, ci in enumerate(pooled_ci)
    ],
    index="layer",
    title=(
        f"nearest-centroid accuracy, pooled over {len(pooled)} sentences of"
        f" {len(outcomes)} words (CIs resample words), and over"
        f" {len(shuffles)} label shuffles"
    ),
)
sentence, details = profile_finding(
    acc_rank, layer_labels, what="the pooled accuracy", percent=True
)
acc_claim = show_finding(sentence, details)

# %% [markdown]
# At the embedding layer, where a word has the same token ids in every sentence (printed after
# the tracing: a cased vocabulary can give "Spring" and "spring" different ids), its vectors
# differ only by the position embedding (the segment embedding is the same too; a word split
# into pieces is the mean of the same pieces each time), so a layer-0 accuracy away from the
# shuffled ones says where the word sits in our sentences, not what it means. The pooled
# comparison with the shuffles decides (`compute.permutation_p_value`). Per word, a word's few
# sentences can be relabelled in only so many ways (`compute.layer_null` scores every one of
# them), which limits how clear a single word can ever be: the block says whether, with this many
# words, any word could be told apart from its shuffles at all. The two words furthest from their
# shuffles are printed with the word's token position in each sentence, per sense, so you can see
# whether position could explain them.

# %%
null_pooled = null_low[0], null_high[0]  # layer 0 of the table above
emb_null_p = compute.permutation_p_value(
    float(pooled[:, 0].mean()), null["all words, pooled"][:, 0]
)
# {word: (accuracies, exact)}
seeds = np.random.SeedSequence(1).spawn(len(groups))
null0 = {w: compute.layer_null(g, 0, seed=seed)
         for (w, g), seed in zip(groups.items(), seeds)}
p_values = {
    w: compute.permutation_p_value(
        float(outcomes[w][:, 0].float().mean()), acc, exact=exact
    )
    for w, (acc, exact) in null0.items()
}
smallest = {
    w: compute.permutation_p_value(
        float(acc[(acc - acc.mean()).abs().argmax()]), acc, exact=exact
    )
    # the p of the most extreme relabelling: the best a word can do
    for w, (acc, exact) in null0.items()
}
# Bonferroni over the words
p_words = {w: min(1.0, p * len(p_values)) for w, p in p_values.items()}
clear = [w for w, p in p_words.items() if p < 0.05]
reachable = len(groups) * min(smallest.values()) < 0.05
emb_claim = show_finding(
    f"At the embeddings the pooled accuracy is {pooled_ci[0].estimate:.0%},"
    f" against {shuffles[:, 0].mean():.0%} with shuffled labels (chance"
    f" {1 / len(names):.0%}): "
    + ("the embeddings place the uses better than shuffled labels."
       if emb_null_p < 0.05 and pooled_ci[0].estimate > shuffles[:, 0].mean()
       else "worse than shuffled labels." if emb_null_p < 0.05 else
       "we cannot tell it apart from the shuffles, which is not evidence"
       " that layer 0 knows nothing.")
    + (f" Word by word, {names_phrase(clear)} stand out." if clear else
       " No single word can be told apart from its own shuffles"
       + ("." if reachable else ": with so few sentences per word, none"
          " ever could."))
    ,
    [f"pooled, layer 0: {pooled_ci[0].percent(0)} (resampling words);"
     f" shuffled labels: mean {shuffles[:, 0].mean():.0%}, 95 % range"
     f" {null_pooled[0]:.0%}-{null_pooled[1]:.0%}; permutation p ="
     f" {emb_null_p:.2g}",
     f"per word: exact permutation test, Bonferroni over {len(groups)}"
     f" words; the smallest p any word can reach is"
     f" {min(smallest.values()):.3f}, so the smallest adjusted p is"
     f" {min(1.0, len(groups) * min(smallest.values())):.2g}"]
    + [f"{w!r}: {outcomes[w][:, 0].float().mean():.0%} at layer 0, shuffled"
       f" mean {null0[w][0].mean():.0%}, p = {p_values[w]:.2g}"
       f" ({'exact' if null0[w][1] else 'sampled'}), adjusted"
       f" {p_words[w]:.2g}"
       for w in sorted(p_values, key=p_values.get)],
)
for w in sorted(p_values, key=p_values.get)[:2]:
    where = "; ".join(f"{s}: {positions[w][s]}" for s in groups[w])
    print(
        f"  {w!r}: {outcomes[w][:, 0].float().mean():.0%} at layer 0,"
        f" shuffled mean {null0[w][0].mean():.0%}; positions of {w!r},"
        f" {where}"
    )

# %% [markdown]
# ## Self-similarity across layers
#
# Ethayarajh (2019) defines a word's *self-similarity* at a layer as the mean cosine between
# its vectors in different contexts. He reads it **minus** the within-layer random-pair
# baseline ("self-similarity above expected"), and on BERT-base (and ELMo, GPT-2) found that
# this adjusted value falls almost monotonically with depth: the upper layers are the most
# context-specific. **The measure is like for like; the words are not.** His words were those of a
# general corpus (the SemEval Semantic Textual Similarity sentences) that occur in several
# contexts, whatever their number of senses; ours are the ambiguous words printed at the top,
# chosen *because* they have two senses, each in a handful of sentences written for the course.
# Words picked for their ambiguity can vary more across contexts than a corpus's words do, so read
# the level of the self-similarity as a fact about these words; the comparison with him is about
# its profile over the layers. We pool both senses of each word and tabulate three things per layer:
# the raw self-similarity (mean over words), the baseline, and the adjusted value, raw minus
# baseline. The adjusted value's evidence resamples the words and the baseline's sentences, so the
# baseline's own uncertainty counts.

# %%
# [words, L+1]
raw_self = torch.stack([
    compute.self_similarity(torch.cat(list(s.values())))
    for s in groups.values()
])
raw_rank = rank_layers(raw_self, lowest=True, unit="words")
adj_rank = rank_layers(
    raw_self, lowest=True, control=baseline_samples, control_units=pair_units,
    unit="words",
)
self_sim_table = show_table(
    [
        {
            "layer": "emb" if l == 0 else str(l),
            "raw": str(raw_rank.intervals[l]),
            "baseline": str(baseline_ci[l]),
            "adjusted": str(adj_rank.intervals[l]),
        }
        for l in range(L + 1)
    ],
    index="layer",
    title="Self-similarity per layer, mean [95 % CI]: raw (over the words);"
    " the random-pair baseline (resampling sentences); adjusted, raw minus"
    " baseline (resampling both)",
)
print(
    f"{len(groups)} ambiguous words chosen for two senses each"
    f" ({sum(len(torch.cat(list(s.values()))) for s in groups.values())}"
    " sentences), not corpus-sampled words as in Ethayarajh (2019): the"
    " measure is his, the words are not"
)

# %% mystnb={"figure": {"caption": "Self-similarity (mean cosine between a word's vectors in different sentences, senses pooled) per layer. Top: raw, random-pair baseline dashed; bottom: raw minus that baseline, zero line solid. Grey: each word; blue: mean over words, band: 95 % CI resampling words (baseline held fixed). Compare the bottom curve's shape with the top one's.", "name": "fig-09-self-similarity"}}
axes = plots.plot_raw_and_adjusted(dict(zip(groups, raw_self)), baseline)
plt.show()

# %% [markdown]
# Does this model follow Ethayarajh? Before answering, one more check. A few dimensions can
# dominate a cosine (lesson 07: Timkey and van Schijndel 2021 found 1–3 "rogue" dimensions in
# BERT, RoBERTa, GPT-2 and XLNet), and subtracting a baseline is only one way to correct for
# anisotropy. So the adjusted self-similarity is computed three ways
# (`compute.self_similarity_variants`): as Ethayarajh defined it; after removing each layer's mean
# vector over the data's content tokens (mean-centring, as Mu and Viswanath 2018 did for static
# word vectors); and after also dividing each dimension by its standard deviation (standardising,
# Timkey and van Schijndel's correction), the baseline redone the same way each time. Per way,
# where the profile is lowest (with every layer that could be as low) and which steps from one
# layer to the next rise or fall. If all three agree, the verdict does not depend on how
# anisotropy is corrected; if they disagree, **that** is the verdict.

# %%
variants = compute.self_similarity_variants(groups, traces, n_pairs=500,
                                            seed=0)
variant_table = show_table(
    [
        {"layer": "emb" if l == 0 else str(l)}
        | {name: f"{v['rank'].intervals[l].estimate:.3f}"
           for name, v in variants.items()}
        for l in range(L + 1)
    ],
    index="layer",
    title="self-similarity minus its random-pair baseline, three ways",
)
kind = {"higher": "rise", "lower": "fall"}
step_table = show_table(
    [
        {"step": f"{layer_labels[l - 1]} → {layer_labels[l]}"}
        | {name: kind.get(v["steps"][l - 1].kind, "cannot tell")
           for name, v in variants.items()}
        for l in range(1, L + 1)
    ],
    index="step",
    title="adjusted self-similarity, one layer to the next, three ways",
)

# %%
ethayarajh = compute.ethayarajh_verdict(variants)
verdict_kind, sentence, details = ethayarajh
# the raw value alone, without any correction: where is it lowest, and why
raw_low, adj_low = raw_rank.extreme, adj_rank.extreme
trap = [f"raw self-similarity alone: lowest at {layer_labels[raw_low]}"
        f" {raw_rank.intervals[raw_low]}"]
if raw_low != adj_low:  # the baseline, paired over the same pairs
    base_diff = pair_difference(baseline_samples, pair_units, raw_low, adj_low)
    trap.append(f"baseline at {layer_labels[raw_low]} minus at"
                f" {layer_labels[adj_low]}: {base_diff} (95 % CI resampling"
                " sentences), which moves the lowest point")
self_claim = show_finding(sentence, details + trap)
print(paper.caveat("the self-similarity profile and where it is lowest"))

# %% [markdown]
# ## BERT's architecture, or this checkpoint's training?
#
# The bundled checkpoint was distilled and then trained contrastively as a sentence encoder (see
# the top of the lesson), and both can shape how much a word's vectors vary across contexts. To
# see which parts of the verdict come from that training, the same three measures run on
# **course-mini** (`load_model("course-mini")`, model card `data/course_mini/README.md`), a small
# BERT the course pre-trained with BERT's own objectives, masked-LM and next-sentence prediction,
# on the same sentences (`compute.polysemy_vectors` traces them). What it cannot tell: course-mini
# is tiny (4 layers, 256 wide), has seen only Shakespeare and the King James Bible (our sentences
# about computer mice and factories are far outside it, and some words split into several pieces)
# and reads at most 128 tokens; its layer numbers map to neither model's.

# %%
from helpers.common.language import LANGUAGES
from helpers.model.loading import COURSE_MINI

mini_verdict = None
if loaded.choice.name == COURSE_MINI:
    print("The loaded model is course-mini itself: nothing to compare.")
elif language != "en":  # course-mini reads English only
    print(f"Skipped: course-mini was pre-trained on English text only and"
          f" cannot read the {LANGUAGES[language][0]} polysemy sentences.")
else:
    mini_tok, mini_model = load_model(COURSE_MINI)
    mini_groups, mini_traces = compute.polysemy_vectors(mini_tok, mini_model,
                                                        polysemy)
    mini_variants = compute.self_similarity_variants(
        mini_groups, mini_traces, n_pairs=500, seed=0
    )
    mini_verdict = compute.ethayarajh_verdict(mini_variants,
                                              who="course-mini")
    his = compute.SELF_SIMILARITY_VARIANTS[0]
    L_mini = len(mini_variants[his]["rank"].intervals) - 1
    mini_table = show_table(
        [
            {"layer": "emb" if l == 0 else str(l)}
            | {f"{who}: {name}": (f"{ivs[l].estimate:.3f}"
                                  if l < len(ivs) else "")
               for who, v in (("this model", variants),
                              ("course-mini", mini_variants))
               for name in (his, compute.SELF_SIMILARITY_VARIANTS[1])
               for ivs in [v[name]["rank"].intervals]}
            for l in range(max(L, L_mini) + 1)
        ],
        index="layer",
        title="self-similarity minus its random-pair baseline (as Ethayarajh"
        " defined it, and after mean-centring): this model and course-mini",
    )
    mini_kind, mini_sentence, mini_details = mini_verdict
    mini_claim = show_finding(
        mini_sentence
        + (f" The two checkpoints get the same verdict ({verdict_kind})."
           if mini_kind == verdict_kind else
           f" So the verdict differs between the two checkpoints (this model:"
           f" {verdict_kind}; course-mini: {mini_kind}): it depends on how a"
           " checkpoint was trained, not on BERT's architecture alone."),
        mini_details,
    )

# %% [markdown]
# ## Your sentence beside the aggregate
#
# If `SENTENCE` contains one of the words printed above, where does its use sit? Per layer, the
# margin "cosine with the first sense's centroid minus cosine with the second's"
# (`compute.centroid_margin_verdicts`); its evidence resamples the data sentences behind each
# centroid, every layer read at once. Where we cannot tell which centroid is nearer, the centroids
# (a few sentences per sense) are too uncertain for so small a margin, which does not make the two
# senses equally near.

# %%
trace = trace_text(tokenizer, model, SENTENCE)
present = [w for w in groups if any(x.lower() == w for x in trace.words())
           or language == "zh" and w in SENTENCE]  # Chinese: no spaces
if present:
    word = present[0]
    first, second = groups[word]
    margins = compute.centroid_margin_verdicts(
        compute.word_by_layer(trace, word), groups[word]
    )
    nearer = {"higher": f"nearer {first!r}", "lower": f"nearer {second!r}"}
    margin = f"cos with {first!r} minus cos with {second!r}"
    margin_table = show_table(
        [
            {
                "layer": "emb" if l == 0 else str(l),
                margin: f"{m.difference.estimate:+.3f}",
                "reading": nearer.get(m.kind, "cannot tell"),
            }
            for l, m in enumerate(margins)
        ],
        index="layer",
        title=f"{word!r} in SENTENCE against the two sense centroids",
    )
    sides = {k: [layer_labels[l] for l, m in enumerate(margins)
                 if m.kind == k] for k in ("higher", "lower")}
    said = [f"nearer the {s!r} centroid at {names_phrase(sides[k])}"
            for s, k in ((first, "higher"), (second, "lower")) if sides[k]]
    margin_claim = show_finding(
        f"{word!r} in SENTENCE is " + " and ".join(said)
        + ("; we cannot tell at the other layers." if said and
           len(sum(sides.values(), [])) < L + 1 else ".")
        if said else
        f"At no layer can we tell which sense {word!r} in SENTENCE is"
        " nearer: its margins are too small for centroids that rest on a"
        " few sentences each.",
        [m.text for m in margins],
    )
else:
    print(
        f"SENTENCE contains none of {sorted(groups)}: nothing to place beside"
        " the aggregate."
    )

# %% [markdown]
# ## Nearest neighbours inside one sentence
#
# Which other tokens of `SENTENCE` is a word closest to? We pick the word of `SENTENCE` that
# the tokenizer splits into the most pieces (by code), represent it by the mean of its pieces
# as above, and list its nearest tokens at the embedding layer and at the last layer, leaving
# out its own pieces (`compute.word_neighbours`). The cross-sentence random-pair baseline is the
# wrong reference here: the neighbours share the word's sentence, the word is a mean of pieces,
# and we keep only the top few, and all three raise a cosine. The control
# (`compute.neighbour_control`) does the same with no particular word: the mean of as many
# consecutive pieces of a random data sentence, and its top cosines with the other tokens of
# *that* sentence. A neighbour counts as near only above the control's 95th percentile for the
# same rank. This is one sentence: read it as an example.

# %%
word = longest_word(trace, tokenizer)
n_pieces = len(trace.find_word(word).positions)
if n_pieces == 1:  # no word of SENTENCE is split (Chinese: never)
    print(f"no word of SENTENCE is split into pieces: {word!r} is its"
          " longest word" + (", the first of its characters, each a word"
                             " of its own" if language == "zh" else ""))
k = min(3, trace.seq_len - n_pieces)
near = {
    layer: compute.word_neighbours(trace, word, layer, k=k) for layer in (0, L)
}
# [spans, L+1, k]
control = compute.neighbour_control(traces, n_pieces=n_pieces, k=k, seed=0)
for layer, found in near.items():
    # per rank
    top95 = np.percentile(control[:, layer].cpu().numpy(), 95, axis=0)
    above = sum(c > t for (_, _, c), t in zip(found, top95))
    print(
        f"layer {layer}: {word!r} ({n_pieces} piece(s)) is closest to "
        + ", ".join(
            f"{t!r} ({c:.2f}; control {q:.2f})"
            for (_, t, c), q in zip(found, top95)
        )
        + f"; {above} of {k} above the control's 95th percentile"
    )
same = len({p for p, _, _ in near[0]} & {p for p, _, _ in near[L]})
print(
    f"{same} of the {k} nearest tokens are the same at layer 0 and layer {L}"
)

# %% [markdown]
# Pick a token and a layer: the left bars are its cosine with every other token of the
# sentence (the chosen one is left out and marked), the right bars its nearest tokens by
# name, both with the random-pair baseline of the layer dashed. The explorer
# (`helpers/context/widgets.py`) works on single tokens and reuses the cached trace. It starts
# on a word of one piece (a data word of `SENTENCE` if there is one): on a piece of a split
# word, the word's other pieces would top the list, which says nothing about its neighbours.
# Its dashed line is the cross-sentence baseline, lower than the same-sentence control above.

# %% mystnb={"figure": {"caption": "Top: cosine between one token of the lesson's sentence and every other token at one layer (the chosen token left out, marked by the orange triangle); bottom: its nearest tokens by name. Dashed: that layer's random-pair baseline across data sentences. The controls pick the token and the layer; compare the bars with the dashed line.", "name": "fig-09-neighbour-explorer"}}
from helpers.context.widgets import NeighbourExplorer

single = [
    w
    for w in present + trace.words()
    if len(trace.find_word(w).positions) == 1
]
start = (
    trace.find_word(single[0]).first if single else trace.find_word(word).first
)
NeighbourExplorer(trace, token=start, layer=L, baseline=baseline)

# %% [markdown]
# ## Claims tested
#
# Each popular claim beside what this model shows and the published finding with the paper
# and the model it was measured on. `compute.claim_rows` builds the rows from the numbers
# above; every verdict in them is computed.

# %%
from helpers.common.claims import show_scorecard


# layer 0, pooled: mean and 95 % range of the shuffles
shuffled0 = null["all words, pooled"][:, 0].cpu().numpy()
chance_null = Interval(
    float(shuffled0.mean()), *map(float, np.percentile(shuffled0, [2.5, 97.5]))
)
rows = compute.claim_rows(
    ethayarajh=ethayarajh,
    gap=gap_rank,
    accuracy=acc_rank,
    chance_null=chance_null,
    n_senses=len(names),
    emb_null_p=emb_null_p,
    gap_above_zero=gap_above_zero,
    n_words=len(groups),
    same_ids=same_ids,
    other=None if mini_verdict is None else ("course-mini", mini_verdict[0]),
)
# the scorecard and its fold: show_scorecard in helpers/common/claims.py
claims = show_scorecard(rows, loaded.choice.name, paper.label)

# %% [markdown]
# ## Summary
#
# * The two senses of an ambiguous word separate once context is mixed in; the claims above
#   say where the gap and the accuracy peak for your model and which layers could be just as
#   high ("could be", not "the same").
# * A leave-one-out accuracy is read against shuffled labels, not a flat chance line; at the
#   embedding layer, where a word's token ids are the same in every sentence (printed),
#   only its position can separate its uses.
# * Self-similarity is compared with Ethayarajh (2019, BERT-base) on his measure, minus the
#   random-pair baseline, and after two other corrections for anisotropy (mean-centring,
#   standardising), with one verdict over the three; course-mini, trained with BERT's own
#   objectives, is measured the same way for comparison (whether the two agree is in the list
#   below).
# * One use of a word is placed against the sense centroids: where the margin is small, we
#   cannot tell which sense is nearer. Nearest neighbours inside a sentence are read against a
#   same-sentence control (the mean of as many pieces of a random data sentence, with its own
#   nearest tokens), not against the cross-sentence baseline.
#
# In this run (generated from the numbers above):

# %%
summary_claims = [ethayarajh[1], acc_claim.sentence, gap_claim.sentence]
if mini_verdict is not None:
    summary_claims.append(mini_claim.sentence)
for text in summary_claims:
    print(f"* {text}")

# %% [markdown]
# ## Exercises
#
# Each exercise starts with its rating: how hard it is, how much it matters for
# the rest of the course, and about how long it takes. The checkers grade your
# answer and give a hint when it is not right yet; they never print the answer.

# %%
from helpers.exercises.lesson09 import (
    check_exercise_1,
    check_exercise_2,
    check_exercise_3,
)

# %% [markdown]
# ### Exercise 1: sense separation, last layer against the embeddings
#
# Difficulty ●●●●○ · Importance ●●●●○ · ~20 min
#
# Pooled over every word, how does the **last** layer's sense separation
# compare with the embeddings'? Each sentence gives a paired difference, its
# outcome at the last layer minus its outcome at layer 0 (1, 0 or -1;
# `compute.sense_separation_outcomes` gives the outcomes). A word's sentences
# share its centroids, so they are not independent: give the mean difference
# with a 95 % interval that resamples **words**,
# `cluster_bootstrap_ci(differences, word_of, seed=0)` with `word_of` naming
# each sentence's word (sentences in the order of `groups`). The checker tells
# you what the course's `verdict` makes of your interval.

# %%
answer_1 = None  # your code here: an Interval (or (estimate, low, high))
check_exercise_1(answer_1, groups)

# %% [markdown]
# ### Exercise 2: self-similarity by hand
#
# Difficulty ●●○○○ · Importance ●●●○○ · ~10 min
#
# Write `my_self_similarity(vectors)` that takes a `[n, H]` tensor of one
# word's vectors in `n` contexts at one layer and returns the mean cosine over
# all pairs of *different* contexts, as a float.

# %%
# your code here: def my_self_similarity(vectors): ...
my_self_similarity = None
check_exercise_2(my_self_similarity, groups)

# %% [markdown]
# ### Exercise 3: predict, then measure — the last step, word by word
#
# Difficulty ●●○○○ · Importance ●●●○○ · ~10 min
#
# The table above gives the raw self-similarity averaged over the words. A
# mean can hide words that go the other way. **First predict**: for what share
# of the words is the raw self-similarity (both senses pooled) *lower* at the
# last layer than at the layer before it? Put a number between 0 and 1 in
# `prediction_3`.
#
# **Then measure** it with `compute.self_similarity`, one word at a time
# (`groups` holds each word's vectors per sense, `[sentences, L + 1, H]`). The
# checker grades the measurement and only comments on the prediction.
#
# *Reflection (not checked):* the raw value ignores the random-pair baseline.
# Would the share change if you subtracted it, and why, given that the baseline
# is the same for every word at a layer?

# %%
prediction_3 = None  # a share between 0 and 1, written before measuring
answer_3 = None  # your code here: a float between 0 and 1
check_exercise_3(prediction_3, answer_3, groups)
