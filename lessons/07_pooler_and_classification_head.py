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

# %% tags=["parameters"]
MODEL = None
SENTENCE = "Could you wake me up at half past six tomorrow?"

# %%
import torch

from helpers.model.loading import load_model
from helpers.model.trace import trace_text

torch.manual_seed(0)
tokenizer, model = load_model(MODEL)
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
assert torch.allclose(pooled, trace.pooler_output, atol=1e-5)
cos = torch.nn.functional.cosine_similarity(pooled, h_cls, dim=0).item()
print(f"pooler by hand == model.pooler_output: True; W is {tuple(model.pooler.dense.weight.shape)}")
print(f"cosine(raw [CLS], pooler_output) = {cos:.3f}; every pooled value lies in "
      f"[{pooled.min():.3f}, {pooled.max():.3f}] because of the tanh")

# %% [markdown]
# So the pooler is **not** the raw `[CLS]` vector: it is a further learned transformation.
# In the original BERT it was trained with the next-sentence-prediction objective; a
# checkpoint trained for something else (the bundled all-MiniLM-L6-v2 was trained for
# sentence embeddings with *mean* pooling) may leave it barely trained. That is one reason
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
print(f"{len(train)} train / {len(test)} test utterances, {C} intents: {', '.join(train.names)}")
print("example:", repr(train.texts[0]), "->", train.names[train.labels[0]])

# %% [markdown]
# ## Frozen features of every layer
#
# We run every utterance through the model once (with `torch.no_grad`, weights untouched)
# and keep two sentence vectors per layer $l = 0..L$: the `[CLS]` vector $h^{(l)}_0$ and
# the mean over the real (non-padding) tokens, $\frac{1}{n}\sum_i h^{(l)}_i$.

# %%
import time

from helpers.classify.compute import extract_features

t0 = time.perf_counter()
feats_train = extract_features(tokenizer, model, train.texts)
feats_test = extract_features(tokenizer, model, test.texts)
print(f"features: cls {tuple(feats_train.cls.shape)} = [layers+1, utterances, H], "
      f"{time.perf_counter() - t0:.1f} s for both splits")
assert torch.allclose(feats_train.pooler, pooler_by_hand(model, feats_train.cls[L]), atol=1e-5)

# %% [markdown]
# ## A linear head: logits → softmax → argmax
#
# The head is one linear layer on the last-layer `[CLS]` vector (standardized with the
# training mean and standard deviation):
#
# $$z = W x + b \in \mathbb{R}^{C}, \qquad p = \mathrm{softmax}(z), \qquad \hat y = \arg\max_c z_c .$$
#
# We train $W, b$ with cross-entropy, full batch, Adam, fixed seed; the BERT weights stay frozen.

# %%
from helpers.classify.compute import accuracy, predict, train_head

head = train_head(feats_train.layer(L, "cls"), train.labels, C, seed=0)
X_test = feats_test.layer(L, "cls")
z = head(X_test[:1]).detach()[0]
p = torch.softmax(z, -1)
assert torch.equal(predict(head, X_test[:1]), z.argmax().unsqueeze(0))
print(f"first test utterance {test.texts[0]!r}: predicted id {int(z.argmax())} "
      f"({test.names[int(z.argmax())]}), p = {p.max():.2f}")
acc_last_cls = accuracy(head, X_test, test.labels)
print(f"test accuracy, last-layer [CLS]: {acc_last_cls:.1%} (chance: {1 / C:.1%})")

# %% [markdown]
# ## Where does it go wrong?
#
# The confusion matrix counts, for every true intent (row), what the head predicted (column).

# %%
import matplotlib.pyplot as plt

from helpers.classify.compute import confusion_matrix
from helpers.classify.plots import plot_confusion

cm = confusion_matrix(test.labels, predict(head, X_test).numpy(), C)
ax = plot_confusion(cm, test.names)
plt.show()
off = cm - torch.diag(torch.tensor(cm.diagonal())).numpy()
i, j = divmod(int(off.argmax()), C)
print(f"most frequent confusion: {test.names[i]} -> {test.names[j]} ({off[i, j]} times)" if off.max() else "no confusions")

# %% [markdown]
# ## Try it: type a sentence, see the logits
#
# Type a request and press **Classify**: the box runs the model on your new sentence, applies
# the head and shows one bar per intent; the orange bar is the argmax, the predicted id.

# %%
from helpers.classify.widgets import LogitsBox

box = LogitsBox(tokenizer, model, head, train.names, layer=L, pooling="cls", sentence=SENTENCE)
box

# %% [markdown]
# ## Which layer carries the class?
#
# A *linear probe* is the same head trained on the features of one layer. If a linear map
# can read the intent off layer $l$, the information is there in linear form. We probe every
# layer with both poolings.

# %%
from helpers.classify.compute import probe_per_layer
from helpers.classify.plots import plot_probe_curves

probes = {pooling: probe_per_layer(feats_train, train.labels, feats_test, test.labels, C, pooling)
          for pooling in ("cls", "mean")}
ax = plot_probe_curves({"[CLS]": probes["cls"], "mean-pooled": probes["mean"]}, chance=1 / C)
plt.show()
for pooling, accs in probes.items():
    best = max(range(L + 1), key=accs.__getitem__)
    print(f"{pooling:>4}: embeddings {accs[0]:.0%}, last layer {accs[L]:.0%}, best layer {best} ({accs[best]:.0%})")

# %% [markdown]
# Read the printout above against the plot. At layer 0 the `[CLS]` vector is the same for
# every sentence (token, position and segment embedding of `[CLS]`, no context yet), so its
# probe can only guess; the mean of the embeddings already knows the words.
#
# ## Combining layers
#
# Devlin et al. (2019), *BERT: Pre-training of Deep Bidirectional Transformers for Language
# Understanding*, Table 7, compared such choices for a feature-based tagger on CoNLL-2003
# NER with BERT-base (published dev F1, not measured here):
#
# | features (BERT-base, NER) | dev F1 |
# |---|---|
# | embeddings | 91.0 |
# | second-to-last hidden | 95.6 |
# | last hidden | 94.9 |
# | weighted sum of last four hidden | 95.9 |
# | concat of last four hidden | 96.1 |
# | weighted sum of all 12 layers | 95.5 |
#
# We run the same kind of comparison live, on our task (sentence classification, not token
# tagging) and our model. The learned weighted sum trains one scalar per layer,
# $\alpha = \mathrm{softmax}(s)$, with the head: $x = \sum_{l=0}^{L} \alpha_l\, h^{(l)}_{[CLS]}$.

# %%
from helpers.classify.compute import compare_strategies, last_k_layers

layers4, note = last_k_layers(L)
print(f"'last four' uses {note}")
results = compare_strategies(feats_train, train.labels, feats_test, test.labels, C)
weights = results.pop("_layer_weights")
for name, acc in results.items():
    print(f"{name:<32} {acc:6.1%}")
print("learned layer weights:", " ".join(f"{w:.2f}" for w in weights.tolist()))

# %% [markdown]
# Compare the ranking in the printout with the published table: on a different task and
# model the order can differ, which is exactly why the choice of layer is worth measuring.
#
# ## Summary
#
# * `pooler_output` $= \tanh(W h_{[CLS]} + b)$, rebuilt and checked; it is not the raw `[CLS]` vector.
# * A linear head turns a sentence vector into $C$ logits; softmax gives probabilities and
#   argmax the class id. Trained on frozen features it takes seconds on a CPU.
# * Linear probes per layer show where the class becomes linearly readable; `[CLS]` and mean
#   pooling can behave very differently, and combinations of layers (concat, learned weights)
#   are cheap to try.
#
# ## Exercises
#
# 1. Write `pool(h_cls)` that computes the pooler output from `model.pooler.dense.weight`
#    and `.bias` without calling the pooler module. Check it below.
# 2. Which layer's **mean-pooled** features give the best probe accuracy? Give the layer
#    number (0 = embeddings) as an int, computed from `probes`.
# 3. Compute the confusion matrix of the head above yourself (an array with `cm[true, predicted]`).

# %%
from helpers.exercises.lesson07 import check_exercise_1, check_exercise_2, check_exercise_3

pool = None  # your function here, e.g. def pool(h): return ...
check_exercise_1(pool, model, trace)

# %%
best_mean_layer = None  # your answer here
check_exercise_2(best_mean_layer, probes)

# %%
my_cm = None  # your array here
check_exercise_3(my_cm, test.labels, predict(head, X_test).tolist(), C)
