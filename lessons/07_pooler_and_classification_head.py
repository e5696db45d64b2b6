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
# # 07 — From [CLS] to a class decision: the pooler and a classification head
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/bert-layer-by-layer/bert-layer-by-layer/blob/main/lessons/07_pooler_and_classification_head.ipynb)
#
# The encoder hands back one vector per token and layer. To classify a whole sentence we
# need one vector per sentence and a map from it to one score (logit) per class. In this
# lesson we rebuild BERT's pooler, train a linear head on frozen features of the course's
# intent data set, and ask which layer carries the class best.
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
# `MODEL` names the checkpoint (`None`: the course chooses); `SENTENCE` is the sentence whose
# `[CLS]` vector we pool and whose logits the text box starts with.
#
# `BUDGET` sizes the expensive work (`None`: the course chooses, `"full"` on the bundled model; `"quick"`: fewer
# test items and seeds, for a fast check or a large model on a CPU; `choose_budget` in `helpers/common/budget.py`).

# %% tags=["parameters"]
MODEL = None
SENTENCE = "Could you wake me up at half past six tomorrow?"
BUDGET = None  # None: the course chooses; "full" or "quick" (fewer items and seeds)

# %%
import torch

from helpers.common.budget import choose_budget
from helpers.model.loading import load_model
from helpers.model.trace import trace_text

torch.manual_seed(0)
tokenizer, model = load_model(MODEL)
budget = choose_budget(BUDGET, model)
config = model.config
L, H = config.num_hidden_layers, config.hidden_size
trace = trace_text(tokenizer, model, SENTENCE)
print(f"{L} layers, hidden size {H}; {trace.seq_len} tokens, position 0 is {trace.tokens[0]!r}")

# %%
# Where this lesson sits on the map of lesson 00 (architecture_diagram, helpers/architecture/plots.py):
# the pooler and a classification head, on top of the encoder's last layer.
import matplotlib.pyplot as plt

from helpers.architecture.plots import architecture_diagram

architecture_diagram(config, highlight=["pooler", "head"])
plt.show()

# %% [markdown]
# ## The pooler, rebuilt
#
# `BertPooler` in `modeling_bert.py` takes the last-layer vector of the first token,
# $h_{[CLS]}$, and applies one dense layer with a tanh:
#
# $$\text{pooler\_output} = \tanh(W\, h_{[CLS]} + b), \qquad W \in \mathbb{R}^{H \times H}.$$
#
# `pooler_by_hand` (in `helpers/classify/rebuild.py`) does exactly this with `model.pooler.dense`.

# %%
from helpers.classify.rebuild import pooler_by_hand

h_cls = trace.vector(L, 0)
pooled = pooler_by_hand(model, h_cls)
same = torch.allclose(pooled, trace.pooler_output, atol=1e-5)
assert same, "the pooler rebuilt by hand must equal the model's pooler_output"
print(f"pooler by hand == model.pooler_output: {same}; W is {tuple(model.pooler.dense.weight.shape)}")
cos = torch.nn.functional.cosine_similarity(pooled, h_cls, dim=0).item()
print(f"cosine(raw [CLS], pooler_output) = {cos:.3f} for SENTENCE")

# %% [markdown]
# The tanh bounds every pooled value to $(-1, 1)$. How much of that bound is used depends on
# the pre-activations $W h_{[CLS]} + b$: where they are small, tanh is almost the identity
# ($\tanh x \approx x$) and squashes nothing.

# %%
pre = model.pooler.dense(h_cls).detach()  # W h + b, before the tanh
squash = (pre - torch.tanh(pre)).abs().max().item()
print(f"pooled values lie in [{pooled.min():.3f}, {pooled.max():.3f}] (tanh allows (-1, 1)); the pre-activations "
      f"W h + b lie in [{pre.min():.3f}, {pre.max():.3f}]")
print(f"largest |x - tanh(x)| over the {H} values: {squash:.3f} -- "
      + ("the tanh barely changes them: the narrow range comes from small pre-activations" if squash < 0.05 else
         "the tanh squashes the largest pre-activations noticeably"))

# %% [markdown]
# So the pooler is **not** the raw `[CLS]` vector: it is a further learned transformation
# (one sentence is not enough to say how different; the claims table at the end measures it
# over the test set). In the original BERT it was trained with the next-sentence-prediction
# objective; a checkpoint trained for something else (the bundled all-MiniLM-L6-v2 was trained
# for sentence embeddings with *mean* pooling) may leave it barely trained. That is one reason
# we treat "which vector represents the sentence" as a question to measure.
#
# ## The data: ten intents
#
# `data/intents/` holds short assistant requests written for this course, with a fixed
# train/test split (see its README).

# %%
from helpers.common.data import load_intents

train, test = load_intents("train"), load_intents("test")
C = train.num_classes
y_test = torch.tensor(test.labels, device=model.device)
print(f"{len(train)} train / {len(test)} test utterances, {C} intents: {', '.join(train.names)}")
print("example:", repr(train.texts[0]), "->", train.names[train.labels[0]])

# %% [markdown]
# With only this many test utterances, one more or one fewer right answer moves an accuracy
# by a whole step of $1/n$. So every accuracy below carries a **95% bootstrap interval over the
# test items** (`accuracy_ci` in `helpers/common/stats.py`: resample the test set with
# replacement 1,000 times and keep the middle 95% of the accuracies; when every item is right,
# resampling cannot vary, and the "rule of three" gives the bound $1 - 3/n$ instead), and heads
# that start from random weights are trained with several seeds.
#
# Two classifiers tested on the **same** items are compared item by item: `paired_difference`
# (in `helpers/classify/compute.py`, built on `paired_difference_ci` in `helpers/common/stats.py`)
# subtracts their per-item outcomes and resamples the items once for both. They are called
# different only when the 95% interval of that difference excludes 0. This is sharper than
# asking whether two separate intervals overlap, because both classifiers find the same items
# easy or hard.
#
# ## Frozen features of every layer
#
# We run every utterance through the model once (with `torch.no_grad`, weights untouched)
# and keep two sentence vectors per layer $l = 0..L$: the `[CLS]` vector $h^{(l)}_0$ and
# the mean over the real (non-padding) tokens, $\frac{1}{n}\sum_i h^{(l)}_i$.

# %%
import time

from helpers.classify.compute import extract_features

MAX_LEN = 32  # tokens per utterance, [CLS] and [SEP] included; longer ones are cut (with a warning)
t0 = time.perf_counter()
feats_train = extract_features(tokenizer, model, train.texts, max_length=MAX_LEN)
feats_test = extract_features(tokenizer, model, test.texts, max_length=MAX_LEN)
print(f"features: cls {tuple(feats_train.cls.shape)} = [layers+1, utterances, H], "
      f"{time.perf_counter() - t0:.1f} s for both splits")
longest = max(len(tokenizer(t)["input_ids"]) for t in train.texts + test.texts)
print(f"longest utterance: {longest} tokens; MAX_LEN = {MAX_LEN}: "
      + ("none is cut" if longest <= MAX_LEN else "some are cut (see the warning)"))
assert torch.allclose(feats_train.pooler, pooler_by_hand(model, feats_train.cls[L]), atol=1e-5)

# %% [markdown]
# ## A linear head: logits → softmax → argmax
#
# The head (`LinearHead` in `helpers/classify/compute.py`) is one linear layer on the
# last-layer `[CLS]` vector, standardized with the training mean $\mu$ and standard deviation
# $\sigma$:
#
# $$z = W \frac{x - \mu}{\sigma} + b \in \mathbb{R}^{C}, \qquad p = \mathrm{softmax}(z), \qquad \hat y = \arg\max_c z_c .$$
#
# We train $W, b$ with cross-entropy, full batch, Adam, fixed seed, for `SHORT_STEPS` steps
# (printed); the BERT weights stay frozen. Below, the logits are recomputed by hand from the
# head's weights and checked against the head.

# %%
from helpers.classify.compute import SHORT_STEPS, train_head  # SHORT_STEPS: the steps of this first head
from helpers.common.stats import accuracy_ci

t0 = time.perf_counter()
head = train_head(feats_train.layer(L, "cls"), train.labels, C, epochs=SHORT_STEPS, seed=0)
train_seconds = time.perf_counter() - t0
X_test = feats_test.layer(L, "cls")
W, b = head.classifier.weight.detach(), head.classifier.bias.detach()
z = ((X_test - head.mu) / head.sigma) @ W.T + b  # the formula above, by hand
with torch.no_grad():
    assert torch.allclose(head(X_test), z, atol=1e-4)
p = torch.softmax(z[0], -1)
print(f"first test utterance {test.texts[0]!r}: predicted id {int(z[0].argmax())} "
      f"({test.names[int(z[0].argmax())]}), p = {p.max():.2f}")
correct_head = z.argmax(-1) == y_test
print(f"test accuracy, last-layer [CLS]: {accuracy_ci(correct_head).percent()} (95% interval over the "
      f"{len(test)} test items; chance {1 / C:.1%}); {SHORT_STEPS} steps took {train_seconds:.2f} s (wall clock, "
      "this machine)")

# %% [markdown]
# Are `SHORT_STEPS` steps of Adam enough to train this head? An independent solver gives a point of
# comparison: scikit-learn's `LogisticRegression` (L-BFGS, the same kind of linear model) on the
# same standardized features, run to convergence. It is not quite the same objective:
# scikit-learn adds its own L2 penalty (`C=1`), our head has Adam's weight decay $10^{-3}$, so
# the two need not land on the same weights. We count how often they give the same intent,
# compare their accuracies paired on the same test items, and do the same for a head trained
# four times longer (`HEAD_STEPS`): if only the short head falls behind, it stopped short of its
# optimum. Every head after this cell trains `HEAD_STEPS` steps.

# %%
import textwrap

import numpy as np
from sklearn.linear_model import LogisticRegression

from helpers.classify.compute import compare_two_paired, correct_per_item, paired_difference
from helpers.common.stats import differs

standardize = lambda X: ((X - head.mu) / head.sigma).cpu().numpy()
solver = LogisticRegression(max_iter=3000).fit(standardize(feats_train.layer(L, "cls")), train.labels)
pred_sklearn = torch.as_tensor(solver.predict(standardize(X_test)), device=model.device)
correct_sklearn = pred_sklearn == y_test
from helpers.classify.compute import HEAD_STEPS  # 4 x SHORT_STEPS: the steps of every head below

long_head = train_head(feats_train.layer(L, "cls"), train.labels, C, epochs=HEAD_STEPS, seed=0, progress=False)
correct_long = correct_per_item(long_head, X_test, test.labels)
print(f"the {SHORT_STEPS}-step head and sklearn predict the same intent for "
      f"{(pred_sklearn == z.argmax(-1)).float().mean():.0%} of the {len(test)} test utterances")
for name, right in ((f"{SHORT_STEPS} steps", correct_head), (f"{HEAD_STEPS} steps", correct_long)):
    print(textwrap.fill(compare_two_paired(name, right, "sklearn", correct_sklearn), 110, subsequent_indent="    "))
short_gap, long_gap = (differs(paired_difference(right, correct_sklearn)) for right in (correct_head, correct_long))
print(textwrap.fill(f"verdict (every head below trains {HEAD_STEPS} steps): " + (
    f"{SHORT_STEPS} steps already match the independent solver on this test set" if not short_gap else
    f"{SHORT_STEPS} steps stop short on this model, {HEAD_STEPS} reach the solver" if not long_gap else
    f"even {HEAD_STEPS} steps stay apart from the solver: the two objectives (penalties) differ"),
    110, subsequent_indent="    "))
# %% [markdown]
# ## Where does it go wrong?
#
# The confusion matrix counts, for every true intent (row), what `long_head` (the head trained
# `HEAD_STEPS` steps) predicted (column).

# %%
import matplotlib.pyplot as plt

from helpers.classify.compute import confusion_matrix, predict
from helpers.classify.plots import plot_confusion

cm = confusion_matrix(test.labels, predict(long_head, X_test).cpu().numpy(), C)
ax = plot_confusion(cm, test.names, title=f"confusion matrix, last-layer [CLS] head ({HEAD_STEPS} steps): test utterances")
plt.show()
off = cm.copy()
np.fill_diagonal(off, 0)
i, j = divmod(int(off.argmax()), C)
print(f"{off.sum()} of {cm.sum()} test utterances misclassified; most frequent confusion: "
      f"{test.names[i]} -> {test.names[j]} ({off[i, j]} times)" if off.max() else "no confusions")

# %% [markdown]
# ## Try it: type a sentence, see the logits
#
# Type a request and press **Classify**: the box runs the model on your new sentence, applies
# the head and shows one bar per intent; the orange bar is the argmax, the predicted id.

# %%
from helpers.classify.widgets import LogitsBox

box = LogitsBox(tokenizer, model, long_head, train.names, layer=L, pooling="cls", sentence=SENTENCE)
box

# %% [markdown]
# ## Which layer carries the class?
#
# A *linear probe* is the same head trained on the features of one layer. If a linear map
# can read the intent off layer $l$, the information is there in linear form. We probe every
# layer with both poolings, three seeds each (`probe_seeds` in `helpers/classify/compute.py`
# trains all $L+1$ probes of one seed at once, as one batched matrix product, from the same
# start as `train_head`), `HEAD_STEPS` steps each. Each layer is then compared with the best one,
# paired on the test items. The best layer is picked on those same test items, so its own score
# is optimistic (the cell says so in its printout); the claims table at the end therefore pits
# the last layer against it with a paired difference rather than reading the peak value alone.

# %%
from helpers.classify.compute import compare_paired, probe_seeds
from helpers.classify.plots import plot_probe_curves

SEEDS = budget.pick((0, 1, 2), (0, 1))
probe_runs = {pooling: probe_seeds(feats_train, train.labels, feats_test, test.labels, C, pooling, seeds=SEEDS,
                                   epochs=HEAD_STEPS) for pooling in ("cls", "mean")}
probes = {pooling: [run.estimate for run in runs] for pooling, runs in probe_runs.items()}
labels = {"cls": "[CLS]", "mean": "mean-pooled"}
ax = plot_probe_curves({labels[p]: probes[p] for p in probes}, chance=1 / C,
                       intervals={labels[p]: [run.interval() for run in runs] for p, runs in probe_runs.items()})
plt.show()
print(f"probes trained {HEAD_STEPS} steps, {len(SEEDS)} seeds; the highest layer below is picked on the same "
      f"{len(test)} test items that score it, so its accuracy is an optimistic estimate for a new test set")
for pooling, runs in probe_runs.items():
    print(f"{labels[pooling]}: " + compare_paired({f"layer {l}": run for l, run in enumerate(runs)}))

# %% [markdown]
# Read the printout above against the plot: the shaded bands are each layer's own interval;
# the printout pairs every layer with the best one on the same test items, and only calls a
# layer lower where the interval of that difference excludes 0. At layer 0 the `[CLS]`
# vector is the same for every sentence (token, position and segment embedding of `[CLS]`,
# no context yet), so its probe can only guess; the mean of the embeddings already sees the
# words, and the plot shows how far that gets.
#
# ## Combining layers
#
# Devlin et al. (2019), *BERT: Pre-training of Deep Bidirectional Transformers for Language
# Understanding*, Table 7, compared such choices in a **different setting**: a feature-based
# token tagger for named-entity recognition (CoNLL-2003 NER, dev F1) on **BERT-base**
# (12 layers, 768 wide), not sentence classification on this model. Published numbers, not
# measured here:
#
# | features (BERT-base, CoNLL-2003 NER, Devlin et al. 2019 Table 7) | dev F1 |
# |---|---|
# | embeddings | 91.0 |
# | second-to-last hidden | 95.6 |
# | last hidden | 94.9 |
# | weighted sum of last four hidden | 95.9 |
# | concat of last four hidden | 96.1 |
# | weighted sum of all 12 layers | 95.5 |
#
# We run the same kind of comparison live, on our task and model, three seeds per head,
# `HEAD_STEPS` steps each. The
# learned weighted sum trains one scalar per layer, $\alpha = \mathrm{softmax}(s)$, with the
# head: $x = \sum_{l=0}^{L} \alpha_l\, h^{(l)}_{[CLS]}$ (each layer standardized first).

# %%
from helpers.classify.compute import last_k_layers, strategy_accuracies
from helpers.classify.plots import plot_layer_weights, plot_strategy_accuracies

layers4, note = last_k_layers(L)
print(f"'last four' uses {note}")
strategies = strategy_accuracies(feats_train, train.labels, feats_test, test.labels, C, seeds=SEEDS,
                                 epochs=HEAD_STEPS)
fig, (ax_acc, ax_w) = plt.subplots(1, 2, figsize=(8.6, 4.2), width_ratios=[1.35, 1])
plot_strategy_accuracies(strategies.accuracy, ax=ax_acc, chance=1 / C)
plot_layer_weights(strategies.layer_weights, ax=ax_w)
plt.show()

# %%
from helpers.classify.compute import layer_weights_summary

for name, acc in strategies.accuracy.items():
    print(f"{name:<32} {acc.describe()}")
print(compare_paired(strategies.accuracy))
print(layer_weights_summary(strategies.layer_weights))

# %% [markdown]
# The last-layer `[CLS]` head has now appeared three times: `long_head` (seed 0), the
# layer-$L$ `[CLS]` probe of the curve, and the strategy "last layer [CLS]". All three are one
# trainer (`train_head`'s starting weights for the seed, `HEAD_STEPS` full-batch Adam steps on
# standardized features), so the same seed should give the same answer on every test item.
# The next cell checks that, item by item, instead of leaving three unexplained numbers.

# %%
probe_last, strategy_last = probe_runs["cls"][L], strategies.accuracy["last layer [CLS]"]
s0 = SEEDS.index(0)  # the seed of the first head
mismatch = int((correct_long != probe_last.correct[s0]).sum()) + int((probe_last.correct != strategy_last.correct).sum())
if mismatch == 0:
    text = (f"same answers on every test item, every seed: long_head's {accuracy_ci(correct_long).percent()} is "
            f"seed 0 of the probe and of the strategy, whose {len(SEEDS)}-seed result is {strategy_last.describe()}")
else:
    text = (f"{mismatch} (item, seed) answers differ between long_head, the probe and the strategy "
            f"(floating-point rounding of the batched probe trainer); the {len(SEEDS)}-seed results: probe "
            f"{probe_last.describe()}, strategy {strategy_last.describe()}")
print(textwrap.fill(text, 110, subsequent_indent="    "))

# %% [markdown]
# Compare the ranking in the printout with the published table: on a different task and
# model the order can differ, and on a test set of this size several strategies may not be
# distinguishable at all. That is exactly why the choice of layer is worth measuring on your
# own data, with intervals.
#
# ## Claims tested
#
# Each row: a claim often repeated about BERT's last layers, what this run measured (the
# middle column is computed by the cell, so it stays true for any model or data), and the
# published finding with the paper and the model it was measured on.

# %%
from IPython.display import Markdown, display

from helpers.classify.compute import PUBLISHED_07, claims_markdown, compare_two_paired, peak_layer_verdict
from helpers.common.stats import quartiles

q25, med, q75 = quartiles(torch.nn.functional.cosine_similarity(feats_test.pooler, feats_test.cls[L], dim=-1))
acc = strategies.accuracy
live = {
    "pooler": f"cosine(last-layer [CLS], pooler_output) over {len(test)} test utterances: median {med:.2f} "
              f"(IQR {q25:.2f} to {q75:.2f})",
    "cls": compare_two_paired("last-layer [CLS]", acc["last layer [CLS]"], "mean pooling", acc["mean pooling, last layer"]),
    "last": "; ".join(peak_layer_verdict(runs, labels[p]) for p, runs in probe_runs.items()),
    "combine": compare_two_paired("concat last four", acc["concat last four [CLS]"], "last layer", acc["last layer [CLS]"])
               + "; " + compare_two_paired("weighted sum", acc["weighted sum, all layers [CLS]"], "last layer",
                                           acc["last layer [CLS]"]),
}
rows = [(claim, live[key], published) for key, (claim, published) in PUBLISHED_07.items()]
display(Markdown(claims_markdown(rows)))

# %% [markdown]
# ## Summary
#
# * `pooler_output` $= \tanh(W h_{[CLS]} + b)$, rebuilt and checked; it is not the raw `[CLS]` vector.
# * A linear head turns a sentence vector into $C$ logits; softmax gives probabilities and
#   argmax the class id. Trained on frozen features it needs no pass through BERT (its training
#   time on this machine is printed above); its logits were checked by hand, and its answers
#   compared item by item with an independent solver.
# * Linear probes per layer show where the class becomes linearly readable; `[CLS]` and mean
#   pooling can behave very differently, and combinations of layers (concat, learned weights)
#   are cheap to try. With a test set this small, read every accuracy with its interval, and
#   compare two classifiers on the same items with a paired difference.
#
# ## Exercises
#
# 1. Write `pool(h_cls)` that computes the pooler output from `model.pooler.dense.weight`
#    and `.bias` without calling the pooler module. Check it below.
# 2. Which layer's **mean-pooled** features give the best probe accuracy? Give the layer
#    number (0 = embeddings) as an int, computed from `probes`. The checker also tells you
#    which layers are not distinguishable from it (paired on the test items).
# 3. Compute the confusion matrix of `long_head` on the test set yourself (an array with
#    `cm[true, predicted]`).

# %%
from helpers.exercises.lesson07 import check_exercise_1, check_exercise_2, check_exercise_3

pool = None  # your function here, e.g. def pool(h): return ...
check_exercise_1(pool, model, trace)

# %%
best_mean_layer = None  # your answer here
check_exercise_2(best_mean_layer, probes, runs=probe_runs["mean"])

# %%
my_cm = None  # your array here
check_exercise_3(my_cm, test.labels, predict(long_head, X_test).tolist(), C)
