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
# In this first lesson we load a real pretrained checkpoint, run one sentence through it
# and look at what it hands back. Every later lesson opens one of these boxes and
# rebuilds it by hand.
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
# `MODEL` names the checkpoint: `None` lets the course choose (`bert-base-uncased` when it
# is cached or the hub answers, otherwise the bundled all-MiniLM-L6-v2 weights); any hub id
# such as `"bert-base-chinese"` or a local folder works too. `SENTENCE` is the text we
# follow. Change either and re-run: nothing below depends on a particular size or sentence.

# %% tags=["parameters"]
MODEL = None
SENTENCE = "The bank by the river was unbelievably quiet this morning."

# %% [markdown]
# ## Load the model
#
# `load_model` (defined in `helpers/model/loading.py`) returns the tokenizer and the model. It
# always asks for the *eager* attention implementation, because the faster SDPA kernel
# does not return attention weights, and it puts the model in evaluation mode, which
# switches dropout off so every run gives the same numbers.

# %%
import torch

from helpers.model.loading import load_model
from helpers.model.trace import trace_text

tokenizer, model = load_model(MODEL)
config = model.config
L, H, A = config.num_hidden_layers, config.hidden_size, config.num_attention_heads
print(f"{L} encoder layers, hidden size {H}, {A} attention heads of size {H // A}")

# %% [markdown]
# ## The map
#
# Everything this course opens is in one picture. `architecture_diagram` (in
# `helpers/architecture/plots.py`) draws a BERT encoder from `model.config`, so every size in it
# is the loaded model's: the token ids, the three embedding tables whose rows are summed and
# normalised into `hidden_states[0]`, then $L$ encoder layers, each an attention block and a
# feed-forward block (which widens every token vector from the hidden size $H$ to the
# *intermediate size* $I$ = `config.intermediate_size` and back), each followed by a residual add
# and a LayerNorm. BERT puts the LayerNorm
# *after* the add ("post-LN", as in Vaswani et al., 2017). The green skip connections carry the
# *residual stream*: each block only adds an update to it. One layer is drawn opened up; the
# stack repeats it $L$ times. On top sit the pooler and, for a task, a classification head.
# The right-hand column gives each tensor's shape ($n$ tokens) and the name this course uses
# for it. Later lessons show the same map with their part marked "you are here".

# %%
import matplotlib.pyplot as plt

from helpers.architecture.plots import architecture_diagram

architecture_diagram(config)
plt.show()

# %% [markdown]
# ## Which model is this?
#
# Without `MODEL` and without a network connection, the course loads the bundled
# **all-MiniLM-L6-v2**. It runs through the same `BertModel` code as BERT-base, but it is a
# different model with a different history, and that matters every time a lesson compares a
# number with a paper. From the model cards of the checkpoints it descends from:
#
# * **MiniLM** (Wang et al., 2020, *MiniLM: Deep Self-Attention Distillation for Task-Agnostic
#   Compression of Pre-Trained Transformers*) is a small model trained to imitate a large one.
#   `microsoft/MiniLM-L12-H384-uncased` (12 layers, 384 wide) was distilled from a
#   BERT-base-sized UniLMv2 teacher by matching two things in the teacher's *last* layer: its
#   self-attention distributions (queries against keys) and its value relation (the scaled dot
#   products of the value vectors with each other).
# * `nreimers/MiniLM-L6-H384-uncased` keeps **every second layer** of that 12-layer model: 6 layers.
# * sentence-transformers then **fine-tuned it contrastively** on about one billion sentence
#   pairs (given one sentence of a pair, pick its partner among randomly sampled others) to
#   produce *sentence* embeddings by **mean pooling** over the tokens: that is
#   `sentence-transformers/all-MiniLM-L6-v2`.
#
# The cell below reads the loaded checkpoint's own files (helper `checkpoint_facts` in
# `helpers/model/loading.py`): which weight tensors it holds, whether a masked-LM head is among
# them, and how its sentence-transformers configuration pools a sentence, if it has one.

# %%
from helpers.model.loading import checkpoint_facts, describe

loaded = load_model(MODEL, verbose=False)  # cached: the same model as above, with how it was chosen
print(describe(loaded), "--", loaded.choice.reason)
facts = checkpoint_facts(loaded)
print("\n".join(facts.lines()))

# %% [markdown]
# What that means for the rest of the course, when the printout names the bundled model:
#
# * It has **no masked-LM head**, so it cannot fill in `[MASK]`, and the pooler on top of
#   `[CLS]` (lesson 07) was never trained by its sentence objective, which pools by averaging.
# * Published layer-by-layer findings were mostly measured on **BERT-base** (12 layers, 768
#   wide, pre-trained with masked-LM and next-sentence prediction). Layer numbers do not line
#   up: this model's layers were not cut out of BERT-base (its 12-layer parent was trained to
#   imitate a teacher's last layer only), so its layer 3 of 6 corresponds to neither layer 3 nor
#   layer 6 of BERT-base. And contrastive fine-tuning reshapes the upper layers towards sentence
#   similarity. When a lesson sets a number of this model
#   beside a paper's, it names the model the paper measured; agreement or disagreement is a
#   fact about this model, not a test of the paper. `MODEL = "bert-base-uncased"` (hub access
#   or a local cache) compares like with like.
#
# ## Tokenize and run once
#
# The tokenizer splits the sentence into WordPiece tokens, adds `[CLS]` at the start and
# `[SEP]` at the end, and maps every token to an id in the vocabulary. A model has a fixed
# number of positions (`config.max_position_embeddings`), so an input can be at most that
# long: `encode` (in `helpers/model/trace.py`) calls the tokenizer with `truncation=True` at
# that maximum and warns when it drops tokens. (Without truncation, a longer input fails deep
# inside the model with a tensor-size error.) We ask the model for all hidden states and all
# attention maps, not just the final layer.

# %%
from helpers.model.trace import encode, max_input_tokens

inputs, n_dropped = encode(tokenizer, model, SENTENCE)
inputs.pop("offset_mapping")  # character spans of the tokens: trace_text uses them, the model does not take them
tokens = tokenizer.convert_ids_to_tokens(inputs["input_ids"][0].tolist())
print(f"{len(tokens)} tokens (this model reads at most {max_input_tokens(tokenizer, model)}):",
      tokens if len(tokens) <= 40 else tokens[:40] + ["..."])

with torch.no_grad():
    outputs = model(**inputs, output_hidden_states=True, output_attentions=True)
print(type(outputs).__name__, "with fields:", list(outputs.keys()))

# %% [markdown]
# ## The output fields
#
# With $n$ tokens, batch size 1, $L$ layers, hidden size $H$ and $A$ heads:
#
# | field | shape | what it is |
# |---|---|---|
# | `last_hidden_state` | $1 \times n \times H$ | one contextual vector per token after the last layer |
# | `pooler_output` | $1 \times H$ | $\tanh(W h_{[CLS]} + b)$: the `[CLS]` vector passed through one more dense layer (lesson 07) |
# | `hidden_states` | $L+1$ tensors of $1 \times n \times H$ | the embedding output followed by the output of every layer (asked for with `output_hidden_states=True`) |
# | `attentions` | $L$ tensors of $1 \times A \times n \times n$ | every layer's attention probabilities (asked for with `output_attentions=True`; lesson 02) |
# | `cross_attentions` | empty | only filled when BERT is built as a decoder that attends to another encoder's output (`config.add_cross_attention`); empty here |
#
# The code derives the expected shapes from the config and checks them.

# %%
n = len(tokens)
assert outputs.last_hidden_state.shape == (1, n, H)
assert outputs.pooler_output.shape == (1, H)
assert len(outputs.hidden_states) == L + 1
assert all(h.shape == (1, n, H) for h in outputs.hidden_states)
assert len(outputs.attentions) == L and all(a.shape == (1, A, n, n) for a in outputs.attentions)
assert not outputs.cross_attentions  # empty (or None): an encoder on its own has nothing to cross-attend to
print(f"last_hidden_state {tuple(outputs.last_hidden_state.shape)}, "
      f"pooler_output {tuple(outputs.pooler_output.shape)}, "
      f"hidden_states: {len(outputs.hidden_states)} x {tuple(outputs.hidden_states[0].shape)}, "
      f"attentions: {len(outputs.attentions)} x {tuple(outputs.attentions[0].shape)}, "
      f"cross_attentions: {outputs.cross_attentions!r}")

# %% [markdown]
# `hidden_states[0]` is what the embedding layer produces before any attention; entry
# `l` is the output of encoder layer `l`. So the last entry must be exactly the final
# layer output, and `pooler_output` is *not* the same thing as the raw `[CLS]` vector.

# %%
same = torch.equal(outputs.hidden_states[-1], outputs.last_hidden_state)
assert same
cls_raw = outputs.last_hidden_state[0, 0]
cls_pooled = outputs.pooler_output[0]
cos = torch.nn.functional.cosine_similarity(cls_raw, cls_pooled, dim=0).item()
print(f"torch.equal(hidden_states[-1], last_hidden_state): {same}")
print(f"cosine(raw [CLS], pooler_output) = {cos:.3f}  (not 1: the pooler transforms it)")

# %% [markdown]
# ## One traced pass for the rest of the course
#
# Later lessons use `trace_text` (in `helpers/model/trace.py`): it runs the model once and keeps
# tokens, ids, the word ↔ WordPiece mapping, every hidden state and every attention map,
# with the batch dimension removed. `trace.find_word` reports which tokens a word became;
# below we ask it about the word cut into the most WordPieces (which need not be the word with
# the most letters). Its accessors check their arguments, so a layer that does not exist gives
# a message that says which layers do.

# %%
trace = trace_text(tokenizer, model, SENTENCE)
assert torch.allclose(trace.hidden(L), outputs.last_hidden_state[0])
most_pieces = max(trace.words(), key=lambda w: len(trace.find_word(w).pieces))  # most WordPieces, not most letters
print(trace.find_word(most_pieces))
try:
    trace.hidden(L + 1)
except ValueError as err:
    print("ValueError:", err)

# %% [markdown]
# ## Vector length at each layer
#
# A first look inside: the average length (L2 norm) of the token vectors after each layer,
# from `hidden_states[0]` to `hidden_states[L]`, with a 95% bootstrap interval over this
# sentence's tokens (`bootstrap_ci`, in `helpers/common/stats.py`). The printout below the
# chart says how the last layer compares with the embeddings for this model and sentence,
# comparing each token with itself (`paired_difference_ci`), and which layers are not shown to
# differ from the longest and the shortest.
#
# The course reads every such comparison by one set of rules (`verdict`, in
# `helpers/common/stats.py`): a difference whose interval excludes 0 is a difference; one whose
# interval includes 0 is **inconclusive**, never "no difference" (claiming *no* difference would
# need a margin stated in advance). When one layer is compared with many others, as with the
# longest below, the p-values are **Holm-adjusted** over those comparisons (`rank_layers`, in
# `helpers/layerwalk/compute.py`, which lesson 04 explains). Lesson 04 measures lengths over many
# sentences, and asks what sets them.

# %%
from helpers.common.stats import bootstrap_ci, paired_difference_ci, verdict
from helpers.common.style import NORMAL, layer_labels

per_token = torch.stack([trace.hidden(layer).norm(dim=-1) for layer in range(L + 1)], dim=1)  # [tokens, L + 1]
intervals = bootstrap_ci(per_token)  # one Interval per layer: the mean over tokens
norms = [iv.estimate for iv in intervals]
fig, ax = plt.subplots(figsize=(6.5, 3))
ax.bar(range(L + 1), norms, color=NORMAL, yerr=[[n - iv.low for n, iv in zip(norms, intervals)],
                                                [iv.high - n for n, iv in zip(norms, intervals)]], capsize=3)
ax.set_xticks(range(L + 1), layer_labels(L + 1))
ax.set_xlabel("layer (emb = hidden_states[0])"); ax.set_ylabel("mean L2 norm (95% interval)")
ax.set_title(f"mean length of the token vectors after each layer ({trace.seq_len} tokens)")
plt.show()

# %%
from helpers.layerwalk.compute import rank_layers

change = paired_difference_ci(per_token[:, -1], per_token[:, 0])  # each token: last layer minus embeddings
print(f"mean norm: embeddings {intervals[0].format('.2f')}, last layer {intervals[-1].format('.2f')}; per token, "
      + str(verdict(change, a="last layer", b="embeddings")))
longest, shortest = rank_layers(per_token, lowest=False), rank_layers(per_token, lowest=True)  # paired per token
for name, r in (("largest", longest), ("smallest", shortest)):
    near = ", ".join(f"layer {k}" for k in r.tied if k != r.extreme) or "none"
    print(f"{name} after layer {r.extreme}; not shown different from it (paired per token, Holm over "
          f"{r.family_size} comparisons): {near}")
print("(layer 0 = embeddings)")

# %% [markdown]
# ## Summary
#
# * A BERT checkpoint maps $n$ tokens to $n$ vectors of size $H$ at each of its $L+1$
#   stages; every size here, and in the diagram, was read from `model.config`, not assumed.
# * Asked for them, it also hands back every layer's attention probabilities (`attentions`).
# * An input longer than the model's maximum is truncated, with a warning.
# * The bundled all-MiniLM-L6-v2 is a distilled, contrastively fine-tuned 6-layer model without
#   a masked-LM head: its numbers are not BERT-base's.
# * `hidden_states[-1]` *is* `last_hidden_state`; `pooler_output` is a further
#   transformation of the `[CLS]` vector.
# * `trace_text` keeps one forward pass so the rest of the course can look at any
#   layer, token or head without running the model again.
#
# ## Exercises
#
# 1. On average, how many WordPiece tokens does one word of `SENTENCE` become? Count the words
#    as the tokenizer splits them (`trace.words()`) and the tokens that belong to a word (every
#    token but `[CLS]` and `[SEP]`). Give a float.
# 2. Give the shapes of `trace.hidden(0)` and `trace.attention(1)` as a pair of tuples, and
#    explain each dimension using `config`.
# 3. Which exception class does `trace.attention(0)` raise? Why is there no attention at
#    layer 0?
#
# Each checker (in `helpers/exercises/lesson00.py`) says what is wrong and gives a hint;
# worked solutions are in `lessons/solutions/solutions_00.py`.

# %%
from helpers.exercises.lesson00 import check_exercise_1, check_exercise_2, check_exercise_3

answer_1 = None  # your code here: a float
check_exercise_1(answer_1, trace)

# %%
answer_2 = None  # your code here: (hidden shape, attention shape)
check_exercise_2(answer_2, trace)

# %%
answer_3 = None  # your code here: an exception class
check_exercise_3(answer_3)
