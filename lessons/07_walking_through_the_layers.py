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
# # 07 — Walking through the layers
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/bert-layer-by-layer/bert-layer-by-layer/blob/main/lessons/07_walking_through_the_layers.ipynb)
#
# Names and counting ($L, H, A, d, I, n$; layers from 1, heads from 0): see the [conventions](00_big_picture.ipynb#conventions) box of lesson 00.
#
# Lessons 01–03 rebuilt one layer at a time. Now we follow tokens through the whole stack: how
# much a token's vector changes from one layer to the next, how long it is, which layers resemble
# each other, and its path in a 2-D picture.
#
# Every number comes twice: for one token of **your** sentence, and over **all the tokens of the
# data sentences** with its spread (median and interquartile band, or a mean with its 95 % CI).
# One token can be unusual; a story about a layer is only told from the aggregate. Two traps of
# "what each layer does" write-ups: raw cosine similarity can be inflated by *anisotropy*
# (Ethayarajh 2019, on BERT-base), so it needs the right baseline; and a vector's length is set
# largely by the LayerNorm that ends every layer, which we take apart.
#
# The papers we set beside our numbers measured **BERT-base** (masked-LM and next-sentence
# pre-training). The bundled checkpoint has a longer history, and all of it matters when its layers
# are set beside BERT-base's: all-MiniLM-L6-v2 was fine-tuned contrastively as a sentence encoder
# (sentence-transformers) from a 6-layer model that keeps **every second layer** of
# MiniLM-L12-H384, which Wang et al. (2020, *MiniLM: Deep Self-Attention Distillation*) distilled
# from a BERT-base-sized teacher (UniLMv2) by training its last layer to copy the teacher's
# self-attention. So its layer numbers do not map to BERT-base's (its layer 3 was MiniLM's layer 6,
# a distilled student's, not BERT's), and a profile over the layers may come from any of these
# steps rather than from BERT's architecture. When the loaded checkpoint is not BERT-base (the load
# cell says, with `paper_comparison` from `helpers/model/loading.py`), each comparison is labelled
# "different model and training objective". To tell architecture from training without the hub,
# the lesson repeats the anisotropy and rogue-dimension measures on **course-mini**
# (`load_model("course-mini")`, model card in `data/course_mini/README.md`): a small BERT the
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
# works). `SENTENCE` is the text we follow. Nothing below depends on a particular size
# or sentence.
#
# `LANGUAGE` picks the language of the data (`None`: the one the model's tokenizer reads,
# `model_language` in `helpers/common/language.py`; `"en"` or `"zh"` for a model that reads both).

# %% tags=["parameters"]
MODEL = None
SENTENCE = "The bank by the river was unbelievably quiet this morning."
LANGUAGE = None  # None: the data follow the model; or "en", "zh"

# %% [markdown]
# ## Load the model and trace the sentences once
#
# `trace_text` (in `helpers/model/trace.py`) runs the model once and keeps every hidden state;
# everything in this lesson is computed from cached traces. The other modules used:
# `helpers/model/loading.py` (`load_model`, `paper_comparison`), `helpers/model/tokens.py`
# (`longest_word`), `helpers/common/language.py` (`sentences_for`, `sentence_pairs_for`: the
# data in the model's language), `helpers/common/stats.py` (`quartiles`, and the intervals and verdicts
# behind every claim), `helpers/common/claims.py` (`show_finding`: a claim in plain words with its
# evidence folded beneath), and this lesson's `helpers/layerwalk/compute.py` (which gathers the
# measures of `measures.py`, `baselines.py`, `norms.py` and `variance.py`, and the rows of every
# table, from `findings.py`), `helpers/layerwalk/plots.py` (the figures) and
# `helpers/layerwalk/widgets.py` (the explorer). After the load, the lesson's place on the map of
# lesson 00 (`you_are_here`, in `helpers/architecture/plots.py`).

# %%
import matplotlib.pyplot as plt
import numpy as np
import torch

from helpers.model.loading import load_model, paper_comparison
from helpers.model.trace import trace_text
from helpers.common.progress import progress
from helpers.common.tables import show_table
from helpers.common.claims import show_finding
from helpers.common.stats import quartiles
from helpers.layerwalk import compute, plots
from helpers.model.tokens import longest_word

loaded = load_model(MODEL)
tokenizer, model = loaded
from helpers.common.language import (model_language, sentence_pairs_for,
                                     sentences_for)

language = model_language(tokenizer, lesson="07",
                          choice=LANGUAGE)  # the data follow the model
L, H = model.config.num_hidden_layers, model.config.hidden_size
trace = trace_text(tokenizer, model, SENTENCE)
print(
    f"model {loaded.choice.name}: {L} layers, hidden size {H}; SENTENCE has"
    f" {trace.seq_len} tokens"
)
# is this the BERT-base that the papers below measured?
paper = paper_comparison(loaded)
print(f"against the papers' BERT-base: {paper.label}")

# %% mystnb={"figure": {"caption": "The course's map of BERT from lesson 00: tokens, embeddings, one encoder layer (attention, add & norm, feed-forward, add & norm) repeated $L$ times in the loaded model, then pooler and head. The orange frame marks what this lesson follows: the whole encoder layer, output after output through the stack.", "name": "fig-07-you-are-here"}}
from helpers.architecture.plots import LESSON_PARTS, you_are_here

you_are_here(model.config, LESSON_PARTS["07"]);

# %% [markdown]
# Besides `SENTENCE` we trace the data sentences: those of `data/attention_sentences.txt`
# and the short two-sentence paragraphs of `data/sentence_pairs.tsv` (both written for the
# course, CC0; with a Chinese model their Chinese counterparts, `attention_sentences_zh.txt` and
# `sentence_pairs_zh.tsv`, chosen by `sentences_for` and `sentence_pairs_for` in
# `helpers/common/language.py`). Their tokens give the aggregate and the random tokens of the baselines.
#
# Each measured claim below is printed as **one plain sentence**, generated from the numbers; the
# evidence behind it sits in a folded *How we know* block underneath (click to open). Two words to
# read carefully: a layer that "could be just as high" as the highest, and "we cannot tell", mean
# the data do not decide, never that two things are the same. The tokens of one sentence are not
# independent, so the evidence always resamples whole sentences (`compute.cluster_labels` names each
# token's sentence); a later lesson teaches the tools.
#
# We follow two tokens of `SENTENCE`: `[CLS]` (position 0) and the longest word that the
# tokenizer keeps whole, one WordPiece, so the token we follow is a word and not a piece of
# one (picked by code, so it works for any sentence; if no word is kept whole, the first
# piece of the word split into the most pieces).

# %%
singles = sentences_for(language)  # the data sentences, the model's language
# a pair joined into one text (Chinese: no space between sentences)
gap = "" if language == "zh" else " "
data_texts = singles + [f"{a}{gap}{b}"
                        for a, b in sentence_pairs_for(language)]
others = [
    trace_text(tokenizer, model, s)
    for s in progress(data_texts, desc="tracing data sentences")
]
# the sentence of every content token
sentence_of = compute.cluster_labels(others, "content")
# the two sentences of each of the 500 seeded random pairs used below
pair_units = compute.random_pair_units(others, n_pairs=500, seed=0)
print(
    f"{len(others)} data sentences ({len(singles)} single sentences,"
    f" the rest pairs) hold {len(sentence_of)} content tokens"
)
# the token to follow
whole = [w for w in trace.words()
         if len(tokenizer.tokenize(w)) == 1 and w.isalpha()]
word = max(whole, key=len) if whole else longest_word(trace, tokenizer)
if whole and max(map(len, whole)) == 1:  # e.g. Chinese: a token per character
    print(f"every word of SENTENCE kept whole is one character: the"
          f" 'longest' is the first of them, {word!r}")
span = trace.find_word(word)
TOKEN = span.first
NAME = repr(trace.tokens[TOKEN])
print(span)
print(f"following token {TOKEN} ({NAME}) and [CLS] (token 0)")

# %% [markdown]
# ## The vector, layer by layer
#
# The first few of its $H$ dimensions at every stage: the embedding output (layer 0) and
# the output of each encoder layer. A handful of numbers out of $H$ cannot say much, which
# is why the rest of the lesson uses summaries of the whole vector. First a check that the
# trace holds what the model outputs: we run the model again, plainly, and compare its
# `last_hidden_state` with the trace's last layer.

# %%
vectors = compute.token_by_layer(trace, TOKEN)  # [L+1, H]
with torch.no_grad():
    fresh = model(
        **tokenizer(
            SENTENCE,
            return_tensors="pt",
            truncation=True,
            max_length=trace.seq_len,
        ).to(model.device)
    ).last_hidden_state[0]
assert torch.allclose(vectors[L], fresh[TOKEN], atol=1e-5)
n_show = min(6, H)
vector_table = show_table(
    [
        {"layer": "emb" if layer == 0 else layer}
        | {f"dim {d}": f"{v:.3f}" for d, v in enumerate(vec[:n_show].tolist())}
        for layer, vec in enumerate(vectors)
    ],
    index="layer",
    title=f"{NAME}: its first {n_show} of {H} dimensions at every layer",
)

# %% [markdown]
# ## How much does each layer turn a token?
#
# The cosine similarity between a token's vector after layer $l$ and after layer $l+1$,
#
# $$\cos(h^{(l)}, h^{(l+1)}) = \frac{h^{(l)} \cdot h^{(l+1)}}{\lVert h^{(l)} \rVert\, \lVert h^{(l+1)} \rVert},$$
#
# is 1 when a layer only rescales the vector and lower the more it turns it. We compute it
# by hand for our token, and with `compute.consecutive_cosines_per_token` for every content
# token of the data sentences (`helpers/layerwalk/measures.py`).

# %% mystnb={"figure": {"caption": "Raw cosine between a token's vector after layer $l$ and after layer $l+1$, per transition. Blue: median over the data sentences' content tokens, band: interquartile range; orange diamonds: the token followed in the lesson's sentence. No anisotropy control subtracted; the y axis need not start at 0. Check whether the followed token lies inside the band.", "name": "fig-07-consecutive-cosine-raw"}}
by_hand = torch.stack([
    (vectors[l] @ vectors[l + 1]) / (vectors[l].norm() * vectors[l + 1].norm())
    for l in range(L)
])
per_token = compute.consecutive_cosines_per_token(others, "content")  # [N, L]
cls_per_token = compute.consecutive_cosines_per_token(others, "[CLS]")
ax = plots.plot_consecutive(by_hand, per_token=per_token)
ax.set_title(
    "layer-to-layer cosine (raw): data tokens (median, IQR) and this token"
)
plt.show()
print(
    "by hand vs compute.consecutive_cosines: largest difference "
    f"{(by_hand - compute.consecutive_cosines(trace, TOKEN)).abs().max():.1e}"
)

# %%
names = plots.transition_labels(L)
# the rows of this lesson's tables are built in helpers/layerwalk/findings.py
raw_table = show_table(
    compute.transition_rows(names, per_token, by_hand, NAME,
                            cls_per_token=cls_per_token),
    index="transition", title="layer-to-layer cosine (raw)",
)

# %% [markdown]
# These are raw cosines. Before we read "where do tokens turn most?" off them, we need to know
# how similar two vectors one layer apart are when they have *nothing* to do with each other:
# if that baseline changes from layer to layer, so does every raw cosine, whatever the token.
#
# ## The anisotropy caution, with the right control
#
# Ethayarajh (2019, *How Contextual are Contextualized Word Representations? Comparing the
# Geometry of BERT, ELMo, and GPT-2 Embeddings*) found that in BERT-base, ELMo and GPT-2 the
# vectors of upper layers occupy a narrow cone: two *unrelated* words already have a high
# cosine. A raw similarity therefore says little until it is read against a baseline. He
# defined the baseline **within one layer**: the mean cosine between randomly chosen tokens
# of that layer. He defined no baseline for comparing *different* layers.
#
# Our consecutive cosine compares a token at layer $l$ with itself at $l+1$. The control
# that matches it is the cosine between two **different** random tokens, one taken at
# layer $l$ and the other at layer $l+1$ (averaging the two within-layer baselines is not
# the same thing). `compute.random_pair_cosines` draws 500 seeded pairs of content tokens
# from different data sentences; `gap=0` gives the within-layer samples, `gap=1` the
# cross-layer ones. The 500 pairs come from only the data sentences, so a sentence's tokens sit in
# many pairs: each mean's interval resamples **sentences**, not pairs
# (`compute.random_pair_units` names each pair's two sentences, `compute.random_pair_intervals`
# reweighs every pair by how often both its sentences were drawn).

# %%
# [500, L+1]
within_samples = compute.random_pair_cosines(
    others, n_pairs=500, seed=0, gap=0
)
# [500, L]
cross_samples = compute.random_pair_cosines(others, n_pairs=500, seed=0, gap=1)
baseline = compute.random_pair_baseline(others, n_pairs=500, seed=0)
within_ci = compute.random_pair_intervals(within_samples, pair_units)
cross_ci = compute.random_pair_intervals(cross_samples, pair_units)
mean_of_two = (baseline[:-1] + baseline[1:]) / 2
baseline_table = show_table(
    compute.baseline_rows(within_ci, cross_ci, mean_of_two, names),
    index="layer",
    title="Random-pair cosine, mean of 500 pairs [95 % CI, resampling"
    " sentences]: both tokens at this layer (same layer), or one here"
    " and one at the next layer (one layer apart, per transition) beside"
    " the mean of the two same-layer values",
)

# %% mystnb={"figure": {"caption": "Mean cosine of 500 random pairs of content tokens from different data sentences; error bars: 95 % CIs that resample sentences. Top, per layer: both tokens at one layer. Bottom, per transition: one at layer $l$, the other at $l+1$ (the matching control), beside grey crosses, the mean of the two same-layer values. Compare green with grey.", "name": "fig-07-random-pair-baselines"}}
ax = plots.plot_baselines(within_ci, cross_ci, mean_of_two=mean_of_two)
plt.show()

# %% [markdown]
# For BERT-base, Ethayarajh reports the random-word similarity to be generally higher in the
# upper layers than in the lower ones. Models trained with a contrastive objective on
# *sentence* embeddings, like all-MiniLM-L6-v2 (mean-pooled token vectors, trained on
# sentence pairs), are pushed to spread those embeddings out: Wang and Isola (2020,
# *Understanding Contrastive Representation Learning through Alignment and Uniformity on the
# Hypersphere*) defined this "uniformity", and Gao, Yao and Chen (2021, *SimCSE*) measured it
# on BERT-base *sentence* embeddings, where contrastive training improved it. Token vectors
# of such a model's last layer can therefore break the BERT-base pattern. So we read the
# whole profile, not just the two ends: the layer with the highest baseline and every layer that
# could be just as high, whether the embeddings and the last layer are clearly below the peak, and
# which steps from one layer to the next rise (`compute.pair_ranking` and
# `compute.pair_step_verdicts`; `compute.profile_finding` writes the sentence). The same random
# pairs are measured at every layer, so two layers are compared pair by pair; and since every
# sentence's tokens sit in many pairs, the evidence resamples sentences, not pairs.

# %%
layer_names = ["the embeddings"] + [f"layer {l}" for l in range(1, L + 1)]
peak_rank = compute.pair_ranking(within_samples, pair_units, lowest=False)
peak = peak_rank.extreme
steps = compute.pair_step_verdicts(
    within_samples, pair_units, names=layer_names
)
rises = [l for l, v in enumerate(steps, start=1) if v.kind == "higher"]
sentence, details = compute.profile_finding(
    peak_rank, layer_names, what="the random-pair cosine", steps=steps,
    step_names=names,
)
profile_claim = show_finding(f"On {loaded.choice.name}, {sentence[:1].lower()}"
                             f"{sentence[1:]}", details)
print(
    "Ethayarajh (2019), BERT-base: random-word cosine generally higher in the"
    f" upper layers ({paper.label})."
)
print(
    paper.caveat(
        "the baseline's profile over the layers, its last layer included,"
    )
)

# %% [markdown]
# ## Where do tokens turn most?
#
# Now the consecutive cosine minus its matching control. What remains is how much more a
# token resembles *itself* one layer later than an unrelated token one layer later does.
# `compute.rank_layers` finds the transition with the lowest median adjusted cosine and every
# transition that could be just as low, comparing transitions **paired** (the same sentences, all
# their tokens, for every transition), with the control pairs resampled too, so the control's own
# uncertainty counts (its pairs' sentences are drawn with the same sentences as the tokens). The
# share of tokens whose own biggest turn is at each transition is printed for the raw and the
# adjusted cosine, to see how much the control changes that count.

# %% mystnb={"figure": {"caption": "The layer-to-layer cosine minus its one-layer-apart random-pair control, per transition. Blue: median over the data sentences' content tokens, band: interquartile range; orange diamonds: the followed token. The y axis need not start at 0. Find the transition with the lowest median, where tokens turn most beyond what unrelated tokens would.", "name": "fig-07-consecutive-cosine-adjusted"}}
control = torch.tensor([c.estimate for c in cross_ci])
adjusted = compute.baseline_adjusted(by_hand, control)
adjusted_data = compute.baseline_adjusted(per_token, control)
ax = plots.plot_consecutive(
    adjusted, per_token=adjusted_data, measure="minus control",
    ylabel="cosine minus control",
)
ax.set_title("layer-to-layer cosine minus the one-layer-apart control")
plt.show()

# %%
adjusted_table = show_table(
    compute.transition_rows(names, adjusted_data, adjusted, NAME),
    index="transition",
    title="layer-to-layer cosine minus the one-layer-apart control",
)
turn = compute.rank_layers(
    per_token, control=cross_samples, control_units=pair_units,
    statistic=np.median, lowest=True, clusters=sentence_of, unit="sentences",
)
# the share of tokens whose lowest cosine is at each transition
n_tok = len(per_token)
raw_share = torch.bincount(per_token.argmin(dim=1), minlength=L) / n_tok
adj_share = torch.bincount(adjusted_data.argmin(dim=1), minlength=L) / n_tok
turn_table = show_table(
    compute.turn_rows(turn, names, adj_share, raw_share), index="transition",
    title=(
        "where the data tokens turn most: adjusted median per transition"
        " (intervals resample sentences) and the share of tokens whose"
        " lowest cosine is there"
    ),
)
sentence, details = compute.profile_finding(
    turn, names, what="the adjusted layer-to-layer cosine", highest=False,
    unit="transition",
)
turn_claim = show_finding(
    f"Over {len(per_token)} data tokens of {len(others)} sentences,"
    f" {sentence[:1].lower()}{sentence[1:]}"
    f" That is where tokens turn most beyond what unrelated tokens would:"
    f" {adj_share[turn.extreme]:.0%} of them turn most at"
    f" {names[turn.extreme]}.",
    details,
)
mine = int(adjusted.argmin())
agree = "one of them" if mine in turn.tied else "not one of them"
print(
    f"Aside: {NAME} of SENTENCE turns most (adjusted) at {names[mine]}"
    f" ({adjusted[mine]:.3f}): {agree}."
)

# %% [markdown]
# ## How long is the vector?
#
# The L2 norm $\lVert h^{(l)} \rVert = \sqrt{\sum_i h_i^2}$ per layer, for our token (bars)
# and for the data tokens (median and interquartile band). Write-ups often read the length
# as meaning ("the model grows more confident, so the vector grows"); the next sections test
# that reading. Whether the length grows from one layer to the next is read from the mean length,
# step by step (`compute.step_verdicts`, resampling sentences).

# %%
norms = compute.layer_norms(trace, TOKEN)
norms_data = compute.layer_norms_per_token(others, "content")  # [N, L+1]
norm_table = show_table(
    compute.norm_rows(norms, norms_data, NAME), index="layer",
    title="L2 norm ||h|| per layer: the data tokens' median [interquartile"
    " range] and the token we follow",
)

# %% mystnb={"figure": {"caption": "L2 norm $\\lVert h \\rVert$ after the embeddings and after each encoder layer. Orange bars: the token followed in the lesson's sentence; blue: median over the data sentences' content tokens, band: interquartile range. Check whether the median grows from layer to layer and whether the followed token stays inside the band.", "name": "fig-07-norm-per-layer"}}
ax = plots.plot_layer_norms(
    norms,
    title=f"L2 norm per layer: {NAME} and the data tokens",
    per_token=norms_data,
)
plt.show()

# %%
norm_steps = compute.step_verdicts(norms_data, clusters=sentence_of)
step_table = show_table(
    compute.step_rows(norm_steps, names), index="step",
    title="mean length ||h|| of the data tokens, one layer to the next",
)
# grows: "met", "not met" or "inconclusive"
grows, sentence, details = compute.growth_finding(
    norm_steps, names, quartiles(norms_data)[1]
)
growth_claim = show_finding(sentence, details)

# %% [markdown]
# ## Where the length comes from: every layer ends in LayerNorm
#
# BERT is post-LN: each layer, and the embedding sum before them, ends in a LayerNorm,
#
# $$h = \gamma \odot \hat z + \beta, \qquad \hat z = \frac{x - \mu(x)}{\sqrt{\sigma^2(x) + \epsilon}},$$
#
# where $x$ is the residual sum, $\mu, \sigma^2$ its mean and variance over the $H$
# dimensions, and $\gamma$ (`weight`), $\beta$ (`bias`) are learned, one pair per layer.
# Because $\hat z$ has mean 0 and variance $\sigma^2/(\sigma^2+\epsilon) \approx 1$,
# $\lVert \hat z \rVert \approx \sqrt{H}$ for **every** token at **every** layer (equal up to the
# tiny $\epsilon$). We capture $x$ with forward hooks (`compute.layer_norm_inputs`), rebuild
# $h$ by hand and check it against the trace.
#
# So the only things that can make one vector longer than another are $\gamma$, $\beta$ and
# *which* dimensions $\hat z$ puts its (fixed) energy in. With $s = \gamma \odot \hat z = h - \beta$,
#
# $$\lVert h \rVert^2 = \lVert \gamma \odot \hat z \rVert^2 + 2\langle \gamma \odot \hat z, \beta\rangle + \lVert \beta \rVert^2 ,$$
#
# and if $\hat z$ spread its energy evenly ($\hat z_i^2 = 1$), $\lVert \gamma \odot \hat z \rVert$
# would be $\lVert \gamma \rVert$: a number fixed by the weights, the same for every token.
# `compute.norm_parts` measures each term on the data tokens with this model's own $\gamma$ and $\beta$.

# %%
# L+1 tensors [seq, H]
inputs = compute.layer_norm_inputs(tokenizer, model, SENTENCE)
z_norms = []
for layer, (x, ln) in enumerate(zip(inputs, compute.final_layer_norms(model))):
    z_hat = (x - x.mean(-1, keepdim=True)) / torch.sqrt(
        x.var(-1, unbiased=False, keepdim=True) + ln.eps
    )
    rebuilt = ln.weight * z_hat + ln.bias
    assert torch.allclose(
        rebuilt, trace.hidden(layer), atol=1e-4
    ), f"layer {layer} does not end in its LayerNorm"
    z_norms.append(z_hat.norm(dim=-1))
z_norms = torch.stack(z_norms)
print(
    "every hidden state equals gamma * z_hat + beta of its layer's LayerNorm"
    f" (checked on {trace.seq_len} tokens)"
)
print(
    f"||z_hat|| over all tokens and layers: {z_norms.min():.3f} .."
    f" {z_norms.max():.3f}; sqrt(H) = {H ** 0.5:.3f}"
)
parts = compute.norm_parts(others, model, "content")
parts_table = show_table(
    compute.parts_rows(parts), index="layer",
    title="The parts of each layer's final LayerNorm, h = gamma*z_hat + beta"
    " (s = gamma*z_hat): medians over the data tokens, and the norms of the"
    " layer's own gamma and beta",
)

# %% mystnb={"figure": {"caption": "Top: $\\lVert h \\rVert$ per layer, median over the data tokens (band: interquartile range) and the followed token (orange). Bottom: the parts of each layer's final LayerNorm, $h = \\gamma\\odot\\hat z + \\beta$: $\\lVert\\gamma\\odot\\hat z\\rVert$ (median, interquartile band), $\\lVert\\gamma\\rVert$ (its value if $\\hat z$ spread evenly) and $\\lVert\\beta\\rVert$. One y scale from 0; compare the purple median with green $\\lVert\\gamma\\rVert$.", "name": "fig-07-norm-layernorm-parts"}}
ax = plots.plot_norm_parts(parts, token_norms=norms, token_name=NAME)
plt.show()

# %% [markdown]
# **Do a few dimensions dominate?** Two papers asked it two ways. Kovaleva, Kulshreshtha, Rogers
# and Rumshisky (2021, *BERT Busters: Outlier Dimensions that Disrupt Transformers*; BERT-base
# and other pre-trained encoders) describe their outliers, in their abstract, as LayerNorm
# scaling factors and biases of unusually high magnitude, in the output LayerNorm, that appear
# early in pre-training and sit at the same dimension in layer after layer; switching them off
# degrades the masked-LM loss and downstream accuracy. The exact numerical threshold of their
# paper is not reproduced here (we could not check its text offline), so the test below is **the
# course's own**, in that spirit, with both of their conditions: a $\gamma$ or $\beta$ value more
# than 3 standard deviations from that vector's mean (`compute.layer_norm_outliers`), *and* the
# same dimension flagged in every layer (`compute.outliers_in_every_layer`). Timkey and van
# Schijndel (2021,
# *All Bark and No Bite: Rogue Dimensions in Transformer Language Models Obscure Representational
# Quality*; BERT, RoBERTa, GPT-2 and XLNet) measured what matters for a cosine: each dimension's
# contribution to the random-pair cosine of a layer, the mean over random pairs of
# $u_i v_i / (\lVert u\rVert\,\lVert v\rVert)$ (`compute.cosine_contributions`; the $H$
# contributions add up to the baseline above). They found 1–3 "rogue" dimensions supplying most of
# it. Below: the share of the random-pair cosine supplied by the 3 dimensions that contribute most
# per layer (an even spread would give $3/H$), beside the LayerNorm outliers.
#
# Kovaleva et al.'s second condition asks for the *same* dimension in every layer. A yes/no over
# all $L + 1$ LayerNorms hides how close a dimension comes, so we count, per dimension, in how many
# of them it is flagged (`compute.outlier_counts`), beside the layers where it is also among the 3
# dimensions that supply most of the random-pair cosine.

# %%
# [L+1, H]: each row sums to the baseline
contrib = compute.cosine_contributions(others, n_pairs=500, seed=0)
dims, top_contrib = compute.top_dimensions(contrib, k=3)
# share of each layer's random-pair cosine
top_share = top_contrib / contrib.sum(dim=-1)
outliers = compute.layer_norm_outliers(model, n_sigma=3.0)
top_table = show_table(
    compute.top_dimension_rows(contrib, dims, top_share, outliers),
    index="layer",
    title="The 3 dimensions that supply most of each layer's random-pair"
    f" cosine (500 pairs) and their share of it (even spread {3 / H:.1%}),"
    " beside the layer's LayerNorm 3-sigma outliers (gamma or beta)",
)
recurring = torch.bincount(dims.flatten(), minlength=H)
print(f"dimensions among the top 3 in at least half of the layers: "
      f"{torch.nonzero(recurring >= (L + 1) / 2).flatten().tolist()}")
outlier_rows = compute.outlier_counts(outliers, dims)
every_layer = compute.outliers_in_every_layer(outliers)
outlier_table = show_table(
    compute.outlier_table_rows(outlier_rows, L + 1), index="dimension",
    title="LayerNorm 3-sigma outliers, per dimension flagged at least twice"
    " (layer 0: the embeddings' LayerNorm)",
)
outlier_claim = show_finding(*compute.outlier_finding(outlier_rows, L + 1))

# %% mystnb={"figure": {"caption": "Per layer, the share (%) of the random-pair cosine (500 pairs of data tokens from different sentences) supplied by the 3 dimensions that contribute most; above each bar, the share and those dimensions' ids. Dotted line: an even spread over all dimensions, $3/H$. Look for the same ids recurring from layer to layer.", "name": "fig-07-top-dimension-share"}}
ax = plots.plot_top_dimension_share(
    top_share,
    dims,
    H,
    ylabel="share of the random-pair cosine",
    title=(
        "share of the random-pair cosine from the 3 dimensions contributing"
        " most"
    ),
)
plt.show()

# %% [markdown]
# If a few dimensions with a large shared offset make unrelated tokens look alike, removing the
# offset should remove the likeness. Mu and Viswanath (2018, *All-but-the-Top: Simple and
# Effective Postprocessing for Word Representations*; static word vectors such as word2vec and
# GloVe) subtract the common mean vector (and a few top principal directions; we subtract only the
# mean); Timkey and van Schijndel also divide each dimension by its standard deviation
# (standardising). `compute.layer_mean_std` gives each layer's mean and deviation over the data
# tokens; the cosine functions take them as `shift` and `scale`. Redone three ways: the
# within-layer random-pair baseline, and the layer-to-layer cosine of the data tokens (median)
# minus its one-layer-apart control, as above.

# %%
mean, std = compute.layer_mean_std(others, "content")  # [L+1, H] each
variants = {
    "raw": {},
    "mean-centred": {"shift": mean},
    "standardised": {"shift": mean, "scale": std},
}
# per variant: the within-layer baseline [L+1], and the data tokens'
# median layer-to-layer cosine minus its one-layer-apart control [L]
processed, turn_minus_ctrl = compute.cosines_by_variant(
    others, variants, n_pairs=500, seed=0
)
cosine_table = show_table(
    compute.variant_rows(processed, ["emb", *range(1, L + 1)], "layer"),
    index="layer",
    title="random-pair cosine of data tokens, per layer (500 pairs), 3 ways",
)
largest = {n: float(b.abs().max()) for n, b in processed.items()}
print(
    "largest |random-pair cosine| over the layers: "
    + "; ".join(f"{n} {v:.3f}" for n, v in largest.items())
)
turn_table = show_table(
    compute.variant_rows(turn_minus_ctrl, names, "transition"),
    index="transition",
    title="layer-to-layer cosine of data tokens, median minus its"
    " one-layer-apart control, three ways",
)

# %% [markdown]
# ## BERT's architecture, or this checkpoint's training?
#
# The random-pair profile above and the few dimensions that supply most of the cosine could come
# from BERT's architecture or from how this checkpoint was trained (distilled, then fine-tuned
# contrastively as a sentence encoder: see the top of the lesson). A second checkpoint, trained
# another way, tells the two apart. **course-mini** (`load_model("course-mini")`; model card:
# `data/course_mini/README.md`) was pre-trained by the course with BERT's own two objectives,
# masked-LM and next-sentence prediction, and nothing else. We trace the same data sentences with
# it and repeat both measures (`compute.anisotropy_profile`): the within-layer random-pair cosine
# per layer, and the share of it supplied by the 3 dimensions that contribute most.
#
# What this can and cannot tell: course-mini is tiny (the card gives its 4 layers, 256 wide),
# has seen only Shakespeare and the King James Bible (our modern sentences are out of its domain
# and split into unusual WordPieces) and reads at most 128 tokens. Where the two checkpoints
# agree, the feature is not peculiar to the contrastive training; where they differ, size, data
# and objective all differ at once, so the difference points at this checkpoint's training or
# size, not at one of them. Its layer numbers map to neither model's: compare shapes, not layers.

# %%
from helpers.common.language import LANGUAGES
from helpers.model.loading import COURSE_MINI

mini = None
if loaded.choice.name == COURSE_MINI:
    print("The loaded model is course-mini itself: nothing to compare.")
elif language != "en":  # course-mini reads English only
    print(f"Skipped: course-mini was pre-trained on English text only and"
          f" cannot read the {LANGUAGES[language][0]} data sentences.")
else:
    mini_tok, mini_model = load_model(COURSE_MINI)
    mini_traces = [trace_text(mini_tok, mini_model, s) for s in data_texts]
    mini = compute.anisotropy_profile(mini_traces, n_pairs=500, seed=0)
    mini_table = show_table(
        compute.comparison_rows([
            (loaded.choice.name, peak_rank, top_share),
            ("course-mini", mini["rank"], mini["share"]),
        ]),
        index="layer",
        title="Random-pair cosine [95 % CI, resampling sentences] and the"
        " share of it from the 3 most contributing dimensions: this model"
        " and course-mini (masked-LM + next-sentence), on the same sentences",
    )
    # its profile in words, and whether its last layer agrees with this model's
    mini_claim = show_finding(*compute.comparison_finding(
        peak_rank, top_share, mini,
        plots.transition_labels(len(mini["names"]) - 1),
    ))

# %% [markdown]
# **Testing the reading "norms grow because the model grows more confident".** If length
# tracked the model's confidence about a token, two things would follow: lengths would
# differ mostly *between tokens* (confident here, unsure there), and they would grow layer
# after layer. Measured on the data tokens: a two-way split of the variance of $\lVert h \rVert$
# over all tokens and layers (`compute.variance_split_ci`) into the **layer** (the layer means),
# the **token** (each token's own mean over the layers) and their **interaction** (tokens that are
# long at some layers and short at others), each with an interval that resamples sentences. A
# forward pass is deterministic: the interaction is not noise but real structure, and a token's
# confidence could change from layer to layer too. So "between tokens" is what varies *within a
# layer*, the token part plus the interaction ($1 -$ the layer part). Then whether the mean length
# grows at every step (above), and how close the median length is to $\lVert\gamma\rVert$, the
# length fixed by the weights alone.

# %%
# resampling sentences
split = compute.variance_split_ci(parts["norm"], seed=0, clusters=sentence_of)
med_norm = quartiles(parts["norm"])[1]
ratio = torch.as_tensor(med_norm) / parts["gamma"].cpu().double()
print(
    "median ||h|| / ||gamma|| per layer: "
    + ", ".join(f"{r:.2f}" for r in ratio.tolist())
)
# prediction 1 from the split, prediction 2 (grows) from the steps above
confidence_claim = show_finding(*compute.confidence_finding(
    split, grows, len(parts["norm"]), L + 1
))

# %% [markdown]
# Neither test can show that the length *is* confidence (where the premise fails, as printed,
# there is nothing growing to explain; where a verdict is inconclusive, these data do not
# decide it): the decomposition above only says that $\lVert\hat z\rVert$ itself is the same for every token,
# so whatever varies comes from $\gamma$, $\beta$ and *which* dimensions a token uses. Whether
# that choice of dimensions carries something like confidence is a question these numbers
# do not answer.
#
# ## Which layers look alike?
#
# Comparing *every* pair of layers gives an $(L+1) \times (L+1)$ matrix of cosines. Left:
# our token; middle: the median over the data tokens, both on the full cosine scale
# $[-1, 1]$; right: the interquartile width, i.e. how much tokens disagree about each pair
# of layers.
#
# These are raw cosines, and cells of this matrix are the trap of the baseline section: how
# alike two *unrelated* tokens are at layers $a$ and $b$ changes with the pair of layers. So in the
# second figure each cell gets its matching control, a random token at layer $a$ against a
# different random token at layer $b$ (`compute.cross_layer_control_matrix`), and the median minus
# the control is drawn beside the control (off the diagonal; on it, a token against itself is 1).

# %% mystnb={"figure": {"caption": "Cosine between a token's vectors at every pair of layers, as $(L+1)\\times(L+1)$ matrices. Top left: the followed token; top right: median over the data sentences' content tokens (one cosine scale, shared); bottom: their interquartile width, on its own scale from 0. Raw cosines, no control: see how fast similarity fades away from the diagonal.", "name": "fig-07-interlayer-similarity"}}
sim = compute.interlayer_similarity(trace, TOKEN)
# [N, L+1, L+1]
sim_data = compute.interlayer_similarity_per_token(others, "content")
plots.plot_similarity_spread(sim, sim_data, NAME)
plt.show()

# %% mystnb={"figure": {"caption": "Left: the control, the mean cosine between a random token at layer $a$ and a different random token from another data sentence at layer $b$ (500 pairs; the diagonal is the within-layer baseline). Right: the data tokens' median inter-layer cosine minus that control, diagonal blank, on its own diverging scale around 0. Find the pairs of layers furthest above the control.", "name": "fig-07-interlayer-control"}}
# [L+1, L+1]
ctrl = compute.cross_layer_control_matrix(others, n_pairs=500, seed=0)
med_matrix = torch.as_tensor(
    quartiles(sim_data)[1], dtype=ctrl.dtype, device=ctrl.device
)
plots.plot_adjusted_matrix(ctrl, med_matrix - ctrl)
plt.show()
for a_, b_ in ((0, L), (1, L)):
    s25, smed, s75 = quartiles(sim_data[:, a_, b_])
    print(
        f"{'embedding' if a_ == 0 else f'layer {a_}'} vs last layer: data"
        f" median {smed:.3f} [IQR {s25:.3f}-{s75:.3f}], control"
        f" {ctrl[a_, b_]:.3f}, median minus control {smed - ctrl[a_, b_]:.3f};"
        f" {NAME}: {sim[a_, b_]:.3f}"
    )

# %% [markdown]
# ## A 2-D trajectory
#
# PCA finds the two directions along which the vectors of *all* tokens of `SENTENCE` at
# *all* layers vary most; projecting `[CLS]` and our token onto them draws each one's path
# (arrows point from the embeddings to the last layer). Each token gets its own panel,
# centred on its path; both panels and both axes use **one** scale, so path lengths compare
# by eye, and each axis says how much of the variance its component explains: read the paths
# as a sketch.

# %% mystnb={"figure": {"caption": "Paths of `[CLS]` (left) and the followed token (right) through the layers, projected on the first two principal components of all the lesson sentence's tokens at all layers; arrows run from the embeddings to the last layer. One equal scale for both panels; each axis gives its share of the variance. Compare the path lengths, as a sketch.", "name": "fig-07-pca-trajectory"}}
coords = compute.pca_trajectory(trace, [0, TOKEN])
explained = compute.pca_variance_ratio(trace, 2)
axes = plots.plot_trajectory(
    coords, ["[CLS]", trace.tokens[TOKEN]], explained=explained
)
plt.show()
lengths = compute.path_lengths(coords)
print(
    f"PC 1 and PC 2 explain {explained.sum():.0%} of the variance of all"
    f" {trace.seq_len * (L + 1)} vectors"
)
print(
    f"path length in the PC plane: [CLS] {lengths[0]:.2f}, {NAME}"
    f" {lengths[1]:.2f}"
)

# %% [markdown]
# ## Explore
#
# Pick any token and layer: its norm per layer (the chosen layer in orange), its cosine with
# itself at every other layer, its first dimensions at the chosen layer. It opens on `[CLS]`
# at a middle layer. A control only updates the bars and lines from the cached trace.

# %% mystnb={"figure": {"caption": "The layer-walk explorer for one token of the lesson's sentence, opened on [CLS] at a middle layer: left, its L2 norm at every layer (the chosen layer in orange); right, its cosine at every layer with itself at the chosen layer; below, the values of its first dimensions at the chosen layer. The controls pick the token and the layer.", "name": "fig-07-layerwalk-explorer"}}
from helpers.layerwalk.widgets import LayerWalkExplorer

explorer = LayerWalkExplorer(trace, token=0, layer=max(1, L // 2))
explorer

# %% [markdown]
# ## Claims tested
#
# Each popular claim beside what this model shows and the published finding with the paper
# and the model it was measured on. `compute.claim_rows` builds the rows from the numbers
# above; every verdict in them is computed.

# %%
from helpers.common.claims import show_scorecard


# the rows: claim_rows in helpers/layerwalk/findings.py;
rows = compute.claim_rows(
    turn=turn,
    transition_names=names,
    turn_share=float(adj_share[turn.extreme]),
    peak=peak_rank,
    cross_ci=cross_ci,
    mean_of_two=mean_of_two,
    variance_split=split,
    grows=grows,
    top_share=top_share,
    k=3,
    hidden_size=H,
    outlier_rows=outlier_rows,
    n_layer_norms=L + 1,
    centred_max=largest["mean-centred"],
    other=None if mini is None else ("course-mini", mini["rank"]),
)
# the scorecard and its fold: show_scorecard in helpers/common/claims.py
claims = show_scorecard(rows, loaded.choice.name, paper.label)

# %% [markdown]
# ## Summary
#
# * Per-layer stories are read from the data tokens' median and spread; one token of one
#   sentence is an aside (the tables and printouts show whether yours is typical).
# * A raw cosine is read against a random-pair control that matches it: same layer for
#   a within-layer similarity (Ethayarajh 2019), one layer apart for a layer-to-layer one.
#   "Where tokens turn most" is named from the adjusted values, with every transition that
#   could turn as much: "could be", never "the same".
# * Each layer ends in LayerNorm, $h = \gamma\odot\hat z + \beta$ with $\lVert\hat z\rVert
#   \approx \sqrt H$ for every token: a vector's length comes from $\gamma$, $\beta$ and which
#   dimensions it uses. Kovaleva et al. (2021, BERT-base) found LayerNorm outlier dimensions at
#   the same positions in every layer; Timkey and van Schijndel (2021) measured dominance where it
#   matters for a cosine, each dimension's share of the random-pair cosine. The table says how
#   much of this model's baseline its top 3 dimensions supply, and the printouts what is left of
#   the baseline and of the layer-to-layer cosine after mean-centring (Mu and Viswanath 2018) and
#   standardising.
# * The within-layer baseline is read as a profile over the layers (the peak, the layers that
#   could be as high, the last layer against the peak), and an inter-layer cosine matrix
#   beside its cross-layer control.
# * One checkpoint cannot tell BERT's architecture from its training: the same measures on
#   course-mini, pre-trained with BERT's own objectives, say which features of the profile the
#   two share (a tiny model on Early Modern English: a second opinion, not BERT-base's).
# * A 2-D PCA projection is a sketch of the trajectory, not the full story.
#
# ## Exercises
#
# Each exercise starts with its rating: how hard it is, how much it matters for
# the rest of the course, and about how long it takes. The checkers grade your
# answer and give a hint when it is not right yet; they never print the answer.

# %%
from helpers.exercises.lesson07 import (
    check_exercise_1,
    check_exercise_2,
    check_exercise_3,
    check_exercise_4,
)

# %% [markdown]
# ### Exercise 1: where does `[CLS]` turn most?
#
# Difficulty ●●○○○ · Importance ●●●○○ · ~5 min
#
# Which *encoder transition* turns `[CLS]` of `SENTENCE` the most? Give the
# layer `l` such that the cosine between layer `l` and `l + 1` of token 0 is
# lowest (`l = 0` is the step from the embeddings to the output of the first
# encoder layer).

# %%
answer_1 = None  # your code here: an int
check_exercise_1(answer_1, trace)

# %% [markdown]
# ### Exercise 2: the length of a vector, by hand
#
# Difficulty ●●○○○ · Importance ●●●○○ · ~10 min
#
# Write a function `my_norms(trace, token)` returning the L2 norm of the
# token's vector at every layer as a tensor of shape `[L + 1]`, without
# `compute.layer_norms`.

# %%
my_norms = None  # your code here: def my_norms(trace, token): ...
check_exercise_2(my_norms, trace)

# %% [markdown]
# ### Exercise 3: is anything of the token left at the last layer?
#
# Difficulty ●●●●○ · Importance ●●●●○ · ~20 min
#
# Compare `TOKEN`'s vector at **layer 1** with itself at the last layer:
# `sim[1, L]` minus the matching control, the mean cosine between a random
# token at layer 1 and a *different* random token at layer `L`. Draw the
# control with
# `compute.random_pair_cosines(others, n_pairs=500, seed=0, gap=...)`, choosing
# the gap and the column yourself. Give the adjusted value as a float; the
# checker tells you whether anything is left once the control is removed.

# %%
answer_3 = None  # your code here: a float
check_exercise_3(answer_3, trace, TOKEN, others)

# %% [markdown]
# ### Exercise 4: predict, then measure — centring the last layer
#
# Difficulty ●●○○○ · Importance ●●●●○ · ~10 min
#
# **First predict**, before you run anything: does subtracting each layer's
# mean vector (mean-centring, as Mu and Viswanath do) make the random-pair
# cosine of the **last layer** *higher* or *lower*? Write `"higher"` or
# `"lower"` in `prediction_4`.
#
# **Then measure** it: the mean cosine of 500 random pairs (`seed=0`) at the
# last layer after centring, minus the same without centring.
# `compute.layer_mean_std(others, "content")` gives the means, and
# `compute.random_pair_cosines` takes them as `shift`. The checker grades the
# measurement and only comments on the prediction.
#
# *Reflection (not checked):* if your prediction missed, what does the shared
# mean vector contribute to the cosine of two unrelated tokens?

# %%
prediction_4 = None  # "higher" or "lower", written before measuring
answer_4 = None  # your code here: a float, centred minus raw
check_exercise_4(prediction_4, answer_4, others)
