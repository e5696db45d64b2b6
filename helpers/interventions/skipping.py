"""Lesson 12 (:mod:`helpers.interventions`): skip a layer: layer ``l`` replaced by the identity
(:func:`skip_layer`, :func:`skip_every_layer`), the layers above it re-run from cached states.
"""

from __future__ import annotations

import torch

from helpers.common.progress import progress as progress_bar
from helpers.interventions.runs import CachedRun, length_buckets
from helpers.model.layers import check_layer, continue_from, model_sizes


# -- 3. layer skipping -----------------------------------------------------------------------------


@torch.no_grad()
def skip_layer(model, run: CachedRun, layer: int) -> torch.Tensor:
    """The last hidden state ``[B, T, H]`` with encoder layer ``layer`` replaced by the identity:
    its input, the state after layer ``layer - 1``, passes straight on to layer ``layer + 1``."""
    layer = check_layer(model, layer)
    return continue_from(model, run.hidden(layer - 1), run.attention_mask, layer)


@torch.no_grad()
def skip_every_layer(model, run: CachedRun, progress: bool = True, readout=None, bucket: int = 64) -> torch.Tensor:
    """Index 0 the unchanged last hidden state, index ``l`` the one with layer ``l`` skipped
    (:func:`skip_layer`): ``[L + 1, B, T, H]``. With a ``readout(hidden, attention_mask)`` (e.g. a
    :class:`SentenceHead`) only its output is kept, ``[L + 1, B, ...]``, not the hidden states.
    Items run in groups of ``bucket`` of similar length."""
    L, _ = model_sizes(model)
    mask = run.attention_mask
    if readout is None:
        states = [run.hidden(L)] + [torch.zeros_like(run.hidden(L)) for _ in range(L)]
    else:
        base = readout(run.hidden(L), mask)
        states = [base] + [torch.empty_like(base) for _ in range(L)]
    buckets = length_buckets(mask, bucket)
    for layer in progress_bar(range(1, L + 1), desc="skipping each layer", disable=not progress):
        for items, width in buckets:
            part = mask[items, :width]
            last = continue_from(model, run.hidden(layer - 1)[items, :width], part, layer)
            if readout is None:
                states[layer][items, :width] = last
            else:
                states[layer][items] = readout(last, part)
    return torch.stack(states)
