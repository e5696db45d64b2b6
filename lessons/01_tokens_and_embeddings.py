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
# Names and counting ($L, H, A, d, I, n$; layers from 1, heads from 0): see the [conventions](00_big_picture.ipynb#conventions) box of lesson 00.
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
print(f"{config.num_hidden_layers} layers, hidden {config.hidden_size}, "
      f"vocab {config.vocab_size}, {config.max_position_embeddings} "
      f"positions, {config.type_vocab_size} token types")

# %% [markdown]
# (*Token types* are the segment ids: which of two input sentences a token belongs to; see
# "A sentence pair" below.) This lesson is the bottom of the map from lesson 00
# (`architecture_diagram`, in `helpers/architecture/plots.py`): the token ids and the
# embedding layer that turns them into `hidden_states[0]`.

# %% mystnb={"figure": {"caption": "The map of lesson 00 for the loaded model, this lesson's part marked \"you are here\": the tokens and the embedding layer, where each token's word, position and segment rows are looked up, summed and normalised into `hidden_states[0]`. Read the marked rows bottom to top, each with its shape and code name.", "name": "fig-01-map-embeddings"}}
import matplotlib.pyplot as plt

from helpers.architecture.plots import architecture_diagram

lane_tokens = tokenizer.convert_ids_to_tokens(
    tokenizer(SENTENCE, truncation=True)["input_ids"])
architecture_diagram(config, highlight=["tokens", "embeddings"],
                     tokens=lane_tokens)
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
ids = trace.input_ids.tolist()
for position, (token, token_id) in enumerate(zip(trace.tokens, ids)):
    print(f"{position:3d}  {token:<15} id {token_id}")

# %% [markdown]
# Which words of the sentence were cut into several pieces? `trace.words()` lists the
# words as the tokenizer split them, and `trace.find_word` reports their pieces. The cell
# also prints the special tokens' ids; `[PAD]` is the filler that makes the inputs of a batch
# equally long (lesson 02).

# %%
spans = [trace.find_word(w) for w in dict.fromkeys(trace.words())]
split_words = [span for span in spans if len(span.pieces) > 1]
for span in split_words:
    print(span)
if not split_words:
    print("Every word of this sentence is a single vocabulary entry; "
          "try a rarer word in SENTENCE.")
for name in ("cls", "sep", "pad"):
    token = getattr(tokenizer, f"{name}_token")
    token_id = getattr(tokenizer, f"{name}_token_id")
    print(f"special token {token} = id {token_id}")

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
    unknown = tokenizer.unk_token in pieces
    note = "-> unknown to this vocabulary" if unknown else ""
    print(f"{text!r:>10} -> {pieces} {note}")
lowercases = tokenizer.tokenize("The") == tokenizer.tokenize("the")
strips_accents = tokenizer.tokenize("café") == tokenizer.tokenize("cafe")
print(f"do_lower_case = {getattr(tokenizer, 'do_lower_case', None)}; "
      f"lowercases: {lowercases}; strips accents: {strips_accents}")

# %% [markdown]
# ## A sentence pair and `token_type_ids`
#
# BERT was pre-trained on *pairs* of segments (for next-sentence prediction: is segment B
# the text that followed segment A?). The tokenizer joins them as `[CLS] A [SEP] B [SEP]`
# and marks each token with a segment id, `token_type_ids`: 0 for segment A, 1 for
# segment B.

# %%
SECOND = "It had rained all night."
pair = trace_text(tokenizer, model, SENTENCE, SECOND)
types = pair.token_type_ids.tolist()
print(" ".join(f"{t}/{s}" for t, s in zip(pair.tokens, types)))
print(f"{types.count(0)} tokens of type 0, {types.count(1)} of type 1")

# %% [markdown]
# ## Word ↔ token positions
#
# A common recipe to find a word's vector is `text.split().index(word) + 1` (the `+ 1`
# skips `[CLS]`). It counts *words separated by spaces*, but the model's positions count
# *WordPiece tokens*: every extra piece and every punctuation mark before the word shifts
# the true position, and a word glued to punctuation ("river.") is not found at all.
# `trace.find_word` uses the tokenizer's own word ↔ token map instead.

# %%
def naive_position(text, word):
    """The split recipe; None where it raises (a word glued to punctuation)."""
    try:
        return text.split().index(word) + 1
    except ValueError:
        return None

# %% [markdown]
# The table compares the recipe with `find_word` for every word made of letters or digits.
# A word that occurs twice needs `find_word(word, occurrence=k)`, so we count the
# occurrences as we go. (`.index` compares exact strings, so "The" and "the" count as
# different words for the recipe.)

# %%
from collections import Counter

seen = Counter()  # occurrences so far of each word, case-insensitive
rows = []
for w in trace.words():
    occurrence = seen[w.lower()]
    seen[w.lower()] += 1
    if w.isalnum():
        true = trace.find_word(w, occurrence=occurrence).first
        rows.append((w, naive_position(SENTENCE, w), true))

# %%
for word, naive, true in rows:
    if naive == true:
        flag = ""
    elif naive is None:
        flag = "  <- recipe raises ValueError"
    else:
        flag = "  <- wrong"
    print(f"{word:<15} recipe {str(naive):>5}   find_word {true:>3}{flag}")
n_wrong = sum(naive != true for _, naive, true in rows)
print(f"The recipe is wrong or fails for {n_wrong} of {len(rows)} words "
      "of this sentence.")

# %% [markdown]
# One more failure: `.index` only ever finds the *first* occurrence of a word. A word that
# truly repeats shows it; we take the word of the sentence with the most characters and write
# it twice. `find_word(word, occurrence=1)` finds the second one.

# %%
alnum_words = [w for w in trace.words() if w.isalnum()] or trace.words()
repeat_word = max(alnum_words, key=len).lower()
repeated = f"{repeat_word} and {repeat_word} again"
repeat_trace = trace_text(tokenizer, model, repeated)
second = repeat_trace.find_word(repeat_word, occurrence=1)
recipe = naive_position(repeated, repeat_word)
print(f"{repeated!r}: the second {repeat_word!r} is token {second.first} "
      f"({second.pieces}); the recipe says {recipe}, the first one's position")
assert recipe != second.first

# %% [markdown]
# ## Rebuilding the embedding layer
#
# `hidden_states[0]` is not just a table lookup. For the token at position $i$ with id
# $t_i$ and segment $s_i$, `BertEmbeddings` adds three rows and normalises:
#
# $$e_i = \mathrm{LayerNorm}\big(W_{\text{word}}[t_i] + W_{\text{position}}[i] + W_{\text{token\_type}}[s_i]\big),\qquad
# \mathrm{LayerNorm}(x) = \gamma \odot \frac{x - \mu(x)}{\sqrt{\sigma^2(x) + \epsilon}} + \beta ,$$
#
# where $\mu(x)$ is the mean of the $H$ numbers of $x$ and $\sigma^2(x)$ their *variance*, the
# mean of $(x_j - \mu)^2$ (PyTorch's `var` needs `unbiased=False` to divide by $H$ like this),
# $\epsilon$ is a small constant that avoids a division by zero, $\gamma$ (scale) and $\beta$
# (shift) are learned vectors of size $H$, and $\odot$ multiplies entry by entry. The position table $W_{\text{position}}$ is **learned**, one trained row per position
# up to `config.max_position_embeddings`; it is not the fixed sine/cosine pattern of the
# original Transformer (Vaswani et al., 2017). Dropout follows in the code, but in
# evaluation mode it is the identity. Here are the three tables and their shapes, read from
# the model:

# %%
emb = model.embeddings
TABLES = ["word_embeddings", "position_embeddings", "token_type_embeddings"]
for name in TABLES:
    print(f"{name:<22} {tuple(getattr(emb, name).weight.shape)}")
print("LayerNorm eps:", emb.LayerNorm.eps, "| model.training:",
      model.training, "(dropout is off)")

# %% [markdown]
# Now the sum and the LayerNorm written out by hand, compared with the model's own
# `hidden_states[0]`:

# %%
n = trace.seq_len
ln = emb.LayerNorm
with torch.no_grad():
    summed = (emb.word_embeddings.weight[trace.input_ids]
              + emb.position_embeddings.weight[torch.arange(n)]
              + emb.token_type_embeddings.weight[trace.token_type_ids])
    mu = summed.mean(dim=-1, keepdim=True)
    var = summed.var(dim=-1, keepdim=True, unbiased=False)  # divide by H
    normed = (summed - mu) / torch.sqrt(var + ln.eps)
    by_hand = ln.weight * normed + ln.bias
assert torch.allclose(by_hand, trace.hidden(0), atol=1e-5)
gap = (by_hand - trace.hidden(0)).abs().max()
print(f"max |by hand - hidden_states[0]| = {gap:.2e}")

# %% [markdown]
# The same steps live in `helpers/embeddings/rebuild.py` as `embeddings_by_hand`. On the sentence
# pair, the token-type rows differ between the two segments, and it still matches:

# %%
from helpers.embeddings.rebuild import embeddings_by_hand

with torch.no_grad():
    pair_by_hand = embeddings_by_hand(model, pair.input_ids,
                                      pair.token_type_ids)
assert torch.allclose(pair_by_hand, pair.hidden(0), atol=1e-5)
type_rows = emb.token_type_embeddings.weight
gap = (type_rows[1] - type_rows[0]).norm().item()
word_length = emb.word_embeddings.weight.norm(dim=1).mean()
print(f"pair matches too; |type-1 row - type-0 row| = {gap:.3f} "
      f"(the {config.vocab_size:,} rows of the word table have mean length "
      f"{word_length:.3f})")
shift = gap / word_length
print(f"So switching segment moves a token's sum by {shift:.0%} of a typical "
      "word row's length: "
      + ("a light mark next to the word itself." if shift < 0.5 else
         "a shift as large as a word's own row."))

# %% [markdown]
# The same sum as a picture. `embedding_parts` (in `helpers/embeddings/rebuild.py`) keeps every
# step for our sentence and `embedding_sum_figure` (in `helpers/embeddings/plots.py`) draws them
# side by side: one row per token, the first dimensions as columns. The three looked-up rows
# and their sum share one colour scale; the LayerNorm output has its own, because its rows
# have a length of their own. Each title gives the mean length of the rows drawn, which are
# this sentence's rows only: the word rows of its tokens, not the whole vocabulary's as
# above.

# %% mystnb={"figure": {"caption": "The embedding layer for the lesson's sentence, one row per token, first dimensions only: word, position and segment rows, their sum, and its LayerNorm (`hidden_states[0]`). The first four panels share one colour scale centred on 0, the LayerNorm its own; titles give the mean row length over all dimensions. Compare which panels change from token to token.", "name": "fig-01-embedding-sum"}}
from helpers.embeddings.plots import embedding_sum_figure
from helpers.embeddings.rebuild import embedding_parts

parts = embedding_parts(model, trace.input_ids, trace.token_type_ids)
# the picture shows the model's own numbers
assert torch.allclose(parts["layernorm"], trace.hidden(0), atol=1e-5)
fig, axes = embedding_sum_figure(parts, trace.tokens)
plt.show()
lengths = {k: v.norm(dim=1).mean().item() for k, v in parts.items()}
print(f"mean row length over this sentence's {trace.seq_len} tokens: "
      + ", ".join(f"{k} {v:.2f}" for k, v in lengths.items()))

# %% [markdown]
# What to look at in the picture. The **word** panel changes from token to token: each token
# has its own row. The **position** panel changes slowly down the tokens: neighbouring
# positions have similar rows. The **segment** panel repeats one row: every token of a single
# sentence is in segment 0, so it adds the same numbers to all of them (a sentence pair
# would show two). And the **LayerNorm** output has a length of its own, whatever the sum's
# length was: after subtracting the mean and dividing by the standard deviation (the square
# root of the variance), a row's
# $H$ numbers have mean 0 and mean square 1, so its length is exactly $\sqrt H$; the learned
# scale $\gamma$ and shift $\beta$ then set the length the model uses. The input's length has
# dropped out: scaling the sum by 10 leaves the output unchanged.

# %%
H = config.hidden_size
with torch.no_grad():
    rescaled = ln(10 * summed)  # the model's own LayerNorm on a longer input
normed_length = normed.norm(dim=1).mean().item()
print(f"length after normalising, before gamma and beta: {normed_length:.3f} "
      f"(sqrt(H) = {H ** 0.5:.3f})")
change = (rescaled - trace.hidden(0)).abs().max().item()
print(f"LayerNorm(10 x sum) vs LayerNorm(sum): max |diff| = {change:.1e}")

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
    vectors.append(vector)
    labels.append(word)
print(f"{len(labels)} words kept: {labels}")

# %% mystnb={"figure": {"caption": "Cosine similarity between the input-embedding rows of the lesson's words (a word cut into pieces: the mean of its rows), the same in every sentence. Values are written in the cells; the colour scale is centred on 0 and spans the off-diagonal pairs, the diagonal (always 1) grey. Compare related pairs of words with unrelated ones.", "name": "fig-01-static-similarity"}}
from helpers.embeddings.plots import similarity_heatmap

if len(labels) >= 2:
    V = torch.nn.functional.normalize(torch.stack(vectors), dim=1)
    similarity = V @ V.T
    title = "cosine similarity of the words' input-embedding rows"
    fig, ax, _ = similarity_heatmap(similarity, labels, title=title)
    plt.show()
else:
    print("fewer than two of the words are in this vocabulary; "
          "nothing to compare")

# %%
if len(labels) >= 2:
    # hide the diagonal (every word with itself) when looking for the top pair
    eye = torch.eye(len(labels), device=similarity.device)
    i, j = divmod(int((similarity - 2 * eye).argmax()), len(labels))
    print(f"most similar pair here: {labels[i]!r} and {labels[j]!r} "
          f"({similarity[i, j]:.3f})")
if "bank" in labels and len(labels) >= 2:
    b = labels.index("bank")
    others = [k for k in range(len(labels)) if k != b]
    nearest = max(others, key=lambda k: similarity[b, k].item())
    print("'bank' is closest to", labels[nearest])

# %% [markdown]
# One row per word means one vector for *bank* whether it is the river bank or the money
# bank: the table cannot separate the senses. Separating them is the job of the layers
# that follow (lesson 02 onwards).
#
# ## The embedding table is also the output layer
#
# BERT was pre-trained with a masked language model (Devlin et al., 2019): an output layer
# scores every vocabulary word for each masked position. In BERT's pre-training code
# (google-research/bert, `run_pretraining.py`) that output layer's weight *is* the
# word-embedding table, with only a bias of its own: **weight tying**, as in Press & Wolf (2017,
# *Using the Output Embedding to Improve Language Models*). In `transformers` the config flag
# `tie_word_embeddings` makes `BertForMaskedLM` share the two. We build a `BertForMaskedLM` from
# the loaded config alone: **all its weights, the masked-LM head (the task head on top, see
# lesson 00) included, are random** (nothing is loaded into it), but the tie is part of its
# structure, so we can look at it:

# %%
from transformers import BertForMaskedLM

torch.manual_seed(0)  # its random weights, the same on every run
mlm = BertForMaskedLM(config).eval().to(model.device)
# [vocab, hidden]: one output score per vocabulary word
decoder = mlm.cls.predictions.decoder.weight
table = mlm.bert.embeddings.word_embeddings.weight
print(f"config.tie_word_embeddings = {config.tie_word_embeddings}")
print(f"decoder.weight is word_embeddings.weight: {decoder is table}; "
      f"same storage: {decoder.data_ptr() == table.data_ptr()}; "
      f"shape {tuple(decoder.shape)}")

# %% [markdown]
# Because it is one tensor, the table is used twice: at the bottom, to look up the input's
# rows, and at the top, where the masked-LM head scores every word of the vocabulary for a
# hidden position. So when pre-training adjusts the head's scores, it adjusts the word rows
# themselves -- even the rows of words the sentence does not contain. BERT hides 15 % of the
# WordPiece positions of each training text and learns to guess them back (Devlin et al.,
# 2019, Section 3.1; lesson 05 writes the rule out, trains a small BERT this way and counts
# the rows one training step reaches). An untrained head, like this random one, can only guess. A
# **trained** head, offline, is the course's own BERT-mini (`MODEL = "course-mini"`,
# pre-trained with BERT's two objectives). Here is what its head guesses for a hidden word of
# your sentence:

# %%
from helpers.lens.compute import course_mini_lens

print(course_mini_lens(SENTENCE).message)

# %% [markdown]
# So every pre-training step of BERT updated the embedding table, through the input rows
# *and* through the output layer. (The bundled all-MiniLM-L6-v2 has no masked-LM head, lesson
# 00; its table was trained by distillation and fine-tuning, through the input rows only.)

# %% [markdown]
# ## Summary
#
# * WordPiece turns text into `[CLS] … [SEP]` with `##` continuation pieces and `[UNK]` for
#   what the vocabulary cannot spell; pairs add `token_type_ids`.
# * Token positions are not word positions: use the tokenizer's word ↔ token map
#   (`trace.find_word`), not `text.split().index(word) + 1`.
# * `hidden_states[0]` = LayerNorm(word + position + token-type rows), with a learned
#   position table; we rebuilt it and it matches the model to `1e-5`. A LayerNorm output
#   row's length is set by $\gamma$ and $\beta$ ($\sqrt H$ before them), not by its input's.
# * The embedding table is trained: in BERT the masked-LM output layer *is* the table
#   (`tie_word_embeddings`), so pre-training adjusts a row both when its word is read and when
#   its word is scored as a guess -- and every word of the vocabulary is scored for every
#   hidden position.
#
# ## Exercises
#
# Each exercise gives its difficulty, its importance (one to five dots) and a time
# estimate. Each checker (in `helpers/exercises/lesson01.py`) says what is wrong and gives
# a hint, never the answer; worked solutions are in `lessons/solutions/solutions_01.py`.
#
# ### Exercise 1: build it yourself — a word's nearest rows
#
# Difficulty ●●○○○ · Importance ●●●○○ · ~10 min
#
# Section "Static word similarity" compared a few words we chose. Now search the whole table:
# set `answer_1` to the five vocabulary entries whose rows of
# `model.embeddings.word_embeddings.weight` are closest to the row of `"bank"` by cosine
# similarity, most similar first, leaving out `"bank"` itself and the special tokens.

# %%
from helpers.exercises.lesson01 import (check_exercise_1, check_exercise_2,
                                        check_exercise_3, check_exercise_4)

answer_1 = None  # your code here: a list of 5 tokens (strings)
check_exercise_1(answer_1, model, tokenizer, "bank")

# %% [markdown]
# ### Exercise 2: static similarity
#
# Difficulty ●●○○○ · Importance ●●●○○ · ~10 min
#
# The heatmap above shows a few pairs. Compute one it does not: the cosine similarity of the
# static embeddings of `"loan"` and `"mortgage"` (average the rows of a word split into pieces,
# as `static_word_vector` does, should a word be split; return `None` if a word is `[UNK]`).
#
# **Reflection question:** before you run it, is it above or below the heatmap's
# `bank`–`money` cell? What would make two words' rows close in a table that never saw them
# side by side?

# %%
answer_2 = None  # your code here: a float
check_exercise_2(answer_2, model, tokenizer, "loan", "mortgage")

# %% [markdown]
# ### Exercise 3: predict, then measure — which part makes the sum?
#
# Difficulty ●●○○○ · Importance ●●●○○ · ~15 min
#
# The embedding sum adds a word row, a position row and a segment row. **Predict first:**
# which of the three contributes most to the sum for the lesson's sentence? Write
# `"word"`, `"position"` or `"segment"` in `prediction_3`. **Then measure:** for each token,
# a part's share of the sum is $(\text{part} \cdot \text{sum}) / \lVert \text{sum}
# \rVert^2$ (the three shares of a token add up to 1); set `answer_3` to the mean share of each
# part over the tokens of `trace`, as a dict.

# %%
prediction_3 = None  # "word", "position" or "segment"
# your code here: {"word": ..., "position": ..., "segment": ...}
answer_3 = None
check_exercise_3(answer_3, prediction_3, model, trace)

# %% [markdown]
# ### Exercise 4: predict, then measure — one word, two positions
#
# Difficulty ●●○○○ · Importance ●●●○○ · ~10 min
#
# In `repeat_trace` (above) the same word appears twice. **Predict first:** are the
# `hidden(0)` rows of its two first pieces the `"same"` or `"different"`? Write it in
# `prediction_4`. **Then measure** their cosine similarity. `first` and `second` hold the
# two occurrences (`find_word` spans).

# %%
first = repeat_trace.find_word(repeat_word, occurrence=0)
second = repeat_trace.find_word(repeat_word, occurrence=1)
prediction_4 = None  # "same" or "different"
answer_4 = None  # your code here: a float, the cosine
check_exercise_4(answer_4, prediction_4, repeat_trace, first.first,
                 second.first)
