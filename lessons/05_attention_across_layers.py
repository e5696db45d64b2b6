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
# # 05 — Attention across layers
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/bert-layer-by-layer/bert-layer-by-layer/blob/main/lessons/05_attention_across_layers.ipynb)
#
# Lesson 02 computed one attention map by hand. Here we look at *all* of them: what
# `[CLS]` attends to at every layer, how much attention goes to `[CLS]`, `[SEP]` and
# punctuation, which heads are focused and which are spread out, and which heads simply
# look at the previous or the next token. Beside our numbers we put the published ones for
# bert-base, and we say clearly where the model you loaded may differ.
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

# %% tags=["parameters"]
MODEL = None
SENTENCE = "The bank by the river was unbelievably quiet this morning."

# %% [markdown]
# ## Load the model and trace the sentences
#
# We trace `SENTENCE` and the sentences in `data/attention_sentences.txt`, once each; every
# number below comes from these cached traces. We also check that a trace's attention is a
# proper probability distribution over the keys (each row sums to 1).

# %%
import torch

from helpers.model.loading import load_model
from helpers.model.trace import trace_text
from helpers.attention import compute, plots
from helpers.common.progress import progress
from helpers.common.data import load_sentences

tokenizer, model = load_model(MODEL)
L, A = model.config.num_hidden_layers, model.config.num_attention_heads
trace = trace_text(tokenizer, model, SENTENCE)
sentences = load_sentences()
traces = [trace_text(tokenizer, model, s) for s in progress(sentences, desc="tracing data sentences")]
rows = torch.stack(trace.attentions).sum(dim=-1)
assert torch.allclose(rows, torch.ones_like(rows), atol=1e-5)
print(f"{L} layers x {A} heads; SENTENCE has {trace.seq_len} tokens; {len(traces)} data sentences traced")

# %% [markdown]
# ## What does [CLS] look at?
#
# Row 0 of each attention map is the distribution of `[CLS]`'s query over all keys. Averaged
# over the $A$ heads of a layer, one row per layer:
#
# $$\bar a^{(l)}_{[CLS]\to j} = \frac{1}{A}\sum_{h=1}^{A} a^{(l,h)}_{0 j}.$$

# %%
cls_att = compute.cls_attention(trace)  # [L, A, seq]
cls_mean = cls_att.mean(dim=1)
assert torch.allclose(cls_mean[0], trace.attention(1)[:, 0, :].mean(0), atol=1e-6)
ax = plots.plot_token_heatmap(cls_mean, trace.tokens, title="[CLS]'s attention, heads averaged")
for layer in range(1, L + 1):
    j = int(cls_mean[layer - 1].argmax())
    print(f"layer {layer}: [CLS] looks most at {trace.tokens[j]!r} ({cls_mean[layer - 1, j]:.2f})")

# %% [markdown]
# Averaging hides that heads disagree. Here is the same row for every head of the last
# layer (change `layer_to_show` to see another one).

# %%
layer_to_show = L
ax = plots.plot_token_heatmap(cls_att[layer_to_show - 1], trace.tokens, ylabel="head",
                              yticklabels=[str(h) for h in range(A)],
                              title=f"[CLS]'s attention per head, layer {layer_to_show}")
spread = cls_att[layer_to_show - 1].argmax(dim=-1)
print(f"layer {layer_to_show}: the heads' favourite tokens for [CLS] are "
      f"{sorted({trace.tokens[int(j)] for j in spread})}")

# %% [markdown]
# ## Where does attention go, layer by layer?
#
# For every query we add up the attention on keys of each class — `[CLS]`, `[SEP]`,
# punctuation, all other tokens — and average over queries, heads and the data sentences.
#
# Clark, Khandelwal, Levy and Manning (2019, *What Does BERT Look At? An Analysis of
# BERT's Attention*) measured this on **bert-base**: in layers 6–10 over half of the
# attention goes to `[SEP]`. Their explanation: when a head's pattern does not apply to
# the current token, it parks its attention on `[SEP]` (or `[CLS]`, or punctuation) as a
# **no-op** — attending to a token present in every input changes little, and gradients of
# the loss with respect to that attention are small. The course model may differ: the
# bundled all-MiniLM-L6-v2 is a 6-layer model *distilled* from a larger one and then
# fine-tuned for sentence embeddings, so its heads need not follow bert-base.

# %%
shares = compute.mean_attention_shares(traces)  # [L, 4]
by_hand = torch.stack([
    torch.stack([t.attention(l)[..., [i for i, tok in enumerate(t.tokens) if tok == "[SEP]"]].sum(-1).mean()
                 for l in range(1, L + 1)]) for t in traces]).mean(0)
assert torch.allclose(shares[:, 1], by_hand, atol=1e-5)
ax = plots.plot_attention_shares(shares)
print("layer " + "".join(f"{c:>13}" for c in compute.TOKEN_CLASSES))
for layer, row in enumerate(shares.tolist(), start=1):
    print(f"{layer:>5} " + "".join(f"{v:13.1%}" for v in row))

# %%
top = int(shares[:, 1].argmax()) + 1
over_half = [l for l in range(1, L + 1) if shares[l - 1, 1] > 0.5]
print(f"This model: the largest [SEP] share is {shares[top - 1, 1]:.1%} at layer {top}; "
      f"layers with more than half on [SEP]: {over_half or 'none'}.")
cls_top = int(shares[:, 0].argmax()) + 1
print(f"The largest [CLS] share is {shares[cls_top - 1, 0]:.1%} at layer {cls_top}.")
print("Clark et al. (2019), bert-base: more than half on [SEP] in layers 6-10.")
parking = max(["[CLS]", "[SEP]"], key=lambda c: shares[:, compute.TOKEN_CLASSES.index(c)].mean())
print(f"Averaged over layers, this model parks more attention on {parking} than on the other special token.")

# %% [markdown]
# ## Focused and broad heads: entropy
#
# The entropy of one attention row, $-\sum_j a_{ij} \log a_{ij}$ (in nats), is 0 when the
# query looks at one key and $\log n$ when it spreads evenly over $n$ keys. Averaged over
# queries it gives one number per head and layer.

# %%
entropy = compute.attention_entropy(trace)  # [L, A]
a = trace.attention(1, 0)
assert torch.allclose(entropy[0, 0], -(a * a.clamp_min(1e-12).log()).sum(-1).mean(), atol=1e-5)
ax = plots.plot_layer_head_table(entropy, title="attention entropy (nats)", cbar_label="nats")
lo, hi = compute.best_head(-entropy), compute.best_head(entropy)
print(f"uniform attention over {trace.seq_len} tokens would have entropy {torch.log(torch.tensor(float(trace.seq_len))):.2f}")
print(f"most focused head: layer {lo[0]}, head {lo[1]} ({-lo[2]:.2f}); broadest: layer {hi[0]}, head {hi[1]} ({hi[2]:.2f})")

# %% [markdown]
# ## Previous-token and next-token heads
#
# Clark et al. (2019) also found heads in bert-base that put most of their attention on the
# previous or the next token. A head's *offset score* is its mean attention from position
# $i$ to position $i + o$ (with $o = -1$ or $+1$), over all queries for which $i + o$
# exists. We score every head on `SENTENCE` and on the data sentences and average.

# %%
prev = torch.stack([compute.offset_head_scores(t, -1) for t in [trace, *traces]]).mean(0)
nxt = torch.stack([compute.offset_head_scores(t, +1) for t in [trace, *traces]]).mean(0)
a = trace.attention(1, 0)
assert torch.allclose(compute.offset_head_scores(trace, -1)[0, 0],
                      torch.stack([a[i, i - 1] for i in range(1, trace.seq_len)]).mean(), atol=1e-6)
for name, scores in [("previous-token", prev), ("next-token", nxt)]:
    layer, head, score = compute.best_head(scores)
    print(f"best {name} head: layer {layer}, head {head}, mean attention on the {name.split('-')[0]} token {score:.1%}")

# %%
import matplotlib.pyplot as plt

fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 0.4 * L + 2))
plots.plot_layer_head_table(prev, ax=ax1, title="previous-token score", cmap="Blues")
plots.plot_layer_head_table(nxt, ax=ax2, title="next-token score", cmap="Oranges")
fig.tight_layout()

# %% [markdown]
# ## All heads of one layer
#
# Each small map is one head: rows are queries, columns keys, in token order. A diagonal
# just below (above) the main diagonal is a previous-token (next-token) head; a bright
# column is a head parking its attention on one token. The slider only swaps the image
# data of the existing maps.

# %%
from helpers.attention.widgets import HeadGridExplorer, HeadLinesExplorer

grid = HeadGridExplorer(trace, layer=compute.best_head(prev)[0])
grid

# %% [markdown]
# ## One head, token to token
#
# The same numbers drawn as lines: queries on the left, keys on the right, each line's
# opacity equal to the attention weight. It starts on the best previous-token head, so
# the lines slope one row up. (The optional `bertviz` package draws interactive views like
# this in the browser; the course does not need it.)

# %%
best_layer, best_h, _ = compute.best_head(prev)
lines = HeadLinesExplorer(trace, layer=best_layer, head=best_h)
lines

# %% [markdown]
# ## Summary
#
# * `[CLS]`'s attention and each layer's share of attention to `[CLS]`, `[SEP]` and
#   punctuation were printed above; compare them with Clark et al. (2019) for bert-base
#   (over half on `[SEP]` in layers 6–10, read as a "no-op").
# * Entropy separates focused heads from broad ones.
# * Offset scores find previous-token and next-token heads automatically.
#
# ## Exercises
#
# 1. What share of the attention in the **last** layer of `SENTENCE` goes to `[SEP]`
#    (heads and queries averaged)? Give a float between 0 and 1.
# 2. Which head attends most to the token **two** positions back (offset −2) on
#    `SENTENCE`? Give `(layer, head)` with layers counted from 1.

# %%
from helpers.exercises.lesson05 import check_exercise_1, check_exercise_2

answer_1 = None  # your code here: a float
print(check_exercise_1(answer_1, trace))

# %%
answer_2 = None  # your code here: a (layer, head) tuple
print(check_exercise_2(answer_2, trace))
