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
# # 04 — Walking through the layers
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/bert-layer-by-layer/bert-layer-by-layer/blob/main/lessons/04_walking_through_the_layers.ipynb)
#
# Lessons 01–03 rebuilt one layer at a time. Now we step back and follow a single token
# through the whole stack: how much its vector changes from one layer to the next, how
# long it gets, which layers resemble each other, and where it travels in a 2-D picture.
# Along the way we meet a trap that many "what each layer does" write-ups fall into:
# raw cosine similarity is inflated in some layers (*anisotropy*), so we learn to
# subtract a baseline before reading anything into it.
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
# `MODEL` names the checkpoint (`None`: the course chooses; any hub id or local folder
# works). `SENTENCE` is the text we follow. Nothing below depends on a particular size
# or sentence.

# %% tags=["parameters"]
MODEL = None
SENTENCE = "The bank by the river was unbelievably quiet this morning."

# %% [markdown]
# ## Load the model and trace the sentence once
#
# `trace_text` runs the model once and keeps every hidden state; everything in this
# lesson is computed from that cached trace. We also trace the short sentences in
# `data/attention_sentences.txt`: they supply the *random* tokens for the baseline below.

# %%
import torch
import torch.nn.functional as F

from helpers.model.loading import load_model
from helpers.model.trace import trace_text
from helpers.common.data import load_sentences
from helpers.common.progress import progress
from helpers.layerwalk import compute, plots
from helpers.model.tokens import longest_word

tokenizer, model = load_model(MODEL)
L, H = model.config.num_hidden_layers, model.config.hidden_size
trace = trace_text(tokenizer, model, SENTENCE)
others = [trace_text(tokenizer, model, s) for s in progress(load_sentences(), desc="tracing data sentences")]
print(f"{L} layers, hidden size {H}; SENTENCE has {trace.seq_len} tokens: {trace.tokens}")

# %% [markdown]
# We follow two tokens: `[CLS]` (position 0) and the first WordPiece of the word of
# `SENTENCE` that the tokenizer splits into the most pieces (picked by code, so it works
# for any sentence).

# %%
word = longest_word(trace, tokenizer)
span = trace.find_word(word)
TOKEN = span.first
print(span)
print(f"following token {TOKEN} ({trace.tokens[TOKEN]!r}) and [CLS] (token 0)")

# %% [markdown]
# ## The vector, layer by layer
#
# The first few of its $H$ dimensions at every stage: the embedding output (layer 0) and
# the output of each encoder layer. Look for dimensions that drift slowly and ones that
# flip sign; a handful of numbers out of $H$ cannot say more than that, which is why the
# rest of the lesson uses summaries of the whole vector.

# %%
vectors = compute.token_by_layer(trace, TOKEN)  # [L+1, H]
assert torch.equal(vectors[L], trace.last_hidden_state[TOKEN])
n_show = min(6, H)
print("layer " + "".join(f"{f'dim {d}':>9}" for d in range(n_show)))
for layer, vec in enumerate(vectors):
    name = "emb" if layer == 0 else str(layer)
    print(f"{name:>5} " + "".join(f"{v:9.3f}" for v in vec[:n_show].tolist()))

# %% [markdown]
# ## How much does each layer change the token?
#
# The cosine similarity between the vector after layer $l$ and after layer $l+1$,
#
# $$\cos(h^{(l)}, h^{(l+1)}) = \frac{h^{(l)} \cdot h^{(l+1)}}{\lVert h^{(l)} \rVert\, \lVert h^{(l+1)} \rVert},$$
#
# is 1 when a layer only rescales the vector and lower the more it turns it. We compute it
# by hand and check it against `compute.consecutive_cosines`.

# %%
by_hand = torch.stack([
    (vectors[l] @ vectors[l + 1]) / (vectors[l].norm() * vectors[l + 1].norm()) for l in range(L)
])
consecutive = compute.consecutive_cosines(trace, TOKEN)
assert torch.allclose(by_hand, consecutive, atol=1e-5)
for l, c in enumerate(consecutive.tolist()):
    print(f"layer {l} -> {l + 1}: cosine {c:.3f}")
biggest = int(consecutive.argmin())
print(f"The biggest turn for {trace.tokens[TOKEN]!r} happens from layer {biggest} to {biggest + 1}.")

# %% [markdown]
# ## How long is the vector?
#
# The L2 norm $\lVert h^{(l)} \rVert = \sqrt{\sum_i h_i^2}$ per layer. Each layer *adds*
# its attention and feed-forward outputs to the residual stream and then applies
# LayerNorm, whose learned scale (`weight`) decides the final length; so the norm tells us
# how big that scale is, layer by layer.

# %%
norms = compute.layer_norms(trace, TOKEN)
assert torch.allclose(norms, vectors.pow(2).sum(-1).sqrt(), atol=1e-5)
ax = plots.plot_layer_norms(norms, title=f"L2 norm of {trace.tokens[TOKEN]!r} per layer")
print(f"norm: smallest {norms.min():.2f} at layer {int(norms.argmin())}, largest {norms.max():.2f} at layer {int(norms.argmax())}")

# %% [markdown]
# ## Which layers look alike?
#
# Comparing *every* pair of layers gives an $(L+1) \times (L+1)$ matrix. Neighbouring
# layers are usually similar (a bright band along the diagonal); how fast the
# similarity fades away from the diagonal shows how far the token travels.

# %%
sim = compute.interlayer_similarity(trace, TOKEN)
normed = F.normalize(vectors, dim=-1)
assert torch.allclose(sim, normed @ normed.T, atol=1e-5)
ax = plots.plot_similarity_heatmap(sim, title=f"cosine between layers, token {trace.tokens[TOKEN]!r}")
print(f"embedding vs last layer: {sim[0, L]:.3f}; layer 1 vs last layer: {sim[1, L]:.3f}")

# %% [markdown]
# ## The anisotropy caution
#
# Ethayarajh (2019, *How Contextual are Contextualized Word Representations? Comparing
# the Geometry of BERT, ELMo, and GPT-2 Embeddings*) found that in BERT-base, ELMo and
# GPT-2 the vectors of upper layers occupy a narrow cone: two *unrelated* words already
# have a high cosine. A raw similarity therefore says little until we subtract that
# baseline. His baseline is the mean cosine between randomly chosen tokens of the same
# layer; we draw 500 seeded pairs of content tokens from *different* data sentences:
#
# $$\text{adjusted}_l = \cos_l - \mathbb{E}_{\text{random } a, b}\,[\cos(h^{(l)}_a, h^{(l)}_b)].$$

# %%
baseline = compute.random_pair_baseline(others, n_pairs=500, seed=0)
for layer, b in enumerate(baseline.tolist()):
    print(f"layer {'emb' if layer == 0 else layer:>3}: random-pair cosine {b:.3f}")
print(f"highest baseline at layer {int(baseline.argmax())} ({baseline.max():.3f}), "
      f"lowest at layer {int(baseline.argmin())} ({baseline.min():.3f})")

# %% [markdown]
# For BERT-base, Ethayarajh reports the random-word similarity to be generally *higher*
# in the upper layers than in the lower ones. Whether your model does the same is in the printout above. Models trained
# with a contrastive sentence-embedding objective, like the bundled all-MiniLM-L6-v2, are
# pushed to spread their final vectors out (Gao, Yao and Chen, 2021, *SimCSE: Simple
# Contrastive Learning of Sentence Embeddings*, showed this "uniformity" effect on BERT),
# so their last layer can break the pattern.

# %%
rises = bool(baseline[L] > baseline[0])
trend = "higher" if rises else "lower"
print(f"This model's last-layer baseline ({baseline[L]:.3f}) is {trend} than its embedding baseline ({baseline[0]:.3f}).")

# %% [markdown]
# The consecutive-layer cosine compares layer $l$ with $l+1$, so we subtract the mean of
# the two layers' baselines. What remains is how much more a token resembles *itself* one
# layer later than two random tokens resemble each other.

# %%
pair_baseline = (baseline[:-1] + baseline[1:]) / 2
adjusted = compute.baseline_adjusted(consecutive, pair_baseline)
assert torch.allclose(adjusted, consecutive - pair_baseline, atol=1e-5)
ax = plots.plot_consecutive(consecutive, adjusted)
ax.set_title(f"{trace.tokens[TOKEN]!r}: layer-to-layer cosine, raw and adjusted")
print(f"raw cosine range {consecutive.min():.3f}..{consecutive.max():.3f}; "
      f"adjusted range {adjusted.min():.3f}..{adjusted.max():.3f}")

# %% [markdown]
# ## A 2-D trajectory
#
# PCA finds the two directions along which the vectors of *all* tokens at *all* layers
# vary most; projecting `[CLS]` and our token onto them draws each one's path through the
# layers. Two dimensions out of $H$ keep only part of the picture, so read the paths as a
# sketch: the printout says how much of the variance the two components explain.

# %%
coords = compute.pca_trajectory(trace, [0, TOKEN])
ax = plots.plot_trajectory(coords, ["[CLS]", trace.tokens[TOKEN]])
flat = torch.stack(trace.hidden_states).reshape(-1, H)
singular = torch.linalg.svdvals(flat - flat.mean(0))
explained = (singular[:2] ** 2).sum() / (singular**2).sum()
print(f"PC 1 and PC 2 explain {explained:.0%} of the variance of all {flat.shape[0]} vectors")

# %% [markdown]
# ## Explore
#
# Pick any token and layer. The left panel is the token's norm per layer (the chosen layer
# in orange), the middle its cosine with itself at every other layer, the right its first
# dimensions at the chosen layer. Moving a control only updates the existing bars and
# lines from the cached trace; the model does not run again.

# %%
from helpers.layerwalk.widgets import LayerWalkExplorer

explorer = LayerWalkExplorer(trace, token=TOKEN, layer=L)
explorer

# %% [markdown]
# ## Summary
#
# * A token's vector changes most in some layers and little in others; the printouts above
#   show where for the model you loaded.
# * Its length is set by each layer's LayerNorm scale, not by "how much it means".
# * Raw cosine similarity has to be read against a random-pair baseline (Ethayarajh 2019):
#   even unrelated tokens are similar in anisotropic layers.
# * A 2-D PCA projection is a sketch of the trajectory, not the full story.
#
# ## Exercises
#
# 1. Which *encoder transition* turns `[CLS]` the most? Give the layer `l` such that
#    the cosine between layer `l` and `l + 1` of token 0 is lowest.
# 2. Write a function `my_norms(trace, token)` returning the L2 norm of the token's vector at
#    every layer as a tensor of shape `[L + 1]`, without `compute.layer_norms`.
# 3. Compute the baseline-adjusted interlayer similarity of `TOKEN`'s vector between the
#    embedding layer and the last layer: `sim[0, L]` minus the mean of the two layers'
#    baselines. Is it still positive?

# %%
from helpers.exercises.lesson04 import check_exercise_1, check_exercise_2, check_exercise_3

answer_1 = None  # your code here: an int
print(check_exercise_1(answer_1, trace))

# %%
my_norms = None  # your code here: def my_norms(trace, token): ...
print(check_exercise_2(my_norms, trace))

# %%
answer_3 = None  # your code here: a float
print(check_exercise_3(answer_3, trace, TOKEN, baseline))
