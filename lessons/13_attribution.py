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
# # 13 — Which words drove the decision? Attribution, tested by removal
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/bert-layer-by-layer/bert-layer-by-layer/blob/main/lessons/13_attribution.ipynb)
#
# Names and counting ($L, H, A, d, I, n$; layers from 1, heads from 0): see the [conventions](00_big_picture.ipynb#conventions) box of lesson 00.
#
# [Lesson 12](12_interventions.ipynb) changed the *model* — removed heads, skipped layers,
# patched vectors — and measured what broke. This lesson asks about the *input*: which tokens
# drove one decision of the same classifier? Six methods answer, and they disagree:
#
# 1. attention read as an explanation: raw attention, attention rollout (Abnar & Zuidema, 2020)
#    and norm-based attention (Kobayashi et al., 2020);
# 2. gradients: gradient × input, and Integrated Gradients (Sundararajan et al., 2017) with
#    Captum, its completeness checked;
# 3. perturbation: occlusion, which drops a token and runs the model again;
# 4. then the test none of them can dodge, ERASER's faithfulness (DeYoung et al., 2020): remove a
#    method's top tokens and watch the prediction, against random tokens removed the same way;
# 5. and value zeroing (Mohebbi et al., 2023), context mixing through the whole layer, beside
#    attention.
#
# Every result is one sentence generated from this run's numbers, its statistics folded under
# **How we know**. The first cell installs the course on Google Colab; on your own machine it
# does nothing.

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
# `MODEL` names the checkpoint (`None`: the course chooses); `SENTENCE` is the request (with a
# Chinese model, a Chinese sentence) whose decision we attribute to its words. `BUDGET` sizes the expensive work (`None`: the course
# chooses, `"full"` on the bundled model; `"quick"`: a few intents and test utterances;
# `choose_budget` in `helpers/common/budget.py`).

# %% tags=["parameters"]
MODEL = None
SENTENCE = "I still have not received my new card, what should I do?"
# None: the course chooses; "full" or "quick" (a few intents and test
# utterances)
BUDGET = None

# %% [markdown]
# ## The model and lesson 12's classifier
#
# We explain the decisions of lesson 12's classifier: a linear head (lesson 10's `LinearHead`,
# trained by lesson 12's own short Adam loop, `train_head`) on the mean-pooled
# last layer, trained on 30 BANKING77 utterances of each of the 77 intents (the quick budget: a
# few intents). With a Chinese model the data follow it, as in lesson 12: THUCNews headlines, 10
# news topics, and every token is a character, so the attributions fall on characters.
# `banking_setup` (in `helpers/interventions/compute.py`) repeats lesson 12's first
# cells in one call — the same seeded draws, the same head — so this lesson runs on its own. The
# map marks what this lesson reads: the input tokens and the attention that mixes them.

# %%
import numpy as np
import torch

from helpers.common.budget import choose_budget
from helpers.interventions.compute import banking_setup
from helpers.common.language import model_language
from helpers.model.loading import load_model
from helpers.model.trace import trace_text

loaded = load_model(MODEL)
tokenizer, model = loaded
language = model_language(tokenizer, lesson="13")  # the data follow the model
budget = choose_budget(BUDGET, model)
L = model.config.num_hidden_layers
task = banking_setup(tokenizer, model, budget, language=language)
test, classifier = task.test, task.classifier
ITEMS, CLASSES = task.benchmark.items, task.benchmark.classes
print(f"{L} layers; classifier on {task.benchmark.name}: {len(task.train)}"
      f" training {ITEMS} -> {test.num_classes} {CLASSES}; {len(test)} test"
      f" {ITEMS}")

# %% mystnb={"figure": {"caption": "The course's map of BERT, from tokens through the repeated encoder layer and the pooler to a task head. This lesson asks which input tokens drove the head's decision and how attention mixes them, framed in orange and marked \"you are here\".", "name": "fig-13-you-are-here"}}
from helpers.architecture.plots import LESSON_PARTS, you_are_here

you_are_here(model.config, LESSON_PARTS["13"]);

# %% [markdown]
# ## 1. Six ways to attribute one decision
#
# Each method attributes the head's decision on `SENTENCE` — the logit of its predicted intent —
# to the input tokens (`six_attributions` in `helpers/attribution/compute.py`):
#
# * **raw attention**: last layer, heads averaged. The head reads the mean of all token vectors,
#   so we average the attention rows of all queries.
# * **attention rollout** (Abnar & Zuidema, 2020): every layer mixes token identities linearly,
#   the residual an equal-weight identity path, $\tilde A_l = \mathrm{rownorm}(0.5\,\bar A_l +
#   0.5\,I)$, multiplied through the layers, $R = \tilde A_L \cdots \tilde A_1$. It **assumes**
#   information moves only through head-averaged attention and the residual, and ignores the value
#   vectors, the output projection, the feed-forward blocks and LayerNorm.
# * **norm-based attention** (Kobayashi et al., 2020): $\alpha_{ij}\,\lVert f(x_j)\rVert$, the
#   weight times the size of what the looked-at token sends (lesson 08's `norm_attention`).
# * **gradient × input**: $\sum_k e_{jk}\, \partial z / \partial e_{jk}$ on the embedding output
#   $e$, a first-order estimate of token $j$'s contribution from an implicit baseline $e = 0$.
# * **Integrated Gradients** (Sundararajan et al., 2017): next section.
# * **occlusion**: drop token $j$, run again, measure how far the logit falls — a *marginal*
#   effect: when two tokens say the same thing, dropping either changes little.
#
# Attention scores are never negative; the gradient methods and occlusion are signed (a token can
# argue *against* the intent). None is the ground truth; section 3 tests them all by removal.
# `[CLS]` and `[SEP]` are never removed, so every comparison is over the other tokens. The cell
# checks rollout against two layers multiplied by hand.

# %%
from helpers.attribution.compute import (IG_STEPS, METHODS,
                                         OCCLUSION_PASSES, attention_rollout,
                                         occlusion_windows, sentence_logits,
                                         six_attributions)
from helpers.model.tokens import content_positions

trace = trace_text(tokenizer, model, SENTENCE)
z = sentence_logits(classifier, trace)
pred = int(z.argmax())
IG_STEPS_TRIED = budget.pick(IG_STEPS, IG_STEPS[:2])  # raised until complete
scores, ig = six_attributions(tokenizer, model, classifier, trace, pred,
                              ig_steps=IG_STEPS_TRIED)
eye = torch.eye(trace.seq_len, device=model.device)
step = [(0.5 * trace.attention(l).mean(0) + 0.5 * eye) for l in (1, 2)]
step = [s / s.sum(-1, keepdim=True) for s in step]
assert torch.allclose(attention_rollout(trace.attentions[:2]),
                      step[1] @ step[0], atol=1e-6)
words = content_positions(trace)
print(f"{SENTENCE[:60]!r} -> {test.names[pred]!r}; {len(words)} word tokens")
if len(occlusion_windows(words, OCCLUSION_PASSES)) < len(words):
    print(f"note: to keep occlusion at {OCCLUSION_PASSES} passes, it drops"
          " runs of neighbouring tokens together")

# %% [markdown]
# Here are the six answers on the sentence itself, one row per method: each token's background is
# its score divided by the largest |score| of its method, so every row runs from blue (−1, pushes
# the predicted intent's logit down) through white (0) to red (+1, pushes it up); the key under
# the rows says so. The first line is generated from the scores. Hover a token for its score
# (`highlighted_text` in `helpers/attribution/highlight.py`).

# %%
from helpers.attribution.highlight import highlighted_text, trace_pieces

highlighted_text({m: scores[m][words] for m in METHODS},
                 trace_pieces(trace, words), target=repr(test.names[pred]),
                 title=f"the lesson's SENTENCE, predicted"
                 f" {test.names[pred]!r}")

# %% [markdown]
# The same rows for two test utterances, the first of the seeded test draw that the head
# classifies right and the first it gets wrong (`right_and_wrong`; when it gets the whole draw
# right, it reads on through the rest of the test split): on the wrong one, which tokens pushed
# it to the wrong intent?

# %%
from IPython.display import display

from helpers.attribution.compute import right_and_wrong

examples = right_and_wrong(tokenizer, model, task)
found = {"right": examples.right, "wrong": examples.wrong}
print(f"the head gets {examples.correct} of {examples.n_draw} test {ITEMS}"
      " right" + (f"; {examples.extra} more read to find a wrong one"
                  if examples.extra else "") + "".join(
          f"; none classified {kind}" for kind in found if not found[kind]))
for kind, (text, true, guess) in ((k, v) for k, v in found.items() if v):
    t = trace_text(tokenizer, model, text)
    its, _ = six_attributions(tokenizer, model, classifier, t, guess,
                            ig_steps=IG_STEPS_TRIED)
    at = content_positions(t)
    display(highlighted_text(
        {m: its[m][at] for m in METHODS}, trace_pieces(t, at),
        target=repr(test.names[guess]), title=f"test, {kind}: true"
        f" {test.names[true]!r}, predicted {test.names[guess]!r}"))

# %% [markdown]
# ## 2. Integrated Gradients, with its completeness check
#
# Integrated Gradients walks a straight path from a **baseline** input $x'$ to the input $x$ and
# adds up the gradients along it: token $j$'s attribution is
# $(x_j - x'_j) \cdot \int_0^1 \partial f(x' + \alpha (x - x')) / \partial x_j \, d\alpha$. Its
# defining property is **completeness**: the attributions sum to $f(x) - f(x')$. The integral is
# computed with a finite number of steps, and Captum reports how far the sum misses, the
# *convergence delta* $\sum_j a_j - (f(x) - f(x'))$; we raise the steps until it is small.
#
# We follow Captum's BERT tutorial: `LayerIntegratedGradients` on `embeddings.word_embeddings`
# (token ids cannot be interpolated, their embedding vectors can), the baseline **[PAD] in place
# of every token except [CLS] and [SEP]** (`baseline_ids`, `integrated_gradients`). The baseline
# is a choice: the attributions explain the difference from "an utterance of the same length with
# no words". The cell also checks the course's gradient × input (by hand, `torch.autograd`)
# against Captum's `InputXGradient` on the same embedding output.

# %%
from helpers.attribution.compute import IG_TOLERANCE, gradient_x_input_captum
from helpers.attribution.findings import completeness_finding
from helpers.common.claims import show_finding

assert abs(ig.f_input - float(z[pred])) < 1e-3  # Captum's f is our logit
# Captum's delta is what we say it is
assert abs(float(ig.scores.sum()) - ig.gap - ig.delta) < 1e-3
captum_gxi = gradient_x_input_captum(model, classifier, trace, pred)
assert torch.allclose(scores["gradient x input"], captum_gxi, atol=1e-5)
print(f"baseline [PAD] (keeping [CLS], [SEP]): f(x) = {ig.f_input:.3f},"
      f" f(x') = {ig.f_baseline:.3f}, f(x) - f(x') = {ig.gap:.3f}")
for n, delta in ig.history:
    print(f"   {n:4d} steps: sum of attributions {ig.gap + delta:.4f},"
          f" convergence delta {delta:+.2e}")
print("gradient x input == Captum InputXGradient (largest difference "
      f"{(scores['gradient x input'] - captum_gxi).abs().max():.1e})")

# %%
sentence_ig_claim = show_finding(*completeness_finding(ig, items=ITEMS))

# %% [markdown]
# BERT's input vector is the sum of three embeddings: the word piece, its position and its
# segment. Captum's tutorial splits an attribution over the three by attributing to all three
# tables at once, with baselines [PAD] for the words, segment 0 and **position 0 for every
# token** (`integrated_gradients_by_embedding`). We do it on a short test utterance
# (interpolating positions needs many steps). A single sentence is all segment 0, the baseline's
# segment, so the segment part is exactly 0.

# %%
from helpers.attribution.compute import integrated_gradients_by_embedding

short = trace_text(tokenizer, model, min(test.texts, key=len))
short_pred = int(sentence_logits(classifier, short).argmax())
PARTS = ("word", "position", "segment")
parts = integrated_gradients_by_embedding(
    tokenizer, model, classifier, short, short_pred,
    steps=budget.pick(256, 64))
print(f"{min(test.texts, key=len)!r} -> {test.names[short_pred]!r};"
      f" f(x) - f(x') = {parts['gap']:.3f}, convergence delta"
      f" {parts['delta']:+.2e}")
print(f"{'token':>12} {'word':>8} {'position':>9} {'segment':>8}")
rows = list(zip(short.tokens, *(parts[k] for k in PARTS)))
for tok, *values in rows + [("sum", *(parts[k].sum() for k in PARTS))]:
    print(f"{tok:>12} {values[0]:+8.3f} {values[1]:+9.3f} {values[2]:+8.3f}")
split_gap = abs(parts["delta"]) / max(abs(parts["gap"]), 1e-6)
print(f"|delta| / |f(x) - f(x')| = {split_gap:.1%}: " + (
    f"below {IG_TOLERANCE:.0%}, the three columns add up to the gap"
    if split_gap < IG_TOLERANCE else f"above {IG_TOLERANCE:.0%}: three"
    " embeddings move at once along the path, so this split needs more"
    " steps; read its columns as approximate"))

# %% mystnb={"figure": {"caption": "Six attributions of the predicted intent's logit (title) to the word tokens of the lesson's sentence, one method per row, each row divided by its largest absolute score so all share a \u22121 to 1 scale: red pushes the logit up, blue down; attention-based rows are never negative. Compare the rows: which tokens do the methods agree on?", "name": "fig-13-attributions"}}
import matplotlib.pyplot as plt

from helpers.attribution.plots import plot_attributions

ax, shown = plot_attributions(
    {m: scores[m][words] for m in METHODS}, [trace.tokens[i] for i in words],
    title=f"what drove {test.names[pred]!r}: six attributions, each row /"
    " its largest |score|")
plt.show()
if len(shown) < len(words):
    print(f"the figure shows the {len(shown)} of {len(words)} word tokens"
          " with the highest occlusion score")

# %% [markdown]
# ## 3. Faithfulness: remove the top tokens and watch the prediction (ERASER)
#
# DeYoung et al. (2020, *ERASER*, seven English text tasks; BERT- and LSTM-based classifiers)
# score an explanation by what removing its top tokens does to the predicted class's
# probability $p$:
#
# * **comprehensiveness** $= p(x) - p(x \setminus r_k)$: remove the top-$k$ % tokens $r_k$; if they
#   are the ones the model used, $p$ should fall (higher is more faithful);
# * **sufficiency** $= p(x) - p(r_k)$: keep *only* them (with [CLS], [SEP]); if they carry the
#   decision, $p$ should hardly fall (lower is more faithful).
#
# ERASER averages each over $k \in \{1, 5, 10, 20, 50\}$ % (AOPC, the area over the perturbation
# curve); BANKING77's utterances have about ten word tokens (THUCNews headlines, about twenty
# characters), where 1 and 5 % would be one token, so we use $k$ = 10 to 50 %
# (`FAITHFULNESS_FRACTIONS`), at least one token. Choices stated now:
#
# * **ranking**: by each method's **signed** score, highest first; a token that argues against the
#   intent is removed last;
# * **removal**: a token is **dropped** (the sequence gets shorter). Replacing it by [MASK] or
#   [PAD] keeps the positions but puts in a token the classifier never saw in an utterance. Either
#   way the input leaves the training data, so part of any drop in $p$ is the model reacting to a
#   strange input — which is why every method is compared with **random rankings** (five per
#   utterance, averaged) removed the same way; the last table shows how much the removal moves
#   the numbers. Occlusion *is* this removal, one token at a time, so the test scores it by its
#   own perturbation: expect it to do well here for that reason alone (Hooker et al.'s 2019 ROAR,
#   retraining without the removed tokens, is the remedy, and too heavy for this lesson);
# * **the unit** is the utterance: a random one from each of `N_FAITH` intents drawn at random
#   (seeded; a benchmark with fewer classes than `N_FAITH` gives a few of each), each with its own predicted intent; each method is compared with the random ranking *paired* on the same
#   utterances, the six methods one family (Bonferroni), intervals resampling the utterances.
#
# `faithfulness_study` runs it all (about a second per utterance).

# %%
from helpers.attribution.erasure import faithfulness_study

import random

N_FAITH = budget.pick(32, 5)  # utterances, one per intent
# a random utterance of every intent (a few where there are fewer intents)
one_each = test.sample(-(-N_FAITH // test.num_classes), seed=0)
drawn = sorted(random.Random(0).sample(range(len(one_each)), N_FAITH))
faith = faithfulness_study(tokenizer, model, classifier,
                           [one_each.texts[i] for i in drawn],
                           ig_steps=IG_STEPS_TRIED[:2], n_random=5)
print(f"{len(faith)} {ITEMS}; Integrated Gradients |delta| / |f(x) -"
      f" f(x')|: largest {max(faith.ig_gaps):.2%},"
      f" {sum(g < IG_TOLERANCE for g in faith.ig_gaps)} of {len(faith)}"
      f" below {IG_TOLERANCE:.0%}")

# %% [markdown]
# The first table: each method's comprehensiveness and sufficiency (AOPC, tokens dropped),
# averaged over the utterances, each with its interval; the random ranking is the row to beat.
# Then each method against the random ranking, paired over the utterances
# (`versus_random`), and the verdicts in one sentence.

# %%
from helpers.attribution.erasure import FAITHFULNESS_FRACTIONS, versus_random
from helpers.attribution.findings import faithful_word, faithfulness_finding
from helpers.common.stats import bootstrap_ci
from helpers.common.tables import show_table

show_table([{
    "method": m,
    "comprehensiveness (higher better)": bootstrap_ci(
        faith.aopc(m, "comprehensiveness")).format("+.3f"),
    "sufficiency (lower better)": bootstrap_ci(
        faith.aopc(m, "sufficiency")).format("+.3f"),
} for m in METHODS + ("random",)], index="method", title=(
    "tokens dropped; AOPC over k = "
    + ", ".join(f"{k:.0%}" for k in FAITHFULNESS_FRACTIONS)
    + f"; mean over {len(faith)} {ITEMS} [interval]"))
compared = {key: versus_random(faith, key)
            for key in ("comprehensiveness", "sufficiency")}
show_table([{
    "method": m,
    "comprehensiveness - random": compared["comprehensiveness"][m]
    .difference.format("+.3f"),
    "reading": faithful_word(compared["comprehensiveness"][m],
                             "comprehensiveness"),
    "sufficiency - random": compared["sufficiency"][m].difference
    .format("+.3f"),
    "reading ": faithful_word(compared["sufficiency"][m], "sufficiency"),
} for m in METHODS], index="method", title=(
    f"each method minus the random ranking, paired over the {ITEMS} (the"
    f" {len(METHODS)} methods read together)"))
faith_claim = show_finding(*faithfulness_finding(
    compared["comprehensiveness"], compared["sufficiency"], faith,
    items=ITEMS))

# %%
from helpers.attribution.erasure import REMOVALS

show_table([{"method": m} | {
    how: bootstrap_ci(faith.aopc(m, how=how)).format("+.3f")
    for how in REMOVALS} for m in METHODS + ("random",)], index="method",
    title="comprehensiveness AOPC by how a token is removed (same rankings,"
    f" same {ITEMS}) [interval]")

# %% mystnb={"figure": {"caption": "ERASER deletion curves on a sample of test examples (one per class), tokens ranked by each method's signed score: top, drop in the predicted class's probability when the top share of word tokens is dropped (higher = more faithful); bottom, when only they are kept (lower = more faithful). Bands: intervals over examples; grey dashed: random rankings, the baseline to beat.", "name": "fig-13-faithfulness"}}
from helpers.attribution.plots import plot_faithfulness

fig = plot_faithfulness(
    {m: faith.curves["drop"][m] for m in METHODS + ("random",)},
    FAITHFULNESS_FRACTIONS,
    title=f"deletion curves (ERASER), tokens dropped, {len(faith)}"
    f" {ITEMS}")
plt.show()

# %% [markdown]
# Read the tables by the random row: a ranking is faithful only as far as it beats a random
# choice of the same number of tokens, removed the same way. How far each removal moves the
# random row itself shows how much of a drop in $p$ is the input becoming strange rather than
# the evidence going.
#
# Abnar & Zuidema compared raw attention, rollout and attention flow with blank-out (occlusion)
# and input gradients on a small Transformer they trained for subject–verb agreement, and applied
# them to pretrained BERT; rollout and flow agreed better with both than raw attention did. We ask
# by faithfulness instead of agreement: is rollout's comprehensiveness higher than raw attention's,
# paired over the utterances? No margin was set, so an interval that includes 0 is "cannot tell".

# %%
from helpers.attribution.erasure import rollout_versus_raw
from helpers.attribution.findings import rollout_finding

rollout = rollout_versus_raw(faith)
rollout_claim = show_finding(*rollout_finding(
    rollout, len(faith), items=ITEMS, cls=task.benchmark.one))

# %% [markdown]
# ## 4. Context mixing that counts the value vectors: value zeroing
#
# An attention weight $\alpha_{ij}$ says how much token $i$ *looks* at token $j$, not how much of
# $j$ ends up in $i$'s output: that also depends on $j$'s value vector, the output projection, the
# residual connection, LayerNorm and the feed-forward block. **Value zeroing** (Mohebbi et al.,
# 2023, EACL; pretrained BERT, RoBERTa and ELECTRA encoders) measures the whole layer: run it with
# token $j$'s value vector set to zero in every head — keys and queries untouched, so the pattern
# stays — and take how far output $i$ moves (cosine distance $C_{ij}$, rows divided by their sum;
# `value_zeroing`, and `value_zeroing_rollout` multiplies the layers as rollout does). It runs
# the layer once per token, so a `SENTENCE` longer than `VZ_MAX_TOKENS` is replaced by the short
# test utterance. First, per layer, how much of each token's row stays on the token itself; then
# four maps on one colour scale.

# %%
from helpers.attribution.compute import value_zeroing, value_zeroing_rollout

VZ_MAX_TOKENS = 64
vz_trace = trace if trace.seq_len <= VZ_MAX_TOKENS else short
if vz_trace is not trace:  # T + 1 layer copies: say so rather than swap
    print(f"SENTENCE has {trace.seq_len} tokens, more than the"
          f" {VZ_MAX_TOKENS} these cells draw; using the short test"
          f" {ITEMS[:-1]} ({short.seq_len} tokens) instead.")
vz = [value_zeroing(model, vz_trace, l) for l in range(1, L + 1)]  # [T, T]
self_table = show_table([{
    "layer": str(l),
    "attention": f"{vz_trace.attention(l).mean(0).diagonal().mean():.2f}",
    "value zeroing": f"{vz[l - 1].diagonal().mean():.2f}",
} for l in range(1, L + 1)], index="layer", title=(
    "share of each token's row on itself, mean over tokens (raw attention vs"
    " value zeroing)"))

# %% mystnb={"figure": {"caption": "Token-to-token mixing for the lesson's sentence (or a short test utterance when it is long): row = output token, column = input token, rows summing to 1. Last-layer raw attention (heads averaged) and value zeroing, then each rolled out through all layers, on one shared colour scale from 0. Compare where attention and value zeroing put each row's weight.", "name": "fig-13-context-mixing"}}
from helpers.attribution.plots import plot_mixing_maps

fig = plot_mixing_maps({
    f"raw attention, layer {L} (heads averaged)":
        vz_trace.attention(L).mean(0),
    f"value zeroing, layer {L}": vz[-1],
    "attention rollout, all layers": attention_rollout(vz_trace.attentions),
    "value-zeroing rollout, all layers": value_zeroing_rollout(vz),
}, vz_trace.tokens, title="context mixing: row = output token, column ="
    " input token")
plt.show()

# %% [markdown]
# Remember what each method measures: attention weights say where a head *looks*, not what the
# looked-at vector contributes; gradient × input is local and measured from a baseline of zeros;
# Integrated Gradients explains the difference from *its* baseline; occlusion and the erasure test
# change the input, so they also measure the model's reaction to a shorter or stranger sentence.
#
# ## What the attributions say about the stories
#
# Each popular story beside this run's plain sentence from above and the published finding with
# its paper and model (`STORIES` in `helpers/attribution/findings.py`, rows by lesson 12's
# `claim_rows`); the statistics are folded beneath.

# %%

from helpers.attribution.findings import STORIES
from helpers.common.claims import Claim, show_scorecard
from helpers.interventions.compute import claim_rows

ig_claim = Claim(*completeness_finding(ig, faith, items=ITEMS))
rows = claim_rows({"completeness": ig_claim, "faithfulness": faith_claim,
                   "rollout": rollout_claim}, STORIES)
# the scorecard and its fold: show_scorecard in helpers/common/claims.py
claims = show_scorecard(rows, loaded.choice.name)

# %% [markdown]
# ## Summary
#
# * Attention, gradients and perturbation give six different answers to "which words drove this
#   decision"; none of them is the ground truth.
# * Integrated Gradients satisfies completeness — its attributions sum to $f(x) - f(x')$ for a
#   stated baseline — and Captum's convergence delta says whether enough steps were taken. The
#   course's gradient × input equals Captum's `InputXGradient`.
# * ERASER's comprehensiveness and sufficiency test each ranking by removing its top tokens,
#   against random rankings removed the same way, paired over utterances and read as one family;
#   how a token is removed (dropped, [MASK], [PAD]) moves the numbers.
# * Value zeroing measures context mixing through the whole layer, values and residual included;
#   attention weights only say where a head looks.
#
# ## Exercises
#
# Each exercise opens with its rating (difficulty, importance, time). The checkers
# (`helpers/exercises/lesson13.py`) grade the answer and hint, never print the answer; a
# prediction is never graded, only set beside the measurement.
#
# ### Exercise 1: attention rollout by hand
#
# Difficulty ●●●○○ · Importance ●●●●○ · ~20 min
#
# Write `my_rollout(attentions)`: from a list of `[A, T, T]` attention maps, one per layer
# (bottom first), return the `[T, T]` attention rollout with $0.5\,\bar A + 0.5\,I$.

# %%
from helpers.exercises.lesson13 import (check_exercise_1, check_exercise_2,
                                         check_exercise_3)

my_rollout = None  # your code here: def my_rollout(attentions): ...
check_exercise_1(my_rollout, trace)

# %% [markdown]
# ### Exercise 2: comprehensiveness by hand
#
# Difficulty ●●●●○ · Importance ●●●○○ · ~25 min
#
# For `SENTENCE`, rank the word tokens (every position but [CLS] and [SEP]) by their Integrated
# Gradients score `scores["integrated gradients"]` (signed, highest first), drop the top
# $\lceil 0.2\,n \rceil$ of them from the input (a shorter id sequence), and give
# $p(\text{pred} \mid x) - p(\text{pred} \mid x \setminus r)$ with the head's softmax probability
# of the predicted intent `pred`: a float.

# %%
# your code here: a float, comprehensiveness at k = 20% for Integrated
# Gradients
answer_2 = None
check_exercise_2(answer_2, tokenizer, model, classifier, trace,
                 scores["integrated gradients"], pred)

# %% [markdown]
# ### Exercise 3: predict, then measure — does the baseline change the answer?
#
# Difficulty ●●○○○ · Importance ●●●●○ · ~15 min
#
# Integrated Gradients explains the difference from its baseline. **First predict**: with
# **[MASK]** in place of every word instead of [PAD], will the word token with the highest
# score on `SENTENCE` be the `"same"` as now or `"different"`? Write it in `prediction_3`.
# **Then measure** it: run `integrated_gradients(tokenizer, model, classifier, trace, pred,
# baseline="mask")` (in `helpers/attribution/gradients.py`) and give the position (an index into
# `trace.tokens`) of the word token with the highest signed score.
#
# *Reflection (not checked):* what does each baseline say the words are added *to*?

# %%
prediction_3 = None  # "same" or "different", written before measuring
answer_3 = None  # your code here: an int, a position in trace.tokens
check_exercise_3(prediction_3, answer_3, tokenizer, model, classifier, trace,
                 pred, scores["integrated gradients"])
