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

import matplotlib.pyplot as plt
import numpy as np
import torch

from helpers.model.loading import load_model
from helpers.common.data import load_intents

torch.manual_seed(0); np.random.seed(0)
loaded = load_model(MODEL)
tokenizer, model = loaded
L, H = model.config.num_hidden_layers, model.config.hidden_size
train, test = load_intents("train"), load_intents("test")
C = train.num_classes
print(f"{L} layers, hidden {H}; {len(train)} train / {len(test)} test utterances, {C} intents")

# %% [markdown]
# **How this lesson measures.** Timings on a shared or busy computer jump around, and the
# first run of anything pays one-off costs (memory allocation, kernel selection). So every
# timing below starts with an untimed warm-up and runs the two candidates *in turns*
# (a, b, a, b, ...), so that a slow spell hits both alike. Each turn gives one ratio, b's time
# over a's (`compare_times` in `helpers/practice/compute.py`); we report the median ratio and its
# range, and call one faster only when the ratio falls on the same side of 1 in **every** turn
# and a sign test makes that unlikely by chance ($p < 0.05$, so at least 6 turns; we take 9).
# A single slow run then cannot hide a steady difference, as it could if we only asked
# whether the two ranges of times overlap. Accuracies carry a
# 95% interval over the test items (and over seeds for anything trained). Two classifiers
# tested on the same items are compared item by item, as in lesson 07: the 95% interval of the
# paired difference (`paired_difference` in `helpers/classify/compute.py`) must exclude 0
# before they are called different. The sentences that compare them are computed by the
# cells, not written in advance.
#
# ## 1. Fine-tuning strategies
#
# Fine-tuning updates BERT's weights together with a head. The classifier here
# (`SentenceClassifier` in `helpers/finetuning/compute.py`) is BERT, mean pooling of the last layer and a
# linear layer, $z = W\,\mathrm{mean}_i(h^{(L)}_i) + b$. Every run starts from a
# `copy.deepcopy` of the loaded model, so `model` itself is never changed. Four fine-tuning
# strategies and one baseline that fine-tunes nothing:
#
# * **full**: all layers train at one learning rate $\eta$;
# * **freeze lower half**: embeddings and layers $1..\lfloor L/2 \rfloor$ are frozen, so they
#   need no gradients and the backward pass stops earlier. The usual motivation is that
#   fine-tuning changes mostly the top layers anyway: Merchant et al. (2020), *What Happens To
#   BERT Embeddings During Fine-tuning?*, found this for BERT-base, with large differences
#   between tasks. The popular reason "lower layers hold more general features" is not
#   established for transformers: Liu et al. (2019), *Linguistic Knowledge and Transferability
#   of Contextual Representations*, found the *middle* layers of BERT-base and BERT-large the
#   most transferable across their probing tasks, with no steady rise in task-specificity
#   from bottom to top. We do not measure generality here;
# * **layer-wise lr decay** (Howard & Ruder, 2018, *Universal Language Model Fine-tuning for Text
#   Classification*, "discriminative fine-tuning"; Sun et al., 2019, *How to Fine-Tune BERT for
#   Text Classification?*): layer $l$ trains with $\eta_l = \eta\, \xi^{\,L+1-l}$, $\xi < 1$;
# * **gradual unfreezing** (Howard & Ruder, 2018): the first epoch trains only the head, each
#   later epoch unfreezes more layers from the top;
# * **frozen encoder, head only**, the baseline: BERT is not trained at all; only the linear
#   head is, on the mean-pooled last layer, the way lesson 07 trains its heads (standardized
#   features, full-batch Adam at learning rate 0.01, `HEAD_STEPS` steps, which reached an
#   independent solver there). At the fine-tuning learning rate and these few steps a head alone
#   would barely leave its random start, so it gets its own, converged training. If no
#   fine-tuning strategy beats it, fine-tuning bought nothing on this data.
#
# To keep this short on a CPU, every strategy sees the same few utterances per intent, the same
# seeds, a few epochs and short inputs (the cell names and prints each number); `compare_finetuning`
# warms up first and runs the strategies in turns. The word-embedding matrix stays frozen in every
# run (it is a large share of a small BERT's weights). So few steps only move the weights at a
# learning rate well above the usual ones for BERT (the cell prints how far above). These are
# demonstrations of cost and behaviour, not tuned results.

# %%
from helpers.classify.compute import HEAD_STEPS  # lesson 07's steps for a linear head
from helpers.finetuning.compute import FINETUNE_STRATEGIES, compare_finetuning
from helpers.practice.compute import model_key
from helpers.practice.plots import plot_accuracy_vs_time

key_before = model_key(model)  # a hash of every weight of the loaded model
FT_SEEDS, FT_LR, FT_EPOCHS, FT_BATCH = (0, 1, 2), 3e-4, 3, 20
FT_PER_INTENT, FT_MAX_LEN = 4, 16  # utterances per intent; tokens per input
ft_train = train.subset(FT_PER_INTENT)
print(f"{len(ft_train)} training utterances ({FT_PER_INTENT} per intent), {FT_EPOCHS} epochs of batches of "
      f"{FT_BATCH}, inputs cut at {FT_MAX_LEN} tokens (longest here: "
      f"{max(len(tokenizer(t)['input_ids']) for t in ft_train.texts + test.texts)}), seeds {FT_SEEDS}; "
      f"baseline head: {HEAD_STEPS} steps")
runs = compare_finetuning(tokenizer, model, ft_train, test, FINETUNE_STRATEGIES, seeds=FT_SEEDS, epochs=FT_EPOCHS,
                          lr=FT_LR, batch_size=FT_BATCH, max_length=FT_MAX_LEN, head_steps=HEAD_STEPS)
assert model_key(model) == key_before, "the loaded model must stay untouched"
ax = plot_accuracy_vs_time(runs.accuracy, runs.seconds)
plt.show()
# Devlin et al. (2019), Appendix A.3, fine-tune BERT with Adam at 5e-5, 3e-5 or 2e-5
print(f"learning rate {FT_LR:g}: {FT_LR / 5e-5:.0f}-{FT_LR / 2e-5:.0f}x the rates Devlin et al. (2019) "
      f"recommend for fine-tuning BERT (5e-5 to 2e-5)")

# %%
import textwrap

from helpers.classify.compute import compare_paired
from helpers.finetuning.compute import baseline_verdict
from helpers.practice.compute import compare_times, median_range

print(f"{'strategy':<27}{'test accuracy [95% interval]; seeds':<44}{'training s/run: median [range]':<32}"
      "trainable at end")
for s in FINETUNE_STRATEGIES:
    print(f"{s:<27}{runs.accuracy[s].describe():<44}{median_range(runs.seconds[s]).format('.2f'):<32}"
          f"{runs.trainable_params[s]:,}")
print("(training s/run: wall-clock seconds of one run's training loop, this machine; test evaluation not included)")
print(compare_paired(runs.accuracy))
print(textwrap.fill(baseline_verdict(runs.accuracy), 110, subsequent_indent="    "))

# %% [markdown]
# The seconds per run above are three runs each, too few to compare in turns. For the cost of
# freezing, time one training step (forward + backward of one batch) of the seed-0 "full" and
# "freeze lower half" models from section 1, nine times in turns.

# %%
from helpers.classify.compute import encode_batch
from helpers.practice.compute import time_interleaved, training_step

step_batch = encode_batch(tokenizer, ft_train.texts[:FT_BATCH], FT_MAX_LEN, device=model.device)
step_labels = torch.tensor(ft_train.labels[:FT_BATCH], device=model.device)
timed = ("full", "freeze lower half")
ft_step = time_interleaved({s: training_step(runs.models[s], step_batch, step_labels) for s in timed}, repeats=9)
for s in timed:
    runs.models[s].eval()  # training_step switched them to training mode (dropout); later sections read features
print(textwrap.fill(f"one training step, {len(step_labels)} utterances: "
                    + compare_times("full", ft_step["full"], "freeze lower half", ft_step["freeze lower half"]),
                    110, subsequent_indent="    "))

# %% [markdown]
# Read the figure and the printouts together. Freezing layers removes the backward pass
# through them and their optimizer updates: whether that shows up as fewer seconds on your
# machine is the last printed line. With this little data, the accuracy intervals are wide;
# the paired comparisons above say which strategies this test set can tell apart, and whether
# any of them beats leaving the encoder as it is. With
# a larger data set and more epochs the ranking can change: measure it on yours. This section
# measures cost and accuracy only; which layers each strategy moves, and how far, is what
# lesson 10 measures.
#
# ## 2. Keep only the hidden states you need
#
# A recipe seen in the wild passes a list, `output_hidden_states=[8, 10, 12]`, hoping to get
# only three layers back -- either to the forward call or to `from_pretrained`, which stores
# it in the model's config. What happens depends on the transformers version. The course
# authors checked this by installing each transformers version below in turn and trying both
# paths on the bundled model, asking for hidden states $[2, 4, 6]$ of 7 (**checked on
# 2026-12-02**; newer versions may behave differently again):
#
# | transformers | forward argument | `from_pretrained(..., output_hidden_states=[...])` |
# |---|---|---|
# | 4.57 | read as `True`: all 7 states | accepted; then read as `True`: all 7 |
# | 5.15 (Colab's version on 2026-12-02) | read as `True`: all 7 states | refused: `StrictDataclassFieldValidationError` (the config field must be a bool) |
# | 5.17 | selects, but shifted: entries 2 and 4 hold states 3 and 5, nothing for 6 | refused, as in 5.15 |
# | 5.22 | shifted, as in 5.17 | accepted; shifted, as in 5.17 |
# | 5.23, 5.24 | honoured: states 2, 4, 6, `None` elsewhere | honoured |
#
# This table is a record of that check, not something this notebook re-runs. For the version you
# have installed, the statement that counts is the next cell's printout: it asks the installed
# transformers, for three layer numbers of this model, both ways, and compares every returned
# tensor with the full list.

# %%
import transformers

from helpers.model.trace import encode
from helpers.practice.compute import try_from_pretrained, what_comes_back

enc, _ = encode(tokenizer, model, SENTENCE)  # warns if SENTENCE is longer than the model accepts
enc.pop("offset_mapping")
wanted = sorted({max(1, L - 4), max(1, L - 2), L})
with torch.no_grad():
    full = model(**enc, output_hidden_states=True).hidden_states
argument = what_comes_back(lambda: model(**enc, output_hidden_states=wanted), wanted, full)
listed, error = try_from_pretrained(loaded.choice.path, output_hidden_states=wanted)
config = ("error", error) if listed is None else what_comes_back(lambda: listed(**enc), wanted, full)
print(f"transformers {transformers.__version__}, asking for hidden states {wanted} of {L + 1}:")
print(f"  model(..., output_hidden_states={wanted}): {argument[0]} -- {argument[1]}")
print(f"  from_pretrained(..., output_hidden_states={wanted}): {config[0]} -- {config[1]}")

# %% [markdown]
# A method that works with every version, and for any module, not just whole layers: register
# a forward hook on `model.encoder.layer[l - 1]` (layer $l$; `model.embeddings` for layer 0)
# that stores the module's output. `keep_hidden_states` (in `helpers/practice/compute.py`)
# does this and removes the hooks afterwards.

# %%
from helpers.practice.compute import keep_hidden_states

with keep_hidden_states(model, wanted) as kept, torch.no_grad():
    model(**enc)
for l in wanted:
    assert torch.allclose(kept[l], full[l], atol=1e-5)
nbytes = lambda ts: sum(t.numel() * t.element_size() for t in ts)
print(f"hooks kept layers {sorted(kept)}: {nbytes(kept.values()):,} bytes instead of "
      f"{nbytes(full):,} for all {L + 1} states (each equal to the model's own: checked)")

# %% [markdown]
# ## 3. Gradient checkpointing
#
# A training step holds four kinds of memory:
#
# * the **weights** (4 bytes per parameter in float32);
# * their **gradients** (4 more bytes per trained parameter);
# * the **optimizer state**: AdamW keeps two running averages per parameter, `exp_avg` and
#   `exp_avg_sq` (8 more bytes) -- about **16 bytes per parameter** in all, whatever the batch;
# * the **activations** autograd saves in the forward pass for the backward pass, which grow
#   with the batch size and the input length.
#
# Checkpointing attacks only the last: it keeps each layer's input and recomputes the layer's
# insides during backward. It is switched on with a model *method*
# (`model.gradient_checkpointing_enable()`, renamed `activation_checkpointing_enable()` in
# transformers 5) and acts only in training mode. A keyword seen in some recipes,
# `from_pretrained(..., use_gradient_checkpointing=True)`, is not one of them; here is what
# the installed version does with it, and with the old config key `gradient_checkpointing=True`.

# %%
from helpers.practice.compute import checkpointing_is_on

for keyword in ("use_gradient_checkpointing", "gradient_checkpointing"):
    loaded_with, error = try_from_pretrained(loaded.choice.path, **{keyword: True})
    outcome = error or f"accepted; checkpointing switched on: {checkpointing_is_on(loaded_with)}"
    print(f"from_pretrained(..., {keyword}=True) -> {outcome}")
del loaded_with

# %% [markdown]
# Now the four parts, measured on one training step of a batch of 8 utterances padded to
# 32 tokens. `training_state_bytes` adds up the weights, gradients and AdamW state from the
# tensors themselves after one AdamW step. `saved_for_backward` counts the storages autograd
# saves (through `torch.autograd.graph.saved_tensors_hooks`) plus the layer inputs a
# checkpoint keeps. Autograd's saved tensors **include references to the weights** (a linear
# layer needs $W$ to pass the gradient to its input); those are the model's own weights, no
# extra memory, so they are counted apart and left out of "activations".

# %%
from helpers.finetuning.compute import SentenceClassifier
from helpers.practice.compute import enable_checkpointing, saved_for_backward, training_state_bytes

batch = tokenizer(train.texts[:8], padding="max_length", truncation=True, max_length=32,
                  return_tensors="pt").to(model.device)
inputs, labels = {k: batch[k] for k in ("input_ids", "attention_mask")}, torch.tensor(train.labels[:8], device=model.device)
clfs = {mode: SentenceClassifier(copy.deepcopy(model), C) for mode in ("plain", "checkpointed")}
method = enable_checkpointing(clfs["checkpointed"].bert)
memory = {mode: saved_for_backward(clf, inputs, labels) for mode, clf in clfs.items()}
opt = torch.optim.AdamW(clfs["plain"].parameters(), lr=1e-5)
torch.nn.functional.cross_entropy(clfs["plain"](**inputs), labels).backward()
opt.step()
state = training_state_bytes(clfs["plain"], opt)

# %%
from helpers.practice.plots import plot_training_memory

B, T = inputs["input_ids"].shape
parts = {mode: {**state, "activations saved for backward": m.activation_bytes} for mode, m in memory.items()}
ax = plot_training_memory(parts, title=f"memory one training step holds, {B} utterances x {T} tokens")
plt.show()
n_params = sum(p.numel() for p in clfs["plain"].parameters())
unused = sum(p.numel() for p in clfs["plain"].parameters() if p.grad is None)
print(f"{n_params:,} parameters; measured {sum(state.values()) / n_params:.1f} bytes per parameter for weights + "
      f"gradients + AdamW state:\n  {', '.join(f'{k} {v / 2**20:.0f} MiB' for k, v in state.items())}; "
      f"{unused:,} parameters got no gradient\n  (not used by this classifier), so no optimizer state either")
for mode, m in memory.items():
    print(f"{mode}: activations {m.activation_bytes / 2**20:.1f} MiB in {m.activation_tensors} tensors; layer forwards "
          f"{m.layer_calls_forward} + {m.layer_calls_backward} recomputed in backward\n  also saved: "
          f"{m.parameter_tensors} references to weights ({m.parameter_bytes / 2**20:.0f} MiB, not extra)")
total = {mode: sum(p.values()) for mode, p in parts.items()}
share = memory["plain"].activation_bytes / total["plain"]
print(f"with {method}(): the activations shrink "
      f"{memory['plain'].activation_bytes / memory['checkpointed'].activation_bytes:.1f}x, the whole step's memory "
      f"{total['plain'] / total['checkpointed']:.2f}x;\n  without it the activations are {share:.0%} of the step's "
      f"memory at this batch\n  (the activations grow with batch size and length, the other parts do not)")

# %% [markdown]
# The recomputation is the price: each checkpointed layer runs its forward a second time
# during backward (the last printed numbers count those calls). How much wall-clock time
# that costs depends on the machine; measured in turns after a warm-up:

# %%
step_times = time_interleaved({mode: training_step(clf, inputs, labels) for mode, clf in clfs.items()},
                              repeats=9, warmup=1)
print(textwrap.fill("one forward + backward: " + compare_times("plain", step_times["plain"], "checkpointed",
                                                                step_times["checkpointed"]), 110, subsequent_indent="    "))

# %% [markdown]
# ## 4. A feature cache
#
# Frozen-feature pipelines ask for the same sentence again and again (every epoch of a head,
# every probe). `FeatureCache` keys each vector by *(model, layer, pooling, text)*. The model
# part of the key, `model_key`, hashes **every** weight and buffer, so two models that differ
# in any weight get different keys, even when their caches share one store. The key is taken
# when the cache is created: after changing a model's weights in place, make a new cache. One
# forward pass fills every layer at once.

# %%
from helpers.practice.compute import FeatureCache

from helpers.classify.compute import extract_features

cache = FeatureCache(tokenizer, model)
t = time.perf_counter(); X_train = cache.get(train.texts, L, "mean"); cold = time.perf_counter() - t
warm = time_interleaved({"cached": lambda: cache.get(train.texts, L, "mean")}, repeats=5, warmup=0)["cached"]
# the cached features against a fresh, independent run of the model
assert torch.allclose(X_train, extract_features(tokenizer, model, train.texts, progress=False).layer(L, "mean"), atol=1e-5)
misses = cache.misses
second = cache.get(train.texts[:5], max(L - 1, 0), "cls")  # another layer and pooling
assert cache.misses == misses, "the first pass cached every layer: no text may be encoded again"
print(f"first call {cold:.2f} s (one run: it includes the model's forward passes)\nrepeated calls: median "
      f"{median_range(warm).estimate * 1e3:.2f} ms [{min(warm) * 1e3:.2f}, {max(warm) * 1e3:.2f}] over {len(warm)} calls; "
      f"{cache.misses} texts encoded, {cache.hits} answered from the cache (the other layer too)")

# %% [markdown]
# Does a fine-tuned copy really never read the original's features? Test it on one from
# section 1: give it a cache that **shares the original's store**. For scale, the cell also
# measures how far apart two different utterances' features lie in the original model (each
# paired with a randomly chosen other one, `random_partners` in `helpers/practice/compute.py`).

# %%
from helpers.practice.compute import random_partners, relative_change

tuned = runs.models["full"].bert
shared = FeatureCache(tokenizer, tuned, store=cache.store)
X_tuned = shared.get(train.texts[:20], L, "mean")
assert shared.hits == 0 and shared.misses == 20, "the fine-tuned copy must not read the original's entries"
moved = relative_change(X_train[:20], X_tuned).median().item()
apart = relative_change(X_train, X_train[random_partners(len(X_train))]).median().item()
print(f"fine-tuned copy on the shared store: {shared.hits} hits, {shared.misses} misses")
print(textwrap.fill(
    f"fine-tuning ('full', lr {FT_LR:g}) moved the last-layer features by a median {moved:.1%} of their length; "
    f"two different training utterances lie a median {apart:.1%} apart in the original model: fine-tuning moved "
    f"a sentence {'further' if moved > apart else 'less far'} than swapping it for another", 110, subsequent_indent="    "))

# %% [markdown]
# ## 5. Dynamic int8 quantization
#
# `torch.ao.quantization.quantize_dynamic` replaces every `nn.Linear` by a version whose weights
# are stored as 8-bit integers (one scale per tensor); activations are quantized on the fly,
# one scale per tensor and batch. Recent torch versions still ship it but mark it deprecated in
# favour of the separate `torchao` package (the cell prints the installed torch version and
# whether it warned); `quantize_int8` keeps that warning out of the output. We measure four
# things: the size of the saved weights, the time for a batch, the test accuracy of a head
# trained on float32 features (three seeds) when it is fed int8 features, and -- per layer --
# how far int8 moves each sentence's feature. For scale, the last panel also shows how far a
# sentence's feature lies from another test sentence's, chosen at random (the test file is
# sorted by intent, so its *next* sentence would mostly share the intent).

# %%
from helpers.classify.compute import SeededAccuracy, correct_per_item, extract_features, train_head
from helpers.practice.compute import feature_change_per_layer, quantize_int8_with_warnings, state_dict_bytes
from helpers.practice.plots import plot_int8_comparison

qmodel, quant_warnings = quantize_int8_with_warnings(model)
models = {"float32": model, "int8": qmodel}
sizes = {name: state_dict_bytes(m) for name, m in models.items()}
few = test.texts[:32]
speed = time_interleaved({name: lambda m=m: extract_features(tokenizer, m, few, progress=False)
                          for name, m in models.items()}, repeats=9, warmup=1)
feats = {name: extract_features(tokenizer, m, test.texts, progress=False) for name, m in models.items()}
heads = [train_head(X_train, train.labels, C, seed=s, progress=False) for s in FT_SEEDS]
acc = {name: SeededAccuracy(torch.stack([correct_per_item(h, f.layer(L, "mean"), test.labels) for h in heads]), FT_SEEDS)
       for name, f in feats.items()}
change, between = feature_change_per_layer(feats["float32"], feats["int8"], "mean")
axes = plot_int8_comparison(sizes, speed, {n: a.interval() for n, a in acc.items()}, change, between,
                            timed=f"{len(few)} sentences")
plt.show()

# %%
from helpers.classify.compute import compare_two_paired, predict

embed = state_dict_bytes(model.embeddings)
deprecated = [w for w in quant_warnings if "deprecat" in w.lower()]
print(textwrap.fill(f"torch {torch.__version__}: quantize_dynamic " + (
    f"warned that it is deprecated: {deprecated[0][:160]}" if deprecated else
    "raised no deprecation warning" + (f" ({len(quant_warnings)} other warning(s))" if quant_warnings else "")),
    110, subsequent_indent="    "))
print(f"size: {sizes['float32'] / 2**20:.1f} MiB -> {sizes['int8'] / 2**20:.1f} MiB "
      f"({sizes['int8'] / sizes['float32']:.0%}); the embeddings ({embed / 2**20:.1f} MiB) are not nn.Linear and stay float32")
print(textwrap.fill(f"{len(few)} sentences: " + compare_times("float32", speed["float32"], "int8", speed["int8"]),
                    110, subsequent_indent="    "))
print(textwrap.fill("test accuracy: " + compare_two_paired("float32", acc["float32"], "int8", acc["int8"]), 110,
                    subsequent_indent="    "))
same = (predict(heads[0], feats["float32"].layer(L, "mean")) == predict(heads[0], feats["int8"].layer(L, "mean"))).float()
print(f"the seed-0 head gives the same answer on {same.mean():.0%} of the {len(test)} test utterances")
m, b = change[L].median().item(), between[L].median().item()
print(textwrap.fill(f"last layer: int8 moves a sentence's feature by a median {m:.1%} of its length; a test sentence "
                    f"and a random other one lie a median {b:.1%} apart (ratio {m / max(b, 1e-12):.2f})", 110,
                    subsequent_indent="    "))

# %% [markdown]
# The printouts above are the trade, in numbers: how much smaller the file got, whether int8
# was faster on *this* CPU (that depends on its int8 kernels), how far int8 moves a sentence
# compared with swapping it for another sentence, and whether a head trained on float32
# features noticed. Judge "small" or "large" from those numbers for your own use.
#
# ## Summary
#
# * Fine-tuning strategies differ in cost: freezing lower layers removes part of the backward
#   pass (the per-step times in turns are printed in section 1). Whether their accuracies
#   differ on this data, and whether any of them beats a frozen encoder with a trained head, are
#   the paired verdicts printed there; which layers each one moves is lesson 10's subject.
#   All runs here started from a deep copy, and the loaded model's weight hash was checked
#   unchanged.
# * What `output_hidden_states=[...]` does depends on the transformers version and on whether
#   it goes to the forward call or to `from_pretrained` (check it, as above); forward hooks on
#   `model.encoder.layer[i]` keep only what you need in any version.
# * A training step holds weights, gradients and optimizer state (about 16 bytes per parameter
#   with AdamW in float32) plus the activations saved for backward. Gradient checkpointing (a
#   model method, not a `from_pretrained` keyword) shrinks only the activations, and pays with
#   a second forward pass of every layer during backward.
# * Caching features by (model hash, layer, pooling, text) makes repeated queries almost free;
#   dynamic int8 quantization shrinks the linear layers and moves the features by an amount
#   the last figure puts in scale.
#
# ## Exercises
#
# 1. Write `lrs(base_lr, decay, num_layers)` returning the list of learning rates for the
#    embeddings (index 0) and layers 1..L under layer-wise decay, $\eta\,\xi^{L+1-l}$.
# 2. Using `keep_hidden_states`, collect the output of layer 1 only for `SENTENCE` and
#    hand the kept dict to the checker.
# 3. Section 3 printed how many times more activation bytes the plain step saves for
#    backward than the checkpointed one, for 8 utterances x 32 tokens. Measure the same
#    ratio for **4 utterances padded to 64 tokens** (the first four training utterances, built
#    like `batch` there, with their labels), using `saved_for_backward` on both `clfs`
#    (weights not included). Same number of tokens, longer sentences: does the ratio grow
#    or shrink?

# %%
from helpers.exercises.lesson08 import check_exercise_1, check_exercise_2, check_exercise_3

lrs = None  # your function here
check_exercise_1(lrs)

# %%
kept_layer1 = None  # your dict here
check_exercise_2(kept_layer1, tokenizer, model, SENTENCE)

# %%
ratio = None  # your number here
check_exercise_3(ratio, clfs, tokenizer, train, memory)
