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
# # 12 — Testing the stories by intervention: ablate, prune, skip, patch
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/bert-layer-by-layer/bert-layer-by-layer/blob/main/lessons/12_interventions.ipynb)
#
# Names and counting ($L, H, A, d, I, n$; layers from 1, heads from 0): see the [conventions](00_big_picture.ipynb#conventions) box of lesson 00.
#
# Lessons 07–10 *looked* (attention weights, similarities, probes); what they found is
# correlational. The stronger test of what a part of the model does is to **change it and measure
# what breaks**. We (1) remove one attention head at a time, set to zero and to its mean; (2)
# estimate every head's importance from one gradient (Michel et al., 2019) and prune heads in its
# order against many random orders; (3) skip whole layers; (4) move one word's vector into another
# sentence and see when the model follows; (5) redo a removal and a patch with nnsight and
# TransformerLens; (6) explore it all for one sentence. [Lesson 13](13_attribution.ipynb) then asks
# which *input tokens* drove one decision.
#
# A classifier on BANKING77's 77 banking intents makes enough mistakes for a removed head to show;
# with a Chinese model the data follow it, and the classifier sorts THUCNews headlines into 10 news
# topics (the benchmark is chosen by the model's tokenizer, as in lesson 04).
# Every result is one sentence generated from this run's numbers, its statistics folded under
# **How we know**. The first cell installs the course on Google Colab; locally it does nothing.

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
# `MODEL` names the checkpoint (`None`: the course chooses); `SENTENCE` is the request (with a
# Chinese model, a Chinese sentence) the lesson's explorer changes the model for. `BUDGET` sizes the expensive work (`None`: the course
# chooses, `"full"` on the bundled model; `"quick"`: a few intents, test examples and ambiguous
# words, for a fast check or a large model on a CPU; `choose_budget`, `helpers/common/budget.py`).

# %% tags=["parameters"]
MODEL = None
SENTENCE = "I still have not received my new card, what should I do?"
# None: the course chooses; "full" or "quick" (a few intents and test
# utterances)
BUDGET = None

# %% [markdown]
# ## The model, the data and one classifier, trained once
#
# **The task** is BANKING77 (Casanueva et al., 2020; `load_banking77` in
# `helpers/common/data.py`): 77 intents of one banking domain, many of them close ("card arrival" vs
# "card delivery estimate"); lesson 04's 10-intent set is too easy to leave anything to break. With
# a Chinese model (`model_language`, `helpers/common/language.py`) it is THUCNews headlines
# (`load_thucnews`, `data/thucnews/README.md`): 10 news topics, some close (finance and stocks);
# `lesson_benchmark` in `helpers/interventions/compute.py` picks one. Under
# the full budget we draw, with a seed, **30 training utterances of each intent** and a stratified
# test set (with fewer classes than 77, more test items per class); the quick budget draws a few. All experiments judge the model by one classifier:
# a linear head (lesson 10's `LinearHead`) on the **mean-pooled last layer**, trained once and never
# retrained: every intervention changes the encoder under a fixed head. It is trained by its own
# short loop (`train_head`: full-batch Adam with a small weight decay for a fixed number of steps,
# no dev split), not by lesson 10's training contract (an L2 strength chosen on a dev split,
# L-BFGS to a gradient tolerance): it only has to be one fixed classifier to intervene under. The map below
# (`you_are_here`, `helpers/architecture/plots.py`) marks what this lesson changes.
#
# Every example is cut to `MAX_LEN` tokens, chosen to keep every example whole (a
# model that accepts fewer tokens gets a warning and a count). After the map, the features come from
# `pooled_features` (`helpers/interventions/runs.py`), checked against lesson 10's
# `extract_features`; the cell's last line says whether mean pooling is the checkpoint's own
# sentence vector (read from its sentence-transformers configuration).

# %%
import random
import time
import warnings

import numpy as np
import torch

from helpers.common.budget import choose_budget
from helpers.common.language import model_language
from helpers.interventions.compute import draw_sizes, lesson_benchmark
from helpers.model.loading import checkpoint_facts, load_model

loaded = load_model(MODEL)
tokenizer, model = loaded
language = model_language(tokenizer, lesson="12")  # the data follow the model
bench = lesson_benchmark(language)  # BANKING77 or THUCNews headlines
ITEMS, CLASSES = bench.items, bench.classes  # "utterances", "intents"
budget = choose_budget(BUDGET, model)
L, A, H = (model.config.num_hidden_layers, model.config.num_attention_heads,
           model.config.hidden_size)
train_all, test_all = bench.load("train"), bench.load("test")
N_INTENTS, SHOTS, TEST_PER_INTENT = draw_sizes(budget, train_all.num_classes)
# all of them under the full budget
intents = tuple(sorted(random.Random(0).sample(train_all.names, N_INTENTS)))
train = train_all.only(intents).sample(SHOTS, seed=0)
test = test_all.only(intents).sample(TEST_PER_INTENT, seed=0)  # stratified
print(f"{L} layers x {A} heads, hidden size {H}")
print(f"{bench.name}, {N_INTENTS} of its {train_all.num_classes} {CLASSES}:"
      f" {len(train)} training {ITEMS} ({SHOTS} per {CLASSES[:-1]}),"
      f" {len(test)} test {ITEMS} ({TEST_PER_INTENT} per {CLASSES[:-1]},"
      " drawn with seed 0)")

# %% mystnb={"figure": {"caption": "The course's map of BERT, from tokens through the repeated encoder layer and the pooler to a task head. This lesson changes the attention heads and whole encoder layers, framed in orange and marked \"you are here\", and measures what breaks in a classifier on top.", "name": "fig-12-you-are-here"}}
from helpers.architecture.plots import LESSON_PARTS, you_are_here

you_are_here(model.config, LESSON_PARTS["12"]);

# %%
from helpers.classify.compute import HEAD_STEPS, extract_features, train_head
from helpers.interventions.compute import (count_truncated, pooled_features,
                                           pooling_note)
from helpers.model.trace import max_input_tokens

longest = max(len(ids) for ids in
              tokenizer(train_all.texts + test_all.texts)["input_ids"])
# tokens per utterance, [CLS] and [SEP] included
MAX_LEN = min(128, max_input_tokens(tokenizer, model))
n_cut = count_truncated(tokenizer, train.texts + test.texts, MAX_LEN)
if n_cut:
    warnings.warn(f"{n_cut} {ITEMS} are longer than MAX_LEN = {MAX_LEN}"
                  " tokens and are cut.", stacklevel=1)
print(f"longest {bench.name} {ITEMS[:-1]}: {longest} tokens;"
      f" MAX_LEN = {MAX_LEN};"
      f" {ITEMS} of our sets that are cut: {n_cut}")
X_train = pooled_features(tokenizer, model, train.texts, max_length=MAX_LEN)
lesson10 = extract_features(tokenizer, model, train.texts[:32],
                            max_length=MAX_LEN, progress=False)
assert torch.allclose(lesson10.layer(L, "mean"), X_train[:32], atol=1e-4)
head = train_head(X_train, train.labels, train.num_classes, epochs=HEAD_STEPS,
                  seed=0)
print(f"head trained: {HEAD_STEPS} steps on {len(train)} {ITEMS}, {H}"
      f" features -> {train.num_classes} {CLASSES}")
print(pooling_note(loaded.choice.name, checkpoint_facts(loaded).pooling))

# %% [markdown]
# ## How the verdicts are read, fixed before we measure
#
# Every intervention is compared with the unchanged model **on the same test examples**, each
# right or wrong before and after: only the examples that change carry information. The verdicts
# follow lesson 06's three rules: the interval of the change is a *paired* one (it counts every
# example that could have changed, so it is never falsely sure when few do); when many heads or
# layers are judged together, every interval is widened for the whole family ($K$ heads read at
# $1 - 0.05/K$); each verdict is read off its own interval (`outcome_changes` in
# `helpers/interventions/outcomes.py`; each fold names the methods).
#
# A change the data do not show is not "no change". To call one harmless we state a margin **now**:
# *equivalent* when the equivalence interval ($1 - 0.1/m$ for $m$ comparisons) lies inside $\pm$ the
# margin; anything else not shown to differ is **inconclusive**, "we cannot tell". Even a change
# **no** example shows has an interval, whose half-width is the smallest margin the data could
# ever confirm (`equivalence_resolution`); it grows with the number of comparisons judged together.

# %%
from helpers.interventions.compute import resolution_lines

MARGIN = 0.01  # the equivalence margin: +/- 1 accuracy point
print(f"equivalence margin, set before any measurement: +/-{100 * MARGIN:.1f}"
      " accuracy point(s)")
# equivalence_resolution for one change, the L layers and the L x A heads
print("\n".join(resolution_lines(len(test), {
    "one intervention": 1, f"{L} layers": L, f"{L * A} heads": L * A},
    MARGIN, items=ITEMS)))

# %% [markdown]
# ## Running only the layers above a change
#
# An intervention at layer $l$ leaves layers $1..l-1$ untouched, so we run the test set once, keep
# every hidden state (`run_cached`) and later re-run only the layers above the change
# (`continue_from`); a `SentenceHead` applies the pooling and the head to a last hidden state. Two
# checks: re-running all layers reproduces the last one (on the longest examples, where padding
# matters most), and the logits equal lesson 10's. **Layers count from 1** (layer $l$ is
# `model.encoder.layer[l - 1]`, "layer 0" the embeddings), **heads from 0**.

# %%
from helpers.common.stats import accuracy_ci
from helpers.interventions.compute import (SentenceHead, continue_from,
                                           length_buckets, run_cached)

classifier = SentenceHead(head, pooling="mean")
run = run_cached(tokenizer, model, test.texts, max_length=MAX_LEN,
                 token_shares=True)
mask = run.attention_mask
rows, width = length_buckets(mask, 32)[-1]  # the longest utterances
real = mask[rows, :width].bool()
again = continue_from(model, run.hidden(0)[rows, :width], mask[rows, :width],
                      after_layer=0)
assert torch.allclose(again[real], run.hidden(L)[rows, :width][real],
                      atol=1e-4)
feats_some = extract_features(tokenizer, model, test.texts[:32],
                              max_length=MAX_LEN, progress=False)
y = torch.tensor(test.labels, device=model.device)
logits_base = classifier(run.hidden(L), mask)
assert torch.allclose(head(feats_some.layer(L, "mean")), logits_base[:32],
                      atol=1e-4)
base_correct = (logits_base.argmax(-1) == y).float()
base_acc = accuracy_ci(base_correct)
print(f"test accuracy of the head, nothing changed: {base_acc.percent()}"
      f" over the {len(test)} test {ITEMS} (chance"
      f" {1 / test.num_classes:.1%}); {int(len(test) - base_correct.sum())}"
      f" {ITEMS} wrong")
print(bench.reference)

# %% [markdown]
# The last line sets the accuracy beside published numbers where there are any.
#
# ## 1. Removing one head
#
# Inside a layer, head $h$ produces a context vector $c_h \in \mathbb{R}^{d}$ per token ($d = H/A$);
# the output projection (`attention.output.dense`, $W_O$) mixes the heads laid side by side:
#
# $$\mathrm{MultiHead}(x) = W_O\,[c_1; c_2; \dots; c_A] + b_O = \sum_{h=1}^{A} W_O^{(h)} c_h + b_O .$$
#
# Setting $c_h = 0$ removes exactly head $h$'s term. We do it with a **forward pre-hook** on
# `layer.attention.output` (`BertSelfOutput`): the hook receives the concatenated context before
# `dense` and returns it with head $h$'s $d$ columns zeroed. (Older code passes a `head_mask`
# argument to the model; recent `transformers` versions dropped it; a hook works with any version.)
# We check the hooked layer against lessons 02–03's by-hand attention output, same columns zeroed.

# %%
from helpers.attention.rebuild import self_attention_by_hand
from helpers.model.trace import trace_text
from helpers.stack.rebuild import attention_output_by_hand

d = H // A
head_to_remove = 0
layer_module = model.encoder.layer[0]  # layer 1


def zero_head_hook(module, args):
    # [batch, seq, A * d]: head h is columns h*d .. (h+1)*d - 1
    context = args[0].clone()
    context[..., head_to_remove * d:(head_to_remove + 1) * d] = 0.0
    return (context, *args[1:])


trace = trace_text(tokenizer, model, SENTENCE)
x = trace.hidden(0)
context, _ = self_attention_by_hand(layer_module, x)
context[:, head_to_remove * d:(head_to_remove + 1) * d] = 0.0
by_hand = attention_output_by_hand(layer_module, context, x)
handle = layer_module.attention.output.register_forward_pre_hook(
    zero_head_hook)
try:
    hooked = layer_module.attention(x[None])[0][0]
finally:
    handle.remove()
assert torch.allclose(hooked, by_hand, atol=1e-5)
change = (hooked - layer_module.attention(x[None])[0][0]).abs().max()
print(f"layer 1 with head {head_to_remove} removed == by hand; max change of"
      f" the attention output {change:.3f}")

# %% [markdown]
# `ablate_head(model, layer, head)` registers such a hook while a `with` block runs. With layer 1's
# head removed we run the whole test set and measure, per example, whether it is still right and
# how far its **true** class's logit falls. The fold redoes the test statistic by hand from the
# examples that flipped (with no real change, a flip is as likely either way).

# %%
from helpers.common.claims import show_claim
import math

from helpers.common.stats import bootstrap_ci
from helpers.interventions.compute import ablate_head, outcome_changes

logits_removed = torch.empty_like(logits_base)
with torch.no_grad(), ablate_head(model, 1, head_to_remove):
    for items, _ in length_buckets(mask, 64):
        enc = tokenizer([test.texts[i] for i in items], padding=True,
                        truncation=True, max_length=MAX_LEN,
                        return_tensors="pt").to(model.device)
        logits_removed[items] = classifier(
            model(**enc).last_hidden_state, enc["attention_mask"])
removed_correct = (logits_removed.argmax(-1) == y).float()
one_head = outcome_changes(removed_correct[None], base_correct,
                           [f"removing layer 1, head {head_to_remove}"],
                           margin=MARGIN, reference="the unchanged model")[0]
now_wrong = int(((base_correct == 1) & (removed_correct == 0)).sum())
now_right = int(((base_correct == 0) & (removed_correct == 1)).sum())
# McNemar by hand: z = (b - c) / sqrt(b + c); two-sided p = erfc(|z| / sqrt 2)
z = (now_right - now_wrong) / math.sqrt(max(1, now_right + now_wrong))
assert abs(math.erfc(abs(z) / math.sqrt(2)) - one_head.p_value) < 1e-9
logit_drop = (logits_base - logits_removed).gather(1, y[:, None])[:, 0]
show_claim(
    one_head.verdict, more="raises the accuracy over", less="lowers the"
    " accuracy below", measure=f"keeps more {ITEMS} right",
    units=f"{len(test)} test {ITEMS}",
    values=(one_head.after.percent(), base_acc.percent()),
    extra=[f"{now_wrong} {ITEMS} become wrong, {now_right} become right"
           f" (of {len(test)}): McNemar's z = (b - c) / sqrt(b + c), by hand",
           f"true-class logit drop, mean over the {ITEMS}:"
           f" {bootstrap_ci(logit_drop.detach())} (bootstrap interval)"]);

# %% [markdown]
# ## Every head of every layer
#
# To map all $L \times A$ heads, `ablate_every_head` copies the cached state after layer $l-1$ $A$
# times, each copy with another head gated to 0, and runs only layers $l..L$. Beside it we put what
# lesson 08 measured by *looking*: each head's attention share on `[CLS]` and `[SEP]` over the test
# examples (`head_token_class_shares`, checked against lesson 08's `attention_shares`).

# %%
from helpers.attention.compute import TOKEN_CLASSES, attention_shares
from helpers.interventions.compute import (ablate_every_head,
                                           head_token_class_shares)

t0 = time.perf_counter()
ablation = ablate_every_head(model, classifier, run, test.labels)
t_exhaustive = time.perf_counter() - t0
assert torch.allclose(ablation.ablated[0, head_to_remove], logits_removed,
                      atol=1e-4)
acc_drop = ablation.accuracy_drop()  # [L, A]
logit_drops = ablation.logit_drop_items().mean(0)  # [L, A]
shares_items = head_token_class_shares(run)  # [N, L, A, 4]
one = trace_text(tokenizer, model, test.texts[0])
assert torch.allclose(shares_items[0].mean(1), attention_shares(one),
                      atol=1e-4)
cls_share = shares_items[..., TOKEN_CLASSES.index("[CLS]")]
sep_share = shares_items[..., TOKEN_CLASSES.index("[SEP]")]
print(f"{L * A} heads removed one at a time over {len(test)} {ITEMS} in"
      f" {t_exhaustive:.1f} s (wall)")

# %% mystnb={"figure": {"caption": "Layer \u00d7 head maps over the test examples. Top: accuracy drop (points) and mean drop of the true-class logit when that one head is set to zero, each on its own diverging scale (white 0, red worse, blue better). Bottom: the head's attention share on `[CLS]` and on `[SEP]`, averaged over queries and utterances, on one 0\u20131 scale. Compare top with bottom.", "name": "fig-12-head-maps"}}
import matplotlib.pyplot as plt

from helpers.interventions.plots import plot_head_maps

fig = plot_head_maps([
    dict(values=100 * acc_drop, cmap="RdBu_r", diverging=True,
         title="accuracy drop when the head is removed",
         cbar_label="accuracy drop (points)"),
    dict(values=logit_drops, cmap="RdBu_r", diverging=True,
         title="true-class logit drop when removed",
         cbar_label="mean logit drop"),
    dict(values=cls_share.mean(0), vmin=0, vmax=1,
         title="share of attention on [CLS] (lesson 08)",
         cbar_label="attention share (0..1)"),
    dict(values=sep_share.mean(0), vmin=0, vmax=1,
         title="share of attention on [SEP] (lesson 08)",
         cbar_label="attention share (0..1)"),
])
plt.show()

# %% [markdown]
# Now the verdict on every head: each against the unchanged model, all $L \times A$ read as **one
# family** (`HeadAblation.changes`). The fold also lists the heads the data cannot rank below the
# largest drop (`HeadAblation.tied_with`, in `head_ablation_details`): that drop is picked on the
# same examples, so it is, if anything, overstated.

# %%
from helpers.common.claims import show_finding
from helpers.interventions.compute import head_ablation_details, head_finding

head_changes = ablation.changes(margin=MARGIN)  # order of ablation.heads()
sentence, details = head_finding(head_changes, ablation.heads(), acc_drop,
                                 margin=MARGIN, n_items=len(test),
                                 tiebreak=logit_drops, items=ITEMS)
head_claim = show_finding(sentence, details + head_ablation_details(
    ablation, acc_drop, logit_drops, len(test), items=ITEMS))

# %% [markdown]
# Michel, Levy and Neubig (2019, *Are Sixteen Heads Really Better than One?*; BERT-base fine-tuned
# on MNLI, and a translation Transformer) found that most single heads could go at test time
# "without a significant loss" — not shown harmful, which is not shown harmless. The sentence above
# separates the two for the model you loaded (the bundled one is distilled, trained for sentence
# embeddings and not fine-tuned here).
#
# ### Zero or mean: what does "removing" a head mean?
#
# Setting $c_h = 0$ also removes the head's average output, a constant shift of everything above.
# **Mean ablation** puts in its mean over training tokens instead (`mean_head_contexts`,
# `ablate_every_head(..., fill=...)`): it removes what the head says about *this* input and keeps
# the constant. Where zeroing hurts much more, the damage came from the lost constant. We compare
# the two loss maps on one scale, on one test example per class (a second full map would double
# the lesson's longest computation).

# %%
from helpers.interventions.compute import (ablation_gate, first_per_class,
                                           gated_heads, mean_head_contexts)

# training utterances: for the means here, the importances in part 2
train_part = train.subset(budget.pick(5, 4))
train_run = run_cached(tokenizer, model, train_part.texts, max_length=MAX_LEN)
head_means = mean_head_contexts(model, train_run)  # {layer: [A * d]}
some = first_per_class(test.labels, 1)  # one test utterance per intent
some_run = run.subset(some)
mean_ablation = ablate_every_head(model, classifier, some_run,
                                  y[some].tolist(), fill=head_means)
zero_some = ablation.subset(some)  # the zero ablation, same utterances
zero_dl = zero_some.loss_increase_items().mean(0)
mean_dl = mean_ablation.loss_increase_items().mean(0)
gate = {1: ablation_gate(model, head_to_remove)}
with torch.no_grad(), gated_heads(model, gate, fill=head_means):
    one_mean = classifier(continue_from(model, some_run.hidden(0),
                                        some_run.attention_mask, 0),
                          some_run.attention_mask)
# one head, all layers re-run
assert torch.allclose(one_mean, mean_ablation.ablated[0, head_to_remove],
                      atol=1e-4)
print(f"mean-ablated every head on {len(some)} test {ITEMS} (one per"
      f" {CLASSES[:-1]}); means from {len(train_part)} training {ITEMS}")

# %% mystnb={"figure": {"caption": "Mean change of the cross-entropy loss per layer and head when the head's output is set to zero (left) or to its mean over training tokens (right), on one test utterance per class; one shared diverging scale, centred at 0 (red: loss rises). Compare cell by cell: a head much redder on the left hurts through its lost constant, not its information.", "name": "fig-12-zero-vs-mean"}}
bound = float(max(zero_dl.abs().max(), mean_dl.abs().max()))
fig = plot_head_maps([
    dict(values=zero_dl, title="loss change, head set to zero",
         cbar_label="mean loss change", cmap="RdBu_r", diverging=True,
         vmin=-bound, vmax=bound),
    dict(values=mean_dl, title="loss change, head set to its mean",
         cbar_label="mean loss change", cmap="RdBu_r", diverging=True,
         vmin=-bound, vmax=bound),
])
plt.show()

# %%
from helpers.interventions.compute import zero_vs_mean_finding

# (layer - 1, head) where zeroing raises the loss most beyond the mean
gap = divmod(int((zero_dl - mean_dl).argmax()), A)
mean_claim = show_finding(*zero_vs_mean_finding(zero_some, mean_ablation, gap,
                                                margin=MARGIN, items=ITEMS))

# %% [markdown]
# ### Does a striking pattern mean an important head?
#
# Clark et al. (2019, *What Does BERT Look At?*) found that in bert-base over half the attention of
# layers 6–10 lands on `[SEP]` and read this parking as a no-op. Either story — a striking pattern
# marks a head the model relies on, or a parked head does little — says a head's share ranks with
# its importance (here the loss increase on removal). We use Spearman's $\rho$ **within each
# layer**, averaged (`within_group_spearman_ci` in `pattern_finding`): the heads of a layer share
# their depth, so a correlation over all heads would rank layers (it is in the fold). The interval
# resamples the test examples; two shares are tested, so each is read at $1 - 0.05/2$. First,
# where does *this* model park its attention?

# %%
from helpers.common.stats import paired_difference_ci, verdict
from helpers.interventions.compute import parking_details, pattern_finding

# per utterance, mean over all heads: [CLS] share minus [SEP] share
parking = verdict(paired_difference_ci(cls_share.flatten(1).mean(1),
                                       sep_share.flatten(1).mean(1)),
                  a="[CLS]", b="[SEP]")
parked = {"[CLS]": cls_share.mean(0), "[SEP]": sep_share.mean(0)}
show_claim(parking, more="draws more of the heads' attention than",
           less="draws less of the heads' attention than",
           measure="draws more attention",
           units=f"{len(test)} {ITEMS}",
           values=tuple(f"{s.mean():.2f}" for s in parked.values()),
           extra=parking_details(parked))
loss_by_layer = ablation.loss_increase_items()  # [N, L, A]
level = 1 - 0.05 / 2  # two shares tested: Bonferroni
pattern_claims = {name: show_finding(*pattern_finding(
    shares_items[..., TOKEN_CLASSES.index(name)], loss_by_layer, name,
    level=level, items=ITEMS)) for name in parked}

# %% [markdown]
# ## 2. Importance from one gradient (Michel et al., 2019)
#
# Removing heads one by one costs $L \times A$ passes over the data. Michel et al. put a gate
# $\xi_h$ on every head, $\mathrm{MultiHead}(x) = \sum_h \xi_h W_O^{(h)} c_h + b_O$, and scored
# each head by how sensitive the loss is to its gate at $\xi = 1$:
#
# $$I_h = \mathbb{E}_x \left| \frac{\partial \mathcal{L}(x)}{\partial \xi_h} \right| ,$$
#
# a first-order estimate of what removing the head would do. `head_gate_gradients` puts the gates
# in the same pre-hook with `requires_grad`, one gate set per example, so one forward and one
# backward pass give every example's gradient; one is checked against a finite difference.

# %%
import torch.nn.functional as F

from helpers.interventions.compute import head_gate_gradients

t0 = time.perf_counter()
grads = head_gate_gradients(model, classifier, run, test.labels)  # [N, L, A]
t_gradient = time.perf_counter() - t0
michel = grads.abs().mean(0)  # I_h, [L, A]


def loss_with_gate(value, item=0, layer=L, h=0):
    gate = torch.ones(A)
    gate[h] = value
    with torch.no_grad(), gated_heads(model, {layer: gate}):
        last = continue_from(model, run.hidden(0)[item:item + 1],
                             mask[item:item + 1], 0)
        return F.cross_entropy(classifier(last, mask[item:item + 1]),
                               y[item:item + 1]).item()


eps = 1e-2
finite_difference = (loss_with_gate(1 + eps) - loss_with_gate(1 - eps)) / (
    2 * eps)
fd_gap = abs(finite_difference - grads[0, L - 1, 0].item())
assert fd_gap < 1e-3 + 0.05 * abs(finite_difference)
print(f"gradient: {t_gradient:.1f} s for all {L * A} heads (exhaustive"
      f" removal: {t_exhaustive:.1f} s, wall)")

# %% [markdown]
# Compared like for like: $I_h$ averages the *size* of the gradient, so it goes with the average
# *size* of the loss change on removal, $\mathbb{E}|\Delta \mathcal{L}_h|$ (a head that helps some
# examples and hurts others moves the loss a lot, though its mean change may be near 0); the
# signed pair, $\mathbb{E}[-g_h]$ against $\mathbb{E}[\Delta \mathcal{L}_h]$, is in the fold. Heads
# are ranked **within each layer**; across layers Michel et al. first divide each layer's
# importances by their $\ell_2$ norm (`normalize_by_layer`), which changes nothing within a layer.

# %%
from helpers.interventions.compute import gradient_finding, normalize_by_layer

abs_loss = loss_by_layer.abs()  # [N, L, A]: |loss change| per utterance
# the per-layer normalisation, per utterance
michel_normalized_items = grads.abs() / michel.norm(dim=1)[None, :, None]
assert torch.allclose(michel_normalized_items.mean(0),
                      normalize_by_layer(michel), atol=1e-6)
grad_claim = show_finding(*gradient_finding(
    grads, loss_by_layer, michel_normalized_items,
    seconds=(t_gradient, t_exhaustive), items=ITEMS))

# %% mystnb={"figure": {"caption": "One dot per head: gradient importance $I_h$ (mean absolute gradient of the loss with respect to the head's gate, one backward pass) against the mean absolute loss change when the head is set to zero, over the test examples; the five heads with the largest loss change are labelled layer.head. Check whether both axes rank the heads alike.", "name": "fig-12-importance-scatter"}}
from helpers.interventions.plots import plot_importance_scatter

ax = plot_importance_scatter(
    michel.flatten(), abs_loss.mean(0).flatten(),
    labels=[f"{l}.{h}" for l, h in ablation.heads()],
    xlabel="gradient importance $I_h = E|g_h|$ (one backward pass)",
    ylabel="$E|\\Delta L_h|$ when removed",
    title="head importance: E|gradient| vs E|loss change| (layer.head)")
plt.show()

# %% [markdown]
# ### Pruning heads, least important first, against many random orders
#
# Michel et al. pruned with the importance: heads removed in steps of 10% of all heads, lowest
# normalised importance first, all layers together (in BERT-base on MNLI a large part of the heads
# could go with little loss while most must stay). We do the same (`pruning_curve`), the importance
# measured on **training** examples (ranking on the test examples would flatter the order), the
# curve on two test examples of every class.
#
# An importance that means anything must keep the accuracy up longer than a **random** choice of
# heads. A random order is one draw of what the order could have been, so we need many: a rank test
# (`pruning_comparison`: the share of random orders that keep at least as much accuracy; with $R$
# orders it cannot go below $1/(R+1)$) and an interval that resamples the examples **and** the
# orders. Each order costs one pass of every example per share removed, so 100 whole curves would
# outlast this lesson: the orders are compared **at half the heads removed**, fixed before
# measuring (`pruning_outcomes` runs them as one batch). The cell prints what one order costs.

# %%
from helpers.common.tables import show_table
from helpers.interventions.compute import (PRUNE_FRACTIONS,
                                           pruning_comparison, pruning_curve,
                                           pruning_curve_finding,
                                           pruning_outcomes, pruning_rows,
                                           random_orders)

N_ORDERS = budget.pick(100, 10)  # random pruning orders
HALF = 0.5  # the share removed at which the random orders are compared
train_grads = head_gate_gradients(model, classifier, train_run,
                                  train_part.labels)
prune_importance = normalize_by_layer(train_grads.abs().mean(0))
by_importance = sorted(ablation.heads(),  # least important first
                       key=lambda k: float(prune_importance[k[0] - 1, k[1]]))
prune_items = first_per_class(test.labels, 2)  # two of every intent
prune_run = run.subset(prune_items)
prune_labels = y[prune_items].tolist()
curve_correct, curve_loss = pruning_curve(model, classifier, prune_run,
                                          prune_labels, by_importance)
assert torch.equal(curve_correct[0], base_correct[prune_items])
t0, c0 = time.perf_counter(), time.process_time()
random_correct = pruning_outcomes(model, classifier, prune_run, prune_labels,
                                  random_orders(model, N_ORDERS), (HALF,))
per_order = (time.perf_counter() - t0) / N_ORDERS
print(f"importance from {len(train_part)} training {ITEMS}; curves on"
      f" {len(prune_items)} test {ITEMS} (two of every {CLASSES[:-1]})")
print(f"{N_ORDERS} random orders at {HALF:.0%} removed: {per_order:.2f} s"
      f" per order (wall; CPU {(time.process_time() - c0) / N_ORDERS:.2f} s);"
      f" a whole curve of {len(PRUNE_FRACTIONS) - 1} shares would cost"
      f" {(len(PRUNE_FRACTIONS) - 1) * per_order:.1f} s per order")
prune_changes = outcome_changes(
    curve_correct[1:], curve_correct[0],
    [f"{f:.0%} removed" for f in PRUNE_FRACTIONS[1:]], margin=MARGIN,
    reference="nothing removed")
show_table(pruning_rows(PRUNE_FRACTIONS, curve_correct, prune_changes),
           index="removed", title=(
    f"test accuracy, least important of the {L * A} heads removed first, on"
    f" {len(prune_items)} test {ITEMS} (change: accuracy difference,"
    f" the same {ITEMS} with nothing removed)"))
k_half = PRUNE_FRACTIONS.index(HALF)
comparison = pruning_comparison(curve_correct[[k_half]], random_correct)
prune_claim = show_finding(*pruning_curve_finding(
    prune_changes, PRUNE_FRACTIONS, comparison, HALF, len(prune_items),
    items=ITEMS))

# %% mystnb={"figure": {"caption": "Test accuracy as a growing share of all heads is set to zero, on two test examples per class: orange removes the least important first (Michel et al.'s layer-normalised gradient importance, from training examples); grey dots, the random orders at half the heads removed, with their range. The y-axis is fitted to the data.", "name": "fig-12-pruning"}}
from helpers.interventions.plots import plot_pruning_curve

ax = plot_pruning_curve(
    PRUNE_FRACTIONS, curve_correct.mean(1), HALF,
    random_correct[:, 0].mean(1),
    title=f"pruning heads ({L * A} in all): Michel et al.'s order vs"
    f" {N_ORDERS} random orders")
plt.show()

# %% [markdown]
# ## 3. Skipping a layer
#
# A popular story says each layer is an expert that adds one level of understanding, so taking one
# out should break what it adds. Through the residual stream we can replace layer $l$ by the
# identity, $h^{(l)} := h^{(l-1)}$, and let the layers above run (`skip_layer`). Two measures: the
# intent accuracy of the fixed head, and lesson 09's sense separation of the ambiguous words at the
# last layer (leave-one-out nearest-centroid accuracy, refit per skip: is the information still
# there?). `polysemy_traces` loads and traces lesson 09's sentences; lesson 09's own
# `sense_separation_outcomes` reads them, its variants now "nothing skipped" and "layer $l$
# skipped". Two checks do not go through it: lesson 09's `word_by_layer`, and one outcome by hand.
#
# Each skip is compared with the unchanged model on the same items, the $L$ layers of a measure one
# family (`skip_verdicts`). The senses of one word share its centroids, so their changes are
# resampled **by word** — with as few words as the data has, that measure can never show a skip
# equivalent within a one-point margin. Skipping layer $L$ under the fixed head is set apart: the
# head never saw layer $L-1$'s vectors, so a drop there is a mismatch, not evidence about layer $L$.

# %%
from helpers.context.compute import sense_separation_outcomes, word_by_layer
from helpers.interventions.compute import (polysemy_traces, run_from_traces,
                                           sense_groups, skip_every_layer,
                                           skip_finding, skip_rows,
                                           skip_verdicts, word_vectors)

skip_logits = skip_every_layer(model, run, readout=classifier)  # [L + 1, N, C]
skip_correct = (skip_logits.argmax(-1) == y).float()  # row 0: nothing skipped
poly = polysemy_traces(tokenizer, model, budget.pick(None, 3),
                       language=language)
for word in poly.left_out:
    print(f"note: the tokenizer maps {word!r} to {tokenizer.unk_token}; it is"
          " left out.")
sense_hits = None
if poly.jobs:
    vectors = word_vectors(skip_every_layer(
        model, run_from_traces(poly.traces), progress=False), poly.spans)
    w0 = poly.jobs[0][0]
    assert torch.allclose(vectors[0, 0],
                          word_by_layer(poly.traces[0], w0)[L], atol=1e-4)
    # {word: {sense: [5, L + 1, H]}}: each sentence's vector per variant
    groups = sense_groups(vectors, poly)
    outcomes = {w: sense_separation_outcomes(g).float()  # [n, L + 1]
                for w, g in groups.items()}
    sense_hits = torch.cat(list(outcomes.values()))
    sense_words = [w for w, o in outcomes.items() for _ in range(len(o))]
    own, *others = groups[w0].values()  # held out: sentence 0, first sense
    centroids = torch.stack([own[1:].mean(0)] + [o.mean(0) for o in others])
    by_hand = (F.cosine_similarity(own[0][None], centroids, dim=-1)
               .argmax(0) == 0).float()
    assert torch.equal(by_hand, outcomes[w0][0])
print(f"{len(poly.words)} ambiguous words, {len(poly.jobs)} sentences")
intent_name = f"{CLASSES[:-1]} accuracy of the fixed head"
items = {intent_name: (skip_correct, None, "test accuracy",
                       1 / test.num_classes)}
if sense_hits is not None and len(poly.words) >= 2:  # resample >= 2 words
    items["sense separation at the last layer (lesson 09)"] = (
        sense_hits.T, sense_words, "leave-one-out accuracy",
        1 / len(next(iter(poly.words.values()))))
# outcome_changes of every skip; panels: (unchanged, skipped, ylabel, chance)
skip_changes, panels = skip_verdicts(items, margin=MARGIN)
skip_claims = {}
for name, changes in skip_changes.items():
    mismatch = name == intent_name
    show_table(skip_rows(changes, head_mismatch=mismatch),
               index="layer skipped", title=f"{name}: nothing skipped"
               f" {panels[name][0].percent()}"
               f" ({items[name][0].shape[1]} items)")
    skip_claims[name] = show_finding(*skip_finding(name, changes,
                                                   head_mismatch=mismatch))

# %% mystnb={"figure": {"caption": "Each encoder layer replaced by the identity in turn: left, test accuracy of the fixed intent head; right, lesson 09's leave-one-out sense accuracy at the last layer, refit per skip. Whiskers: each accuracy's interval (over utterances; resampling words for senses); grey band: nothing skipped; dotted: chance. Skipping the last layer feeds the fixed head vectors it never saw.", "name": "fig-12-skip-layers"}}
from helpers.interventions.plots import plot_skip_effects

fig = plot_skip_effects(panels)
plt.show()

# %% [markdown]
# A skip that lowers a measure costs something measurable on these items — weaker than "the model
# cannot do without it" (read the accuracy left in the same row); "cannot tell" is no evidence
# that the layer can go.
#
# ## 4. Activation patching: when does "bank" (or 行) decide its sense?
#
# Lesson 09 found where the senses of each ambiguous word separate; patching asks where the
# decision *lives*. We run a money sentence, but at layer $l$ overwrite its "bank" vector with a
# river sentence's, and let the layers above run; lesson 09's probe then reads the final "bank"
# **at the patched position** (nearest sense centroid of the *other* sentences). If it reads
# "river", the word's own vector carried the sense at layer $l$; if "money", the layers above
# rebuilt it from the context. `patch_every_word` does this for every sentence pair of every word.
# With a Chinese model the words are Chinese (`data/polysemy_zh.json`, e.g. 行, "okay" or "row");
# a Chinese BERT reads characters, so a word of two characters (意思) is found as its run of
# character tokens, patched and read as both (its vector: their mean).
# At the last layer the probe reads the donor's vector itself, so a control reads the **rest of the
# sentence**: it follows the patch only if the layers above spread the patched sense. A word's pairs
# share its ten sentences, so the shares resample **words** (`word_cluster_shares`), and each
# patched layer asks whether the share lies above one half (`share_verdicts`, the $L+1$ layers one
# family).

# %%
from helpers.interventions.compute import (patch_every_word, patch_finding,
                                           patch_rows, probe_finding,
                                           share_verdicts, word_cluster_shares)

patch = patch_every_word(model, poly)
print("patched words:", ", ".join(f"{w} ({' / '.join(p['senses'])})"
                                  for w, p in patch.items()))
probe_works, patch_claim = False, None
if len(patch) >= 2:
    pooled, pooled_boots, word_shares = word_cluster_shares(patch, "follows")
    patch_verdicts = share_verdicts(pooled, pooled_boots, word_shares)
    context_verdicts = share_verdicts(*word_cluster_shares(patch,
                                                           "follows_context"))
    control = share_verdicts(*word_cluster_shares(patch, "control"))[0]
    probe_works = control.kind == "above"
    probe_claim = show_finding(*probe_finding(
        control, sum(len(p["pairs"]) for p in patch.values()), len(patch)))
    show_table(patch_rows(patch_verdicts, context_verdicts),
               index="patched layer", title=(
        "share of pairs following the patch, per patched layer, read at the"
        " patched word and, as a control, from the rest of the sentence"
        f" ({len(patch)} words resampled)"))
    if probe_works:
        patch_claim = show_finding(*patch_finding(
            patch_verdicts, context_verdicts, len(patch)))
else:
    print("fewer than two ambiguous words of the data are in this vocabulary:"
          " patching is skipped.")

# %% mystnb={"figure": {"caption": "Share of sentence pairs whose final word vector lesson 09's probe reads as the patched donor's sense, by the layer patched (emb = embeddings): grey, single words; black, all words, with the interval its verdict reads (resampling words, all layers judged together); orange dashed, the probe read from the rest of the sentence. Following is trivial at the last layer; find where black first clears the dotted half line.", "name": "fig-12-patching"}}
from helpers.interventions.plots import plot_patch_curves

if len(patch) >= 2:
    ax = plot_patch_curves(  # the intervals the verdicts read
        {w: p["follows"].mean(0) for w, p in patch.items()},
        [v.share for v in patch_verdicts], chance=0.5,
        title="does the final vector follow the patched sense?",
        control=[v.share for v in context_verdicts],
        control_label="rest of the sentence (all words)")
    plt.show()

# %% [markdown]
# Patching at the embeddings (layer 0) swaps almost nothing — the word piece is the same, only its
# position embedding differs — so there we expect the context to win. Patching the last layer
# replaces the very vector the probe reads, so there "follows the patch" is guaranteed and says
# nothing. The first layer that a majority is shown to follow is where, pooled over words, the
# word's own vector carries its sense strongly enough that the layers above no longer overwrite it
# from the context. Compare that layer with where lesson 09's sense separation rose. (The grey lines
# are single words, each from a handful of sentences: read them as noisy.)
#
# ## 5. The same experiments in the tools researchers use
#
# Research code mostly uses libraries instead of hand-written hooks: [nnsight](https://nnsight.net)
# (Fiotto-Kaufman et al., 2025) edits any module's input or output inside `with model.trace(...)`;
# [TransformerLens](https://github.com/TransformerLensOrg/TransformerLens) names every activation
# with a hook point (`blocks.1.attn.hook_z`: the heads' context vectors); [Captum](https://captum.ai)
# implements attributions. We redo section 1's head removal (on a few examples, one a *pair* packed
# as BERT's two segments) and section 4's patch (after the middle layer) with each, and compare the
# last hidden state at every real token with `torch.allclose`. Captum's two rows check lesson 13's
# gradient × input and Integrated Gradients (`helpers/attribution/compute.py`, `gradients.py`). Each library gets
# its own copy of the model (both rewrite what they wrap); without them, their rows read "not
# installed" (`parity_checks`, `helpers/parity/compute.py`).

# %%
from helpers.parity.compute import parity_checks, parity_lines

# three utterances and one pair of utterances as BERT's two segments
ablation_items = test.texts[:3] + [tuple(test.texts[3:5])]
# the first sentence of each of the first word's two senses
w0, donor, target = None, None, None
if poly.jobs:
    w0 = poly.jobs[0][0]
    donor, target = (poly.of(w0, s)[0] for s in list(poly.words[w0])[:2])
parity = parity_checks(
    tokenizer, model, classifier, ablation_items=ablation_items,
    layer=1, head=head_to_remove, donor=donor, target=target, word=w0,
    patch_layer=L // 2,
    attribution=trace_text(tokenizer, model, min(test.texts, key=len)))
parity_table = show_table(parity.rows(), index="experiment", title=(
    "one experiment, by hand and in a library: torch.allclose(library,"
    " course) on the last hidden state at every real token (attributions:"
    " per token)"))
# rows equal, the libraries' gaps with BERT, versions (parity_lines)
print("\n".join(parity_lines(parity)))

# %% [markdown]
# The libraries reach the same places the course's hooks do. In nnsight (`nnsight_head_ablation`)
# the removal is an edit of the context entering `attention.output`; in TransformerLens
# (`transformer_lens_head_ablation`) a function on a named hook point:
#
# ```python
# with nn_model.trace(**inputs):
#     nn_model.encoder.layer[l - 1].attention.E_output.input[..., h * d:(h + 1) * d] = 0
#     last = nnsight.save(nn_model.output.last_hidden_state)
#
# def remove(z, hook):  # z: [batch, pos, head, d_head]
#     z[:, :, h] = 0
#     return z
# bridge.run_with_hooks(ids, fwd_hooks=[(f"blocks.{l - 1}.attn.hook_z", remove)])
# ```
#
# The known limits listed under the table (each worked around, none a failure of this run) are
# the price of BERT in tools built for decoders.
#
# ## 6. Explore: remove a head, skip a layer
#
# For `SENTENCE`, every single-head removal and every layer skip runs once; then the explorer only
# looks results up. Choose a layer and a head (or "skip the whole layer"): the bars show the new
# logits of a dozen intents against the unchanged ones (black ticks), and the map shows how far the
# originally predicted logit moves for every choice at once (the skip column, when it moves further,
# is clipped and written in its cells). A logit can rise while the prediction flips: another
# class's may rise more; the printout spells out each skip that flips it.

# %% mystnb={"figure": {"caption": "Top: the lesson's sentence's logits with the chosen head removed or layer skipped, for every intent some change makes the prediction plus the highest others; black ticks: unchanged logits; orange: the prediction. Bottom: change of the originally predicted logit for every head removal and layer skip (last column), the current choice framed. The controls pick a layer and a head, or skip the layer.", "name": "fig-12-explorer"}}
from helpers.interventions.compute import flip_lines, sentence_interventions
from helpers.interventions.widgets import InterventionExplorer

effects = sentence_interventions(tokenizer, model, classifier, SENTENCE)
with torch.no_grad():
    z = classifier(trace.hidden(L)[None], torch.ones(
        1, trace.seq_len, dtype=torch.long, device=model.device))[0]
assert torch.allclose(effects.base, z, atol=1e-4)
# how many removals and which skips flip the prediction (flip_lines)
print("\n".join(flip_lines(effects, test.names)))
pred = int(effects.base.argmax())
biggest = divmod(
    int((effects.heads[..., pred] - effects.base[pred]).abs().argmax()), A)
explorer = InterventionExplorer(effects, test.names, layer=biggest[0] + 1,
                                head=biggest[1])
explorer

# %% [markdown]
# ## What the interventions say about the stories
#
# Each popular story beside this run's plain sentence from above and the published finding with its
# paper and model (`claim_rows`, `helpers/interventions/findings.py`); the statistics behind every
# row are folded beneath. Run the lesson with another `MODEL` to see whether the findings travel.

# %%

from helpers.common.claims import Claim, show_scorecard
from helpers.interventions.compute import claim_rows, join_claims

parks_on = "[CLS]" if parking.kind == "higher" else "[SEP]"
rows = claim_rows({
    "heads": head_claim, "mean": mean_claim, "gradient": grad_claim,
    "parking": join_claims(Claim(f"This model parks more attention on"
                                 f" {parks_on}.", [parking.text]),
                           pattern_claims[parks_on]),
    "pruning": prune_claim, "patch": patch_claim,
    "skip": join_claims(*skip_claims.values())})
# the scorecard and its fold: show_scorecard in helpers/common/claims.py
claims = show_scorecard(rows, loaded.choice.name)

# %% [markdown]
# ## Summary
#
# * A head is removed exactly by zeroing its context vector before the output projection (a
#   forward pre-hook on `attention.output`); layer $l$'s change re-runs only layers $l..L$, which
#   makes the full $L \times A$ map cheap enough for a CPU. Mean ablation keeps the head's constant.
# * Every change is paired on the same examples, read as one family when many are tested, and
#   called harmless only inside a margin stated first; otherwise "we cannot tell". The more
#   comparisons judged together, the wider the margin a test set can ever confirm: check it first.
# * Looking is not testing: a head's attention pattern is ranked against the damage its removal
#   does within each layer, since a correlation over all heads also ranks the layers.
# * Michel et al.'s one-gradient importance is compared with removal like for like; an order is
#   judged against many random orders, each a draw it could have been (a rank test, and an interval
#   over both the examples and the orders).
# * Skipping layers and patching word vectors test stories about layers directly; patched pairs
#   are resampled by word, and a control reads the rest of the sentence.
# * The same interventions can be written with nnsight and TransformerLens; whether they gave
#   the same numbers here is the parity table's verdict (a library that is not installed says
#   so). Lesson 13 turns from changing the model to explaining one decision.

# %%
# in this run: the parity table's verdict (parity_lines, as printed above)
print("Libraries:", parity_lines(parity)[0] + ".")

# %% [markdown]
#
# ## Exercises
#
# Each exercise opens with its rating (difficulty, importance, time). The checkers
# (`helpers/exercises/lesson12.py`) grade the answer and hint, never print the answer; a prediction
# is never graded, only set beside the measurement.

# %% [markdown]
# ### Exercise 1: mean-ablate a head with your own hook
#
# Difficulty ●●●○○ · Importance ●●●●○ · ~20 min
#
# Write a forward pre-hook for `model.encoder.layer[l - 1].attention.output` that replaces head
# `h`'s $d$ columns of the context by its mean, `head_means[l][h * d:(h + 1) * d]`, for the head
# where zeroing hurts most beyond the mean: layer `gap[0] + 1`, head `gap[1]`. With it registered,
# run the `some_run` examples through every layer (`continue_from(model, some_run.hidden(0),
# some_run.attention_mask, 0)`, then `classifier`) and give the **mean drop of the true-class
# logit** (unchanged minus mean-ablated; labels `y[some]`): a float. Remove the hook in a `finally`.
#
# *Reflection (not checked):* compare with the same head set to zero
# (`zero_some.logit_drop_items()`): which carries the damage, its information or its constant?

# %%
from helpers.exercises.lesson12 import (check_exercise_1, check_exercise_2,
                                        check_exercise_3, check_exercise_4)

answer_1 = None  # your code here: a float, the mean true-class logit drop
check_exercise_1(answer_1, mean_ablation, zero_some, gap)

# %% [markdown]
# ### Exercise 2: predict, then measure — the most important heads first
#
# Difficulty ●●○○○ · Importance ●●●○○ · ~15 min
#
# Turn section 2's order round: remove the **most** important heads first (`by_importance[::-1]`).
# **First predict** where the accuracy at half the heads removed lands against section 2's random
# orders — `"below"` the lowest, `"inside"` their range or `"above"` the highest — in
# `prediction_2`. **Then measure** it: the accuracy (0 to 1) on `prune_run` / `prune_labels` with
# `pruning_curve(..., fractions=(HALF,))`.

# %%
prediction_2 = None  # "below", "inside" or "above", written before measuring
answer_2 = None  # your code here: a float, the accuracy at HALF removed
check_exercise_2(prediction_2, answer_2, model, classifier, prune_run,
                 prune_labels, by_importance, HALF, comparison)

# %% [markdown]
# ### Exercise 3: the resampling unit
#
# Difficulty ●●●○○ · Importance ●●●●○ · ~15 min
#
# At patched layer 1, how much narrower would the pooled interval of the share following the patch
# be if the pairs were independent? Stack every word's `patch[w]["follows"][:, 1]`, take
# `bootstrap_ci` over the pairs (its defaults) and give its width divided by the width of the
# lesson's `pooled[1]` (resampling words): a float.
#
# *Reflection (not checked):* which interval would you trust to travel to new ambiguous words?

# %%
# your code here: a float, (pair-bootstrap width) / (word-bootstrap width)
answer_3 = None
check_exercise_3(answer_3, patch)

# %% [markdown]
# ### Exercise 4: predict, then measure — which skip costs the true class most?
#
# Difficulty ●●○○○ · Importance ●●●○○ · ~10 min
#
# A logit moves before an answer flips. **First predict**: skipping which layer (from 1) lowers the
# true-class logit most on average over the test items? Write it in `prediction_4`. **Then measure**
# it from `skip_logits` (`[L + 1, N, C]`, row 0 nothing skipped, row `l` layer `l` skipped) and `y`:
# each item's true-class logit unskipped minus skipped, averaged over the items.
#
# *Reflection (not checked):* if it is not the layer whose skip costs the most accuracy, what does
# that say about the items whose answer did not flip?

# %%
prediction_4 = None  # a layer (from 1), written before measuring
answer_4 = None  # your code here: an int, counted from 1
check_exercise_4(prediction_4, answer_4, skip_logits, y)
