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
# # 00 — The big picture: what goes in, what comes out
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/bert-layer-by-layer/bert-layer-by-layer/blob/main/lessons/00_big_picture.ipynb)
#
# BERT (Devlin et al., 2019, *BERT: Pre-training of Deep Bidirectional Transformers for
# Language Understanding*) turns a sentence into one vector per token, layer after layer.
# In this first lesson we load a real pretrained *checkpoint* (a saved set of trained
# weights), run one sentence through it and look at what it hands back. Every later lesson
# opens one of these boxes and rebuilds it by hand.
#
# **BERT in one paragraph.** The text is cut into *tokens* (words and pieces of words,
# lesson 01), and each token becomes a list of numbers, its *vector*. A stack of identical
# *encoder layers* then updates every vector. (The *Transformer* of Vaswani et al., 2017, is the
# layer design BERT is built from; its *encoder* is the part that reads a text and turns it into
# vectors, and BERT is only that part.) Each layer does two things. Its *attention*
# block lets every token take in information from the other tokens: it computes, for every
# pair of tokens, a weight between 0 and 1 saying how much one token draws from the other
# (the weights of one token sum to 1), and mixes the vectors with those weights. It does
# this several times side by side, each with its own weights: each such copy is a *head*
# (lesson 02). Its *feed-forward* block then transforms every token's vector on its own
# (lesson 03).
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
# `MODEL` names the checkpoint: `None` lets the course choose (`bert-base-uncased` when it
# is cached or the Hugging Face hub, the online store of checkpoints, answers; otherwise
# the bundled all-MiniLM-L6-v2 weights); any hub id such as `"bert-base-chinese"` or a
# local folder works too. `SENTENCE` is the text we
# follow. Change either and re-run: nothing below depends on a particular size or sentence.

# %% tags=["parameters"]
MODEL = None
SENTENCE = "The bank by the river was unbelievably quiet this morning."

# %% [markdown]
# ## Load the model
#
# `load_model` (defined in `helpers/model/loading.py`) returns the tokenizer (text to
# token ids) and the model, a `BertModel` of Hugging Face's `transformers` library (a Python
# package, named after the Transformer but not the same thing); `model.config` holds the
# model's sizes. It always asks for the plain ("eager") way of computing attention, because
# PyTorch's faster one-call version does not hand back the attention weights. It also puts
# the model in evaluation mode, which switches dropout off (dropout randomly zeroes values
# during training), so every run gives the same numbers.

# %%
import torch

from helpers.model.loading import load_model
from helpers.model.trace import trace_text

tokenizer, model = load_model(MODEL)
config = model.config
L = config.num_hidden_layers
H = config.hidden_size
A = config.num_attention_heads
I = config.intermediate_size  # noqa: E741 - the course's name for it
print(f"{L} encoder layers, hidden size {H}, {A} attention heads "
      f"of size {H // A}, intermediate size {I}")

# %% [markdown]
# ## Conventions
#
# <a id="conventions"></a>
#
# Every lesson uses the same names; this box is the one place they are defined, and every
# lesson links back here.
#
# | name | meaning | read from |
# |---|---|---|
# | $L$ | number of encoder layers | `config.num_hidden_layers` |
# | $H$ | hidden size: the length of every token vector between layers | `config.hidden_size` |
# | $A$ | number of attention heads per layer | `config.num_attention_heads` |
# | $d$ | size of one head, $d = H / A$ | |
# | $I$ | intermediate size: the width the feed-forward block widens to | `config.intermediate_size` |
# | $n$ | number of tokens of the input, the two special tokens included | the tokenizer |
#
# * **Layers count from 1, heads and tokens from 0.** Layer 0 means the embeddings (the
#   vectors before any encoder layer); token 0 is `[CLS]`, a special token the tokenizer
#   puts first (and `[SEP]` last; see "Tokenize and run once" below).
# * `hidden(0)` is the embedding output, `outputs.hidden_states[0]`; `hidden(l)` is the
#   output of encoder layer $l$, which is `model.encoder.layer[l-1]`, and
#   `outputs.hidden_states[l]`. Shape $n \times H$.
# * `attention(l)` is layer $l$'s attention weights, `outputs.attentions[l-1]`: shape
#   $A \times n \times n$, one row per token that looks (the *query*), one column per token
#   looked at (the *key*). `attention(l, h)` is head $h$ of it, $n \times n$.
# * Shapes are written rows × columns. A model runs on a *batch* (several inputs at once),
#   so its own outputs carry a batch dimension in front, of size 1 for one sentence; the
#   course's `trace` (below) drops it.

# %% [markdown]
# ## The map
#
# Everything this course opens is in one picture. `architecture_diagram` (in
# `helpers/architecture/plots.py`) draws a BERT encoder from `model.config`, so every size
# in it is the loaded model's: the token ids, the three embedding tables whose rows are
# summed and normalised into `hidden_states[0]` (lesson 01; a *segment* row says which of two
# input sentences a token belongs to), then $L$ encoder layers. Each
# layer has an attention block and a feed-forward block; the feed-forward block widens
# every token vector from $H$ to $I$ numbers and back.
#
# Two more words you will see on the map:
#
# * **Residual stream.** A block does not replace the token vectors: it computes an
#   *update* and adds it to them (a *residual* connection, the green skip lines). The
#   vectors that flow up the stack, collecting one update per block, are the residual
#   stream.
# * **LayerNorm** rescales each token vector to mean 0 and spread 1 over its $H$ numbers,
#   then multiplies each number by a learned scale and adds a learned shift (lesson 01 writes
#   it out). $H$ numbers with mean 0 and spread 1 have length $\sqrt{H}$ (their squares add up
#   to $H$), but the vectors that come out are not of that length: the learned scale shrinks or
#   stretches each dimension. BERT puts a LayerNorm
#   *after* each residual add ("post-LN", as in the original Transformer). Most recent
#   models, and the code of *The Annotated Transformer*, put it *before* the block instead
#   ("pre-LN"); keep that in mind when you compare code.
#
# The map reads from the bottom up, with one vertical **lane per token** of `SENTENCE`
# (long inputs show the first few and the last). In each lane the token's word, position
# and segment rows are summed; the green line is that token's residual stream. Tokens
# exchange information in one place only: the attention block, where the arcs cross the
# lanes and the vectors are split into $A$ heads of $d$ numbers. Everything else works on
# each lane alone. One layer is drawn opened up; the stack repeats it $L$ times. On top
# sit the pooler (one more *dense layer*, $Wh + b$: a weight matrix times the vector plus a
# bias, PyTorch's `nn.Linear`, applied to the `[CLS]` vector; lesson 04) and, for a task, a
# classification head (a layer that turns a vector into one score for each of the $C$ classes
# of a task). So *head*
# means two things in this course: an **attention head** (one of the $A$ copies inside
# attention) and a **task head** (a small layer on top of the model for one job: the
# masked-LM head guesses hidden words, a classification head picks a class).
# The labels inside the layer (softmax, GELU, logits, ...) are a preview: lessons 02–04 build
# each one. The right-hand columns give each tensor's shape and its name in the code. Later lessons
# show the same map (or a one-line strip of it), their part marked "you are here".

# %% mystnb={"figure": {"caption": "The loaded model's encoder, bottom to top, one lane per token of the lesson's sentence (long inputs: first and last tokens). One layer is drawn opened up and repeats $L$ times; right-hand columns: each tensor's shape and code name. Follow a lane's green residual stream upwards and find the only row where arrows cross between lanes.", "name": "fig-00-architecture-map"}}
import matplotlib.pyplot as plt

from helpers.architecture.plots import architecture_diagram

lane_tokens = tokenizer.convert_ids_to_tokens(
    tokenizer(SENTENCE, truncation=True)["input_ids"])
architecture_diagram(config, tokens=lane_tokens)
plt.show()

# %% [markdown]
# ## Tokenize and run once
#
# The tokenizer splits the sentence into WordPiece tokens (words, or pieces of rarer
# words; lesson 01), adds `[CLS]` at the start and `[SEP]` at the end, and maps every token
# to an id in the vocabulary (the model's fixed list of known tokens). A model has a fixed number of positions
# (`config.max_position_embeddings`), so an input can be at most that long: `encode` (in
# `helpers/model/trace.py`) calls the tokenizer with `truncation=True` at that maximum and
# warns when it drops tokens. (Without truncation, a longer input fails deep inside the
# model with a tensor-size error.)

# %%
from helpers.model.trace import encode, max_input_tokens

inputs, n_dropped = encode(tokenizer, model, SENTENCE)
# character spans of the tokens: trace_text uses them, the model does not
inputs.pop("offset_mapping")
tokens = tokenizer.convert_ids_to_tokens(inputs["input_ids"][0].tolist())
limit = max_input_tokens(tokenizer, model)
shown = tokens if len(tokens) <= 40 else tokens[:40] + ["..."]
print(f"{len(tokens)} tokens (this model reads at most {limit}):", shown)

# %% [markdown]
# We ask the model for all hidden states and all attention weights, not just the final
# layer:

# %%
with torch.no_grad():
    outputs = model(**inputs, output_hidden_states=True,
                    output_attentions=True)
print(type(outputs).__name__, "with fields:", list(outputs.keys()))

# %% [markdown]
# ## The output fields
#
# With $n$ tokens and batch size 1 (names as in the [conventions](#conventions) box):
#
# | field | shape | what it is |
# |---|---|---|
# | `last_hidden_state` | $1 \times n \times H$ | one vector per token after the last layer, now depending on the whole input (*contextual*) |
# | `pooler_output` | $1 \times H$ | $\tanh(W h_{[CLS]} + b)$: the `[CLS]` vector passed through one more dense layer, then tanh, which squashes every number into $(-1, 1)$ (lesson 04) |
# | `hidden_states` | $L+1$ tensors of $1 \times n \times H$ | the embedding output followed by the output of every layer (asked for with `output_hidden_states=True`) |
# | `attentions` | $L$ tensors of $1 \times A \times n \times n$ | every layer's attention weights (asked for with `output_attentions=True`; lesson 02) |
# | `cross_attentions` | empty | only filled when BERT is built to also read a second model's output (`config.add_cross_attention`, used when BERT serves as a *decoder*, the part of a translation model that writes the output text); empty here |
#
# The code derives the expected shapes from the config and checks them.

# %%
n = len(tokens)
assert outputs.last_hidden_state.shape == (1, n, H)
assert outputs.pooler_output.shape == (1, H)
assert len(outputs.hidden_states) == L + 1
assert all(h.shape == (1, n, H) for h in outputs.hidden_states)
assert len(outputs.attentions) == L
assert all(a.shape == (1, A, n, n) for a in outputs.attentions)
# an encoder on its own reads no second model's output: empty (or None)
assert not outputs.cross_attentions
for field in ("last_hidden_state", "pooler_output"):
    print(f"{field}: {tuple(getattr(outputs, field).shape)}")
for field in ("hidden_states", "attentions"):
    stack = getattr(outputs, field)
    print(f"{field}: {len(stack)} x {tuple(stack[0].shape)}")
print(f"cross_attentions: {outputs.cross_attentions!r}")

# %% [markdown]
# `hidden_states[0]` is what the embedding layer produces before any attention; entry
# `l` is the output of encoder layer `l`. So the last entry must be exactly the final
# layer output, and `pooler_output` is *not* the same thing as the raw `[CLS]` vector. We
# compare them by *cosine similarity*, $u \cdot v / (\lVert u\rVert\,\lVert v\rVert)$: 1 when
# two vectors point the same way, 0 at right angles, whatever their lengths.

# %%
same = torch.equal(outputs.hidden_states[-1], outputs.last_hidden_state)
assert same
cls_raw = outputs.last_hidden_state[0, 0]
cls_pooled = outputs.pooler_output[0]
cos = torch.nn.functional.cosine_similarity(cls_raw, cls_pooled, dim=0)
print(f"torch.equal(hidden_states[-1], last_hidden_state): {same}")
print(f"cosine(raw [CLS], pooler_output) = {cos.item():.3f}  "
      "(not 1: the pooler transforms it)")

# %% [markdown]
# ## One traced pass for the rest of the course
#
# Later lessons use `trace_text` (in `helpers/model/trace.py`): it runs the model once and
# keeps tokens, ids, the word ↔ WordPiece mapping, every hidden state and every attention
# map, with the batch dimension removed (`trace.hidden(l)` and `trace.attention(l)` as in
# the [conventions](#conventions) box). `trace.find_word` reports which tokens a word
# became; below we ask it about the word cut into the most WordPieces (which need not be
# the word with the most letters).

# %%
trace = trace_text(tokenizer, model, SENTENCE)
assert torch.allclose(trace.hidden(L), outputs.last_hidden_state[0])


def n_pieces(word):
    return len(trace.find_word(word).pieces)


most_pieces = max(trace.words(), key=n_pieces)  # not the most letters
print(trace.find_word(most_pieces))

# %% [markdown]
# The trace's accessors check their arguments, so a layer that does not exist gives a
# message that says which layers do. The cell below asks for one on purpose: the error it
# prints is the point, not a failure.

# %%
try:
    trace.hidden(L + 1)
except ValueError as err:  # the refusal we asked for, not a failure
    print(f"This error is the point (an intended refusal): hidden({L + 1})"
          " asks for a layer that does not exist, and the trace says:")
    print(f"  {err}")

# %% [markdown]
# ## Vector length at each layer
#
# A first look inside: the average length (L2 norm, $\lVert x \rVert =
# \sqrt{\textstyle\sum_i x_i^2}$) of this sentence's token vectors after each layer, from
# `hidden(0)` (the embeddings, "emb") to `hidden(L)`.

# %%
from helpers.common.style import NORMAL, layer_labels

lengths = torch.stack([trace.hidden(layer).norm(dim=-1)
                       for layer in range(L + 1)])  # [L + 1, n]
mean_length = lengths.mean(dim=1)
print("mean length per layer:",
      ", ".join(f"{name} {v:.1f}" for name, v in
                zip(layer_labels(L + 1), mean_length.tolist())))

# %% mystnb={"figure": {"caption": "Mean length (L2 norm) of the token vectors of the lesson's sentence, all its tokens including `[CLS]` and `[SEP]`, after each layer, from the embeddings (\"emb\", `hidden(0)`) to the last layer. One sentence only. Compare the bars from layer to layer: does the length stay steady, grow or shrink up the stack?", "name": "fig-00-norm-by-layer"}}
fig, ax = plt.subplots(figsize=(6.5, 3))
ax.bar(range(L + 1), mean_length.tolist(), color=NORMAL)
ax.set_xticks(range(L + 1), layer_labels(L + 1))
ax.set_xlabel("layer (emb = hidden(0))")
ax.set_ylabel("mean L2 norm")
ax.set_title(f"mean length of the token vectors after each layer "
             f"({trace.seq_len} tokens, one sentence)")
plt.show()

# %%
first_len, last_len = float(mean_length[0]), float(mean_length[-1])
factor = max(first_len, last_len) / min(first_len, last_len)
print(f"From the embeddings to layer {L} the mean length goes from "
      f"{first_len:.1f} to {last_len:.1f}: the vectors "
      f"{'grow' if last_len > first_len else 'shrink'} by a factor of "
      f"{factor:.1f}, and the longest are after layer "
      f"{int(mean_length.argmax())}.")

# %% [markdown]
# The takeaway: the layers do not just nudge the vectors, they change their size, and not
# steadily. This is one sentence's average, so it can move with the sentence; lesson 07
# measures lengths over many sentences and finds out what sets them (the LayerNorm at the
# end of every layer, lesson 01).

# %% [markdown]
# ## Which model is this?
#
# Without `MODEL` and without a network connection, the course loads the bundled
# **all-MiniLM-L6-v2**. It runs through the same `BertModel` code as BERT-base, but it is
# a different model with a different history, and that matters every time a lesson
# compares a number with a paper.
#
# > **Its family tree, in three lines.** BERT-base was *pre-trained* on plain text by
# > guessing hidden words (masked-LM) and whether two segments follow each other.
# > all-MiniLM-L6-v2 was instead *distilled*: a small model trained to imitate a large one
# > (MiniLM; the 6-layer model keeps every second layer of a 12-layer one), then
# > *fine-tuned* (trained further, from its trained weights) on a billion sentence pairs to
# > give similar sentences similar average vectors.
#
# The cell below reads the loaded checkpoint's own files (`checkpoint_facts` in
# `helpers/model/loading.py`): which weight tensors it holds, whether a masked-LM head is
# among them, and, if its files say, how it *pools* a sentence (turns the token vectors into
# one sentence vector: `mean_tokens` averages them; lesson 04).

# %%
from helpers.model.loading import checkpoint_facts, describe
from helpers.model.trace import max_input_tokens

loaded = load_model(MODEL, verbose=False)  # cached: the model loaded above
print(describe(loaded), "--", loaded.choice.reason)
facts = checkpoint_facts(loaded)
print("\n".join(facts.lines()))
if facts.sentence_max_tokens:  # a setting of the sentence-transformers library
    print(f"(sentence-transformers cuts at {facts.sentence_max_tokens} tokens "
          "when it makes sentence vectors; the model itself reads up to "
          f"{max_input_tokens(tokenizer, model)}, and this course cuts only "
          "there)")

# %% [markdown]
# What that means for the rest of the course, when the printout names the bundled model:
# it has **no masked-LM head** (it cannot fill in `[MASK]`, the token that hides a word in
# pre-training, lesson 01; lesson 05 trains a small BERT that can), and its layer numbers do
# not line up with BERT-base's. When a lesson sets one of its numbers beside a paper's, it
# names the model the paper measured; `MODEL = "bert-base-uncased"` (hub access or a local
# cache) compares like with like. The "truncates at" in the printout, if any, is a setting of
# the sentence-transformers library (the Python package the model was published for), not of
# the model: the last line says where this course cuts.

# %% [markdown]
# ## Summary
#
# * A BERT checkpoint maps $n$ tokens to $n$ vectors of size $H$ at each of its $L+1$
#   stages; every size here, and in the diagram, was read from `model.config`, not assumed.
# * Asked for them, it also hands back every layer's attention weights (`attentions`).
# * An input longer than the model's maximum is truncated, with a warning.
# * The bundled all-MiniLM-L6-v2 is a distilled 6-layer model, fine-tuned to give similar
#   sentences similar vectors, without a masked-LM head: its numbers are not BERT-base's.
# * `hidden_states[-1]` *is* `last_hidden_state`; `pooler_output` is a further
#   transformation of the `[CLS]` vector.
# * `trace_text` keeps everything from one run of the model on an input (one *forward
#   pass*), so the rest of the course can look at any layer, token or head without running
#   the model again.
#
# ## Exercises
#
# Each exercise opens with its difficulty and importance (one to five dots) and a time
# estimate. Each checker (in `helpers/exercises/lesson00.py`) says what is wrong and gives
# a hint, never the answer; worked solutions are in `lessons/solutions/solutions_00.py`.
#
# ### Exercise 1: tokens per word
#
# Difficulty ●○○○○ · Importance ●●●○○ · ~5 min
#
# On average, how many WordPiece tokens does one word of `SENTENCE` become? Count the
# words as the tokenizer splits them (`trace.words()`) and the tokens that belong to a word
# (every token but `[CLS]` and `[SEP]`). Give a float.

# %%
from helpers.exercises.lesson00 import (check_exercise_1, check_exercise_2,
                                        check_exercise_3, check_exercise_4)

answer_1 = None  # your code here: a float
check_exercise_1(answer_1, trace)

# %% [markdown]
# ### Exercise 2: build it yourself — how much does the model hand back?
#
# Difficulty ●●○○○ · Importance ●●●○○ · ~10 min
#
# **Predict first:** as the input gets longer, which part of what the model hands back grows
# faster, the hidden states or the attention weights? Write `"hidden"` or `"attention"` in
# `prediction_2`. **Then build:** write `count_numbers(config, n_tokens)` that returns how many
# numbers `hidden_states` and `attentions` hold together for one input of `n_tokens` tokens
# (batch dimension left out), from the sizes in `config` alone. The checker runs the model on
# two inputs and counts.

# %%
prediction_2 = None  # "hidden" or "attention"


def count_numbers(config, n_tokens):
    return None  # your code here


check_exercise_2(count_numbers, prediction_2, tokenizer, model)

# %% [markdown]
# ### Exercise 3: predict, then measure — the cut at the maximum length
#
# Difficulty ●○○○○ · Importance ●●●○○ · ~5 min
#
# `long_text` below repeats `SENTENCE` `COPIES` times, far more than the model can read.
# **Predict first**, by arithmetic from the printout of "Tokenize and run once" (your
# sentence's token count and the model's maximum): how many tokens of `long_text` will the
# cut drop? Each copy adds its tokens without `[CLS]` and `[SEP]`, which come once around the
# whole text. Write a number in `prediction_3`. **Then measure:** set `dropped_3` to the
# number of tokens the tokenizer makes of `long_text` without truncation,
# `len(tokenizer(long_text)["input_ids"])`, minus the number of ids `encode` hands the model.

# %%
COPIES = 200
long_text = " ".join([SENTENCE] * COPIES)
prediction_3 = None  # your arithmetic, a number
dropped_3 = None  # your code here: an int
check_exercise_3(dropped_3, prediction_3, tokenizer, model, long_text)

# %% [markdown]
# ### Exercise 4: predict, then measure — does a later word change an earlier one?
#
# Difficulty ●●○○○ · Importance ●●●●○ · ~10 min
#
# `longer` below is `SENTENCE` with a few words appended. Token 1 (the first token after
# `[CLS]`) is the same token in both inputs. **Predict first:** after the last layer, is
# token 1's vector the `"same"` in both runs, or `"different"`? Write your prediction in
# `prediction_4`. **Then measure:** the cosine similarity between token 1's vector in
# `trace.hidden(L)` and in the same layer of a trace of `longer`.

# %%
longer = SENTENCE + " Nobody else was there."
prediction_4 = None  # "same" or "different"
answer_4 = None  # your code here: a float, the cosine
check_exercise_4(answer_4, prediction_4, tokenizer, model, SENTENCE, longer)
