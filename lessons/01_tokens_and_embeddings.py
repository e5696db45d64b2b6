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
# # 01 — Tokens and the embedding lookup
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/bert-layer-by-layer/bert-layer-by-layer/blob/main/lessons/01_tokens_and_embeddings.ipynb)
#
# Before the first attention layer, BERT turns text into WordPiece tokens and each token
# into a vector. In this lesson we watch the tokenizer work, map words to token positions
# correctly, rebuild the embedding layer's output from its three weight tables, and check
# by code a claim about whether those tables are trained at all.
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
# `MODEL` names the checkpoint (`None`: the course chooses; any BERT hub id or local folder
# works) and `SENTENCE` is the text we follow. Nothing below depends on a particular model
# size, vocabulary or sentence.

# %% tags=["parameters"]
MODEL = None
SENTENCE = "The bank by the river was unbelievably quiet this morning."

# %%
import torch

from helpers.model.loading import load_model
from helpers.model.trace import trace_text

tokenizer, model = load_model(MODEL)
config = model.config
print(f"{config.num_hidden_layers} layers, hidden {config.hidden_size}, vocab {config.vocab_size}, "
      f"{config.max_position_embeddings} positions, {config.type_vocab_size} token types")

# %% [markdown]
# This lesson is the bottom of the map from lesson 00 (`architecture_diagram`, in
# `helpers/architecture/plots.py`): the token ids and the embedding layer that turns them into
# `hidden_states[0]`.

# %%
import matplotlib.pyplot as plt

from helpers.architecture.plots import architecture_diagram

architecture_diagram(config, highlight=["tokens", "embeddings"])
plt.show()

# %% [markdown]
# ## WordPiece tokens
#
# BERT never sees characters or whole words. Its tokenizer is WordPiece: the word-piece model
# comes from Schuster & Nakajima (2012, *Japanese and Korean Voice Search*), and BERT (Devlin et
# al., 2019) cites its use in Wu et al. (2016, *Google's Neural Machine Translation System*). It
# first splits the text into words and punctuation, then cuts every word into the longest pieces
# found in a fixed vocabulary. A piece that continues a word is written with a leading
# `##`. Two special tokens frame the input: `[CLS]` at position 0 and `[SEP]` at the end.

# %%
trace = trace_text(tokenizer, model, SENTENCE)
for position, (token, token_id) in enumerate(zip(trace.tokens, trace.input_ids.tolist())):
    print(f"{position:3d}  {token:<15} id {token_id}")

# %% [markdown]
# Which words of the sentence were cut into several pieces? `trace.words()` lists the
# words as the tokenizer split them, and `trace.find_word` reports their pieces.

# %%
split_words = [trace.find_word(w) for w in dict.fromkeys(trace.words()) if len(trace.find_word(w).pieces) > 1]
for span in split_words:
    print(span)
if not split_words:
    print("Every word of this sentence is a single vocabulary entry; try a rarer word in SENTENCE.")
print(f"special tokens: {tokenizer.cls_token} = id {tokenizer.cls_token_id}, "
      f"{tokenizer.sep_token} = id {tokenizer.sep_token_id}, {tokenizer.pad_token} = id {tokenizer.pad_token_id}")

# %% [markdown]
# A character the vocabulary has never seen cannot be cut into known pieces at all: the
# whole word becomes `[UNK]`. We try a few unusual strings and print what this vocabulary
# makes of them. Before any cutting, an *uncased* tokenizer (`bert-base-uncased` and the
# bundled model are uncased) normalises the text: it lowercases it and strips accents, so
# "Café" and "cafe" become the same tokens. The cell checks what this tokenizer does, by
# tokenizing both spellings.

# %%
candidates = ["🦜", "☃", "𓀀", "Ω≈ç√"]
for text in candidates:
    pieces = tokenizer.tokenize(text)
    note = "-> unknown to this vocabulary" if tokenizer.unk_token in pieces else ""
    print(f"{text!r:>10} -> {pieces} {note}")
lowercases = tokenizer.tokenize("The") == tokenizer.tokenize("the")
strips_accents = tokenizer.tokenize("café") == tokenizer.tokenize("cafe")
print(f"do_lower_case = {getattr(tokenizer, 'do_lower_case', None)}; "
      f"lowercases: {lowercases}; strips accents: {strips_accents}")

# %% [markdown]
# ## A sentence pair and `token_type_ids`
#
# BERT was pre-trained on *pairs* of segments (for next-sentence prediction). The
# tokenizer joins them as `[CLS] A [SEP] B [SEP]` and marks each token with a segment id,
# `token_type_ids`: 0 for segment A, 1 for segment B.

# %%
SECOND = "It had rained all night."
pair = trace_text(tokenizer, model, SENTENCE, SECOND)
print(" ".join(f"{t}/{s}" for t, s in zip(pair.tokens, pair.token_type_ids.tolist())))
print(f"{int((pair.token_type_ids == 0).sum())} tokens of type 0, {int((pair.token_type_ids == 1).sum())} of type 1")

# %% [markdown]
# ## Word ↔ token positions
#
# A common recipe to find a word's vector is `text.split().index(word) + 1` (the `+ 1`
# skips `[CLS]`). It counts *words separated by spaces*, but the model's positions count
# *WordPiece tokens*: every extra piece and every punctuation mark before the word shifts
# the true position, and a word glued to punctuation ("river.") is not found at all.
# The table compares the recipe with `trace.find_word`, which uses the tokenizer's own
# word ↔ token map. (`.index` compares exact strings, so "The" and "the" count as different
# words here.)

# %%
def naive_position(text, word):
    try:
        return text.split().index(word) + 1
    except ValueError:
        return None  # the recipe raises: the word is glued to punctuation

seen = {}  # how often each word (case-insensitive) occurred so far: find_word's `occurrence`
rows = []
for w in trace.words():
    k = seen[w.lower()] = seen.get(w.lower(), -1) + 1
    if w.isalnum():
        rows.append((w, naive_position(SENTENCE, w), trace.find_word(w, occurrence=k).first))
for word, naive, true in rows:
    flag = "" if naive == true else "  <- wrong" if naive is not None else "  <- recipe raises ValueError"
    print(f"{word:<15} recipe {str(naive):>5}   find_word {true:>3}{flag}")
print(f"The recipe is wrong or fails for {sum(n != t for _, n, t in rows)} of {len(rows)} words of this sentence.")

# %% [markdown]
# One more failure: `.index` only ever finds the *first* occurrence of a word. A word that
# truly repeats shows it; we take the word of the sentence with the most characters and write
# it twice. `find_word(word, occurrence=1)` finds the second one.

# %%
alnum_words = [w for w in trace.words() if w.isalnum()] or trace.words()
word = max(alnum_words, key=len).lower()
repeated = f"{word} and {word} again"
repeat_trace = trace_text(tokenizer, model, repeated)
second = repeat_trace.find_word(word, occurrence=1)
print(f"{repeated!r}: the second {word!r} is token {second.first} ({second.pieces}); "
      f"the recipe says {naive_position(repeated, word)}, the first one's position")
assert naive_position(repeated, word) != second.first

# %% [markdown]
# ## Rebuilding the embedding layer
#
# `hidden_states[0]` is not just a table lookup. For the token at position $i$ with id
# $t_i$ and segment $s_i$, `BertEmbeddings` adds three rows and normalises:
#
# $$e_i = \mathrm{LayerNorm}\big(W_{\text{word}}[t_i] + W_{\text{position}}[i] + W_{\text{token\_type}}[s_i]\big),\qquad
# \mathrm{LayerNorm}(x) = \gamma \odot \frac{x - \mu(x)}{\sqrt{\sigma^2(x) + \epsilon}} + \beta .$$
#
# Dropout follows in the code, but in evaluation mode it is the identity. Here are the
# three tables and their shapes, read from the model:

# %%
emb = model.embeddings
for name in ["word_embeddings", "position_embeddings", "token_type_embeddings"]:
    print(f"{name:<22} {tuple(getattr(emb, name).weight.shape)}")
print("LayerNorm eps:", emb.LayerNorm.eps, "| model.training:", model.training, "(dropout is off)")

# %% [markdown]
# Now the sum and the LayerNorm written out by hand, compared with the model's own
# `hidden_states[0]`:

# %%
with torch.no_grad():
    n = trace.seq_len
    summed = (emb.word_embeddings.weight[trace.input_ids]
              + emb.position_embeddings.weight[torch.arange(n)]
              + emb.token_type_embeddings.weight[trace.token_type_ids])
    mu = summed.mean(dim=-1, keepdim=True)
    var = summed.var(dim=-1, keepdim=True, unbiased=False)
    by_hand = emb.LayerNorm.weight * (summed - mu) / torch.sqrt(var + emb.LayerNorm.eps) + emb.LayerNorm.bias
assert torch.allclose(by_hand, trace.hidden(0), atol=1e-5)
print(f"max |by hand - hidden_states[0]| = {(by_hand - trace.hidden(0)).abs().max():.2e}")

# %% [markdown]
# The same steps live in `helpers/embeddings/rebuild.py` as `embeddings_by_hand`. On the sentence
# pair, the token-type rows differ between the two segments, and it still matches:

# %%
from helpers.embeddings.rebuild import embeddings_by_hand

with torch.no_grad():
    pair_by_hand = embeddings_by_hand(model, pair.input_ids, pair.token_type_ids)
assert torch.allclose(pair_by_hand, pair.hidden(0), atol=1e-5)
gap = (emb.token_type_embeddings.weight[1] - emb.token_type_embeddings.weight[0]).norm().item()
print(f"pair matches too; |type-1 row - type-0 row| = {gap:.3f} (the {config.vocab_size:,} rows of the "
      f"word table have mean length {emb.word_embeddings.weight.norm(dim=1).mean():.3f})")

# %% [markdown]
# The same sum as a picture. `embedding_parts` (in `helpers/embeddings/rebuild.py`) keeps every
# step for our sentence and `embedding_sum_figure` (in `helpers/embeddings/plots.py`) draws them
# side by side: one row per token, the first dimensions as columns. The three looked-up rows
# and their sum share one colour scale; the LayerNorm output has its own, because normalising
# changes the scale. Each title gives the mean length of the rows drawn, which are this
# sentence's rows only: the word rows of its tokens, not the whole vocabulary's as above.

# %%
from helpers.embeddings.plots import embedding_sum_figure
from helpers.embeddings.rebuild import embedding_parts

parts = embedding_parts(model, trace.input_ids, trace.token_type_ids)
assert torch.allclose(parts["layernorm"], trace.hidden(0), atol=1e-5)  # the picture shows the model's own numbers
fig, axes = embedding_sum_figure(parts, trace.tokens)
plt.show()
lengths = {k: v.norm(dim=1).mean().item() for k, v in parts.items()}
print(f"mean row length over this sentence's {trace.seq_len} tokens: "
      + ", ".join(f"{k} {v:.2f}" for k, v in lengths.items()))

# %% [markdown]
# ## Static word similarity
#
# Before any attention, a word's vector is the same in every sentence. The rows of the
# word-embedding table already place some words near each other. `static_word_vector`
# looks a word up; a word cut into several pieces gets the mean of its rows, and a word
# that is `[UNK]` in this vocabulary is skipped with a note.

# %%
from helpers.embeddings.rebuild import static_word_vector

WORDS = ["bank", "money", "river", "water", "cash", "shore"]
vectors, labels = [], []
for word in WORDS:
    vector, pieces = static_word_vector(model, tokenizer, word)
    if vector is None:
        print(f"skipping {word!r}: this vocabulary only knows it as {pieces}")
        continue
    if len(pieces) > 1:
        print(f"{word!r} is {pieces} here: using the mean of its rows")
    vectors.append(vector); labels.append(word)
V = torch.nn.functional.normalize(torch.stack(vectors), dim=1) if vectors else torch.zeros(0, config.hidden_size)
similarity = V @ V.T
print(f"{len(labels)} words kept: {labels}")

# %%
from helpers.embeddings.plots import similarity_heatmap

if len(labels) >= 2:
    fig, ax, _ = similarity_heatmap(similarity, labels, title="cosine similarity of the words' input-embedding rows")
    plt.show()
    off = similarity - 2 * torch.eye(len(labels), device=similarity.device)  # hide the diagonal when looking for the top pair
    i, j = divmod(int(off.argmax()), len(labels))
    print(f"most similar pair here: {labels[i]!r} and {labels[j]!r} ({similarity[i, j]:.3f})")
    if "bank" in labels:
        b = labels.index("bank")
        others = [k for k in range(len(labels)) if k != b]
        print("'bank' is closest to", labels[max(others, key=lambda k: similarity[b, k].item())])
else:
    print("fewer than two of the words are in this vocabulary; nothing to compare")

# %% [markdown]
# One row per word means one vector for *bank* whether it is the river bank or the money
# bank: the table cannot separate the senses. Separating them is the job of the layers
# that follow (lesson 02 onwards).
#
# ## Myth check: "the embedding layer is a fixed initialisation"
#
# A claim one meets is that BERT's embedding table is a random initialisation that
# pre-training leaves alone. Here is the evidence against it, strongest first.
#
# **The pre-training loss reads the table directly.** BERT was pre-trained with a masked
# language model (Devlin et al., 2019): an output layer scores every vocabulary word for each
# masked position. In BERT's pre-training code (google-research/bert, `run_pretraining.py`)
# that output layer's weight *is* the word-embedding table, with only a bias of its own: weight
# tying, as in Press & Wolf (2017, *Using the Output Embedding to Improve Language Models*). In
# `transformers` the config flag `tie_word_embeddings` makes `BertForMaskedLM` share the two.
# We build a `BertForMaskedLM` from the loaded config (its weights are random here; the tie is
# structural) and look:

# %%
from transformers import BertForMaskedLM

mlm = BertForMaskedLM(config).eval().to(model.device)
decoder = mlm.cls.predictions.decoder.weight  # [vocab, hidden]: one output score per vocabulary word
table = mlm.bert.embeddings.word_embeddings.weight
print(f"config.tie_word_embeddings = {config.tie_word_embeddings}")
print(f"decoder.weight is word_embeddings.weight: {decoder is table}; "
      f"same storage: {decoder.data_ptr() == table.data_ptr()}; shape {tuple(decoder.shape)}")

# %% [markdown]
# Because it is one tensor, one masked-LM loss sends a gradient into the table through two
# paths: the looked-up rows of the input, and the output layer, where the softmax over the
# whole vocabulary touches *every* row. We mask about 15% of the sentence's word tokens as
# BERT's pre-training did (replaced by `[MASK]`, the loss scores only those positions; labels
# `-100` elsewhere) and count live:

# %%
from helpers.model.tokens import content_positions

candidates_to_mask = torch.tensor(content_positions(trace))
k = max(1, round(0.15 * len(candidates_to_mask)))
masked_at = candidates_to_mask[torch.randperm(len(candidates_to_mask), generator=torch.Generator().manual_seed(0))[:k]]
ids = trace.input_ids.clone()
ids[masked_at] = tokenizer.mask_token_id
labels = torch.full_like(ids, -100)  # -100: not scored
labels[masked_at] = trace.input_ids[masked_at]  # predict the original token where it was masked
mlm.zero_grad(set_to_none=True)
loss = mlm(input_ids=ids[None], token_type_ids=trace.token_type_ids[None], labels=labels[None]).loss
loss.backward()
rows_moved = int((table.grad.abs().sum(dim=1) > 0).sum())
shown = [trace.tokens[i] for i in masked_at.tolist()][:10] + (["..."] if k > 10 else [])
print(f"masked {k} of {trace.seq_len} tokens {shown}; masked-LM loss "
      f"{loss.item():.2f}: {rows_moved:,} of {config.vocab_size:,} rows of the table get a gradient; "
      f"the input itself used {len(set(ids.tolist()))} ids")
assert rows_moved > len(set(ids.tolist()))  # the output layer reaches rows the input never used
del mlm, decoder, table, loss

# %% [markdown]
# That head was initialised at random a moment ago: its guess is close to uniform over the
# vocabulary, so its loss sits near $\ln V$ and it predicts nothing. A **trained** head,
# offline, is lesson 12's tiny BERT (`MODEL = "course-tiny"`), if you have run lesson 12:

# %%
import math

from helpers.lens.compute import course_tiny_lens

print(f"untrained head: a uniform guess over V = {config.vocab_size:,} has loss "
      f"ln V = {math.log(config.vocab_size):.2f}")
print(course_tiny_lens(SENTENCE).message)

# %% [markdown]
# So every pre-training step of BERT updated the embedding table. (The bundled all-MiniLM-L6-v2
# has no masked-LM head, lesson 00; its table was trained by distillation and contrastive
# fine-tuning through the input path below.)
#
# **Any training updates the rows a batch uses.** In the loaded model, the table is a
# parameter: `requires_grad` only says that a training step *could* move it, not that one did.

# %%
table = emb.word_embeddings.weight
print(f"requires_grad = {table.requires_grad}; counted in model.parameters(): "
      f"{any(p is table for p in model.parameters())}")

# %% [markdown]
# One backward pass through any loss (here the mean squared final hidden state, standing in
# for a training loss) fills `table.grad`, and exactly the rows of the ids that appeared in the
# input receive a non-zero gradient: a training step would move them.

# %%
model.zero_grad(set_to_none=True)
out = model(input_ids=trace.input_ids[None], token_type_ids=trace.token_type_ids[None])
out.last_hidden_state.pow(2).mean().backward()
rows_with_grad = set(torch.nonzero(table.grad.abs().sum(dim=1)).flatten().tolist())
used = set(trace.input_ids.tolist())
model.zero_grad(set_to_none=True)  # leave the model as we found it
print(f"{len(rows_with_grad)} rows got a gradient; the input used {len(used)} distinct ids; "
      f"same set: {rows_with_grad == used}")
assert rows_with_grad == used

# %% [markdown]
# **A trained table no longer looks like its initialisation.** BERT's `_init_weights` draws
# every embedding entry from $\mathcal N(0, \sigma^2)$ with $\sigma$ = `config.initializer_range`,
# and sets the LayerNorm $\gamma$ to 1. Compare the loaded weights with those statistics:

# %%
with torch.no_grad():
    rows = table[[i for i in range(config.vocab_size) if i != config.pad_token_id]]
    std, sigma = rows.std().item(), config.initializer_range
    gamma_shift = (emb.LayerNorm.weight - 1).abs().max().item()
ratio = std / sigma
print(f"std of the trained rows {std:.4f} vs init std {sigma} (ratio {ratio:.2f}); "
      f"max |LayerNorm gamma - 1| = {gamma_shift:.3f}")
if abs(ratio - 1) > 0.2 or gamma_shift > 0.05:
    print("-> far from the initialisation: pre-training changed the embedding layer.")
else:
    print("-> still close to the initialisation: this checkpoint looks untrained (random weights).")

# %% [markdown]
# ## Summary
#
# * WordPiece turns text into `[CLS] … [SEP]` with `##` continuation pieces and `[UNK]` for
#   what the vocabulary cannot spell; pairs add `token_type_ids`.
# * Token positions are not word positions: use the tokenizer's word ↔ token map
#   (`trace.find_word`), not `text.split().index(word) + 1`.
# * `hidden_states[0]` = LayerNorm(word + position + token-type rows); we rebuilt it and it
#   matches the model to `1e-5`.
# * The embedding table is trained: in BERT the masked-LM output layer *is* the table
#   (`tie_word_embeddings`), so pre-training updates every row; any training moves the rows a
#   batch uses; and a trained table no longer looks like its initialisation.
#
# ## Exercises
#
# 1. Find the position of the first token of the *last* word of `SENTENCE` without the
#    split recipe. The tokenizer counts a punctuation mark as a word; leave those out: the last
#    word here is the last one made of letters or digits (`last_word` below).
# 2. Compute the cosine similarity of the static embeddings of `"bank"` and `"river"`
#    (average the rows of a word split into pieces; return `None` if a word is `[UNK]`).
# 3. Rebuild `hidden_states[0]` of the sentence pair `pair` yourself, without
#    `embeddings_by_hand`.
#
# Each checker says what is wrong and gives a hint; worked solutions are in
# `lessons/solutions/solutions_01.py`.

# %%
from helpers.exercises.lesson01 import check_exercise_1, check_exercise_2, check_exercise_3

letter_words = [w for w in trace.words() if w.isalnum()]  # punctuation marks are words to the tokenizer: skip them
last_word = letter_words[-1] if letter_words else trace.words()[-1]  # a text of punctuation only: its last mark
answer_1 = None  # your code here, e.g. an int
check_exercise_1(answer_1, trace, last_word)

# %%
answer_2 = None  # your code here: a float
check_exercise_2(answer_2, model, tokenizer, "bank", "river")

# %%
answer_3 = None  # your code here: a [seq, hidden] tensor
check_exercise_3(answer_3, model, pair)
