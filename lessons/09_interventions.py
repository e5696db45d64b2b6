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
# Lessons 04–07 *looked*: at attention weights, similarities, probes. What they found is
# correlational — a head with a striking pattern, a layer where senses separate. The
# stronger test of what a part of the model does is to **change it and measure what
# breaks**. In this lesson we
#
# 1. remove one attention head at a time and measure the classifier's accuracy;
# 2. estimate every head's importance from a single gradient (Michel et al., 2019) and
#    check that estimate against the exhaustive removal;
# 3. skip whole layers;
# 4. move one word's vector from one sentence into another and see when the model follows;
# 5. ask four attribution methods which words drove one decision, and check them against
#    removing the words;
# 6. explore all of it for one sentence with a widget.
#
# Each experiment tests a popular story, and every verdict below is printed by the run
# itself, with an interval, for the model you load.
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
#
# `MODEL` names the checkpoint (`None`: the course chooses); `SENTENCE` is the request whose
# decision we attribute to its words and explore at the end.
#
# `BUDGET` sizes the expensive work (`None`: the course chooses, `"full"` on the bundled model; `"quick"`: fewer
# test items and seeds, for a fast check or a large model on a CPU; `choose_budget` in `helpers/common/budget.py`).

# %% tags=["parameters"]
MODEL = None
SENTENCE = "Please set a timer for twenty minutes so the bread does not burn."
BUDGET = None  # None: the course chooses; "full" or "quick" (fewer items and seeds)

# %% [markdown]
# ## The model, the data and one classifier, trained once
#
# All experiments judge the model by one classifier: lesson 07's linear head on the
# **mean-pooled last layer** — the average of the last hidden state over the real tokens.
# Whether that is the model's own sentence vector depends on the checkpoint: a
# sentence-embedding model such as the bundled all-MiniLM-L6-v2 was trained to produce its
# sentence vectors by mean pooling, while a plain BERT checkpoint such as bert-base-uncased
# was never trained to pool its tokens by the mean. The second cell prints which holds for the checkpoint you loaded, read
# from its own sentence-transformers configuration (lesson 00's `checkpoint_facts`). We
# train the head once on the intent training split (`train_head` in
# `helpers/classify/compute.py`) and never retrain it: every intervention below changes the
# encoder under a fixed head. Every utterance is cut to `MAX_LEN` tokens, in every cell
# below; the first cell counts the utterances that are longer and warns if there are any.

# %%
import time
import warnings

import numpy as np
import torch

from helpers.classify.compute import extract_features, train_head
from helpers.common.data import load_intents
from helpers.common.stats import accuracy_ci, bootstrap_ci, differs
from helpers.interventions.compute import count_truncated
from helpers.common.budget import choose_budget
from helpers.model.loading import checkpoint_facts, load_model

MAX_LEN = 32  # tokens per utterance, [CLS] and [SEP] included; longer utterances are cut
loaded = load_model(MODEL)
tokenizer, model = loaded
budget = choose_budget(BUDGET, model)
L, A, H = model.config.num_hidden_layers, model.config.num_attention_heads, model.config.hidden_size
train, test = load_intents("train"), load_intents("test")
n_cut = count_truncated(tokenizer, train.texts + test.texts, MAX_LEN)
if n_cut:
    warnings.warn(f"{n_cut} utterances are longer than MAX_LEN = {MAX_LEN} tokens and are cut.", stacklevel=1)
feats_train = extract_features(tokenizer, model, train.texts, max_length=MAX_LEN)
head = train_head(feats_train.layer(L, "mean"), train.labels, train.num_classes, seed=0)
print(f"{L} layers x {A} heads, hidden size {H}; {len(train)} train / {len(test)} test utterances, "
      f"{train.num_classes} intents; {n_cut} utterances longer than MAX_LEN = {MAX_LEN} tokens")

# %%
pooling = checkpoint_facts(loaded).pooling  # None: no sentence-transformers configuration
native = pooling is not None and "mean_tokens" in pooling
print(f"{loaded.choice.name}: " + (
    "its sentence-transformers configuration pools the mean of the tokens, so the mean-pooled last layer "
    "is the sentence vector it was trained to produce" if native else
    f"its sentence-transformers configuration pools by {', '.join(pooling) or 'nothing'}, so mean pooling is "
    "our choice here, not the model's" if pooling is not None else
    "no sentence-transformers configuration: it was not trained to produce a sentence vector, and mean "
    "pooling is our choice here, not the model's"))

# %% [markdown]
# ## Running only the layers above a change
#
# An intervention at layer $l$ leaves layers $1..l-1$ untouched, so we run the test set
# once, keep every hidden state, and later re-run only the layers above the change.
# `run_cached` and `continue_from` (both in `helpers/interventions/compute.py`) do this; a
# `SentenceHead` applies the pooling and the head to a last hidden state. Two checks: running
# all layers again from the embeddings reproduces the last layer, and the pooled vectors
# equal lesson 07's `extract_features`, computed separately.
#
# Numbering, once for the whole lesson: **layers count from 1** -- layer 1 is
# `model.encoder.layer[0]`, layer $L$ is `model.encoder.layer[L - 1]`, and "layer 0" is the
# embedding output -- while **heads count from 0**, as their columns in the weight matrices do.

# %%
from helpers.interventions.compute import SentenceHead, continue_from, run_cached

classifier = SentenceHead(head, pooling="mean")
run = run_cached(tokenizer, model, test.texts, max_length=MAX_LEN, attentions=True)
feats_test = extract_features(tokenizer, model, test.texts, max_length=MAX_LEN, progress=False)
mask = run.attention_mask
again = continue_from(model, run.hidden(0), mask, after_layer=0)
assert torch.allclose(again[mask.bool()], run.hidden(L)[mask.bool()], atol=1e-4)
assert torch.allclose(head(feats_test.layer(L, "mean")), classifier(run.hidden(L), mask), atol=1e-4)
y = torch.tensor(test.labels, device=model.device)
base_correct = (classifier(run.hidden(L), mask).argmax(-1) == y).float()
base_acc = accuracy_ci(base_correct)
how = ("the rule of three: every utterance is right" if base_correct.min() == 1
       else "a bootstrap over the utterances")
print(f"test accuracy of the head, nothing changed: {base_acc.percent()} (95% interval over the {len(test)} "
      f"test utterances, {how}; chance {1 / test.num_classes:.0%})")

# %% [markdown]
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
    context = args[0].clone()  # [batch, seq, A * d]: head h is columns h*d .. (h+1)*d - 1
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
handle = layer_module.attention.output.register_forward_pre_hook(zero_head_hook)
try:
    hooked = layer_module.attention(x[None])[0][0]
finally:
    handle.remove()
assert torch.allclose(hooked, by_hand, atol=1e-5)
print(f"layer 1 with head {head_to_remove} removed == by hand; max change of the attention output "
      f"{(hooked - layer_module.attention(x[None])[0][0]).abs().max():.3f}")

# %% [markdown]
# `ablate_head(model, layer, head)` in `helpers/interventions/compute.py` registers such a
# hook while a `with` block runs. Removing one head of the first layer and running the whole
# test set, we measure two things per utterance: whether it is still classified correctly,
# and how far the logit of its **true** class falls.
#
# Both models are measured on the *same* utterances, so we compare them **paired**: the
# interval comes from resampling the utterances once for both (`paired_accuracy_difference`
# in `helpers/interventions/compute.py`, built on `paired_difference_ci` in
# `helpers/common/stats.py`). When not a single utterance changes, a bootstrap would give an
# interval of zero width; the rule of three bounds the unseen rate of changes by $3/n$ instead.

# %%
from helpers.interventions.compute import ablate_head, paired_accuracy_difference

enc = tokenizer(test.texts, padding=True, truncation=True, max_length=MAX_LEN, return_tensors="pt").to(model.device)
with torch.no_grad(), ablate_head(model, 1, head_to_remove):
    logits_removed = classifier(model(**enc).last_hidden_state, enc["attention_mask"])
logits_base = classifier(run.hidden(L), mask)
removed_correct = (logits_removed.argmax(-1) == y).float()
changed = int((removed_correct != base_correct).sum())
logit_drop = logits_base.gather(1, y[:, None])[:, 0] - logits_removed.gather(1, y[:, None])[:, 0]
print(f"layer 1, head {head_to_remove} removed: {changed} of {len(test)} utterances change their outcome; "
      f"accuracy drop {paired_accuracy_difference(base_correct, removed_correct).percent()} (paired), "
      f"true-class logit drop {bootstrap_ci(logit_drop.detach())}")

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
assert torch.allclose(ablation.ablated[0, head_to_remove], logits_removed, atol=1e-4)
acc_drop, logit_drops = ablation.accuracy_drop(), ablation.logit_drop_items().mean(0)
print(f"{L * A} heads removed one at a time over {len(test)} utterances in {t_exhaustive:.1f} s (wall)")

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
assert torch.allclose(shares_items[0].mean(1), attention_shares(one), atol=1e-4)
cls_share = shares_items[..., TOKEN_CLASSES.index("[CLS]")]
sep_share = shares_items[..., TOKEN_CLASSES.index("[SEP]")]

# %%
import matplotlib.pyplot as plt

from helpers.interventions.plots import plot_head_maps

fig = plot_head_maps([
    dict(values=100 * acc_drop, title="accuracy drop when the head is removed",
         cbar_label="accuracy drop (points)", cmap="RdBu_r", diverging=True),
    dict(values=logit_drops, title="true-class logit drop when removed", cbar_label="mean logit drop",
         cmap="RdBu_r", diverging=True),
    dict(values=cls_share.mean(0), title="share of attention on [CLS] (lesson 05)",
         cbar_label="attention share (0..1)", cmap="magma", vmin=0, vmax=1),
    dict(values=sep_share.mean(0), title="share of attention on [SEP] (lesson 05)",
         cbar_label="attention share (0..1)", cmap="magma", vmin=0, vmax=1),
])
plt.show()

# %% [markdown]
# The two lower maps share one colour scale, 0 to 1, so their colours compare directly. Below,
# each head's accuracy drop is paired on the test utterances as above. Rather than crown the
# head with the largest drop, we count the heads that the paired difference cannot rank below
# it: for every head, its drop and the largest drop are measured on the same utterances, so
# we take the difference per utterance, resample the utterances once for both, and call the
# head tied when that interval contains 0 (`HeadAblation.tied_with`). Two overlapping
# intervals would not do: the paired difference is sharper, because both drops share the
# utterances' noise.

# %%
drop_cis = {(l, h): ablation.drop_interval(l, h) for l in range(1, L + 1) for h in range(A)}
hurting = [k for k, ci in drop_cis.items() if ci.low > 0]
worst = max(drop_cis, key=lambda k: (drop_cis[k].estimate, float(logit_drops[k[0] - 1, k[1]])))
tied = ablation.tied_with(*worst)  # paired on the same utterances; includes the worst head itself
tied_text = (f"only layer {worst[0]}, head {worst[1]}" if len(tied) == 1 else
             ", ".join(f"{l}.{h}" for l, h in tied) if len(tied) <= 8 else f"{len(tied)} of {L * A} heads")
print(f"one utterance is {100 / len(test):.1f} points of accuracy on these {len(test)} test utterances")
print(f"largest accuracy drop {drop_cis[worst].percent()} (layer {worst[0]}, head {worst[1]}); "
      f"heads the paired difference cannot rank below it (layer.head): {tied_text}")
print(f"heads whose removal lowers accuracy with an interval above 0: {len(hurting)} of {L * A}")
print(f"true-class logit drop over all heads: median {logit_drops.median():.3f}, largest {logit_drops.max():.3f}")

# %% [markdown]
# Michel, Levy and Neubig (2019, *Are Sixteen Heads Really Better than One?*) removed single
# heads from BERT-base fine-tuned on MNLI (and from a Transformer translation model) at test
# time: most single heads could go without a significant loss of accuracy. Read the
# printout to see how far that holds for this model and task, and note how small our test
# set is: the printout says how many points of accuracy a single utterance is worth.
#
# ### Does a striking pattern mean an important head?
#
# Lesson 05 measured how much attention lands on `[CLS]` and `[SEP]`; Clark et al. (2019,
# *What Does BERT Look At?*) found that in bert-base over half the attention of layers 6–10
# lands on `[SEP]` (early layers attend much to `[CLS]`) and read this parking as a no-op.
# First, where does *this* model park its attention?

# %%
from helpers.common.stats import paired_difference_ci

parked = {name: share.mean(0) for name, share in [("[CLS]", cls_share), ("[SEP]", sep_share)]}  # [L, A] each
for name, s in parked.items():
    print(f"{name}: mean share over heads {s.mean():.2f}, largest {s.max():.2f}; "
          f"heads with more than half their attention there: {int((s > 0.5).sum())} of {L * A}")
# per utterance, mean over all heads: [CLS] share minus [SEP] share, paired over the utterances
cls_minus_sep = paired_difference_ci(cls_share.flatten(1).mean(1), sep_share.flatten(1).mean(1))
park_token = "[CLS]" if cls_minus_sep.low > 0 else "[SEP]" if cls_minus_sep.high < 0 else None
print(f"[CLS] share - [SEP] share, mean over heads, paired over the utterances: {cls_minus_sep}\n-> "
      + ("no difference between the two" if park_token is None else f"this model parks more attention on {park_token}")
      + ("" if park_token is None else ", as Clark et al. found for bert-base" if park_token == "[SEP]" else
         ", unlike the middle layers of Clark et al.'s bert-base, where [SEP] collects it"))

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
# does not vary has no $\rho$ and is left out; the printout says how often.)

# %%
from helpers.interventions.compute import spearman_ci, within_group_spearman_ci

loss_by_layer = ablation.loss_increase_items()  # [N, L, A]: per utterance, per head
loss_items = loss_by_layer.flatten(1)  # [N, L * A]
pattern_rho = {}
for name, share in [("[CLS]", cls_share), ("[SEP]", sep_share)]:
    across = spearman_ci(share.flatten(1), loss_items)
    rho = pattern_rho[name] = within_group_spearman_ci(share, loss_by_layer)
    verdict = ("undefined: one side does not vary" if rho is None else
               "no evidence of a link within layers (the interval contains 0)" if rho.contains(0.0) else
               f"within a layer, heads with more attention on {name} matter MORE" if rho.low > 0 else
               f"within a layer, heads with more attention on {name} matter LESS")
    undefined = f" (undefined in {rho.undefined:.0%} of resamples)" if rho and rho.undefined else ""
    print(f"share on {name} vs loss increase when removed:\n"
          f"   over all {L * A} heads (ranks layers too): rho = {across if across else 'n/a'}\n"
          f"   within each layer: " + ("n/a" if rho is None else
                                       ", ".join(f"{l}: {r:+.2f}" for l, r in enumerate(rho.per_group, start=1)))
          + f"\n   mean within layers: rho = {rho if rho else 'n/a'}{undefined}\n-> {verdict}")

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
# set per utterance so that one forward and one backward pass give every utterance's
# gradient. We check one gradient against a finite difference of the loss.

# %%
import torch.nn.functional as F

from helpers.interventions.compute import head_gate_gradients, gated_heads

t0 = time.perf_counter()
grads = head_gate_gradients(model, classifier, run, test.labels)  # [N, L, A]
t_gradient = time.perf_counter() - t0
michel = grads.abs().mean(0)  # I_h, [L, A]


def loss_with_gate(value, item=0, layer=L, h=0):
    gate = torch.ones(A)
    gate[h] = value
    with torch.no_grad(), gated_heads(model, {layer: gate}):
        last = continue_from(model, run.hidden(0)[item:item + 1], mask[item:item + 1], 0)
        return F.cross_entropy(classifier(last, mask[item:item + 1]), y[item:item + 1]).item()


eps = 1e-2
finite_difference = (loss_with_gate(1 + eps) - loss_with_gate(1 - eps)) / (2 * eps)
assert abs(finite_difference - grads[0, L - 1, 0].item()) < 1e-3 + 0.05 * abs(finite_difference)
print(f"gradient: {t_gradient:.1f} s for all {L * A} heads (exhaustive removal: {t_exhaustive:.1f} s, wall)")

# %% [markdown]
# How well does the one-gradient estimate rank the heads the way the exhaustive removal
# does? Each dot below is a head.

# %%
from helpers.interventions.plots import plot_importance_scatter

grad_vs_loss = spearman_ci(grads.abs().flatten(1), loss_items)
labels = [f"{l}.{h}" for l in range(1, L + 1) for h in range(A)]
ax = plot_importance_scatter(michel.flatten(), loss_items.mean(0), labels=labels,
                             xlabel="gradient importance $I_h$ (one backward pass)",
                             ylabel="loss increase when removed",
                             title="head importance: gradient estimate vs removal (labels: layer.head)")
plt.show()
undefined = ""
if grad_vs_loss and grad_vs_loss.undefined:
    undefined = f" (undefined in {grad_vs_loss.undefined:.0%} of resamples)"
print(f"Spearman rho, gradient importance vs loss increase on removal: "
      f"{grad_vs_loss if grad_vs_loss else 'n/a (no variation)'}{undefined}")

# %% [markdown]
# An interval well above 0 means the cheap gradient ranks heads much like the exhaustive
# removal; read the printout for how well on this model. The two can differ because the
# gradient describes an infinitesimal change of the gate and removal is a jump from 1 to 0.
# We rank by the loss increase, not by the accuracy drop: the accuracy drop moves only when
# a prediction flips, so all heads whose removal flips none tie at 0 and a rank correlation
# would mostly rank ties; the loss increase moves with every logit.
#
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
#   sentences per sense.

# %%
from helpers.common.data import load_polysemy
from helpers.common.progress import progress
from helpers.interventions.compute import run_from_traces, skip_every_layer, word_vectors
from helpers.model.tokens import is_unknown

skipped = skip_every_layer(model, run)  # [L + 1, N, T, H]: index 0 nothing skipped
skip_correct = torch.stack([(classifier(s, mask).argmax(-1) == y).float() for s in skipped])  # [L + 1, N]
all_words = {**load_polysemy(), **load_polysemy("polysemy_more.json")}  # as lesson 06
polysemy = {w: s for w, s in all_words.items() if not is_unknown(tokenizer, w)}
for word in all_words:
    if word not in polysemy:
        print(f"note: the tokenizer maps {word!r} to {tokenizer.unk_token}; it is left out.")
jobs = [(w, s, x) for w, senses in polysemy.items() for s, xs in senses.items() for x in xs]
poly_traces = [trace_text(tokenizer, model, x) for _, _, x in progress(jobs, desc="tracing polysemy sentences")]
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
    vectors = word_vectors(skip_every_layer(model, poly_run, progress=False), spans)  # [L + 1, n, H]
    assert torch.allclose(vectors[0, 0], word_by_layer(poly_traces[0], jobs[0][0])[L], atol=1e-4)
    groups = {w: {s: vectors[:, [i for i, j in enumerate(jobs) if j[:2] == (w, s)]].transpose(0, 1)
                  for s in senses} for w, senses in polysemy.items()}  # {word: {sense: [5, L + 1, H]}}
    outcomes = {w: sense_separation_outcomes(g).float() for w, g in groups.items()}  # {word: [n, L + 1]}
    sense_hits = torch.cat(list(outcomes.values()))
    word0, senses0 = next(iter(groups.items()))
    own, *others = senses0.values()  # held out: sentence 0 of the first word's first sense
    centroids = torch.stack([own[1:].mean(0)] + [o.mean(0) for o in others])  # [senses, L + 1, H]
    by_hand = (F.cosine_similarity(own[0][None], centroids, dim=-1).argmax(0) == 0).float()
    assert torch.equal(by_hand, outcomes[word0][0])

# %% [markdown]
# Each skip is compared with the unchanged model **paired** on the same items -- test
# utterances for the intents, sentences for the senses (`paired_accuracy_difference`).
# A layer "can go" when the interval of that difference contains 0; its skip "lowers" the
# measure when the interval lies below 0. One case is marked apart: skipping layer $L$ under
# the fixed head. The head was trained on layer $L$'s output, so that skip hands it layer
# $L-1$'s vectors, which it never saw; a drop there is a mismatch between the head and its
# input, not evidence about what layer $L$ does. The sense probe, refit each time, has no
# such handicap.

# %%
from helpers.interventions.plots import plot_skip_effects

intent_name = "intent accuracy of the fixed head"
items = {intent_name: (skip_correct, "test accuracy", 1 / test.num_classes)}
if sense_hits is not None:
    n_senses = len(next(iter(polysemy.values())))
    items["sense separation at the last layer (lesson 06)"] = (sense_hits.T, "leave-one-out accuracy", 1 / n_senses)
panels = {name: (accuracy_ci(c[0]), [accuracy_ci(v) for v in c[1:]], ylabel, chance)
          for name, (c, ylabel, chance) in items.items()}
fig = plot_skip_effects(panels)
plt.show()
can_go, lowers, mismatch = {}, {}, {}
for name, (c, _, _) in items.items():  # c: [L + 1, items], row 0 nothing skipped
    changes = [paired_accuracy_difference(c[l], c[0]) for l in range(1, L + 1)]
    fixed_head = name == intent_name  # the fixed head never saw layer L - 1's vectors
    can_go[name] = [l for l, d in enumerate(changes, start=1) if not differs(d)]
    mismatch[name] = fixed_head and differs(changes[L - 1])
    lowers[name] = [l for l, d in enumerate(changes, start=1) if d.high < 0 and not (fixed_head and l == L)]
    print(f"{name}: nothing skipped {panels[name][0].percent()} ({c.shape[1]} items)")
    for l, d in enumerate(changes, start=1):
        mark = ("" if not differs(d) else "   <- head mismatch, not read as a layer effect" if fixed_head and l == L
                else "   <- lowers" if d.high < 0 else "   <- raises")
        print(f"   layer {l} skipped: {panels[name][1][l - 1].percent()}, change {100 * d.estimate:+.1f} "
              f"[{100 * d.low:+.1f}, {100 * d.high:+.1f}] points{mark}")
    print(f"   layers that can go one at a time (the change's interval contains 0): {can_go[name] or 'none'}")

# %% [markdown]
# If most layers can be skipped one at a time without a change that the paired interval can
# tell from 0, the strong form of the story — every layer is an indispensable expert
# — is not what this model does: through the residual stream, the layers above still receive
# the missing layer's input and work from it. A layer marked "lowers" is one whose removal measurably lowers this measure
# on these items; that is weaker than "the model cannot do without it" -- read the accuracy
# that remains in the same line.
#
# ## 4. Activation patching: when does "bank" decide its sense?
#
# Lesson 06 measured, layer by layer, where the senses of each ambiguous word separate (its
# printout says where, for the model you load). Patching asks where the decision *lives*.
# We run a money sentence ("She opened a savings account at the bank…"), but at layer $l$
# we overwrite its "bank" vector with the "bank" vector of a river sentence at the same
# layer, and let the layers above run. Lesson 06's probe then
# reads the final "bank": nearest sense centroid at the last layer, the centroids computed
# from the *other* sentences. If the final vector follows the patch (reads "river"), the
# sense was already carried by the word's own vector at layer $l$; if it reads "money", the
# layers above rebuilt it from the money context. We do this for every (river, money)
# sentence pair of every word in the data (first sense patched into the second).
#
# The pairs are not independent: every donor sentence is paired with every target sentence
# of its word, so each sentence takes part in several pairs. The interval therefore resamples **sentences** on both
# sides, within each word, and weights every pair by how often both of its sentences were
# drawn (`pair_cluster_bootstrap`); resampling the pairs would pretend we had many more
# independent observations than we do.

# %%
from helpers.interventions.compute import pair_cluster_bootstrap, sense_patching

patch = {}
for w, senses in polysemy.items():
    s_a, s_b = list(senses)[:2]
    pick = lambda s: [t for (ww, ss, _), t in zip(jobs, poly_traces) if (ww, ss) == (w, s)]  # noqa: E731
    patch[w] = sense_patching(model, pick(s_a), pick(s_b), w)
    patch[w]["senses"] = (s_a, s_b)
if patch:
    n_pairs = sum(len(p["pairs"]) for p in patch.values())
    pooled = pair_cluster_bootstrap(patch.values(), "follows")  # one Interval per patched layer 0..L
    control = pair_cluster_bootstrap(patch.values(), "control")[0]
    probe_works = control.low > 0.5
    print(f"{len(patch)} words, {n_pairs} pairs; without a patch the probe reads the target's own sense in "
          f"{control.percent()}"
          + ("" if probe_works else " -- no better than a coin: on this model the follow rates below mean little"))

# %%
from helpers.interventions.plots import plot_patch_curves

if patch:
    ax = plot_patch_curves({w: p["follows"].mean(0) for w, p in patch.items()}, pooled, chance=0.5,
                           title="does the final word vector follow the patched sense?")
    plt.show()
    print("all words, share following the patch per patched layer: "
          + "; ".join(f"{'emb' if l == 0 else l}: {ci.percent(0)}" for l, ci in enumerate(pooled)))
    first_pooled = next((l for l in range(L + 1) if pooled[l].low > 0.5), None)
    print("first layer whose interval lies above one half: "
          + (f"{first_pooled} ({pooled[first_pooled].percent()})" if first_pooled is not None else
             "none -- no patched layer is followed by a majority that the interval can tell from a coin"))
else:
    print("no ambiguous word of the data is in this vocabulary: patching is skipped.")

# %% [markdown]
# Patching at the embeddings (layer 0) swaps almost nothing — the word piece is the same,
# only its position embedding differs — so there we expect the context to win; the printout
# shows whether it does. Patching the last layer
# replaces the vector the probe reads, so it follows the patch unless the probe itself is
# wrong. Where the pooled interval rises above one half is where, on average, the word's own
# vector carries its sense strongly enough that the layers above no longer overwrite it from
# the context. Compare that layer with where lesson 06's sense separation rose. (The grey
# lines are single words, each from a handful of sentences: read them as noisy.)
#
# ## 5. Which words drove one decision?
#
# Four ways to attribute the head's decision on `SENTENCE` (its predicted intent's logit)
# to the input tokens:
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
# * **gradient × input**: $\sum_k e_{jk}\, \partial z / \partial e_{jk}$ on the embedding
#   output $e$ — a first-order estimate of token $j$'s contribution.
# * **occlusion**: drop token $j$ from the input, run again, and measure how far the logit
#   falls. It is the only one of the four that is an intervention; we use it as the reference.
#
# `[CLS]` and `[SEP]` cannot be dropped, so we compare the methods on the other tokens.
# Abnar & Zuidema compared raw attention, rollout and attention flow against blank-out
# (occlusion) and input gradients on a small Transformer encoder they trained for
# subject–verb agreement, and applied the methods to pretrained BERT; rollout and flow agreed
# better with both than raw attention did. We check the same on our model and head.

# %%
from helpers.interventions.compute import (OCCLUSION_PASSES, attention_rollout, attribution_scores, occlusion_windows,
                                           paired_spearman_ci, spearman)
from helpers.model.tokens import content_positions

with torch.no_grad():
    z = classifier(trace.hidden(L)[None], torch.ones(1, trace.seq_len, dtype=torch.long, device=model.device))[0]
pred = int(z.argmax())
scores = attribution_scores(model, classifier, trace, pred)
eye = torch.eye(trace.seq_len, device=model.device)
step = [(0.5 * trace.attention(l).mean(0) + 0.5 * eye) for l in (1, 2)]
step = [s / s.sum(-1, keepdim=True) for s in step]
assert torch.allclose(attention_rollout(trace.attentions[:2]), step[1] @ step[0], atol=1e-6)
words = content_positions(trace)
print(f"{SENTENCE[:60]!r} -> {test.names[pred]!r}; {len(words)} word tokens")
runs = occlusion_windows(words, OCCLUSION_PASSES)
if len(runs) < len(words):
    print(f"note: to keep occlusion at {OCCLUSION_PASSES} passes, it drops runs of up to {len(runs[0])} "
          "neighbouring tokens together")

# %%
from helpers.interventions.plots import plot_attributions

title = f"what drove {test.names[pred]!r}: four attributions, each row / its largest |score|"
ax, shown = plot_attributions({m: s[words] for m, s in scores.items()}, [trace.tokens[i] for i in words], title=title)
plt.show()
if len(shown) < len(words):
    print(f"the figure shows the {len(shown)} of {len(words)} word tokens with the highest occlusion score")
if len(words) >= 3:
    for method in ("raw attention", "attention rollout", "gradient x input"):
        rho = paired_spearman_ci(scores[method][words], scores["occlusion"][words])
        print(f"{method:>17} vs occlusion on this sentence: Spearman rho = {rho if rho else 'n/a'} "
              f"(interval over its tokens)")
else:
    print("fewer than 3 word tokens: a rank correlation needs more.")

# %% [markdown]
# One sentence is one sample. The cell below repeats the comparison on three test
# utterances of every intent and reports each method's mean $\rho$ with occlusion, with a
# bootstrap interval over the utterances.

# %%
sample = test.subset(3)
agreement = {m: [] for m in ("raw attention", "attention rollout", "gradient x input")}
for text in progress(sample.texts, desc="attributing test utterances"):
    t = trace_text(tokenizer, model, text)
    with torch.no_grad():
        target = int(classifier(t.hidden(L)[None], torch.ones(1, t.seq_len, dtype=torch.long, device=model.device)).argmax())
    s = attribution_scores(model, classifier, t, target)
    pos = content_positions(t)
    for m in agreement:
        agreement[m].append(spearman(s[m][pos], s["occlusion"][pos]) if len(pos) >= 3 else float("nan"))
rhos = {m: np.array(v) for m, v in agreement.items()}  # NaN: too few tokens, or a constant score
both = ~np.isnan(np.stack(list(rhos.values()))).any(0)  # utterances where every method has a rho
for m, r in rhos.items():
    print(f"{m:>17} vs occlusion, {both.sum()} utterances: mean rho {bootstrap_ci(r[both]) if both.any() else 'n/a'}")

# %% [markdown]
# Abnar & Zuidema's claim is a comparison of two methods on the *same* utterances, so we
# test it paired: the per-utterance difference of $\rho$, rollout minus raw attention, with a
# bootstrap over the utterances (`paired_difference_ci` in `helpers/common/stats.py`).

# %%
rollout_gain = None
if both.sum() > 1:
    rollout_gain = paired_difference_ci(rhos["attention rollout"][both], rhos["raw attention"][both])
rollout_verdict = ("n/a: too few utterances" if rollout_gain is None else
                   "rollout agrees better with occlusion, as Abnar & Zuidema found" if rollout_gain.low > 0 else
                   "raw attention agrees better with occlusion, unlike Abnar & Zuidema's finding"
                   if rollout_gain.high < 0 else
                   "not distinguishable (the interval contains 0): no advantage for rollout on this model and head")
print(f"rho(rollout, occlusion) - rho(raw attention, occlusion), paired over {both.sum()} utterances: "
      f"{rollout_gain if rollout_gain else 'n/a'}\n-> {rollout_verdict}")

# %% [markdown]
# Remember what each method measures: attention weights say where a head
# *looks*, not what the looked-at vector contributes; gradients are local; occlusion changes
# the input (a shorter sentence is also a different sentence).
#
# ## 6. Explore: remove a head, skip a layer
#
# For `SENTENCE`, we run every single-head removal and every layer skip once (a progress
# bar), then the explorer only looks results up: choose a layer and a head (or "skip the
# whole layer") and the bars show the new logits against the unchanged ones (black ticks).
# The map shows, for every choice at once, how far the logit of the originally predicted
# intent moves; the frame marks the current choice. Its colours span the head removals; when a
# layer skip moves the logit further, the skip column is clipped (the colour bar says where)
# and its values are written in the cells. A logit can rise while the prediction flips:
# another intent's logit may rise more. The printout spells out each skip that flips it.

# %%
from helpers.interventions.compute import sentence_interventions
from helpers.interventions.widgets import InterventionExplorer

effects = sentence_interventions(tokenizer, model, classifier, SENTENCE)
assert torch.allclose(effects.base, z, atol=1e-4)
flips_heads = int((effects.heads.argmax(-1) != pred).sum())
flips_skips = [l for l in range(1, L + 1) if int(effects.skips[l - 1].argmax()) != pred]
print(f"{flips_heads} of {L * A} single-head removals change the predicted intent of SENTENCE; "
      f"skipping layer(s) {flips_skips or 'none'} does")
for l in flips_skips:
    new = int(effects.skips[l - 1].argmax())
    moved = effects.skips[l - 1] - effects.base
    print(f"  skipping layer {l}: the {test.names[pred]!r} logit changes by {moved[pred]:+.1f}, "
          f"the {test.names[new]!r} logit by {moved[new]:+.1f}, so {test.names[new]!r} wins")
biggest = divmod(int((effects.heads[..., pred] - effects.base[pred]).abs().argmax()), A)
explorer = InterventionExplorer(effects, test.names, layer=biggest[0] + 1, head=biggest[1])
explorer

# %% [markdown]
# ## What the interventions say about the stories
#
# The cell below gathers this run's verdicts. They hold for this model, this head and this
# data; run the lesson with another `MODEL` to see whether they travel.

# %%
print(f"1. Removing any single head: {len(hurting)} of {L * A} heads lower the accuracy with an interval above 0; "
      f"the paired difference cannot rank {len(tied) - 1} other head(s) below the largest drop, "
      f"{drop_cis[worst].percent()}.")
where = ("Neither [CLS] nor [SEP] collects more attention" if park_token is None else
         f"This model parks more attention on {park_token}")
print(f"2. {where}. A head's share vs its importance (loss increase), heads ranked within their layer: "
      + "; ".join(f"{name} mean rho = {rho if rho else 'n/a'} ("
                  + ("n/a" if rho is None else "no link shown" if rho.contains(0.0) else
                     "more share, MORE importance" if rho.low > 0 else "more share, LESS importance") + ")"
                  for name, rho in pattern_rho.items()) + ".")
print(f"3. One gradient vs exhaustive removal: rho = {grad_vs_loss if grad_vs_loss else 'n/a'} "
      f"({t_gradient:.1f} s vs {t_exhaustive:.1f} s).")
print(f"4. Skipping one layer of 1..{L}: layers whose removal measurably lowers the measure "
      "(paired interval below 0):\n"
      + "\n".join(f"   {name}: {lowers[name] or 'none'}"
                  + (f" (skipping layer {L} also does, but there the fixed head meets vectors it never saw, "
                     "so it is not read as a layer effect)" if mismatch[name] else "") for name in items))
if patch and probe_works:
    print("5. Patching: " + (f"from layer {first_pooled}, the patched sense is followed by a majority of the pairs "
                             f"(interval above one half)." if first_pooled is not None else
                             "no patched layer is followed by a majority that the interval can tell from a coin."))
elif patch:
    print("5. Patching: the sense probe does not beat a coin on this model, so there is no verdict.")
print(f"6. Rollout vs raw attention, agreement with occlusion: {rollout_verdict}.")

# %% [markdown]
# ## Summary
#
# * A head is removed exactly by zeroing its context vector before the output projection
#   (a forward pre-hook on `attention.output`); layer $l$'s change only needs layers $l..L$
#   re-run, which makes the full $L \times A$ map cheap enough for a CPU.
# * Looking is not testing: the rank correlation between a head's attention pattern and the
#   damage its removal does is printed above, with its interval -- ranked within each layer,
#   because a correlation over all heads also ranks the layers.
# * Michel et al.'s gradient importance needs one backward pass instead of $L \times A$
#   forward passes; its agreement with the exhaustive removal is printed above.
# * Skipping layers and patching word vectors test stories about layers directly: which
#   layers' removal measurably lowers a measure, and from which layer a word's own vector
#   carries its sense.
# * Attention-based attributions (raw, rollout) and gradient × input are cheap; occlusion is
#   an intervention. How well they agree is a measurement, not an assumption.
#
# ## Exercises
#
# 1. Which head's removal lowers the **true-class logit** most on average over the test set?
#    Give `(layer, head)` with layers counted from 1, computed from `ablation`.
# 2. Michel et al.'s importance is the mean of the *absolute* gradients. Compute it from
#    `grads` (`[N, L, A]`) as an `[L, A]` tensor.
# 3. Write `my_rollout(attentions)`: from a list of `[A, T, T]` attention maps, one per layer
#    (bottom first), return the `[T, T]` attention rollout with $0.5\,\bar A + 0.5\,I$.
# 4. For the first ambiguous word of `patch` (`next(iter(patch))`), apply the lesson's rule
#    to that word alone: which is the first patched layer whose interval of the share of pairs
#    following the patch lies above one half? Compute the intervals with
#    `pair_cluster_bootstrap` on that word's result only. Give an int (0 = embeddings), or
#    `None` if no layer's interval lies above one half.

# %%
from helpers.exercises.lesson09 import check_exercise_1, check_exercise_2, check_exercise_3, check_exercise_4

answer_1 = None  # your code here: a (layer, head) tuple
check_exercise_1(answer_1, ablation)

# %%
answer_2 = None  # your code here: an [L, A] tensor
check_exercise_2(answer_2, grads)

# %%
my_rollout = None  # your code here: def my_rollout(attentions): ...
check_exercise_3(my_rollout, trace)

# %%
answer_4 = ...  # your code here: an int layer, or None if no layer qualifies
check_exercise_4(answer_4, patch)
