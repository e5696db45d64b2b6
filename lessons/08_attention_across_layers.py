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
# # 08 — Attention across layers
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/bert-layer-by-layer/bert-layer-by-layer/blob/main/lessons/08_attention_across_layers.ipynb)
#
# Names and counting ($L, H, A, d, I, n$; layers from 1, heads from 0): see the [conventions](00_big_picture.ipynb#conventions) box of lesson 00.
#
# Lesson 02 computed one attention map by hand. Here we look at *all* of them: how much attention
# goes to `[CLS]`, `[SEP]` and punctuation, which heads are focused and which are spread out, and
# which heads look at the previous or the next token. Beside our numbers we put the published ones,
# with the paper and the model they were measured on.
#
# Two cautions run through the lesson. **Like for like**: Clark et al. (2019) measured BERT-base on
# two-segment inputs of up to 128 tokens, so we measure on sentence pairs too, report the input
# lengths and take the share that evenly spread attention would give ($1/n$ per token) as the
# reference: on a short input every token gets a big share for free. **Attention is not the whole
# story**: a weight says how much of a vector is mixed in, not how big that vector is, so we also
# measure the norm-based attention of Kobayashi et al. (2020). Whether attention weights explain a
# model at all is disputed: Jain and Wallace (2019, *Attention is not Explanation*; BiLSTM
# classifiers with attention, not BERT) found weights that disagree with gradient-based importance
# and different weights giving the same predictions; Wiegreffe and Pinter (2019, *Attention is not
# not Explanation*; the same kind of LSTM models) answered that this depends on what counts as an
# explanation and proposed stricter tests; and Kobayashi et al. (2021, *Incorporating Residual and
# Normalization Layers into Analysis of Masked Language Models*; BERT-base and other masked
# language models) found that once the residual connection and the LayerNorm are counted, the
# mixing between tokens is smaller than attention suggests.
#
# **Model and objective.** The papers measured BERT-base, pre-trained with masked-LM and
# next-sentence prediction. The bundled checkpoint has another history, and for attention it
# matters most: all-MiniLM-L6-v2 was fine-tuned contrastively as a sentence encoder from a 6-layer
# model that keeps **every second layer** of MiniLM-L12-H384, and Wang et al. (2020, *MiniLM: Deep
# Self-Attention Distillation*) trained MiniLM by making its last layer copy the **self-attention
# distributions** of a BERT-base-sized teacher (UniLMv2). So its attention pattern was itself a
# training target, and its layer numbers do not map to BERT-base's (its layer 3 was MiniLM's layer
# 6). When the loaded checkpoint is not BERT-base (the load cell prints which, with
# `paper_comparison` from `helpers/model/loading.py`), every published number is labelled
# "different model and training objective". To tell BERT's architecture from this checkpoint's
# training without the hub, the `[CLS]`/`[SEP]` measures are repeated on **course-mini**, a small
# BERT the course pre-trained with BERT's own objectives. `MODEL = "bert-base-uncased"` in the
# Parameters cell reruns every cell on BERT-base (it needs the Hugging Face hub).
#
# The first cell installs the course when you run it on Google Colab; on your own machine it does
# nothing.

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
# `MODEL` names the checkpoint (`None`: the course chooses; any hub id or local folder works).
# `SENTENCE` is the text whose attention maps we draw; the aggregates come from the data sets
# below. Nothing below depends on a particular size or sentence.
#
# `LANGUAGE` picks the language of the data (`None`: the one the model's tokenizer reads,
# `model_language` in `helpers/common/language.py`; `"en"` or `"zh"` for a model that reads both).

# %% tags=["parameters"]
MODEL = None
SENTENCE = "The bank by the river was unbelievably quiet this morning."
LANGUAGE = None  # None: the data follow the model; or "en", "zh"

# %% [markdown]
# ## Load the model and trace the inputs
#
# Besides `SENTENCE` we trace, each input once, two data sets built from `data/sentence_pairs.tsv`
# (pairs of consecutive sentences written for the course, CC0; with a Chinese model the Chinese
# pairs of `data/sentence_pairs_zh.tsv`, chosen by `sentence_pairs_for` in
# `helpers/common/language.py`), every input in BERT's two-segment
# form `[CLS] A [SEP] B [SEP]`:
#
# * **short pairs**: one pair per input;
# * **packed pairs**: consecutive pairs joined into two segments of up to 128 tokens in all
#   (`compute.packed_pairs`), the length Clark et al. (2019) used. Each packed input is made of
#   short pairs (`compute.packed_pair_groups` says which), so the two lengths can be compared on
#   the same sentences.
#
# Every number below comes from these cached traces. The modules used:
# `helpers/model/loading.py` (`load_model`, `paper_comparison`), `helpers/model/trace.py`
# (`trace_text`), this lesson's `helpers/attention/compute.py` (which gathers the measures of
# `shares.py`, `norms.py` and `comparisons.py`, and the rows of the tables and the sentences of
# the findings, from `findings.py`), `helpers/attention/plots.py` (the figures) and
# `helpers/attention/widgets.py` (the explorers), `helpers/common/stats.py` (the intervals and
# verdicts behind every claim) and `helpers/common/claims.py` (`show_finding`).
#
# Each measured claim is printed as one plain sentence generated from the numbers, with its
# evidence in a folded *How we know* block beneath (click to open). Each input is one unit: the
# evidence resamples inputs, and with only a dozen packed inputs it is widened to what so few units
# allow. "Could be just as high" and "we cannot tell" mean the data do not decide, never "the same".

# %%
import matplotlib.pyplot as plt
import torch

from helpers.model.loading import BERT_BASE_SIZES, load_model, paper_comparison
from helpers.model.trace import trace_text
from helpers.attention import compute, plots
from helpers.common.claims import show_finding
from helpers.common.progress import progress
from helpers.common.tables import show_table
from helpers.common.stats import bootstrap_ci, quartiles
from helpers.layerwalk.compute import profile_finding, rank_layers

loaded = load_model(MODEL)
tokenizer, model = loaded
from helpers.common.language import (model_language,
                                     period_and_comma_for,
                                     sentence_pairs_for)

language = model_language(tokenizer, lesson="08",
                          choice=LANGUAGE)  # the data follow the model
L, A = model.config.num_hidden_layers, model.config.num_attention_heads
trace = trace_text(tokenizer, model, SENTENCE)
row_sums = torch.stack(trace.attentions).sum(dim=-1)
print(f"model {loaded.choice.name}: {L} layers x {A} heads; SENTENCE has"
      f" {trace.seq_len} tokens")
print("every attention row of SENTENCE sums to 1 (largest deviation"
      f" {(row_sums - 1).abs().max():.1e})")
# is this the BERT-base that the papers below measured?
paper = paper_comparison(loaded)
print(f"against the papers' BERT-base: {paper.label}")

# the two data sets
pairs = sentence_pairs_for(language)
short = [trace_text(tokenizer, model, a, b)
         for a, b in progress(pairs, desc="tracing short pairs")]
packed = [trace_text(tokenizer, model, a, b) for a, b in progress(
    compute.packed_pairs(pairs, tokenizer, max_tokens=128),
    desc="tracing packed pairs")]
# the short pairs in each packed input
members = [a + b for a, b in
           compute.packed_pair_groups(pairs, tokenizer, max_tokens=128)]
for name, group in (("short pairs", short), ("packed pairs", packed)):
    n = torch.tensor([float(t.seq_len) for t in group])
    print(f"{name:>12}: {len(group)} inputs, length median {n.median():.0f}"
          f" (range {n.min():.0f}-{n.max():.0f}),"
          f" {sum(t.tokens.count('[SEP]') for t in group) // len(group)}"
          " [SEP] each")

# %% [markdown]
# Where this lesson sits on the map of lesson 00 (`you_are_here`, in
# `helpers/architecture/plots.py`):

# %% mystnb={"figure": {"caption": "The course's map of BERT from lesson 00, with the encoder layer repeated $L$ times in the loaded model. The orange frame marks what this lesson opens: the attention sub-layer, now looked at in every layer and every head.", "name": "fig-08-you-are-here"}}
from helpers.architecture.plots import LESSON_PARTS, you_are_here

you_are_here(model.config, LESSON_PARTS["08"]);

# %% [markdown]
# ## What does [CLS] look at?
#
# Row 0 of each attention map is the distribution of `[CLS]`'s query over all keys. Averaged over
# the $A$ heads of a layer, one row per layer, for `SENTENCE`:
#
# $$\bar a^{(l)}_{[CLS]\to j} = \frac{1}{A}\sum_{h=1}^{A} a^{(l,h)}_{0 j}.$$
#
# One sentence is an anecdote: after the figure, the table of where `[CLS]` looks most in
# `SENTENCE` is followed by the share of `[CLS]`'s attention that lands on each kind of key over
# the short pairs (`compute.attention_shares(t, queries=[0])`), per layer, with its 95 % CI over
# the inputs.

# %% mystnb={"figure": {"caption": "Attention probability from `[CLS]` (query position 0) to each token of the lesson's sentence, averaged over the heads, one row per encoder layer; colour on the full 0\u20131 scale (past 40 tokens only the most attended columns are shown). Find the layers where the weight piles onto one column and those where it spreads over the words.", "name": "fig-08-cls-attention-by-layer"}}
cls_att = compute.cls_attention(trace)  # [L, A, seq]
cls_mean = cls_att.mean(dim=1)
ax = plots.plot_token_heatmap(
    cls_mean,
    trace.tokens,
    title="[CLS]'s attention probability per layer, heads averaged",
)
plt.show()

# %%
# the rows: favourite_key_rows and layer_rows in helpers/attention/findings.py
cls_looks_table = show_table(
    compute.favourite_key_rows(cls_mean, trace.tokens), index="layer",
    title="in SENTENCE, where [CLS] looks most (heads averaged)")
# [n, L, 4]; per layer, one interval per kind of key
cls_rows = torch.stack([compute.attention_shares(t, queries=[0])
                        for t in short])
cls_ci = [bootstrap_ci(cls_rows[:, layer]) for layer in range(L)]
cls_table = show_table(
    compute.layer_rows({c: [ci[k].percent(0) for ci in cls_ci]
                        for k, c in enumerate(compute.TOKEN_CLASSES)},
                       label=str),
    index="layer",
    title="[CLS] -> each kind of key: share of [CLS]'s attention, short"
    " pairs, mean [95 % CI over the inputs]")

# %% [markdown]
# Averaging hides that heads disagree. Here is `SENTENCE`'s `[CLS]` row for every head of the last
# layer (change `layer_to_show` to see another one).

# %% mystnb={"figure": {"caption": "Attention probability from `[CLS]` to each token of the lesson's sentence, one row per head of the last encoder layer (or of the layer set in `layer_to_show`); colour on the full 0\u20131 scale. One sentence, so an illustration. Compare the rows: find heads that agree on one token and heads that look elsewhere.", "name": "fig-08-cls-attention-by-head"}}
layer_to_show = L
ax = plots.plot_token_heatmap(
    cls_att[layer_to_show - 1],
    trace.tokens,
    ylabel="head",
    yticklabels=[str(h) for h in range(A)],
    title=f"[CLS]'s attention probability per head, layer {layer_to_show}",
)
plt.show()
spread = cls_att[layer_to_show - 1].argmax(dim=-1)
print(f"layer {layer_to_show}: the heads' favourite tokens for [CLS] are "
      f"{sorted({trace.tokens[int(j)] for j in spread})}")

# %% [markdown]
# ## Where does attention go, layer by layer?
#
# For every query we add up the attention on keys of each class — `[CLS]`, `[SEP]`, punctuation,
# all other tokens — and average over queries and heads (`compute.attention_shares`). The dashed
# lines are what *evenly spread* attention would give: a class holding $k$ of the $n$ tokens gets
# $k/n$ (`compute.uniform_shares`).
#
# Clark, Khandelwal, Levy and Manning (2019, *What Does BERT Look At? An Analysis of BERT's
# Attention*) measured this on **BERT-base**, over 1,000 Wikipedia inputs of two consecutive
# paragraphs, up to 128 tokens: in layers 6–10 over half of the attention goes to `[SEP]`, and
# early heads attend to `[CLS]` (their Fig. 2). They speculate that when a head's pattern does not
# apply, it parks its attention on a token present in every input, a **no-op**. The packed pairs
# match their **input format** (two segments, up to 128 tokens), and only that: the code prints
# what still differs (the number of layers, the training, the number of inputs), read from the
# loaded model and the data. The short pairs show what a short input does to the same numbers.
#
# After the figure, the table and the comparison with Clark et al., which prints which model each
# number comes from. The largest share is named together with every layer that could be just as
# high, comparing layers **paired** over the same inputs (`rank_layers`): each input's own
# difference between two layers can vary much less than the inputs do, so two layers whose
# separate intervals overlap can still differ. "Share ÷ uniform share" is each share relative to
# what evenly spread attention would give on inputs of that length. Whether `[SEP]` gets over half
# of the attention is checked per layer (`compute.above_threshold`). A **sink** is judged per
# token: `[SEP]` has two tokens to `[CLS]`'s one, so its raw share is twice as large for doing
# nothing special. We call a class a sink in a layer when its share ÷ its even share is surely
# above **2** -- a floor fixed before measuring (`compute.SINK_FLOOR`, `compute.sink_test`; the
# sentence comes from `compute.sink_finding`).

# %% mystnb={"figure": {"caption": "Share of attention on each kind of key (`[CLS]`, `[SEP]`, punctuation, other), averaged over queries and heads, per encoder layer. Lines: means over the short and over the packed pairs, bands: 95 % CIs over inputs; green diamonds: the lesson's sentence; dashed: the even-spread share $k/n$, in its data set's colour. Read each line against its dashed line.", "name": "fig-08-class-shares"}}
shares_short = compute.attention_shares_per_sentence(short)  # [n, L, 4]
shares_packed = compute.attention_shares_per_sentence(packed)
uniform_short = torch.stack([compute.uniform_shares(t) for t in short]).mean(0)
uniform_packed = torch.stack([compute.uniform_shares(t)
                              for t in packed]).mean(0)
plots.plot_class_shares(
    {"short pairs": shares_short, "packed pairs": shares_packed,
     "SENTENCE": compute.attention_shares(trace)},
    uniform={"short pairs": uniform_short, "packed pairs": uniform_packed},
)
plt.show()

# %%
ci_packed = [bootstrap_ci(shares_packed[:, :, k]) for k in range(4)]
ci_short = [bootstrap_ci(shares_short[:, :, k]) for k in range(4)]
token_kinds = compute.TOKEN_CLASSES
share_table = show_table(
    [{"layer": "uniform"}
     | {c: f"{uniform_packed[k]:.1%} ({uniform_short[k]:.1%})"
        for k, c in enumerate(token_kinds)}]
    + compute.layer_rows({c: [f"{p.percent()} ({s.estimate:.1%})"
                              for p, s in zip(ci_packed[k], ci_short[k])]
                          for k, c in enumerate(token_kinds)}),
    index="layer",
    title="share of attention per token class: packed pairs, mean [95 % CI]"
    " (short pairs' mean in parentheses)")
sep, cls = token_kinds.index("[SEP]"), token_kinds.index("[CLS]")
layer_names = [f"layer {l}" for l in range(1, L + 1)]
sep_rank = rank_layers(shares_packed[:, :, sep], lowest=False, unit="inputs")
cls_rank = rank_layers(shares_packed[:, :, cls], lowest=False, unit="inputs")
sep_half = compute.above_threshold(shares_packed[:, :, sep], 0.5)
over_half = [l + 1 for l in sep_half["above"]]
# a sink, per token: share / its even share surely above SINK_FLOOR
sink = compute.sink_test(packed)
sinks_on = compute.sink_of(sink)  # "[CLS]", "[SEP]", both or None
sink_claim = show_finding(
    *compute.sink_finding(len(packed), sep_rank, cls_rank, sep_half, sink))
for k, rank in ((sep, sep_rank), (cls, cls_rank)):
    top = rank.extreme
    packed_x = ci_packed[k][top].estimate / uniform_packed[k]
    short_x = ci_short[k][top].estimate / uniform_short[k]
    print(f"{token_kinds[k]} at layer {top + 1}, share / uniform"
          f" share: packed {packed_x:.1f}x, short {short_x:.1f}x")
print(f"Like for like in input format only. Still different: {L} layers here,"
      f" {BERT_BASE_SIZES[0]} in BERT-base; {len(packed)} packed inputs here,"
      f" about 1,000 in Clark et al.; training: {paper.label}"
      + ("" if paper.same else f" ({paper.about})") + ".")
print(paper.caveat(
    "where the attention sinks ([CLS] or [SEP]) and in which layers"))

# %% [markdown]
# **BERT's architecture, or this checkpoint's training?** Whatever sink this checkpoint shows, or
# does not show, where BERT-base has a `[SEP]` sink, could come from its history (attention
# distilled, then contrastive training) rather than from BERT. The same shares on **course-mini** (`load_model("course-mini")`,
# model card `data/course_mini/README.md`), pre-trained by the course with BERT's own objectives,
# masked-LM and next-sentence prediction: packed pairs built with its own tokenizer, up to its 128
# tokens. What it cannot tell: course-mini is tiny (4 layers of 4 heads), has seen only Shakespeare
# and the King James Bible (our sentences are far outside it) and differs from BERT-base in size
# too, so agreement or disagreement points at training *or* size; its layer numbers map to
# neither model's.

# %%
from helpers.common.language import LANGUAGES
from helpers.model.loading import COURSE_MINI

mini_sink = None
if loaded.choice.name == COURSE_MINI:
    print("The loaded model is course-mini itself: nothing to compare.")
elif language != "en":  # course-mini reads English only
    print(f"Skipped: course-mini was pre-trained on English text only and"
          f" cannot read the {LANGUAGES[language][0]} sentence pairs.")
else:
    mini_tok, mini_model = load_model(COURSE_MINI)
    mini_packed = [trace_text(mini_tok, mini_model, a, b) for a, b in
                   compute.packed_pairs(pairs, mini_tok, max_tokens=128)]
    mini_shares = compute.attention_shares_per_sentence(mini_packed)
    mini_uniform = torch.stack(
        [compute.uniform_shares(t) for t in mini_packed]).mean(0)
    mini_sink = compute.sink_test(mini_packed)
    # a column per model and key; a shallower model leaves its cells empty
    by_model = {"course-mini": mini_shares, loaded.choice.name: shares_packed}
    mini_table = show_table(
        compute.layer_rows({
            f"{who}: {c}": [iv.percent() for iv in bootstrap_ci(s[:, :, k])]
            for who, s in by_model.items()
            for c, k in (("[CLS]", cls), ("[SEP]", sep))}),
        index="layer",
        title=f"share of attention on [CLS] and [SEP], packed pairs, mean"
        f" [95 % CI over the inputs]; even spread: course-mini"
        f" {mini_uniform[cls]:.1%} / {mini_uniform[sep]:.1%}, this model"
        f" {uniform_packed[cls]:.1%} / {uniform_packed[sep]:.1%}")
    mini_claim = show_finding(*compute.other_sink_finding(
        "course-mini", len(mini_packed), mini_sink, sinks_on))

# %% [markdown]
# Clark et al.'s pattern is about single heads: their Fig. 2 plots each head's mean attention on
# `[CLS]`, with no cut-off. Per head we take its `[CLS]` share, the mean over all queries of an
# input (`compute.head_key_share`), with its interval over the packed inputs. The popular claim
# says *most* of a head's weight, so we count heads whose mean share is above one half, and heads
# **clearly** above one half, every head tested at once (`compute.above_threshold`). A looser
# count is printed beside them, labelled as such: heads clearly above 10x the uniform share $1/n$
# (`compute.head_key_ratio`), which on these inputs is only about a tenth of a head's attention,
# not "most". The figure shows every head, as their strip plot does.

# %% mystnb={"figure": {"caption": "Each head's share of attention on `[CLS]` (mean over all queries of an input, then over the packed pairs): one dot per head, grouped by encoder layer, with the interval its test reads (every head tested at once, so wider than a 95 % CI). Dashed line: one half, what 'most of a head's attention' needs. Count, per layer, the heads whose interval lies wholly above the line.", "name": "fig-08-head-cls-strip"}}
print("Clark et al. (2019), BERT-base, 1,000 two-paragraph Wikipedia inputs"
      " (<= 128 tokens): over half of the attention on [SEP] in layers 6-10;"
      f" early heads attend to [CLS] (Fig. 2, no threshold) -- {paper.label}.")
# [n, L, A]: each head's share of attention on [CLS]
head_share = compute.head_key_share(packed, key=0)
# every head tested at once against one half: the intervals the test reads
half_heads = compute.heads_above(head_share, 0.5)
head_ci = [half_heads["intervals"][l * A:(l + 1) * A] for l in range(L)]
ax = plots.plot_head_strip(
    head_ci, reference=0.5, reference_label="one half (the claim)",
    ylabel="share on [CLS]",
    title="each head's share of attention on [CLS], packed pairs",
    interval_label="one head (mean, interval of the test over all heads)")
plt.show()

# %%
# per layer: heads whose mean share is above one half
heads_on_cls = (head_share.mean(0) > 0.5).sum(-1).tolist()
# the looser count, every head tested at once against 10x uniform
heads_10x = compute.heads_above(compute.head_key_ratio(packed, key=0), 10.0)
heads_surely_half = half_heads["per_layer"]
heads_over_10x = heads_10x["per_layer"]
# 10x uniform as a share, at the median length
share_10x = 10.0 / quartiles([t.seq_len for t in packed])[1]
share_cls = bootstrap_ci(shares_packed[:, :, cls])
cls_head_table = show_table(
    compute.layer_rows({
        "mean share > ½": heads_on_cls,
        "clearly > ½": heads_surely_half,
        "clearly > 10x uniform": heads_over_10x,
        "largest head's share": [
            f"{max(c.estimate for c in h):.0%}" for h in head_ci],
        "all heads' share": [iv.percent(0) for iv in share_cls]}),
    index="layer",
    title=f"heads on [CLS] per layer (of {A}), {len(packed)} packed inputs")
cls_heads_claim = show_finding(*compute.cls_heads_finding(
    half_heads, heads_on_cls, heads_10x, 10.0, share_10x))

# %% [markdown]
# Clark et al.'s Fig. 2 has a third finding: **deep heads attend to periods and commas**. It is a
# claim about single heads, so it is tested per head. First the floor, stated before measuring: a
# head *attends to periods and commas* when it gives them at least **twice** what evenly spread
# attention would (`PUNCT_FLOOR` below; their share ÷ their uniform share, which
# `compute.head_token_share` gives per input). A head counts when it is clearly above that floor,
# every head tested at once (`compute.heads_above`); the claim holds here when such heads exist and
# more of them sit in the upper half of the $L$ layers than in the lower
# (`compute.deep_heads_verdict`). After the figure of every head, a table per layer, heads
# averaged: the share itself, that ratio and the largest single head.

# %% mystnb={"figure": {"caption": "Each head's attention on periods and commas divided by their uniform share (mean over the packed pairs that hold one): one dot per head, grouped by encoder layer, with the interval its test reads (every head tested at once, so wider than a 95 % CI). Dashed line: the floor stated first, twice the uniform share. Count, per layer, the heads whose interval lies wholly above the line.", "name": "fig-08-head-punct-strip"}}
PUNCT_FLOOR = 2.0  # stated before measuring: twice the uniform share
# [n, L, A], [n]
marks = period_and_comma_for(language)  # Chinese: the full-width 。 and ，
pc_share, pc_uniform = compute.head_token_share(packed, tokens=marks)
keep = pc_uniform > 0  # inputs that hold a period or a comma
# [n, L, A]: each head's share ÷ that input's uniform share
pc_head_ratio = pc_share[keep] / pc_uniform[keep, None, None]
punct_heads = compute.heads_above(pc_head_ratio, PUNCT_FLOOR)
punct_ci = [punct_heads["intervals"][l * A:(l + 1) * A] for l in range(L)]
ax = plots.plot_head_strip(
    punct_ci, reference=PUNCT_FLOOR,
    reference_label=f"{PUNCT_FLOOR:g}x uniform (the floor)",
    ylabel="share ÷ uniform share",
    title="each head's attention on periods and commas ÷ uniform",
    interval_label="one head (mean, interval of the test over all heads)")
plt.show()

# %%
pc_ratio = pc_head_ratio.mean(-1)  # [n, L]: heads averaged
pc_ci = bootstrap_ci(pc_share[keep].mean(-1))
pc_ratio_ci = bootstrap_ci(pc_ratio)
pc_table = show_table(
    compute.layer_rows({
        "periods and commas": [iv.percent() for iv in pc_ci],
        "x uniform": [iv.format(".2f") for iv in pc_ratio_ci],
        "largest head": [f"{pc_share[keep][:, l].mean(0).max():.0%}"
                         for l in range(L)],
        f"heads clearly > {PUNCT_FLOOR:g}x uniform": punct_heads["per_layer"],
    }, label=str),
    index="layer",
    title="Attention on periods and commas, packed pairs, heads averaged:"
    " share and share ÷ its uniform share, mean [95 % CI over the inputs];"
    " the largest single head; heads clearly above the floor")
punct_claim = show_finding(*compute.punct_finding(
    punct_heads, PUNCT_FLOOR, pc_ratio_ci, int(keep.sum())))
if language != "en":  # Clark et al. measured English
    print(f"Periods and commas here: {' and '.join(marks)}, one token each"
          " (Clark et al. measured English '.' and ',').")

# %% [markdown]
# **How input length moves the shares.** With $n$ tokens, a head that looks at nothing in
# particular gives each token $1/n$. A class with a fixed number of tokens (`[CLS]`: one, `[SEP]`:
# two) therefore starts higher on a short input, before any pattern of the model; punctuation and
# ordinary words grow in number with the input, so their uniform share $k/n$ need not (the uniform
# row above shows it for these two sets). Dividing a share by $k/n$ removes that starting point. It
# does not remove every length effect: a token that collects about the same share whatever $n$ (a
# "sink") has a ratio that grows with $n$. The cell below tests, per class and layer, whether the
# "share ÷ uniform share" of the short and the packed pairs differ, **paired**: each packed input
# against the mean of its own pairs read as short inputs (`members`), the same sentences at two
# lengths (`compute.compare_layers`, every layer of a class read at once; the packed input is the
# unit resampled). Where they differ, dividing by $k/n$ has not made the two lengths comparable.

# %%
med_short, med_packed = (quartiles([t.seq_len for t in g])[1]
                          for g in (short, packed))
print(f"uniform share of one token: short pairs (median {med_short:.0f}"
      f" tokens) {1 / med_short:.1%}, packed pairs (median {med_packed:.0f})"
      f" {1 / med_packed:.1%}")
# [n, 4], per input
uni_s = torch.stack([compute.uniform_shares(t) for t in short])
uni_p = torch.stack([compute.uniform_shares(t) for t in packed])
by_length = {}  # per class: share ÷ uniform share, short minus packed
for k, c in enumerate(token_kinds):
    short_ratio = shares_short[:, :, k] / uni_s[:, k:k + 1]  # [n_short, L]
    # each packed input's pairs, read short: paired on the same sentences
    as_short = torch.stack([short_ratio[m].mean(0) for m in members])
    by_length[c] = compute.compare_layers(
        as_short, shares_packed[:, :, k] / uni_p[:, k:k + 1],
        labels=("short", "packed"))
length_differs = {c: d["above"] + d["below"] for c, d in by_length.items()}
length_table = show_table(
    compute.layer_rows({c: [f"{x.estimate:+.2f}" for x in d["intervals"]]
                        for c, d in by_length.items()}),
    index="layer",
    title="share ÷ uniform share, short minus packed inputs (the same"
    " sentences), mean per layer")
length_claim = show_finding(*compute.length_finding(
    by_length, len(packed), sum(map(len, members))))

# %% [markdown]
# ## Norm-based attention: does the attended vector matter?
#
# Kobayashi, Kuribayashi, Yokoi and Inui (2020, *Attention is Not Only a Weight: Analyzing
# Transformers with Vector Norms*) rewrote the attention block's output as a sum of vectors, one
# per key:
#
# $$\text{output.dense}(\text{context})_i = \sum_{h=1}^{A}\sum_{j} \alpha^{h}_{ij}\, f_h(x_j) + b_O,
# \qquad f_h(x) = (x W_V^\top + b_V)_h\, (W_O^{h})^\top,$$
#
# in lesson 02's convention ($XW^\top$, with $W$ the `weight` of an `nn.Linear`), where
# $(\cdot)_h$ is head $h$'s slice of the `value` vector and $W_O^h$ the matching columns of
# `attention.output.dense.weight`. A key can receive a large weight $\alpha_{ij}$ and still add
# little, if $\lVert f(x_j)\rVert$ is small. Their measure follows the sum above: per layer, the
# heads are summed **before** the norm, $\lVert \sum_{h} \alpha^{h}_{ij} f_h(x_j)\rVert$
# (`compute.norm_attention_layer`), so heads whose vectors point different ways partly cancel.
# We build $f$ (`compute.transformed_values`) and check it against the model: capture what
# `attention.output.dense` returns with a hook, and rebuild it from $\alpha$ and $f$.
#
# Then the shares again, once with the weights $\alpha_{ij}$ (heads averaged) and once with
# Kobayashi et al.'s layer-level $\lVert \sum_h \alpha^h_{ij} f_h(x_j)\rVert$ (each query's row
# rescaled to sum to 1; `compute.norm_attention_shares_layer`), on the packed pairs. A simpler
# per-head variant, $\lVert\alpha^h_{ij} f_h(x_j)\rVert$ with each head's row rescaled and the heads
# then averaged (`compute.norm_attention_shares`), weighs every head equally and lets no head
# cancel another; it is drawn too, and its verdicts folded beside, but **the verdicts and the prose
# below read the layer-level measure**, the paper's. Per class and layer each is compared with the
# weight share on the same inputs (`compute.compare_layers`, every layer of a class read at once).

# %%
captured = {}
hooks = [layer.attention.output.dense.register_forward_hook(
             lambda mod, args, out, l=l: captured.__setitem__(l, out[0]))
         for l, layer in enumerate(model.encoder.layer, start=1)]
with torch.no_grad():
    model(**tokenizer(SENTENCE, return_tensors="pt", truncation=True,
                      max_length=trace.seq_len).to(model.device))
for hook in hooks:
    hook.remove()
for l in range(1, L + 1):
    f = compute.transformed_values(trace, model, l)  # [A, seq, H]
    rebuilt = (torch.einsum("aqk,akd->qd", trace.attention(l), f)
               + model.encoder.layer[l - 1].attention.output.dense.bias)
    assert torch.allclose(rebuilt, captured[l], atol=1e-4), (
        f"layer {l}: the sum of alpha * f(x) is not the block output")
print("sum over heads and keys of alpha * f(x) + b_O equals the model's"
      f" attention.output.dense, all {L} layers")
# Kobayashi's layer-level shares, [n, L, 4], and the per-head variant
norm_packed = torch.stack([
    compute.norm_attention_shares_layer(t, model)
    for t in progress(packed, desc="norm-based attention")])
norm_head_packed = torch.stack(
    [compute.norm_attention_shares(t, model) for t in packed])
punct = token_kinds.index("punctuation")
kinds = {token_kinds[k]: k for k in (cls, sep, punct)}
w_ci = {c: bootstrap_ci(shares_packed[:, :, k]) for c, k in kinds.items()}
n_ci = {c: bootstrap_ci(norm_packed[:, :, k]) for c, k in kinds.items()}
kobayashi_table = show_table(
    compute.layer_rows({
        f"{c} {how}": [iv.percent() for iv in ci[c]] for c in kinds
        for how, ci in (("weight", w_ci), ("norm-based", n_ci))}, label=str),
    index="layer",
    title="Share on each kind of key, packed pairs, mean [95 % CI over the"
    " inputs]: attention weight and Kobayashi et al.'s norm-based share"
    " (layer level, heads summed before the norm)")

# %% mystnb={"figure": {"caption": "Share on each kind of key per encoder layer, packed pairs, three ways: attention weights $\\alpha$ (blue), Kobayashi et al.'s layer-level norm $\\lVert\\sum_h \\alpha f_h(x)\\rVert$ (orange) and a per-head variant $\\lVert\\alpha f_h(x)\\rVert$ (green), rows rescaled to sum to 1. Bands: 95 % CIs over inputs; red dashed: even-spread share $k/n$. Compare orange with blue.", "name": "fig-08-weight-vs-norm"}}
plots.plot_class_shares(
    {"weight α": shares_packed,
     "norm ‖Σ_h α f_h(x)‖ (layer)": norm_packed,
     "norm ‖α f_h(x)‖, per head": norm_head_packed},
    uniform={"packed pairs": uniform_packed},
    title="share on each kind of key: attention weight vs norm-based (packed"
    " pairs)",
    ylabel="share on this kind of key",  # a weight share or a norm share
)
plt.show()

# %%
fnorms = compute.value_norms_by_class(packed, model)  # [n, L, 4]
norm_vs_weight = {
    c: compute.compare_layers(norm_packed[:, :, k], shares_packed[:, :, k],
                              labels=("norm-based", "weight share"))
    for c, k in kinds.items()}
head_vs_weight = {  # the per-head variant, folded beside
    c: compute.compare_layers(norm_head_packed[:, :, k],
                              shares_packed[:, :, k])
    for c, k in kinds.items()}
norm_claim = show_finding(*compute.norm_finding(
    norm_vs_weight, head_vs_weight, len(packed), paper.label))
ratio = torch.nanmean(fnorms[:, :, cls] / fnorms[:, :, 3], dim=0)
print("||f(x)|| of [CLS] / ||f(x)|| of ordinary tokens, per layer: "
      + ", ".join(f"{r:.2f}" for r in ratio.tolist()))

# %% [markdown]
# ## Testing two popular readings
#
# **"[SEP] gets attention because it marks the sentence boundary."** If marking a boundary were
# what draws attention, punctuation (mostly the full stops that end each sentence: boundaries too,
# inside every segment) should be enriched as well, and what `[SEP]` passes on should count, i.e.
# its norm-based share should stay. Measured on the packed pairs, as "share ÷ uniform share" (1 =
# no more than evenly spread attention); whether `[SEP]` gets clearly more than twice its uniform
# share is checked per layer, every layer at once (`compute.above_threshold`, on each input's own
# ratio):

# %%
sep_ratio = (shares_packed[:, :, sep] / uniform_packed[sep]).mean(0)
punct_ratio = (shares_packed[:, :, punct] / uniform_packed[punct]).mean(0)
sep_norm = norm_packed[:, :, sep].mean(0) / shares_packed[:, :, sep].mean(0)
boundary_table = show_table(
    compute.layer_rows({
        "[SEP] ÷ uniform": [f"{r:.1f}x" for r in sep_ratio],
        "punctuation ÷ uniform": [f"{r:.1f}x" for r in punct_ratio],
        "[SEP]: norm-based ÷ weight share": [f"{r:.0%}" for r in sep_norm]}),
    index="layer",
    title="packed pairs, means over inputs: share ÷ uniform share")
# per input: [SEP] share ÷ that input's uniform share
sep_excess = shares_packed[:, :, sep] / uni_p[:, sep:sep + 1]
twice = compute.above_threshold(sep_excess, 2.0)
boundary_claim = show_finding(
    *compute.boundary_finding(twice, sep_excess, sep_norm, punct_ratio))
print("Clark et al. (2019, BERT-base) speculate that attention to [SEP]"
      " serves as a no-op, supported by small gradients; Kobayashi et al."
      " (2020, BERT-base): ||f(x)|| of [SEP] is small, so its norm-based"
      f" share is far below its weight share ({paper.label}).")

# %% [markdown]
# **"[CLS] attends to itself in early layers because it has not learned to look yet."** A model
# that has not learned where to look is one with random weights: we build one with the same
# configuration (`compute.untrained_like`, random initialisation, used only for this comparison)
# and measure $[CLS]\to[CLS]$ on the same short pairs as the trained model, against $1/n$. Be
# clear about what this test can show: BERT's initial weights are small, so a random model's
# attention scores are near zero and its attention is close to uniform, $1/n$, *by construction*.
# Any trained head that departs from uniform will "differ"; the test says where the trained
# model's `[CLS]` self-attention is learned, not why. The claim also says *early*: the per-layer
# values show where $[CLS]\to[CLS]$ is high. After the figure, per layer: the trained-minus-random
# difference measured on each input (paired, `compute.compare_layers`), the highest layer with
# every layer that could be just as high, and the layers clearly above one half.

# %% mystnb={"figure": {"caption": "Attention of `[CLS]` on itself, averaged over heads, per encoder layer, on the short pairs: the trained model (blue) and one of the same configuration with random weights (orange), means with 95 % CI bands over inputs; green diamonds: the lesson's sentence; grey dashed: uniform share $1/n$. Compare trained with random weights layer by layer.", "name": "fig-08-cls-self-attention-trained-vs-random"}}
untrained = compute.untrained_like(model, seed=0)
random_traces = [trace_text(tokenizer, untrained, a, b)
                 for a, b in progress(pairs, desc="untrained model")]
# [n, L]
self_trained = torch.stack(
    [torch.stack(t.attentions)[:, :, 0, 0].mean(-1) for t in short])
self_random = torch.stack(
    [torch.stack(t.attentions)[:, :, 0, 0].mean(-1) for t in random_traces])
inv_n = torch.tensor([1.0 / t.seq_len for t in short]).mean()
plots.plot_layer_lines(
    {"trained": self_trained, "same config, random weights": self_random,
     "SENTENCE": compute.cls_attention(trace)[:, :, 0].mean(-1)},
    reference=inv_n, reference_label="uniform 1/n (short pairs)",
    title="attention probability of [CLS] on itself (heads averaged)",
    ylabel="attention probability",
)
plt.show()

# %%
t_ci, r_ci = bootstrap_ci(self_trained), bootstrap_ci(self_random)
trained_vs_random = compute.compare_layers(
    self_trained, self_random, labels=("trained", "random weights"))
self_table = show_table(
    compute.layer_rows({
        "trained": [iv.percent() for iv in t_ci],
        "random weights": [iv.percent() for iv in r_ci],
        "trained minus random": [
            f"{iv.estimate:+.1%}" for iv in trained_vs_random["intervals"]],
    }, label=str),
    index="layer",
    title="[CLS] -> [CLS] attention (heads averaged), short pairs, mean [95 %"
    " CI over the inputs], and trained minus random weights on the same"
    f" inputs; uniform 1/n = {inv_n:.1%}")
learned = sorted(trained_vs_random["above"] + trained_vs_random["below"])
self_rank = rank_layers(self_trained, lowest=False, unit="inputs")
self_half = compute.above_threshold(self_trained, 0.5)
self_over_half = [l + 1 for l in self_half["above"]]
self_claim = show_finding(*compute.self_attention_finding(
    self_rank, self_half, trained_vs_random, len(short)))

# %% [markdown]
# ## Focused and broad heads: entropy
#
# The entropy of one attention row, $-\sum_j a_{ij} \log a_{ij}$ (in nats), is 0 when the query
# looks at one key and $\log n$ when it spreads evenly over $n$ keys. Averaged over queries it
# gives one number per head and layer. Divided by $\log n$ (`compute.normalized_entropy`) it runs
# from 0 to 1 whatever the length, so inputs of different lengths compare. The second figure:
# per layer, heads averaged, the data sets with their intervals, `SENTENCE` as markers and uniform
# attention (1) as the reference.

# %% mystnb={"figure": {"caption": "Attention entropy of each head divided by $\\log n$, averaged over queries and then over the packed pairs; rows: encoder layers, columns: heads. Colour on a fixed 0\u20131 scale: 0 when every query looks at one key, 1 for evenly spread attention. Find the most focused heads (darkest cells) and the broadest (brightest).", "name": "fig-08-entropy-per-head"}}
entropy = compute.attention_entropy(trace)  # [L, A]
a = trace.attention(1, 0)
rows_nats = -(a * a.clamp_min(1e-12).log()).sum(-1)
print(f"layer 1, head 0 by hand: {rows_nats.mean():.3f} nats;"
      f" compute.attention_entropy: {entropy[0, 0]:.3f}")
# [n, L, A]
ent_packed = torch.stack([compute.normalized_entropy(t) for t in packed])
ax = plots.plot_layer_head_table(
    ent_packed.mean(0),
    title="attention entropy ÷ log n per head, packed pairs (mean)",
    cbar_label="entropy ÷ log n", vmin=0, vmax=1)
plt.show()
lo = compute.best_head(-ent_packed.mean(0))
hi = compute.best_head(ent_packed.mean(0))
print(f"SENTENCE: uniform attention over {trace.seq_len} tokens would have"
      f" entropy {torch.log(torch.tensor(float(trace.seq_len))):.2f} nats")
print(f"packed pairs: most focused head layer {lo[0]}, head {lo[1]}"
      f" ({-lo[2]:.2f} of log n); broadest layer {hi[0]}, head {hi[1]}"
      f" ({hi[2]:.2f} of log n)")

# %% mystnb={"figure": {"caption": "Attention entropy \u00f7 $\\log n$ averaged over heads, per encoder layer: means over the packed and the short pairs with 95 % CI bands over inputs; green diamonds: the lesson's sentence; dashed at 1: evenly spread attention. The y axis need not start at 0. Find the most focused layers and compare the two input lengths.", "name": "fig-08-entropy-by-layer"}}
# [n, L]
ent_short = torch.stack(
    [compute.normalized_entropy(t).mean(-1) for t in short])
ax = plots.plot_layer_lines(
    {"packed pairs": ent_packed.mean(-1), "short pairs": ent_short,
     "SENTENCE": compute.normalized_entropy(trace).mean(-1)},
    reference=1.0, reference_label="uniform attention",
    title="attention entropy ÷ log n, heads averaged",
    ylabel="entropy ÷ log n",
)
plt.show()

# %%
e_packed = bootstrap_ci(ent_packed.mean(-1))
entropy_rank = rank_layers(ent_packed.mean(-1), lowest=True, unit="inputs")
entropy_table = show_table(
    compute.layer_rows({"entropy ÷ log n": [str(iv) for iv in e_packed]}),
    index="layer",
    title="attention entropy ÷ log n, heads averaged, packed pairs,"
    " mean [95 % CI]")
sentence, details = profile_finding(
    entropy_rank, layer_names, what="the mean entropy ÷ log n",
    highest=False)
entropy_claim = show_finding(
    f"On the {len(packed)} packed pairs, {sentence[:1].lower()}{sentence[1:]}"
    " (Low entropy means each query spreads its attention over few keys.)",
    details,
)

# %% [markdown]
# ## Previous-token and next-token heads
#
# Clark et al. (2019) also found heads in BERT-base that put most of their attention on the
# previous or the next token. A head's *offset score* is its mean attention from position
# $i$ to position $i + o$ (with $o = -1$ or $+1$), over all queries for which $i + o$
# exists. We score every head on each short pair and average; the two tables share one
# colour scale.

# %% mystnb={"figure": {"caption": "Previous-token score (top: mean attention from position $i$ to $i-1$) and next-token score (bottom: from $i$ to $i+1$) of every head, averaged over the short pairs; rows: encoder layers, columns: heads. Both tables share one 0\u20131 colour scale. Find the brightest cells: heads that put much of their attention on one neighbour.", "name": "fig-08-offset-head-scores"}}
# [n, L, A]
prev_each = torch.stack([compute.offset_head_scores(t, -1) for t in short])
next_each = torch.stack([compute.offset_head_scores(t, +1) for t in short])
prev, nxt = prev_each.mean(0), next_each.mean(0)
plots.plot_layer_head_tables(
    {
        "previous-token score (mean attention from i to i - 1)": prev,
        "next-token score (mean attention from i to i + 1)": nxt,
    },
    cbar_label="mean attention on the neighbour",
)
plt.show()
for name, scores, each in [
    ("previous-token", prev, prev_each),
    ("next-token", nxt, next_each),
]:
    layer, head, _ = compute.best_head(scores)
    ci = bootstrap_ci(each[:, layer - 1, head])
    mine = compute.offset_head_scores(
        trace, -1 if name.startswith("prev") else 1
    )[layer - 1, head]
    print(
        f"best {name} head: layer {layer}, head {head}: {ci.percent()} over"
        f" the short pairs; on SENTENCE {mine:.1%}"
    )

# %% [markdown]
# ## Every layer and every head at once
#
# Each small map below is one head of `SENTENCE`: rows are queries, columns keys, in token order.
# A diagonal just below (above) the main diagonal is a previous-token (next-token) head; a
# bright column is a head parking its attention on one token. Kovaleva, Romanov, Rogers and
# Rumshisky (2019, *Revealing the Dark Secrets of BERT*; BERT-base, pre-trained and fine-tuned on
# GLUE tasks) sorted such maps into five patterns: *vertical* (columns on `[CLS]` or `[SEP]`),
# *diagonal* (previous or next token), the two combined, *block* (attention within one segment)
# and *heterogeneous* (no fixed shape). Look for them here; the grid is one sentence, so it is an
# illustration, not a count.
#
# Row *l* is encoder layer *l*, column *h* head *h*, on the same 0–1 colour scale as
# lesson 02. It is the *model view* of Vig's bertviz (Vig, 2019, *A Multiscale
# Visualization of Attention in the Transformer Model*), drawn as a static picture
# (`attention_model_view` in `helpers/attention/model_view.py`). The orange frame is the best
# previous-token head found above.

# %% mystnb={"figure": {"caption": "Every head (columns) of every encoder layer (rows) on the lesson's sentence, as small attention maps, queries down and keys across, on one 0\u20131 colour scale: a static bertviz model view. The orange frame marks the head with the highest previous-token score on the short pairs. Scan for diagonals, bright columns and blocks; one sentence is an illustration.", "name": "fig-08-model-view"}}
best = compute.best_head(prev)[:2]  # (layer, head), layer counted from 1
fig, axes = plots.attention_model_view(
    trace, highlight=[best],
    highlight_label="best previous-token head (above)")
plt.show()

# %% [markdown]
# ## One head, token to token
#
# The same numbers drawn as lines: queries on the left, keys on the right, each line's opacity
# equal to the attention weight. It starts on the best *next-token* head, so the lines slope one
# row down when that head's score (printed above) is high; pick the previous-token head of the
# orange frame to see them slope up. A long input is shown as a window of tokens with a `start`
# slider. (The optional `bertviz` package draws interactive views like this in the browser; the
# course does not need it.)

# %% mystnb={"figure": {"caption": "One head on the lesson's sentence drawn as lines from each query token (left) to each key token (right), each line's opacity equal to its attention weight. It opens on the best next-token head; sliders change the layer and the head (and, for a long input, the window of tokens shown). Check whether the lines slope one row down.", "name": "fig-08-head-lines-explorer"}}
from helpers.attention.widgets import HeadLinesExplorer

next_layer, next_h, _ = compute.best_head(nxt)  # a head no figure above draws
lines = HeadLinesExplorer(trace, layer=next_layer, head=next_h)
lines

# %% [markdown]
# ## Claims tested
#
# Each popular claim beside what this model shows and the published finding with the paper and the
# model it was measured on. `compute.claim_rows` builds the rows from the numbers above (every
# verdict in them is computed) and `show_scorecard` (in `helpers/common/claims.py`) shows them as a
# scorecard, the statistics folded beneath.

# %%
from helpers.common.claims import show_scorecard


best_prev = compute.best_head(prev)
rows = compute.claim_rows(
    sep_rank=sep_rank, cls_rank=cls_rank, sep_over_half=over_half,
    sink=sink, uniform_sep=float(uniform_packed[sep]),
    punct_heads=punct_heads, punct_floor=PUNCT_FLOOR,
    length_differs=length_differs, heads_on_cls=heads_on_cls,
    heads_surely_half=heads_surely_half,
    heads_over_threshold=heads_over_10x, head_threshold=10.0,
    threshold_share=share_10x, n_heads=A, norm_vs_weight=norm_vs_weight,
    sep_ratio=sep_ratio, punct_ratio=punct_ratio, sep_norm=sep_norm,
    self_trained=t_ci, self_learned=learned, self_over_half=self_over_half,
    prev_head=best_prev[:2],
    prev_ci=bootstrap_ci(prev_each[:, best_prev[0] - 1, best_prev[1]]),
    other=None if mini_sink is None else ("course-mini", mini_sink),
)
# the scorecard and its fold: show_scorecard in helpers/common/claims.py
claims = show_scorecard(rows, loaded.choice.name, paper.label)

# %% [markdown]
# ## Summary
#
# * Read attention shares against the uniform share $k/n$: it is the reference, but it does
#   not remove every length effect (the claims say for which classes and layers the short
#   and packed ratios still differ, paired on the same sentences); the packed pairs match Clark
#   et al.'s (2019, BERT-base) input format, not their model, training or number of inputs (all
#   printed).
# * A sink is judged per token, against an even share: `[SEP]` has two tokens, so its raw share
#   doubles for free. A claim about heads is tested per head, against an effect size stated
#   before measuring (twice the uniform share), with every head tested at once, and a story about
#   "deep heads" needs several heads, more of them in the upper layers than chance would put there.
# * Norm-based attention (Kobayashi et al. 2020, BERT-base; their layer-level norm, heads summed
#   first) weighs each key by the size of what it passes on.
# * This checkpoint's attention was itself a training target (MiniLM distils its teacher's
#   self-attention), so its sinks need a second opinion: course-mini, trained with BERT's own
#   objectives, shows the same measure.
# * Entropy divided by $\log n$ separates focused heads from broad ones across lengths;
#   offset scores find previous-token and next-token heads.
#
# In this run (generated from the numbers above):

# %%
for c in [sink_claim, punct_claim, cls_heads_claim, norm_claim]:
    print(f"* {c.sentence}")
if mini_sink is not None:
    print(f"* {mini_claim.sentence}")

# %% [markdown]
# ## Exercises
#
# Each exercise starts with its rating: how hard it is, how much it matters for
# the rest of the course, and about how long it takes. The checkers grade your
# answer and give a hint when it is not right yet; they never print the answer.

# %%
from helpers.exercises.lesson08 import (
    check_exercise_1,
    check_exercise_2,
    check_exercise_3,
)

# %% [markdown]
# ### Exercise 1: how much of the last layer looks at `[SEP]`?
#
# Difficulty ●●○○○ · Importance ●●●○○ · ~10 min
#
# What share of the attention in the **last** layer of `SENTENCE` goes to
# `[SEP]` (heads and queries averaged)? Give a float between 0 and 1.

# %%
answer_1 = None  # your code here: a float
check_exercise_1(answer_1, trace)

# %% [markdown]
# ### Exercise 2: a head that looks two tokens back
#
# Difficulty ●●○○○ · Importance ●●○○○ · ~10 min
#
# Which head attends most to the token **two** positions back (offset −2) on
# `SENTENCE`? Give `(layer, head)` with layers counted from 1 and heads from 0.

# %%
answer_2 = None  # your code here: a (layer, head) tuple
check_exercise_2(answer_2, trace)

# %% [markdown]
# ### Exercise 3: predict, then measure — `[CLS]` in a sentence twice as long
#
# Difficulty ●●○○○ · Importance ●●●●○ · ~10 min
#
# Write `SENTENCE` twice, `f"{SENTENCE} {SENTENCE}"`: about twice as many
# tokens, but still one `[CLS]`. **First predict**: the share of attention on
# `[CLS]` (averaged over layers, heads and queries) of the doubled sentence
# divided by that of `SENTENCE`. About 0.5 would mean attention spreads evenly
# over the tokens; about 1 would mean `[CLS]` keeps a fixed share whatever the
# length. Put your number in `prediction_3`.
#
# **Then measure** it: trace the doubled sentence with `trace_text` (one short
# run of the model), compute the share for both traces with
# `compute.attention_shares`, and give the ratio, long over short. The checker
# grades the measurement and only comments on the prediction.
#
# *Reflection (not checked):* does the result fit the reading of `[CLS]` and
# `[SEP]` as places where heads "park" attention they do not need?

# %%
prediction_3 = None  # a number, written before measuring
answer_3 = None  # your code here: a float, long share / short share
check_exercise_3(prediction_3, answer_3, tokenizer, model, SENTENCE)
