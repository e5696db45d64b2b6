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
# # 03 — Feed-forward, residuals, LayerNorm, and the whole stack
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/bert-layer-by-layer/bert-layer-by-layer/blob/main/lessons/03_feed_forward_and_the_stack.ipynb)
#
# Names and counting ($L, H, A, d, I, n$; layers from 1, heads from 0): see the [conventions](00_big_picture.ipynb#conventions) box of lesson 00.
#
# Attention is only the first half of an encoder layer. In this lesson we finish the
# layer by hand (residuals, LayerNorm, the feed-forward block), check it against every
# layer of the model, run the whole encoder with our own code, and count where BERT's
# parameters live.
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
import torch

from helpers.model.loading import load_model
from helpers.model.trace import trace_text

tokenizer, model = load_model(MODEL)
config = model.config
L, H = config.num_hidden_layers, config.hidden_size
I = config.intermediate_size  # noqa: E741 - the course's name for it
trace = trace_text(tokenizer, model, SENTENCE)
print(f"{L} layers, hidden {H}, intermediate {I}, activation "
      f"{config.hidden_act!r}; {trace.seq_len} tokens")

# %% [markdown]
# (The printout's *activation* is the fixed function the feed-forward block applies to each
# number on its own between its two dense layers; GELU is explained below.) On the map of
# lesson 00 (`architecture_diagram`, in `helpers/architecture/plots.py`) this lesson is the
# rest of every encoder layer: the two residual adds with their LayerNorms and the
# feed-forward block, and then the whole stack of $L$ layers.

# %% mystnb={"figure": {"caption": "The map of lesson 00 for the loaded model, with this lesson's part marked \"you are here\": the two residual adds with their LayerNorms and the feed-forward block (dense $H\\to I$, GELU, dense $I\\to H$), which works on each token alone. Compare these rows, with no arrows between lanes, with the attention rows below them.", "name": "fig-03-map-feed-forward"}}
import matplotlib.pyplot as plt

from helpers.architecture.plots import architecture_diagram

lane_tokens = tokenizer.convert_ids_to_tokens(
    tokenizer(SENTENCE, truncation=True)["input_ids"])
architecture_diagram(config, highlight=["add_norm", "feed_forward"],
                     tokens=lane_tokens)
plt.show()

# %% [markdown]
# ## The rest of one layer
#
# Lesson 02 ended at the attention block's output projection, $C W_O^\top + b_O$, where
# $C$ is the merged context of the heads. A `BertLayer` has two blocks, attention and
# feed-forward, and each block ends with a residual connection (He et al., 2016, *Deep
# Residual Learning*: add the block's input back) and a LayerNorm (Ba et al., 2016, *Layer
# Normalization*; lesson 01 wrote it out). The LayerNorm comes *after* the add: "post-LN",
# as in Vaswani et al. (2017); pre-LN models (most recent ones) normalise the block's input
# instead. So the attention block's output, which we call `attn_out`, is
#
# $$\text{attn\_out} = \mathrm{LayerNorm}\big(X + C W_O^\top + b_O\big)
# \qquad\text{(attention.output)}$$
#
# We start from the layer's input $X$ = `hidden_states[0]` and the context from lesson 02's
# `self_attention_by_hand`:

# %%
from helpers.attention.rebuild import self_attention_by_hand
from helpers.embeddings.rebuild import layer_norm_by_hand

layer1 = model.encoder.layer[0]
X = trace.hidden(0)
out = layer1.attention.output
with torch.no_grad():
    context, _ = self_attention_by_hand(layer1, X)
    # lesson 02 ended here, at the output projection
    projected = context @ out.dense.weight.T + out.dense.bias
    attn_out = layer_norm_by_hand(X + projected, out.LayerNorm)
print("attention block output attn_out", tuple(attn_out.shape))

# %% [markdown]
# ## The feed-forward block
#
# Every token then goes, on its own, through a two-layer network (the feed-forward network,
# *FFN* for short) that widens to $I$ and narrows back to $H$, with the activation GELU
# (Hendrycks & Gimpel, 2016, *Gaussian Error Linear Units*) in between (no residual or
# LayerNorm inside it), then the block's residual and LayerNorm:
#
# $$\mathrm{GELU}(x) = x\,\Phi(x) = \tfrac{x}{2}\big(1 + \mathrm{erf}(x/\sqrt2)\big),\qquad
# \text{out} = \mathrm{LayerNorm}\big(\text{attn\_out} + \mathrm{GELU}(\text{attn\_out}\, W_1^\top + b_1) W_2^\top + b_2\big).$$
#
# ($\Phi(x)$ rises smoothly from 0 for very negative $x$ to 1 for large $x$; erf is the
# library function that computes it. So GELU passes large positive numbers almost
# unchanged and turns large negative ones into about 0.)
#
# `config.hidden_act` names the activation; `activation_by_hand` returns the exact erf GELU
# for `"gelu"` and raises a clear error for an activation it does not know. (BERT's
# original TensorFlow code computed GELU with its tanh approximation; `transformers`'
# `"gelu"` is the exact one.)

# %%
from helpers.stack.rebuild import activation_by_hand

act = activation_by_hand(config)
up, down = layer1.intermediate.dense, layer1.output.dense
with torch.no_grad():
    inner = act(attn_out @ up.weight.T + up.bias)  # [n, I]
    ffn_update = inner @ down.weight.T + down.bias  # [n, H]
    layer_out = layer_norm_by_hand(attn_out + ffn_update,
                                   layer1.output.LayerNorm)
    # the module's own activation
    assert torch.allclose(inner, layer1.intermediate(attn_out), atol=1e-5)
assert torch.allclose(layer_out, trace.hidden(1), atol=1e-5)
gap = (layer_out - trace.hidden(1)).abs().max()
print(f"intermediate {tuple(inner.shape)} -> layer output "
      f"{tuple(layer_out.shape)} == hidden_states[1]; max |diff| = {gap:.1e}")

# %% [markdown]
# How much do the residuals matter? Drop the second one, keep everything else, and compare
# the output with the true one: the printout measures how far it moves.

# %%
with torch.no_grad():
    # LN(update) instead of LN(attn_out + update)
    no_residual = layer_norm_by_hand(ffn_update, layer1.output.LayerNorm)
cos = torch.nn.functional.cosine_similarity(no_residual, trace.hidden(1),
                                            dim=-1)
print(f"without the second residual: cosine to the true layer-1 output, "
      f"mean over tokens {cos.mean():.3f} (range {cos.min():.3f} to "
      f"{cos.max():.3f}; 1.0 = unchanged)")
worst = int(cos.argmin())
print(f"Read: a cosine of {cos.mean():.2f} means the vectors point in clearly "
      "different directions" if cos.mean() < 0.9 else
      f"Read: a cosine of {cos.mean():.2f} is close to the true output",
      f"on average; the token moved most is {trace.tokens[worst]!r} "
      f"({cos[worst]:.2f}), the least {trace.tokens[int(cos.argmax())]!r}. "
      "The tokens whose cosine stays low lose what they were without the"
      " residual: for them the feed-forward update alone is not the token"
      + (f" (a token near 1, like {trace.tokens[int(cos.argmax())]!r}, had"
         " an update that already points where the token does)."
         if cos.max() > 0.95 else "."))

# %% [markdown]
# ## The residual stream, layer by layer
#
# Each block only *adds* an update to the vector that flows past it, the residual stream:
# $x + \text{update}$, then LayerNorm. How large are the updates next to the stream they
# are added to? `sublayer_updates_by_hand` (in `helpers/stack/rebuild.py`) returns both
# updates of a layer (it calls the attention block's output `"attended"`); first we check
# that they rebuild the layer's output:

# %%
from helpers.stack.rebuild import sublayer_updates_by_hand

with torch.no_grad():
    steps = sublayer_updates_by_hand(layer1, X)
    # the model's own attention block: self-attention, dense, add, LayerNorm
    model_attn_out = layer1.attention(X[None])[0][0]
assert torch.allclose(steps["attended"], model_attn_out, atol=1e-5)
# LN(attn_out + FFN update) is the model's layer 1
assert torch.allclose(steps["output"], trace.hidden(1), atol=1e-5)
print({k: tuple(v.shape) for k, v in steps.items()})

# %% [markdown]
# `update_ratios` (in `helpers/stack/compute.py`) measures, per token and layer, how long
# each update is next to the vector it is added to:
# $\lVert\text{attention update}\rVert / \lVert x\rVert$ and
# $\lVert\text{FFN update}\rVert / \lVert\text{attn\_out}\rVert$. **How to read a ratio:**
# well below 1 (under 0.3, say) the block nudges the stream (the sum points almost where the
# stream pointed); near 1 (from 0.8 up) the update is as long as the stream, so the sum can
# point somewhere quite different (if the update points elsewhere): the block rewrites the
# token about as much as it keeps it. One sentence says little, so we measure the course's
# data sentences
# (`data/attention_sentences.txt`; the model does not run again, the sublayers are redone
# by hand from the cached hidden states).

# %%
from helpers.common.data import load_sentences
from helpers.common.progress import progress
from helpers.stack.compute import update_ratios

sentences = progress(load_sentences(), desc="tracing the data sentences")
data_traces = [trace_text(tokenizer, model, s) for s in sentences]
ratios = update_ratios(model, data_traces)  # {name: [L, all tokens]}
mine = update_ratios(model, trace)  # your SENTENCE alone

# %% [markdown]
# The figure draws, per layer, the *median* over all tokens (the middle value: half the
# tokens lie below it, half above) with the middle half of the tokens as a band, and your
# `SENTENCE` on top:

# %% mystnb={"figure": {"caption": "Per encoder layer, $\\lVert\\text{update}\\rVert / \\lVert\\text{stream}\\rVert$: the attention update over the layer's input, the feed-forward update over the attention block's output. Solid: the middle value (median) over all tokens of the course's data sentences; band: where the middle half of those tokens lie; dashed: the middle value over the lesson's sentence. Compare the two blocks, and the ratios with 1.", "name": "fig-03-update-ratios"}}
from helpers.stack.plots import plot_update_ratios

plot_update_ratios(ratios, mine)
plt.show()

# %% [markdown]
# The numbers, counted per **sentence** (the tokens of one sentence move together, so many
# tokens from a few sentences are weaker evidence than their number suggests): each
# sentence's median ratio per layer, then, over the sentences, their mean and, in brackets,
# the range the middle half of the sentences lie in (`per_sentence_medians` in
# `helpers/stack/compute.py`). Which layer's update is largest, and could another layer be
# just as large? Each answer is one sentence; unfold "How we know" for how it was checked
# (lesson 06 explains the method).

# %%
import numpy as np

from helpers.common.claims import show_finding
from helpers.common.tables import show_table
from helpers.layerwalk.compute import rank_layers
from helpers.stack.compute import per_sentence_medians

medians = {name: m.double().cpu().numpy()
           for name, m in per_sentence_medians(ratios, data_traces).items()}
n_sent = len(data_traces)
ratio_table = show_table(
    [
        {"layer": l + 1}
        | {name: (f"{m[:, l].mean():.2f} ({np.quantile(m[:, l], 0.25):.2f}"
                  f"-{np.quantile(m[:, l], 0.75):.2f})")
           for name, m in medians.items()}
        for l in range(L)
    ],
    index="layer",
    title=(
        f"update ratio: mean over {n_sent} sentences of each sentence's"
        " median (middle half of the sentences in brackets)"
    ),
)
for name, per_sentence in medians.items():
    ranking = rank_layers(per_sentence, lowest=False, unit="sentences")
    top = ranking.extreme + 1
    close = [l + 1 for l in ranking.tied if l + 1 != top]
    show_finding(
        f"The {name} update is largest at layer {top}"
        + (f"; with {n_sent} sentences we cannot tell it apart from layers "
           f"{', '.join(map(str, close))}." if close else
           ", clearly ahead of every other layer."),
        ["Each line: the difference of the two layers' mean ratios, then the "
         "range it plausibly lies in, had other sentences been drawn; a range "
         "wholly below 0 means that layer's update is really smaller."]
        + [f"layer {l + 1} minus layer {top}: {d}" for l, d in
           enumerate(ranking.differences) if l + 1 != top]
        + [f"each range is made wider than usual because all {ranking.family}"
           " pairs of layers are compared at once, and the largest layer is"
           " picked from the same data (lesson 06 explains why)"],
    )

# %% [markdown]
# In plain words, for the loaded model (a rough reading of the last layer's mean ratio:
# below 0.3 a nudge, from 0.8 up about as much new as kept):

# %%
for name, m in medians.items():
    last = float(m[:, -1].mean())
    reading = ("nudges the stream" if last < 0.3 else
               "changes it a good deal" if last < 0.8 else
               "rewrites it about as much as it keeps it")
    print(f"{name} update at the last layer: ratio {last:.2f}, so the block "
          f"{reading}")

# %% [markdown]
# Had a finding said "we cannot tell them apart", that would not mean "they are the same": the
# data sentences may just be too few to separate them. Because BERT is post-LN, the LayerNorm after each add rescales the
# stream again, so these ratios describe one layer at a time.
#
# ## Every layer, then the whole stack
#
# `layer_by_hand` chains these steps. Given the true input `hidden_states[l-1]`, it
# reproduces `hidden_states[l]` for every layer $l$:

# %%
from helpers.stack.rebuild import layer_by_hand

with torch.no_grad():
    for l in range(1, L + 1):
        rebuilt, _ = layer_by_hand(model.encoder.layer[l - 1],
                                   trace.hidden(l - 1))
        assert torch.allclose(rebuilt, trace.hidden(l), atol=1e-5), l
print(f"layers 1..{L}: each equals hidden_states[l] to 1e-5")

# %% [markdown]
# Now nothing from the model's forward pass: embeddings by hand (lesson 01), then every
# layer by hand fed with our own previous output.

# %%
from helpers.embeddings.rebuild import embeddings_by_hand
from helpers.stack.rebuild import encoder_by_hand

with torch.no_grad():
    embedded = embeddings_by_hand(model, trace.input_ids,
                                  trace.token_type_ids)
    states = encoder_by_hand(model, embedded)
errors = [(s - t).abs().max().item()
          for s, t in zip(states, trace.hidden_states)]
# float32 rounding differences compound through L layers of our own outputs,
# so the end-to-end check allows 1e-4; per-layer checks above hold at 1e-5
assert torch.allclose(states[-1], trace.last_hidden_state, atol=1e-4)
print("max |diff| per stage:", " ".join(f"{e:.1e}" for e in errors))

# %% [markdown]
# ## Where the parameters are
#
# `parameter_breakdown` counts `numel()` over each module of the loaded model;
# `parameter_formula` derives the same numbers from the config alone (every `nn.Linear` is a
# weight matrix plus a bias, every LayerNorm its scale $\gamma$ and shift $\beta$ of lesson 01). With $N_{\text{vocab}}$ the
# vocabulary size, $N_{\text{pos}}$ the number of positions and $N_{\text{type}}$ the number
# of token types:
#
# * embeddings: $(N_{\text{vocab}} + N_{\text{pos}} + N_{\text{type}})\,H + 2H$,
# * attention: $4(H^2 + H) + 2H$, feed-forward: $2HI + I + H + 2H$,
# * pooler: $H^2 + H$; total = embeddings + $L\cdot$layer + pooler.

# %%
from helpers.stack.compute import parameter_breakdown, parameter_formula

counted, formula = parameter_breakdown(model), parameter_formula(config)
assert counted == formula
parts = counted["embeddings"] + counted["all layers"] + counted["pooler"]
assert parts == sum(p.numel() for p in model.parameters())
rows = [("embeddings", "embeddings"),
        (f"all layers ({L} x one layer)", "all layers"),
        ("  one layer", "one layer"),
        ("    attention", "attention (one layer)"),
        ("    feed-forward", "feed-forward (one layer)"),
        ("pooler", "pooler"), ("total", "total")]
for label, key in rows:  # an indented row is a part of the row above it
    share = counted[key] / counted["total"]
    print(f"{label:<28} {counted[key]:>13,}  ({share:6.1%})")

# %% mystnb={"figure": {"caption": "The loaded model's parameters in millions, split into the embedding tables, all $L$ attention blocks together, all $L$ feed-forward blocks together and the pooler; each bar is labelled with its count and its share of the total, on a linear axis from 0. Compare the embeddings with the encoder layers' blocks together.", "name": "fig-03-parameter-bars"}}
from helpers.stack.plots import parameter_bars

fig, ax, bars = parameter_bars(counted, L)
plt.show()
share = counted["embeddings"] / counted["total"]
more = counted["embeddings"] > counted["all layers"]
print(f"the embedding tables hold {share:.0%} of this model's parameters, "
      + ("more" if more else "less") + " than all encoder layers together")

# %% [markdown]
# ## BERT-base and BERT-large without downloading them
#
# Devlin et al. (2019, *BERT*, Section 3) give BERT-BASE ($L=12, H=768, A=12$) as 110M
# parameters and BERT-LARGE ($L=24, H=1024, A=16$) as 340M: rounded totals, without saying
# what they include. A `BertConfig` is enough to check: built on the `meta` device a model has
# shapes but no memory, so counting it costs nothing, and the formula must agree with it. We
# count `BertModel` and also `BertForPreTraining`, which adds the task heads BERT was
# pre-trained with: the masked-LM head's transform (one dense layer and a LayerNorm before the word scores) and its output bias (its output weight is the word
# table, see lesson 01) and the next-sentence classifier (`pretraining_heads_formula` counts
# them from the config).

# %%
from transformers import BertConfig

sizes = {"base": BertConfig(),  # the defaults are BERT-base
         "large": BertConfig(hidden_size=1024, num_hidden_layers=24,
                             num_attention_heads=16, intermediate_size=4096)}
claims = {"base": 110e6, "large": 340e6}  # Devlin et al., Section 3

# %%
from helpers.stack.compute import (meta_model_parameter_count,
                                   meta_pretraining_parameter_count,
                                   pretraining_heads_formula)

for name, cfg in sizes.items():
    on_meta = meta_model_parameter_count(cfg)
    with_heads = meta_pretraining_parameter_count(cfg)
    assert on_meta == parameter_formula(cfg)["total"]
    heads = sum(pretraining_heads_formula(cfg).values())
    assert with_heads - on_meta == heads
    gap = (claims[name] - with_heads) / 1e6  # what the heads leave unexplained
    verdict = ("within the paper's rounding" if abs(gap) < 0.5 else
               f"{gap:+.1f}M left that the heads do not explain")
    print(f"BERT-{name:<5}: BertModel {on_meta / 1e6:.1f}M, with the "
          f"pre-training heads {with_heads / 1e6:.1f}M; paper "
          f"{claims[name] / 1e6:.0f}M: {verdict}")

# %% [markdown]
# How to read a gap: the paper gives only rounded totals ("110M", "340M") and does not say
# what they include. A few million over a few hundred million is within what different
# counting choices give (with or without the pooler, the pre-training heads, the position
# table's length); the printout says whether the pre-training heads alone close it. What the
# check shows without doubt is that the formula matches a real model to the last parameter.
#
# ## Summary
#
# * A BERT layer is two blocks, each ending in a residual and a LayerNorm (post-LN):
#   attention → dense + residual + LayerNorm (`attn_out`), then intermediate dense + GELU →
#   output dense + residual + LayerNorm; we rebuilt it and it equals `hidden_states[l]` for
#   every layer.
# * An update ratio says how much a block changes the stream it is added to; the printout
#   gives it per layer for the loaded model, over many sentences.
# * Chaining our own layers from our own embeddings reproduces `last_hidden_state`.
# * Parameter counts follow from the config; a `meta`-device model checks the formula for
#   any size without downloading weights.
#
# ## Exercises
#
# Each exercise gives its difficulty, its importance (one to five dots) and a time
# estimate. Each checker (in `helpers/exercises/lesson03.py`) says what is wrong and gives
# a hint, never the answer; worked solutions are in `lessons/solutions/solutions_03.py`.
#
# ### Exercise 1: one layer of BERT-large
#
# Difficulty ●●○○○ · Importance ●●●○○ · ~10 min
#
# From `sizes["large"]` alone, how many parameters does one encoder layer of BERT-large
# have?

# %%
from helpers.exercises.lesson03 import (check_exercise_1, check_exercise_2,
                                        check_exercise_3, check_exercise_4)

answer_1 = None  # your code here: an int
check_exercise_1(answer_1, sizes["large"])

# %% [markdown]
# ### Exercise 2: BERT-Small
#
# Difficulty ●●○○○ · Importance ●●○○○ · ~10 min
#
# How many parameters does `BertModel` have in the BERT-Small configuration of the BERT
# miniatures (Turc et al., 2019, *Well-Read Students Learn Better*: $L=4, H=512, A=8$,
# $I=2048$), pooler included? Use a formula, then check with `meta_model_parameter_count`.

# %%
small = BertConfig(num_hidden_layers=4, hidden_size=512,
                   num_attention_heads=8, intermediate_size=2048)
answer_2 = None  # your code here: an int
check_exercise_2(answer_2, small)

# %% [markdown]
# ### Exercise 3: predict, then build — the same layer, pre-LN
#
# Difficulty ●●●○○ · Importance ●●●●○ · ~20 min
#
# Lesson 00 said BERT puts each LayerNorm *after* its residual add (post-LN) while most recent
# models put it *before* the block (pre-LN). Rewire the *last* layer (`layer =
# model.encoder.layer[L - 1]`) as pre-LN with its own weights, from `x = trace.hidden(L - 1)`:
# `h = x + attn(LN1(x))`, then `out = h + ffn(LN2(h))`, with no LayerNorm after the adds.
# Here `LN1 = layer.attention.output.LayerNorm`, `LN2 = layer.output.LayerNorm` (write them
# out, or use `layer_norm_by_hand`); `attn(v)` is the self-attention and its output dense
# layer only, `layer.attention.output.dense(self_attention_by_hand(layer, v)[0])`, **not** the
# module `layer.attention`, which also adds the residual and applies LN1 itself; and `ffn(v)`
# is `layer.output.dense(layer.intermediate(v))` (`intermediate` includes the GELU).
# **Predict first:** will its output be `"close"` to BERT's real `hidden(L)` (mean cosine over
# the tokens above 0.9) or `"far"`?

# %%
prediction_3 = None  # "close" or "far"
answer_3 = None  # your code here: a [seq, hidden] tensor
check_exercise_3(answer_3, prediction_3, model, trace, layer=L)

# %% [markdown]
# ### Exercise 4: predict, then measure — where do BERT-large's parameters live?
#
# Difficulty ●○○○○ · Importance ●●●○○ · ~5 min
#
# The printout above gives the share of the loaded model's parameters that sit in the
# embedding tables. **Predict first:** is that share `"higher"` or `"lower"` in BERT-large
# (`sizes["large"]`)? Write it in `prediction_4`. **Then measure** BERT-large's share, a
# float between 0 and 1, from `parameter_formula`.

# %%
prediction_4 = None  # "higher" or "lower"
answer_4 = None  # your code here: a float between 0 and 1
check_exercise_4(answer_4, prediction_4, sizes["large"], model.config)
