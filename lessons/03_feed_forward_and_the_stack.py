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
# Attention is only the first half of an encoder layer. In this lesson we finish the
# layer by hand (output projection, residuals, LayerNorm, the feed-forward block), check it
# against every layer of the model, run the whole encoder with our own code, and count
# where BERT's parameters live.
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
import torch

from helpers.model.loading import load_model
from helpers.model.trace import trace_text

tokenizer, model = load_model(MODEL)
config = model.config
L, H, I = config.num_hidden_layers, config.hidden_size, config.intermediate_size
trace = trace_text(tokenizer, model, SENTENCE)
print(f"{L} layers, hidden {H}, intermediate {I}, activation {config.hidden_act!r}; {trace.seq_len} tokens")

# %% [markdown]
# On the map of lesson 00 (`architecture_diagram`, in `helpers/architecture/plots.py`) this
# lesson is the rest of every encoder layer: the two residual adds with their LayerNorms and
# the feed-forward block, and then the whole stack of $L$ layers.

# %%
import matplotlib.pyplot as plt

from helpers.architecture.plots import architecture_diagram

architecture_diagram(config, highlight=["add_norm", "feed_forward"])
plt.show()

# %% [markdown]
# ## The rest of one layer
#
# Lesson 02 stopped at the merged context $C$ of layer 1. A `BertLayer` finishes its two
# blocks, attention and feed-forward, and each block ends with a residual connection (He et
# al., 2016, *Deep Residual Learning*) and a LayerNorm (Ba et al., 2016, *Layer
# Normalization*), "post-LN" as in Vaswani et al. (2017). The attention block ends with its
# output projection:
#
# $$A = \mathrm{LayerNorm}\big(X + C W_O^\top + b_O\big) \qquad\text{(attention.output)}$$
#
# We start from the layer's input $X$ = `hidden_states[0]` and the context from lesson 02's
# `self_attention_by_hand`:

# %%
from helpers.attention.rebuild import self_attention_by_hand
from helpers.embeddings.rebuild import layer_norm_by_hand

layer1 = model.encoder.layer[0]
X = trace.hidden(0)
with torch.no_grad():
    context, _ = self_attention_by_hand(layer1, X)
    out = layer1.attention.output
    attended = layer_norm_by_hand(X + context @ out.dense.weight.T + out.dense.bias, out.LayerNorm)
print("attention block output", tuple(attended.shape))

# %% [markdown]
# ## The feed-forward block
#
# Every token then goes, on its own, through a two-layer network that widens to $I$ and
# narrows back to $H$, with GELU (Hendrycks & Gimpel, 2016, *Gaussian Error Linear Units*)
# in between (no residual or LayerNorm inside it), then the block's residual and LayerNorm:
#
# $$\mathrm{GELU}(x) = x\,\Phi(x) = \tfrac{x}{2}\big(1 + \mathrm{erf}(x/\sqrt2)\big),\qquad
# \text{out} = \mathrm{LayerNorm}\big(A + \mathrm{GELU}(A W_1^\top + b_1) W_2^\top + b_2\big).$$
#
# `config.hidden_act` names the activation; `activation_by_hand` returns the exact erf GELU
# for `"gelu"` and raises a clear error for an activation it does not know.

# %%
from helpers.stack.rebuild import activation_by_hand

act = activation_by_hand(config)
with torch.no_grad():
    inner = act(attended @ layer1.intermediate.dense.weight.T + layer1.intermediate.dense.bias)
    layer_out = layer_norm_by_hand(
        attended + inner @ layer1.output.dense.weight.T + layer1.output.dense.bias, layer1.output.LayerNorm)
    assert torch.allclose(inner, layer1.intermediate(attended), atol=1e-5)  # the module's own activation
assert torch.allclose(layer_out, trace.hidden(1), atol=1e-5)
print(f"intermediate {tuple(inner.shape)} -> layer output {tuple(layer_out.shape)} == hidden_states[1]; "
      f"max |diff| = {(layer_out - trace.hidden(1)).abs().max():.1e}")

# %% [markdown]
# How much do the residuals matter? Drop the second one, keep everything else, and compare
# the output with the true one: the printout measures how far it moves.

# %%
with torch.no_grad():
    ffn_update = inner @ layer1.output.dense.weight.T + layer1.output.dense.bias
    no_residual = layer_norm_by_hand(ffn_update, layer1.output.LayerNorm)  # LN(update), not LN(A + update)
cos = torch.nn.functional.cosine_similarity(no_residual, trace.hidden(1), dim=-1)
print(f"without the second residual: cosine to the true layer-1 output, mean over tokens {cos.mean():.3f} "
      f"(range {cos.min():.3f} to {cos.max():.3f}; 1.0 = unchanged)")

# %% [markdown]
# ## The residual stream, layer by layer
#
# Each block only *adds* an update to the vector that flows past it, the residual stream:
# $x + \text{update}$, then LayerNorm. How large are the updates next to the stream they are
# added to? `sublayer_updates_by_hand` (in `helpers/stack/rebuild.py`) returns both updates of
# a layer; first we check that they rebuild the layer's output:

# %%
from helpers.stack.rebuild import sublayer_updates_by_hand

with torch.no_grad():
    steps = sublayer_updates_by_hand(layer1, X)
    # the model's own attention block: self-attention, dense, add, LayerNorm
    model_attended = layer1.attention(X[None])[0][0]
assert torch.allclose(steps["attended"], model_attended, atol=1e-5)
assert torch.allclose(steps["output"], trace.hidden(1), atol=1e-5)  # LN(attended + FFN update) is the model's layer 1
print({k: tuple(v.shape) for k, v in steps.items()})

# %% [markdown]
# `update_ratios` (in `helpers/stack/compute.py`) measures, per token and layer,
# $\lVert\text{attention update}\rVert / \lVert x\rVert$ and
# $\lVert\text{FFN update}\rVert / \lVert\text{attended}\rVert$. It starts from each trace's
# cached hidden states and re-runs every sublayer by hand on them (`sublayer_updates_by_hand`);
# the model's own forward pass does not run. One sentence says little about a layer, so we
# measure the course's data sentences (`data/attention_sentences.txt`) and draw the median with
# the middle half of all their tokens, and your `SENTENCE` on top. Tokens of one sentence are
# not independent, so the printout takes the sentence as the unit: each sentence's median per
# layer (`per_sentence_medians`), their mean, and a bootstrap interval over sentences
# (`ratio_intervals`). Which layers are not shown to differ from the highest one is decided on
# the same sentences, paired: every other layer's difference to the highest, a bootstrap p-value
# each, Holm-adjusted over the $L - 1$ comparisons (`rank_layers`, in
# `helpers/layerwalk/compute.py`; lesson 04 uses it throughout). Two layers whose separate
# intervals overlap can still differ on the same sentences, so overlap would be the wrong test.

# %%
from helpers.common.data import load_sentences
from helpers.common.progress import progress
from helpers.layerwalk.compute import rank_layers
from helpers.stack.compute import per_sentence_medians, ratio_intervals, update_ratios
from helpers.stack.plots import plot_update_ratios

data_traces = [trace_text(tokenizer, model, s) for s in progress(load_sentences(), desc="tracing the data sentences")]
ratios, mine = update_ratios(model, data_traces), update_ratios(model, trace)
plot_update_ratios(ratios, mine)
plt.show()
intervals = ratio_intervals(ratios, data_traces)
print(f"per layer: mean over {len(data_traces)} sentences of each sentence's median ratio [95% interval]")
for name, per_sentence in per_sentence_medians(ratios, data_traces).items():
    ranking = rank_layers(per_sentence, lowest=False)  # paired: the same sentences at every layer
    top = ranking.extreme
    print(f"{name:>9}: " + ", ".join(f"{l + 1}: {iv.format('.2f')}" for l, iv in enumerate(intervals[name])))
    print(f"{'':>9}  highest at layer {top + 1}; not shown different from it (paired over the sentences, Holm over "
          f"{ranking.family_size} comparisons): layers {[l + 1 for l in ranking.tied]}")

# %% [markdown]
# A ratio well below 1 means the layer nudges the stream rather than replacing it; the
# printout gives the per-layer numbers for the loaded model, with the layers not shown to differ
# from the highest one ("not shown different" is not "the same": the data may just be too few),
# and the bands show how much tokens differ. Because BERT is
# post-LN, the LayerNorm after each add rescales the stream again, so these ratios describe
# one layer at a time.
#
# ## Every layer, then the whole stack
#
# `layer_by_hand` chains these steps. Given the true input `hidden_states[l-1]`, it
# reproduces `hidden_states[l]` for every layer $l$:

# %%
from helpers.stack.rebuild import layer_by_hand

with torch.no_grad():
    for l in range(1, L + 1):
        rebuilt, _ = layer_by_hand(model.encoder.layer[l - 1], trace.hidden(l - 1))
        assert torch.allclose(rebuilt, trace.hidden(l), atol=1e-5), l
print(f"layers 1..{L}: each equals hidden_states[l] to 1e-5")

# %% [markdown]
# Now nothing from the model's forward pass: embeddings by hand (lesson 01), then every
# layer by hand fed with our own previous output.

# %%
from helpers.embeddings.rebuild import embeddings_by_hand
from helpers.stack.rebuild import encoder_by_hand

with torch.no_grad():
    states = encoder_by_hand(model, embeddings_by_hand(model, trace.input_ids, trace.token_type_ids))
errors = [(s - t).abs().max().item() for s, t in zip(states, trace.hidden_states)]
# float32 rounding differences compound through L layers of our own outputs, so the
# end-to-end check allows 1e-4; per-layer checks above hold at 1e-5
assert torch.allclose(states[-1], trace.last_hidden_state, atol=1e-4)
print("max |diff| per stage:", " ".join(f"{e:.1e}" for e in errors))

# %% [markdown]
# ## Where the parameters are
#
# `parameter_breakdown` counts `numel()` over each module of the loaded model;
# `parameter_formula` derives the same numbers from the config alone (every `nn.Linear` is a
# weight matrix plus a bias, every LayerNorm a gain plus a bias):
#
# * embeddings: $(V + P + T)\,H + 2H$,
# * attention: $4(H^2 + H) + 2H$, feed-forward: $2HI + I + H + 2H$,
# * pooler: $H^2 + H$; total = embeddings + $L\cdot$layer + pooler.

# %%
from helpers.stack.compute import parameter_breakdown, parameter_formula

counted, formula = parameter_breakdown(model), parameter_formula(config)
assert counted == formula
assert counted["embeddings"] + counted["all layers"] + counted["pooler"] == sum(p.numel() for p in model.parameters())
rows = [("embeddings", "embeddings"), (f"all layers ({L} x one layer)", "all layers"), ("  one layer", "one layer"),
        ("    attention", "attention (one layer)"), ("    feed-forward", "feed-forward (one layer)"),
        ("pooler", "pooler"), ("total", "total")]
for label, key in rows:  # an indented row is a part of the row above it
    print(f"{label:<28} {counted[key]:>13,}  ({counted[key] / counted['total']:6.1%})")
print("(the unindented rows above the total add up to it; indented rows are parts of the row above)")

# %%
from helpers.stack.plots import parameter_bars

fig, ax, bars = parameter_bars(counted, L)
plt.show()
share = counted["embeddings"] / counted["total"]
print(f"the embedding tables hold {share:.0%} of this model's parameters"
      + (", more than all encoder layers together" if counted["embeddings"] > counted["all layers"] else
         ", less than the encoder layers together"))

# %% [markdown]
# ## BERT-base and BERT-large without downloading them
#
# Devlin et al. (2019, *BERT*, Section 3) give BERT-BASE ($L=12, H=768, A=12$) as 110M
# parameters and BERT-LARGE ($L=24, H=1024, A=16$) as 340M: rounded totals, without saying
# what they include. A `BertConfig` is enough to check: built on the `meta` device a model has
# shapes but no memory, so counting it costs nothing, and the formula must agree with it. We
# count `BertModel` and also `BertForPreTraining`, which adds the heads BERT was pre-trained
# with: the masked-LM transform and output bias (its output weight is the word table, lesson
# 01) and the next-sentence classifier (`pretraining_heads_formula` counts them from the config).

# %%
from transformers import BertConfig

from helpers.stack.compute import (meta_model_parameter_count, meta_pretraining_parameter_count,
                                   pretraining_heads_formula)

sizes = {"base": BertConfig(),  # the defaults are BERT-base
         "large": BertConfig(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096)}
claims = {"base": 110e6, "large": 340e6}
for name, cfg in sizes.items():
    on_meta, with_heads = meta_model_parameter_count(cfg), meta_pretraining_parameter_count(cfg)
    assert on_meta == parameter_formula(cfg)["total"]
    assert with_heads - on_meta == sum(pretraining_heads_formula(cfg).values())
    gap = (claims[name] - with_heads) / 1e6  # what the pre-training heads leave unexplained
    verdict = "within the paper's rounding" if abs(gap) < 0.5 else f"{gap:+.1f}M left that the heads do not explain"
    print(f"BERT-{name:<5}: BertModel {on_meta / 1e6:.1f}M, with the pre-training heads {with_heads / 1e6:.1f}M; "
          f"paper {claims[name] / 1e6:.0f}M: {verdict}")

# %% [markdown]
# The printout says, for each size, whether the pre-training heads account for the paper's
# figure. Where a gap remains, the paper does not say where it comes from (it gives only the
# totals), so this notebook cannot either.
#
# ## Summary
#
# * A BERT layer is two blocks, each ending in a residual and a LayerNorm: attention → dense
#   + residual + LayerNorm, then intermediate dense + GELU → output dense + residual +
#   LayerNorm; we rebuilt it and it equals `hidden_states[l]` for every layer.
# * Chaining our own layers from our own embeddings reproduces `last_hidden_state`.
# * Parameter counts follow from the config; a `meta`-device model checks the formula for
#   any size without downloading weights.
#
# ## Exercises
#
# 1. From `sizes["large"]` alone, how many parameters does one encoder layer of BERT-large
#    have?
# 2. How many parameters does `BertModel` have in the BERT-Small configuration of the BERT
#    miniatures (Turc et al., 2019, *Well-Read Students Learn Better*: $L=4, H=512, A=8$,
#    $I=2048$), pooler included? Use a formula, then check with `meta_model_parameter_count`.
# 3. Rebuild the output of the *last* encoder layer from `trace.hidden(L - 1)` without
#    `layer_by_hand`.
#
# Solutions: `lessons/solutions/solutions_03.py`.

# %%
from helpers.exercises.lesson03 import check_exercise_1, check_exercise_2, check_exercise_3

answer_1 = None  # your code here: an int
check_exercise_1(answer_1, sizes["large"])

# %%
small = BertConfig(num_hidden_layers=4, hidden_size=512, num_attention_heads=8, intermediate_size=2048)
answer_2 = None  # your code here: an int
check_exercise_2(answer_2, small)

# %%
answer_3 = None  # your code here: a [seq, hidden] tensor
check_exercise_3(answer_3, model, trace, layer=L)
