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
# # 08 — Using the layers in practice
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/bert-layer-by-layer/bert-layer-by-layer/blob/main/lessons/08_layers_in_practice.ipynb)
#
# Knowing what each layer does pays off when you train and deploy a model. This lesson
# measures, on the course's intent data and model, five practical techniques: fine-tuning
# strategies that treat layers differently, keeping only the hidden states you need,
# gradient (activation) checkpointing, dynamic int8 quantization, and a feature cache.
# Every number printed is measured in this run; runs are kept short so the whole lesson
# fits on a laptop CPU.
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
# `MODEL` names the checkpoint (`None`: the course chooses); `SENTENCE` is used to show
# which hidden states a forward pass returns.

# %% tags=["parameters"]
MODEL = None
SENTENCE = "Remind me to buy oat milk on the way home."

# %%
import copy
import time

import numpy as np
import torch

from helpers.model.loading import load_model
from helpers.common.data import load_intents

torch.manual_seed(0); np.random.seed(0)
tokenizer, model = load_model(MODEL)
L, H = model.config.num_hidden_layers, model.config.hidden_size
train, test = load_intents("train"), load_intents("test")
print(f"{L} layers, hidden {H}; {len(train)} train / {len(test)} test utterances, {train.num_classes} intents")

# %% [markdown]
# ## 1. Fine-tuning strategies
#
# Fine-tuning updates BERT's weights together with a head. The classifier here
# (`SentenceClassifier` in `helpers/finetuning/compute.py`) is BERT, mean pooling of the last layer and a
# linear layer, $z = W\,\mathrm{mean}_i(h^{(L)}_i) + b$. Every run starts from a
# `copy.deepcopy` of the loaded model, so `model` itself is never changed. Four strategies:
#
# * **full**: all layers train at one learning rate $\eta$;
# * **freeze lower half**: embeddings and layers $1..\lfloor L/2 \rfloor$ are frozen
#   (lower layers hold more general features, and frozen layers need no gradients);
# * **layer-wise lr decay** (Howard & Ruder, 2018, *Universal Language Model Fine-tuning for Text
#   Classification*, "discriminative fine-tuning"; Sun et al., 2019, *How to Fine-Tune BERT for
#   Text Classification?*): layer $l$ trains with $\eta_l = \eta\, \xi^{\,L+1-l}$, $\xi < 1$;
# * **gradual unfreezing** (Howard & Ruder, 2018): the first epoch trains only the head, each
#   later epoch unfreezes more layers from the top.
#
# To keep this a few seconds per run on a CPU we use 6 utterances per intent, 3 epochs and at
# most 16 tokens; the word-embedding matrix stays frozen in every run (it is most of a small
# BERT's weights). These are demonstrations of cost and behaviour, not tuned results.

# %%
from helpers.finetuning.compute import FINETUNE_STRATEGIES, finetune

small = train.subset(6)
runs = {s: finetune(tokenizer, model, small, test, s, epochs=3, lr=3e-4, batch_size=20, seed=0)
        for s in FINETUNE_STRATEGIES}
print(f"{'strategy':<22}{'test acc':>9}{'seconds':>9}{'trainable at end':>18}")
for s, r in runs.items():
    print(f"{s:<22}{r.accuracy:>9.1%}{r.seconds:>9.1f}{r.trainable_params:>18,}")
assert all(p.grad is None for p in model.parameters()), "the loaded model must stay untouched"

# %% [markdown]
# Read the table above: freezing layers saves the backward pass through them (compare the
# seconds), and with so little data the strategies that change the pretrained layers less can
# hold up well. With a larger data set and more epochs the ranking can change; measure it on yours.
#
# ## 2. Keep only the hidden states you need
#
# A recipe seen in the wild passes a list, `output_hidden_states=[8, 10, 12]`, hoping to get
# only three layers back. Whether that works depends on your transformers version: in the 4.x
# series the argument is a boolean flag, so a list is merely truthy and *all* hidden states
# come back; recent 5.x releases accept a list of indices and return `None` for the others.
# Do not guess: here is what the installed version does with three layer numbers of this model.

# %%
import transformers

from helpers.classify.compute import encode_batch

enc = encode_batch(tokenizer, [SENTENCE])
wanted = sorted({max(1, L - 4), max(1, L - 2), L})
with torch.no_grad():
    out = model(**enc, output_hidden_states=wanted)
    full = model(**enc, output_hidden_states=True).hidden_states
states = out.hidden_states or ()
filled = [i for i, h in enumerate(states) if h is not None]
print(f"transformers {transformers.__version__}: output_hidden_states={wanted} returned "
      f"{len(states)} entries, tensors at {filled}, None elsewhere (the model has {L + 1} hidden states)")
assert all(torch.equal(states[i], full[i]) for i in filled)

# %% [markdown]
# The printout above is the behaviour of your installed version. A method that works with every
# version, and for any module, not just whole layers: register a forward hook on
# `model.encoder.layer[l - 1]` (layer $l$; `model.embeddings` for layer 0) that stores the
# module's output. `keep_hidden_states` does this and removes the hooks afterwards.

# %%
from helpers.practice.compute import keep_hidden_states

with keep_hidden_states(model, wanted) as kept, torch.no_grad():
    model(**enc)
for l in wanted:
    assert torch.allclose(kept[l], full[l], atol=1e-5)
nbytes = lambda ts: sum(t.numel() * t.element_size() for t in ts)
print(f"hooks kept layers {sorted(kept)}: {nbytes(kept.values()):,} bytes instead of "
      f"{nbytes(full):,} for all {L + 1} states (equal to them: checked)")

# %% [markdown]
# ## 3. Gradient checkpointing
#
# Training memory is dominated by the activations autograd **saves for the backward pass**.
# Checkpointing saves only each layer's input and recomputes the layer's insides during
# backward: less memory, more compute. It is switched on with a model *method*
# (`model.gradient_checkpointing_enable()`, renamed `activation_checkpointing_enable()` in
# transformers 5), not with a `from_pretrained` keyword, and it only acts in training mode.
#
# How we measure: `torch.autograd.graph.saved_tensors_hooks` sees every tensor autograd saves
# at the outer level, and a forward pre-hook on each encoder layer sees the layer inputs a
# checkpoint keeps; we add up their storage bytes (each storage once). That is the activation
# memory a training step holds between forward and backward (weights, gradients and optimizer
# state come on top and do not change). A batch of 32 padded to 64 tokens makes the
# difference visible.

# %%
from helpers.finetuning.compute import SentenceClassifier
from helpers.practice.compute import enable_checkpointing, saved_for_backward_bytes

batch = tokenizer(train.texts[:32], padding="max_length", truncation=True, max_length=64, return_tensors="pt")
labels = torch.tensor(train.labels[:32])
clf = SentenceClassifier(copy.deepcopy(model), train.num_classes)
timings = {}
for mode in ("plain", "checkpointed"):
    if mode == "checkpointed":
        method = enable_checkpointing(clf.bert)
    torch.manual_seed(0)
    t = time.perf_counter()
    timings[mode] = (saved_for_backward_bytes(clf, batch, labels), time.perf_counter() - t)
(b0, t0), (b1, t1) = timings["plain"], timings["checkpointed"]
print(f"saved for backward: {b0 / 2**20:.1f} MiB plain, {b1 / 2**20:.1f} MiB with {method}() "
      f"({b0 / b1:.1f}x less); step time {t0:.2f} s vs {t1:.2f} s")

# %% [markdown]
# ## 4. A feature cache
#
# Frozen-feature pipelines ask for the same sentence again and again (every epoch of a head,
# every probe). `FeatureCache` keys each vector by *(model, layer, pooling, text)*: the model
# part is its name, sizes and a weight fingerprint, so a fine-tuned copy never reads the
# original's features. One forward pass fills every layer at once.

# %%
from helpers.practice.compute import FeatureCache

cache = FeatureCache(tokenizer, model)
t = time.perf_counter(); X_train = cache.get(train.texts, L, "mean"); cold = time.perf_counter() - t
t = time.perf_counter(); again = cache.get(train.texts, L, "mean"); warm = time.perf_counter() - t
assert torch.equal(X_train, again)
second = cache.get(train.texts[:5], L - 1, "cls")  # another layer: still no model call
print(f"first call {cold:.2f} s, repeated call {warm * 1e3:.2f} ms ({cold / warm:,.0f}x faster); "
      f"{cache.misses} texts encoded, {cache.hits} answered from the cache")

# %% [markdown]
# ## 5. Dynamic int8 quantization
#
# `torch.ao.quantization.quantize_dynamic` replaces every `nn.Linear` by a version whose weights
# are stored as 8-bit integers (one scale per tensor); activations are quantized on the fly.
# torch 2.13 still ships it but marks it deprecated in favour of the separate `torchao`
# package; `quantize_int8` silences that warning. We measure file size, speed and what it does
# to a head trained on float32 features.

# %%
from helpers.classify.compute import accuracy, extract_features, train_head
from helpers.practice.compute import best_time, quantize_int8, state_dict_bytes

qmodel = quantize_int8(model)
size32, size8 = state_dict_bytes(model), state_dict_bytes(qmodel)
few = test.texts[:32]
speed32 = best_time(lambda: extract_features(tokenizer, model, few, progress=False))
speed8 = best_time(lambda: extract_features(tokenizer, qmodel, few, progress=False))
print(f"size {size32 / 2**20:.1f} MiB -> {size8 / 2**20:.1f} MiB; "
      f"{len(few)} sentences in {speed32:.3f} s -> {speed8:.3f} s")

# %%
head = train_head(X_train, train.labels, train.num_classes, seed=0)
X32 = cache.get(test.texts, L, "mean")
X8 = extract_features(tokenizer, qmodel, test.texts).layer(L, "mean")
drift = (X8 - X32).norm(dim=-1).mean() / X32.norm(dim=-1).mean()
print(f"test accuracy: float32 {accuracy(head, X32, test.labels):.1%}, int8 {accuracy(head, X8, test.labels):.1%}; "
      f"relative feature change {drift:.1%}")

# %% [markdown]
# The printouts above are the trade: a smaller model (the embeddings are not `nn.Linear` and
# stay float32, so the file shrinks by less than 4x), a speed change that depends on your CPU's
# int8 kernels, and a small shift in the features that the head may or may not notice.
#
# ## Summary
#
# * Fine-tuning strategies differ in which layers move and how fast; freezing lower layers
#   also saves time. All runs here started from a deep copy.
# * What `output_hidden_states=[...]` does depends on the transformers version (check it, as
#   above); forward hooks on `model.encoder.layer[i]` keep only what you need in any version.
# * Gradient checkpointing (a model method) trades recomputation for far fewer bytes saved
#   for backward.
# * Caching features by (model, layer, pooling, text) makes repeated queries almost free;
#   dynamic int8 quantization shrinks the linear layers at a small cost in fidelity.
#
# ## Exercises
#
# 1. Write `lrs(base_lr, decay, num_layers)` returning the list of learning rates for the
#    embeddings (index 0) and layers 1..L under layer-wise decay, $\eta\,\xi^{L+1-l}$.
# 2. Using `keep_hidden_states`, collect the output of layer 1 only for `SENTENCE` and
#    hand the kept dict to the checker.
# 3. How many times more bytes does the plain step save for backward than the checkpointed
#    one? Compute the ratio from `timings`.

# %%
from helpers.exercises.lesson08 import check_exercise_1, check_exercise_2, check_exercise_3

lrs = None  # your function here
check_exercise_1(lrs)

# %%
kept_layer1 = None  # your dict here
check_exercise_2(kept_layer1, tokenizer, model, SENTENCE)

# %%
ratio = None  # your number here
check_exercise_3(ratio, timings)
