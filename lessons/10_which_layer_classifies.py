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
# # 10 — Which vector, which layer? Classifying BANKING77
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/bert-layer-by-layer/bert-layer-by-layer/blob/main/lessons/10_which_layer_classifies.ipynb)
#
# Names and counting ($L, H, A, d, I, n$; layers from 1, heads from 0): see the [conventions](00_big_picture.ipynb#conventions) box of lesson 00.
#
# [Lesson 04](04_pooler_and_classification_head.ipynb) built the machinery: the pooler, a linear
# head on frozen features, logits, softmax and the class id, and the training contract every head
# of the course follows (a dev split chooses, a score at step 0, L-BFGS to a stated gradient
# tolerance). There, one head on the last layer's `[CLS]` vector sorted the course's ten easy
# intents. This lesson asks **which sentence vector, from which layer, carries the class best**,
# on **BANKING77** (77 fine-grained banking intents, few-shot training sets), a task hard enough
# that layers, poolings and combinations of layers can actually differ.
#
# **The data follow the model.** With a Chinese model (`MODEL = "bundled-zh"` or
# `"bert-base-chinese"`) the lesson runs on the Chinese counterparts instead: the course's 17
# Chinese intents (`data/intents_zh/`) for the first demo and **THUCNews** news headlines (10
# topics, Sun et al., 2016) for the benchmark (`model_language`, `intents_for` and
# `benchmark_for` in `helpers/common/language.py`). Every sentence that states a result is
# generated from the run, so it speaks of the data set that ran.
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
# `MODEL` names the checkpoint (`None`: the course chooses); `SENTENCE` is traced once below to
# show the loaded model (the measurements of this lesson run on the data sets).
#
# `BUDGET` sizes the expensive work (`None`: the course chooses, `"full"` on the bundled model: all 77 BANKING77
# intents, 10- and 30-shot training sets drawn with 5 seeds, all 3,080 test utterances; `"quick"`: a few intents,
# utterances and seeds, for a fast check or a large model on a CPU; `choose_budget` in `helpers/common/budget.py`).

# %% tags=["parameters"]
MODEL = None
SENTENCE = "Could you wake me up at half past six tomorrow?"
# None: the course chooses; "full" or "quick" (a few intents, utterances and
# seeds)
BUDGET = None

# %%
import torch

from helpers.common.budget import choose_budget
from helpers.model.loading import load_model, paper_comparison
from helpers.model.trace import trace_text

torch.manual_seed(0)
loaded = load_model(MODEL)
tokenizer, model = loaded
# is this the BERT-base of Devlin et al. and Reimers & Gurevych?
paper = paper_comparison(loaded)
budget = choose_budget(BUDGET, model)
config = model.config
L, H = config.num_hidden_layers, config.hidden_size
trace = trace_text(tokenizer, model, SENTENCE)
print(
    f"{L} layers, hidden size {H}; {trace.seq_len} tokens, position 0 is"
    f" {trace.tokens[0]!r}"
)
print(f"against the papers' BERT-base: {paper.label}")


# %% [markdown]
# Where this lesson sits on the map of lesson 00 (`you_are_here`, in
# `helpers/architecture/plots.py`):

# %% mystnb={"figure": {"caption": "The course's map of BERT, from tokens and embeddings through the encoder layer (repeated as often as the loaded model has layers) to the pooler and a task head. The parts this lesson measures, the encoder layers (which one carries the class) and the classification head, are framed in orange and marked \"you are here\".", "name": "fig-10-you-are-here"}}
from helpers.architecture.plots import LESSON_PARTS, you_are_here

you_are_here(model.config, LESSON_PARTS["10"]);


# %% [markdown]
# ## The course's intents again
#
# As in lesson 04, every utterance of the course's intent set (`data/intents/`, or
# `data/intents_zh/` with a Chinese model) goes through the model once (with
# `torch.no_grad`, weights untouched), and we keep two sentence vectors per layer $l = 0..L$: the
# `[CLS]` vector $h^{(l)}_0$ and the mean over the real (non-padding) tokens
# $\frac{1}{n}\sum_i h^{(l)}_i$ (`extract_features` in `helpers/classify/compute.py`).

# %%
import textwrap
import time

import matplotlib.pyplot as plt

from helpers.classify.compute import extract_features, fit_head_split
from helpers.common.claims import show_finding
from helpers.common.language import intents_for, model_language
from helpers.common.stats import accuracy_ci

# the data follow the model: "en" or "zh", from the tokenizer's vocabulary
language = model_language(tokenizer, lesson="10")
train10, test10 = intents_for(language, "train"), intents_for(language, "test")
C10 = train10.num_classes
# tokens per utterance, [CLS] and [SEP] included; longer ones are cut (with a
# warning)
MAX_LEN = 32
feats10_train = extract_features(
    tokenizer, model, train10.texts, max_length=MAX_LEN, progress=False
)
feats10_test = extract_features(
    tokenizer, model, test10.texts, max_length=MAX_LEN, progress=False
)
print(f"{len(train10)} train / {len(test10)} test utterances, {C10} intents:"
      f" {', '.join(train10.names[:4])}, ...")

# %% [markdown]
# ## Why a harder task
#
# How much room does the course's intent set leave? A head like lesson 04's on the last layer's `[CLS]`
# vector, the same head on the mean-pooled last layer (the sentence vector this checkpoint was
# trained to produce), and on the mean of the embeddings alone (layer 0: a bag of words, no
# context at all):

# %%
from helpers.classify.compute import correct_per_item

room = {}
for name, layer, pooling in (
    ("the last layer's [CLS] vector", L, "cls"),
    ("the mean-pooled last layer", L, "mean"),
    ("the mean-pooled embeddings (layer 0)", 0, "mean"),
):
    other_head, _ = fit_head_split(
        feats10_train.layer(layer, pooling), train10.labels, C10, seed=0
    )
    room[name] = correct_per_item(
        other_head, feats10_test.layer(layer, pooling), test10.labels
    )
ceiling = show_finding(
    f"On the course's {C10} intents, a head on "
    + " and one on ".join(
        f"{name} gets {int(right.sum())} of {len(test10)} right"
        for name, right in room.items()
    )
    + ".",
    details=[
        f"{name}: {accuracy_ci(right).percent()} (exact 95 % interval over the"
        f" {len(test10)} test items)"
        for name, right in room.items()
    ],
)

# %% [markdown]
# Where the heads get (nearly) every test utterance right, the set leaves no room above them, and
# with this few test items one more or one fewer right answer moves an accuracy by a whole step
# of $1/n$. A task on which good classifiers sit at (or next to) the ceiling cannot tell layers,
# poolings or strategies apart. So the course's intents served one purpose, lesson 04's box to type into, and
# every measured claim from here on uses a harder task.
#
# ## BANKING77
#
# BANKING77 (Casanueva et al., 2020, *Efficient Intent Detection with Dual Sentence Encoders*;
# `data/banking77/`, CC BY 4.0) holds customer messages to a bank, each labelled with one of 77
# intents of that single domain; many of them overlap ("card not working", "declined card
# payment", "card swallowed"). The paper's few-shot setups train on **10 or 30 utterances per
# intent**; so do we, drawn at random from the training split with a seed
# (`load_banking77("train").sample(k, seed)`, `helpers/common/data.py`). For a frozen encoder with
# a linear head, *which* utterances land in the training set is the variation that matters, so
# each seed draws another training set: a "seed" below is a **draw**. Each draw also gets its own
# **dev split**, a few more utterances per intent from the rest of the training split (never from
# the test split), which makes every choice its heads need. Every run is scored on the same test
# utterances, which lets us pair any two classifiers item by item.
#
# With a Chinese model the same design runs on THUCNews (`data/thucnews/`): Chinese news
# headlines, 10 topics, a fixed test split of 300 headlines a topic; "intent" below then reads
# "topic", and the paper's numbers, measured on BANKING77, are not shown beside it.

# %%
import random

from helpers.common.language import BENCHMARKS, benchmark_for, benchmark_line

pool_all = benchmark_for(language, "train")
test_all = benchmark_for(language, "test")
BENCH = BENCHMARKS[language]  # its name, and what its classes and items are
ONE, ITEMS = BENCH["classes"][:-1], BENCH["items"]  # "intent", "utterances"
print(benchmark_line(language))
# quick: a few intents (drawn with a seed) and utterances, so that the test
# suite runs in seconds; full: all 77 intents, so every draw shares them
INTENTS = budget.pick(
    pool_all.names, tuple(sorted(random.Random(0).sample(pool_all.names, 5)))
)
# training utterances per intent, as in Casanueva et al.'s few-shot setups
SHOTS = budget.pick((10, 30), (2, 4))
SEEDS = budget.pick((0, 1, 2, 3, 4), (0, 1))  # one few-shot draw per seed
DEV_PER_INTENT = budget.pick(3, 2)  # each draw's dev split, per intent
TEST_PER_INTENT = budget.pick(None, 6)  # None: every test utterance
train_pool, test = pool_all.only(INTENTS), test_all.only(INTENTS)
if TEST_PER_INTENT is not None:
    test = test.sample(TEST_PER_INTENT, seed=0)
C, y_test = len(INTENTS), torch.tensor(test.labels, device=model.device)
# per seed: first its dev split, then its training sets from the rest (the
# dev split never overlaps the utterances its heads train on)
devs, draws = {}, {k: {} for k in SHOTS}
for s in SEEDS:
    rest, devs[s] = train_pool.split_off(DEV_PER_INTENT, seed=10_000 + s)
    for k in SHOTS:
        draws[k][s] = rest.sample(k, seed=s)
print(
    f"{C} of the {pool_all.num_classes} {ONE}s; training pool"
    f" {len(train_pool):,} {ITEMS}; few-shot training sets of"
    f" {' and '.join(map(str, SHOTS))} per {ONE}, one draw per seed {SEEDS},"
    f" each with a dev split of {DEV_PER_INTENT} more per {ONE}"
)
print(
    f"test: {len(test):,} {ITEMS}, "
    + (
        f"every test {ITEMS[:-1]} of these {ONE}s"
        if TEST_PER_INTENT is None
        else (
            f"a fixed stratified part, {TEST_PER_INTENT} per {ONE}"
            f" (test.sample({TEST_PER_INTENT}, seed=0))"
        )
    )
    + f"; chance {1 / C:.1%}"
)
for i in range(0, len(test), max(1, len(test) // 3))[:3]:
    print(f"  {test.texts[i]!r} -> {test.names[test.labels[i]]}")

# %% [markdown]
# The model runs once per distinct utterance: the test set, every draw and every dev split go
# into a `FeatureBank` (`helpers/classify/compute.py`), which extracts their features of every
# layer in batches of similar length (little padding, so fast) and hands each draw its rows. The
# inputs are cut at the longest utterance's length, so none is truncated (`max_input_tokens` caps
# it at the model's limit). One test utterance, run alone through `trace_text` (no batch, no
# padding), checks the bank.

# %%
from helpers.classify.compute import Draw, FeatureBank
from helpers.model.trace import max_input_tokens

texts = (
    test.texts
    + [t for k in SHOTS for d in draws[k].values() for t in d.texts]
    + [t for d in devs.values() for t in d.texts]
)
longest = max(
    len(ids)
    for ids in tokenizer(texts, truncation=False, verbose=False)["input_ids"]
)
MAX_LEN77 = min(longest, max_input_tokens(tokenizer, model))
t0 = time.perf_counter()
bank = FeatureBank(tokenizer, model, texts, max_length=MAX_LEN77)
bank_seconds = time.perf_counter() - t0
print(
    f"{len(bank):,} distinct {ITEMS} (test set, every draw and dev split)"
    f" through the model in {bank_seconds:.0f} s; longest {longest} tokens,"
    f" inputs cut at {MAX_LEN77}: "
    + ("none is cut" if longest <= MAX_LEN77 else "some are cut")
)
feats_test = bank.take(test.texts)
train_sets = {
    k: {
        s: Draw(
            bank.take(d.texts),
            d.labels,
            bank.take(devs[s].texts),
            devs[s].labels,
        )
        for s, d in draws[k].items()
    }
    for k in SHOTS
}
alone = trace_text(tokenizer, model, test.texts[-1])
assert torch.allclose(
    feats_test.mean[:, -1],
    torch.stack([alone.hidden(l).mean(0) for l in range(L + 1)]),
    atol=1e-4,
)
assert torch.allclose(
    feats_test.cls[:, -1],
    torch.stack([alone.vector(l, 0) for l in range(L + 1)]),
    atol=1e-4,
)

# %% [markdown]
# ## Training every head to convergence
#
# This lesson trains many heads: a linear probe on every layer with both poolings for every draw of
# the smaller training sets, a head on the mean-pooled last layer for every draw of the larger
# ones, and two heads that combine layers (concatenation and a learned weighted sum, at the end
# of this lesson). Their comparisons are only as good as their training, so every one of them follows
# the training contract of lesson 04 (`fit_head` in `helpers/classify/compute.py`; `probe_draws`,
# `strategy_draws` in `helpers/classify/strategies.py`): the L2 strength chosen on the draw's dev split, a start from
# zero, and L-BFGS run to the stated gradient tolerance. A step count is no longer a choice: a
# head is trained when its gradient vanishes, and the table says, for every kind of head, whether
# that happened. The dev split chooses; the test set only scores what it chose.

# %%
from helpers.classify.findings import family_table
from helpers.classify.strategies import (STRATEGIES, head_predictions,
                                         last_k_layers, probe_draws,
                                         strategy_draws)
from helpers.common.training import linear_criterion, status_summary

t0 = time.perf_counter()
probe_runs, probe_preds, records = {}, {}, {}
for pooling in ("cls", "mean"):
    result = probe_draws(
        train_sets[SHOTS[0]], feats_test, test.labels, C, pooling,
        progress=False,
    )
    probe_runs[pooling], probe_preds[pooling] = result.runs, result.predictions
    records[f"{pooling} probes, layers 0-{L}, {SHOTS[0]} per {ONE}"] = (
        result.records
    )
larger = {
    k: head_predictions(
        train_sets[k], feats_test, L, "mean", C, progress=False
    )
    for k in SHOTS[1:]
}
for k, result in larger.items():
    records[f"mean-pooled layer {L} head, {k} per {ONE}"] = result.records
layers4, note = last_k_layers(L)
combined = strategy_draws(
    train_sets[SHOTS[0]],
    feats_test,
    test.labels,
    C,
    strategies=("concat last four [CLS]", "weighted sum, all layers [CLS]"),
    progress=False,
)
for name, recs in combined.records.items():
    records[f"{name}, {SHOTS[0]} per {ONE}"] = recs
all_records = [r for recs in records.values() for r in recs]
heads_seconds = time.perf_counter() - t0
show_finding(
    f"Of the {len(all_records)} heads of this lesson, "
    + (
        "every one met the convergence criterion."
        if status_summary(all_records).startswith("all")
        else status_summary(all_records) + "."
    ),
    details=[
        f"criterion, stated before training: {linear_criterion()}",
        f"each head's L2 strength chosen on its draw's dev split"
        f" ({DEV_PER_INTENT} {ITEMS} per {ONE}) by the lowest dev loss",
        f"all {len(all_records)} heads trained in {heads_seconds:.0f} s on"
        " this machine",
    ],
    table=family_table(
        records,
        title=(
            "every head of this lesson by kind: status (the convergence"
            " criterion), L-BFGS iterations, final gradient, the dev split's"
            " choice, dev loss from step 0 to the kept weights, training"
            " accuracy"
        ),
    ),
)
print(f"'last four' uses {note}")

# %% [markdown]
# The training accuracy is the other half of the picture: with a few utterances per intent and
# hundreds of features per utterance, a linear head can fit its training set perfectly, and the
# penalty the dev split chose is what keeps it from fitting the noise too.
#
# Is the optimum we reached really the optimum? An independent solver checks one head:
# scikit-learn's `LogisticRegression` (its own L-BFGS, `tol=1e-4` on the gradient too) on the same
# standardized features with the same penalty, $C = 1/(\lambda n)$ in its units. Both minimise the
# same convex objective, so both must reach the same value.

# %%
import numpy as np
from sklearn.linear_model import LogisticRegression

from helpers.classify.compute import fit_head

first = train_sets[SHOTS[0]][SEEDS[0]]
check_head, check_record = fit_head(
    first.train.layer(L, "mean"), first.y_train, C,
    first.dev.layer(L, "mean"), first.y_dev,
)
lam = float(check_record.choice.split()[-1])
Xs = ((first.train.layer(L, "mean") - check_head.mu) / check_head.sigma)
Xs = Xs.double().cpu().numpy()
yv = np.asarray(first.y_train)
solver = LogisticRegression(C=1 / (lam * len(yv)), max_iter=5000).fit(Xs, yv)


def objective(Wt, bt):
    """Mean cross-entropy plus the L2 penalty, at weights [C, H], bias [C]."""
    logits = torch.as_tensor(Xs) @ torch.as_tensor(Wt).T + torch.as_tensor(bt)
    ce = torch.nn.functional.cross_entropy(logits, torch.as_tensor(yv))
    return float(ce + lam / 2 * torch.as_tensor(Wt).pow(2).sum())


ours = objective(check_head.classifier.weight.detach().double().cpu(),
                 check_head.classifier.bias.detach().double().cpu())
theirs = objective(solver.coef_, solver.intercept_)
gap = (ours - theirs) / theirs
solver_check = show_finding(
    "Our head's objective and scikit-learn's differ by"
    f" {abs(gap):.2%} of its value ({'ours' if gap > 0 else 'theirs'} the"
    " higher): the two solvers land on the same optimum"
    + (" up to that gap." if abs(gap) > 1e-4 else "."),
    details=[
        f"head: mean-pooled layer {L}, draw {SEEDS[0]}, {check_record.choice};"
        f" objective (mean cross-entropy + L2 penalty) ours {ours:.6f},"
        f" scikit-learn {theirs:.6f}",
        f"scikit-learn ran {int(np.max(solver.n_iter_))} iterations; ours"
        f" {check_record.steps} ({check_record.status})",
        "the gradient tolerance bounds how far from the optimum a converged"
        " head can stop; where the training data are fitted almost perfectly,"
        " the objective itself is tiny and a small absolute gap is a larger"
        " share of it",
    ],
)

# %% [markdown]
# ## Which layer carries the class?
#
# A *linear probe* is the same head trained on the features of one layer. If a linear map can
# read the intent off layer $l$, the information is there in linear form. The probes above cover
# every layer with both poolings, on the smaller training sets, one set per draw.
#
# Which layer is best, and which fall below it? Every layer is compared with the best one **paired**
# on the same test items and draws (lesson 07 introduced paired comparisons), allowing for the
# many comparisons made at once, and for the best being picked on the same items (its own score is
# then optimistic). The plain answer comes first; how we know sits in the folded block beneath it.

# %% mystnb={"figure": {"caption": "BANKING77 test accuracy of a linear probe on each layer's `[CLS]` or mean-pooled vector (emb = embeddings), smaller few-shot training sets: lines are means over the draws, bands 95 % intervals resampling draws and test items, dotted line chance. Compare the two poolings layer by layer; the paired comparisons below, not the bands, say which layers fall below the best.", "name": "fig-10-probe-per-layer"}}
from helpers.classify.findings import peak_finding, reference_finding
from helpers.classify.plots import plot_probe_curves

probes = {
    pooling: [run.estimate for run in runs]
    for pooling, runs in probe_runs.items()
}
labels = {"cls": "[CLS]", "mean": "mean-pooled"}
ax = plot_probe_curves(
    {labels[p]: probes[p] for p in probes},
    chance=1 / C,
    intervals={
        labels[p]: [run.interval() for run in runs]
        for p, runs in probe_runs.items()
    },
    title=(
        f"linear-probe test accuracy per layer, {BENCH['name']},"
        f" {SHOTS[0]} per {ONE}\n"
    ),
    bands="95% interval, draws and test items resampled",
)
plt.show()

# %%
from helpers.common.tables import show_table

show_table(
    [
        {"layer": "emb" if l == 0 else l}
        | {
            f"{labels[p]} probe": (
                f"{100 * probe_runs[p][l].estimate:.1f} %"
                + (
                    " ("
                    + probe_runs[p][l].spread_summary("draws").split(", ")[1]
                    + ")"
                    if len(SEEDS) > 1
                    else ""
                )
            )
            for p in ("cls", "mean")
        }
        for l in range(L + 1)
    ],
    index="layer",
    title=(
        f"linear-probe test accuracy per layer, mean of {len(SEEDS)} draws"
        f" x {len(test):,} test {ITEMS} (in brackets: the range of the"
        " draws' own accuracies)"
    ),
)
peak_text = {}
for pooling, runs in probe_runs.items():
    sentence, details = peak_finding(runs, labels[pooling])
    peak_text[pooling] = sentence
    show_finding(sentence, details)
bag_sentence, bag_details = reference_finding(
    probe_runs["mean"], 0, "Mean-pooled", "the layer-0 bag of words"
)
if bag_sentence is not None:
    show_finding(bag_sentence, bag_details)

# %% [markdown]
# Read the table against the plot: the shaded bands are each layer's own interval; the sentences
# come from comparing layers on the same test items. At layer 0 the `[CLS]` vector is the same for
# every sentence (token, position and segment embedding of `[CLS]`, no context yet), so its probe
# can only guess; the mean of the embeddings already sees the words -- a bag of words, which on its
# own gets a long way on intents. Whether the first layers add to it or, mixing every token with
# its neighbours, at first blur the words a bag of words reads, is what the comparison with layer 0
# above says for this model.
#
# On the bundled checkpoint, mean pooling ahead of `[CLS]` is **what the checkpoint leads us to
# expect**, not a law of BERT (the cell below says which checkpoint ran): all-MiniLM-L6-v2 was
# trained (contrastively, on sentence pairs) to make the *mean* of its last-layer token vectors a
# sentence embedding, and nothing in that objective asks the `[CLS]` vector to summarise the
# sentence. A plain BERT checkpoint (masked-LM and next-sentence pre-training, where `[CLS]` fed
# the next-sentence head through the pooler) can rank the two poolings and the layers
# differently; Reimers & Gurevych (2019, Table 1; BERT-base without fine-tuning, semantic
# similarity rather than a trained probe) found its `[CLS]` vector far behind the mean of its
# output vectors. To see it here, rerun the lesson with `MODEL = "bert-base-uncased"` (online).
# The Chinese m3e-small (`"bundled-zh"`) is a sentence encoder too, trained on Chinese sentence
# pairs; what holds for all-MiniLM-L6-v2 need not hold for it, and the verdicts above, generated
# from the run, say how its two poolings and its layers compare on THUCNews.

# %%
print(
    paper.caveat(
        "the ranking of mean pooling against [CLS], the best layer and the"
        " unused pooler"
    )
)

# %% [markdown]
# ## How good is the frozen probe?
#
# The headline number reads the **mean-pooled last layer**, the sentence vector the bundled
# checkpoint was trained to produce. On the smaller training sets its heads are the layer-$L$
# mean-pooled probes above; on the larger ones, the heads trained beside them. Each accuracy
# averages the draws and the test items, and the range over the draws is reported as such.

# %%
from helpers.classify.comparisons import SeededAccuracy, paired_comparison
from helpers.classify.findings import BANKING77_PUBLISHED
from helpers.classify.findings import show_verdict

# [draws, test utterances]: the layer-L mean-pooled probes above
preds = {SHOTS[0]: probe_preds["mean"][L]}
preds |= {k: larger[k].predictions for k in SHOTS[1:]}
frozen = {k: SeededAccuracy(preds[k] == y_test, SEEDS) for k in SHOTS}

frozen_table = show_table(
    [
        {
            f"train per {ONE}": k,
            "accuracy": f"{100 * frozen[k].estimate:.1f} %",
            "draws x test items": f"{len(frozen[k].seeds)} x"
            f" {frozen[k].n_items}",
            "spread": frozen[k].spread_summary("draws"),
        }
        for k in SHOTS
    ],
    index=f"train per {ONE}",
    title="frozen BERT, mean-pooled layer L, one linear head per draw",
)
# is the benchmark below its ceiling at this setting? (room to compare)
fewest = frozen[SHOTS[0]].interval()
room_claim = show_finding(
    f"With {SHOTS[0]} per {ONE}, the frozen probe gets"
    f" {100 * fewest.estimate:.1f} % of {BENCH['name']}'s test {ITEMS}: "
    + ("below the ceiling, with room for layers and strategies to differ."
       if fewest.high < 0.99 else
       "at or next to the ceiling: this setting can hardly tell them apart."
       if fewest.estimate >= 0.97 else
       "below the ceiling by its estimate, though with so few draws and"
       f" items its interval reaches {100 * fewest.high:.0f} %."),
    details=[f"accuracy {SHOTS[0]} per {ONE}:"
             f" {frozen[SHOTS[0]].describe('draws')}"],
)
more, fewer = f"{SHOTS[1]} per {ONE}", f"{SHOTS[0]} per {ONE}"
shots_claim = show_verdict(
    paired_comparison(frozen[SHOTS[1]], frozen[SHOTS[0]]).verdict(
        f"a head trained on {more}", f"one trained on {fewer}"
    ),
    more="beats",
    less="falls below",
    measure="is the better head",
    values=(f"{100 * frozen[SHOTS[1]].estimate:.1f} %",
            f"{100 * frozen[SHOTS[0]].estimate:.1f} %"),
    extra=[f"accuracy {more}: {frozen[SHOTS[1]].describe('draws')}",
           f"accuracy {fewer}: {frozen[SHOTS[0]].describe('draws')}"],
)

# %% [markdown]
# For scale, the paper's own numbers on the same data set -- **different models**, so they frame
# ours rather than compete with it: Casanueva et al. (2020, Table 3) trained classifiers on fixed
# USE and ConveRT sentence vectors ("dual sentence encoders", like the bundled model trained to
# produce sentence vectors) and fine-tuned the whole of BERT-Large.
# On THUCNews (a Chinese model) they do not apply, and the cell shows this run's numbers alone.

# %%
# the paper's numbers are BANKING77's: a run on another benchmark shows its
# own numbers alone
on_paper = BENCH["name"] == "BANKING77"
comparable = on_paper and C == pool_all.num_classes and TEST_PER_INTENT is None
published = {}
# shots None: the full training data
for shots, system, value in BANKING77_PUBLISHED if on_paper else ():
    published.setdefault(shots, []).append(f"{value:.2f}% {system}")
rows = []
# our settings, then the paper's other ones
for k in dict.fromkeys([*SHOTS, *published]):
    ours = frozen[k].interval().percent() if k in frozen else "not run here"
    label = "full training data" if k is None else f"{k} per {ONE}"
    theirs = "; ".join(published.get(k, ["not quoted here"]))
    rows.append({"training data": label, "this run: frozen, linear head": ours}
                | ({"Casanueva et al. 2020, Table 3 (different model)": theirs}
                   if on_paper else {}))
paper_table = show_table(rows, index="training data", title=(
    f"{BENCH['name']} test accuracy, this run (in brackets: its uncertainty,"
    " from resampling the draws and the test items)"
    + (" and the paper's" if on_paper else "")))
print(
    "the paper's setting: all 77 intents, the full test set" if comparable
    else f"not the paper's setting: {C} intents, {len(test)} test utterances"
    f" (BUDGET = {budget.name!r})" if on_paper
    else f"Casanueva et al.'s numbers are for English BANKING77, not"
    f" {BENCH['name']}: this run's numbers stand alone"
)

# %% [markdown]
# ## Where does it go wrong?
#
# With 77 classes a full confusion matrix is a 77 × 77 grid of mostly zeros. Two readable views
# instead, from the heads of the smaller training sets, counted over all draws (each test
# utterance once per draw): the most frequent (true → predicted) confusions
# (`top_confusions`), and the confusion matrix restricted to the intents in them
# (`confusion_subset`, both in `helpers/classify/confusions.py`), with one last column for
# predictions of any other intent, so that every row keeps its total.

# %%
from helpers.classify.confusions import (confusion_matrix, confusion_subset,
                                         top_confusions)
from helpers.classify.plots import plot_confusion

# summed over the draws
cm = confusion_matrix(test.labels, preds[SHOTS[0]].cpu().numpy(), C)
per_intent = cm.sum(1)
top = top_confusions(cm, k=budget.pick(10, 5))
print(
    f"{cm.sum() - cm.trace():,} of {cm.sum():,} predictions wrong"
    f" ({len(SEEDS)} draws x {len(test):,} test {ITEMS}, {SHOTS[0]} per"
    f" {ONE}); the most frequent confusions:"
)
for i, j, n in top:
    print(
        f"  {test.names[i]:<34} -> {test.names[j]:<34} {n:>3} of"
        f" {per_intent[i]} ({n / per_intent[i]:.0%})"
    )
if not top:
    print("  none: every prediction is right")

# %% mystnb={"figure": {"caption": "Test predictions of the mean-pooled last-layer heads (smaller training sets), counted over all draws: true intent in rows, predicted in columns, for the intents of the most frequent confusions, plus a column for any other intent so rows keep their totals. Find intent pairs that swap off the diagonal, and rows that leak to the last column.", "name": "fig-10-confusions"}}
if top:
    # every intent of a top confusion, once
    classes = list(dict.fromkeys(c for i, j, _ in top for c in (i, j)))
    # long intent names on two lines, so the matrix fits the page
    names = [textwrap.fill(test.names[c].replace("_", " "), 24)
             for c in classes]
    ax = plot_confusion(
        confusion_subset(cm, classes),
        names,
        col_names=names + [f"any other {ONE}"],
        label=f"test predictions ({len(SEEDS)} draws)",
        title=(
            f"confusions among the {ONE}s in the {len(top)} most"
            f" frequent confusions\n({SHOTS[0]} per {ONE}, mean-pooled last"
            f" layer, counted over {len(SEEDS)} draws)"
        ),
    )
    ax.set_xlabel(f"predicted {ONE}")
    ax.set_ylabel(f"true {ONE}")
    plt.show()

# %% [markdown]
# ## Combining layers
#
# Devlin et al. (2019), *BERT: Pre-training of Deep Bidirectional Transformers for Language
# Understanding*, Table 7, compared such choices in a **different setting**: a feature-based
# token tagger for named-entity recognition (CoNLL-2003 NER, dev F1) on **BERT-base**
# (12 layers, 768 wide), not sentence classification on this model. Published numbers, not
# measured here:
#
# | features (BERT-base, CoNLL-2003 NER, Devlin et al. 2019 Table 7) | dev F1 |
# |---|---|
# | embeddings | 91.0 |
# | second-to-last hidden | 95.6 |
# | last hidden | 94.9 |
# | weighted sum of last four hidden | 95.9 |
# | concat of last four hidden | 96.1 |
# | weighted sum of all 12 layers | 95.5 |
#
# We run the same kind of comparison live, on BANKING77 with the smaller training sets, one run
# per draw. The three single-layer strategies are the probes of those layers above (the same
# heads); the two combinations are the heads trained beside them (`strategy_draws` in
# `helpers/classify/strategies.py`), each converged by the same criterion (the table above). The
# learned weighted sum trains one scalar per layer, $\alpha = \mathrm{softmax}(s)$, with the head:
# $x = \sum_{l=0}^{L} \alpha_l\, h^{(l)}_{[CLS]}$ (each layer standardized first), from equal weights.
# What the weights mean depends on the penalty as much as on the layers: the head's L2 penalty
# alone makes one layer cheaper than a mix (a mix of standardized layers has a smaller spread, so
# the head would need larger weights), which drives the weights into a corner whatever the layers
# hold. So the mix gets its own pull toward equal weights, $\frac{\mu}{2}\lVert s - \bar s\rVert^2$,
# and the dev split chooses the head's L2 strength (with no pull), then $\mu$ at that strength
# (`MIX_GRID`, no pull included; each pulled fit starts from the unpulled one). The weights then say which layers help on held-out utterances at the strength
# that predicts best, not where a penalty pushes them.

# %% mystnb={"figure": {"caption": "Top: test accuracy of five sentence-vector strategies (smaller training sets): diamond the mean, dots single draws, bar the 95 % interval over draws and test items; the x-axis is zoomed, as labelled. Bottom: the converged weighted-sum heads' learned weight per layer, mean over draws with min\u2013max whiskers; dashed, the uniform weight they started from. Compare the layers with it.", "name": "fig-10-strategies"}}
from helpers.classify.plots import plot_layer_weights, plot_strategy_accuracies

from_probes = {
    "last layer [CLS]": probe_runs["cls"][L],
    "second-to-last [CLS]": probe_runs["cls"][max(L - 1, 0)],
    "mean pooling, last layer": probe_runs["mean"][L],
}
# in the order of STRATEGIES
strategies = {
    name: (from_probes | combined.accuracy)[name] for name in STRATEGIES
}
# one above the other: side by side, the pair is wider than the page
fig, (ax_acc, ax_w) = plt.subplots(
    2, 1, figsize=(6.5, 7.4), height_ratios=[1.2, 1]
)
plot_strategy_accuracies(strategies, ax=ax_acc, chance=1 / C, unit="draw")
plot_layer_weights(combined.layer_weights, ax=ax_w)
plt.show()

# %%
from helpers.classify.findings import layer_weights_finding, ranking_finding

rows = []
for name, acc in strategies.items():
    spread = acc.seed_spread()  # None with one draw: no spread to show
    pct = [100 * v for v in spread.values] if spread else []
    rows.append({
        "strategy": name,
        "test accuracy": f"{100 * acc.estimate:.1f} %",
        "SD over draws": f"{100 * spread.sd:.1f} pt" if spread else "-",
        "range over draws": f"{min(pct):.1f}-{max(pct):.1f}%" if pct else "-",
    })
strategy_table = show_table(rows, index="strategy", title=(
    f"test accuracy per strategy, {SHOTS[0]} per {ONE} ({len(SEEDS)}"
    f" draws x {len(test)} test items)"))
strategy_sentence, strategy_details = ranking_finding(strategies)
show_finding(strategy_sentence, strategy_details)
weights_sentence, weights_details = layer_weights_finding(
    combined.layer_weights
)
weights_claim = show_finding(weights_sentence, weights_details)

# %% [markdown]
# Compare the ranking with the published table: on a different task (and, unless the first cell
# printed "same model family", a different model and training objective) the order can differ, and
# the paired comparisons say which gaps this test set can resolve at all. That is exactly why the
# choice of layer is worth measuring on your own data.
#
# ## Claims tested
#
# Each row: a claim often repeated, what this run measured (the middle column is generated from
# the numbers, so it stays true for any model or data; the folded block under the table holds the
# comparisons behind it), and the published finding with the paper and the model it was measured
# on.

# %%
from IPython.display import Markdown, display

from helpers.classify.comparisons import claims_markdown
from helpers.classify.findings import PUBLISHED_07
from helpers.common.claims import Claim, claim
from helpers.common.stats import quartiles

q25, med, q75 = quartiles(
    torch.nn.functional.cosine_similarity(
        feats_test.pooler, feats_test.cls[L], dim=-1
    )
)
best_k = max(SHOTS, key=lambda k: frozen[k].estimate)
cls_vs_mean = claim(
    paired_comparison(
        strategies["last layer [CLS]"], strategies["mean pooling, last layer"]
    ).verdict("last-layer [CLS]", "mean pooling"),
    more="beats", less="falls below", measure=f"reads the {ONE} better",
    values=(f"{100 * strategies['last layer [CLS]'].estimate:.1f} %",
            f"{100 * strategies['mean pooling, last layer'].estimate:.1f} %"),
    units=f"{len(SEEDS)} draws of {len(test):,} test {ITEMS}",
)
combine_family = 2
combine = {
    name: claim(
        paired_comparison(
            strategies[name], strategies["last layer [CLS]"]
        ).verdict(name, "the last layer's [CLS]", family=combine_family),
        more="beats", less="falls below", measure=f"reads the {ONE} better",
        values=(f"{100 * strategies[name].estimate:.1f} %",
                f"{100 * strategies['last layer [CLS]'].estimate:.1f} %"),
        units=f"{len(SEEDS)} draws of {len(test):,} test {ITEMS}",
    )
    for name in ("concat last four [CLS]", "weighted sum, all layers [CLS]")
}
live = {
    "fewshot": (
        f"{C} {BENCH['name']} {ONE}s, {len(test):,} test {ITEMS},"
        f" {len(SEEDS)} draws"
        " each; a head on the mean-pooled last layer gets "
        + " and ".join(
            f"{100 * frozen[k].estimate:.1f} % with {k} per {ONE}"
            for k in SHOTS
        )
        + "."
    ),
    "pooler": (
        f"Over {len(test):,} {BENCH['name']} test {ITEMS} the cosine between"
        " the"
        f" last-layer [CLS] vector and pooler_output has median {med:.2f}"
        f" (half of them between {q25:.2f} and {q75:.2f})."
    ),
    "cls": cls_vs_mean.sentence[0].upper() + cls_vs_mean.sentence[1:],
    "last": " ".join(peak_text.values()),
    "combine": " ".join(
        c.sentence[0].upper() + c.sentence[1:] for c in combine.values()
    ),
}
# the paper's BANKING77 numbers stay off a run on another benchmark
words = {"fewshot": "Casanueva et al. 2020, Table 3 (English BANKING77;"
         " different models): fixed sentence encoders with a linear"
         " classifier were strong at 10 examples per intent; their numbers"
         f" are BANKING77's, not shown beside {BENCH['name']}"}
rows = [
    (claim_text, live[key],
     published if language == "en" else words.get(key, published))
    for key, (claim_text, published) in PUBLISHED_07.items()
]
display(
    Markdown(
        claims_markdown(
            rows,
            header=(
                "popular claim",
                "what this model shows (this run)",
                (
                    "published finding (paper, model); against BERT-base:"
                    f" {paper.label}"
                    # the papers measured English data: say so on another
                    + ("" if language == "en" else
                       f"; all on English data, not {BENCH['name']}")
                ),
            ),
        )
    )
)
display(Claim(
    "",
    [
        f"[CLS] vs mean pooling: {cls_vs_mean.details[0]}",
        *(f"{name}: {c.details[0]}" for name, c in combine.items()),
        *(
            f"accuracy {k} per {ONE}: {frozen[k].describe('draws')}"
            for k in SHOTS
        ),
    ],
    summary="How we know the middle column",
))

# %% [markdown]
# ## Summary
#
# * A task at the ceiling (the course's own intents) cannot compare anything. On the benchmark
#   (BANKING77's 77 intents, or THUCNews's 10 topics with a Chinese model) with 10 or 30 training
#   examples per class, the sentence under "How good is the frozen probe?" says whether the
#   frozen probe stays below it (for BANKING77, in a table beside the paper's numbers for
#   different models), and the spread over few-shot draws is part of every comparison.
# * Every head of this lesson -- probes, larger-set heads, concatenated and weighted layers -- met
#   the same convergence criterion or says it did not (the status table); an independent solver
#   reached the same optimum.
# * Linear probes per layer show where the intent becomes linearly readable; `[CLS]` and mean
#   pooling can behave very differently (and this checkpoint was trained for mean pooling), and
#   combinations of layers are cheap to try. Classifiers tested on the same items are compared
#   item by item, allowing for the number of comparisons, and a gap the test set cannot resolve is
#   reported as "we cannot tell", never "no difference".
#
# ## Exercises
#
# Each exercise starts with its rating: how hard it is, how much it matters for
# the rest of the course, and about how long it takes. The checkers grade your
# answer and give a hint when it is not right yet; they never print the answer.

# %%
from helpers.exercises.lesson10 import check_exercise_1, check_exercise_2

# %% [markdown]
# ### Exercise 1: predict, then measure — the best mean-pooled layer
#
# Difficulty ●●○○○ · Importance ●●●○○ · ~10 min
#
# **First predict**, without scrolling back to the probe figure: which layer's
# **mean-pooled** features give the best BANKING77 probe accuracy? Write the
# layer number (0 = embeddings) in `prediction_1`.
#
# **Then measure** it: give the layer as an int, computed from `probes`. The
# checker grades the measurement, only comments on the prediction, and tells
# you which layers the paired comparisons cannot place below the best.

# %%
prediction_1 = None  # an int, written before measuring
best_mean_layer = None  # your answer here: an int, computed from probes
check_exercise_1(best_mean_layer, probes, runs=probe_runs["mean"],
                 prediction=prediction_1)

# %% [markdown]
# ### Exercise 2: a confusion matrix by hand
#
# Difficulty ●●○○○ · Importance ●●●○○ · ~10 min
#
# Compute the confusion matrix of the first draw's head (`preds[SHOTS[0]][0]`,
# the predicted ids on the test set) yourself: an array of counts with
# `cm[true, predicted]`, `C` rows and columns.

# %%
my_cm = None  # your array here
check_exercise_2(my_cm, test.labels, preds[SHOTS[0]][0].tolist(), C)

