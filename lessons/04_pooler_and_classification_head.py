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
# # 04 — From [CLS] to a class decision: the pooler and a classification head
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/bert-layer-by-layer/bert-layer-by-layer/blob/main/lessons/04_pooler_and_classification_head.ipynb)
#
# Names and counting ($L, H, A, d, I, n$; layers from 1, heads from 0): see the [conventions](00_big_picture.ipynb#conventions) box of lesson 00.
#
# The encoder hands back one vector per token and layer. To classify a whole sentence we
# need one vector per sentence and a map from it to one score (logit) per class. This lesson
# does the mechanics: we rebuild BERT's pooler, train a linear head (a *task head*, lesson 00,
# not an attention head) on *frozen features* (sentence vectors computed once by the model,
# whose weights stay unchanged) of the course's easy *intents* (the kind of request a sentence
# makes, such as asking for the weather: ten classes in English, 17 with a Chinese model, $C$
# in all), follow one sentence from
# logits through softmax to a class id, and type sentences into a box. Which vector and which
# layer classify best is a measurement, made on a harder task in
# [lesson 10](10_which_layer_classifies.ipynb).
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
# `MODEL` names the checkpoint (`None`: the course chooses); `SENTENCE` is the sentence whose
# `[CLS]` vector we pool and whose logits the text box starts with.
#
# `LANGUAGE` picks the language of the data (`None`: the one the model's tokenizer reads,
# `model_language` in `helpers/common/language.py`; `"en"` or `"zh"` for a model that reads both).

# %% tags=["parameters"]
MODEL = None
SENTENCE = "Could you wake me up at half past six tomorrow?"
LANGUAGE = None  # None: the data follow the model; or "en", "zh"

# %%
import torch

from helpers.model.loading import load_model, paper_comparison
from helpers.model.trace import trace_text

torch.manual_seed(0)
loaded = load_model(MODEL)
tokenizer, model = loaded
# is this the BERT-base the papers this lesson quotes measured?
paper = paper_comparison(loaded)
config = model.config
L, H = config.num_hidden_layers, config.hidden_size
trace = trace_text(tokenizer, model, SENTENCE)
print(
    f"{L} layers, hidden size {H}; {trace.seq_len} tokens, position 0 is"
    f" {trace.tokens[0]!r}"
)
print("against the BERT-base of Devlin et al. (2019) and Reimers & Gurevych"
      f" (2019): {paper.label}")


# %% [markdown]
# On the map of lesson 00 (`architecture_diagram`, in `helpers/architecture/plots.py`) this
# lesson is the top: the pooler and a classification head, on the encoder's last layer.

# %% mystnb={"figure": {"caption": "Lesson 00's diagram of BERT for the loaded model's configuration, read bottom to top, one lane per token of the lesson's sentence, with each step's tensor shape and code name beside it. The pooler and the classification head are framed in orange: follow the `[CLS]` lane, the only one the pooler reads, up to the logits.", "name": "fig-04-architecture"}}
import matplotlib.pyplot as plt

from helpers.architecture.plots import architecture_diagram

architecture_diagram(config, highlight=["pooler", "head"],
                     tokens=trace.tokens)
plt.show()

# %% [markdown]
# From the last layer's `[CLS]` vector to a class id: the pooler, a linear head, logits,
# softmax and argmax (the position of the largest score: the predicted class). The lesson ends with the box you can type sentences into.
#
# ## The pooler, rebuilt
#
# `BertPooler` in `modeling_bert.py` takes the last-layer vector of the first token,
# $h_{[CLS]}$, and applies one dense layer with a tanh:
#
# $$\text{pooler\_output} = \tanh(W\, h_{[CLS]} + b), \qquad W \text{ an } H \times H
# \text{ matrix}.$$
#
# `pooler_by_hand` (in `helpers/classify/rebuild.py`) does exactly this with `model.pooler.dense`.

# %%
from helpers.classify.rebuild import pooler_by_hand

h_cls = trace.vector(L, 0)
pooled = pooler_by_hand(model, h_cls)
same = torch.allclose(pooled, trace.pooler_output, atol=1e-5)
assert same, "the pooler rebuilt by hand must equal the model's pooler_output"
print(
    f"pooler by hand == model.pooler_output: {same}; W is"
    f" {tuple(model.pooler.dense.weight.shape)}"
)
cos = torch.nn.functional.cosine_similarity(pooled, h_cls, dim=0).item()
print(f"cosine(raw [CLS], pooler_output) = {cos:.3f} for SENTENCE")

# %% [markdown]
# The tanh bounds every pooled value to $(-1, 1)$. How much of that bound is used depends on
# the pre-activations $W h_{[CLS]} + b$: where they are small, tanh is almost the identity
# ($\tanh x \approx x$) and squashes nothing.

# %%
pre = model.pooler.dense(h_cls).detach()  # W h + b, before the tanh
squash = (pre - torch.tanh(pre)).abs().max().item()
print(
    f"pooled values lie in [{pooled.min():.3f}, {pooled.max():.3f}] (tanh"
    f" allows (-1, 1)); the pre-activations W h + b lie in [{pre.min():.3f},"
    f" {pre.max():.3f}]"
)
print(
    f"largest |x - tanh(x)| over the {H} values: {squash:.3f} -- "
    + (
        "the tanh barely changes them: the narrow range comes from small"
        " pre-activations"
        if squash < 0.05
        else "the tanh squashes the largest pre-activations noticeably"
    )
)

# %% [markdown]
# So the pooler is **not** the raw `[CLS]` vector: it is a further learned transformation
# (one sentence is not enough to say how different; exercise 1 measures it over the test
# utterances below). In the original BERT it was trained with the
# next-sentence-prediction objective; a checkpoint trained for something else (the bundled
# all-MiniLM-L6-v2 was trained for sentence embeddings with *mean* pooling) may leave it barely
# trained. That is one reason we treat "which vector represents the sentence" as a question to
# measure, in lesson 10.
#
# ## A first head: the course's intents
#
# `data/intents/` holds short assistant requests written for this course, ten intents with a
# fixed train/test split (see its README); `data/intents_zh/` holds 17 in Chinese. The data
# follow the model: its tokenizer says which language it reads (`model_language` in
# `helpers/common/language.py`), and `intents_for` loads that language's set. The heads learn
# from the *train* utterances and are scored on the *test* ones, which they never saw. We run every utterance through the model once (with
# `torch.no_grad`, weights untouched) and keep two sentence vectors per layer $l = 0..L$: the
# `[CLS]` vector $h^{(l)}_0$ and the mean over the real (non-padding) tokens,
# $\frac{1}{n}\sum_i h^{(l)}_i$ (`extract_features` in `helpers/classify/compute.py`). This lesson
# uses the `[CLS]` vector; lesson 10 asks which of the two, at which layer, classifies best.
# (The map above puts BERT's usual head on the pooler's output, as `BertForSequenceClassification`
# does; our head reads the raw last-layer `[CLS]` vector instead, because a checkpoint like the
# bundled one may leave its pooler barely trained, as the previous section said.)

# %%
import time

from helpers.classify.compute import extract_features
from helpers.common.language import intents_for, model_language

language = model_language(tokenizer, lesson="04",
                          choice=LANGUAGE)  # the data follow the model
train_set = intents_for(language, "train")
test_set = intents_for(language, "test")
C = train_set.num_classes
y_test = torch.tensor(test_set.labels, device=model.device)
# tokens per utterance, [CLS] and [SEP] included; longer ones are cut (with a
# warning)
MAX_LEN = 32
t0 = time.perf_counter()
feats_train = extract_features(
    tokenizer, model, train_set.texts, max_length=MAX_LEN, progress=False
)
feats_test = extract_features(
    tokenizer, model, test_set.texts, max_length=MAX_LEN, progress=False
)
print(
    f"{len(train_set)} train / {len(test_set)} test utterances, {C} intents:"
    f" {', '.join(train_set.names)}"
)
print(
    f"features: cls {tuple(feats_train.cls.shape)} = [layers+1, utterances,"
    f" H], {time.perf_counter() - t0:.1f} s for both splits"
)
assert torch.allclose(
    feats_train.pooler,
    pooler_by_hand(model, feats_train.cls[L]),
    atol=1e-5,
)

# %% [markdown]
# ## A linear head: logits → softmax → argmax
#
# The head (`LinearHead` in `helpers/classify/compute.py`) is one linear layer on the
# last-layer `[CLS]` vector (the *feature* vector $x$), each of whose numbers is first
# standardized with its training mean $\mu$ and standard deviation $\sigma$ (the square root
# of the variance, lesson 01). With $C$ classes (here the intents):
#
# $$z = W \frac{x - \mu}{\sigma} + b \quad (C \text{ logits}), \qquad p = \mathrm{softmax}(z), \qquad \hat y = \arg\max_c z_c .$$
#
# Only $W$ and $b$ are trained; the BERT weights stay frozen. Every classifier this course
# trains on top of BERT is trained the same way (`fit_head` in `helpers/classify/compute.py`,
# on the training contract of `helpers/common/training.py`):
#
# * a **dev split** is carved out of the training utterances (here 4 per intent) and makes every
#   choice -- here the strength $\lambda$ of an L2 penalty $\frac{\lambda}{2}\lVert W \rVert^2$,
#   which keeps the weights small so the head does not just memorise its training utterances,
#   from a small grid; the test utterances are never used to choose anything;
# * the head starts from $W = 0, b = 0$ and is **scored there** (step 0);
# * it is trained **to convergence**. Its *loss* -- the number training makes small -- is the
#   *cross-entropy*, $-\ln p_{\text{true intent}}$ averaged over the utterances: 0 when the
#   head gives the true intent probability 1, large when it gives it little (the same loss
#   BERT's pre-training uses, with hidden words for intents), plus the penalty. This loss has
#   a single lowest point. Its *gradient* says, for every weight, how fast the loss grows when
#   that weight grows, so a small step against it lowers the loss; an *optimizer* is a recipe
#   for those steps (here L-BFGS, on all training utterances at once), run until every entry
#   of the gradient is below a threshold fixed beforehand. The printout says whether that happened, and gives
#   the dev loss at step 0 and for the weights *kept* (the trained head the dev split chose).
#
# First, what "training" means, in a loop you can read (plain gradient descent, the simplest
# optimizer): start at $W = 0, b = 0$, compute the
# logits and the loss, let PyTorch compute the gradient, step against it, repeat. The same training
# utterances the helper will use (the dev split set aside first), standardized the same way, at a
# fixed $\lambda = 0.01$:

# %%
import torch.nn.functional as F

from helpers.common.training import stratified_dev_split

rows, dev_rows = stratified_dev_split(train_set.labels, per_class=4, seed=0)
X_fit = feats_train.layer(L, "cls")[rows]
y_fit = torch.tensor([train_set.labels[i] for i in rows], device=model.device)
mu, sigma = X_fit.mean(0), X_fit.std(0).clamp(min=1e-6)
W_hand = torch.zeros(C, X_fit.shape[1], device=model.device,
                     requires_grad=True)
b_hand = torch.zeros(C, device=model.device, requires_grad=True)
step_size, lam = 0.5, 0.01
for step in range(301):
    z_fit = ((X_fit - mu) / sigma) @ W_hand.T + b_hand  # the logits
    loss = F.cross_entropy(z_fit, y_fit) + lam / 2 * (W_hand ** 2).sum()
    W_hand.grad = b_hand.grad = None
    loss.backward()  # d loss / d W and d loss / d b
    with torch.no_grad():  # one step downhill
        W_hand -= step_size * W_hand.grad
        b_hand -= step_size * b_hand.grad
    if step % 100 == 0:
        print(f"step {step:3d}: loss {loss.item():.3f}")

# %% [markdown]
# The loss falls from $\ln C$ (every intent equally likely) and levels off. The helper below does
# the same job with more care -- it tries a few $\lambda$ on the dev split and uses a faster
# optimizer (L-BFGS) until the gradient is tiny -- and the next cells compare the two heads. Then
# we compute the logits $z$ of every test utterance by hand from the helper's weights, with the
# formula above, and read everything else off them.

# %%
import math
import textwrap

from helpers.classify.compute import fit_head_split

t0 = time.perf_counter()
head, head_record = fit_head_split(
    feats_train.layer(L, "cls"),
    train_set.labels,
    C,
    dev_per_class=4,
    seed=0,
    run=f"{C} intents, last-layer [CLS]",
)
train_seconds = time.perf_counter() - t0
print(textwrap.fill(head_record.describe(), 110, subsequent_indent="    "))
X_test = feats_test.layer(L, "cls")
W, b = head.classifier.weight.detach(), head.classifier.bias.detach()
# the formula above, by hand: [test utterances, C]
z = ((X_test - head.mu) / head.sigma) @ W.T + b
p, pred_test = torch.softmax(z, -1), z.argmax(-1)
print(
    f"first test utterance {test_set.texts[0]!r} (true:"
    f" {test_set.names[test_set.labels[0]]}); its three largest logits:"
)
for c in z[0].topk(3).indices.tolist():
    print(f"  {test_set.names[c]:<16} z_c = {z[0, c]:+6.2f}"
          f" p_c = {p[0, c]:.3f}")
rank = int((z[0] > z[0, test_set.labels[0]]).sum()) + 1  # 1 = the argmax
print("  -> right: the argmax is the true intent" if rank == 1 else
      f"  -> wrong: the true intent ranks {rank}; one utterance says little,"
      " the next cell counts all of them")
# at step 0 (W = 0, b = 0) every logit is 0: each intent gets 1/C, loss ln C
assert math.isclose(head_record.step0[0], math.log(C), rel_tol=1e-4)
print(f"step 0 (W = 0, b = 0): every logit is 0, so every intent gets "
      f"probability 1/{C}: the dev loss {head_record.step0[0]:.3f} above is "
      f"ln {C} = {math.log(C):.3f}")
with torch.no_grad():  # the hand-trained head on the same test utterances
    pred_hand = (((X_test - mu) / sigma) @ W_hand.T + b_hand).argmax(-1)
same = int((pred_hand == pred_test).sum())
print(f"the head trained by the loop above and the helper's head give the"
      f" same intent for {same} of the {len(test_set)} test utterances")

# %% [markdown]
# How often is the argmax right on the test utterances?

# %%
from helpers.common.claims import show_finding
from helpers.common.stats import accuracy_ci

correct_test = pred_test == y_test
first_head = show_finding(
    f"The head gets {int(correct_test.sum())} of the {len(test_set)} test"
    f" utterances right ({correct_test.float().mean():.0%}; guessing would get"
    f" {1 / C:.0%}).",
    details=[
        f"accuracy {accuracy_ci(correct_test).percent()}: the brackets"
        f" give the range of accuracies these {len(test_set)} test items"
        " are consistent with (exact Clopper-Pearson 95 % interval)",
        f"training the head (every L2 strength of the grid) took"
        f" {train_seconds:.2f} s on this machine",
    ],
)
train_acc, test_acc = head_record.train_accuracy, correct_test.float().mean()
if train_acc is not None:
    print(f"On the utterances it was trained on, the head scores "
          f"{train_acc:.0%}; on the unseen test utterances {test_acc:.0%}"
          + (": a head fits its own training data better than new data, so "
             "only the test score says how well it works."
             if train_acc > test_acc else "."))

# %% [markdown]
# ## Try it: type a sentence, see the logits
#
# Type a request and press **Classify**: the box runs the model on your new sentence, applies
# the head and shows one bar per intent; the orange bar is the argmax, the predicted id. (On the
# website, the box shows `SENTENCE` and a few test utterances, and a box under it runs the same
# model and head in your browser on a sentence you type: ONNX Runtime instead of PyTorch.)

# %% mystnb={"figure": {"caption": "Logits of the intent head (trained on the last layer's `[CLS]` vector) for the lesson's sentence, one bar per intent; the orange bar is the argmax, the predicted intent. Type any sentence into the box and press **Classify** to see its bars; the y-scale is kept across sentences (widened only when needed), so bars compare.", "name": "fig-04-logits-box"}}
from helpers.classify.widgets import LogitsBox

box = LogitsBox(
    tokenizer,
    model,
    head,
    train_set.names,
    layer=L,
    pooling="cls",
    sentence=SENTENCE,
    # the website cannot run the model: it shows these beside SENTENCE,
    # the first test utterance of each of three intents
    examples=[test_set.texts[list(test_set.labels).index(c)]
              for c in range(3)],
)
box


# %% [markdown]
# The head is a few lines of arithmetic on one vector; which vector to use, and from which layer,
# is the question of [lesson 10](10_which_layer_classifies.ipynb).
#
# ## Summary
#
# * `pooler_output` $= \tanh(W h_{[CLS]} + b)$, rebuilt and checked; it is not the raw `[CLS]` vector.
# * A linear head turns a sentence vector into $C$ logits; softmax gives probabilities and
#   argmax the class id. Trained on frozen features it needs no pass through BERT, and its logits
#   are a few lines of arithmetic (computed by hand above).
# * A head is trained by a contract: choices (the L2 strength) on a dev split carved from the
#   training data, a score at step 0, and a stated convergence criterion (L-BFGS until the gradient
#   vanishes) whose outcome is printed.
# * The course's intents are easy: they serve the box you type into. Comparing layers and poolings
#   needs a harder task, BANKING77 (77 intents of bank customers' questions), in lesson 10.
#
# ## Exercises
#
# Each exercise starts with its rating: how hard it is, how much it matters for
# the rest of the course, and about how long it takes. The checkers grade your
# answer and give a hint when it is not right yet; they never print the answer.

# %%
from helpers.classify.compute import correct_per_item, fit_head_split
from helpers.exercises.lesson04 import check_exercise_1, check_exercise_2

# %% [markdown]
# ### Exercise 1: predict, then measure — how far does the pooler turn `[CLS]`?
#
# Difficulty ●●○○○ · Importance ●●●○○ · ~10 min
#
# The pooler section gave the cosine between the raw `[CLS]` vector and `pooler_output` for
# one sentence. **Predict first:** averaged over the test utterances, will that cosine be near
# 1 (the pooler keeps the direction), near 0 (it turns it to an unrelated one), or negative?
# Write a number between −1 and 1 in `prediction_1`. **Then measure:** `feats_test.cls[L]`
# holds the test utterances' last-layer `[CLS]` vectors, one row per utterance. Pool all of
# them at once with the formula above, from `model.pooler.dense.weight` and `.bias` (your
# result should equal `feats_test.pooler`), and set `answer_1` to the mean, over the
# utterances, of the cosine between each raw vector and its pooled one.
#
# **Reflection question:** leave out the tanh and measure again. On this model the answer
# barely moves. Why? (The checker's reply to a right answer gives a clue.)

# %%
prediction_1 = None  # a number between -1 and 1, written before measuring
answer_1 = None  # your code here: a float
check_exercise_1(answer_1, prediction_1, model, feats_test, layer=L)


# %% [markdown]
# ### Exercise 2: predict, then measure — a head on the layer-0 `[CLS]` vector
#
# Difficulty ●●○○○ · Importance ●●●●○ · ~10 min
#
# On the course's intents, the head on the last layer's `[CLS]` vector was measured
# above. **First predict** the test
# accuracy of the same head trained on the **layer-0** `[CLS]` vector (the
# embedding output at position 0). Put a number between 0 and 1 in
# `prediction_2`.
#
# **Then measure** it: `fit_head_split` on `feats_train.layer(0, "cls")` with
# the same arguments as the head above (`train_set.labels, C, dev_per_class=4,
# seed=0`); it returns `(head, record)`. Then
# `correct_per_item(head, feats_test.layer(0, "cls"), test_set.labels)` (both
# imported above from `helpers/classify/compute.py`) returns one True/False per
# test utterance, whether the head's argmax is the true intent; its mean is the
# accuracy. Give it as a fraction. The checker grades the measurement and only
# comments on the prediction.

# %%
prediction_2 = None  # a number between 0 and 1, written before measuring
answer_2 = None  # your code here: a float between 0 and 1
check_exercise_2(prediction_2, answer_2, feats_train, feats_test, train_set,
                 test_set)
