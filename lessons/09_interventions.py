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
# # 09 — Testing the stories by intervention: ablate, skip, patch, attribute
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/bert-layer-by-layer/bert-layer-by-layer/blob/main/lessons/09_interventions.ipynb)
#
# Names and counting ($L, H, A, d, I, n$; layers from 1, heads from 0): see the [conventions](00_big_picture.ipynb#conventions) box of lesson 00.
#
# Lessons 04–07 *looked*: at attention weights, similarities, probes. What they found is
# correlational — a head with a striking pattern, a layer where senses separate. The
# stronger test of what a part of the model does is to **change it and measure what
# breaks**. In this lesson we
#
# 1. remove one attention head at a time (set to zero, and set to its mean) and measure a
#    classifier's accuracy;
# 2. estimate every head's importance from a single gradient (Michel et al., 2019), check that
#    estimate like for like against the exhaustive removal, and prune heads in its order;
# 3. skip whole layers;
# 4. move one word's vector from one sentence into another and see when the model follows;
#    then redo a head removal and a patch with nnsight and TransformerLens (and two
#    attributions with Captum) and check that they give the same numbers;
# 5. ask six attribution methods, Integrated Gradients (Captum) among them, which words drove
#    one decision, and test each by removing its top words (ERASER's faithfulness metrics);
#    measure context mixing with value zeroing beside attention;
# 6. explore all of it for one sentence with a widget.
#
# The classifier reads BANKING77, 77 fine-grained banking intents, where it makes enough
# mistakes for a removed head to show. Each experiment tests a popular story, and every
# verdict below is printed by the run itself, with an interval, for the model you load.
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
# `MODEL` names the checkpoint (`None`: the course chooses); `SENTENCE` is the banking request
# whose decision we attribute to its words and explore at the end.
#
# `BUDGET` sizes the expensive work (`None`: the course chooses, `"full"` on the bundled model;
# `"quick"`: a few intents, a handful of test utterances and ambiguous words, for a fast check or
# a large model on a CPU; `choose_budget` in `helpers/common/budget.py`).

# %% tags=["parameters"]
MODEL = None
SENTENCE = "I still have not received my new card, what should I do?"
# None: the course chooses; "full" or "quick" (a few intents and test
# utterances)
BUDGET = None

# %% [markdown]
# ## The model, the data and one classifier, trained once
#
# **The task** is BANKING77 (Casanueva et al., 2020; `data/banking77/`, loaded by
# `load_banking77` in `helpers/common/data.py`): 77 intents of one banking domain, many of them
# close ("card arrival" vs "card delivery estimate"). Lesson 07's 10-intent set is too easy for
# this lesson: on the bundled model a head gets (nearly) every one of its test utterances right,
# so removing a part of the model has almost nothing left to break, and "the accuracy did not
# move" would say more about the task than about the part. Under the full budget we draw, with a seed, **30 training
# utterances of each of the 77 intents** and a fixed, stratified test set (the same number of
# utterances of every intent); the quick budget draws a few intents. The cell prints the sizes.
#
# All experiments judge the model by one classifier: lesson 07's linear head on the
# **mean-pooled last layer** — the average of the last hidden state over the real tokens.
# Whether that is the model's own sentence vector depends on the checkpoint: a
# sentence-embedding model such as the bundled all-MiniLM-L6-v2 was trained to produce its
# sentence vectors by mean pooling, while a plain BERT checkpoint such as bert-base-uncased
# was never trained to pool its tokens by the mean. The next cells print which holds for the
# checkpoint you loaded, read from its own sentence-transformers configuration (lesson 00's
# `checkpoint_facts`). We train the head once (`train_head` in `helpers/classify/compute.py`,
# `HEAD_STEPS` full-batch Adam steps as in lesson 07) and never retrain it: every intervention
# below changes the encoder under a fixed head.

# %%
import random
import time
import warnings

import numpy as np
import torch

from helpers.common.budget import choose_budget
from helpers.common.data import load_banking77
from helpers.model.loading import checkpoint_facts, load_model

loaded = load_model(MODEL)
tokenizer, model = loaded
from helpers.model.language import require_reading  # English data
require_reading(tokenizer, "en", lesson="09", what="its data sets")
budget = choose_budget(BUDGET, model)
L, A, H = (
    model.config.num_hidden_layers,
    model.config.num_attention_heads,
    model.config.hidden_size,
)
N_INTENTS, SHOTS, TEST_PER_INTENT = budget.pick((77, 30, 5), (5, 8, 2))
train_all, test_all = load_banking77("train"), load_banking77("test")
# all 77 under the full budget
intents = tuple(sorted(random.Random(0).sample(train_all.names, N_INTENTS)))
# SHOTS utterances of every intent
train = train_all.only(intents).sample(SHOTS, seed=0)
# a fixed, stratified test set
test = test_all.only(intents).sample(TEST_PER_INTENT, seed=0)
print(f"{L} layers x {A} heads, hidden size {H}")
print(
    f"BANKING77, {N_INTENTS} of its {train_all.num_classes} intents:"
    f" {len(train)} training utterances ({SHOTS} per intent), {len(test)} test"
    f" utterances ({TEST_PER_INTENT} per intent, drawn with seed 0)"
)


# %% [markdown]
# Where this lesson sits on the map of lesson 00 (`you_are_here`, in
# `helpers/architecture/plots.py`):

# %% mystnb={"figure": {"caption": "The course's map of BERT, from tokens through the repeated encoder layer and the pooler to a task head. This lesson changes the attention heads and whole encoder layers, framed in orange and marked \"you are here\", and measures what breaks in a classifier on top.", "name": "fig-09-you-are-here"}}
from helpers.architecture.plots import LESSON_PARTS, you_are_here

you_are_here(model.config, LESSON_PARTS["09"]);

# %% [markdown]
# Every utterance is cut to `MAX_LEN` tokens in every cell below. We pick it to keep every
# utterance of BANKING77 whole (the cell measures the longest in both splits); should a model
# accept fewer tokens, the cell counts the utterances that are cut and warns.

# %%
from helpers.interventions.compute import count_truncated
from helpers.model.trace import max_input_tokens

longest = max(
    len(ids)
    for ids in tokenizer(train_all.texts + test_all.texts)["input_ids"]
)
# tokens per utterance, [CLS] and [SEP] included
MAX_LEN = min(128, max_input_tokens(tokenizer, model))
n_cut = count_truncated(tokenizer, train.texts + test.texts, MAX_LEN)
if n_cut:
    warnings.warn(
        f"{n_cut} utterances are longer than MAX_LEN = {MAX_LEN} tokens and"
        " are cut.",
        stacklevel=1,
    )
print(f"longest BANKING77 utterance: {longest} tokens; MAX_LEN = {MAX_LEN}; "
      f"utterances of our sets that are cut: {n_cut}")

# %% [markdown]
# The training features come from `pooled_features` (in `helpers/interventions/compute.py`): the
# mean-pooled last layer, with the utterances run sorted by length so that a batch is padded only
# to its own longest utterance. We check it against lesson 07's `extract_features`, computed
# separately, on a few utterances.

# %%
from helpers.classify.compute import HEAD_STEPS, extract_features, train_head
from helpers.interventions.compute import pooled_features

# [N_train, H]
X_train = pooled_features(tokenizer, model, train.texts, max_length=MAX_LEN)
lesson07 = extract_features(
    tokenizer, model, train.texts[:32], max_length=MAX_LEN, progress=False
)
assert torch.allclose(lesson07.layer(L, "mean"), X_train[:32], atol=1e-4)
head = train_head(
    X_train, train.labels, train.num_classes, epochs=HEAD_STEPS, seed=0
)
print(
    f"head trained: {HEAD_STEPS} steps on {len(train)} utterances, {H}"
    f" features -> {train.num_classes} intents"
)

# %%
# None: no sentence-transformers configuration
pooling = checkpoint_facts(loaded).pooling
native = pooling is not None and "mean_tokens" in pooling
print(
    f"{loaded.choice.name}: "
    + (
        "its sentence-transformers configuration pools the mean of the tokens,"
        " so the mean-pooled last layer is the sentence vector it was trained"
        " to produce"
        if native
        else (
            "its sentence-transformers configuration pools by"
            f" {', '.join(pooling) or 'nothing'}, so mean pooling is our"
            " choice here, not the model's"
            if pooling is not None
            else (
                "no sentence-transformers configuration: it was not trained to"
                " produce a sentence vector, and mean pooling is our choice"
                " here, not the model's"
            )
        )
    )
)

# %% [markdown]
# ## How the verdicts are read, fixed before we measure
#
# Every intervention is compared with the unchanged model **on the same test utterances**: each
# utterance is right or wrong before and after, so only the utterances that change carry
# information. The exact **McNemar test** counts them (`mcnemar` in `helpers/common/stats.py`):
# with no real change, an utterance that flips is as likely to flip to right as to wrong. Where we
# test many heads or layers at once, the p-values are **Holm-adjusted** over all of them (`holm`),
# so that among the $L \times A$ heads (72 in the bundled 6 x 12 model) a few do not look harmful
# by chance alone.
#
# A change that the test does not show is not "no change". To call an intervention harmless we
# need a margin, stated **now, before any measurement**: the change counts as *equivalent* when
# its 90% interval lies inside $\pm$ the margin (two one-sided tests, TOST, each at 5%; as in
# lessons 07-10, this test is made per head or layer, not adjusted, so among many "equivalent"
# calls a few may be wrong). Anything else that is not shown to differ is **inconclusive**. `outcome_changes` in
# `helpers/interventions/compute.py` applies these rules to every comparison of the lesson.
# One more guard: with $n$ test utterances, a change that no utterance shows may still affect up
# to about $3/n$ of them (the exact bound is `unseen_rate`), so a test set too small for the
# margin can never show equivalence; the cell says whether ours can.

# %%
from helpers.interventions.compute import unseen_rate

MARGIN = 0.01  # the equivalence margin: +/- 1 accuracy point
resolution = unseen_rate(len(test))
print(
    f"equivalence margin, set before any measurement: +/-{100 * MARGIN:.1f}"
    " accuracy point(s)"
)
print(
    f"{len(test)} test utterances: a change no utterance shows may still reach"
    f" {100 * resolution:.2f} points (90% bound) -> "
    + (
        "equivalence within the margin can be shown"
        if resolution < MARGIN
        else (
            "too few utterances to ever show equivalence within the margin:"
            " every change that is not shown will read 'inconclusive'"
        )
    )
)

# %% [markdown]
# ## Running only the layers above a change
#
# An intervention at layer $l$ leaves layers $1..l-1$ untouched, so we run the test set
# once, keep every hidden state, and later re-run only the layers above the change.
# `run_cached` and `continue_from` (both in `helpers/interventions/compute.py`) do this; a
# `SentenceHead` applies the pooling and the head to a last hidden state. Two checks: running
# all layers again from the embeddings reproduces the last layer (on the group of the longest
# utterances, where padding matters most), and the head's logits equal those from lesson 07's
# `extract_features`, computed separately.
#
# Numbering, once for the whole lesson: **layers count from 1** -- layer 1 is
# `model.encoder.layer[0]`, layer $L$ is `model.encoder.layer[L - 1]`, and "layer 0" is the
# embedding output -- while **heads count from 0**, as their columns in the weight matrices do.

# %%
from helpers.common.stats import accuracy_ci
from helpers.interventions.compute import (
    SentenceHead,
    continue_from,
    length_buckets,
    run_cached,
)

classifier = SentenceHead(head, pooling="mean")
run = run_cached(
    tokenizer, model, test.texts, max_length=MAX_LEN, token_shares=True
)
mask = run.attention_mask
# the longest utterances, each padded to the longest of them
rows, width = length_buckets(mask, 32)[-1]
real = mask[rows, :width].bool()
again = continue_from(
    model, run.hidden(0)[rows, :width], mask[rows, :width], after_layer=0
)
assert torch.allclose(
    again[real], run.hidden(L)[rows, :width][real], atol=1e-4
)
feats_some = extract_features(
    tokenizer, model, test.texts[:32], max_length=MAX_LEN, progress=False
)
assert torch.allclose(
    head(feats_some.layer(L, "mean")),
    classifier(run.hidden(L), mask)[:32],
    atol=1e-4,
)
y = torch.tensor(test.labels, device=model.device)
logits_base = classifier(run.hidden(L), mask)
base_correct = (logits_base.argmax(-1) == y).float()
base_acc = accuracy_ci(base_correct)
print(
    f"test accuracy of the head, nothing changed: {base_acc.percent()} (exact"
    f" 95% interval over the {len(test)} test utterances; chance"
    f" {1 / test.num_classes:.1%}); {int(len(test) - base_correct.sum())}"
    " utterances wrong"
)

# %% [markdown]
# For scale only (different models and training data): on all 77 intents and the full test set,
# Casanueva et al. (2020, Table 3) report 93.66% for BERT-Large fine-tuned on the full training
# data and 93.36% for fixed USE+ConveRT sentence encoders with a trained classifier, 85.19% for the
# latter with 10 training utterances per intent. Our head is closer to the second kind — a fixed
# encoder and a classifier on top — with a much smaller encoder and 30 utterances per intent, and
# our test set is a stratified sample of the test split.
#
# ## 1. Removing one head
#
# Inside a layer, head $h$ produces a context vector $c_h \in \mathbb{R}^{d}$ per token
# ($d = H/A$). The heads are laid side by side and the output projection
# (`attention.output.dense`, $W_O$) mixes them:
#
# $$\mathrm{MultiHead}(x) = W_O\,[c_1; c_2; \dots; c_A] + b_O = \sum_{h=1}^{A} W_O^{(h)} c_h + b_O .$$
#
# Setting $c_h = 0$ removes exactly head $h$'s term. We do it with a **forward pre-hook** on
# `layer.attention.output` (`BertSelfOutput`): the hook receives the concatenated context
# before `dense` and returns it with head $h$'s $d$ columns zeroed. (Older code passes a
# `head_mask` argument to the model; recent `transformers` versions dropped it, and a hook
# works with any version.)

# %%
d = H // A
head_to_remove = 0
layer_module = model.encoder.layer[0]  # layer 1


def zero_head_hook(module, args):
    # [batch, seq, A * d]: head h is columns h*d .. (h+1)*d - 1
    context = args[0].clone()
    context[..., head_to_remove * d:(head_to_remove + 1) * d] = 0.0
    return (context, *args[1:])


# %% [markdown]
# We check the hooked layer against the attention output computed by hand with lessons
# 02–03's rebuilds, with the same head's columns of the context zeroed.

# %%
from helpers.attention.rebuild import self_attention_by_hand
from helpers.model.trace import trace_text
from helpers.stack.rebuild import attention_output_by_hand

trace = trace_text(tokenizer, model, SENTENCE)
x = trace.hidden(0)
context, _ = self_attention_by_hand(layer_module, x)
context[:, head_to_remove * d:(head_to_remove + 1) * d] = 0.0
by_hand = attention_output_by_hand(layer_module, context, x)
handle = layer_module.attention.output.register_forward_pre_hook(
    zero_head_hook
)
try:
    hooked = layer_module.attention(x[None])[0][0]
finally:
    handle.remove()
assert torch.allclose(hooked, by_hand, atol=1e-5)
print(
    f"layer 1 with head {head_to_remove} removed == by hand; max change of the"
    " attention output"
    f" {(hooked - layer_module.attention(x[None])[0][0]).abs().max():.3f}"
)

# %% [markdown]
# `ablate_head(model, layer, head)` in `helpers/interventions/compute.py` registers such a
# hook while a `with` block runs. With one head of the first layer removed we run the whole
# test set through the full model (in groups of similar length, `length_buckets`) and measure
# two things per utterance: whether it is still classified correctly, and how far the logit of
# its **true** class falls.
#
# The verdict on the accuracy is McNemar's, with the margin set above (`outcome_changes`). We
# redo its p-value by hand from the utterances that changed: under "no change", the number that
# became wrong among all that flipped is a fair coin's count (`scipy.stats.binomtest`).

# %%
from scipy.stats import binomtest

from helpers.common.stats import bootstrap_ci
from helpers.interventions.compute import ablate_head, outcome_changes

logits_removed = torch.empty_like(logits_base)
with torch.no_grad(), ablate_head(model, 1, head_to_remove):
    for items, _ in length_buckets(mask, 64):
        enc = tokenizer(
            [test.texts[i] for i in items],
            padding=True,
            truncation=True,
            max_length=MAX_LEN,
            return_tensors="pt",
        ).to(model.device)
        logits_removed[items] = classifier(
            model(**enc).last_hidden_state, enc["attention_mask"]
        )
removed_correct = (logits_removed.argmax(-1) == y).float()
one_head = outcome_changes(
    removed_correct[None],
    base_correct,
    [f"layer 1, head {head_to_remove} removed"],
    margin=MARGIN,
)[0]
now_wrong, now_right = int(
    ((base_correct == 1) & (removed_correct == 0)).sum()
), int(((base_correct == 0) & (removed_correct == 1)).sum())
p_by_hand = (
    binomtest(now_wrong, now_wrong + now_right, 0.5).pvalue
    if now_wrong + now_right
    else 1.0
)
assert abs(p_by_hand - one_head.p_value) < 1e-9
logit_drop = (
    logits_base.gather(1, y[:, None])[:, 0]
    - logits_removed.gather(1, y[:, None])[:, 0]
)
print(
    f"{now_wrong} utterances become wrong, {now_right} become right (of"
    f" {len(test)}); McNemar p = {p_by_hand:.2g}"
)
print(f"-> {one_head.verdict}")
print(
    "true-class logit drop, mean over the utterances:"
    f" {bootstrap_ci(logit_drop.detach())} (bootstrap interval)"
)

# %% [markdown]
# ## Every head of every layer
#
# That was one head. To map all $L \times A$ heads we run the test set once per removed head,
# but in batches: for layer $l$ the cached state after layer $l-1$ is copied $A$ times, each
# copy with a different head gated to 0, and only layers $l..L$ run. Utterances of similar
# length share a batch so little work goes into padding (`ablate_every_head`).

# %%
from helpers.interventions.compute import ablate_every_head

t0 = time.perf_counter()
ablation = ablate_every_head(model, classifier, run, test.labels)
t_exhaustive = time.perf_counter() - t0
assert torch.allclose(
    ablation.ablated[0, head_to_remove], logits_removed, atol=1e-4
)
acc_drop, logit_drops = (
    ablation.accuracy_drop(),
    ablation.logit_drop_items().mean(0),
)
print(
    f"{L * A} heads removed one at a time over {len(test)} utterances in"
    f" {t_exhaustive:.1f} s (wall)"
)

# %% [markdown]
# Beside the effect of removing a head we put what lesson 05 measured by *looking*: the
# share of each head's attention that lands on `[CLS]` and on `[SEP]`, averaged over the
# test utterances (`head_token_class_shares`; averaged over heads for one sentence it is
# lesson 05's `attention_shares`, which we check).

# %%
from helpers.attention.compute import TOKEN_CLASSES, attention_shares
from helpers.interventions.compute import head_token_class_shares

shares_items = head_token_class_shares(run)  # [N, L, A, 4]
one = trace_text(tokenizer, model, test.texts[0])
assert torch.allclose(
    shares_items[0].mean(1), attention_shares(one), atol=1e-4
)
cls_share = shares_items[..., TOKEN_CLASSES.index("[CLS]")]
sep_share = shares_items[..., TOKEN_CLASSES.index("[SEP]")]

# %% mystnb={"figure": {"caption": "Layer \u00d7 head maps over the test utterances. Top: accuracy drop (points) and mean drop of the true-class logit when that one head is set to zero, each on its own diverging scale (white 0, red worse, blue better). Bottom: the head's attention share on `[CLS]` and on `[SEP]`, averaged over queries and utterances, on one 0\u20131 scale. Compare top with bottom.", "name": "fig-09-head-maps"}}
import matplotlib.pyplot as plt

from helpers.interventions.plots import plot_head_maps

fig = plot_head_maps([
    dict(
        values=100 * acc_drop,
        title="accuracy drop when the head is removed",
        cbar_label="accuracy drop (points)",
        cmap="RdBu_r",
        diverging=True,
    ),
    dict(
        values=logit_drops,
        title="true-class logit drop when removed",
        cbar_label="mean logit drop",
        cmap="RdBu_r",
        diverging=True,
    ),
    dict(
        values=cls_share.mean(0),
        title="share of attention on [CLS] (lesson 05)",
        cbar_label="attention share (0..1)",
        vmin=0,
        vmax=1,
    ),
    dict(
        values=sep_share.mean(0),
        title="share of attention on [SEP] (lesson 05)",
        cbar_label="attention share (0..1)",
        vmin=0,
        vmax=1,
    ),
])
plt.show()

# %% [markdown]
# The two lower maps share one colour scale, 0 to 1, so their colours compare directly. Now the
# verdict on every head, by the rules fixed above: McNemar for each head against the unchanged
# model, the p-values **Holm-adjusted over all $L \times A$ heads** (`HeadAblation.changes`), and
# "equivalent" only where the 90% interval lies inside the margin.
#
# Rather than crown the head with the largest drop, we also count the heads that the data cannot
# rank below it: each other head's accuracy and the largest-drop head's accuracy are measured on
# the same utterances, so McNemar compares them too (Holm over the other heads), and a head is
# tied unless its drop is shown smaller (`HeadAblation.tied_with`). The largest drop is picked on
# the same utterances, so it is, if anything, overstated.

# %%
from helpers.interventions.compute import CHANGE_WORDS, count_kinds

# {(layer, head): OutcomeChange}
head_changes = dict(zip(ablation.heads(), ablation.changes(margin=MARGIN)))
head_counts = count_kinds(head_changes.values())
worst = max(
    head_changes,
    key=lambda k: (
        float(acc_drop[k[0] - 1, k[1]]),
        float(logit_drops[k[0] - 1, k[1]]),
    ),
)
tied = ablation.tied_with(*worst)  # includes the worst head itself
tied_text = (
    f"only layer {worst[0]}, head {worst[1]}"
    if len(tied) == 1
    else (
        ", ".join(f"{l}.{h}" for l, h in tied)
        if len(tied) <= 8
        else f"{len(tied)} of {L * A} heads"
    )
)
print(
    f"one utterance is {100 / len(test):.2f} points of accuracy on these"
    f" {len(test)} test utterances"
)
print(
    f"removing one head, {L * A} heads (McNemar, Holm over the {L * A}; margin"
    f" +/-{100 * MARGIN:.1f} pt):"
)
for kind, n in head_counts.items():
    heads = [
        f"{l}.{h}" for (l, h), c in head_changes.items() if c.kind == kind
    ]
    print(
        f"   {CHANGE_WORDS[kind]:>29}: {n:3d}"
        + (f"  ({', '.join(heads)})" if 0 < n <= 12 else "")
    )
print(
    f"largest accuracy drop: layer {worst[0]}, head {worst[1]}:"
    f" {head_changes[worst].describe()}"
)
print(f"heads the data cannot rank below it (layer.head): {tied_text}")
print(
    f"true-class logit drop over all heads: median {logit_drops.median():.3f},"
    f" largest {logit_drops.max():.3f}"
)

# %% [markdown]
# Michel, Levy and Neubig (2019, *Are Sixteen Heads Really Better than One?*) removed single
# heads from BERT-base fine-tuned on MNLI (and from a Transformer translation model) at test
# time: most single heads could go without a significant loss of accuracy. "Without a
# significant loss" is the weaker claim; the counts above separate the heads this run shows to be
# equivalent within the margin from those it cannot judge. Read them for how far the finding
# holds for the model you loaded and this task (the bundled all-MiniLM-L6-v2 is a different model
# and training objective: distilled, then trained for sentence embeddings, and here not
# fine-tuned: only the head on top was trained).
#
# ### Zero or mean: what does "removing" a head mean?
#
# Setting $c_h = 0$ puts in a value the head may never produce: its output has an average, and
# zeroing also removes that average, a constant shift of everything above. **Mean ablation**
# replaces $c_h$ by its mean over many tokens instead (`mean_head_contexts`, here over the tokens of
# training utterances), which removes what the head says about *this* input and keeps its constant part
# (`ablate_every_head(..., fill=...)`). Where zero-ablation hurts much more than mean-ablation, the
# damage came from the missing constant, not from the missing information. We compare the two maps
# of the mean loss change on one colour scale, and the two sets of verdicts, on one test utterance
# of every intent (a second full map would double the lesson's longest computation).

# %%
from helpers.interventions.compute import (
    CachedRun,
    HeadAblation,
    ablation_gate,
    gated_heads,
    mean_head_contexts,
    within_group_spearman_ci,
)

# training utterances: for the means here, the importances in part 2
train_part = train.subset(budget.pick(5, 4))
train_run = run_cached(tokenizer, model, train_part.texts, max_length=MAX_LEN)
head_means = mean_head_contexts(model, train_run)  # {layer: [A * d]}
# one test utterance of every intent
some = sorted({test.labels.index(c) for c in set(test.labels)})
some_run = CachedRun(
    tuple(h[some] for h in run.hidden_states),
    mask[some],
    [run.tokens[i] for i in some],
)
mean_ablation = ablate_every_head(
    model, classifier, some_run, y[some].tolist(), fill=head_means
)
# zero-ablation, same items
zero_some = HeadAblation(
    ablation.base[some], ablation.ablated[:, :, some], y[some]
)
zero_dl = zero_some.loss_increase_items().mean(0)
mean_dl = mean_ablation.loss_increase_items().mean(0)
with (
    torch.no_grad(),
    gated_heads(
        model, {1: ablation_gate(model, head_to_remove)}, fill=head_means
    ),
):
    one_mean = classifier(
        continue_from(model, some_run.hidden(0), some_run.attention_mask, 0),
        some_run.attention_mask,
    )
# one head, all layers re-run
assert torch.allclose(
    one_mean, mean_ablation.ablated[0, head_to_remove], atol=1e-4
)
print(
    f"mean-ablated every head on {len(some)} test utterances (one per intent);"
    f" means from {len(train_part)} training utterances"
)

# %% mystnb={"figure": {"caption": "Mean change of the cross-entropy loss per layer and head when the head's output is set to zero (left) or to its mean over training tokens (right), on one test utterance per intent; one shared diverging scale, centred at 0 (red: loss rises). Compare cell by cell: a head much redder on the left hurts through its lost constant, not its information.", "name": "fig-09-zero-vs-mean"}}
bound = float(max(zero_dl.abs().max(), mean_dl.abs().max()))
fig = plot_head_maps([
    dict(
        values=zero_dl,
        title="loss change, head set to zero",
        cbar_label="mean loss change",
        cmap="RdBu_r",
        diverging=True,
        vmin=-bound,
        vmax=bound,
    ),
    dict(
        values=mean_dl,
        title="loss change, head set to its mean",
        cbar_label="mean loss change",
        cmap="RdBu_r",
        diverging=True,
        vmin=-bound,
        vmax=bound,
    ),
])
plt.show()
zero_counts, mean_counts = (
    count_kinds(a.changes(margin=MARGIN)) for a in (zero_some, mean_ablation)
)
agree = within_group_spearman_ci(
    zero_some.loss_increase_items(), mean_ablation.loss_increase_items()
)
for name, counts in (("zero", zero_counts), ("mean", mean_counts)):
    print(f"{name}-ablation, {L * A} heads, {len(some)} utterances: "
          + ", ".join(f"{CHANGE_WORDS[k]} {n}" for k, n in counts.items()))
print(
    "rank agreement of the two loss maps within layers: rho ="
    f" {agree if agree else 'n/a'}"
)
gap_head = divmod(int((zero_dl - mean_dl).argmax()), A)
print(
    f"largest excess of zero- over mean-ablation: layer {gap_head[0] + 1},"
    f" head {gap_head[1]} ({float(zero_dl[gap_head]):+.3f} vs"
    f" {float(mean_dl[gap_head]):+.3f})"
)

# %% [markdown]
# ### Does a striking pattern mean an important head?
#
# Lesson 05 measured how much attention lands on `[CLS]` and `[SEP]`; Clark et al. (2019,
# *What Does BERT Look At?*) found that in bert-base over half the attention of layers 6–10
# lands on `[SEP]` (early layers attend much to `[CLS]`) and read this parking as a no-op.
# First, where does *this* model park its attention?

# %%
from helpers.common.stats import paired_difference_ci, verdict

# [L, A] each
parked = {
    name: share.mean(0)
    for name, share in [("[CLS]", cls_share), ("[SEP]", sep_share)]
}
for name, s in parked.items():
    print(
        f"{name}: mean share over heads {s.mean():.2f}, largest {s.max():.2f};"
        " heads with more than half their attention there:"
        f" {int((s > 0.5).sum())} of {L * A}"
    )
# per utterance, mean over all heads: [CLS] share minus [SEP] share, paired
# over the utterances
cls_minus_sep = paired_difference_ci(
    cls_share.flatten(1).mean(1), sep_share.flatten(1).mean(1)
)
parking = verdict(cls_minus_sep, a="[CLS] share", b="[SEP] share")
park_token = {"higher": "[CLS]", "lower": "[SEP]"}.get(parking.kind)
print(
    "[CLS] share - [SEP] share, mean over heads, paired over the"
    f" utterances:\n-> {parking}"
    + (
        ""
        if park_token is None
        else (
            ", as Clark et al. found for bert-base"
            if park_token == "[SEP]"
            else (
                "; unlike the middle layers of Clark et al.'s bert-base, where"
                " [SEP] collects it"
            )
        )
    )
)

# %% [markdown]
# Two stories compete: a striking pattern marks a head the model relies on, or a
# head parked on a special token does little and should matter less. Either way a head's
# share would rank with its importance (positively or negatively). We measure importance by
# the loss increase on removal (finer-grained than the accuracy drop) and use Spearman's
# rank correlation $\rho$.
#
# One trap: the heads of a layer have much in common -- their depth, and how directly the
# head reads what they write (the heads of layer $L$ write straight into the pooled vector).
# If one layer's heads all park less *and* all matter more, a correlation over all
# $L \times A$ heads would rank layers, not heads. So the verdict ranks each head only
# against the other heads of its own layer: $\rho$ within each layer, averaged over the
# layers (`within_group_spearman_ci`), with a bootstrap interval that resamples the test
# utterances and recomputes both sides. The correlation over all heads is printed beside it,
# to show how much the layers alone contribute. (A resample or a layer in which one side
# does not vary has no $\rho$ and is left out; the printout says how often.) We test two
# shares, [CLS] and [SEP], so each interval is a 97.5% one (Bonferroni over the two). An interval
# that includes 0 is **inconclusive**: it does not show that pattern and importance are unrelated.

# %%
from helpers.interventions.compute import spearman_ci, within_group_spearman_ci


def rank_verdict(rho, positive: str, negative: str) -> str:
    """A rank correlation's verdict: its interval above 0, below 0, or
    inconclusive."""
    return (
        "undefined: one side does not vary"
        if rho is None
        else (
            "inconclusive (the interval includes 0)"
            if rho.contains(0.0)
            else positive if rho.low > 0 else negative
        )
    )


# [N, L, A]: per utterance, per head
loss_by_layer = ablation.loss_increase_items()
loss_items = loss_by_layer.flatten(1)  # [N, L * A]
pattern_rho, pattern_verdict = {}, {}
level = 1 - 0.05 / 2  # two shares tested: Bonferroni
print(f"intervals below: {level:.1%} (Bonferroni over the two shares)")
for name, share in [("[CLS]", cls_share), ("[SEP]", sep_share)]:
    across = spearman_ci(share.flatten(1), loss_items, level=level)
    rho = pattern_rho[name] = within_group_spearman_ci(
        share, loss_by_layer, level=level
    )
    pattern_verdict[name] = rank_verdict(
        rho,
        f"within a layer, heads with more attention on {name} matter MORE",
        f"within a layer, heads with more attention on {name} matter LESS",
    )
    undefined = (
        f" (undefined in {rho.undefined:.0%} of resamples)"
        if rho and rho.undefined
        else ""
    )
    print(
        f"share on {name} vs loss increase when removed:\n   over all {L * A}"
        f" heads (ranks layers too): rho = {across if across else 'n/a'}\n  "
        " within each layer: "
        + (
            "n/a"
            if rho is None
            else ", ".join(
                f"{l}: {r:+.2f}" for l, r in enumerate(rho.per_group, start=1)
            )
        )
        + "\n   mean within layers: rho ="
        f" {rho if rho else 'n/a'}{undefined}\n-> {pattern_verdict[name]}"
    )

# %% [markdown]
# ## 2. Importance from one gradient (Michel et al., 2019)
#
# Removing heads one by one costs $L \times A$ passes over the data. Michel et al. put a gate
# $\xi_h$ on every head, $\mathrm{MultiHead}(x) = \sum_h \xi_h W_O^{(h)} c_h + b_O$, and
# scored each head by how sensitive the loss is to its gate at $\xi = 1$:
#
# $$I_h = \mathbb{E}_x \left| \frac{\partial \mathcal{L}(x)}{\partial \xi_h} \right| ,$$
#
# a first-order (Taylor) estimate of what removing the head ($\xi_h: 1 \to 0$) would do.
# `head_gate_gradients` puts the gates in the same pre-hook, with `requires_grad`, one gate
# set per utterance so that one forward and one backward pass (per group of utterances of
# similar length) give every utterance's gradient. We check one gradient against a finite
# difference of the loss.

# %%
import torch.nn.functional as F

from helpers.interventions.compute import gated_heads, head_gate_gradients

t0 = time.perf_counter()
grads = head_gate_gradients(model, classifier, run, test.labels)  # [N, L, A]
t_gradient = time.perf_counter() - t0
michel = grads.abs().mean(0)  # I_h, [L, A]


def loss_with_gate(value, item=0, layer=L, h=0):
    gate = torch.ones(A)
    gate[h] = value
    with torch.no_grad(), gated_heads(model, {layer: gate}):
        last = continue_from(
            model, run.hidden(0)[item : item + 1], mask[item : item + 1], 0
        )
        return F.cross_entropy(
            classifier(last, mask[item : item + 1]), y[item : item + 1]
        ).item()


eps = 1e-2
finite_difference = (
    loss_with_gate(1 + eps) - loss_with_gate(1 - eps)
) / (2 * eps)
fd_gap = abs(finite_difference - grads[0, L - 1, 0].item())
assert fd_gap < 1e-3 + 0.05 * abs(finite_difference)
print(
    f"gradient: {t_gradient:.1f} s for all {L * A} heads (exhaustive removal:"
    f" {t_exhaustive:.1f} s, wall)"
)

# %% [markdown]
# How well does the one-gradient estimate rank the heads the way the exhaustive removal does? The
# comparison must be like for like. $I_h$ averages the *size* of the gradient, so it is compared with
# the average *size* of the loss change on removal, $\mathbb{E}|\Delta \mathcal{L}_h|$: a head whose
# removal helps some utterances and hurts others moves the loss a lot, though its mean change may be
# near 0. The signed first-order estimate of what removal ($\xi_h: 1 \to 0$) does to the loss is
# $-\partial \mathcal{L}/\partial \xi_h$, so the signed pair is $\mathbb{E}[-g_h]$ against
# $\mathbb{E}[\Delta \mathcal{L}_h]$. And, as for the attention patterns, we rank heads **within each
# layer** (the mean of the per-layer $\rho$, `within_group_spearman_ci`) as well as across all
# heads. Across layers, Michel et al. divide each layer's importances by their $\ell_2$ norm
# (`normalize_by_layer`; they follow Molchanov et al., 2017) before ranking the heads against each
# other; within a layer that changes nothing, across layers it removes the layers' scale. Each
# interval resamples the test utterances and recomputes both sides.

# %% mystnb={"figure": {"caption": "One dot per head: gradient importance $I_h$ (mean absolute gradient of the loss with respect to the head's gate, one backward pass) against the mean absolute loss change when the head is set to zero, over the test utterances; the five heads with the largest loss change are labelled layer.head. Check whether both axes rank the heads alike; the printout gives the correlations.", "name": "fig-09-importance-scatter"}}
from helpers.interventions.compute import normalize_by_layer
from helpers.interventions.plots import plot_importance_scatter

abs_loss = loss_by_layer.abs()  # [N, L, A]: |loss change| per utterance
# [L]: each layer's l2 norm of I_h
importance_norms = grads.abs().mean(0).norm(dim=1)
# the per-layer normalisation, per utterance
michel_normalized_items = grads.abs() / importance_norms[None, :, None]
assert torch.allclose(
    michel_normalized_items.mean(0), normalize_by_layer(michel), atol=1e-6
)
comparisons = {  # name: (gradient side [N, L, A], removal side [N, L, A])
    "E|g| vs E|dL|": (grads.abs(), abs_loss),
    "E[-g] vs E[dL] (signed)": (-grads, loss_by_layer),
    "E|g| normalised per layer vs E|dL|": (michel_normalized_items, abs_loss),
}
michel_rows = {}
for name, (g_side, l_side) in comparisons.items():
    across = spearman_ci(g_side.flatten(1), l_side.flatten(1))
    # same ranks within
    within = (
        within_group_spearman_ci(g_side, l_side)
        if "normalised" not in name
        else None
    )
    michel_rows[name] = (across, within)
    print(
        f"{name:>36}: across all {L * A} heads rho ="
        f" {across if across else 'n/a'}; "
        + (
            f"within layers rho = {within if within else 'n/a'}"
            if within is not None
            else (
                "within layers: as for E|g| (the normalisation does not"
                " reorder a layer)"
            )
        )
    )
grad_vs_loss = michel_rows["E|g| vs E|dL|"][1]
grad_verdict = rank_verdict(
    grad_vs_loss,
    "within a layer, the gradient ranks the heads like their removal does",
    "within a layer, the gradient ranks the heads opposite to their removal",
)
print(f"-> {grad_verdict}")
labels = [f"{l}.{h}" for l in range(1, L + 1) for h in range(A)]
ax = plot_importance_scatter(
    michel.flatten(),
    abs_loss.mean(0).flatten(),
    labels=labels,
    xlabel="gradient importance $I_h = E|g_h|$ (one backward pass)",
    ylabel="$E|\\Delta L_h|$ when removed",
    title=(
        "head importance: E|gradient| vs E|loss change| (labels: layer.head)"
    ),
)
plt.show()

# %% [markdown]
# The gradient describes an infinitesimal change of the gate and removal is a jump from 1 to 0,
# so the two can differ; the rows above say how much on this model. We rank by the loss, not by the
# accuracy drop: the accuracy drop moves only when a prediction flips, so all heads whose removal
# flips none tie at 0; the loss moves with every logit.
#
# ### Pruning heads, least important first
#
# Michel et al. used the importance to prune: remove heads in steps of 10% of all heads, lowest
# normalised importance first, all layers together, and plot accuracy against the share removed
# (in BERT-base fine-tuned on MNLI and in a translation Transformer, they report that a large
# part of the heads can go with little or no loss while most heads must stay; read their
# pruning figure for the shares).
# We do the same on BANKING77 (`pruning_curve`): the importance is measured on **training**
# utterances (ranking heads on the test utterances that then judge them would flatter the order),
# computed once before pruning, and the curves are measured on two test utterances of every intent
# (ten pruning steps for six orders: the full test set would take minutes). The comparison is a set
# of **random orders**: an importance that means anything must keep the accuracy up longer than a
# random choice of the same number of heads.

# %%
from helpers.common.progress import progress
from helpers.interventions.compute import PRUNE_FRACTIONS, pruning_curve

N_ORDERS = 5  # random pruning orders
# on training utterances
train_grads = head_gate_gradients(
    model, classifier, train_run, train_part.labels
)
prune_importance = normalize_by_layer(train_grads.abs().mean(0))
heads_all = [(l, h) for l in range(1, L + 1) for h in range(A)]
# least important first
by_importance = sorted(
    heads_all, key=lambda k: float(prune_importance[k[0] - 1, k[1]])
)
prune_items = sorted(
    i
    for c in set(test.labels)
    for i in [k for k, v in enumerate(test.labels) if v == c][:2]
)
# 2 per intent
prune_run = CachedRun(
    tuple(h[prune_items] for h in run.hidden_states), mask[prune_items], []
)
prune_labels = y[prune_items].tolist()
prune_curves = {
    "importance": pruning_curve(
        model, classifier, prune_run, prune_labels, by_importance
    )
}
for i in progress(range(N_ORDERS), desc="random pruning orders"):
    order = random.Random(i).sample(heads_all, len(heads_all))
    # removing 0 heads: reuse the first curve
    prune_curves[f"random {i}"] = pruning_curve(
        model, classifier, prune_run, prune_labels, order,
        unchanged=tuple(part[0] for part in prune_curves["importance"]))
# nothing removed: unchanged
assert torch.equal(prune_curves["importance"][0][0], base_correct[prune_items])
print(
    f"importance from {len(train_part)} training utterances; curves on"
    f" {len(prune_items)} test utterances (two of every intent)"
)

# %%
from helpers.common.tables import show_table

summary = {
    name: {"accuracy": c.mean(1), "loss": l.mean(1)}
    for name, (c, l) in prune_curves.items()
}
randoms = [v for k, v in summary.items() if k.startswith("random")]
prune_changes = outcome_changes(
    prune_curves["importance"][0][1:],
    base_correct[prune_items],
    [f"{f:.0%} removed" for f in PRUNE_FRACTIONS[1:]],
    margin=MARGIN,
)
rows = []
for k, f in enumerate(PRUNE_FRACTIONS):
    r = torch.stack([o["accuracy"][k] for o in randoms])
    ours = accuracy_ci(prune_curves["importance"][0][k]).percent()
    rows.append({
        "removed": f"{f:.0%}",
        "accuracy, importance order": ours,
        "random orders (mean, min-max)": (
            f"{r.mean():.1%} ({r.min():.1%}-{r.max():.1%})"
        ),
        "verdict vs unchanged": (
            "-" if k == 0 else CHANGE_WORDS[prune_changes[k - 1].kind]
        ),
    })
prune_table = show_table(rows, index="removed", title=(
    f"test accuracy as a share of the {L * A} heads is removed, on"
    f" {len(prune_items)} test utterances (importance order: exact 95%"
    " interval over them)"))
first_lower = next(
    (
        f
        for f, ch in zip(PRUNE_FRACTIONS[1:], prune_changes)
        if ch.kind == "lower"
    ),
    None,
)
# [orders, K, N]
random_correct = torch.stack(
    [c for k, (c, _) in prune_curves.items() if k != "importance"]
)
area_gain = paired_difference_ci(
    prune_curves["importance"][0].mean(0), random_correct.mean((0, 1))
)
prune_verdict = verdict(
    area_gain, a="importance order", b="random orders", percent=True
)
print(
    "first share of heads removed at which the accuracy is shown lower than"
    f" unchanged (McNemar, Holm over {len(PRUNE_FRACTIONS) - 1} steps): "
    + (f"{first_lower:.0%}" if first_lower is not None else "none")
)
print(
    "mean accuracy over the curve, importance order minus the random orders'"
    f" mean, paired over the utterances:\n-> {prune_verdict}"
)

# %% mystnb={"figure": {"caption": "Test accuracy (top) and mean cross-entropy loss (bottom) as a growing share of all heads is set to zero, on two test utterances per intent: orange removes the least important first (Michel et al.'s layer-normalised gradient importance, from training utterances), grey lines random orders. The y-axes are fitted to the data, not started at 0. Compare orange with the grey spread.", "name": "fig-09-pruning"}}
from helpers.interventions.plots import plot_pruning_curve

fig = plot_pruning_curve(
    PRUNE_FRACTIONS,
    summary["importance"],
    randoms,
    title=(
        f"pruning heads ({L * A} in all): Michel et al.'s order vs {N_ORDERS}"
        " random orders"
    ),
)
plt.show()

# %% [markdown]
# ## 3. Skipping a layer
#
# A popular story says each layer is an expert that adds one level of understanding —
# words, then syntax, then meaning — so taking one out should break what it adds. BERT
# writes each layer's output into a residual stream, so we can replace layer $l$ by the
# identity, $h^{(l)} := h^{(l-1)}$, and let the layers above run as usual (`skip_layer`). We
# measure two things:
#
# * the intent accuracy of the fixed head (does the model still deliver what the head reads?);
# * lesson 06's sense separation of the ambiguous words at the last layer: leave-one-out
#   nearest-centroid accuracy, refit on the skipped model's vectors (is the information
#   that tells the senses apart still there?). We load lesson 06's data the way lesson 06
#   does: `data/polysemy.json` and `data/polysemy_more.json`, two senses per word, five
#   sentences per sense (the quick budget keeps the first few words).

# %%
from helpers.common.data import load_polysemy
from helpers.common.progress import progress
from helpers.interventions.compute import (
    run_from_traces,
    skip_every_layer,
    word_vectors,
)
from helpers.model.tokens import is_unknown

# [L + 1, N, C]: index 0 nothing skipped
skip_logits = skip_every_layer(model, run, readout=classifier)
skip_correct = (skip_logits.argmax(-1) == y).float()  # [L + 1, N]
# as lesson 06
all_words = {**load_polysemy(), **load_polysemy("polysemy_more.json")}
for word in all_words:
    if is_unknown(tokenizer, word):
        print(
            f"note: the tokenizer maps {word!r} to {tokenizer.unk_token}; it"
            " is left out."
        )
known = [w for w in all_words if not is_unknown(tokenizer, w)]
polysemy = {w: all_words[w] for w in known[:budget.pick(len(known), 3)]}
jobs = [
    (w, s, x)
    for w, senses in polysemy.items()
    for s, xs in senses.items()
    for x in xs
]
poly_traces = [
    trace_text(tokenizer, model, x)
    for _, _, x in progress(jobs, desc="tracing polysemy sentences")
]
spans = [t.find_word(w).positions for (w, _, _), t in zip(jobs, poly_traces)]
print(f"{len(polysemy)} ambiguous words, {len(jobs)} sentences")

# %% [markdown]
# For the senses we reuse lesson 06's own function, `sense_separation_outcomes` (in
# `helpers/context/compute.py`): it takes `{sense: [sentences, variants, H]}` and returns one
# row per sentence, one column per variant -- there the variants were layers, here they are
# "nothing skipped" and "layer $l$ skipped", all read at the last layer. Two checks that do
# not go through it: the unskipped vectors are lesson 06's `word_by_layer` at layer $L$, and
# one sentence's outcome is recomputed by hand (centroids without it, nearest by cosine).

# %%
from helpers.context.compute import sense_separation_outcomes, word_by_layer

sense_hits = None
if jobs:
    poly_run = run_from_traces(poly_traces)
    # [L + 1, n, H]
    vectors = word_vectors(
        skip_every_layer(model, poly_run, progress=False), spans
    )
    assert torch.allclose(
        vectors[0, 0], word_by_layer(poly_traces[0], jobs[0][0])[L], atol=1e-4
    )

    def sense_rows(w, s):
        """[5, L + 1, H]: the vectors of word w's sentences of sense s."""
        cols = [i for i, j in enumerate(jobs) if j[:2] == (w, s)]
        return vectors[:, cols].transpose(0, 1)

    # {word: {sense: [5, L + 1, H]}}
    groups = {w: {s: sense_rows(w, s) for s in senses}
              for w, senses in polysemy.items()}
    # {word: [n, L + 1]}
    outcomes = {
        w: sense_separation_outcomes(g).float() for w, g in groups.items()
    }
    sense_hits = torch.cat(list(outcomes.values()))
    # each sentence's word
    sense_words = [w for w, o in outcomes.items() for _ in range(len(o))]
    word0, senses0 = next(iter(groups.items()))
    # held out: sentence 0 of the first word's first sense
    own, *others = senses0.values()
    # [senses, L + 1, H]
    centroids = torch.stack([own[1:].mean(0)] + [o.mean(0) for o in others])
    by_hand = (
        F.cosine_similarity(own[0][None], centroids, dim=-1).argmax(0) == 0
    ).float()
    assert torch.equal(by_hand, outcomes[word0][0])

# %% [markdown]
# Each skip is compared with the unchanged model on the same items, by the rules fixed at the
# start (`outcome_changes`), with the p-values **Holm-adjusted over the $L$ layers** of each
# measure:
#
# * the intents: test utterances are independent items, so McNemar's exact test;
# * the senses: a word's sentences share its centroids, so the sentences of one word are not
#   independent; the per-sentence changes are resampled **by word** (a cluster bootstrap,
#   `cluster_bootstrap_ci`), and the resolution guard counts words, not sentences: with as few
#   words as the data has, this measure can show a skip that lowers it, but never one that is
#   equivalent within a one-point margin.
#
# Each layer then reads **"lowers"** (adjusted p < 0.05), **"equivalent within the margin"**
# (90% interval inside $\pm$`MARGIN`, the margin printed at the start) or **"inconclusive"**.
# One case is marked apart: skipping layer $L$ under the fixed head. The head was trained on
# layer $L$'s output, so that skip hands it layer $L-1$'s vectors, which it never saw; a drop
# there is a mismatch between the head and its input, not evidence about what layer $L$ does.
# The sense probe, refit each time, has no such handicap.

# %%
from helpers.common.stats import cluster_bootstrap_ci

intent_name = "intent accuracy of the fixed head"
items = {
    intent_name: (skip_correct, None, "test accuracy", 1 / test.num_classes)
}
# resampling words needs at least two
if sense_hits is not None and len(polysemy) >= 2:
    n_senses = len(next(iter(polysemy.values())))
    items["sense separation at the last layer (lesson 06)"] = (
        sense_hits.T,
        sense_words,
        "leave-one-out accuracy",
        1 / n_senses,
    )
skip_changes = {
    name: outcome_changes(
        c[1:],
        c[0],
        [f"layer {l} skipped" for l in range(1, L + 1)],
        margin=MARGIN,
        clusters=clusters,
        reference="nothing skipped",
    )
    for name, (c, clusters, _, _) in items.items()
}
unchanged = {
    name: (
        accuracy_ci(c[0])
        if clusters is None
        else cluster_bootstrap_ci(c[0], clusters, n_boot=2000)
    )
    # the same resampling as the changes
    for name, (c, clusters, _, _) in items.items()
}
panels = {
    name: (
        unchanged[name],
        [ch.after for ch in skip_changes[name]],
        ylabel,
        chance,
    )
    for name, (c, _, ylabel, chance) in items.items()
}
by_kind, mismatch = {}, {}
for name, changes in skip_changes.items():
    # the fixed head never saw layer L - 1's vectors
    fixed_head = name == intent_name
    mismatch[name] = fixed_head and changes[L - 1].kind == "lower"
    by_kind[name] = {
        kind: [
            l
            for l, ch in enumerate(changes, start=1)
            if ch.kind == kind and not (fixed_head and l == L)
        ]
        for kind in CHANGE_WORDS
    }

# %%
for name, changes in skip_changes.items():
    rows = []
    for l, ch in enumerate(changes, start=1):
        d = ch.difference
        word = CHANGE_WORDS[ch.kind]
        # the fixed head never saw layer L - 1's vectors
        if name == intent_name and l == L:
            word += " (head mismatch, not read as a layer effect)"
        rows.append({
            "layer skipped": str(l),
            "accuracy": ch.after.percent(),
            "change [95%]": (
                f"{100 * d.estimate:+.1f} pt [{100 * d.low:+.1f},"
                f" {100 * d.high:+.1f}]"
            ),
            "adjusted p": f"{ch.adjusted_p:.2g}",
            "verdict": word,
        })
    skip_table = show_table(rows, index="layer skipped", title=(
        f"{name}: nothing skipped {panels[name][0].percent()}"
        f" ({items[name][0].shape[1]} items; {changes[0].method}, Holm over"
        f" {L} layers)"))

# %% mystnb={"figure": {"caption": "Each encoder layer replaced by the identity in turn: left, test accuracy of the fixed intent head; right, lesson 06's leave-one-out sense accuracy at the last layer, refit per skip. Whiskers: 95 % intervals (exact over utterances; resampling words for senses); grey band: nothing skipped; dotted: chance. Skipping the last layer feeds the fixed head vectors it never saw.", "name": "fig-09-skip-layers"}}
from helpers.interventions.plots import plot_skip_effects

fig = plot_skip_effects(panels)
plt.show()

# %% [markdown]
# Read the verdicts layer by layer. A layer whose skip is *equivalent within the margin* could go
# on its own, on this measure and these items; through the residual stream the layers above still
# receive the missing layer's input and work from it. A layer marked "lowers" is one whose removal
# measurably lowers this measure on these items; that is weaker than "the model cannot do without
# it" -- read the accuracy that remains in the same row. "Inconclusive" says only that this run
# cannot tell; it is not evidence that the layer can go.
#
# ## 4. Activation patching: when does "bank" decide its sense?
#
# Lesson 06 measured, layer by layer, where the senses of each ambiguous word separate (its
# printout says where, for the model you load). Patching asks where the decision *lives*.
# We run a money sentence ("She opened a savings account at the bank…"), but at layer $l$
# we overwrite its "bank" vector with the "bank" vector of a river sentence at the same
# layer, and let the layers above run. Lesson 06's probe then reads the final "bank" **at the
# patched position**: nearest sense centroid at the last layer, the centroids computed from the
# *other* sentences. If the final vector follows the patch (reads "river"), the sense was already
# carried by the word's own vector at layer $l$; if it reads "money", the layers above rebuilt it
# from the money context. We do this for every (river, money) sentence pair of every word in the
# data (first sense patched into the second). Because the probe reads the very position we
# patched, patching the last layer hands it the donor's vector itself: there it follows the patch
# unless the probe is wrong.
#
# The pairs are not independent: every donor sentence is paired with every target sentence of
# its word, so a word's pairs share its ten sentences. The pooled share therefore resamples
# **words** — each word's pair of senses with all its sentence pairs — as clusters
# (`word_cluster_shares`, built on `cluster_bootstrap_ci`); resampling the pairs would pretend we
# had many more independent observations than we do. A layer's verdict asks whether the share
# lies above or below one half (`share_verdicts`): its p-value is the larger of the bootstrap's and
# that of a sign test over the words (how many words' own shares lie above one half) -- a bootstrap
# over a dozen words is too sure of itself, and three words cannot prove a majority however
# unanimous they are -- and the p-values are Holm-adjusted over the $L+1$ patched layers.

# %%
from helpers.interventions.compute import (
    sense_patching,
    share_verdicts,
    word_cluster_shares,
)

patch = {}
for w, senses in polysemy.items():
    s_a, s_b = list(senses)[:2]

    def pick(s):
        """The traces of word w's sentences of sense s."""
        return [t for (ww, ss, _), t in zip(jobs, poly_traces)
                if (ww, ss) == (w, s)]

    patch[w] = sense_patching(model, pick(s_a), pick(s_b), w)
    patch[w]["senses"] = (s_a, s_b)
probe_works = False
if len(patch) >= 2:
    n_pairs = sum(len(p["pairs"]) for p in patch.values())
    # per patched layer 0..L
    pooled, pooled_boots, word_shares = word_cluster_shares(patch, "follows")
    patch_verdicts = share_verdicts(pooled, pooled_boots, word_shares)
    control = share_verdicts(*word_cluster_shares(patch, "control"))[0]
    probe_works = control.kind == "above"
    print(
        f"{len(patch)} words, {n_pairs} pairs; without a patch the probe reads"
        f" the target's own sense in {control.share.percent()} (resampling"
        f" words; p = {control.p_value:.2g})"
        + (
            ""
            if probe_works
            else (
                " -- not shown better than a coin: on this model the follow"
                " rates below mean little"
            )
        )
    )

# %% mystnb={"figure": {"caption": "Share of sentence pairs whose final word vector lesson 06's probe reads as the patched donor's sense, by the layer patched (emb = embeddings): grey, single words; black, all words, with a 95 % interval resampling words; orange dashed, the probe read from the rest of the sentence. Following is trivial at the last layer; find where black first clears the dotted half line.", "name": "fig-09-patching"}}
from helpers.interventions.plots import plot_patch_curves

first_pooled = None
if len(patch) >= 2:
    context_pooled, context_boots, context_words = word_cluster_shares(
        patch, "follows_context"
    )
    context_verdicts = share_verdicts(
        context_pooled, context_boots, context_words
    )
    context_control = share_verdicts(
        *word_cluster_shares(patch, "control_context")
    )[0]
    ax = plot_patch_curves(
        {w: p["follows"].mean(0) for w, p in patch.items()},
        pooled,
        chance=0.5,
        title="does the final vector follow the patched sense?",
        control=context_pooled,
        control_label="rest of the sentence (all words)",
    )
    plt.show()

# %%
majority = {"above": "follows the patch", "below": "follows the context"}
if len(patch) >= 2:
    patch_table = show_table(
        [
            {
                "patched layer": "emb" if l == 0 else l,
                "at the word": v.share.percent(0),
                "adjusted p": f"{v.adjusted_p:.2g}",
                "a majority": majority.get(v.kind, "inconclusive"),
                "rest of the sentence": c.share.percent(0),
                "a majority (rest)": majority.get(c.kind, "inconclusive"),
            }
            for l, (v, c) in enumerate(zip(patch_verdicts, context_verdicts))
        ],
        index="patched layer",
        title=(
            "share of pairs following the patch, per patched layer (95%"
            f" interval resampling the {len(patch)} words; p: bootstrap and"
            f" sign test over the words, Holm over the {L + 1} layers), read"
            " at the patched word and, as a control, from the rest of the"
            " sentence (unpatched, that probe reads the target's own sense"
            f" in {context_control.share.percent()})"
        ),
    )
    first_pooled = next(
        (l for l, v in enumerate(patch_verdicts) if v.kind == "above"), None
    )
    print(
        "first patched layer a majority of the pairs follows: "
        + (
            f"{first_pooled}"
            if first_pooled is not None
            else "none -- no layer is shown above one half"
        )
    )
else:
    print(
        "fewer than two ambiguous words of the data are in this vocabulary:"
        " patching is skipped."
    )

# %% [markdown]
# Patching at the embeddings (layer 0) swaps almost nothing — the word piece is the same,
# only its position embedding differs — so there we expect the context to win; the printout
# shows whether it does. Patching the last layer replaces the very vector the probe reads, so
# there "follows the patch" is guaranteed and says nothing; near the top the word probe reads
# mostly the patch itself. The control reads the **rest of the sentence** (the mean of the last
# layer over every other real token, against centroids of the other sentences' such means): it can
# follow the patch only when the layers above carry the patched sense into the other tokens, so it
# is never trivially 1 -- and at the last layer, with no layer above, it cannot move at all. The
# first layer that a majority is shown to follow is where, pooled over words, the word's own
# vector carries its sense strongly enough that the layers above no longer overwrite it from the
# context. Compare that layer with where lesson 06's sense separation rose. (The grey lines are
# single words, each from a handful of sentences: read them as noisy.)

# %% [markdown]
# ## The same experiments in the tools researchers use
#
# Everything above is written by hand with PyTorch hooks, which is right for learning what an
# intervention *is*. Research code on transformers mostly uses libraries instead:
# [nnsight](https://nnsight.net) (Fiotto-Kaufman et al., 2025) edits any module's input or
# output inside a `with model.trace(...)` block; [TransformerLens](https://github.com/TransformerLensOrg/TransformerLens)
# names every activation with a hook point (`blocks.1.attn.hook_z`: the heads' context
# vectors) and runs the model with functions attached to them; [Captum](https://captum.ai)
# implements attribution methods. A learner moving on should know that the same experiment
# gives the same numbers there. We redo two experiments of this lesson with each library and
# compare with `torch.allclose` (tolerances in the table):
#
# * **head ablation**: section 1's head removed on a few test utterances, one of them a *pair*
#   of utterances packed as BERT's two segments, so that the token-type embeddings and the
#   padding mask both take part;
# * **activation patching**: section 4's swap, the first ambiguous word's vector moved from a
#   sentence of one sense into a sentence of the other, after the middle layer.
#
# We compare the last hidden state at every real token: equal there, every number read from it
# (the head's logits, the sense probe) is equal too. Captum's two rows check methods that
# section 5 uses: the course's gradient × input and its Integrated Gradients sum (written out in
# `integrated_gradients_by_hand`, `helpers/interventions/compute.py`) against Captum's.
#
# Both research libraries rewrite the modules they wrap (nnsight replaces every module's
# `forward`; TransformerLens swaps in its own components), so each gets its own copy of the
# model and the rest of the lesson runs the untouched original. They are optional: without them,
# their rows read "not installed". Everything lives in `helpers/tools/compute.py`; the table
# comes from `parity_checks`.

# %%
from helpers.tools.compute import (
    RESEARCH_EXTRA,
    library_version,
    missing_research_libraries,
)

print("installed: " + ", ".join(
    f"{name} {library_version(name)}"
    for name in ("nnsight", "TransformerLens", "Captum")
    if library_version(name)
))
if missing_research_libraries():
    print(f"{' and '.join(missing_research_libraries())} not installed:"
          f" their rows are skipped ({RESEARCH_EXTRA})")

# %%
from helpers.tools.compute import parity_checks

# three utterances and one pair of utterances as BERT's two segments
ablation_items = test.texts[:3] + [tuple(test.texts[3:5])]
# the first sentence of each of the first word's two senses
w0, donor, target = None, None, None
if jobs:
    w0, senses0 = next(iter(polysemy.items()))
    donor, target = (
        next(t for (w, s, _), t in zip(jobs, poly_traces)
             if (w, s) == (w0, s0))
        for s0 in list(senses0)[:2]
    )
parity = parity_checks(
    tokenizer, model, classifier, ablation_items=ablation_items,
    layer=1, head=head_to_remove, donor=donor, target=target, word=w0,
    patch_layer=L // 2,
    attribution=trace_text(tokenizer, model, min(test.texts, key=len)),
)

# %%
parity_table = show_table(parity.rows(), index="experiment", title=(
    "one experiment, by hand and in a library: torch.allclose(library,"
    " course) on the last hidden state at every real token (attributions:"
    " per token)"))
ran = [c for c in parity.checks if c.status in ("equal", "NOT equal")]
print(f"{sum(c.equal for c in ran)} of the {len(ran)} rows that ran are equal"
      f" at their tolerance; {len(parity.checks) - len(ran)} did not run")
for gap in parity.gaps:
    print("gap:", gap)

# %% [markdown]
# The libraries reach the same places the course's hooks do. The head ablation in nnsight
# (`nnsight_head_ablation`) is an edit of the context vectors entering `attention.output`,
# written where it happens:
#
# ```python
# with nn_model.trace(**inputs):
#     site = nn_model.encoder.layer[l - 1].attention.E_output
#     site.input[..., h * d:(h + 1) * d] = 0
#     last = nnsight.save(nn_model.output.last_hidden_state)
# ```
#
# and in TransformerLens (`transformer_lens_head_ablation`) a function on a named hook point:
#
# ```python
# def remove(z, hook):  # z: [batch, pos, head, d_head]
#     z[:, :, h] = 0
#     return z
# bridge.run_with_hooks(ids, fwd_hooks=[(f"blocks.{l - 1}.attn.hook_z", remove)])
# ```
#
# The gaps printed under the table are the price of BERT in tools built for decoders: names
# that collide (nnsight), a wrapper that knows BERT only as a masked-LM model, and LayerNorm
# after the residual (post-LN), which TransformerLens cannot fold into the weights.
#
# ## 5. Which words drove one decision?
#
# Six ways to attribute the head's decision on `SENTENCE` (the logit of its predicted intent) to
# the input tokens:
#
# * **raw attention**: last layer, heads averaged. The head reads the mean of all token
#   vectors, so we average the attention rows of all queries.
# * **attention rollout** (Abnar & Zuidema, 2020): treat every layer as mixing token
#   identities linearly, with the residual connection as an equal-weight identity path,
#   $\tilde A_l = \mathrm{rownorm}(0.5\,\bar A_l + 0.5\,I)$, and multiply through the layers,
#   $R = \tilde A_L \cdots \tilde A_1$ (same row averaging). Rollout **assumes** that
#   information moves only through attention weights (averaged over heads) and the residual,
#   in equal parts, and ignores the value vectors, the output projection, the feed-forward
#   blocks and LayerNorm.
# * **norm-based attention** (Kobayashi et al., 2020): $\alpha_{ij}\,\lVert f(x_j)\rVert$, the weight
#   times the size of what the looked-at token sends, last layer, heads averaged, rows averaged as
#   for raw attention (`norm_attention_scores`, built on lesson 05's `norm_attention` in
#   `helpers/attention/compute.py`).
# * **gradient × input**: $\sum_k e_{jk}\, \partial z / \partial e_{jk}$ on the embedding
#   output $e$ -- a first-order estimate of token $j$'s contribution, with an implicit baseline of
#   $e = 0$, which no real input has.
# * **Integrated Gradients** (Sundararajan et al., 2017): below.
# * **occlusion**: drop token $j$ from the input, run again, and measure how far the logit
#   falls. It measures one token's *marginal* effect: when two tokens say the same thing, dropping
#   either one changes little, and occlusion calls both unimportant.
#
# Attention scores are unsigned (a weight is never negative); the gradient methods and occlusion
# are signed (a token can argue *against* the intent). None of them is the ground truth, so we do
# not rank them by agreement with one of them; we test them all by what happens when their top
# tokens are removed (the faithfulness test below). `[CLS]` and `[SEP]` are never removed, so every
# comparison is over the other tokens.

# %%
from helpers.interventions.compute import (
    OCCLUSION_PASSES,
    attention_rollout,
    attribution_scores,
    norm_attention_scores,
    occlusion_windows,
)
from helpers.model.tokens import content_positions

with torch.no_grad():
    z = classifier(
        trace.hidden(L)[None],
        torch.ones(1, trace.seq_len, dtype=torch.long, device=model.device),
    )[0]
pred = int(z.argmax())
# raw attention, rollout, gradient x input, occlusion
scores = attribution_scores(model, classifier, trace, pred)
scores["norm-based attention"] = norm_attention_scores(trace, model)
eye = torch.eye(trace.seq_len, device=model.device)
step = [(0.5 * trace.attention(l).mean(0) + 0.5 * eye) for l in (1, 2)]
step = [s / s.sum(-1, keepdim=True) for s in step]
assert torch.allclose(
    attention_rollout(trace.attentions[:2]), step[1] @ step[0], atol=1e-6
)
words = content_positions(trace)
print(f"{SENTENCE[:60]!r} -> {test.names[pred]!r}; {len(words)} word tokens")
runs = occlusion_windows(words, OCCLUSION_PASSES)
if len(runs) < len(words):
    print(
        f"note: to keep occlusion at {OCCLUSION_PASSES} passes, it drops runs"
        f" of up to {len(runs[0])} neighbouring tokens together"
    )

# %% [markdown]
# ### Integrated Gradients, with its completeness check
#
# Integrated Gradients walks a straight path from a **baseline** input $x'$ to the input $x$ and
# adds up the gradients along it: token $j$'s attribution is
# $(x_j - x'_j) \cdot \int_0^1 \partial f(x' + \alpha (x - x')) / \partial x_j \, d\alpha$. Its
# defining property is **completeness**: the attributions sum to $f(x) - f(x')$. The integral is
# computed with a finite number of steps, and Captum reports how far the sum misses,
# the *convergence delta* $\sum_j a_j - (f(x) - f(x'))$; we raise the steps until it is small.
#
# We follow Captum's BERT tutorial: `LayerIntegratedGradients` on `embeddings.word_embeddings`
# (token ids cannot be interpolated, their embedding vectors can), with the baseline **[PAD] in
# place of every token except [CLS] and [SEP]**, the same length and attention mask
# (`baseline_ids` and `integrated_gradients` in `helpers/interventions/compute.py`; `"mask"` puts
# [MASK] there instead). The baseline is a choice, and the attributions explain the *difference*
# from it: here, "what the words add to an utterance of the same length with no words".

# %%
from helpers.interventions.compute import IG_TOLERANCE, integrated_gradients

# tried in turn until the delta is below the tolerance
IG_STEPS = budget.pick((32, 64, 128, 256), (32, 64))
ig = integrated_gradients(
    tokenizer, model, classifier, trace, pred, baseline="pad", steps=IG_STEPS
)
scores["integrated gradients"] = ig.scores
# Captum's forward gives the lesson's logit
assert abs(ig.f_input - float(z[pred])) < 1e-3
# Captum's delta is what we say it is
assert abs(float(ig.scores.sum()) - ig.gap - ig.delta) < 1e-3
print(
    f"baseline [PAD] (keeping [CLS], [SEP]): f(x) = {ig.f_input:.3f}, f(x') ="
    f" {ig.f_baseline:.3f}, f(x) - f(x') = {ig.gap:.3f}"
)
for n, delta in ig.history:
    print(
        f"   {n:4d} steps: sum of attributions {ig.gap + delta:.4f},"
        f" convergence delta {delta:+.2e}"
    )
print(
    f"-> {ig.steps} steps, |delta| = {abs(ig.delta):.2e} "
    + (
        f"< {IG_TOLERANCE:.0%} of |f(x) - f(x')| ="
        f" {IG_TOLERANCE * abs(ig.gap):.2e}: completeness holds"
        if ig.converged
        else (
            f"is still above {IG_TOLERANCE:.0%} of |f(x) - f(x')|: read the"
            " attributions with care"
        )
    )
)

# %% [markdown]
# The course's gradient × input (`gradient_x_input`, by hand with `torch.autograd`) against
# Captum's `InputXGradient` on the same input, the embedding output $e$
# (`gradient_x_input_captum`):

# %%
from helpers.interventions.compute import gradient_x_input_captum

captum_gxi = gradient_x_input_captum(model, classifier, trace, pred)
assert torch.allclose(scores["gradient x input"], captum_gxi, atol=1e-5)
print(f"gradient x input == Captum InputXGradient (largest difference "
      f"{(scores['gradient x input'] - captum_gxi).abs().max():.1e})")

# %% [markdown]
# BERT's input vector is the sum of three embeddings: the word piece, its position and its
# segment. Captum's tutorial splits an attribution over the three by attributing to all three
# tables at once, with baselines [PAD] for the words, segment 0 and **position 0 for every
# token** (`integrated_gradients_by_embedding`). We do it once, on a short test utterance
# (interpolating positions needs many steps, which a long `SENTENCE` would make slow). A single
# sentence is all segment 0, the baseline's segment, so the segment part is exactly 0.

# %%
from helpers.interventions.compute import integrated_gradients_by_embedding

short = trace_text(tokenizer, model, min(test.texts, key=len))
short_pred = int(
    classifier(
        short.hidden(L)[None],
        torch.ones(1, short.seq_len, dtype=torch.long, device=model.device),
    ).argmax()
)
parts = integrated_gradients_by_embedding(
    tokenizer, model, classifier, short, short_pred, steps=budget.pick(256, 64)
)
print(
    f"{min(test.texts, key=len)!r} -> {test.names[short_pred]!r}; f(x) - f(x')"
    f" = {parts['gap']:.3f}, convergence delta {parts['delta']:+.2e}"
)
print(f"{'token':>12} {'word':>8} {'position':>9} {'segment':>8}")
for j, tok in enumerate(short.tokens):
    print(
        f"{tok:>12} {parts['word'][j]:+8.3f} {parts['position'][j]:+9.3f}"
        f" {parts['segment'][j]:+8.3f}"
    )
print(
    f"{'sum':>12} {parts['word'].sum():+8.3f} {parts['position'].sum():+9.3f}"
    f" {parts['segment'].sum():+8.3f}"
)
split_gap = abs(parts["delta"]) / max(abs(parts["gap"]), 1e-6)
print(
    f"|delta| / |f(x) - f(x')| = {split_gap:.1%}: "
    + (
        f"below {IG_TOLERANCE:.0%}, the three columns add up to the gap"
        if split_gap < IG_TOLERANCE
        else (
            f"above {IG_TOLERANCE:.0%}: three embeddings move at once along"
            " the path, so this split needs more steps; read its columns as"
            " approximate"
        )
    )
)

# %% mystnb={"figure": {"caption": "Six attributions of the predicted intent's logit (title) to the word tokens of the lesson's sentence, one method per row, each row divided by its largest absolute score so all share a \u22121 to 1 scale: red pushes the logit up, blue down; attention-based rows are never negative. Compare the rows: which tokens do the methods agree on?", "name": "fig-09-attributions"}}
from helpers.interventions.plots import plot_attributions

METHODS = (
    "raw attention",
    "attention rollout",
    "norm-based attention",
    "gradient x input",
    "integrated gradients",
    "occlusion",
)
title = (
    f"what drove {test.names[pred]!r}: six attributions, each row / its"
    " largest |score|"
)
ax, shown = plot_attributions(
    {m: scores[m][words] for m in METHODS},
    [trace.tokens[i] for i in words],
    title=title,
)
plt.show()
if len(shown) < len(words):
    print(
        f"the figure shows the {len(shown)} of {len(words)} word tokens with"
        " the highest occlusion score"
    )

# %% [markdown]
# ### Faithfulness: remove the top tokens and watch the prediction (ERASER)
#
# DeYoung et al. (2020, *ERASER*, a benchmark of seven English text tasks; their models were
# BERT-based and LSTM-based classifiers) score an explanation by what removing its top tokens does
# to the predicted class's probability $p$:
#
# * **comprehensiveness** $= p(x) - p(x \setminus r_k)$: remove the top-$k$ % tokens $r_k$; if they
#   are the ones the model used, $p$ should fall (higher is more faithful);
# * **sufficiency** $= p(x) - p(r_k)$: keep *only* them (with [CLS], [SEP]); if they carry the
#   decision, $p$ should hardly fall (lower is more faithful).
#
# ERASER averages each over $k \in \{1, 5, 10, 20, 50\}$ % (the area over the perturbation curve,
# AOPC). Our utterances have about ten word tokens, where 1, 5 and 10 % would all be one token, so
# we use $k$ = 10, 20, 30, 40, 50 % (`FAITHFULNESS_FRACTIONS`), rounding up to at least one token.
#
# Choices that change the numbers, stated now:
#
# * **ranking**: every method ranks the tokens by its **signed** score, highest first (for the
#   attention scores, never negative, that is the same as by size). A token that argues against the
#   intent is removed last: removing it would *raise* $p$, and ranking by $|{\rm score}|$ would mix
#   evidence for and against;
# * **removal**: a token is **dropped** (the sequence gets shorter, as in occlusion). Replacing it by
#   [MASK] or [PAD] keeps the length and the positions but puts in a token the classifier never saw
#   in an utterance; dropping makes a shorter, possibly ungrammatical sentence. Either way the changed
#   input is off the data the model was trained on, so part of any drop in $p$ is the model reacting
#   to a strange input -- which is why every method is compared with a **random ranking** under the
#   same removal. The last of the tables below shows how much the choice moves the numbers;
# * **the unit** is the utterance: one utterance from each of the first `N_FAITH` intents (under the
#   full budget; each costs about a second), each with its own predicted intent; intervals are
#   bootstraps over the utterances, and each method is compared with the
#   random ranking *paired* on the same utterances, Holm-adjusted over the methods.

# %%
from helpers.interventions.compute import (
    FAITHFULNESS_FRACTIONS,
    REMOVALS,
    erasure_curves,
    random_rankings,
)

N_RANDOM = 5  # random rankings per utterance, averaged
# utterances, one from each of the first N_FAITH intents (time: ~1 s each;
# 24 keeps the lesson within its 3 minutes on 2 cores)
N_FAITH = budget.pick(24, 5)
sample = test.subset(1)  # one utterance of every intent ...
sample_texts = sample.texts[:N_FAITH]  # ... of the first N_FAITH
faith = {
    how: {
        m: {"comprehensiveness": [], "sufficiency": []}
        for m in METHODS + ("random",)
    }
    for how in REMOVALS
}
ig_deltas = []
for text in progress(
    sample_texts, desc="attributing and erasing test utterances"
):
    t = trace_text(tokenizer, model, text)
    pos = content_positions(t)
    with torch.no_grad():
        target = int(
            classifier(
                t.hidden(L)[None],
                torch.ones(
                    1, t.seq_len, dtype=torch.long, device=model.device
                ),
            ).argmax()
        )
    s = attribution_scores(model, classifier, t, target)
    s["norm-based attention"] = norm_attention_scores(t, model)
    t_ig = integrated_gradients(
        tokenizer, model, classifier, t, target, steps=IG_STEPS[:2]
    )
    s["integrated gradients"] = t_ig.scores
    ig_deltas.append(abs(t_ig.delta) / max(abs(t_ig.gap), 1e-6))
    rankings = {m: s[m] for m in METHODS} | random_rankings(
        pos, t.seq_len, N_RANDOM, seed=len(ig_deltas), device=model.device
    )
    for how in REMOVALS:
        curves = erasure_curves(
            tokenizer, model, classifier, t, target, rankings, pos, how=how
        )
        for key in ("comprehensiveness", "sufficiency"):
            for m in METHODS:
                faith[how][m][key].append(curves[m][key])
            faith[how]["random"][key].append(
                np.mean(
                    [curves[f"random {i}"][key] for i in range(N_RANDOM)], 0
                )
            )
faith = {
    how: {m: {k: np.stack(v) for k, v in c.items()} for m, c in f.items()}
    for how, f in faith.items()
}
print(
    f"{len(sample_texts)} utterances; Integrated Gradients |delta| / |f(x) -"
    f" f(x')|: largest {max(ig_deltas):.2%},"
    f" {sum(d < IG_TOLERANCE for d in ig_deltas)} of {len(ig_deltas)} below"
    f" {IG_TOLERANCE:.0%}"
)

# %% [markdown]
# The first table: each method's comprehensiveness and sufficiency, averaged over the $k$ grid
# (AOPC) and over the utterances, with 95% bootstrap intervals over the utterances; the second: each
# method minus the random ranking, paired on the utterances, with the bootstrap p-values
# Holm-adjusted over the methods (`cluster_bootstrap_ci` with one cluster per utterance,
# `bootstrap_p_value`, `holm` and `verdict`, all in `helpers/common/stats.py`).

# %%
from helpers.common.stats import (
    bootstrap_p_value,
    cluster_bootstrap_ci,
    holm,
    verdict,
)

def aopc(how: str, method: str, key: str) -> np.ndarray:
    """Per utterance: the mean over the k grid (ERASER's AOPC)."""
    return faith[how][method][key].mean(1)


def versus_random(how: str, key: str) -> dict:
    """Each method minus the random ranking, paired over the utterances,
    Holm over the methods."""
    units = np.arange(len(sample_texts))
    diffs = {
        m: cluster_bootstrap_ci(
            aopc(how, m, key) - aopc(how, "random", key),
            units,
            return_boots=True,
        )
        for m in METHODS
    }
    adjusted = holm([bootstrap_p_value(boots) for _, boots in diffs.values()])
    return {
        m: verdict(ci, a=m, b="random", p_value=float(p))
        for (m, (ci, _)), p in zip(diffs.items(), adjusted)
    }


compared = {
    key: versus_random("drop", key)
    for key in ("comprehensiveness", "sufficiency")
}
rows = []
for m in METHODS + ("random",):
    c_txt = bootstrap_ci(aopc("drop", m, "comprehensiveness")).format("+.3f")
    s_txt = bootstrap_ci(aopc("drop", m, "sufficiency")).format("+.3f")
    rows.append({
        "method": m,
        "comprehensiveness (higher better)": c_txt,
        "sufficiency (lower better)": s_txt,
    })
faith_table = show_table(rows, index="method", title=(
    "tokens dropped; AOPC over k ="
    f" {', '.join(f'{k:.0%}' for k in FAITHFULNESS_FRACTIONS)};"
    f" {len(sample_texts)} utterances; 95% intervals"))

# %%
rows = []
for m in METHODS:
    comp, suff = compared["comprehensiveness"][m], compared["sufficiency"][m]
    comp_word = {
        "higher": "more comprehensive",
        "lower": "LESS comprehensive",
    }.get(comp.kind, "inconclusive")
    suff_word = {"lower": "more sufficient", "higher": "LESS sufficient"}.get(
        suff.kind, "inconclusive"
    )
    rows.append({
        "method": m,
        "comprehensiveness - random": comp.difference.format("+.3f"),
        "verdict (comprehensiveness)": comp_word,
        "sufficiency - random": suff.difference.format("+.3f"),
        "verdict (sufficiency)": suff_word,
    })
versus_table = show_table(rows, index="method", title=(
    "against the random ranking (paired over utterances, Holm over the"
    f" {len(METHODS)} methods; 95% intervals)"))

# %%
rows = []
for m in METHODS + ("random",):
    cells = [
        bootstrap_ci(aopc(how, m, "comprehensiveness")).format("+.3f")
        for how in REMOVALS
    ]
    # one column per way of removing a token
    rows.append({"method": m} | dict(zip(REMOVALS, cells)))
removal_table = show_table(rows, index="method", title=(
    "comprehensiveness AOPC by how a token is removed (same rankings, same"
    " utterances; 95% intervals)"))

# %% mystnb={"figure": {"caption": "ERASER deletion curves on a sample of test utterances (one per intent), tokens ranked by each method's signed score: top, drop in the predicted intent's probability when the top share of word tokens is dropped (higher = more faithful); bottom, when only they are kept (lower = more faithful). Bands: 95 % bootstrap intervals over utterances; grey dashed: random rankings, the baseline to beat.", "name": "fig-09-faithfulness"}}
from helpers.interventions.plots import plot_faithfulness

fig = plot_faithfulness(
    {m: faith["drop"][m] for m in METHODS + ("random",)},
    FAITHFULNESS_FRACTIONS,
    title=(
        f"deletion curves (ERASER), tokens dropped, {len(sample_texts)}"
        " utterances"
    ),
)
plt.show()

# %% [markdown]
# Read the tables by the random row: a ranking is faithful only as far as it beats a random choice
# of the same number of tokens, removed the same way. How far each removal moves the random row
# itself shows how much of a drop in $p$ is the input becoming strange rather than the evidence
# going.
#
# Abnar & Zuidema compared raw attention, rollout and attention flow with blank-out (occlusion) and
# input gradients on a small Transformer they trained for subject–verb agreement, and applied the
# methods to pretrained BERT; rollout and flow agreed better with both than raw attention did. Here
# we ask the question by faithfulness instead of by agreement: is rollout's comprehensiveness higher
# than raw attention's, paired over the utterances? With no margin set for this comparison, an
# interval that includes 0 is inconclusive (`verdict`).

# %%
rollout_gain = paired_difference_ci(
    aopc("drop", "attention rollout", "comprehensiveness"),
    aopc("drop", "raw attention", "comprehensiveness"),
)
rollout_verdict = verdict(rollout_gain, a="rollout", b="raw attention")
rollout_text = (
    "rollout is more comprehensive than raw attention"
    if rollout_verdict.kind == "higher"
    else (
        "raw attention is more comprehensive than rollout"
        if rollout_verdict.kind == "lower"
        else (
            "inconclusive: the interval includes 0, so this run shows neither"
            " ranking more faithful"
        )
    )
)
print(
    "comprehensiveness AOPC, rollout - raw attention, paired over"
    f" {len(sample_texts)} utterances: {rollout_gain}\n-> {rollout_text}"
)

# %% [markdown]
# ### Context mixing that counts the value vectors: value zeroing
#
# An attention weight $\alpha_{ij}$ says how much token $i$ *looks* at token $j$, not how much of
# $j$ ends up in $i$'s output: that also depends on $j$'s value vector, the output projection, the
# residual connection, LayerNorm and the feed-forward block. **Value zeroing** (Mohebbi et al., 2023,
# EACL; pretrained BERT, RoBERTa and ELECTRA encoders) measures the whole layer: run the layer with
# token $j$'s value vector set to zero in every head -- keys and queries untouched, so the attention
# pattern stays -- and take how far output $i$ moves, the cosine distance $C_{ij}$, each row divided
# by its sum (`value_zeroing`; `value_zeroing_rollout` multiplies the layers' matrices as rollout
# does). It runs the layer once per token, so for a `SENTENCE` longer than `VZ_MAX_TOKENS` we use the
# short test utterance from above. First a table: per layer, how much of each token's row stays on
# the token itself. Then four maps on one colour scale: raw attention and value zeroing at the last
# layer, rollout and value-zeroing rollout through all layers.

# %%
from helpers.interventions.compute import value_zeroing, value_zeroing_rollout

VZ_MAX_TOKENS = 64
vz_trace = trace if trace.seq_len <= VZ_MAX_TOKENS else short
# T+1 layer copies and T x T labels per map: say so rather than swap silently
if vz_trace is not trace:
    print(
        f"SENTENCE has {trace.seq_len} tokens, more than the {VZ_MAX_TOKENS}"
        f" these cells draw; using the short test utterance ({short.seq_len}"
        " tokens) instead."
    )
# one [T, T] matrix per layer
vz = [value_zeroing(model, vz_trace, l) for l in range(1, L + 1)]
rows = [
    {
        "layer": str(l),
        "attention": f"{vz_trace.attention(l).mean(0).diagonal().mean():.2f}",
        "value zeroing": f"{vz[l - 1].diagonal().mean():.2f}",
    }
    for l in range(1, L + 1)
]
self_table = show_table(rows, index="layer", title=(
    "share of each token's row on itself, mean over tokens (raw attention vs"
    " value zeroing)"))

# %% mystnb={"figure": {"caption": "Token-to-token mixing for the lesson's sentence (or a short test utterance when it is long): row = output token, column = input token, rows summing to 1. Last-layer raw attention (heads averaged) and value zeroing, then each rolled out through all layers, on one shared colour scale from 0. Compare where attention and value zeroing put each row's weight.", "name": "fig-09-context-mixing"}}
from helpers.interventions.plots import plot_mixing_maps

fig = plot_mixing_maps(
    {
        f"raw attention, layer {L} (heads averaged)": (
            vz_trace.attention(L).mean(0)
        ),
        f"value zeroing, layer {L}": vz[-1],
        "attention rollout, all layers": attention_rollout(
            vz_trace.attentions
        ),
        "value-zeroing rollout, all layers": value_zeroing_rollout(vz),
    },
    vz_trace.tokens,
    title="context mixing: row = output token, column = input token",
)
plt.show()

# %% [markdown]
# Remember what each method measures: attention weights say where a head *looks*, not what the
# looked-at vector contributes; gradient × input is local and measured from a baseline of zeros;
# Integrated Gradients explains the difference from *its* baseline; occlusion and the erasure test
# change the input, so they also measure the model's reaction to a shorter or stranger sentence.
#
# ## 6. Explore: remove a head, skip a layer
#
# For `SENTENCE`, we run every single-head removal and every layer skip once (a progress
# bar), then the explorer only looks results up: choose a layer and a head (or "skip the
# whole layer") and the bars show the new logits against the unchanged ones (black ticks).
# With 77 intents the bars show a dozen: every intent that some removal or skip makes the
# prediction, then the highest unchanged logits. The map shows, for every choice at once, how
# far the logit of the originally predicted intent moves; the frame marks the current choice.
# Its colours span the head removals; when a layer skip moves the logit further, the skip column
# is clipped (the colour bar says where) and its values are written in the cells. A logit can
# rise while the prediction flips: another intent's logit may rise more. The printout spells out
# each skip that flips it.

# %% mystnb={"figure": {"caption": "Top: the lesson's sentence's logits with the chosen head removed or layer skipped, for every intent some change makes the prediction plus the highest others; black ticks: unchanged logits; orange: the prediction. Bottom: change of the originally predicted logit for every head removal and layer skip (last column), the current choice framed. The controls pick a layer and a head, or skip the layer.", "name": "fig-09-explorer"}}
from helpers.interventions.compute import sentence_interventions
from helpers.interventions.widgets import InterventionExplorer

effects = sentence_interventions(tokenizer, model, classifier, SENTENCE)
assert torch.allclose(effects.base, z, atol=1e-4)
flips_heads = int((effects.heads.argmax(-1) != pred).sum())
flips_skips = [
    l for l in range(1, L + 1) if int(effects.skips[l - 1].argmax()) != pred
]
print(
    f"{flips_heads} of {L * A} single-head removals change the predicted"
    f" intent of SENTENCE; skipping layer(s) {flips_skips or 'none'} does"
)
for l in flips_skips:
    new = int(effects.skips[l - 1].argmax())
    moved = effects.skips[l - 1] - effects.base
    print(
        f"  skipping layer {l}: the {test.names[pred]!r} logit changes by"
        f" {moved[pred]:+.1f}, the {test.names[new]!r} logit by"
        f" {moved[new]:+.1f}, so {test.names[new]!r} wins"
    )
biggest = divmod(
    int((effects.heads[..., pred] - effects.base[pred]).abs().argmax()), A
)
explorer = InterventionExplorer(
    effects, test.names, layer=biggest[0] + 1, head=biggest[1]
)
explorer

# %% [markdown]
# ## What the interventions say about the stories
#
# The table gathers this run's verdicts, from the same variables the cells above printed. They
# hold for this model, this head and this data; run the lesson with another `MODEL` to see
# whether they travel. The third column names the published finding, the paper and the model it
# was measured on (a different model and training objective from the bundled one).

# %%
from IPython.display import Markdown, display

from helpers.classify.compute import claims_markdown


def layers_text(name: str) -> str:
    kinds = by_kind[name]
    parts = [
        f"{CHANGE_WORDS[k]}: {', '.join(map(str, kinds[k]))}"
        for k in ("lower", "equivalent", "inconclusive", "higher")
        if kinds[k]
    ]
    return (
        f"{name}: "
        + "; ".join(parts)
        + (f" (layer {L}: head mismatch, not read)" if mismatch[name] else "")
    )


def rho_text(rho, verdict_text: str) -> str:
    return f"rho = {rho if rho else 'n/a'}: {verdict_text}"


if len(patch) < 2:
    patch_row = "n/a: fewer than two words"
elif not probe_works:
    patch_row = (
        "the probe is not shown to beat a coin (control"
        f" {control.share.percent()}): no verdict"
    )
elif first_pooled is not None:
    shown_at = ", ".join(
        str(l) for l, v in enumerate(patch_verdicts) if v.kind == "above"
    )
    patch_row = (
        "first patched layer a majority is shown to follow:"
        f" {first_pooled} ({patch_verdicts[first_pooled].share.percent()});"
        f" shown at layers {shown_at} (Holm over {L + 1} layers, words"
        " resampled)"
    )
else:
    patch_row = (
        "no patched layer is shown to be followed by a majority (Holm"
        f" over {L + 1} layers, words resampled)"
    )
parked_text = (
    f"parked more on {park_token}" if park_token
    else f"parking: {parking.kind}"
)
rows = [
    (
        "most single heads can be removed",
        (
            f"of {L * A} heads (McNemar, Holm over {L * A}, margin"
            f" +/-{100 * MARGIN:.1f} pt): {head_counts['equivalent']}"
            f" equivalent within the margin, {head_counts['lower']} lower the"
            f" accuracy, {head_counts['inconclusive']} inconclusive,"
            f" {head_counts['higher']} raise it"
        ),
        (
            "Michel et al. 2019 (BERT-base fine-tuned on MNLI; a Transformer"
            " for translation): most single heads removed at test time without"
            " a significant loss"
        ),
    ),
    (
        "attention parked on [SEP] or [CLS] marks an unimportant head",
        (
            f"{parked_text};"
            " within-layer rank correlation of share and loss increase: [CLS]"
            f" {rho_text(pattern_rho['[CLS]'], pattern_verdict['[CLS]'])};"
            " [SEP]"
            f" {rho_text(pattern_rho['[SEP]'], pattern_verdict['[SEP]'])}"
        ),
        (
            "Clark et al. 2019 (bert-base): over half the attention of layers"
            " 6-10 on [SEP], read as a no-op"
        ),
    ),
    (
        "removing a head means setting it to zero",
        (
            f"on {len(some)} utterances, zero-ablation: {zero_counts['lower']}"
            " heads lower the accuracy; mean-ablation:"
            f" {mean_counts['lower']}; rank agreement of the two loss maps"
            f" within layers: rho = {agree or 'n/a'}"
        ),
        (
            "a choice of method; mean ablation is common in circuit analysis"
            " (no single paper's number quoted)"
        ),
    ),
    (
        "one gradient ranks heads like removing them",
        "E|g| vs E|dL| within layers: "
        + rho_text(grad_vs_loss, grad_verdict)
        + "; across all heads: rho ="
        f" {michel_rows['E|g| vs E|dL|'][0] or 'n/a'} ({t_gradient:.1f} s vs"
        f" {t_exhaustive:.1f} s)",
        (
            "Michel et al. 2019 (BERT-base on MNLI): the gradient importance,"
            " used to prune heads"
        ),
    ),
    (
        "pruning the least important heads first keeps the accuracy longest",
        "first share removed with the accuracy shown lower: "
        + (f"{first_lower:.0%}" if first_lower is not None else "none")
        + f"; importance order vs {N_ORDERS} random orders, mean accuracy over"
        f" the curve: {prune_verdict.kind}"
        f" ({prune_verdict.difference.format('+.3f')})",
        (
            "Michel et al. 2019 (BERT-base on MNLI): a large part of the heads"
            " pruned with little or no loss; most must stay"
        ),
    ),
    (
        "every layer is an indispensable expert",
        "; ".join(layers_text(name) for name in skip_changes)
        + f" (Holm over {L} layers, margin +/-{100 * MARGIN:.1f} pt)",
        "a popular story; no published number quoted here",
    ),
    (
        "a word's own vector carries its sense from some layer on",
        patch_row,
        "lesson 06 (this model): where the senses separate",
    ),
    (
        "Integrated Gradients' attributions add up to the change of the logit",
        (
            f"SENTENCE: |delta| = {abs(ig.delta):.1e} at {ig.steps} steps"
            f" ({'below' if ig.converged else 'above'} {IG_TOLERANCE:.0%} of"
            f" |f(x) - f(x')|); {sum(d < IG_TOLERANCE for d in ig_deltas)} of"
            f" {len(ig_deltas)} test utterances below"
        ),
        (
            "Sundararajan et al. 2017 (completeness, an axiom of the method;"
            " image and text models)"
        ),
    ),
    (
        "attribution methods point at the tokens the decision used",
        "more comprehensive than a random ranking (tokens dropped, Holm over"
        " the methods): "
        + (
            ", ".join(
                m
                for m in METHODS
                if compared["comprehensiveness"][m].kind == "higher"
            )
            or "none"
        )
        + "; more sufficient: "
        + (
            ", ".join(
                m
                for m in METHODS
                if compared["sufficiency"][m].kind == "lower"
            )
            or "none"
        ),
        (
            "DeYoung et al. 2020 (ERASER; BERT- and LSTM-based models on seven"
            " English tasks): the metrics, not a ranking of these methods"
        ),
    ),
    (
        "attention rollout explains a decision better than raw attention",
        (
            f"comprehensiveness, rollout - raw attention, {len(sample_texts)}"
            f" utterances: {rollout_gain}: {rollout_text}"
        ),
        (
            "Abnar & Zuidema 2020 (a small Transformer they trained for"
            " subject-verb agreement; applied to BERT): rollout and flow agree"
            " better with blank-out and input gradients than raw attention"
        ),
    ),
]
display(
    Markdown(
        claims_markdown(
            rows,
            header=(
                "story",
                "what this run shows",
                "published finding (paper, model)",
            ),
        )
    )
)

# %% [markdown]
# ## Summary
#
# * A head is removed exactly by zeroing its context vector before the output projection
#   (a forward pre-hook on `attention.output`); layer $l$'s change only needs layers $l..L$
#   re-run, which makes the full $L \times A$ map cheap enough for a CPU.
# * The classifier's task must leave room to break: on BANKING77's 77 intents the head makes
#   mistakes, so a removed head or a skipped layer can show in the accuracy.
# * Every change is paired on the same utterances (McNemar), Holm-adjusted when many heads or
#   layers are tested, and called harmless only inside a margin stated before the measurement
#   (TOST); otherwise it is **inconclusive** -- an interval that includes 0 is not "no effect".
# * Looking is not testing: the rank correlation between a head's attention pattern and the
#   damage its removal does is printed above, with its interval -- ranked within each layer,
#   because a correlation over all heads also ranks the layers.
# * Skipping layers and patching word vectors test stories about layers directly: which
#   layers' removal lowers a measure, which are equivalent within the margin, and from which
#   layer a word's own vector carries its sense (words resampled, because a word's sentence pairs
#   share its sentences). The probe reads the patched position itself, so a control reads the rest
#   of the sentence, which follows the patch only if the layers above spread it.
# * Mean-ablation replaces a head by its average instead of zeros; where the two differ, zeroing
#   broke the model by removing a constant, not the head's information.
# * Michel et al.'s gradient importance needs one backward pass instead of $L \times A$ forward
#   passes. Compared like for like (size with size, sign with sign, within layers as well as across,
#   with their per-layer normalisation), its agreement with removal is printed above; the pruning
#   curve says whether its order keeps the accuracy up longer than random orders.
# * Integrated Gradients satisfies completeness: its attributions sum to $f(x) - f(x')$ for a stated
#   baseline, and Captum's convergence delta says whether enough steps were taken. The course's
#   gradient × input equals Captum's `InputXGradient`.
# * No attribution method is the ground truth. ERASER's comprehensiveness and sufficiency test each
#   ranking by removing its top tokens, against a random ranking removed the same way, with
#   intervals over utterances; how a token is removed (dropped, [MASK], [PAD]) moves the numbers.
# * Value zeroing measures context mixing through the whole layer, values and residual included;
#   attention weights only say where a head looks.
#
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
    check_exercise_4,
    check_exercise_5,
    check_exercise_6,
    check_exercise_7,
)

# %% [markdown]
# ### Exercise 1: the head that matters most for the true class
#
# Difficulty ●●○○○ · Importance ●●●○○ · ~10 min
#
# Which head's removal lowers the **true-class logit** most on average over the
# test set? Give `(layer, head)` with layers counted from 1 and heads from 0,
# computed from `ablation`.

# %%
answer_1 = None  # your code here: a (layer, head) tuple
check_exercise_1(answer_1, ablation)

# %% [markdown]
# ### Exercise 2: Michel et al.'s head importance
#
# Difficulty ●●○○○ · Importance ●●●○○ · ~5 min
#
# Michel et al.'s importance is the mean of the *absolute* gradients. Compute
# it from `grads` (`[N, L, A]`) as an `[L, A]` tensor.

# %%
answer_2 = None  # your code here: an [L, A] tensor
check_exercise_2(answer_2, grads)

# %% [markdown]
# ### Exercise 3: attention rollout by hand
#
# Difficulty ●●●○○ · Importance ●●●●○ · ~20 min
#
# Write `my_rollout(attentions)`: from a list of `[A, T, T]` attention maps,
# one per layer (bottom first), return the `[T, T]` attention rollout with
# $0.5\,\bar A + 0.5\,I$.

# %%
my_rollout = None  # your code here: def my_rollout(attentions): ...
check_exercise_3(my_rollout, trace)

# %% [markdown]
# ### Exercise 4: the resampling unit
#
# Difficulty ●●●○○ · Importance ●●●●○ · ~15 min
#
# At the first encoder layer (patched layer 1), how much narrower would the
# pooled interval of the share following the patch be if the pairs were treated
# as independent? Stack every word's `patch[w]["follows"][:, 1]`, take the
# percentile bootstrap over the pairs (`bootstrap_ci` in
# `helpers/common/stats.py`, its defaults) and give its width divided by the
# width of the lesson's interval, `pooled[1]` (resampling words): a float.

# %%
# your code here: a float, (pair-bootstrap width) / (word-bootstrap width)
answer_4 = None
check_exercise_4(answer_4, patch)

# %% [markdown]
# ### Exercise 5: skipping layers, tested by hand
#
# Difficulty ●●●○○ · Importance ●●●●○ · ~20 min
#
# `skip_correct[l]` holds the test outcomes (1 = right) with layer `l` skipped,
# `skip_correct[0]` with nothing skipped. For every layer $l = 1..L$ run the
# exact McNemar test of the skip against nothing skipped
# (`mcnemar(skip_correct[l], skip_correct[0])` in `helpers/common/stats.py`),
# Holm-adjust the $L$ p-values (`holm`) and give the sorted list of layers
# whose skip **lowers** the accuracy (adjusted p < 0.05 and fewer right), layer
# $L$ included.

# %%
# your code here: a sorted list of layers (ints, counted from 1)
answer_5 = None
check_exercise_5(answer_5, skip_correct)

# %% [markdown]
# ### Exercise 6: comprehensiveness by hand
#
# Difficulty ●●●●○ · Importance ●●●○○ · ~25 min
#
# For `SENTENCE`, take the word tokens (every position but [CLS] and [SEP]),
# rank them by their Integrated-Gradients score
# `scores["integrated gradients"]` (signed, highest first), drop the top
# $\lceil 0.2\,n \rceil$ of them from the input (a shorter id sequence), and
# give $p(\text{pred} \mid x) - p(\text{pred} \mid x \setminus r)$ with the
# head's softmax probability of the predicted intent `pred`: a float.

# %%
# your code here: a float, comprehensiveness at k = 20% for Integrated
# Gradients
answer_6 = None
check_exercise_6(
    answer_6,
    tokenizer,
    model,
    classifier,
    trace,
    scores["integrated gradients"],
    pred,
)

# %% [markdown]
# ### Exercise 7: predict, then measure — which skip costs the true class most?
#
# Difficulty ●●○○○ · Importance ●●●○○ · ~10 min
#
# The skip section counted right answers. A logit moves before an answer flips,
# so the true-class logit is a finer measure. **First predict**: skipping which
# layer (counted from 1) lowers the true-class logit most on average over the
# test items? Write the layer in `prediction_7`.
#
# **Then measure** it from `skip_logits` (`[L + 1, N, C]`, row 0 nothing
# skipped, row `l` layer `l` skipped) and the labels `y`: each item's
# true-class logit with nothing skipped minus with layer `l` skipped, averaged
# over the items. The checker grades the measurement and only comments on the
# prediction.
#
# *Reflection (not checked):* if the layer you find is not the one whose skip
# costs the most accuracy, what does that say about the items whose answer did
# not flip?

# %%
prediction_7 = None  # a layer (from 1), written before measuring
answer_7 = None  # your code here: an int, counted from 1
check_exercise_7(prediction_7, answer_7, skip_logits, y)
