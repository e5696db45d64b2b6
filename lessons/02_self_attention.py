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
# # 02 — Self-attention, rebuilt by hand
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/bert-layer-by-layer/bert-layer-by-layer/blob/main/lessons/02_self_attention.ipynb)
#
# Every encoder layer starts with multi-head self-attention: each token looks at every
# other token and takes a weighted mix of them. Here we compute layer 1's attention step
# by step from its weight matrices, check each step against the model, see what the
# attention mask does to a padded batch, and explore the heads with two sliders.
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
# `MODEL` names the checkpoint (`None`: the course chooses) and `SENTENCE` is the text we
# follow. Nothing below depends on a particular size or sentence.

# %% tags=["parameters"]
MODEL = None
SENTENCE = "The bank by the river was unbelievably quiet this morning."

# %%
import math

import torch

from helpers.model.loading import load_model
from helpers.model.trace import trace_text

tokenizer, model = load_model(MODEL)
config = model.config
L, H, A = config.num_hidden_layers, config.hidden_size, config.num_attention_heads
d = H // A
trace = trace_text(tokenizer, model, SENTENCE)
print(f"{L} layers, hidden {H}, {A} heads of size d = {d}; {trace.seq_len} tokens")

# %% [markdown]
# On the map of lesson 00 (`architecture_diagram`, in `helpers/architecture/plots.py`) this
# lesson is the self-attention block at the start of every encoder layer, up to its output
# projection.

# %%
import matplotlib.pyplot as plt

from helpers.architecture.plots import architecture_diagram

architecture_diagram(config, highlight="attention")
plt.show()

# %% [markdown]
# ## Queries, keys and values
#
# Layer 1 reads the embedding output $X$ = `hidden_states[0]` ($n \times H$). Its
# `BertSelfAttention` module holds three linear maps, `query`, `key` and `value`:
#
# $$Q = XW_Q^\top + b_Q,\qquad K = XW_K^\top + b_K,\qquad V = XW_V^\top + b_V .$$
#
# (`nn.Linear` stores $W$ as *out × in*, hence the transpose.)

# %%
self_attention = model.encoder.layer[0].attention.self
X = trace.hidden(0)
with torch.no_grad():
    Q = X @ self_attention.query.weight.T + self_attention.query.bias
    K = X @ self_attention.key.weight.T + self_attention.key.bias
    V = X @ self_attention.value.weight.T + self_attention.value.bias
    assert torch.allclose(Q, self_attention.query(X), atol=1e-5)
print("X", tuple(X.shape), "-> Q, K, V", tuple(Q.shape))

# %% [markdown]
# ## Splitting into heads
#
# The $H$ columns are $A$ heads of $d = H/A$ columns each. A reshape to $n \times A \times d$
# and a transpose give one $n \times d$ matrix per head, with no extra weights.

# %%
def split_heads(x):
    return x.view(x.shape[0], A, d).transpose(0, 1)  # [seq, H] -> [heads, seq, d]

Qh, Kh, Vh = split_heads(Q), split_heads(K), split_heads(V)
print("per head:", tuple(Qh.shape))

# %% [markdown]
# ## Scaled dot products and softmax
#
# Each query is compared with every key; dividing by $\sqrt d$ keeps the scores from
# growing with the head size (Vaswani et al., 2017, *Attention Is All You Need*). A softmax
# over the keys turns each row into probabilities:
#
# $$P = \mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt d} + M\right),\qquad
# \mathrm{softmax}(s)_j = \frac{e^{s_j}}{\sum_k e^{s_k}},$$
#
# where $M$ is the attention mask (zero here: one sentence, no padding).

# %%
with torch.no_grad():
    scores = Qh @ Kh.transpose(-1, -2) / math.sqrt(d)
    shifted = scores - scores.max(dim=-1, keepdim=True).values  # same softmax, no overflow
    P = shifted.exp() / shifted.exp().sum(dim=-1, keepdim=True)
# trace.attention(l) counts layers from 1 like the course; the model's tuple outputs.attentions counts from 0
assert torch.allclose(P, trace.attention(1), atol=1e-5)  # our softmax against the model's own probabilities
print(f"P {tuple(P.shape)} equals trace.attention(1) = outputs.attentions[0]; "
      f"max |diff| = {(P - trace.attention(1)).abs().max():.1e}")
print(f"row sums lie in [{P.sum(dim=-1).min():.6f}, {P.sum(dim=-1).max():.6f}]: "
      "each query spreads one unit of attention over the keys")

# %% [markdown]
# ## Context vectors, merging heads, the output projection
#
# Each head mixes the value vectors with its probabilities, $C_h = P_h V_h$. The heads are
# put side by side again ($n \times H$), and `attention.output.dense` projects the result:
# $\mathrm{MultiHead}(X) = [C_1, \dots, C_A]\, W_O^\top + b_O$. (The residual and LayerNorm
# that follow are lesson 03.) We compare the merged context with what the model's
# `BertSelfAttention` module returns, and the projection with what its `attention.output.dense`
# returns, both caught with forward hooks during one more forward pass.

# %%
output_dense = model.encoder.layer[0].attention.output.dense
with torch.no_grad():
    context = (P @ Vh).transpose(0, 1).reshape(trace.seq_len, H)  # merge heads
    projected = context @ output_dense.weight.T + output_dense.bias

caught = {}
hooks = [self_attention.register_forward_hook(lambda mod, args, out: caught.update(context=out[0][0])),
         output_dense.register_forward_hook(lambda mod, args, out: caught.update(projected=out[0]))]
with torch.no_grad():
    model(input_ids=trace.input_ids[None], token_type_ids=trace.token_type_ids[None])
for hook in hooks:
    hook.remove()
assert torch.allclose(context, caught["context"], atol=1e-5)
assert torch.allclose(projected, caught["projected"], atol=1e-5)
print(f"context {tuple(context.shape)} and its projection {tuple(projected.shape)} match the model's modules; "
      f"max |diff| = {(projected - caught['projected']).abs().max():.1e}")

# %% [markdown]
# ## Every layer
#
# `self_attention_by_hand` in `helpers/attention/rebuild.py` does the same steps as small named
# functions (`project_qkv`, `split_heads`, `attention_scores`, `softmax_by_hand`,
# `merge_heads`). Layer $l$ reads `hidden_states[l-1]`; its probabilities match the
# model's for every layer:

# %%
from helpers.attention.rebuild import self_attention_by_hand

with torch.no_grad():
    for layer in range(1, L + 1):
        _, probs = self_attention_by_hand(model.encoder.layer[layer - 1], trace.hidden(layer - 1))
        assert torch.allclose(probs, trace.attention(layer), atol=1e-5), layer
print(f"all {L} layers: attention probabilities rebuilt and equal")

# %% [markdown]
# ## The attention mask
#
# A batch needs equal lengths, so shorter sentences are padded with `[PAD]`. The
# `attention_mask` (1 = real, 0 = padding) becomes an additive mask: modeling_bert adds
# $(1 - m_j)\cdot$ `finfo.min` to every score of key $j$, so after the softmax a padded key
# gets probability 0, for every query and every head. We pad a batch of our sentence and
# a short one to a length longer than both.

# %%
from helpers.attention.plots import mask_heatmap
from helpers.model.trace import max_input_tokens

SHORT = "It rained."
length = min(max(trace.seq_len, 6) + 2, max_input_tokens(tokenizer, model))  # two [PAD]s more, within the maximum
batch = tokenizer([SENTENCE, SHORT], padding="max_length", truncation=True, max_length=length,
                  return_tensors="pt").to(model.device)
with torch.no_grad():
    masked = model(**batch, output_attentions=True)
    unmasked = model(input_ids=batch["input_ids"], token_type_ids=batch["token_type_ids"])
mask = batch["attention_mask"]
mask_heatmap(mask, [tokenizer.convert_ids_to_tokens(row) for row in batch["input_ids"].tolist()])
plt.show()
pad_keys = (mask == 0)  # [batch, seq]
on_pads = 0.0  # the largest probability any query of any head gives a padded key
for layer_probs in masked.attentions:  # [batch, heads, queries, keys], one tensor per layer
    for b in range(len(pad_keys)):
        if pad_keys[b].any():
            to_pads = layer_probs[b][..., pad_keys[b]]  # [heads, queries, padded keys]
            on_pads = max(on_pads, to_pads.max().item())
print(f"padded keys per sentence: {pad_keys.sum(dim=1).tolist()}; largest probability any query gives a "
      f"padded key, over all layers and heads: {on_pads:.1e}")

# %% [markdown]
# With the mask, each sentence's real tokens come out as if it had been run alone, to
# float32 rounding (the check allows 1e-5). Without it, the real tokens attend to the `[PAD]`s
# and their vectors change:

# %%
for b, text in enumerate([SENTENCE, SHORT]):
    alone = trace_text(tokenizer, model, text).last_hidden_state
    n = alone.shape[0]
    assert torch.allclose(masked.last_hidden_state[b, :n], alone, atol=1e-5)
    same = (masked.last_hidden_state[b, :n] - alone).abs().max().item()
    drift = (unmasked.last_hidden_state[b, :n] - alone).abs().max().item()
    print(f"sentence {b}: {n} real tokens; max |diff| to the solo run with the mask {same:.1e}, "
          f"without it {drift:.3f}")

# %% [markdown]
# The by-hand version builds the same additive mask (`extended_attention_mask`) and
# reproduces the padded batch's first-layer probabilities:

# %%
from helpers.attention.rebuild import extended_attention_mask

with torch.no_grad():
    embedded = model.embeddings(input_ids=batch["input_ids"], token_type_ids=batch["token_type_ids"])
    _, probs = self_attention_by_hand(model.encoder.layer[0], embedded, mask)
assert torch.allclose(probs, masked.attentions[0], atol=1e-5)
additive = extended_attention_mask(mask)[1, 0, 0]
print(f"additive mask of sentence 1: {int((additive == 0).sum())} zeros, then "
      f"{int((additive < 0).sum())} x {additive.min().item():.2e} (torch.finfo(float32).min)")

# %% [markdown]
# The whole computation of one head as a picture: the scaled scores, the scores after the
# additive mask (the padded keys' columns become `finfo.min`, effectively $-\infty$, drawn in
# grey), the softmax $P$,
# and the context $P\cdot V$, one row per query. We use the padded batch, layer 1, head 0, and
# a sentence of the batch that has padding; `attention_steps_figure` is in
# `helpers/attention/plots.py`.

# %%
from helpers.attention.plots import attention_steps_figure
from helpers.attention.rebuild import attention_scores, project_qkv, softmax_by_hand, split_heads

b = 0 if pad_keys[0].any() else 1  # a sentence with padding, so the mask shows
with torch.no_grad():
    X_batch = model.embeddings(input_ids=batch["input_ids"], token_type_ids=batch["token_type_ids"])
    q, k, v = (split_heads(t, A) for t in project_qkv(model.encoder.layer[0].attention.self, X_batch))
    raw_scores = attention_scores(q, k)  # [batch, heads, seq, seq]
    with_mask = raw_scores + extended_attention_mask(mask)
    probs_batch = softmax_by_hand(with_mask)
    context_batch = probs_batch @ v
assert torch.allclose(probs_batch, masked.attentions[0], atol=1e-5)  # the picture shows the model's probabilities
fig, axes = attention_steps_figure(raw_scores[b, 0], with_mask[b, 0], probs_batch[b, 0], context_batch[b, 0],
                                   tokenizer.convert_ids_to_tokens(batch["input_ids"][b].tolist()),
                                   title=f"layer 1, head 0, sentence {b} of the padded batch")
plt.show()

# %% [markdown]
# ## Looking at heads
#
# A heatmap shows one head: rows are queries, columns the keys they attend to. Its colour
# scale runs from 0 to 1, the whole range of a probability, here and in the explorer below, so
# heads can be compared by eye: a head that spreads its attention over many keys looks dark
# everywhere. The printout gives the head's largest probability, and the explorer's title the
# largest one it shows.

# %%
from helpers.attention.plots import attention_heatmap

fig, ax, im = attention_heatmap(trace.attention(1, 0), trace.tokens, vmax=1.0,
                                title="attention probability, layer 1, head 0")
plt.show()
top = trace.attention(1, 0).argmax(dim=-1)
favourites = [f"{trace.tokens[q]}->{trace.tokens[k]}" for q, k in enumerate(top.tolist())]
print(f"layer 1 head 0: largest probability {trace.attention(1, 0).max():.2f}; each query's favourite key:",
      favourites if len(favourites) <= 40 else favourites[:40] + ["..."])

# %% [markdown]
# Clark et al. (2019, *What Does BERT Look At? An Analysis of BERT's Attention*) found on
# BERT-base that many heads put most of their weight on `[SEP]`, on `[CLS]`, or on punctuation
# (periods and commas, mostly in the deeper layers), others on the previous or next token, and
# a few track syntax. Explore the heads of the model you
# loaded with the sliders: the explorer reuses `trace`, so the model does not run again
# when you move them. For a long input it shows a window of tokens at a time, with a third
# slider to move it. A saved or exported notebook keeps a picture of the explorer as it was
# drawn.

# %%
from helpers.attention.widgets import AttentionHeadExplorer

explorer = AttentionHeadExplorer(trace)
explorer

# %% [markdown]
# To show that a slider move really costs no forward pass, we count forward calls with a
# hook while we change the layer and the head from code:

# %%
calls = []
hook = model.register_forward_hook(lambda *args: calls.append(1))
before = explorer.image.value
explorer.update(layer=L, head=A - 1)
hook.remove()
print(f"forward passes during the update: {len(calls)}; image changed: {explorer.image.value != before}")

# %% [markdown]
# ## Summary
#
# * Self-attention projects each token to a query, a key and a value, splits them into
#   $A$ heads of size $H/A$, and mixes the values with $\mathrm{softmax}(QK^\top/\sqrt d + M)$.
# * We rebuilt the probabilities of every layer and they equal `outputs.attentions`.
# * The attention mask adds `finfo.min` to padded keys, so padding gets zero probability
#   and real tokens come out as in an unpadded run (to float32 rounding).
#
# ## Exercises
#
# 1. Rebuild the attention matrix of the *last* layer's *last* head by hand
#    (`[seq, seq]`), using only the weights and `trace.hidden`.
# 2. In the head named in the cell below (a middle layer, a middle head: the explorer shows
#    it), which key position does the `[CLS]` query attend to most?
#
# Solutions: `lessons/solutions/solutions_02.py`.

# %%
from helpers.exercises.lesson02 import check_exercise_1, check_exercise_2

answer_1 = None  # your code here: a [seq, seq] tensor
check_exercise_1(answer_1, model, trace, layer=L, head=A - 1)

# %%
layer_2, head_2 = max(1, L // 2), A // 2
print(f"exercise 2: layer {layer_2}, head {head_2}")
answer_2 = None  # your code here: an int
check_exercise_2(answer_2, trace, layer=layer_2, head=head_2)
