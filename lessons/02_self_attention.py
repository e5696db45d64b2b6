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
# Names and counting ($L, H, A, d, I, n$; layers from 1, heads from 0): see the [conventions](00_big_picture.ipynb#conventions) box of lesson 00.
#
# Every encoder layer starts with multi-head self-attention: each token looks at every
# other token and takes a weighted mix of them. We start with a toy example small enough
# to do by hand, then compute layer 1's attention step by step from its weight matrices,
# check each step against the model, see what the attention mask does to a padded batch
# (sentences of different lengths filled up with a filler token so they can run together;
# the mask marks the filler), and look at real heads.
#
# The first cell installs the course when you run it on Google Colab; on your own
# machine it does nothing.

# %%
# NBVAL_CHECK_OUTPUT
import sys

if "google.colab" in sys.modules:  # Colab: fetch the course, keep its torch
    import subprocess

    REPO = "https://github.com/bert-layer-by-layer/bert-layer-by-layer"
    subprocess.run(["git", "clone", "-q", "--depth", "1", REPO,
                    "/content/course"])
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "-e",
                    "/content/course"], check=True)
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
L, H = config.num_hidden_layers, config.hidden_size
A = config.num_attention_heads
d = H // A
trace = trace_text(tokenizer, model, SENTENCE)
print(f"{L} layers, hidden {H}, {A} heads of size d = {d}; "
      f"{trace.seq_len} tokens")

# %% [markdown]
# On the map of lesson 00 (`architecture_diagram`, in `helpers/architecture/plots.py`) this
# lesson is the self-attention block at the start of every encoder layer: from the
# *projections* (dense layers, lesson 00, that turn every token vector into a query, a key and
# a value; all explained below) to the *output projection*, one more dense layer that merges
# the heads.

# %% mystnb={"figure": {"caption": "The map of lesson 00 for the loaded model, this lesson's part marked \"you are here\": the self-attention block of every layer, from the query, key and value projections through the split into $A$ heads and the softmax to the output dense layer. Find the row where arrows cross lanes: the only place tokens exchange information.", "name": "fig-02-map-attention"}}
import matplotlib.pyplot as plt

from helpers.architecture.plots import architecture_diagram

lane_tokens = tokenizer.convert_ids_to_tokens(
    tokenizer(SENTENCE, truncation=True)["input_ids"])
architecture_diagram(config, highlight="attention",
                     tokens=lane_tokens)
plt.show()

# %% [markdown]
# ## What attention is for: a toy example
#
# Each token makes three vectors from its own vector. Its **query** says what it is looking
# for, its **key** says what it offers to tokens that look for something, and its **value**
# is what it hands over when it is looked at. A token's new vector is a mix of all tokens'
# values, weighted by how well its query matches each key.
#
# Three tokens, 2-dimensional vectors, numbers chosen by hand: "bank" looks for something
# like a place (its query points along dimension 0), and "river" offers exactly that (its
# key points the same way). The match is a dot product, divided by $\sqrt d$ with $d = 2$
# (why: below); a softmax turns each row of scores into weights that sum to 1; the output
# is the weighted mix of the values.

# %%
toy_tokens = ["the", "river", "bank"]
q = torch.tensor([[0.0, 1.0], [1.0, 0.0], [2.0, 0.0]])  # what each looks for
k = torch.tensor([[0.0, 1.0], [2.0, 0.0], [1.0, 1.0]])  # what each offers
v = torch.tensor([[0.0, 0.5], [1.0, 0.0], [0.0, 1.0]])  # what each hands over
toy_scores = q @ k.T / math.sqrt(2)  # [3 queries, 3 keys]
toy_weights = toy_scores.softmax(dim=-1)  # each row sums to 1
toy_out = toy_weights @ v  # each row: a weighted mix of the values
bank = toy_tokens.index("bank")
print("bank's scores: ", [round(s, 2) for s in toy_scores[bank].tolist()])
print("bank's weights:", [round(w, 2) for w in toy_weights[bank].tolist()])
print("bank's output: ", [round(x, 2) for x in toy_out[bank].tolist()])

# %% [markdown]
# The same weight for "bank" looking at "river" with plain Python, from the definition of
# the softmax, $e^{s_j} / \sum_k e^{s_k}$:

# %%
row = toy_scores[bank].tolist()
river = toy_tokens.index("river")
by_hand = math.exp(row[river]) / sum(math.exp(s) for s in row)
assert abs(by_hand - toy_weights[bank, river].item()) < 1e-6
print(f"weight(bank -> river) = e^{row[river]:.2f} / "
      f"(e^{row[0]:.2f} + e^{row[1]:.2f} + e^{row[2]:.2f}) = {by_hand:.3f}")

# %% mystnb={"figure": {"caption": "The toy example: three tokens, hand-chosen 2-d vectors. 1. scaled scores $q\\cdot k/\\sqrt{d}$ (scale centred on 0); 2. softmax weights, each query row on a 0-1 scale; 3. values (grey) and outputs (orange), each output joined to the values it mixes by lines as thick as their weight. Follow one query row from scores to weights to output.", "name": "fig-02-toy-attention"}}
from helpers.attention.plots import toy_attention_figure

fig, axes = toy_attention_figure(toy_scores, toy_weights, v, toy_out,
                                 toy_tokens)
plt.show()

# %% [markdown]
# Read the picture left to right: the scores, the weights (each row sums to 1), and the
# outputs, each drawn between the values it mixes: the output of "bank" lies close to
# the value of "river", because "bank" gives "river" most of its weight. A real layer does the
# same with $d$-dimensional vectors that it computes from the token vectors with learned
# weight matrices, and it does it $A$ times side by side (the heads).
#
# ## Queries, keys and values in layer 1
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
    """[seq, H] -> [heads, seq, d]"""
    return x.view(x.shape[0], A, d).transpose(0, 1)


Qh, Kh, Vh = split_heads(Q), split_heads(K), split_heads(V)
print("per head:", tuple(Qh.shape))

# %% [markdown]
# ## Scaled dot products and softmax
#
# Each query is compared with every key. Dividing by $\sqrt d$ keeps the scores from
# growing with the head size (Vaswani et al., 2017, *Attention Is All You Need*): a dot
# product adds up $d$ products, so for random entries of typical size 1 its typical size
# grows like $\sqrt d$. (What larger scores would do to the weights is exercise 3's
# question.) A
# softmax over the keys turns each row into weights that sum to 1:
#
# $$P = \mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt d} + M\right),\qquad
# \mathrm{softmax}(s)_j = \frac{e^{s_j}}{\sum_k e^{s_k}},$$
#
# where $M$ is the attention mask (zero here: one sentence, no padding; see below).
# `trace.attention(l)` counts layers from 1 like the course; the model's tuple
# `outputs.attentions` counts from 0, so layer 1 is `outputs.attentions[0]`.

# %%
with torch.no_grad():
    scores = Qh @ Kh.transpose(-1, -2) / math.sqrt(d)
    # subtracting each row's max gives the same softmax, without overflow
    shifted = scores - scores.max(dim=-1, keepdim=True).values
    P = shifted.exp() / shifted.exp().sum(dim=-1, keepdim=True)
# our softmax against the model's own probabilities
assert torch.allclose(P, trace.attention(1), atol=1e-5)
gap = (P - trace.attention(1)).abs().max()
print(f"P {tuple(P.shape)} equals trace.attention(1); max |diff| = {gap:.1e}")
sums = P.sum(dim=-1)
print(f"row sums lie in [{sums.min():.6f}, {sums.max():.6f}]: each query "
      "spreads one unit of attention over the keys")

# %% [markdown]
# ## Context vectors, merging heads, the output projection
#
# Each head mixes the value vectors with its probabilities, $C_h = P_h V_h$. The heads are
# put side by side again ($n \times H$), and `attention.output.dense` projects the result:
# $\mathrm{MultiHead}(X) = [C_1, \dots, C_A]\, W_O^\top + b_O$. **This lesson ends here,
# at the output projection;** lesson 03 starts from it and adds the residual and the
# LayerNorm.

# %%
output_dense = model.encoder.layer[0].attention.output.dense
with torch.no_grad():
    # [heads, seq, d] -> [seq, heads, d] -> [seq, H]: the heads side by side
    context = (P @ Vh).transpose(0, 1).reshape(trace.seq_len, H)
    projected = context @ output_dense.weight.T + output_dense.bias
print("context", tuple(context.shape), "-> projected", tuple(projected.shape))

# %% [markdown]
# To compare with the model, we catch what its `BertSelfAttention` module and its
# `attention.output.dense` return during one more run of the model (one more *forward
# pass*, lesson 00), with forward hooks (a function PyTorch calls with a module's output):

# %%
caught = {}


def catch(name):
    def hook(module, args, out):
        # some modules return a tuple (output, extras): keep the output
        output = out[0] if isinstance(out, tuple) else out
        caught[name] = output[0]  # the batch holds one sentence: take it
    return hook


hooks = [self_attention.register_forward_hook(catch("context")),
         output_dense.register_forward_hook(catch("projected"))]
with torch.no_grad():
    model(input_ids=trace.input_ids[None],
          token_type_ids=trace.token_type_ids[None])
for hook in hooks:
    hook.remove()

# %%
assert torch.allclose(context, caught["context"], atol=1e-5)
assert torch.allclose(projected, caught["projected"], atol=1e-5)
gap = (projected - caught["projected"]).abs().max()
print(f"context and its projection match the model's modules; "
      f"max |diff| = {gap:.1e}")

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
        _, probs = self_attention_by_hand(model.encoder.layer[layer - 1],
                                          trace.hidden(layer - 1))
        assert torch.allclose(probs, trace.attention(layer), atol=1e-5), layer
print(f"all {L} layers: attention probabilities rebuilt and equal")

# %% [markdown]
# ## The attention mask
#
# A batch needs equal lengths, so shorter sentences are padded with `[PAD]`. The
# `attention_mask` (1 = real, 0 = padding) becomes an additive mask $M$: 0 for a real key,
# a huge negative number for a padded key, added to every score of that key, so that after
# the softmax a padded key gets probability 0, for every query and every head. The
# installed `transformers` uses `torch.finfo(dtype).min`, the most negative float32 (the
# 32-bit number format PyTorch computes in; ≈ −3.4 × 10³⁸; `masking_utils.py`); BERT's original TensorFlow code
# (google-research/bert, `modeling.py`) added −10000.0. Both give weight 0 in float32:
# $e^{-10000}$ is already too small to represent. We pad a batch of our sentence and a
# short one to a length longer than both.

# %% mystnb={"figure": {"caption": "The `attention_mask` of a batch of two inputs, the lesson's sentence and a short one, padded with `[PAD]` to one length: one row per input, one cell per position with its token written in; blue is 1 (real token), grey is 0 (padding). Find where each row's padding begins.", "name": "fig-02-attention-mask"}}
from helpers.attention.plots import mask_heatmap
from helpers.model.trace import max_input_tokens

SHORT = "It rained."
# two [PAD]s more than the longer sentence, within the model's maximum
length = min(max(trace.seq_len, 6) + 2, max_input_tokens(tokenizer, model))
batch = tokenizer([SENTENCE, SHORT], padding="max_length", truncation=True,
                  max_length=length, return_tensors="pt").to(model.device)
mask = batch["attention_mask"]
batch_tokens = [tokenizer.convert_ids_to_tokens(row)
                for row in batch["input_ids"].tolist()]
mask_heatmap(mask, batch_tokens)
plt.show()

# %% [markdown]
# We run the batch twice, with the mask and without it, and find the largest weight any
# query of any head of any layer gives a padded key:

# %%
with torch.no_grad():
    masked = model(**batch, output_attentions=True)
    unmasked = model(input_ids=batch["input_ids"],
                     token_type_ids=batch["token_type_ids"])
pad_keys = mask == 0  # [batch, seq]
every_layer = torch.stack(masked.attentions)  # [L, batch, heads, q, keys]
on_pads = every_layer * pad_keys[None, :, None, None, :]  # keep padded keys
print(f"padded keys per sentence: {pad_keys.sum(dim=1).tolist()}; largest "
      f"weight on a padded key: {on_pads.max().item():.1e}")

# %% [markdown]
# With the mask, each sentence's real tokens come out as if it had been run alone, to
# float32 rounding (the check allows 1e-5). Without it, the real tokens attend to the `[PAD]`s
# and their vectors change:

# %%
for b, text in enumerate([SENTENCE, SHORT]):
    alone = trace_text(tokenizer, model, text).last_hidden_state
    n = alone.shape[0]
    with_mask = masked.last_hidden_state[b, :n]
    assert torch.allclose(with_mask, alone, atol=1e-5)
    same = (with_mask - alone).abs().max().item()
    drift = (unmasked.last_hidden_state[b, :n] - alone).abs().max().item()
    print(f"sentence {b}: {n} real tokens; max |diff| to the solo run "
          f"with the mask {same:.1e}, without it {drift:.3f}")

# %% [markdown]
# The by-hand version builds the same additive mask (`extended_attention_mask`) and
# reproduces the padded batch's first-layer probabilities:

# %%
from helpers.attention.rebuild import extended_attention_mask

with torch.no_grad():
    embedded = model.embeddings(input_ids=batch["input_ids"],
                                token_type_ids=batch["token_type_ids"])
    _, probs = self_attention_by_hand(model.encoder.layer[0], embedded, mask)
assert torch.allclose(probs, masked.attentions[0], atol=1e-5)
additive = extended_attention_mask(mask)[1, 0, 0]
print(f"additive mask of sentence 1: {int((additive == 0).sum())} zeros, "
      f"then {int((additive < 0).sum())} x {additive.min().item():.2e} "
      "(torch.finfo(float32).min)")

# %% [markdown]
# The whole computation of one head as a picture: the scaled scores, the scores after the
# additive mask (the padded keys' columns become `finfo.min`, effectively $-\infty$, drawn
# in grey), the softmax $P$, and the context $P\cdot V$, one row per query. We use the
# padded batch, layer 1, its short sentence (all its real tokens and some of its padding fit
# in the picture), and the head of layer 1 whose rows are most concentrated on one key (the
# largest mean, over the rows, of a row's largest weight: `mean_max_weight`, in
# `helpers/attention/compute.py`), so the picture shows a pattern. `attention_steps_figure` is in `helpers/attention/plots.py`.

# %%
from helpers.attention.compute import mean_max_weight
from helpers.attention.plots import shown_positions
from helpers.attention.rebuild import (attention_scores, project_qkv,
                                       softmax_by_hand)
from helpers.attention.rebuild import split_heads as split_batch_heads

SHOWN = 16  # positions the picture has room for

b = 1  # the short sentence: its padding shows next to all its real tokens
head_1 = int(mean_max_weight(trace)[0].argmax())  # layer 1's clearest head
with torch.no_grad():
    qkv = project_qkv(model.encoder.layer[0].attention.self, embedded)
    q_b, k_b, v_b = (split_batch_heads(t, A) for t in qkv)
    raw_scores = attention_scores(q_b, k_b)  # [batch, heads, seq, seq]
    with_mask = raw_scores + extended_attention_mask(mask)
    probs_batch = softmax_by_hand(with_mask)
    context_batch = probs_batch @ v_b
# the picture shows the model's own probabilities
assert torch.allclose(probs_batch, masked.attentions[0], atol=1e-5)
n_real, n_pos = int(mask[b].sum()), mask.shape[1]
n_shown = len(shown_positions(pad_keys[b].cpu(), SHOWN))
print(f"sentence {b} ({SHORT!r}): {n_real} real tokens and {n_pos - n_real} "
      f"[PAD]s; the picture shows its first {n_shown} positions")

# %% mystnb={"figure": {"caption": "One head of layer 1 (rows most concentrated on one key) on the batch's short, padded sentence: scores $QK^\\top/\\sqrt{d}$; scores plus mask (same scale centred on 0, padded keys grey); softmax $P$ (0-1 scale); context $P\\cdot V$ per query and value dimension. Compare the mask panel with the scores; only the first positions are drawn.", "name": "fig-02-head-steps"}}
from helpers.attention.plots import attention_steps_figure

steps = (raw_scores[b, head_1], with_mask[b, head_1], probs_batch[b, head_1],
         context_batch[b, head_1])
fig, axes = attention_steps_figure(
    *steps, batch_tokens[b], max_tokens=SHOWN,
    title=f"layer 1, head {head_1}, sentence {b} of the padded batch")
plt.show()

# %% [markdown]
# The figure stops after its first positions so the four panels stay readable; the short
# sentence keeps all its real tokens in view. The `[PAD]` *rows* of panel 3 are not zero: the
# mask removes padded *keys* (columns), not queries, so a `[PAD]` position still computes a
# weighted mix of the real tokens -- often mostly `[CLS]`, which many heads use as a resting
# place for attention that has nowhere better to go (Clark et al., 2019; lesson 08). That
# does no harm: nothing reads it. No real token attends to a `[PAD]` (its column is 0), so
# the `[PAD]` outputs never flow back into the real tokens, and everything downstream
# (pooling the tokens into one sentence vector, a classifier, a loss; lesson 04) skips the
# padded positions using the same `attention_mask`.
#
# ## Looking at heads
#
# A heatmap shows one head: rows are queries, columns the keys they attend to. Heads
# differ a lot. To pick two to show, for any model and sentence, we use two printed
# criteria over all layers and heads of `trace`:
#
# * **a clear pattern**: the largest mean, over the query rows, of a row's largest weight
#   (`clearest_head`; 1 = every query puts all its weight on one key);
# * **a diffuse head**: the largest mean entropy of the rows (`most_diffuse_head`;
#   entropy $-\sum_j p_j \ln p_j$, in nats because of the natural log, is 0 for a row on
#   one key and $\ln n$ for a uniform row).
#
# `pattern_shares` then says which simple pattern the clear head follows: the mean weight
# on the previous token, the next token, the query itself, `[CLS]`, or `[SEP]`.

# %%
from helpers.attention.compute import (clearest_head, main_pattern,
                                       most_diffuse_head, pattern_shares)

clear_l, clear_h, clear_score = clearest_head(trace)
diffuse_l, diffuse_h, diffuse_entropy = most_diffuse_head(trace)
shares = pattern_shares(trace, clear_l, clear_h)
pattern, share = main_pattern(shares)
print(f"clear: layer {clear_l}, head {clear_h}: mean max weight "
      f"{clear_score:.2f}; mostly '{pattern}' (mean weight {share:.2f})")
print("  all patterns: " + ", ".join(f"{k} {v:.2f}" for k, v in
                                     shares.items()))
print("  (the patterns overlap -- token 1's previous token is [CLS], the "
      "last word's next is [SEP] -- and each is averaged over its own rows, "
      "so the shares need not add up to 1)")
print(f"diffuse: layer {diffuse_l}, head {diffuse_h}: mean entropy "
      f"{diffuse_entropy:.2f} nats (uniform: ln n = "
      f"{math.log(trace.seq_len):.2f})")

# %% [markdown]
# Both heads on one colour scale from 0 to 1, the whole range of a probability:

# %% mystnb={"figure": {"caption": "Attention probabilities of two heads on the lesson's sentence (rows: queries, columns: keys), on one 0-1 colour scale. Left: the head, over all layers, whose rows are most concentrated on one key, titled with the simple pattern it follows most; right: the head with the highest mean row entropy. Compare where each head's rows put their weight.", "name": "fig-02-clear-vs-diffuse"}}
from helpers.attention.plots import head_pair_figure

fig, axes = head_pair_figure(
    trace.attention(clear_l, clear_h), trace.attention(diffuse_l, diffuse_h),
    trace.tokens,
    (f"clear: layer {clear_l}, head {clear_h} ('{pattern}')",
     f"diffuse: layer {diffuse_l}, head {diffuse_h} (highest entropy)"))
plt.show()

# %% [markdown]
# Clark et al. (2019, *What Does BERT Look At? An Analysis of BERT's Attention*) found on
# BERT-base that many heads put most of their weight on `[SEP]`, on `[CLS]`, or on punctuation
# (periods and commas, mostly in the deeper layers), others on the previous or next token, and
# a few track syntax. Explore the heads of the model you loaded with the sliders; the
# explorer opens on the first head the figure above does not show. It reuses `trace`, so
# the model does not run again when you move them. For a long input it shows a window of
# tokens at a time, with a third slider to move it. A saved or exported notebook keeps a picture of the explorer as it was
# drawn.
#
# To read attention between *words* rather than WordPieces, pass `by_word=True` (to this
# explorer, the other attention explorers and `attention_heatmap`; `attention_by_word` in
# `helpers/attention/compute.py`). The rule is Clark et al.'s (2019, section 4): attention *to* a
# split word is the sum over its pieces (a query's weights add up over keys), attention *from*
# it the mean of its pieces' rows (each row sums to 1, and so does their mean), so every
# word's row still sums to 1; `[CLS]` and `[SEP]` stay words of their own.

# %% mystnb={"figure": {"caption": "One head's attention probabilities on the lesson's sentence (rows: queries, columns: keys), fixed 0-1 colour scale, opened on a head that the lesson's other head figures do not show; the title gives layer, head and the largest weight shown. Sliders change the layer, the head and, for long inputs, the window of tokens; look for heads whose rows all pick one column or one diagonal.", "name": "fig-02-head-explorer"}}
from helpers.attention.widgets import AttentionHeadExplorer

# the clear and the diffuse head are in the figure above: open on another one
shown = {(clear_l, clear_h), (diffuse_l, diffuse_h)}
first = next((l, h) for l in range(1, L + 1) for h in range(A)
             if (l, h) not in shown)
explorer = AttentionHeadExplorer(trace, layer=first[0], head=first[1])
explorer

# %% [markdown]
# Every explorer of the course can save the view it shows, for a paper or a slide:
# `explorer.export("name")` (`Explorer.export`, in `helpers/common/explorer.py`) writes
# `name.png` (300 dpi), `name.svg` and `name.txt` (the caption: explorer, control values, titles)
# into `exports/`, at the size the page shows it; `explorer.export_button("name")` is a button
# that does the same.

# %%
paths = explorer.export("attention_head")
print("saved:", ", ".join(str(path) for path in paths.values()))

# %% [markdown]
# ## Summary
#
# * A query says what a token looks for, a key what it offers, a value what it hands over;
#   the output is the values mixed by $\mathrm{softmax}(QK^\top/\sqrt d + M)$.
# * Self-attention projects each token to a query, a key and a value, splits them into
#   $A$ heads of size $d = H/A$, and mixes the values per head; the output projection
#   merges the heads. We rebuilt the probabilities of every layer and they equal
#   `outputs.attentions`.
# * The attention mask adds a huge negative number (`finfo.min` here, −10000 in the
#   original TensorFlow code) to padded keys, so padding gets zero probability and real
#   tokens come out as in an unpadded run (to float32 rounding).
# * Heads differ: some put nearly all weight on one key per row, others spread it.
#
# ## Exercises
#
# Each exercise gives its difficulty, its importance (one to five dots) and a time
# estimate. Each checker (in `helpers/exercises/lesson02.py`) says what is wrong and gives
# a hint, never the answer; worked solutions are in `lessons/solutions/solutions_02.py`.
#
# ### Exercise 1: build it yourself — a left-to-right head
#
# Difficulty ●●●○○ · Importance ●●●●● · ~15 min
#
# BERT lets every token look at every other. A left-to-right model (GPT, for one) lets a
# token look only at itself and the tokens **before** it: a *causal mask* sets the scores of
# every later key to $-\infty$ before the softmax. Rebuild the *last* layer's *last* head
# (`[seq, seq]`) from the weights and `trace.hidden`, as it would be with a causal mask, and
# set `answer_1` to it. Once it is right, the checker sets its first row (`[CLS]`) beside
# BERT's.

# %%
from helpers.exercises.lesson02 import (check_exercise_1, check_exercise_2,
                                        check_exercise_3)

answer_1 = None  # your code here: a [seq, seq] tensor, later keys masked
check_exercise_1(answer_1, model, trace, layer=L, head=A - 1)

# %% [markdown]
# ### Exercise 2: where does `[CLS]` look?
#
# Difficulty ●○○○○ · Importance ●●●○○ · ~5 min
#
# In the head named by the cell below, which key position does the `[CLS]` query attend
# to most? (The head is chosen so that reading a column instead of a row gives a different
# answer: `row_column_head`, in `helpers/attention/compute.py`.)

# %%
from helpers.attention.compute import row_column_head

layer_2, head_2 = row_column_head(trace) or (max(1, L // 2), A // 2)
print(f"exercise 2: layer {layer_2}, head {head_2}")
answer_2 = None  # your code here: an int
check_exercise_2(answer_2, trace, layer=layer_2, head=head_2)

# %% [markdown]
# ### Exercise 3: predict, then measure — attention without $\sqrt d$
#
# Difficulty ●●○○○ · Importance ●●●●○ · ~10 min
#
# Take layer 1 and drop the division by $\sqrt d$: $P' = \mathrm{softmax}(QK^\top)$.
# **Predict first:** will the mean entropy of the rows of $P'$ (over all heads and
# queries) be `"lower"` or `"higher"` than that of the real $P$? Write it in
# `prediction_3`. **Then measure** the mean entropy of $P'$ in nats (natural log).

# %%
prediction_3 = None  # "lower" or "higher"
answer_3 = None  # your code here: a float, the mean entropy of P' in nats
check_exercise_3(answer_3, prediction_3, model, trace)
