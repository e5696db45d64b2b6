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
# # 14 — What each layer knows, and what fine-tuning changes
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/bert-layer-by-layer/bert-layer-by-layer/blob/main/lessons/14_what_layers_know.ipynb)
#
# Names and counting ($L, H, A, d, I, n$; layers from 1, heads from 0): see the [conventions](00_big_picture.ipynb#conventions) box of lesson 00.
#
# Two tables circulate widely. One says *"part of speech lives in layers 1–3, entities in
# 4–8, sentence meaning in the last four"*; the other says *"freeze the lower layers, they
# hold general features"* (lesson 11 froze the lower half). This lesson measures both on the
# loaded model, the way the research does it:
#
# 1. **probes with control tasks**: a linear classifier per layer reads a word's part of
#    speech or entity type off its vector; a control task tells how much of that the probe
#    merely memorised;
# 2. **what fine-tuning changes**: the same layers before and after fine-tuning on the
#    intent data, compared with linear CKA and the relative change of their weights, and
#    tested by an intervention: the pre-trained lower half put back into the fine-tuned model;
# 3. **the masked-LM lens**: BERT's own word-prediction head applied to every layer, when
#    the checkpoint has one.
#
# Every number below is computed in this run, with an interval; the prose says how to read
# them, never what they are. The first cell installs the course on Google Colab; on your own
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
# `MODEL` names the checkpoint (`None`: the course chooses). `SENTENCE` is the sentence whose
# words the trained probes tag, layer by layer, and in which the masked-LM lens hides a word.
#
# `BUDGET` sizes the expensive work (`None`: the course chooses, `"full"` on the bundled model; `"quick"`: fewer
# test items and seeds, for a fast check or a large model on a CPU; `choose_budget` in `helpers/common/budget.py`).

# %% tags=["parameters"]
MODEL = None
SENTENCE = "She will book a table at the new place near the river."
# None: the course chooses; "full" or "quick" (fewer items and seeds)
BUDGET = None

# %%
import time

import matplotlib.pyplot as plt
import torch

from helpers.common.budget import choose_budget
from helpers.model.loading import load_model
from helpers.model.trace import trace_text

torch.manual_seed(0)
loaded = load_model(MODEL)
tokenizer, model = loaded
from helpers.common.language import model_language

language = model_language(tokenizer, lesson="14")  # the data follow the model
budget = choose_budget(BUDGET, model)
L, H = model.config.num_hidden_layers, model.config.hidden_size
trace = trace_text(tokenizer, model, SENTENCE)
print(
    f"{L} layers, hidden size {H}; SENTENCE has {len(trace.words())} words,"
    f" {trace.seq_len} tokens"
)

# %% mystnb={"figure": {"caption": "The course's map of BERT, from tokens through the repeated encoder layer and the pooler to a task head. This lesson probes what each encoder layer holds and fine-tunes the layers under a classification head, so the encoder layer and the head are framed in orange and marked \"you are here\".", "name": "fig-14-you-are-here"}}
# where this lesson sits on lesson 00's map (`you_are_here`, in
# helpers/architecture/plots.py)
from helpers.architecture.plots import LESSON_PARTS, you_are_here

you_are_here(model.config, LESSON_PARTS["14"]);

# %% [markdown]
# ## 1. The data: sentences and a tagger's labels
#
# `data/pos/` holds a few hundred English sentences written for this course, each word labelled
# by a real tagger, spaCy's small English pipeline (`data/pos/build_pos.py` ran it once; the
# course does not need spaCy). Two labels per word interest us:
#
# * its **Universal POS tag** (17 tags: `NOUN`, `VERB`, `ADP`, ...);
# * for the words inside a named entity, the entity's **type**, grouped into seven classes
#   (`PERSON`, `GROUP`, `ORG`, `PLACE`, `TIME`, `NUMBER`, `OTHER`; `ENTITY_GROUPS` in
#   `helpers/probes/features.py`). As in the entity task of Tenney et al.'s edge probing, the
#   span is given and only its type is asked.
#
# They are a tagger's labels, not gold annotations (`data/pos/README.md` gives the tagger,
# its version and its own accuracy). Many sentences use a word in two roles ("*book* a table"
# / "read the *book*"), so the word alone does not decide its tag.
#
# With a Chinese model the data follow it (`pos_sentences_for`, `helpers/probes/data.py`): 300
# sentences of the People's Daily of January 1998, segmented and tagged **by people** at Peking
# University (`data/pku_pos/README.md`; installed at set-up, not copied, for its licence), each
# PKU tag mapped to its Universal POS tag, and the entity types read off the proper-name tags
# (person, place, organisation, time).

# %%
from helpers.model.tokens import is_unknown
from helpers.probes.data import pos_sentences_for

# quick: the first 160 sentences, so that the test suite runs in seconds
sentences = pos_sentences_for(language)[: budget.pick(None, 160)]
n_words = sum(map(len, sentences))
print(f"{len(sentences)} sentences, {n_words} words; labels by"
      f" {sentences[0].tagger}")
example = sentences[1]
print(" ".join(f"{w}/{t}" for w, t in zip(example.words, example.upos)))
unknown = sum(is_unknown(tokenizer, w) for s in sentences for w in s.words)
print(f"words this tokenizer maps (partly) to {tokenizer.unk_token}:"
      f" {unknown / n_words:.1%}")

# %% [markdown]
# ## 2. A vector per word, at every layer
#
# WordPiece may split a word into several tokens; like most probing work we represent a word
# by its **first** WordPiece (a Chinese BERT reads a word of several characters as several
# tokens, one per character: its first character): for word $w$ whose first token sits at
# position $i_w$,
#
# $$x^{(l)}_w = h^{(l)}_{i_w}, \qquad l = 0 \,(\text{embeddings}), 1, \dots, L .$$
#
# `extract_word_features` (in `helpers/probes/features.py`) runs each batch of sentences once,
# pre-split into the tagger's words (`is_split_into_words=True`), and keeps $x^{(l)}_w$ for
# every layer. We split **by sentence**: a quarter of the sentences are for testing only, so
# no test word is read in a context the probe has seen.

# %%
from helpers.probes.compute import extract_word_features, split_sentences

t0 = time.perf_counter()
features = extract_word_features(tokenizer, model, sentences)
train_ids, test_ids = split_sentences(len(sentences), 0.25, seed=0)
print(
    f"word vectors {tuple(features.vectors.shape)} = [layers+1, words, H] in"
    f" {time.perf_counter() - t0:.1f} s; {len(train_ids)} train /"
    f" {len(test_ids)} test sentences"
)

# %% [markdown]
# ## 3. A linear probe per layer, and a control task
#
# A **linear probe** for layer $l$ is a softmax classifier on the standardised word vector,
#
# $$p(y \mid w) = \mathrm{softmax}\!\left(W_l\, \frac{x^{(l)}_w - \mu_l}{\sigma_l} + b_l\right),$$
#
# trained with cross-entropy on the training words. High test accuracy says the tag can be
# read off layer $l$ *by a linear map* -- but a probe with $H$ inputs per class (hundreds)
# can also memorise which word gets which tag. Hewitt & Liang (2019, *Designing and
# Interpreting Probes with Control Tasks*, measured on ELMo) made this measurable with a
# **control task**: every word *type* $v$ gets a random label $c(v)$, drawn once from the
# empirical label distribution and fixed for all its occurrences. Only memorising word types
# can solve it, so
#
# $$\text{selectivity}_l = \text{accuracy}_l(\text{task}) - \text{accuracy}_l(\text{control})$$
#
# is the part of the accuracy that the representation, not the probe's memory, explains.
# (They found ELMo's first layer slightly more accurate for POS than its second, but the
# second far more selective.) A few test words with their tag and one control label:

# %%
from helpers.common.data import UPOS_TAGS
from helpers.probes.compute import control_labels

upos = features.labels(sentences, "upos")
control = control_labels(features.words, upos, len(UPOS_TAGS), seed=0)
# words of the first test sentence
in_test = (features.sentence == test_ids[0]).nonzero().flatten()
for i in in_test[:8].tolist():
    print(f"{features.words[i]:>12}  task {UPOS_TAGS[upos[i]]:<6} control"
          f" {UPOS_TAGS[control[i]]}")
same_type = {w.lower(): int(c) for w, c in zip(features.words, control)}
assert all(
    same_type[w.lower()] == int(c) for w, c in zip(features.words, control)
), "one control label per word type"

# %% [markdown]
# `word_probe_report` (in `helpers/probes/probing.py`) trains the task probe and, for each of
# three seeds, a control probe (each seed draws its own control labels) -- for all $L+1$ layers
# at once, as one batched matrix product, by the course's training contract
# (`helpers/common/training.py`, lesson 10): a fifth of the training sentences is a **dev
# split**, which chooses the task probe's L2 strength, **one for all layers** (the lowest dev
# loss summed over the layers: a strength that switched between layers would put its own dips
# into the profile); the control probes take the task's (as Hewitt & Liang do: a control task
# cannot generalise to unseen word types, so its own dev loss would always pick the strongest
# penalty, and selectivity would measure the penalty, not the representation). A strength at
# either end of the grid is flagged in the table. Every probe starts from zero and runs full-batch L-BFGS
# **to the same convergence criterion**; the table prints the training accuracy of both. The
# task probe has one optimum (the same for every seed); the control probes differ by seed.
# Each test number is the accuracy on the test words (control and selectivity averaged over
# the seeds), in brackets its uncertainty from resampling **test sentences** (their words are
# not independent). `word_probe_table` and `probe_status_finding` (`helpers/probes/findings.py`) lay out the
# tables and the convergence finding.

# %%
from helpers.common.claims import show_finding
from helpers.common.tables import show_table
from helpers.probes.compute import (
    probe_status_finding,
    word_probe_report,
    word_probe_table,
)

seeds = list(budget.pick((0, 1, 2), (0, 1)))  # control-task seeds
reports = {
    task: word_probe_report(
        features, sentences, task, train_ids, test_ids, seeds=seeds
    )
    for task in ("upos", "entity")
}
for r in reports.values():
    rows, title = word_probe_table(r)
    show_table(rows, index="layer", title=title)
probe_records = [rec for r in reports.values() for rec in r.records]
probe_status = show_finding(*probe_status_finding(probe_records))

# %% mystnb={"figure": {"caption": "Word-level linear probes per layer (emb = embeddings) for part of speech and entity type, each trained to convergence. Left: test accuracy of the task probe and of its control task (a random label per word type); dotted, the most-frequent-tag rate. Right: selectivity, task minus control. Lines: the task probe and the mean of the control seeds; bands: 95 % intervals from resampling test sentences. Compare where accuracy and selectivity peak.", "name": "fig-14-probes"}}
from helpers.probes.plots import plot_probe_reports

axes = plot_probe_reports(reports.values())
plt.show()

# %% [markdown]
# Read the bands, not just the lines -- but two bands that overlap do not yet mean two layers
# are tied. Every layer is tested on the **same** words, and a word that is hard for one layer
# tends to be hard for the next, so section 4 compares layers **paired**: per word, the outcome
# at one layer minus the outcome at the other, with the test sentences resampled once for
# both. That difference can exclude 0 while the two bands overlap. The control line shows how
# much a probe gets from memorising word types alone, so it is high where a word's vector
# still identifies its word type -- at the embedding layer the vector is just the word's own
# embedding plus position and segment.
#
# ## 4. Where does each kind of knowledge peak?
#
# Tenney, Das & Pavlick (2019, *BERT Rediscovers the Classical NLP Pipeline*, ACL) probed the
# stock BERT-base and BERT-large models (uncased) with *edge probing*, mixing all layers with
# learned weights. Their abstract finds the regions responsible for each step "in the expected
# sequence: POS tagging, parsing, NER, semantic roles, then coreference". On entities, their
# Section 4 ("Linguistic Patterns", measured on BERT-large) adds that "for entity labeling
# many examples are resolved in layer 1, but with a long tail thereafter". They saw the same
# order in BERT-base, with each task at about the same depth *relative to the top* of the
# two models (their Section 4, "Comparison of Encoders", and Appendix A.1). The popular table
# states its layer numbers for BERT-base (12 layers); `scaled_layers` maps them to this model
# by relative depth.
#
# For "sentence meaning" we probe intents: few-shot BANKING77 draws (THUCNews topics with a
# Chinese model, as in lesson 12) like lesson 11's (intents,
# training, dev and test utterances per seed: `lesson_setup` in
# `helpers/finetuning/study.py`), with **lesson 10's probe** itself -- a linear probe per
# layer on mean-pooled sentence vectors, fitted by the same contract on each draw
# (`sentence_probe_report`). Each draw has its own intents, so layers are compared paired
# within each draw, draw $i$ at one layer against draw $i$ at another. There is no control
# task (it is defined on word types).
#
# One more column guards against a probe that cannot discriminate: **gain over emb**, the best
# layer minus layer 0 (the embeddings, no context at all), paired on the same test items. A
# task the embeddings already solve cannot show where a layer adds anything. `peak_findings`
# (in `helpers/probes/findings.py`) builds the table and one finding per row.

# %%
from helpers.classify.compute import Draw, FeatureBank
from helpers.finetuning.compute import lesson_setup
from helpers.interventions.compute import lesson_benchmark
from helpers.probes.compute import (
    intent_probe_table,
    peak_findings,
    sentence_probe_report,
)

# the tasks (one draw of intents and utterances per seed), recipe and seeds
bench = lesson_benchmark(language)  # BANKING77 or THUCNews headlines
tasks, recipe, SEEDS = lesson_setup(budget, benchmark=bench)
print(f"{len(SEEDS)} draws, one per seed {SEEDS}; each: "
      f"{tasks[SEEDS[0]].describe()}")
texts = [t for task in tasks.values()
         for split in (task.train, task.dev, task.test) for t in split.texts]
intent_bank = FeatureBank(tokenizer, model, texts,
                          max_length=recipe.max_length, progress=False)
intent_draws = {
    s: Draw(intent_bank.take(t.train.texts), t.train.labels,
            intent_bank.take(t.dev.texts), t.dev.labels)
    for s, t in tasks.items()
}
intent_tests = {
    s: (intent_bank.take(t.test.texts), t.test.labels)
    for s, t in tasks.items()
}
reports["intent"] = sentence_probe_report(
    intent_draws, intent_tests, (f"{bench.classes}, drawn per seed",),
    pooling="mean", progress=False,
)
rows, title = intent_probe_table(reports["intent"], bench=bench)
show_table(rows, index="layer", title=title)
rows, title, findings = peak_findings(reports)
peak_table = show_table(rows, index="task", title=title)
for sentence, details in findings:
    show_finding(sentence, details=details)

# %% [markdown]
# Read the table row by row. "Best layer" has the highest test accuracy; "could be as high"
# lists every layer **not shown lower** than it: each other layer is compared with the best on
# the same test items, allowing for the many comparisons (the folded blocks hold the numbers)
# -- the data cannot rank those below the best. The verdict compares that whole set with the
# table's layers:
#
# * *not testable here* -- layer 0, the embeddings without any context, is among the tied
#   layers: the probe reads the label off the words alone about as well as off any layer, so
#   it cannot show that any layer adds it (a ceiling, not evidence for or against the row);
# * *peak inside the table's layers* -- the best layer and all layers tied with it are where
#   the table says: the popular row holds *on this model and data*;
# * *best layer inside, tied with layers outside* -- the data do not contradict the row, but
#   cannot confine the peak to it either;
# * *best layer outside, tied with a layer inside* / *peak outside the table's layers* -- the
#   row does not describe this model (the second more clearly).
#
# Even when the embeddings are told apart from the best, look at the room they leave ("gain
# over emb"): a task the embeddings nearly solve leaves only a few points for all the layers
# together, and its row then says little about where that knowledge is built. Intent can
# largely be read from which words occur, and the course's bundled checkpoint,
# all-MiniLM-L6-v2, was trained (by sentence-transformers) to mean-pool its last layer into
# sentence vectors; a task that needs composition (pairs that differ only in word order or
# negation) would test the "sentence meaning" row more sharply.
#
# What differs from Tenney et al.: one linear probe per single layer here versus mixing
# weights over all layers there, a few hundred sentences here versus OntoNotes there, and a
# tagger's labels here versus gold annotations there. With a Chinese model the labels are
# human annotations of another corpus, and PKU's tags mapped to the Universal ones.
#
# The trained part-of-speech probes can tag any sentence. Here is what the probe of each
# layer (seed 0) says about the words of `SENTENCE` (BERT's own word split); the table shows
# only the words on which the layers disagree, at most 12 (`layer_tag_table`).

# %%
from helpers.probes.compute import layer_tag_table, trace_word_vectors

words, vectors = trace_word_vectors(trace)
# [L+1, words], task probe of seed 0
tags = reports["upos"].probes.predict(vectors)[0]
line, rows, title = layer_tag_table(words, tags)
print(line)
if rows:
    disputed_table = show_table(rows, index="layer", title=title)

# %% [markdown]
# ## 5. What fine-tuning changes, layer by layer
#
# Now the **whole** loaded model fine-tuned on the intent task: lesson 11's "full fine-tuning"
# strategy on section 4's draws and seeds (`lesson_setup`), each run trained by the course's
# training contract (learning rate chosen on the dev split, early stopping after the warm-up,
# a status per run; `finetune_study` in `helpers/finetuning/study.py`; runs made before on this
# machine come from the disk cache, keyed by the model's weights and the draws, so a Chinese model
# never reads an English model's runs). The frozen probe is trained too. Then each layer is
# compared before and after.
#
# **Linear CKA** (Kornblith et al. 2019, *Similarity of Neural Network Representations
# Revisited*) compares two representations $X \in \mathbb{R}^{n \times H}$ (before) and
# $Y \in \mathbb{R}^{n \times H}$ (after) of the same $n$ tokens. With both column-centred,
#
# $$\mathrm{CKA}(X, Y) = \frac{\lVert Y^\top X \rVert_F^2}{\lVert X^\top X \rVert_F\, \lVert Y^\top Y \rVert_F} \in [0, 1].$$
#
# It is 1 when $Y$ is $X$ rotated and scaled, and it ignores those changes -- an orthogonal
# map or a uniform scale does not alter what a linear read-out can do. Each seed fine-tuned on
# its own intents, so all runs are compared on **one** set of utterances: BANKING77 test
# utterances of the intents the runs were fine-tuned on, a few per intent (`cka_set` below);
# our $n$ rows are their tokens (no `[CLS]`/`[SEP]`).
#
# The **relative weight change** of a layer takes all its parameters $\theta$ together:
# $\lVert \theta_{\text{after}} - \theta_{\text{before}} \rVert / \lVert \theta_{\text{before}} \rVert$
# (Frobenius norms; `relative_weight_change`). The word embeddings stay frozen in every run,
# so "emb" covers position and segment embeddings and their LayerNorm. `model_key` (lesson
# 11's hash of every weight, in `helpers/model/fingerprint.py`) checks that the loaded model
# itself was not changed: every run trains a copy.

# %%
import textwrap

from helpers.classify.comparisons import paired_comparison
from helpers.classify.findings import show_verdict
from helpers.common.training import status_summary
from helpers.finetuning.compute import FROZEN, FULL, finetune_study
from helpers.finetuning.compute import layer_change
from helpers.model.fingerprint import model_key

key_before = model_key(model)
study = finetune_study(tokenizer, model, tasks, (FROZEN, FULL),
                       config=recipe, keep_models=[FULL])
assert model_key(model) == key_before, "the loaded model must stay untouched"
runs = study.runs[FULL]
print(textwrap.fill(f"recipe: {recipe.describe()}", 110,
                    subsequent_indent="    "))
tuned_records = study.records(FULL)
cached = study.from_cache()
print(
    f"full fine-tuning, {len(SEEDS)} draws: learning rate"
    f" {runs[0].lr:g} (chosen on the first draw's dev split); steps"
    f" {[r.steps for r in runs]}, kept at {[r.best_step for r in runs]};"
    f" {status_summary(tuned_records)}"
    + (f" ({cached} of {2 * len(SEEDS)} runs read from the disk cache)"
       if cached else "")
)
tuned_acc, frozen_acc = study.accuracy(FULL), study.accuracy(FROZEN)
tuned_claim = show_verdict(
    paired_comparison(tuned_acc, frozen_acc).verdict(
        "the fine-tuned model", "the frozen probe"
    ),
    more="beats", less="falls below", measure="is more accurate",
    values=(f"{100 * tuned_acc.estimate:.1f} %",
            f"{100 * frozen_acc.estimate:.1f} %"),
    units=f"{len(SEEDS)} draws of {len(tasks[SEEDS[0]].test)} test"
    f" {bench.items}",
    extra=[
        f"fine-tuned, whole model: {tuned_acc.describe('draws')}",
        f"frozen model, probe on mean layer {L}:"
        f" {frozen_acc.describe('draws')}",
        *(r.describe() for r in tuned_records),
    ],
)
# one set of utterances for every run: test utterances of the intents the
# runs were fine-tuned on, a few per intent (about 200 in all)
union = sorted({i for t in tasks.values() for i in t.intents})
cka_set = bench.load("test").only(union).sample(
    max(1, 200 // len(union)), seed=0
)
change = layer_change(tokenizer, model, runs, cka_set,
                      max_length=recipe.max_length)
print(f"CKA measured on {len(cka_set)} test {bench.items} of the"
      f" {len(union)} {bench.classes} the runs were fine-tuned on")

# %% [markdown]
# Before reading the numbers, check `linear_cka` against an independent formula. Kornblith et
# al. define CKA through the Hilbert-Schmidt independence criterion of the two $n \times n$
# Gram matrices $K = XX^\top$, $M = YY^\top$ with the centring matrix $C = I - \frac{1}{n}\mathbf{1}\mathbf{1}^\top$:
# $\mathrm{HSIC}(K, M) = \mathrm{tr}(KCMC)/(n-1)^2$ and
# $\mathrm{CKA} = \mathrm{HSIC}(K, M) / \sqrt{\mathrm{HSIC}(K, K)\,\mathrm{HSIC}(M, M)}$. Since $C^2 = C$,
# $\mathrm{tr}(KCMC) = \sum_{ij} (CKC)_{ij} (CMC)_{ij}$, and $CGC$ is $G$ less its row and column means plus its mean.

# %%
from helpers.finetuning.compute import linear_cka

X, Y = change.before[L].double(), change.after[0][L].double()  # layer L
CGC = lambda G: G - G.mean(0) - G.mean(1, keepdim=True) + G.mean()  # noqa
hsic = lambda K, M: (CGC(K) * CGC(M)).sum() / (len(X) - 1) ** 2  # noqa
K, M = X @ X.T, Y @ Y.T
cka_hsic = hsic(K, M) / (hsic(K, K) * hsic(M, M)).sqrt()
assert (
    abs(cka_hsic.item() - linear_cka(X, Y)) < 1e-6
    and abs(linear_cka(X, Y) - change.cka[0, L].item()) < 1e-5
)
print(
    f"layer {L}, seed {SEEDS[0]}: CKA {linear_cka(X, Y):.4f} (feature space) ="
    f" {cka_hsic.item():.4f} (HSIC of Gram matrices)"
)

# %% [markdown]
# Now every layer. Two sources of spread matter. The **seeds** give the spread over the
# fine-tuning runs (reported as such: the range over the runs). The **test utterances** are a
# sample too, and the tokens of one utterance are not independent. `cka_jackknife` (in
# `helpers/finetuning/changes.py`) leaves one utterance out at a time -- all its tokens -- and
# recomputes the seed-averaged CKA of every layer, exactly, from sums of the Gram matrices
# over utterances, without running the model again; the spread of those values gives a 95 %
# interval (`jackknife_interval`). A bootstrap would draw utterances with replacement, and a
# repeated token matches its copy perfectly before and after, which pushes CKA up; leaving
# utterances out repeats nothing. The figure's CKA whiskers are the jackknife interval.
# `layer_change_table` (in `helpers/probes/findings.py`) lays out the table.

# %%
from helpers.common.stats import seeds_interval
from helpers.finetuning.compute import jackknife_interval
from helpers.probes.compute import layer_change_table

# [utterances, L+1]: seed-averaged CKA, one utterance left out per row
loo = change.cka_jackknife()
cka = [
    jackknife_interval(change.cka[:, l].mean(), loo[:, l])
    for l in range(L + 1)
]
moved = [seeds_interval(change.weight_change[:, l]) for l in range(L + 1)]
rows, title = layer_change_table(change, cka, moved, len(cka_set), bench.items)
show_table(rows, index="layer", title=title);

# %% mystnb={"figure": {"caption": "Per layer (emb = embeddings), what full fine-tuning changed. Top: linear CKA of pre-trained against fine-tuned token vectors of the test utterances, mean over seeds (1 = unchanged up to rotation and scale), whiskers 95 % jackknife intervals over utterances. Bottom: relative weight change $\\lVert \\Delta W \\rVert / \\lVert W \\rVert$, mean over seeds, whiskers the range. Compare where CKA falls with where weights moved.", "name": "fig-14-layer-change"}}
from helpers.finetuning.plots import plot_layer_change

axes = plot_layer_change(
    cka,
    moved,
    whiskers=(
        (
            f"95% jackknife interval over the {len(cka_set)} test"
            f" {bench.items}"
        ),
        f"range over {len(SEEDS)} seeds",
    ),
)
plt.show()

# %% [markdown]
# Merchant et al. (2020, *What Happens To BERT Embeddings During Fine-tuning?*, BERT-base,
# measured with probing, representational similarity analysis and layer ablations) found
# fine-tuning to be conservative: it mostly changes the **top** layers (with exceptions:
# fine-tuning for dependency parsing reconfigured most of the model). Does that hold here?
# `cka_depth_finding` (in `helpers/probes/findings.py`) compares the lowest and the highest
# encoder layer **paired** -- CKA of layer $L$ minus CKA of layer 1, with the same utterance
# left out of both. The same paired difference, allowing for the many pairs of layers, tells
# which layers the data cannot rank above the most changed one.

# %%
from helpers.probes.compute import cka_depth_finding

depth_finding = cka_depth_finding(cka, loo)  # None: a single encoder layer
if depth_finding:
    merchant_claim = show_finding(*depth_finding)
else:
    print(f"this model has {L} layer: nothing to compare")

# %% [markdown]
# A caution on the weight change: Adam scales every parameter's step by its own gradient
# history, so every weight moves by roughly the learning rate per step, whatever its gradient.
# $\lVert \Delta W \rVert$ then says more about the optimiser, the number of steps and the
# number of parameters than about how much a layer's *function* changed; CKA measures the
# representation itself. Which of the two norms drives the ratio here? The table below shows
# both per layer, and the line under it splits the change of
# $\log(\lVert \Delta W \rVert / \lVert W \rVert)$ from layer 1 to layer $L$ into the part from
# $\lVert \Delta W \rVert$ and the part from $\lVert W \rVert$ (`weight_norm_table`, in
# `helpers/probes/findings.py`).

# %%
from helpers.probes.compute import weight_norm_table

# ||W|| per layer, ||dW|| mean over the seeds
size, step = change.weight_norm, change.delta_norm.mean(0)
rows, title, split = weight_norm_table(size, step)
show_table(rows, index="layer", title=title)
if split:  # None: a single encoder layer
    print(split)

# %% [markdown]
# ### Whose change is it? The swap-in test
#
# CKA at layer $l$ compares $h^{(l)}$, which carries the changes of **every layer below** as
# well as layer $l$'s own: a layer can look changed only because its input changed. An
# intervention separates the two. Take each fine-tuned model, put the **pre-trained** weights
# of one layer back (`swap_in_correct` in `helpers/finetuning/changes.py`), keep everything
# else fine-tuned, and measure the test accuracy, paired with the fine-tuned model on the same
# utterances of the same draw. A drop says the rest of the fine-tuned model relies on that
# layer's *own* change; the $L + 1$ swaps are read together, allowing for the number of
# comparisons (`swap_in_table`, `swap_in_finding` in `helpers/probes/findings.py`). To keep the
# lesson short, each draw's swaps are scored on a fixed part of its test utterances
# (`SWAP_PER_INTENT` per intent).

# %%
from helpers.classify.comparisons import SeededAccuracy
from helpers.common.progress import progress
from helpers.finetuning.compute import classifier_correct, swap_in_correct
from helpers.probes.compute import swap_in_finding, swap_in_table

SWAP_PER_INTENT = budget.pick(20, None)  # None: every test utterance
swap_tests = {
    s: (t.test if SWAP_PER_INTENT is None
        else t.test.sample(SWAP_PER_INTENT, seed=s))
    for s, t in tasks.items()
}
tuned_swap = SeededAccuracy(torch.stack([
    classifier_correct(tokenizer, run.model, swap_tests[run.seed],
                       recipe.max_length)
    for run in runs
]), SEEDS)
swapped = [
    SeededAccuracy(torch.stack([
        swap_in_correct(tokenizer, model, run, swap_tests[run.seed], depth,
                        max_length=recipe.max_length)
        for run in runs
    ]), SEEDS)
    for depth in progress(range(L + 1), desc="swap-in, one layer at a time")
]
swap_verdicts = [
    paired_comparison(s, tuned_swap).verdict(
        f"with {'emb' if d == 0 else f'layer {d}'} put back", "fine-tuned",
        family=L + 1,
    )
    for d, s in enumerate(swapped)
]
rows, title = swap_in_table(swap_verdicts, bench.items)
show_table(rows, index="layer put back", title=title)
swap_claim = show_finding(*swap_in_finding(
    swap_verdicts, len(SEEDS), len(swap_tests[SEEDS[0]]), bench.items
))

# %% mystnb={"figure": {"caption": "Change in test accuracy (points) when one layer's pre-trained weights are put back into each fine-tuned model (emb = embeddings), paired with the fine-tuned model on the same utterances and draws: bar the mean over draws, whiskers the intervals the verdicts are read from (resampling draws and test items, corrected for the number of swaps). Look for whiskers that stay below the zero line.", "name": "fig-14-swap-in"}}
from helpers.finetuning.plots import plot_swap_in

ax = plot_swap_in([v.difference for v in swap_verdicts])
plt.show()

# %% [markdown]
# ## 6. Does the fine-tuned model still know parts of speech?
#
# Merchant et al. found no catastrophic forgetting of linguistic structure. We rerun the
# part-of-speech probe of section 3, with its control task and the same training contract, on
# the fine-tuned model of the first draw (one model, to keep the lesson short; the other draws
# are the same recipe). Both probes are tested on the same words, so the comparison is
# **paired**: per word, the outcome after minus before, with the test sentences resampled once
# for both (`paired_accuracy_change` in `helpers/probes/probing.py`), the layers read together
# (`pos_change_table`, `pos_change_finding` in `helpers/probes/findings.py`).

# %%
from helpers.common.stats import family_level
from helpers.probes.compute import (
    paired_accuracy_change,
    pos_change_finding,
    pos_change_table,
)

tuned_features = extract_word_features(
    tokenizer, runs[0].model.bert, sentences
)
tuned = word_probe_report(
    tuned_features, sentences, "upos", train_ids, test_ids, seeds=seeds
)
before_pos = reports["upos"]
pos_family = L + 1  # the layers are read together
pos_change = paired_accuracy_change(
    tuned, before_pos, level=family_level(pos_family)
)
rows, title = pos_change_table(before_pos, tuned, pos_change, runs[0].seed)
show_table(rows, index="layer", title=title)
pos_claim = show_finding(
    *pos_change_finding(pos_change, pos_family, tuned.records)
)

# %% mystnb={"figure": {"caption": "Part-of-speech probes on the pre-trained model and the first draw's fine-tuned model, per layer. Top: test accuracy and selectivity, bands: 95 % intervals from resampling test sentences (axes zoomed, as labelled). Bottom: the paired change, fine-tuned minus pre-trained, in points, with the interval its verdict is read from (test sentences resampled once for both, corrected for the number of layers). Find layers whose whiskers exclude zero.", "name": "fig-14-pos-before-after"}}
from helpers.probes.plots import plot_before_after

axes = plot_before_after(before_pos, tuned, change=pos_change)
plt.show()

# %% [markdown]
# ### Back to lesson 11's freezing advice
#
# "Freeze the lower layers" assumes that full fine-tuning would not need to change them much
# anyway, so freezing them costs little and saves their backward pass. Lesson 11's "freeze
# lower half" froze the embeddings and layers $1..\lfloor L/2 \rfloor$. The swap-in test above
# put back one layer at a time; here the whole lower half goes back at once -- what lesson 11
# kept frozen -- with no training at all, paired with the fully fine-tuned model on the same
# utterances.
#
# A claim that the lower half's changes were *not needed* is a claim of no effect, so it needs
# a margin stated before the measurement: we call the two **equivalent** if the 90 % interval
# of the accuracy difference lies within $\pm$`MARGIN` (lesson 06's equivalence test), and
# otherwise report a difference or *we cannot tell*.

# %%
import copy

from helpers.probes.compute import summarize_layers

# accuracy, stated before the measurement: within +/-2 points counts as "no
# loss"
MARGIN = 0.02
half = list(range(1, L // 2 + 1))


def with_pretrained_lower_half(clf):
    """A copy of a fine-tuned classifier whose embeddings and layers
    1..L//2 are the pre-trained ones again."""
    clf = copy.deepcopy(clf)
    clf.bert.embeddings.load_state_dict(model.embeddings.state_dict())
    for l in half:
        clf.bert.encoder.layer[l - 1].load_state_dict(
            model.encoder.layer[l - 1].state_dict()
        )
    return clf.eval()


assert torch.equal(
    classifier_correct(
        tokenizer, runs[0].model, tasks[runs[0].seed].test, recipe.max_length
    ),
    runs[0].correct,
), "scoring a fine-tuned model again must reproduce its test outcomes"
put_back = SeededAccuracy(torch.stack([
    classifier_correct(tokenizer, with_pretrained_lower_half(run.model),
                       swap_tests[run.seed], recipe.max_length)
    for run in runs
]), SEEDS)
restored = "the pre-trained embeddings" + (
    f" and layers {summarize_layers(half)}" if half else ""
)
put_back_claim = show_verdict(
    paired_comparison(put_back, tuned_swap).verdict(
        f"the model with {restored} put back", "the fine-tuned model",
        margin=MARGIN,
    ),
    more="beats", less="falls below", measure="is more accurate",
    values=(f"{100 * put_back.estimate:.1f} %",
            f"{100 * tuned_swap.estimate:.1f} %"),
    units=f"{len(SEEDS)} draws of {len(swap_tests[SEEDS[0]])} test"
    f" {bench.items}",
    extra=[
        f"fine-tuned, all layers: {tuned_swap.describe('draws')}",
        f"{restored} put back: {put_back.describe('draws')}",
        f"margin stated before measuring: +/-{100 * MARGIN:.0f} points",
    ],
)

# %% [markdown]
# Read the verdict above with its limits. *Equivalent* supports the freezing advice for this
# model and task, at the stated margin: full fine-tuning changed the lower half, but the model
# does not need those changes. *Lower* says the upper layers were tuned to a changed lower half
# -- yet a model trained with that half frozen from the start can adapt its upper layers to it,
# which is what lesson 11's "freeze lower half" measured. The intervention bounds what full
# fine-tuning used, not what freezing costs. *Inconclusive* says neither. Either way this is
# one few-shot task -- measure on yours.
#
# ## 7. The masked-LM lens
#
# (It needs a trained masked-LM head for the model's language: with a Chinese model, one
# published with its head, such as `bert-base-chinese`; the cells below say when there is none.)
#
# BERT was pre-trained to fill in masked words. `BertForMaskedLM` predicts them with a head,
# `cls.predictions`, on top of the **last** layer:
#
# $$z = \mathrm{LayerNorm}\big(\mathrm{GELU}(W_d\, h^{(L)} + b_d)\big), \qquad \text{logits} = E\, z + b ,$$
#
# where $E$ is the word-embedding matrix (the decoder's weight is tied to it). The *lens*
# feeds every layer's $h^{(l)}$ at the `[MASK]` position through the same head, to see when
# the final guess takes shape (the "logit lens" of nostalgebraist, 2020, did this for GPT-2).
#
# What does BERT being **post-LN** mean for this? Every layer ends with
# $h^{(l)} = \mathrm{LayerNorm}(\dots)$ (lesson 03), and so does the embedding output: every
# hidden state is already normalised -- zero mean and unit variance over its $H$ entries,
# before that LayerNorm's learned gain and bias -- so its size does not grow with depth and
# the head can take any layer's vector as it is. Each LayerNorm has its own gain, so the sizes
# are similar, not equal. In a pre-LN model such as GPT-2 the residual stream grows with
# depth, and the logit lens must apply the final LayerNorm first. The typical vector size per
# layer, over all the words of `data/pos` (`norm_lines` in `helpers/probes/findings.py` prints
# it):

# %%
from helpers.probes.compute import norm_lines, norm_quartiles

quartiles = norm_quartiles(features)  # [25th, 50th, 75th percentile; L+1]
print(norm_lines(quartiles))

# %% [markdown]
# A similar scale is not the same meaning, though: the head was trained only on layer $L$'s
# outputs, and nothing forced earlier layers to use the same directions for the same words.
# The lens shows what the *last layer's* read-out makes of an earlier layer, not what that
# layer "believes".
#
# **Many blanks first.** One sentence is one example; a layer story needs many. course-mini,
# the course's own pre-trained BERT-mini (`data/course_mini/`), has a trained head and
# held-out text of the kind it was trained on: scenes and chapters it never saw. We hide 15 %
# of the words of held-out pairs and count, per layer, how often the head's first guess is the
# hidden word (`course_mini_lens_by_layer` in `helpers/mini/lens.py`), beside its model
# card's two guessers without a model: the most frequent word at that position, and the word
# the two neighbours make likely.

# %% mystnb={"figure": {"caption": "course-mini's masked-LM lens over held-out blanks: the share whose hidden word is the head's first guess when the head reads each layer (emb = embeddings). Band: 95 % interval resampling documents; dashed, labelled at the right: the two guessers without a model on the same blanks. Compare each layer with the upper dashed line.", "name": "fig-14-lens-by-layer"}}
from helpers.mini.lens import LANGUAGE as MINI_LANGUAGE
from helpers.mini.lens import course_mini_lens_by_layer
from helpers.pretrain.plots import plot_by_layer

agg = None  # course-mini reads English: its lens speaks for English models
if language == MINI_LANGUAGE:
    agg = course_mini_lens_by_layer(budget.pick(400, 60),
                                    baseline_pairs=budget.pick(20000, 2000))
    plot_by_layer({"course-mini": agg.top1}, "top-1 accuracy",
                  "masked-LM lens of course-mini: top-1 per layer",
                  baselines=agg.nulls)
    plt.show()
else:
    print("course-mini's lens is left out: course-mini was pre-trained on"
          " English text, and its blanks say nothing about this model.")

# %%
if agg is not None:  # course-mini's lens, read above
    above = [v.a for v in agg.versus_bigram if v.kind == "higher"]
    show_finding(
        f"On {agg.blanks:,} held-out blanks the head's first guess is right "
        + ", ".join(f"{v.estimate:.0%} ({n})" for n, v in zip(
            ["embeddings"] + [f"layer {l}" for l in range(1, len(agg.top1))],
            agg.top1))
        + "; " + (", ".join(above) + " beat" + ("s" if len(above) == 1
                                                 else "")
                  if above else "no layer beats")
        + f" the neighbour guesser ({agg.nulls['neighbour bigrams']:.0%}).",
        [v.text for v in agg.versus_bigram],
    )

# %% [markdown]
# **One sentence of its own kind**, then one outside it. First a held-out line of the
# training text's kind: the first line, in a seeded order of the test documents' lines, whose
# hidden word course-mini gets right (`held_out_line`), to watch a right guess form layer by
# layer; the count above says how often that happens. Then `SENTENCE`. For a
# checkpoint with its own trained head (e.g. `bert-base-uncased`) `SENTENCE` goes through that
# head; otherwise through course-mini's, whose training text is Shakespeare and the King James
# Bible: a modern sentence is outside it.

# %% mystnb={"figure": {"caption": "The masked-LM lens on a held-out line of course-mini's own kind of text: the pre-training head applied to every layer's vector at the masked position (rows: emb = embeddings, then layers 1 to L), its top guesses with their probabilities on one 0-1 scale. Look for the layer where the hidden word first reaches the top.", "name": "fig-14-lens-in-domain"}}
from helpers.lens.compute import (course_mini_lens, load_masked_lm,
                                  mask_one_word, masked_lm_lens)
from helpers.mini.lens import held_out_line
from helpers.lens.plots import plot_lens

inside = None
if language == MINI_LANGUAGE:  # a line of course-mini's own English text
    inside = course_mini_lens(held_out_line(seed=0))
    print(inside.message)
    plot_lens(inside.lens)
    plt.show()

# %%
mlm, head = load_masked_lm(model.name_or_path, name=loaded.choice.name)
print(head.message)
if head.present:
    masked, word = mask_one_word(tokenizer, mlm, SENTENCE)
    lens = masked_lm_lens(tokenizer, mlm, masked, target=word, top_k=5)
    assert torch.allclose(
        lens.logits[-1], lens.model_logits, atol=1e-4
    ), "the head by hand must match BertForMaskedLM"
    at = masked.index(tokenizer.mask_token)
    print(f"masked {word!r}: ...{masked[max(0, at - 80):at + 80]}...")
elif language == MINI_LANGUAGE:  # course-mini, in data/course_mini, has one
    mini = course_mini_lens(SENTENCE)
    print("No trained masked-LM head here: the lens runs on course-mini. "
          + mini.message)
    lens, word = mini.lens, mini.word
else:  # no head that reads this language: the lens has nothing to read
    lens, word = None, None
    print(f"The lens does not run for {loaded.choice.name}: it has no trained"
          " masked-LM head, and the course's only other one (course-mini)"
          " reads English, not this model's language.")

# %% mystnb={"figure": {"caption": "The masked-LM lens on SENTENCE: the pre-training head applied to every layer's vector at the masked position (rows: emb = embeddings, then layers 1 to L). Each cell is one of the head's top guesses with its probability, coloured on one 0-1 scale. Compare with the held-out line above: where does the hidden word first reach the top, if at all?", "name": "fig-14-masked-lm-lens"}}
if lens is not None:
    plot_lens(lens)
    plt.show()

# %%
def first_top(result):
    """The first layer (0: embeddings) where the hidden word tops, or None."""
    ranks = list(result.target_ranks)
    return next((l for l, r in enumerate(ranks) if int(r) == 1), None)


for label, res, w in (("held-out line", inside and inside.lens,
                       inside and inside.word), ("SENTENCE", lens, word)):
    if res is None or res.target_ranks is None:
        continue
    top = first_top(res)
    print(f"{label}: rank of {w!r} per layer: " + ", ".join(
        f"{'emb' if l == 0 else l}: {int(r)}"
        for l, r in enumerate(res.target_ranks))
        + (" -- never the top guess." if top is None else
           " -- the top guess from "
           + ("the embeddings" if top == 0 else f"layer {top}") + " on."))

# %% [markdown]
# ## Summary
#
# * A **linear probe per layer** reads a label off each layer's word vectors; a **control
#   task** (random but fixed label per word type) measures what the probe memorises, and
#   **selectivity** = task − control accuracy is what the representation explains -- only
#   when task and control probes are trained alike (here: to convergence, both with the one
#   L2 strength the task's dev split chose for all layers; training accuracy printed for both).
# * Where a task peaks is a measurement with an interval, not a table entry: the comparison
#   with Tenney et al. and with the popular "1–3 / 4–8 / last four" table above is this
#   model's answer. Layers are tested on the same items, so they are ranked by a **paired**
#   difference (test sentences resampled once for both layers), not by whether their
#   intervals overlap; a task the embeddings already solve (layer 0 tied with the best)
#   cannot test the table.
# * **Linear CKA** compares a layer before and after fine-tuning, invariant to rotation and
#   scale; checked against the HSIC formula. It carries the changes of every layer below, so
#   it can fall with depth even when all layers move alike. The relative weight change is a
#   weaker signal under Adam.
# * Fine-tuning here is lesson 11's full fine-tuning on the loaded model (learning rate chosen
#   and early stopping on a dev split, one run per draw, each run's status printed), compared with the frozen probe on the same
#   utterances, paired: it need not beat it.
# * The **swap-in test** puts one layer's pre-trained weights back into the fine-tuned model:
#   a drop separates what that layer's own change contributes from what it inherits from
#   below, which CKA cannot do.
# * The part-of-speech probe on the fine-tuned model tells whether fine-tuning erased what
#   the probe could read; putting the whole pre-trained lower half back (with an equivalence
#   margin stated first) tests whether full fine-tuning needed what it changed there.
# * The **masked-LM lens** applies the pre-training head to every layer; BERT's post-LN
#   design keeps every hidden state at a similar scale (printed above), not growing with
#   depth, but the head was trained on the last layer only. Read it over many held-out blanks
#   and against guessers without a model before reading one sentence; and on text of the
#   kind the model was trained on before text outside it (course-mini knows only Early Modern
#   English). An English checkpoint without a trained head (like the bundled one) gets the
#   lens on course-mini, the course's own pre-trained BERT-mini; a Chinese one gets none.
#
# ## Exercises
#
# Each exercise starts with its rating: how hard it is, how much it matters for
# the rest of the course, and about how long it takes. The checkers grade your
# answer and give a hint when it is not right yet; they never print the answer.

# %%
from helpers.exercises.lesson14 import (
    check_exercise_1,
    check_exercise_2,
    check_exercise_3,
    check_exercise_4,
)

# %% [markdown]
# ### Exercise 1: a control task by hand
#
# Difficulty ●●●○○ · Importance ●●●●○ · ~15 min
#
# Write `control_task(words, labels, num_classes, seed)` returning one control
# label per word: each word type (lower-cased) gets one label drawn from the
# empirical distribution of `labels`, the same for all its occurrences.

# %%
control_task = None  # your function here
check_exercise_1(control_task, features.words, upos, len(UPOS_TAGS))

# %% [markdown]
# ### Exercise 2: linear CKA by hand
#
# Difficulty ●●○○○ · Importance ●●●○○ · ~10 min
#
# Write `cka(X, Y)`: linear CKA of two `[n, H]` matrices, in the feature-space
# form above.

# %%
cka_by_hand = None  # your function here
check_exercise_2(cka_by_hand, change.before, change.after[0])

# %% [markdown]
# ### Exercise 3: how far did the last layer move?
#
# Difficulty ●●○○○ · Importance ●●●○○ · ~10 min
#
# Compute the relative weight change of the **last** encoder layer of the
# fine-tuned model of the first seed
# (`change.runs[0].model.bert.encoder.layer[-1]`) against the loaded model's
# (`model.encoder.layer[-1]`), all its parameters taken together.

# %%
last_layer_change = None  # your number here
check_exercise_3(last_layer_change, model, change.runs[0].model.bert)

# %% [markdown]
# ### Exercise 4: predict, then measure — what memorising word types scores
#
# Difficulty ●●○○○ · Importance ●●●●○ · ~10 min
#
# The control task gives every word type one fixed random label, so a probe can
# score on it only by remembering word types. How much can remembering alone
# give? **First predict** the test accuracy, on the control labels `control`,
# of the simplest memoriser: a lookup table from each lower-cased word type of
# the *training* sentences to its control label, with the most common control
# label of the training words for types never seen in training. Put a number
# between 0 and 1 in `prediction_4`.
#
# **Then measure** it: `features.words[i]` is word `i`, `features.sentence[i]`
# its sentence, and `train_ids` / `test_ids` the sentences of each split. No
# model runs. The checker grades the measurement and only comments on the
# prediction.
#
# *Reflection (not checked):* set your number beside the control column of the
# part-of-speech table in section 3. What does a probe's control accuracy
# measure, and why does selectivity subtract it?

# %%
prediction_4 = None  # a number between 0 and 1, written before measuring
answer_4 = None  # your code here: a float between 0 and 1
check_exercise_4(prediction_4, answer_4, features, control, train_ids,
                 test_ids)
