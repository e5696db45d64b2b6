"""Fine-tuning BERT with a classification head (lessons 11 and 14): strategies that treat layers
differently, each trained by the course's training contract (:mod:`helpers.common.training`): a
learning rate chosen per strategy from a small grid on a dev split carved from training data,
scored at step 0, early stopping on the dev loss or accuracy after the warm-up, and a recorded
status (converged / stopped at first evaluation / budget exhausted; a run that kept its start is
*not fine-tuned*). :func:`finetune_study` runs every strategy on one few-shot task per seed (a new
draw of intents and utterances each time), with a disk cache (lesson 11's stored sweep,
:mod:`helpers.finetuning.history`, resumes from it); then lesson 14's measures of what
fine-tuning changed, layer by layer. Every run trains a ``copy.deepcopy`` of the model, so the
cached model that :func:`helpers.model.loading.load_model` hands out is never changed.

One module per part, all re-exported here (``from helpers.finetuning.compute import
finetune_study`` keeps working): ``strategies.py`` (the strategies, :class:`SentenceClassifier`,
:class:`FinetuneConfig`, :func:`finetune_run`), ``study.py`` (:func:`lesson_setup`,
:func:`finetune_study` and its disk cache, :func:`detectable_difference`,
:func:`baseline_verdict`) and ``changes.py`` (lesson 14: linear CKA, weight change,
:func:`layer_change`, the swap-in test :func:`swap_in_correct`)."""

from __future__ import annotations

from helpers.finetuning.strategies import (DEVLIN_LRS, ENGINE_VERSION, FINETUNE_STRATEGIES, FREEZE, FROM_PROBE,  # noqa: F401
                                           FROZEN, FULL, GRADUAL, LLRD, LPFT, FinetuneConfig, FinetuneRun,
                                           ProbeHead, SentenceClassifier, finetune_run, finetune_strategy,
                                           fit_probe_head, fold_sizes, layer_groups, llrd_param_groups, probe_head)
from helpers.finetuning.study import (FewShotTask, FinetuneStudy, baseline_finding, baseline_verdict, cache_dir,  # noqa: F401
                                      classifier_correct, detectable_difference, few_shot_task, finetune_study,
                                      lesson_setup, moved_accuracies, run_from_meta, run_key, run_meta,
                                      seeds_needed)
from helpers.finetuning.changes import (LayerChange, cka_jackknife, jackknife_interval, layer_change, layer_cka,  # noqa: F401
                                        layer_weight_norms, linear_cka, relative_weight_change, swap_in_correct,
                                        token_owners, token_vectors, weighted_cka)
