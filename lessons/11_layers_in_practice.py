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
# # 11 — Using the layers in practice
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/bert-layer-by-layer/bert-layer-by-layer/blob/main/lessons/11_layers_in_practice.ipynb)
#
# Names and counting ($L, H, A, d, I, n$; layers from 1, heads from 0): see the [conventions](00_big_picture.ipynb#conventions) box of lesson 00.
#
# Knowing what each layer does pays off when you train and deploy a model. This lesson
# measures, on a real intent-detection benchmark, five practical techniques: fine-tuning
# strategies that treat layers differently (each trained by one contract on a dev split, on the
# course's own course-mini), keeping only the hidden states you need, gradient (activation)
# checkpointing, a feature cache, and dynamic int8 quantization (on the loaded model). The
# fine-tuning comparison is read from a stored sweep, with one draw re-run live; every other
# number printed is measured in this run.
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
# `MODEL` names the checkpoint (`None`: the course chooses); `SENTENCE` is used to show
# which hidden states a forward pass returns. `BUDGET` sizes the expensive work (`None`: the
# course chooses, `"full"` on the bundled model; `"quick"`: fewer intents, seeds and epochs, for a
# fast check or a large model on a CPU; `choose_budget` in `helpers/common/budget.py`).

# %% tags=["parameters"]
MODEL = None
SENTENCE = "I still have not received my new card, what should I do?"
# None: the course chooses; "full" or "quick" (fewer intents, seeds and epochs)
BUDGET = None

# %%
import copy
import dataclasses
import time

import matplotlib.pyplot as plt
import numpy as np
import torch

from helpers.common.budget import choose_budget
from helpers.model.loading import load_model

torch.manual_seed(0); np.random.seed(0)
loaded = load_model(MODEL)
tokenizer, model = loaded
from helpers.common.language import BENCHMARKS, model_language

# the data follow the model: "en" or "zh", from the tokenizer's vocabulary
language = model_language(tokenizer, lesson="11")
BENCH = BENCHMARKS[language]  # BANKING77 or THUCNews
ONE, ITEMS = BENCH["classes"][:-1], BENCH["items"]  # "intent", "utterances"
budget = choose_budget(BUDGET, model)
L, H = model.config.num_hidden_layers, model.config.hidden_size
print(f"{L} layers, hidden {H}")


# %% [markdown]
# Where this lesson sits on the map of lesson 00 (`you_are_here`, in
# `helpers/architecture/plots.py`):

# %% mystnb={"figure": {"caption": "The course's map of BERT, from tokens through the repeated encoder layer and the pooler to a task head. This lesson's parts, the encoder layers as a whole and the classification head on top, are framed in orange and marked \"you are here\".", "name": "fig-11-you-are-here"}}
from helpers.architecture.plots import LESSON_PARTS, you_are_here

you_are_here(model.config, LESSON_PARTS["11"]);


# %% [markdown]
# **How this lesson measures.** Timings on a shared or busy computer jump around, and the
# first run of anything pays one-off costs (memory allocation, kernel selection). So every
# timing below starts with an untimed warm-up and runs the two candidates *in turns*
# (a, b, a, b, ...), so that a slow spell hits both alike. Each turn gives one ratio, b's time
# over a's (`compare_times` in `helpers/practice/compute.py`, `time_finding` in
# `helpers/practice/findings.py`); one is called faster only when the turns agree (a sign test on them); otherwise we say we cannot tell, which
# is not the same as "equally fast".
#
# Accuracies are compared the course's way (`helpers/common/stats.py`; lesson 10 introduces it):
# two classifiers tested on the **same** items are compared item by item and seed by seed
# (`paired_comparison` in `helpers/classify/comparisons.py` resamples seeds and test items together),
# many comparisons at once are allowed for, and a difference that could go either way is reported
# as "we cannot tell" -- never "no difference". Each claim is printed as one sentence; how we know
# it is folded beneath.
#
# ## 1. Fine-tuning strategies, each trained by one contract
#
# Fine-tuning updates BERT's weights together with a head. The classifier here
# (`SentenceClassifier` in `helpers/finetuning/strategies.py`) is BERT, mean pooling of the last
# layer and a linear layer, $z = W\,\mathrm{mean}_i(h^{(L)}_i) + b$. Every run starts from a
# `copy.deepcopy` of the model, so the model itself is never changed. The strategies:
#
# * **frozen encoder, linear probe** -- the baseline: BERT is not trained at all, only a linear
#   head on the mean-pooled last layer, fitted to convergence like lesson 10's heads. If no
#   fine-tuning strategy beats it, fine-tuning bought nothing on this data;
# * **full fine-tuning** -- every weight but the word-embedding matrix trains (that matrix stays
#   frozen in every run below), the head starting from random weights, as in Devlin et al. (2019);
# * **linear probe, then fine-tuning** (LP-FT; Kumar et al., 2022, *Fine-Tuning can Distort
#   Pretrained Features and Underperform Out-of-Distribution*, measured on pre-trained image
#   models such as CLIP's ResNets and ViTs, not on BERT): the head first learns on frozen features
#   (the baseline's head), then everything fine-tunes from there. Their argument: a random head
#   sends large, arbitrary gradients into the pre-trained layers early on and distorts them; a
#   trained head does not. Their claim is about accuracy **out of distribution**; BANKING77 offers
#   no shifted test split of the same intents, so this lesson measures **in-distribution accuracy
#   only** -- where Kumar et al. found the two close;
# * **freeze lower half**: embeddings and layers $1..\lfloor L/2 \rfloor$ are frozen, so they need
#   no gradients and the backward pass stops earlier (Merchant et al., 2020, *What Happens To BERT
#   Embeddings During Fine-tuning?*, BERT-base, found fine-tuning changes mostly the top layers);
# * **layer-wise lr decay** (Howard & Ruder, 2018, *ULMFiT*, "discriminative fine-tuning"; Sun et
#   al., 2019, *How to Fine-Tune BERT for Text Classification?*, BERT-base): layer $l$ trains with
#   $\eta_l = \eta\, \xi^{\,L+1-l}$, $\xi < 1$;
# * **gradual unfreezing** (Howard & Ruder, 2018): the first epoch trains only the head, each next
#   epoch opens more layers from the top, until every layer trains (the table below says at which
#   step that happened).
#
# The last three start, like LP-FT, from the linear probe's head (`FROM_PROBE` in
# `helpers/finetuning/strategies.py`): they are ways of treating the layers once the head is sensible.
#
# **Which model.** A comparison of fine-tuning strategies needs a model that fine-tuning can
# improve. The loaded all-MiniLM-L6-v2 was trained to make sentence vectors, so its frozen vectors
# are already a strong intent classifier: Casanueva et al. (2020) found sentence encoders used
# frozen beat fine-tuned BERT-Large at ten examples per intent, leaving fine-tuning little to
# gain on such a model. So this section
# fine-tunes the course's own **course-mini** (`data/course_mini/`), a BERT pre-trained only by
# masked words and next sentences, like BERT itself -- its frozen last layer was never asked to
# sort sentences by meaning. The later sections use the loaded model again.
#
# **With a Chinese model** course-mini cannot be used: it reads English only. The Chinese run
# fine-tunes the loaded Chinese BERT itself, on THUCNews headlines (all 10 topics per draw), and
# trains every run live, on a smaller design sized for a CPU (`live_setup` in
# `helpers/finetuning/history.py`: a learning-rate grid of 1e-4 and 1e-3, as suits a small
# pre-trained encoder, chosen on the first draw's dev split; `max_length` read from the
# headlines' token lengths). m3e-small is itself a sentence encoder -- the case the
# paragraph above warns about -- so whether fine-tuning moves off the linear probe at all is
# a question the Chinese run answers, not one it assumes.
#
# **The training contract** (`helpers/common/training.py`; `FinetuneConfig`, printed below).
# Few-sample fine-tuning of BERT is unstable and very sensitive to its learning rate and to how
# long it trains (Mosbach et al., 2021, *On the Stability of Fine-tuning BERT*; Zhang et al., 2021,
# *Revisiting Few-sample BERT Fine-tuning*), so each strategy gets its own chance:
#
# * every strategy's learning rate is **chosen on a dev split** from the same grid -- on every
#   draw's own for the stored English sweep (a grid of three), on the first draw's for a live
#   Chinese run (the printed recipe says which); an exact tie is reported as "no choice";
# * AdamW, a linear warm-up and a linear decay; the dev split is **scored at step 0** and after
#   every epoch; training stops when the **dev accuracy** has not improved for a patience of
#   evaluations, counted only after the warm-up and a minimum number of steps (and, for gradual
#   unfreezing, after every layer is open); the best evaluation's weights are kept;
# * every run reports one status: **converged** (the dev score improved after the first
#   evaluation, then stopped improving), **stopped at first evaluation**, or **budget exhausted**.
#   A run whose kept weights are its starting point was **not fine-tuned** (from the probe's head,
#   it *is* the probe): it is counted as such and stays out of the verdicts.
#
# **The task** is a few-shot cut of BANKING77 (Casanueva et al., 2020; 77 fine-grained intents of
# one banking domain; `data/banking77/`): **30 intents** per draw, 10 training utterances each (the
# paper's 10-shot setup), a dev split of 10 more each from the rest of the training split (never
# the test split), and **every** test utterance of the 30 intents. Each seed is a new **draw** of
# intents and utterances (`sweep_setup` in `helpers/finetuning/history.py`), so the spread over seeds
# carries the variance of the data; within a draw every strategy sees the same utterances, so
# strategies are compared paired.

# %%
import textwrap

from helpers.finetuning.compute import FINETUNE_STRATEGIES, FROZEN, FULL
from helpers.finetuning.history import SWEEP_MODEL, live_setup, sweep_setup
from helpers.model.fingerprint import model_key

# English: course-mini and the stored sweep's design; another language: the
# loaded model, every run trained live (course-mini reads English only)
STORED = language == "en"
FT_NAME = SWEEP_MODEL if STORED else loaded.choice.name
ft_tokenizer, ft_model = load_model(SWEEP_MODEL) if STORED else loaded
L_ft = ft_model.config.num_hidden_layers
# one task per seed (a draw of intents and utterances), the recipe, the seeds
tasks, recipe, SEEDS = (sweep_setup() if STORED
                        else live_setup(language, budget, ft_tokenizer))
task0 = tasks[SEEDS[0]]
N_TEST = len(task0.test)  # test utterances per draw
# the later sections use the first draw, its test set cut to a few per intent
train, dev = task0.train, task0.dev
test = task0.test.sample(budget.pick(10, 2), seed=0)
C = len(task0.intents)
print(f"fine-tuned model: {FT_NAME}; {len(SEEDS)} draws, one per seed"
      f" {SEEDS}; each: {task0.describe()}")
print(textwrap.fill(f"recipe: {recipe.describe()}", 110,
                    subsequent_indent="    "))

# %% [markdown]
# **The head LP-FT starts from.** Lesson 10's head standardizes every feature dimension by its own
# standard deviation $\sigma_j$. Folded into a linear layer on the raw features it becomes
# $W_{cj} / \sigma_j$: a dimension that hardly varies gets a huge weight. On frozen features that
# is harmless; once fine-tuning starts to move those dimensions, tiny changes swing the logits. So
# the probe here is divided by **one** number, the features' overall scale (`fit_probe_head` in
# `helpers/finetuning/strategies.py`). How large would the other folding be on course-mini?

# %%
from helpers.common.claims import show_finding
from helpers.finetuning.strategies import _pooled, _Tokens, fold_sizes

X0 = _pooled(ft_model, _Tokens(ft_tokenizer, train, recipe.max_length))
sizes = fold_sizes(X0, train.labels, C)
fold_claim = show_finding(
    "Folded per dimension, the probe's largest weight would be"
    f" {sizes['per dimension']:.3g},"
    f" {sizes['per dimension'] / sizes['one scale']:,.1f} times the"
    f" {sizes['one scale']:.2g} of the head divided by one scale:"
    " LP-FT starts from the second.",
    details=[
        "both heads fitted to convergence at the same L2 strength on the first"
        f" draw's {len(train)} training {ITEMS} (mean-pooled layer {L_ft})",
        "smallest standard deviation of a feature dimension:"
        f" {sizes['smallest standard deviation']:.2g} (per-dimension"
        " standardization divides by at least 1e-6)",
    ],
)

# %% [markdown]
# **Power before comparison.** How small a difference between two strategies can this design
# detect at all? It depends only on the design -- how many draws, how many test examples per
# draw -- and on two assumptions stated now, before any run: two strategies disagree on about one
# test example in ten, and their difference varies by about a point from one draw to the next
# (`detectable_difference` in `helpers/finetuning/study.py`). The differences the literature
# reports between such strategies in distribution are about a point or less (Kumar et al., 2022;
# Sun et al., 2019); fine-tuning against a frozen plain BERT can differ by many points.

# %%
from helpers.finetuning.compute import detectable_difference, seeds_needed
from helpers.practice.findings import power_finding

family = len(FINETUNE_STRATEGIES) - 1  # each fine-tuning strategy vs the probe
mdd = detectable_difference(N_TEST, len(SEEDS), family=family)
need = seeds_needed(0.01, N_TEST, family=family)  # draws for a 1-point gap
# the sentence: power_finding in helpers/practice/findings.py
power_claim = show_finding(
    *power_finding(mdd, need, len(SEEDS), N_TEST, family, items=ITEMS)
)

# %% [markdown]
# **The runs.** Every strategy on every draw, each at every learning rate of the grid, is more
# training than two CPU cores can do in a lesson. So the whole design was run once by a committed
# script, `python -m helpers.finetuning.history` (resumable; `helpers/finetuning/history.py`), and its
# results ship with the course in `data/finetune_sweep/` with their provenance (versions, machine,
# seconds). This cell reads them, checks they were made with these very weights, and says where.
# Further down, one draw is re-run live on your machine and checked against them. The stored
# sweep is English (course-mini on BANKING77): a Chinese run trains its smaller design here, live.

# %%
from helpers.finetuning.compute import FINETUNE_STRATEGIES, finetune_study
from helpers.finetuning.history import read_sweep, stored_study

key_before = model_key(ft_model)  # a hash of every weight of the tuned model
if STORED:
    study = stored_study(ft_model)  # raises if the weights are not the sweep's
    prov = read_sweep()["provenance"]
    SWEEP_MACHINE = "the sweep's machine"
    print(f"stored sweep: {prov['model']}, made {prov['finished']} on"
          f" {prov['machine']} ({prov['device']}); python {prov['python']},"
          f" torch {prov['torch']}, transformers {prov['transformers']};"
          f" {prov['seconds'] / 60:.0f} min of training in all")
else:  # every strategy on every draw, here (keeps the full fine-tunings)
    t0 = time.perf_counter()
    study = finetune_study(ft_tokenizer, ft_model, tasks, FINETUNE_STRATEGIES,
                           config=recipe, keep_models=[FULL], progress=False)
    SWEEP_MACHINE = "this machine"
    print(f"the stored sweep (data/finetune_sweep/) exists for English only"
          f" (course-mini on BANKING77): the {BENCH['name']} runs below are"
          f" all trained live, {time.perf_counter() - t0:.0f} s in all"
          f" ({study.from_cache()} runs read from the disk cache of an"
          " identical earlier run)")

# %% [markdown]
# First the training itself: did every run meet its criterion, did it leave its starting point,
# and what did the dev split choose? The dev curves show each run from step 0; the table gives
# every strategy's status column.

# %% mystnb={"figure": {"caption": "Dev accuracy from step 0 and after each epoch against optimiser steps, one panel per fine-tuning strategy, one thin line per draw (the stored sweep's, or a Chinese run's live draws), all panels on one scale; a cross marks the evaluation whose weights early stopping kept, the dashed line the frozen probe's dev accuracy (mean over draws). Check where each curve starts and whether its cross lies past step 0.", "name": "fig-11-dev-curves"}}
from helpers.finetuning.plots import plot_dev_panels

plot_dev_panels(study, measure="accuracy")
plt.show()

# %%
from helpers.common.tables import show_table
from helpers.common.training import records_table
from helpers.finetuning.history import moved_counts
from helpers.practice.findings import (moved_line, status_finding,
                                       training_details, training_rows)

# the rows, the fold and the sentence: training_rows, training_details and
# status_finding in helpers/practice/findings.py
training_table = show_table(training_rows(study), index="strategy", title=(
    f"how every strategy trained, over its {len(SEEDS)} draws: the setting"
    " the dev split chose, what the runs did, dev accuracy from step 0 to"
    " the weights kept (how each was chosen, steps and training accuracy:"
    " in the fold below)"))
status_sentence, status_details = status_finding(study)
status_claim = show_finding(
    status_sentence, status_details + training_details(study),
    table=records_table(
        study.records(),
        title="every run: the dev split's choice, dev loss and accuracy at"
        " step 0 and at the kept weights, steps, status",
    ),
)
# the demonstration needs fine-tuning to leave the probe: did it, here?
# moved_line in helpers/practice/findings.py
print(moved_line(moved_counts(study)))

# %%
# now the accuracies, on every test utterance of each draw's intents
from helpers.finetuning.compute import baseline_finding, moved_accuracies
from helpers.practice.compute import median_range
from helpers.practice.findings import strategy_rows

accuracy = study.accuracies()
# the rows: strategy_rows in helpers/practice/findings.py
strategy_table = show_table(strategy_rows(study), index="strategy", title=(
    f"test accuracy and cost per strategy ({len(SEEDS)} draws x {N_TEST} test"
    f" {ITEMS}; seed SD and range: the spread of the per-draw accuracies;"
    f" s/run: wall-clock seconds of training on {SWEEP_MACHINE}, every"
    " learning rate tried included)"))
# verdicts only over runs that moved, each paired with the probe on its draws
baseline_claim = show_finding(*baseline_finding(moved_accuracies(study)))

# %% mystnb={"figure": {"caption": "Test accuracy against wall-clock training seconds per run on the machine that trained it (the stored sweep's; this one for a live Chinese run): dots are single draws' runs; the diamond sits at the median time and mean accuracy, its horizontal whisker spanning the times, its vertical whisker the 95 % interval over draws and test items; the y-axis is zoomed, as labelled. Compare each fine-tuning strategy's vertical whisker with the frozen probe's.", "name": "fig-11-accuracy-vs-time"}}
from helpers.practice.plots import plot_accuracy_vs_time

ax = plot_accuracy_vs_time(
    accuracy, {s: study.seconds(s) for s in FINETUNE_STRATEGIES},
    machine=SWEEP_MACHINE,
)
plt.show()

# %% [markdown]
# For scale (English only: THUCNews has no such reference here), the paper that published BANKING77 reports, on **all 77 intents** with
# **BERT-Large** (Casanueva et al., 2020, Table 3; a 24-layer model and a larger task than our
# 30-intent cuts), 93.66% accuracy fine-tuned on the full training data, and 85.19% at 10 examples
# per intent for their best system, sentence encoders used frozen. course-mini is tiny and was
# pre-trained on Shakespeare and the King James Bible, not on modern banking English, so its
# numbers are lower; what this section measures is how the strategies compare on it.
#
# LP-FT against full fine-tuning, paired on the draws where both moved -- in distribution only:

# %%
from helpers.classify.comparisons import paired_comparison
from helpers.classify.findings import show_verdict
from helpers.finetuning.compute import LPFT
from helpers.finetuning.history import moved_on_all

both = moved_on_all(study, LPFT, FULL)  # the draws where both moved
pair = {s: accuracy[s].only(both) for s in (LPFT, FULL)} if both else {}
lpft_claim = show_verdict(
    paired_comparison(pair[LPFT], pair[FULL]).verdict("LP-FT", FULL),
    more="beats",
    less="falls below",
    measure="is more accurate in distribution",
    units=f"{len(both)} draws of {N_TEST} test {ITEMS}",
    values=(f"{100 * pair[LPFT].estimate:.1f} %",
            f"{100 * pair[FULL].estimate:.1f} %"),
    extra=[
        f"in-distribution test {ITEMS} only: Kumar et al.'s claim about"
        " out-of-distribution accuracy is not tested here",
    ],
) if both else print("LP-FT and full fine-tuning never both moved on a draw:"
                     " not compared")

# %% [markdown]
# **One draw, live.** Now check the stored numbers on this machine: the first draw's frozen probe
# and full fine-tuning, with the same recipe -- every learning rate of the grid, chosen on the dev
# split (about a minute and a half on two cores; `finetune_study` keeps the runs in the course's
# disk cache, so a second run of the lesson reads them). Each lands inside the stored range over
# the draws, or the cell says it does not (`live_check` in `helpers/finetuning/history.py`). A
# Chinese run has no stored sweep to check: its draws above are all live, and this cell says so.

# %%
from helpers.finetuning.history import live_check

live_recipe = budget.pick(recipe, dataclasses.replace(
    recipe, lrs=recipe.lrs[-1:], max_steps=12, min_steps=0, patience=1))
live = finetune_study(ft_tokenizer, ft_model, {SEEDS[0]: task0},
                      (FROZEN, FULL), config=live_recipe,
                      keep_models=[FULL]) if STORED else study
assert model_key(ft_model) == key_before, f"{FT_NAME} must stay untouched"
live_inside = {}
for strategy in (FROZEN, FULL):
    run = live.runs[strategy][0]
    if not STORED:
        print(f"no stored {BENCH['name']} sweep to check against: '{strategy}'"
              f" on draw {run.seed} scored {run.accuracy:.1%} here, live")
    elif budget.name == "full":
        live_inside[strategy], sentence = live_check(run, study)
        show_finding(sentence)
    else:
        print(f"quick budget: '{strategy}' trained {run.steps} steps to"
              f" {run.accuracy:.1%} -- a check that the code runs, not"
              " comparable with the stored sweep")

# %% [markdown]
# The seconds per run above mix different numbers of steps and learning rates. For the cost of
# freezing alone, time one training step (forward + backward of one batch) of the live "full
# fine-tuning" model and of the same model with the lower half frozen, nine times in turns.

# %%
from helpers.finetuning.compute import FREEZE, layer_groups
from helpers.practice.compute import time_interleaved, training_step
from helpers.practice.findings import time_finding

full_clf = live.models(FULL)[0]
frozen_half = copy.deepcopy(full_clf)
for params in layer_groups(frozen_half.bert)[: 1 + L_ft // 2]:
    for p_ in params:
        p_.requires_grad_(False)
bs = recipe.batch_size
step_batch = ft_tokenizer(train.texts[:bs], padding=True, truncation=True,
                          max_length=recipe.max_length,
                          return_tensors="pt").to(ft_model.device)
step_labels = torch.tensor(train.labels[:bs], device=ft_model.device)
ft_step = time_interleaved({
    "full": training_step(full_clf, step_batch, step_labels),
    FREEZE: training_step(frozen_half, step_batch, step_labels),
}, repeats=9)
# training_step switched it to training mode (dropout); later sections read
# features
full_clf.eval()
step_sentence, step_details, step_kind = time_finding(
    "a full fine-tuning step", ft_step["full"],
    "a step with the lower half frozen", ft_step[FREEZE],
)
step_claim = show_finding(step_sentence[0].upper() + step_sentence[1:],
                          step_details)
del frozen_half

# %% [markdown]
# Read the figures, the tables and the sentences together. Freezing layers removes the backward
# pass through them and their optimizer updates: whether that shows up as fewer seconds on your
# machine is the last sentence. Which strategies beat leaving the encoder as it is, and which this
# test set cannot tell apart, are the paired verdicts above -- to be read with the power statement
# before them. Which layers full fine-tuning moves, and whether each layer's own change matters,
# is what lesson 14 measures.
#
# ## 2. Keep only the hidden states you need
#
# A recipe seen in the wild passes a list, `output_hidden_states=[8, 10, 12]`, hoping to get
# only three layers back -- either to the forward call or to `from_pretrained`, which stores
# it in the model's config. What happens depends on the transformers version. The course
# authors checked this by installing each transformers version below in turn and trying both
# paths on the bundled model, asking for hidden states $[2, 4, 6]$ of 7 (**checked on
# 2026-12-02**; newer versions may behave differently again):
#
# | transformers | forward argument | `from_pretrained(..., output_hidden_states=[...])` |
# |---|---|---|
# | 4.57 | read as `True`: all 7 states | accepted; then read as `True`: all 7 |
# | 5.15 (Colab's version on 2026-12-02) | read as `True`: all 7 states | refused: `StrictDataclassFieldValidationError` (the config field must be a bool) |
# | 5.17 | selects, but shifted: entries 2 and 4 hold states 3 and 5, nothing for 6 | refused, as in 5.15 |
# | 5.22 | shifted, as in 5.17 | accepted; shifted, as in 5.17 |
# | 5.23, 5.24 | honoured: states 2, 4, 6, `None` elsewhere | honoured |
#
# This table is a record of that check, not something this notebook re-runs. For the version you
# have installed, the statement that counts is the next cell's printout: it asks the installed
# transformers, for three layer numbers of this model, both ways, and compares every returned
# tensor with the full list.

# %%
import transformers

from helpers.model.trace import encode
from helpers.practice.compute import try_from_pretrained, what_comes_back

# warns if SENTENCE is longer than the model accepts
enc, _ = encode(tokenizer, model, SENTENCE)
enc.pop("offset_mapping")
wanted = sorted({max(1, L - 4), max(1, L - 2), L})
with torch.no_grad():
    full = model(**enc, output_hidden_states=True).hidden_states
argument = what_comes_back(
    lambda: model(**enc, output_hidden_states=wanted), wanted, full
)
listed, error = try_from_pretrained(
    loaded.choice.path, output_hidden_states=wanted
)
config = (("error", error) if listed is None
          else what_comes_back(lambda: listed(**enc), wanted, full))
print(f"transformers {transformers.__version__}, asking for hidden states"
      f" {wanted} of {L + 1}:")
for call, (verdict, how) in (("model", argument),
                             ("from_pretrained", config)):
    print(f"  {call}(..., output_hidden_states={wanted}): {verdict} -- {how}")

# %% [markdown]
# A method that works with every version, and for any module, not just whole layers: register
# a forward hook on `model.encoder.layer[l - 1]` (layer $l$; `model.embeddings` for layer 0)
# that stores the module's output. `keep_hidden_states` (in `helpers/practice/compute.py`)
# does this and removes the hooks afterwards.

# %%
from helpers.practice.compute import keep_hidden_states

with keep_hidden_states(model, wanted) as kept, torch.no_grad():
    model(**enc)
for l in wanted:
    assert torch.allclose(kept[l], full[l], atol=1e-5)
nbytes = lambda ts: sum(t.numel() * t.element_size() for t in ts)
print(
    f"hooks kept layers {sorted(kept)}: {nbytes(kept.values()):,} bytes"
    f" instead of {nbytes(full):,} for all {L + 1} states (each equal to the"
    " model's own: checked)"
)

# %% [markdown]
# ## 3. Gradient checkpointing
#
# A training step holds four kinds of memory:
#
# * the **weights** (4 bytes per parameter in float32);
# * their **gradients** (4 more bytes per trained parameter);
# * the **optimizer state**: AdamW keeps two running averages per parameter, `exp_avg` and
#   `exp_avg_sq` (8 more bytes) -- about **16 bytes per parameter** in all, whatever the batch;
# * the **activations** autograd saves in the forward pass for the backward pass, which grow
#   with the batch size and the input length.
#
# Checkpointing attacks only the last: it keeps each layer's input and recomputes the layer's
# insides during backward. It is switched on with a model *method*
# (`model.gradient_checkpointing_enable()`, renamed `activation_checkpointing_enable()` in
# transformers 5) and acts only in training mode. A keyword seen in some recipes,
# `from_pretrained(..., use_gradient_checkpointing=True)`, is not one of them; here is what
# the installed version does with it, and with the old config key `gradient_checkpointing=True`.

# %%
from helpers.practice.compute import checkpointing_is_on

for keyword in ("use_gradient_checkpointing", "gradient_checkpointing"):
    loaded_with, error = try_from_pretrained(loaded.choice.path,
                                             **{keyword: True})
    outcome = error or ("accepted; checkpointing switched on: "
                        f"{checkpointing_is_on(loaded_with)}")
    print(f"from_pretrained(..., {keyword}=True) -> {outcome}")
del loaded_with

# %% [markdown]
# Now the four parts, measured on one training step of a batch of 8 examples padded to
# 32 tokens. `training_state_bytes` adds up the weights, gradients and AdamW state from the
# tensors themselves after one AdamW step. `saved_for_backward` counts the storages autograd
# saves (through `torch.autograd.graph.saved_tensors_hooks`) plus the layer inputs a
# checkpoint keeps. Autograd's saved tensors **include references to the weights** (a linear
# layer needs $W$ to pass the gradient to its input); those are the model's own weights, no
# extra memory, so they are counted apart and left out of "activations".

# %%
from helpers.finetuning.compute import SentenceClassifier
from helpers.practice.compute import (
    enable_checkpointing, saved_for_backward, training_state_bytes,
)

batch = tokenizer(train.texts[:8], padding="max_length", truncation=True,
                  max_length=32, return_tensors="pt").to(model.device)
inputs = {k: batch[k] for k in ("input_ids", "attention_mask")}
labels = torch.tensor(train.labels[:8], device=model.device)
clfs = {mode: SentenceClassifier(copy.deepcopy(model), C)
        for mode in ("plain", "checkpointed")}
method = enable_checkpointing(clfs["checkpointed"].bert)
memory = {mode: saved_for_backward(clf, inputs, labels)
          for mode, clf in clfs.items()}
opt = torch.optim.AdamW(clfs["plain"].parameters(), lr=1e-5)
torch.nn.functional.cross_entropy(clfs["plain"](**inputs), labels).backward()
opt.step()
state = training_state_bytes(clfs["plain"], opt)

# %% mystnb={"figure": {"caption": "Memory one training step of the lesson's batch holds (MiB), without and with gradient checkpointing: weights, gradients and AdamW state, measured from the tensors after one step, and activations saved for backward (references to weights not counted); numbers in the bars are MiB per part. Compare which part checkpointing shrinks; the step's peak memory is measured in the next cell.", "name": "fig-11-training-memory"}}
from helpers.practice.findings import training_memory_text
from helpers.practice.plots import plot_training_memory

B, T = inputs["input_ids"].shape
parts = {mode: {**state, "activations saved for backward": m.activation_bytes}
         for mode, m in memory.items()}
ax = plot_training_memory(
    parts, title=f"memory one training step holds, {B} {ITEMS} x {T} tokens"
)
plt.show()
# parameters, bytes per parameter, activations per mode and how much they
# shrink: training_memory_text in helpers/practice/findings.py
print(training_memory_text(clfs["plain"], state, memory, method))

# %% [markdown]
# Saved activations are what checkpointing removes, but what limits a training step is its
# **peak**: the most memory the step's own tensors hold at any moment of forward and backward --
# saved activations, the temporaries of each backward operation, and the gradients, which appear
# during backward while activations are freed. `peak_step_memory` (in `helpers/practice/compute.py`)
# asks the memory allocator itself: with torch's profiler recording every allocation and free
# during one forward + backward, the peak of the running total minus where it stood before the
# step (on a GPU, `torch.cuda.max_memory_allocated`). We measure it for the batch above and for
# the same examples padded to four times the length.

# %%
from helpers.practice.compute import peak_step_memory
from helpers.practice.findings import peak_memory_text

peaks = {}
for length in (T, 4 * T):
    enc_l = tokenizer(train.texts[:B], padding="max_length", truncation=True,
                      max_length=length, return_tensors="pt").to(model.device)
    enc_l = {k: enc_l[k] for k in ("input_ids", "attention_mask")}
    peaks[length] = {mode: peak_step_memory(clf, enc_l, labels)
                     for mode, clf in clfs.items()}
# both peaks per length beside the gradients, and what follows:
# peak_memory_text in helpers/practice/findings.py
print(peak_memory_text(peaks, B, state["gradients"], items=ITEMS))

# %% [markdown]
# The recomputation is the price: each checkpointed layer runs its forward a second time
# during backward (the last printed numbers count those calls). How much wall-clock time
# that costs depends on the machine; measured in turns after a warm-up:

# %%
step_times = time_interleaved(
    {mode: training_step(clf, inputs, labels) for mode, clf in clfs.items()},
    repeats=9, warmup=1,
)
ckpt_sentence, ckpt_details, _ = time_finding(
    "a plain step (forward + backward)", step_times["plain"],
    "a checkpointed step", step_times["checkpointed"],
)
ckpt_claim = show_finding(ckpt_sentence[0].upper() + ckpt_sentence[1:],
                          ckpt_details)

# %% [markdown]
# ## 4. A feature cache
#
# Frozen-feature pipelines ask for the same sentence again and again (every epoch of a head,
# every probe). `FeatureCache` keys each vector by *(model, layer, pooling, text)*. The model
# part of the key, `model_key`, hashes **every** weight and buffer, so two models that differ
# in any weight get different keys, even when their caches share one store. The key is taken
# when the cache is created: after changing a model's weights in place, make a new cache. One
# forward pass fills every layer at once.

# %%
from helpers.classify.compute import extract_features
from helpers.practice.compute import FeatureCache

cache = FeatureCache(tokenizer, model)
t = time.perf_counter()
X_train = cache.get(train.texts, L, "mean")
cold = time.perf_counter() - t
warm = time_interleaved(
    {"cached": lambda: cache.get(train.texts, L, "mean")}, repeats=5, warmup=0
)["cached"]
# the cached features against a fresh, independent run of the model
fresh = extract_features(tokenizer, model, train.texts, progress=False,
                         max_length=128)
assert torch.allclose(X_train, fresh.layer(L, "mean"), atol=1e-5)
misses = cache.misses
# another layer and pooling
second = cache.get(train.texts[:5], max(L - 1, 0), "cls")
assert cache.misses == misses, \
    "the first pass cached every layer: no text may be encoded again"
print(
    f"first call {cold:.2f} s (one run: it includes the model's forward"
    f" passes)\nrepeated calls: median {median_range(warm).estimate * 1e3:.2f}"
    f" ms [{min(warm) * 1e3:.2f}, {max(warm) * 1e3:.2f}] over {len(warm)}"
    f" calls; {cache.misses} texts encoded, {cache.hits} answered from the"
    " cache (the other layer too)"
)

# %% [markdown]
# Does a fine-tuned copy really never read the original's features? Test it on section 1's
# live fine-tuned model (course-mini; with a Chinese model, the Chinese model): give it a cache that **shares the original's store**. The cell also measures how far
# fine-tuning moved the features, without being fooled by a change of scale: the **cosine** between
# a sentence's feature before and after (how far it turned), beside the cosine between two
# different examples in the original model (each paired with a randomly chosen other one), and
# the change of length apart (`direction_change` in `helpers/practice/findings.py`).

# %%
from helpers.practice.findings import direction_change

# section 1's live full fine-tuning (a draw where it left its start) and its
# original, on one store
moved = [r.moved for r in live.runs[FULL]]
pick = moved.index(True) if any(moved) else 0
tuned, ft_run = live.models(FULL)[pick].bert, live.runs[FULL][pick]
original = FeatureCache(ft_tokenizer, ft_model, store=cache.store)
X_before = original.get(train.texts, L_ft, "mean")
shared = FeatureCache(ft_tokenizer, tuned, store=cache.store)
X_tuned = shared.get(train.texts, L_ft, "mean")
# a run that kept its start has the original's weights: its key is theirs
assert (shared.hits == 0 and shared.misses == len(train)) or not any(moved), \
    "the fine-tuned copy must not read the original's entries"
print(f"fine-tuned copy on the shared store: {shared.hits} hits,"
      f" {shared.misses} misses" + ("" if any(moved) else
      "; full fine-tuning kept its starting weights on every draw, so the"
      " copy is the original and rightly reads its entries"))
turned = direction_change(X_before, X_tuned)
move_claim = show_finding(
    f"Full fine-tuning of {FT_NAME} (draw {ft_run.seed}, lr"
    f" {ft_run.lr:g}) turned the"
    " last-layer features so that a sentence's old and new vector have a"
    f" median cosine of {turned['cosine']:.2f}; two different training"
    f" {ITEMS} in the original model have a median cosine of"
    f" {turned['cosine_between']:.2f}, and the features also grew"
    f" {turned['length_ratio']:.1f}x in length.",
    details=[
        "cosine: how far a vector turned, whatever its length (1 = the same"
        " direction); the length ratio is reported apart, because a change of"
        " scale alone moves nothing a standardizing head can read",
        "for comparison, the scale-dependent measure ||after - before|| /"
        f" ||before||: median {turned['relative_change']:.0%}, which mixes the"
        " turn with the change of length",
        f"{len(X_tuned)} training {ITEMS} of the first draw; partners for"
        " the between-sentence cosine drawn at random (random_partners)",
    ],
)

# %% [markdown]
# ## 5. Dynamic int8 quantization
#
# `torch.ao.quantization.quantize_dynamic` replaces every `nn.Linear` by a version whose weights
# are stored as 8-bit integers (one scale per tensor); activations are quantized on the fly,
# one scale per tensor and batch. Recent torch versions still ship it but mark it deprecated in
# favour of the separate `torchao` package (the cell prints the installed torch version and
# whether it warned); `quantize_int8` keeps that warning out of the output. We measure four
# things: the size of the saved weights, the time for a batch, the test accuracy of a head
# trained on float32 features (one per seed of `SEEDS`) when it is fed int8 features, and -- per layer --
# how far int8 moves each sentence's feature. For scale, the last panel also shows how far a
# sentence's feature lies from another test sentence's, chosen at random (the test file is
# sorted by class, so its *next* sentence would mostly share the class).

# %% mystnb={"figure": {"caption": "The loaded model in float32 against its dynamic int8 copy: saved-weight size; time per batch of test sentences (dots: timed runs, bar: median); test accuracy of float32-trained heads on each model's features (95 % interval over items and seeds; zoomed axis); and per layer, how far int8 moves each sentence's feature, beside its distance to a random other sentence (median, interquartile band).", "name": "fig-11-int8"}}
from helpers.classify.comparisons import SeededAccuracy
from helpers.classify.compute import (correct_per_item, extract_features,
                                      fit_head)
from helpers.practice.compute import (
    feature_change_per_layer, quantize_int8_with_warnings, state_dict_bytes,
)
from helpers.practice.plots import plot_int8_comparison

qmodel, quant_warnings = quantize_int8_with_warnings(model)
models = {"float32": model, "int8": qmodel}
sizes = {name: state_dict_bytes(m) for name, m in models.items()}
few = test.texts[:32]
speed = time_interleaved({
    name: lambda m=m: extract_features(tokenizer, m, few, progress=False,
                                       max_length=128)
    for name, m in models.items()
}, repeats=9, warmup=1)
feats = {name: extract_features(tokenizer, m, test.texts, progress=False,
                                max_length=128)
         for name, m in models.items()}
# one head on the first draw's float32 features, by the training contract
int8_head, int8_record = fit_head(
    X_train, train.labels, C, cache.get(dev.texts, L, "mean"), dev.labels,
    run="float32 head, first draw",
)
acc = {
    name: SeededAccuracy(
        correct_per_item(int8_head, f.layer(L, "mean"), test.labels)[None],
        SEEDS[:1],
    )
    for name, f in feats.items()
}
change, between = feature_change_per_layer(
    feats["float32"], feats["int8"], "mean"
)
axes = plot_int8_comparison(
    sizes, speed, {n: a.interval() for n, a in acc.items()}, change, between,
    timed=f"{len(few)} sentences",
)
plt.show()

# %%
from helpers.classify.compute import predict
from helpers.practice.findings import quantization_note

embed = state_dict_bytes(model.embeddings)
# did torch warn? quantization_note in helpers/practice/findings.py
print(quantization_note(torch.__version__, quant_warnings))
print(f"size: {sizes['float32'] / 2**20:.1f} MiB ->"
      f" {sizes['int8'] / 2**20:.1f} MiB"
      f" ({sizes['int8'] / sizes['float32']:.0%}); the embeddings"
      f" ({embed / 2**20:.1f} MiB) are not nn.Linear and stay float32")
speed_sentence, speed_details, _ = time_finding(
    "float32", speed["float32"], "int8", speed["int8"]
)
lowered = speed_sentence[0].lower() + speed_sentence[1:]  # it follows a comma
speed_claim = show_finding(
    f"On a batch of {len(few)} test sentences, {lowered}",
    speed_details,
)
same = (predict(int8_head, feats["float32"].layer(L, "mean"))
        == predict(int8_head, feats["int8"].layer(L, "mean"))).float()
int8_claim = show_verdict(
    paired_comparison(acc["int8"], acc["float32"]).verdict(
        "int8 features", "float32 features"
    ),
    more="beat", less="fall below",
    measure="give the more accurate head",
    units=f"{len(test)} test {ITEMS}",
    values=(f"{100 * acc['int8'].estimate:.1f} %",
            f"{100 * acc['float32'].estimate:.1f} %"),
    extra=[
        f"the head gives the same answer on {same.mean():.0%} of the"
        f" {len(test)} test {ITEMS}",
        int8_record.describe(),
    ],
)
m, b = change[L].median().item(), between[L].median().item()
print(textwrap.fill(
    f"last layer: int8 moves a sentence's feature by a median {m:.1%} of"
    " its length; a test sentence and a random other one lie a median"
    f" {b:.1%} apart (ratio {m / max(b, 1e-12):.2f})",
    110, subsequent_indent="    "))

# %% [markdown]
# The printouts above are the trade, in numbers: how much smaller the file got, whether int8
# was faster on *this* CPU (that depends on its int8 kernels), how far int8 moves a sentence
# compared with swapping it for another sentence, and whether a head trained on float32
# features noticed. Judge "small" or "large" from those numbers for your own use.
#
# ## Summary
#
# * Every fine-tuning run follows one training contract: the learning rate chosen per strategy on
#   every draw's dev split carved from the training data (never the test set), the dev split
#   scored from step 0, early stopping on dev accuracy after the warm-up and a minimum of steps,
#   and a status per run in the table of section 1. A run that kept its starting weights counts
#   as not fine-tuned and stays out of the verdicts. Each seed is its own draw of classes and
#   examples; strategies are compared paired within each draw.
# * A comparison of strategies needs a model that fine-tuning can improve: a sentence encoder's
#   frozen vectors may already be as good as fine-tuning on ten examples an intent, a plain
#   masked-LM BERT's are not. The heavy sweep is stored with its provenance; one draw re-run here
#   checks it. Read every verdict with the power statement printed before it. LP-FT was measured
#   in distribution only. All runs started from a deep copy, and the tuned model's weight hash was
#   checked unchanged. With a Chinese model there is no stored sweep: the loaded model is
#   fine-tuned live on THUCNews, and the line under the status table says whether fine-tuning
#   moved off the linear probe at all.
# * What `output_hidden_states=[...]` does depends on the transformers version and on whether
#   it goes to the forward call or to `from_pretrained` (check it, as above); forward hooks on
#   `model.encoder.layer[i]` keep only what you need in any version.
# * A training step holds weights, gradients and optimizer state (about 16 bytes per parameter
#   with AdamW in float32) plus the activations saved for backward. Gradient checkpointing is
#   switched on with a model method (`gradient_checkpointing_enable()`); what `from_pretrained`
#   does with a checkpointing keyword depends on the transformers version (section 3 printed what
#   yours does). It shrinks the saved activations and pays with a second forward pass of every
#   layer during backward; how much it lowers the step's **peak** memory depends on how much of
#   that peak the activations are (section 3 measured it at two input lengths).
# * Caching features by (model hash, layer, pooling, text) makes repeated queries almost free;
#   dynamic int8 quantization shrinks the linear layers and moves the features by an amount
#   the last figure puts in scale.
#
# ## Exercises
#
# Each exercise starts with its rating: how hard it is, how much it matters for
# the rest of the course, and about how long it takes. The checkers grade your
# answer and give a hint when it is not right yet; they never print the answer.

# %%
from helpers.exercises.lesson11 import (
    check_exercise_1,
    check_exercise_2,
    check_exercise_3,
)

# %% [markdown]
# ### Exercise 1: layer-wise learning rates
#
# Difficulty ●●○○○ · Importance ●●●○○ · ~10 min
#
# Write `lrs(base_lr, decay, num_layers)` returning the list of learning rates
# for the embeddings (index 0) and layers 1..L under layer-wise decay,
# $\eta\,\xi^{L+1-l}$.

# %%
lrs = None  # your function here
check_exercise_1(lrs)

# %% [markdown]
# ### Exercise 2: keep one layer
#
# Difficulty ●●○○○ · Importance ●●○○○ · ~10 min
#
# Using `keep_hidden_states`, collect the output of layer 1 only (`hidden(1)`,
# the output of `encoder.layer[0]`) for `SENTENCE` and hand the kept dict to
# the checker.

# %%
kept_layer1 = None  # your dict here
check_exercise_2(kept_layer1, tokenizer, model, SENTENCE)

# %% [markdown]
# ### Exercise 3: predict, then measure — checkpointing with longer sentences
#
# Difficulty ●●●○○ · Importance ●●●○○ · ~15 min
#
# Section 3 printed how many times more activation bytes the plain step saves
# for backward than the checkpointed one, for 8 examples x 32 tokens. Now
# take **4 examples padded to 64 tokens**: the same number of tokens, longer
# sentences. **First predict**: does the ratio grow or shrink? Write `"grows"`
# or `"shrinks"` in `prediction_3`.
#
# **Then measure** it: the first four training examples, built like `batch`
# there, with their labels, and `saved_for_backward` on both `clfs` (weights
# not included). The checker grades the measurement and only comments on the
# prediction.
#
# *Reflection (not checked):* which saved tensors grow with the square of the
# length, and which only with the number of tokens?

# %%
prediction_3 = None  # "grows" or "shrinks", written before measuring
ratio = None  # your number here
check_exercise_3(ratio, clfs, tokenizer, train, memory,
                 prediction=prediction_3)
