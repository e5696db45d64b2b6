"""Lesson 07 numbers: a token's vector across layers -- norms, cosines, the anisotropy
baseline, PCA.

Everything works on cached :class:`~helpers.model.trace.Trace` objects. Layer ``0`` is the
embedding output, ``1 .. L`` the encoder layers.

One module per part of the lesson, all re-exported here (``from helpers.layerwalk.compute import
random_pair_cosines`` keeps working): ``measures.py`` (norms, cosines, PCA; tokens of a kind over
many traces), ``baselines.py`` (random-pair baselines resampled by sentence, within and across
layers; anisotropy corrections), ``norms.py`` (LayerNorm and outlier dimensions), ``variance.py``
(the two-way variance split) and ``findings.py`` (profiles in plain words, lesson 07's table rows
and claims). ``rank_layers`` and ``step_verdicts`` live in ``helpers/common/ranking.py`` (re-exported
here as before). This module keeps the attention entropy of every token (lesson 06).
"""

from __future__ import annotations

import torch

from helpers.common.stats import (ALPHA, Interval, LayerRanking, Replicates, Verdict,  # noqa: F401 (re-exported)
                                  bootstrap_size, extreme_family, family_level, pair_replicates, rank_layers,
                                  quartiles, step_verdicts, unit_weights, verdict)
from helpers.model.tokens import content_positions
from helpers.model.trace import Trace, check_trace, check_traces, device_of
from helpers.layerwalk.measures import (TOKEN_KINDS, baseline_adjusted, consecutive_cosines,  # noqa: F401
                                        consecutive_cosines_per_token, interlayer_similarity,
                                        interlayer_similarity_all_tokens, interlayer_similarity_per_token,
                                        layer_norms, layer_norms_per_token, pca_trajectory, pca_variance_ratio,
                                        pooled_vectors, positions_of_kind, token_by_layer)
from helpers.layerwalk.norms import (cluster_labels, energy_by_dimension, final_layer_norms, layer_norm_inputs,  # noqa: F401
                                     layer_norm_outliers, norm_parts, outlier_counts, outliers_in_every_layer,
                                     path_lengths, top_dimensions)
from helpers.layerwalk.variance import (VARIANCE_PARTS, WITHIN_LAYER, share_explained_by_layer,  # noqa: F401
                                        share_explained_by_layer_ci, variance_split, variance_split_ci,
                                        variance_split_replicates)
from helpers.layerwalk.baselines import (anisotropy_profile, cosine_contributions, cosines_by_variant,  # noqa: F401
                                         cross_layer_baseline, cross_layer_control_matrix, layer_mean_std,
                                         pair_difference, pair_ranking, pair_step_verdicts, random_pair_baseline,
                                         random_pair_cosines, random_pair_intervals, random_pair_units)
from helpers.layerwalk.findings import (baseline_rows, claim_rows, comparison_finding, comparison_rows,  # noqa: F401
                                        confidence_finding, growth_finding, last_layer_word, layers_phrase,
                                        names_phrase, norm_rows, outlier_finding, outlier_sentence,
                                        outlier_table_rows, parts_rows, profile_finding, ranking_sentence,
                                        step_rows, steps_sentence, top_dimension_rows, transition_rows, turn_rows,
                                        variant_rows)


def attention_row_entropy(att: torch.Tensor) -> torch.Tensor:
    """Entropy (nats) of every attention row of ``att`` (``[..., keys]``, each row summing to 1):
    ``[...]``; 0 for one key, ``log n`` for ``n`` keys evenly."""
    return -(att * torch.log(att.clamp_min(1e-12))).sum(dim=-1)


def attention_entropy_per_token(traces, kind: str = "content") -> torch.Tensor:
    """How spread out each token's attention is, per layer: the entropy (nats) of its attention
    row, averaged over the heads, for every token of ``kind``: ``[N, L]`` (layers 1..L). 0 when a
    token looks at one token only, ``log n`` when it spreads evenly over a sentence of ``n``
    tokens -- so it depends on the sentence's length, which every token of a sentence shares."""
    traces = check_traces(traces)
    rows = []
    for t in traces:
        att = torch.stack(t.attentions).double()  # [L, heads, seq, seq]
        entropy = attention_row_entropy(att).mean(1)  # [L, seq]: averaged over the heads
        rows.append(entropy[:, positions_of_kind(t, kind)].T)
    return torch.cat(rows)
