# ---
# jupyter:
#   jupytext:
#     cell_metadata_filter: mystnb,tags,-all
#     formats: ipynb,py:percent
#     notebook_metadata_filter: kernelspec,jupytext,-all
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 06 — How we know: the course's statistics, once
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/bert-layer-by-layer/bert-layer-by-layer/blob/main/lessons/06_how_we_know.ipynb)
#
# From here on, every lesson states what it measured in one plain sentence -- of the form "layer
# 4 turns tokens most" or "mean pooling beats [CLS] by N points" -- and folds the evidence
# beneath it in a block called **How we know**. This lesson opens that block once.
# It teaches the four ideas the course's verdicts rest on, each on this model's own numbers:
#
# 1. **Resample the unit that varies.** Tokens of one sentence move together; a thousand
#    tokens from forty sentences are closer to forty observations than to a thousand.
# 2. **Pair what was measured twice.** Two classifiers tested on the same items differ item by
#    item; compare them item by item, not by two separate ranges.
# 3. **Many comparisons need a wider net.** Ask twenty questions at a 5 % error rate each and
#    one false alarm is to be expected; picking the best layer first is asking many.
# 4. **"We cannot tell" is not "no effect".** Calling two things the same needs a margin, set
#    before measuring.
#
# And it shows how the course checks its own statistics: on simulated data whose truth is
# known, run live below and in the course's tests.
# All of it is reached through one module, `helpers/common/stats.py` (its parts sit beside it:
# intervals, bootstrap, verdicts, ranking); the simulations are in
# `helpers/common/calibration.py`.
#
# The first cell installs the course when you run it on Google Colab; on your own
# machine it does nothing.

# %%
# NBVAL_CHECK_OUTPUT
import sys

# Colab: fetch the course, keep Colab's torch and ipywidgets
if "google.colab" in sys.modules:
    import subprocess

    url = "https://github.com/bert-layer-by-layer/bert-layer-by-layer"
    subprocess.run(["git", "clone", "-q", "--depth", "1", url,
                    "/content/course"])
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "-e",
                    "/content/course"], check=True)
    sys.path.insert(0, "/content/course")
else:
    print("Running locally: nothing to install.")

# %% [markdown]
# ## Parameters
#
# `MODEL` names the checkpoint (`None`: the course chooses), `SENTENCE` is a text of yours that joins
# the sample of sentences below (the sample is in the model's language: English sentences for an
# English model, Chinese ones for a Chinese model, `model_language` in
# `helpers/common/language.py`); `BUDGET = "quick"` runs smaller simulations (the same code; the
# rates they print are rougher).
#
# `LANGUAGE` picks the language of the data (`None`: the one the model's tokenizer reads,
# `model_language` in `helpers/common/language.py`; `"en"` or `"zh"` for a model that reads both).

# %% tags=["parameters"]
MODEL = None
SENTENCE = "The bank by the river was unbelievably quiet this morning."
BUDGET = None
LANGUAGE = None  # None: the data follow the model; or "en", "zh"

# %%
import matplotlib.pyplot as plt
import numpy as np
import torch

from helpers.common.budget import choose_budget
from helpers.common.language import model_language, sentences_for
from helpers.common.progress import progress
from helpers.model.loading import load_model
from helpers.model.trace import trace_text

loaded = load_model(MODEL)
tokenizer, model = loaded
language = model_language(tokenizer, lesson="06",
                          choice=LANGUAGE)  # the data follow the model
budget = choose_budget(BUDGET, model)
# your SENTENCE, then everyday sentences in the model's language (English:
# data/pos, whose words lesson 14 tags; Chinese: data/zh_words)
everyday = sentences_for(language, "everyday")
sentences = [SENTENCE] + everyday[:budget.pick(60, 20)]
traces = [trace_text(tokenizer, model, t)
          for t in progress(sentences, desc="sentences")]
L = model.config.num_hidden_layers
print(f"{len(traces)} sentences traced; {L} layers")

# %% [markdown]
# ## 1. Resample the unit that varies
#
# **Three words first.** Every number we measure on a sample would come out a little different
# on another sample of sentences. An **interval** is a range computed from the data by a recipe
# that, used on many samples, catches the true value at a known rate: a **95 % interval** is made
# by a recipe that catches it in 95 % of samples. The 95 % is a rate of the recipe over repeated
# samples, not a chance about this one range. A **p-value** asks the reverse question: if there
# were no difference at all, how often would a sample show one at least this large? A small p
# (below 0.05, the course's line) says "rarely"; a large p says the data are compatible with no
# difference -- not that there is none.
#
# Take one number per token: how **spread out** its attention is in the first layer -- the
# entropy of its attention row, averaged over the heads (`attention_entropy_per_token` in
# `helpers/layerwalk/compute.py`), in **nats** (entropy with the natural logarithm: 0 when a
# token looks at a single token, $\ln k$ when it spreads evenly over $k$ tokens). How sure is
# its mean over the course's sentences? The **bootstrap** answers by re-running the
# measurement on data drawn again from what we have, **with replacement** (each draw is put
# back, so some come twice and some not at all, and every redrawn data set is a little
# different): if the mean barely moves between redraws, it is well pinned down, and the range
# that holds the middle 95 % of the redrawn means is an interval.
#
# What do we redraw? Redrawing tokens one by one mixes tokens of all sentences as if each were a
# fresh sentence. But tokens of one sentence can move together: a long sentence gives every one
# of its tokens more to spread over. How much they move together is the **intra-sentence
# correlation** (`intra_cluster_correlation` in `helpers/common/stats.py`): 0 when two tokens of
# a sentence are as different as any two tokens, positive when they move together. When it is
# positive, the honest redraw takes **whole sentences** with all their tokens
# (`cluster_replicates` with `clusters=`).

# %%
from helpers.common.stats import cluster_replicates, intra_cluster_correlation
from helpers.common.tables import show_table
from helpers.layerwalk.compute import (attention_entropy_per_token,
                                       cluster_labels)

# the first layer's column, as float64 numbers on the CPU
spread = attention_entropy_per_token(traces)[:, 0].double().cpu().numpy()
sentence_of = cluster_labels(traces)
icc = intra_cluster_correlation(spread, sentence_of)
by_token = cluster_replicates(spread).interval(0.95)
by_sentence = cluster_replicates(spread, sentence_of).interval(0.95)
widths = show_table([
    {"redraw": name, "mean spread (nats)": f"{iv.estimate:.3f}",
     "95 % interval": f"[{iv.low:.3f}, {iv.high:.3f}]",
     "width": f"{iv.width:.3f}"}
    for name, iv in (("tokens, one by one", by_token),
                     ("whole sentences", by_sentence))
], index="redraw", title=(
    f"mean attention spread in layer 1, {len(spread)} tokens in"
    f" {len(traces)} sentences"))
print(f"Two tokens of one sentence correlate {icc:+.2f}; redrawing whole"
      f" sentences gives an interval {by_sentence.width / by_token.width:.1f}"
      " times as wide.")

# %% mystnb={"figure": {"caption": "The mean attention spread in layer 1, recomputed on 2,000 redrawn data sets: redrawing tokens one by one (grey) and whole sentences (orange). The wider the spread of the redrawn means, the less sure the mean; the dashed line is the mean of the data we have.", "name": "fig-06-redraws"}}
from helpers.common.style import FIG_WIDTH_IN, new_axes

ax = new_axes(figsize=(FIG_WIDTH_IN, 2.6))
redraws = {
    "tokens, one by one": cluster_replicates(spread).boots[:, 0],
    "whole sentences": cluster_replicates(spread, sentence_of).boots[:, 0]}
# the same bins for both: the wider spread is then the lower, flatter curve
bins = np.histogram_bin_edges(np.concatenate(list(redraws.values())), 60)
for (label, means), color in zip(redraws.items(), ("0.55", "#e07b00")):
    ax.hist(means, bins=bins, histtype="step", lw=1.6, color=color,
            label=label)
ax.axvline(by_token.estimate, color="black", ls="--", lw=1)
ax.set(xlabel="mean attention spread in layer 1 (entropy, nats)",
       ylabel="redrawn data sets",
       title="Mean attention spread over redrawn data sets")
ax.legend(fontsize=8, frameon=False, loc="upper left",
          bbox_to_anchor=(1.0, 1.0))
plt.show()

# %% [markdown]
# Tokens of a sentence share its length, and a longer sentence gives each of them more keys to
# spread over: the correlation is clearly positive, and the sentence redraw is the honest,
# wider interval. A statistic whose tokens **pull apart** within a sentence (a negative
# correlation: a token that spreads widely goes with tokens of its sentence that focus) would
# show the opposite --
# whole sentences average out, and their redraw is narrower. Either way the rule is the same:
# redraw the unit that was sampled, here sentences.

# %% [markdown]
# Which interval is right? We cannot tell from one data set -- but we can on data whose truth
# we know. `cluster_coverage` (in `helpers/common/calibration.py`) simulates many data sets
# of tokens in sentences, built like ours (a few to thirty tokens per sentence, half of the
# variation between sentences, true mean 0), computes each interval on every one and counts
# how often it holds the true mean. A 95 % interval should hold it in 95 % of data sets.

# %%
from helpers.common.calibration import cluster_coverage, mc_se

R = budget.pick(1000, 200)  # simulated data sets per row
rows = []
for units in (12, 40):
    for label, kw in (
            ("tokens, one by one", dict(by_sentence=False)),
            ("whole sentences, plain percentiles",
             dict(small_sample_rule=False)),
            ("whole sentences, the course's rule", {})):
        share = cluster_coverage(units, R, **kw)
        rows.append({"sentences": units, "redraw": label,
                     "holds the truth": f"{share:.0%}"})
coverage_table = show_table(rows, index="sentences", title=(
    f"how often a 95 % interval holds the true mean: {R} simulated data"
    f" sets each (give or take {2 * mc_se(0.95, R):.0%})"))

# %% [markdown]
# Redrawing tokens one by one holds the truth in far fewer than 95 % of the data sets: it
# is too sure of itself. Redrawing sentences is right, but with a dozen sentences the plain
# percentile interval still falls a little short -- a bootstrap over few units underestimates
# the spread. The course widens it there by **one small-sample rule** used everywhere: with few
# units the interval is taken a little wider than the middle 95 % of the redraws. From about 30
# units on the rule changes almost nothing.
#
# <details><summary>The rule, by name</summary>
#
# The percentiles are those of Hesterberg's *expanded percentile interval* (2015), and the
# interval is never narrower than Student's t interval for that many units (`Replicates` in
# `helpers/common/stats.py`).
#
# </details>
#
# ## 2. Pairs of sentences
#
# Lesson 07's baseline for cosine similarity is the cosine between two **random tokens of
# different sentences**. 500 random pairs from 40 sentences put each sentence into about 25
# pairs, so the pairs are not 500 separate observations either: every pair that shares a
# sentence shares its quirks. The course redraws sentences and weighs each pair by how often
# *both* of its sentences were drawn: if a redraw picks sentence 3 twice and sentence 8 once, a
# pair of 3 and 8 counts 2 x 1 = 2 times, and a pair with a sentence not drawn counts 0 times
# (the "pigeonhole" bootstrap of Owen, 2007, `pair_replicates`). On simulated pairs with a
# known mean:

# %%
from helpers.common.calibration import pair_coverage

pair_rows = [{"redraw": label,
              "holds the truth": f"{pair_coverage(40, R, **kw):.0%}"}
             for label, kw in (("pairs, one by one", dict(by_sentence=False)),
                               ("sentences (pigeonhole)", {}))]
pair_table = show_table(pair_rows, index="redraw", title=(
    "how often a 95 % interval of a random-pair mean holds the truth:"
    f" 500 pairs of 40 sentences, {R} simulated data sets"))
one_by_one, pigeonhole = (row["holds the truth"] for row in pair_rows)
print(f"Redrawing pairs one by one holds the truth in {one_by_one} of the"
      f" data sets, redrawing sentences in {pigeonhole}: a pair is not an"
      " independent observation.")

# %% [markdown]
# ## 3. Pair what was measured twice
#
# Two ways to turn BERT's vectors into a sentence vector: the `[CLS]` token, or the mean of
# all tokens. Which classifies the course's intents (lesson 04's: ten in English, 17 with a
# Chinese model) better? A classifier that needs no
# training makes the point quickest: the **nearest centroid** -- average the training
# sentences of each intent, and give a test sentence the intent whose average is most
# similar (cosine). Both poolings are scored on the **same** test sentences.
#
# **Exercise 3 starts here, before any number.** How large a difference between mean pooling
# and `[CLS]`, in accuracy, would you call "the same for practical purposes"? Set `margin_3` now,
# as a share (`0.02` for two points); the checker at the end runs the equivalence test with it.

# %%
margin_3 = None  # exercise 3: your margin, set before reading on

# %%
import torch.nn.functional as F

from helpers.classify.compute import extract_features
from helpers.common.language import intents_for

train, test = intents_for(language, "train"), intents_for(language, "test")
feats = {split.split: extract_features(tokenizer, model, split.texts)
         for split in (train, test)}


def nearest_centroid_correct(pooling: str) -> np.ndarray:
    """Per test sentence: is the nearest intent centroid (last layer) right?"""
    x_train = getattr(feats["train"], pooling)[-1]
    x_test = getattr(feats["test"], pooling)[-1]
    y_train = torch.tensor(train.labels, device=x_train.device)
    y_test = torch.tensor(test.labels, device=x_test.device)
    centroids = torch.stack([x_train[y_train == c].mean(0)
                             for c in range(train.num_classes)])
    sims = F.normalize(x_test, dim=-1) @ F.normalize(centroids, dim=-1).T
    return (sims.argmax(-1) == y_test).cpu().numpy().astype(float)


right = {p: nearest_centroid_correct(p) for p in ("cls", "mean")}
margin_when_shown = margin_3  # exercise 3 checks the margin came first
print({p: f"{v.mean():.1%} of {len(v)}" for p, v in right.items()})

# %% [markdown]
# Each accuracy has its own range (`accuracy_ci`). Two ranges that overlap are often read as
# "no difference" -- but that reading throws away the pairing: on most sentences both poolings
# are right (or both wrong), and only the sentences where they **disagree** say which is
# better. The paired comparison counts exactly those (`mcnemar`).
#
# <details><summary>The methods, by name</summary>
#
# One accuracy's range is the exact Clopper-Pearson interval for a share. The paired
# comparison's interval is Tango's score interval for two paired proportions (Tango, 1998), and
# its p-value McNemar's test; both look only at the sentences where the two disagree.
#
# </details>

# %%
from helpers.common.claims import show_claim
from helpers.common.stats import accuracy_ci, mcnemar

ranges = {p: accuracy_ci(v) for p, v in right.items()}
paired = mcnemar(right["mean"], right["cls"])
overlap = (ranges["mean"].low <= ranges["cls"].high
           and ranges["cls"].low <= ranges["mean"].high)
print(f"separately: mean pooling {ranges['mean'].percent()}, [CLS] "
      f"{ranges['cls'].percent()}; the two ranges "
      + ("overlap" if overlap else "do not even overlap here (often they "
         "do, and then only the paired comparison can tell)"))
print(f"sentences where they disagree: {paired.a_only} only mean pooling "
      f"gets right, {paired.b_only} only [CLS], of {paired.n}")
show_claim(paired.verdict("mean pooling", "[CLS]"), more="beats",
           less="falls below", measure="classifies better",
           units=f"{paired.n} test sentences",
           values=(f"{ranges['mean'].estimate:.1%}",
                   f"{ranges['cls'].estimate:.1%}"));

# %% [markdown]
# Unfold "How we know" above: the verdict is read off the interval of the **difference**,
# paired sentence by sentence. That is the rule every lesson follows: *a verdict is read off
# its own interval* -- "higher" or "lower" when it excludes 0, otherwise we cannot tell.
#
# ## 4. Many comparisons need a wider net
#
# A 95 % interval misses the truth 5 % of the time. Ask one question and that is a small
# risk; compare six layers with each other and the chance that *some* interval misses grows
# with every comparison. Worse, the course often picks the best-looking layer first and then
# asks whether the others are worse -- and any of the six could have been the best, so the
# luck of every pair of layers is in that pick ($6 \times 5 / 2 = 15$ pairs). The course's correction (Bonferroni): with $m$ comparisons read
# together, read each at $1 - 0.05/m$ instead of $0.95$, so all $m$ hold together at least
# 95 % of the time (`family_level(m)` in `helpers/common/stats.py` gives $1 - 0.05/m$). When
# the comparisons are fixed beforehand -- say each layer against the one before it, $L - 1$
# steps -- $m$ is simply their number; when the best one was picked from the data, $m$ counts
# **every pair**.
#
# Simulated layers that are all truly alike (`family_false_difference`): how often is the
# best-looking one declared better than some other? The table tries 3 layers and $L + 1$ (the
# embedding output and every layer of this model, as lessons 07-09 compare them).

# %%
from helpers.common.calibration import family_false_difference
from helpers.common.stats import family_level

print(f"{L - 1} steps read together: each at {family_level(L - 1):.2%}")
R_family = budget.pick(200, 40)
family_rows = []
for k in (3, L + 1):
    alone = family_false_difference(k, r=R_family, corrected=False)
    together = family_false_difference(k, r=R_family)
    family_rows.append({"layers": k, "each at 95 %": f"{alone:.0%}",
                        "every pair, corrected": f"{together:.0%}"})
family_table = show_table(family_rows, index="layers", title=(
    "how often the best of k truly alike layers is called better than one"
    f" of the others ({R_family} simulated data sets, give or take"
    f" {2 * mc_se(0.05, R_family):.0%}; should be at most 5 %)"))

# %% [markdown]
# ## 5. "We cannot tell" is not "no effect"
#
# When an interval includes 0, the data are **inconclusive**: the difference could be
# positive, negative or nothing. A lesson never writes "no effect" or "harmless" for that.
# To say two things are *the same*, the course first fixes a **margin** -- say one accuracy
# point -- and then asks whether the difference is surely inside it: the **equivalence test**
# calls "equivalent" when the 90 % interval lies within $\pm$ margin. Why 90 % and not 95 %?
# The test asks two one-sided questions -- is the difference above $-$margin? is it below
# $+$margin? -- each allowed a 5 % error, and a 90 % interval leaves exactly 5 % outside each
# end. A difference that is surely not 0 is reported as a difference first; if it also lies
# inside the margin, it is real but small enough to ignore for your purpose.
#
# Getting this interval right matters more than it looks. When a classifier is changed (say
# one attention head removed, as lesson 12 will do), some test items flip from right to wrong
# and a few flip the other way. A tempting interval looks only at the items that flipped, as if
# their number had been fixed in advance; with very few flips it becomes very narrow. The
# simulation below lowers the accuracy by exactly one point on 385 test items (as many as
# lesson 12 tests on), again and again, and counts how often each interval calls the change "equivalent within one point",
# which it is not (it is exactly at the margin). At most 5 % is allowed. The first column is
# the share of items that flip the other way (wrong to right).

# %%
from helpers.common.calibration import (conditional_false_equivalence,
                                        paired_false_equivalence)

R_eq = budget.pick(4000, 500)
eq_rows = []
for share in (0.0, 0.005, 0.02):
    tempting = conditional_false_equivalence(385, 0.01, share, R_eq)
    paired_ = paired_false_equivalence(385, 0.01, share, R_eq)
    eq_rows.append({"items flipping the other way": f"{share:.1%}",
                    "flips only, their number fixed": f"{tempting:.0%}",
                    "the course's paired interval": f"{paired_:.0%}"})
eq_table = show_table(eq_rows, index="items flipping the other way", title=(
    "how often a change of exactly one point on 385 items is called"
    f" 'equivalent within one point' ({R_eq} simulated data sets)"))

# %% [markdown]
# The tempting interval calls it equivalent far too often when few items flip; the course's
# paired interval stays at or below 5 %, and the course uses it for every paired right/wrong
# comparison.
#
# <details><summary>The methods, by name</summary>
#
# The equivalence test is TOST (two one-sided tests). The course's paired interval is Tango's
# score interval (Tango, 1998, built for exactly this question; recommended for it by Fagerland,
# Lydersen and Laake, 2014); the tempting one is the exact interval of the share of flips that
# went one way, *given* the number of flips.
#
# </details>
#
# ## 6. How the course checks itself
#
# Each of the tables above ran a method on simulated data whose truth we know, and counted how
# often it was right. The course's test suite does the same for every verdict function in
# `helpers/common/stats.py`: how often each interval holds the truth, how often each test calls
# a difference that is not there, and how often "equivalent" is called at the margin. A method
# that fails such a check is a wrong method -- the tempting interval of section 5 is one -- and
# the suite also runs known wrong methods to make sure the checks can catch them.

# %% [markdown]
# ## Summary
#
# * Resample the unit that varies: sentences for tokens, sentences (pigeonhole) for pairs of
#   sentences (lessons 10 and 11 will redraw training seeds and test items together for
#   training runs). Below about 30 units the course's one small-sample rule widens the
#   interval.
# * Pair what was measured twice: compare two classifiers on the same items by their
#   differences, never by whether two separate ranges overlap.
# * Many comparisons read together are read at $1 - 0.05/m$ (Bonferroni); when the best was
#   picked from the data, $m$ counts every pair.
# * An interval through 0 means "we cannot tell". "The same" needs a margin set beforehand
#   and the equivalence test.
# * Every rule is checked on simulated data whose truth is known; the rates above came from
#   this run.
#
# ## Exercises
#
# Each exercise gives its difficulty, its importance (one to five dots) and a time
# estimate. Each checker (in `helpers/exercises/lesson06.py`) says what is wrong and gives a
# hint, never the answer; worked solutions are in `lessons/solutions/solutions_06.py`. A
# prediction is never graded: the checker sets it beside the measurement.
#
# ### Exercise 1: predict, then measure — the last layer
#
# Difficulty ●●○○○ · Importance ●●●●○ · ~10 min
#
# **Predict first:** in the *last* layer, will redrawing whole sentences widen the interval of
# the mean attention spread as much as it did in layer 1 (section 1), more, or less? Write
# `"more"`, `"less"` or `"same"`. Then measure: set `ratio_1` to the width of the sentence
# interval divided by the width of the token interval in the last layer (the last column of
# `attention_entropy_per_token(traces)`; `cluster_replicates(...).interval(0.95)`, width =
# `high - low`), and `icc_1` to the intra-sentence correlation there.

# %%
from helpers.exercises.lesson06 import (check_exercise_1, check_exercise_2,
                                        check_exercise_3)

prediction_1 = None  # "more", "less" or "same"
ratio_1 = None  # your number here
icc_1 = None  # and the intra-sentence correlation
check_exercise_1(prediction_1, ratio_1, traces, icc=icc_1)

# %% [markdown]
# ### Exercise 2: a family of layers, by hand
#
# Difficulty ●●●○○ · Importance ●●●●○ · ~15 min
#
# A small study first: take only the first 20 sentences, `pilot = traces[:20]`. Using the
# attention spread of section 1 at **every** layer (`attention_entropy_per_token(pilot)`,
# `[tokens, L]`, layers 1..L) and `cluster_replicates` with the sentences as clusters, compute the
# change of the mean spread from each layer to the next (`reps.steps()`: $L - 1$ columns, each a
# layer minus the one before). Read them as one family: each step's interval at
# `family_level(L - 1)` (section 4), `reps.steps().intervals(level)`. Set `rises_2` to the sorted
# list of layers (2..L, the layer the step ends at) whose step is surely a rise: its interval lies
# above 0.

# %%
pilot = traces[:20]
rises_2 = None  # e.g. [2, 4]
check_exercise_2(rises_2, pilot)

# %% [markdown]
# ### Exercise 3: a margin first
#
# Difficulty ●●○○○ · Importance ●●●●○ · ~10 min
#
# You set `margin_3` in section 3, before its numbers (go back and set it there if you have
# not, and run the lesson again from there). The checker runs the equivalence test with it on
# section 3's outcomes and says what your margin allows you to conclude; it also checks that the
# margin was set before section 3 computed its numbers (`margin_when_shown`).

# %%
check_exercise_3(margin_3, right["mean"], right["cls"],
                 stated=margin_when_shown)

# %% [markdown]
# **Reflection question:** a lesson prints "we cannot tell whether layer 5 or layer 6
# separates the senses better". A reader concludes "layers 5 and 6 are equally good". What
# two things would you need before that conclusion is justified?
