# ---
# jupyter:
#   jupytext:
#     cell_metadata_filter: tags,-all
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
# # 06 — From word meaning to meaning in context
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/bert-layer-by-layer/bert-layer-by-layer/blob/main/lessons/06_meaning_in_context.ipynb)
#
# The embedding layer gives "bank" one vector whatever the sentence; the encoder layers
# mix in the context. In this lesson we measure when the two senses of an ambiguous word
# come apart, how much a word's vector varies across contexts at each layer, and which
# tokens of a sentence a token is closest to as it climbs the stack.
#
# Every per-layer statistic is measured over a dozen ambiguous words, with a bootstrap 95 %
# interval; two numbers whose intervals overlap are not called different. Where your
# `SENTENCE` contains one of the words, it is placed beside the aggregate.
#
# The first cell installs the course when you run it on Google Colab; on your own
# machine it does nothing.

# %%
# NBVAL_CHECK_OUTPUT
import sys

if "google.colab" in sys.modules:  # Colab: fetch the course, keep Colab's torch and ipywidgets
    import subprocess

    subprocess.run(["git", "clone", "-q", "--depth", "1",
                    "https://github.com/bert-layer-by-layer/bert-layer-by-layer", "/content/course"])
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "-e", "/content/course"], check=True)
    sys.path.insert(0, "/content/course")
else:
    print("Running locally: nothing to install.")

# %% [markdown]
# ## Parameters

# %% tags=["parameters"]
MODEL = None
SENTENCE = "The bank by the river was unbelievably quiet this morning."

# %% [markdown]
# ## The data: ambiguous words in context
#
# `data/polysemy.json` and `data/polysemy_more.json` hold twelve ambiguous English words,
# two senses each and five sentences per sense, written for this course (CC0). The data are
# English: if the tokenizer maps a word to its unknown token (as a Chinese vocabulary may),
# we say so and skip it.

# %%
import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F

from helpers.model.loading import load_model
from helpers.model.trace import trace_text
from helpers.common.data import load_polysemy
from helpers.common.progress import progress
from helpers.common.stats import accuracy_ci, bootstrap_ci
from helpers.context import compute, plots
from helpers.layerwalk.compute import baseline_adjusted, random_pair_baseline, random_pair_cosines
from helpers.model.tokens import is_unknown, longest_word

loaded = load_model(MODEL)
tokenizer, model = loaded
L = model.config.num_hidden_layers
polysemy = {**load_polysemy(), **load_polysemy("polysemy_more.json")}
for word, senses in polysemy.items():
    print(f"{word!r}: " + ", ".join(f"{s} ({len(v)} sentences)" for s, v in senses.items()))

# %% [markdown]
# We trace every sentence once and keep the target word's vector at every layer. A word
# that the tokenizer splits into several WordPieces is represented by the **mean of its
# pieces** (`compute.word_by_layer` in `helpers/context/compute.py`, which finds them with
# `trace.find_word`). As a check that does not go through that helper, the pieces found
# must spell the word.

# %%
jobs = [(w, s, x) for w, senses in polysemy.items() for s, xs in senses.items() for x in xs]
vectors, traces, kept = {}, [], []
for word, sense, text in progress(jobs, desc="tracing polysemy sentences"):
    if is_unknown(tokenizer, word):
        continue
    t = trace_text(tokenizer, model, text)
    span = t.find_word(word)
    assert "".join(p.removeprefix("##") for p in span.pieces) == word.lower(), f"{span} does not spell {word!r}"
    traces.append(t)
    kept.append(word)
    vectors.setdefault(word, {}).setdefault(sense, []).append(compute.word_by_layer(t, word))
groups = {w: {s: torch.stack(v) for s, v in senses.items()} for w, senses in vectors.items()}
skipped = [w for w in polysemy if w not in groups]
if not groups:
    raise ValueError(f"this tokenizer maps every target word of the polysemy data to {tokenizer.unk_token}: "
                     "use an English vocabulary (e.g. MODEL = None or 'bert-base-uncased') for this lesson.")
print(f"{len(traces)} sentences traced for {len(groups)} words; vectors per sense: [n_sentences, L + 1, H] = "
      f"{tuple(next(iter(next(iter(groups.values())).values())).shape)}")
print(f"words split into several pieces: {[w for w in groups if len(tokenizer.tokenize(w)) > 1] or 'none'}; "
      f"skipped (unknown to the tokenizer): {skipped or 'none'}")

# %% [markdown]
# ## The anisotropy baseline, again
#
# As in lesson 04, we first measure how similar two *random* tokens of different sentences
# are at each layer (Ethayarajh, 2019, who defined this within-layer baseline):
# similarities below only mean something above it.

# %%
baseline = random_pair_baseline(traces, n_pairs=500, seed=0)
baseline_ci = bootstrap_ci(random_pair_cosines(traces, n_pairs=500, seed=0))
print("random-pair cosine per layer (mean, 95 % interval): "
      + "; ".join(f"{'emb' if l == 0 else l}: {ci}" for l, ci in enumerate(baseline_ci)))

# %% [markdown]
# ## Same sense vs different sense
#
# For each word: the mean cosine between uses of the **same** sense (pairs of different
# sentences) minus the mean cosine between uses of **different** senses
# (`compute.within_across_gap`). At layer 0 the word's token embedding is the same
# everywhere and only the position embedding differs; the gap that opens in higher layers
# is what context adds. Each word is a grey line; the blue line is the mean over words.

# %%
gaps = {word: compute.within_across_gap(senses) for word, senses in groups.items()}
ax = plots.plot_words_and_mean(gaps, title="within-sense minus across-sense cosine", ylabel="cosine gap",
                               reference=0.0, reference_label="no gap")
plt.show()
gap_ci = bootstrap_ci(torch.stack(list(gaps.values())))
best_gap = max(range(L + 1), key=lambda l: gap_ci[l].estimate)
print("mean gap over words: " + "; ".join(f"{'emb' if l == 0 else l}: {ci}" for l, ci in enumerate(gap_ci)))
print(f"the mean gap is largest at layer {best_gap} ({gap_ci[best_gap]}); at the embeddings it is {gap_ci[0]}; "
      + ("these intervals overlap: not called different." if gap_ci[0].overlaps(gap_ci[best_gap]) else
         "the intervals do not overlap."))

# %% [markdown]
# ## Can a layer tell the senses apart?
#
# The *sense-separation score* of a layer is a leave-one-out nearest-centroid accuracy:
# leave one sentence out, average the vectors of each sense over the rest,
# $c_s = \frac{1}{|S_s|}\sum_{i \in S_s} h_i$, and assign the left-out sentence to the sense
# with the most similar centroid, $\arg\max_s \cos(h, c_s)$. Chance is 50 % for two senses.
# Each sentence is one test item, so an accuracy gets a bootstrap interval over its
# sentences (`accuracy_ci`); one word has only ten, which the width of its interval shows.
# First one item by hand:

# %%
word0, senses0 = next(iter(groups.items()))
names = list(senses0)
held_out = senses0[names[0]][0]
centroids = torch.stack([senses0[names[0]][1:].mean(0), senses0[names[1]].mean(0)])
by_hand = F.cosine_similarity(held_out.unsqueeze(0), centroids, dim=-1).argmax(0) == 0
outcomes = {w: compute.sense_separation_outcomes(s) for w, s in groups.items()}  # {word: [n, L+1]}
print(f"{word0!r}, first {names[0]!r} sentence classified correctly per layer, by hand: {by_hand.tolist()}")
print(f"compute.sense_separation_outcomes agrees: {bool((outcomes[word0][0] == by_hand).all())}")

# %%
pooled = torch.cat(list(outcomes.values()))  # every sentence of every word
pooled_ci = [accuracy_ci(pooled[:, l]) for l in range(L + 1)]
word_ci = {w: [accuracy_ci(o[:, l]) for l in range(L + 1)] for w, o in outcomes.items()}
plots.plot_accuracy_panels(word_ci, pooled=pooled_ci, chance=1 / len(names))
plt.show()
print(f"pooled over {len(pooled)} sentences: " + "; ".join(f"{'emb' if l == 0 else l}: {ci.percent(0)}"
                                                         for l, ci in enumerate(pooled_ci)))
best_acc = max(range(L + 1), key=lambda l: pooled_ci[l].estimate)
print(f"best layer {best_acc}: {pooled_ci[best_acc].percent(0)}; embeddings {pooled_ci[0].percent(0)}: "
      + ("intervals overlap, not called different" if pooled_ci[0].overlaps(pooled_ci[best_acc]) else
         "the intervals do not overlap"))
same_as_best = [l for l in range(L + 1) if pooled_ci[l].overlaps(pooled_ci[best_acc])]
print(f"layers whose interval overlaps the best layer's (not called worse): {same_as_best}")

# %% [markdown]
# At the embedding layer the vectors of one word differ only by position (and, for a word
# split into pieces, nothing else), so an accuracy above chance there says where the word
# sits in our sentences, not what it means.
#
# ## Self-similarity across layers
#
# Ethayarajh (2019) defines a word's *self-similarity* at a layer as the mean cosine between
# its vectors in different contexts, and found on BERT-base that it falls in the upper
# layers: the more contextual the layer, the less a word looks like itself. We pool both
# senses of each word and subtract the within-layer random-pair baseline, as he did.

# %%
self_sim = {w: baseline_adjusted(compute.self_similarity(torch.cat(list(s.values()))), baseline)
            for w, s in groups.items()}
ax = plots.plot_words_and_mean(self_sim, title="self-similarity minus the random-pair baseline",
                               ylabel="adjusted cosine")
plt.show()
self_ci = bootstrap_ci(torch.stack(list(self_sim.values())))
low = min(range(L + 1), key=lambda l: self_ci[l].estimate)
print("mean over words: " + "; ".join(f"{'emb' if l == 0 else l}: {ci}" for l, ci in enumerate(self_ci)))
print(f"lowest at layer {low} ({self_ci[low]}); embeddings {self_ci[0]}; last layer {self_ci[L]}")
if low != L:
    rise = "higher than" if not self_ci[L].overlaps(self_ci[low]) else "not distinguishable from"
    print(f"the last layer's self-similarity is {rise} the lowest one: it does not simply fall with depth here.")
else:
    print("the last layer is the least self-similar here, as Ethayarajh found for BERT-base.")

# %% [markdown]
# ## Your sentence beside the aggregate
#
# If `SENTENCE` contains one of the twelve words, where does its use sit? The cosine
# between its vector and each sense's centroid (the mean over the data sentences), per layer:

# %%
trace = trace_text(tokenizer, model, SENTENCE)
present = [w for w in groups if any(x.lower() == w for x in trace.words())]
if present:
    word = present[0]
    mine = compute.centroid_similarity(compute.word_by_layer(trace, word), groups[word])
    for sense, cos in mine.items():
        print(f"{word!r} in SENTENCE vs the {sense!r} centroid: " + ", ".join(f"{c:.2f}" for c in cos.tolist()))
    closer = [max(mine, key=lambda s: mine[s][l]) for l in range(L + 1)]
    print(f"nearer sense per layer (emb .. {L}): {closer}")
else:
    print(f"SENTENCE contains none of {sorted(groups)}: nothing to place beside the aggregate.")

# %% [markdown]
# ## Nearest neighbours inside one sentence
#
# Which other tokens of `SENTENCE` is a token closest to? We pick the longest word of
# `SENTENCE` (by code) and list its nearest tokens at the embedding layer and at the last
# layer. Neighbours at layer 0 reflect the embeddings alone (token plus position); higher
# up each vector has mixed in its context. This is one sentence: read it as an example.

# %%
target = trace.find_word(longest_word(trace, tokenizer)).first
k = min(3, trace.seq_len - 1)
for layer in (0, L):
    near = compute.nearest_neighbours(trace, target, layer, k=k)
    print(f"layer {layer}: {trace.tokens[target]!r} is closest to " + ", ".join(f"{t!r} ({c:.2f})" for _, t, c in near))

# %% [markdown]
# Pick a token and a layer: the left bars are its cosine with every token of the sentence
# (the chosen token in orange), the right bars its nearest tokens by name. The explorer
# reuses the cached trace.

# %%
from helpers.context.widgets import NeighbourExplorer

NeighbourExplorer(trace, token=target, layer=L)

# %% [markdown]
# ## Claims tested
#
# Each popular claim beside what this model shows (built from the numbers above) and the
# published finding with the paper and the model it was measured on.

# %%
import pandas as pd
from IPython.display import display

claims = pd.DataFrame([
    ("Self-similarity falls with depth",
     f"adjusted: emb {self_ci[0]}, lowest layer {low} {self_ci[low]}, last {self_ci[L]}",
     "Ethayarajh 2019 (BERT-base): self-similarity falls in the upper layers"),
    ("Senses separate in the upper layers",
     f"pooled accuracy: emb {pooled_ci[0].percent(0)}, best layer {best_acc} {pooled_ci[best_acc].percent(0)}",
     "Coenen et al. 2019 (BERT-base): senses occupy distinct regions; nearest-neighbour WSD F1 71.1"),
    ("Same-sense uses are closer than different-sense uses",
     f"mean gap at layer {best_gap}: {gap_ci[best_gap]} (emb {gap_ci[0]})",
     "Ethayarajh 2019 (BERT-base): upper-layer vectors are context-specific"),
    ("The embedding layer knows nothing about the sense",
     f"emb accuracy {pooled_ci[0].percent(0)} vs chance {1 / len(names):.0%}: position alone",
     "by construction: layer 0 is token + position + segment embedding"),
], columns=["popular claim", f"this model ({loaded.choice.name}), live", "published finding (paper, model)"])
with pd.option_context("display.max_colwidth", None):
    display(claims)

# %% [markdown]
# ## Summary
#
# * The two senses of an ambiguous word separate once context is mixed in; the printouts
#   show, with intervals over words and sentences, where the gap and the accuracy peak for
#   your model, and which layers cannot be told apart.
# * Self-similarity, read against the random-pair baseline, measures how contextual a layer
#   is (Ethayarajh, 2019, BERT-base: it falls in the upper layers); the printout says
#   whether your model's last layer follows.
# * Nearest neighbours inside a sentence change from layer to layer.
#
# ## Exercises
#
# 1. For the first word of the data set, which layer gives the **highest** sense-separation
#    accuracy? Give the lowest such layer as an int (0 = embeddings).
# 2. Write `my_self_similarity(vectors)` that takes a `[n, H]` tensor of one word's vectors
#    in `n` contexts at one layer and returns the mean cosine over all pairs of *different*
#    contexts, as a float.

# %%
from helpers.exercises.lesson06 import check_exercise_1, check_exercise_2

answer_1 = None  # your code here: an int
print(check_exercise_1(answer_1, groups))

# %%
my_self_similarity = None  # your code here: def my_self_similarity(vectors): ...
print(check_exercise_2(my_self_similarity, groups))
