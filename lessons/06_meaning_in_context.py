# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
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
# `data/polysemy.json` holds four ambiguous English words, two senses each and five
# sentences per sense, written for this course. The data are English: if the tokenizer
# maps a word to its unknown token (as a Chinese vocabulary may), we say so and skip it.

# %%
import torch
import torch.nn.functional as F

from helpers.model.loading import load_model
from helpers.model.trace import trace_text
from helpers.common.data import load_polysemy
from helpers.common.progress import progress
from helpers.context import compute, plots
from helpers.layerwalk.compute import baseline_adjusted, random_pair_baseline
from helpers.model.tokens import is_unknown, longest_word

tokenizer, model = load_model(MODEL)
L = model.config.num_hidden_layers
polysemy = load_polysemy()
for word, senses in polysemy.items():
    print(f"{word!r}: " + ", ".join(f"{s} ({len(v)} sentences)" for s, v in senses.items()))

# %% [markdown]
# We trace every sentence once and keep the target word's vector at every layer. A word
# that the tokenizer splits into several WordPieces is represented by the **mean of its
# pieces** (`compute.word_by_layer` in `helpers/context/compute.py`, which finds them with `trace.find_word`).

# %%
jobs = [(w, s, x) for w, senses in polysemy.items() for s, xs in senses.items() for x in xs]
vectors, traces, kept = {}, [], []
for word, sense, text in progress(jobs, desc="tracing polysemy sentences"):
    if is_unknown(tokenizer, word):
        continue
    t = trace_text(tokenizer, model, text)
    traces.append(t)
    kept.append(word)
    vectors.setdefault(word, {}).setdefault(sense, []).append(compute.word_by_layer(t, word))
groups = {w: {s: torch.stack(v) for s, v in senses.items()} for w, senses in vectors.items()}
for word in polysemy:
    if word not in groups:
        print(f"note: the tokenizer maps {word!r} to {tokenizer.unk_token}; skipping it.")
    else:
        print(f"{word!r} -> pieces {tokenizer.tokenize(word)}")
if not groups:
    raise ValueError(f"this tokenizer maps every target word of data/polysemy.json to {tokenizer.unk_token}: "
                     "use an English vocabulary (e.g. MODEL = None or 'bert-base-uncased') for this lesson.")

# %%
first_word = kept[0]
span = traces[0].find_word(first_word)
mean_by_hand = torch.stack(traces[0].hidden_states)[:, span.positions].mean(1)
assert torch.allclose(next(iter(groups[first_word].values()))[0], mean_by_hand, atol=1e-6)
print(f"first sentence: {span}")
print(f"{len(traces)} sentences traced; vectors per sense: [n_sentences, L + 1, H] = "
      f"{tuple(next(iter(next(iter(groups.values())).values())).shape)}")

# %% [markdown]
# ## The anisotropy baseline, again
#
# As in lesson 04, we first measure how similar two *random* tokens of different sentences
# are at each layer (Ethayarajh, 2019): similarities below only mean something above it.

# %%
baseline = random_pair_baseline(traces, n_pairs=500, seed=0)
print("random-pair cosine per layer: " + ", ".join(f"{b:.3f}" for b in baseline.tolist()))

# %% [markdown]
# ## Same sense vs different sense
#
# For each word: the mean cosine between uses of the **same** sense (pairs of different
# sentences) and between uses of **different** senses. At layer 0 both are close, since
# the word's token embedding is the same everywhere and only position embeddings differ;
# the gap that opens in higher layers is what context adds.

# %%
curves = {}
for word, senses in groups.items():
    within, across = compute.within_across_similarity(senses)
    curves[f"{word}: gap"] = within - across
    best = int((within - across).argmax())
    print(f"{word:>7}: within-sense minus across-sense cosine is largest at layer {best} "
          f"({within[best]:.3f} vs {across[best]:.3f})")
ax = plots.plot_layer_curves(curves, title="within-sense minus across-sense cosine", ylabel="cosine gap")

# %% [markdown]
# ## Can a layer tell the senses apart?
#
# The *sense-separation score* of a layer is a leave-one-out nearest-centroid accuracy:
# leave one sentence out, average the vectors of each sense over the rest,
# $c_s = \frac{1}{|S_s|}\sum_{i \in S_s} h_i$, and assign the left-out sentence to the sense
# with the most similar centroid, $\arg\max_s \cos(h, c_s)$. Chance is 50 % for two senses.

# %%
word0, senses0 = next(iter(groups.items()))
names = list(senses0)
held_out = senses0[names[0]][0]
centroids = torch.stack([senses0[names[0]][1:].mean(0), senses0[names[1]].mean(0)])
by_hand = F.cosine_similarity(held_out.unsqueeze(0), centroids, dim=-1).argmax(0) == 0
separation = {w: compute.sense_separation(s) for w, s in groups.items()}
print(f"{word0!r}, first {names[0]!r} sentence classified correctly per layer: {by_hand.tolist()}")
for word, acc in separation.items():
    print(f"{word:>7}: " + "  ".join(f"{'emb' if l == 0 else l}:{a:.0%}" for l, a in enumerate(acc.tolist())))
ax = plots.plot_layer_curves(separation, title="sense separation (leave-one-out)", ylabel="accuracy",
                             chance=1 / len(names))

# %% [markdown]
# ## Self-similarity falls with depth
#
# Ethayarajh (2019) defines a word's *self-similarity* at a layer as the mean cosine between
# its vectors in different contexts, and found on BERT-base that it falls in the upper
# layers: the more contextual the layer, the less a word looks like itself. We pool both
# senses of each word and subtract the random-pair baseline, as he did.

# %%
for word, senses in groups.items():
    all_uses = torch.cat(list(senses.values()))
    raw = compute.self_similarity(all_uses)
    adjusted = baseline_adjusted(raw, baseline)
    curves[word] = adjusted
    print(f"{word:>7}: raw {raw[0]:.3f} (emb) -> {raw[L]:.3f} (layer {L}); "
          f"adjusted {adjusted[0]:.3f} -> {adjusted[L]:.3f}; lowest adjusted at layer {int(adjusted.argmin())}")
ax = plots.plot_layer_curves({w: curves[w] for w in groups}, title="self-similarity minus baseline",
                             ylabel="adjusted cosine")

# %% [markdown]
# ## Nearest neighbours inside one sentence
#
# Which other tokens of `SENTENCE` is a token closest to? We pick the longest word of
# `SENTENCE` (by code) and list its nearest tokens at the embedding layer and at the last
# layer. Neighbours at layer 0 reflect the embeddings alone (token plus position); higher
# up each vector has mixed in its context, so the list changes, as the printout shows.

# %%
trace = trace_text(tokenizer, model, SENTENCE)
target = trace.find_word(longest_word(trace, tokenizer)).first
k = min(3, trace.seq_len - 1)
for layer in (0, L):
    near = compute.nearest_neighbours(trace, target, layer, k=k)
    print(f"layer {layer}: {trace.tokens[target]!r} is closest to " + ", ".join(f"{t!r} ({c:.2f})" for _, t, c in near))
h = trace.hidden(L)
assert torch.allclose(torch.tensor(near[0][2]), F.cosine_similarity(h[target], h[near[0][0]], dim=0), atol=1e-6)

# %% [markdown]
# Pick a token and a layer: the bars are its cosine with every token of the sentence (the
# chosen token in orange). The explorer reuses the cached trace.

# %%
from helpers.context.widgets import NeighbourExplorer

NeighbourExplorer(trace, token=target, layer=L)

# %% [markdown]
# ## Summary
#
# * The two senses of an ambiguous word separate only once context is mixed in; the
#   printouts show at which layer the gap and the leave-one-out accuracy peak for your model.
# * Self-similarity, read against the random-pair baseline, measures how contextual a layer
#   is (Ethayarajh, 2019, BERT-base: it falls in the upper layers).
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
