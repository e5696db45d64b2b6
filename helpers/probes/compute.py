"""Lesson 14 numbers: word-level linear probes on every layer, with control tasks.

* :func:`extract_word_features` runs the model once per batch of tagged sentences and keeps
  the vector of each word's **first WordPiece** at every layer (0 = embeddings .. L);
* :func:`control_labels` is the control task of Hewitt & Liang (2019, *Designing and
  Interpreting Probes with Control Tasks*): every word type gets one random label, drawn from
  the empirical label distribution, so only memorising word types can solve it;
* :func:`train_probes` trains one linear softmax probe per layer **and** per label set at
  once, as one batched matrix product (like :func:`helpers.classify.compute.probe_per_layer`);
* :func:`probe_task` puts it together: task and control probes over several seeds, accuracy,
  control accuracy and selectivity per layer with bootstrap intervals over test sentences;
  :func:`paired_accuracy_change` compares two reports on the same test words (e.g. before and
  after fine-tuning), resampling the test sentences once for both; :meth:`ProbeReport.differences`
  compares two layers of one report the same way (all layers are tested on the same words), and
  :meth:`ProbeReport.tied_with_best` rests on it, never on overlapping intervals;
* :func:`sentence_probe_report` is lesson 10's sentence-level probe (``probe_seeds``) in the
  same report form.

The data are split by sentence (:func:`split_sentences`): no test sentence is seen in training.
Lesson 14's tables and findings (:func:`word_probe_table`, :func:`peak_findings`,
:func:`cka_depth_finding`, ...) are laid out from the numbers above.

Where the code lives (every name is re-exported here, so ``from helpers.probes.compute import
probe_task`` keeps working): ``features.py`` (the word features, the tasks, the control task, the
split by sentence), ``probing.py`` (the probes, :class:`ProbeReport`, the paired change) and
``findings.py`` (the tables and findings).
"""

from __future__ import annotations

from helpers.probes.features import (ENTITY_CLASSES, ENTITY_GROUPS, TASKS, WordFeatures, control_labels,  # noqa: F401
                                     entity_class, extract_word_features, split_sentences, trace_word_vectors)
from helpers.probes.probing import (LayerProbes, ProbeReport, fit_word_probes, paired_accuracy_change, probe_task,  # noqa: F401
                                    sentence_bootstrap, sentence_probe_report, sentence_replicates, train_probes,
                                    word_probe_report)
from helpers.probes.findings import (POPULAR_TABLE, POPULAR_TABLE_DEPTH, SWAP_MEANING, cka_depth_finding,  # noqa: F401
                                     intent_probe_table, layer_change_table, layer_label, layer_tag_table,
                                     norm_lines, norm_quartiles, peak_findings, pos_change_finding,
                                     pos_change_table, probe_status_finding, scaled_layers, summarize_layers,
                                     swap_in_finding, swap_in_table, table_verdict, weight_norm_table,
                                     word_probe_table)
