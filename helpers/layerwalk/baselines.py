"""Lesson 07 (:mod:`helpers.layerwalk`): random-pair baselines: how similar two unrelated tokens are at each
layer (anisotropy), resampled by sentence.

* :func:`random_pair_units`, :func:`random_pair_intervals`, :func:`random_pair_cosines`,
  :func:`random_pair_baseline` -- pairs
  drawn within a layer, their intervals by the pigeonhole bootstrap over sentences;
  :func:`pair_difference`, :func:`pair_ranking`, :func:`pair_step_verdicts` -- layers compared;
* across layers -- :func:`cross_layer_baseline`, :func:`cross_layer_control_matrix`;
* corrections -- mean-centring and standardising (:func:`layer_mean_std`), each dimension's
  contribution to the random-pair cosine (:func:`cosine_contributions`), :func:`cosines_by_variant`;
  :func:`anisotropy_profile`, both measures of one checkpoint (for the side-by-side with course-mini).
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from helpers.common.stats import (ALPHA, Interval, LayerRanking, Replicates, Verdict, bootstrap_size,
                                  extreme_family, family_level, pair_replicates, quartiles, verdict)
from helpers.common.ranking import ranking_of
from helpers.layerwalk.measures import _transformed, consecutive_cosines_per_token, pooled_vectors
from helpers.layerwalk.norms import top_dimensions
from helpers.model.tokens import content_positions
from helpers.model.trace import check_traces


def random_pair_baseline(traces, n_pairs: int = 500, seed: int = 0) -> torch.Tensor:
    """Mean cosine between random pairs of tokens, per layer: ``[L + 1]``.

    The anisotropy baseline of Ethayarajh (2019): two *unrelated* tokens (drawn from two
    different sentences, special tokens excluded) already have this similarity at that
    layer, so a similarity is only meaningful above it. The same seeded pairs are used at
    every layer, so the curve shows the layers, not sampling noise. The samples themselves
    (for an interval) come from :func:`random_pair_cosines`.
    """
    return random_pair_cosines(check_traces(traces), n_pairs, seed, gap=0).mean(dim=0)


def _random_pairs(traces, n_pairs: int, seed: int) -> list:
    """``n_pairs`` seeded pairs of content tokens from two *different* sentences."""
    if len(traces) < 2:
        raise ValueError("the baseline pairs tokens from different sentences: give at least 2 traces.")
    if isinstance(n_pairs, bool) or not isinstance(n_pairs, int) or n_pairs < 1:
        raise ValueError(f"n_pairs must be a positive int, got {n_pairs!r}.")
    pool = [(s, p) for s, t in enumerate(traces) for p in content_positions(t)]
    if len({s for s, _ in pool}) < 2:
        raise ValueError("fewer than 2 of the traces hold a content token: give sentences with words.")
    gen = torch.Generator().manual_seed(seed)
    pairs = []
    while len(pairs) < n_pairs:
        a, b = torch.randint(len(pool), (2,), generator=gen).tolist()  # cpu: seeded draws, read as ints
        if pool[a][0] != pool[b][0]:
            pairs.append((pool[a], pool[b]))
    return pairs


def random_pair_units(traces, n_pairs: int = 500, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The sentences (trace indices) of the two tokens of each seeded random pair, in the order of
    :func:`random_pair_cosines` with the same ``n_pairs`` and ``seed``: ``(first [n_pairs], second
    [n_pairs])``. A sentence's tokens sit in many pairs, so a bootstrap of pair statistics resamples
    sentences (:func:`~helpers.common.stats.pair_replicates`), not pairs."""
    pairs = _random_pairs(check_traces(traces), n_pairs, seed)
    return np.array([a[0] for a, _ in pairs]), np.array([b[0] for _, b in pairs])


def random_pair_intervals(samples, units, level: float = 0.95) -> list:
    """Per layer, the mean of random-pair ``samples [n_pairs, layers]`` with its pigeonhole-bootstrap
    interval over the sentences ``units`` (:func:`random_pair_units`)."""
    first, second = units
    return pair_replicates(samples, first, second).intervals(level)


def _pair_replicates(samples, units, n_boot: int, seed: int) -> Replicates:
    array = torch.as_tensor(samples, dtype=torch.float64).cpu().numpy()  # cpu: float64 statistics on results
    if array.ndim != 2 or array.shape[1] < 2:
        raise ValueError(f"samples must be [n_pairs, layers >= 2], got shape {array.shape}.")
    if units is None or len(units) != 2:
        raise ValueError("units must be (first, second): the sentences of each pair (random_pair_units).")
    first, second = units
    return pair_replicates(array, first, second, n_boot=n_boot, seed=seed)


def pair_difference(samples, units, a: int, b: int, *, level: float = 0.95, n_boot: int = 2000,
                    seed: int = 0) -> Interval:
    """Mean of column ``a`` minus column ``b`` of random-pair ``samples [n_pairs, layers]`` (the same
    pairs at both layers, so paired), with its pigeonhole-bootstrap interval over the sentences
    ``units`` (:func:`random_pair_units`)."""
    reps = _pair_replicates(samples, units, n_boot, seed)
    return reps.minus(int(b)).column(int(a)).interval(level)


def pair_ranking(samples, units, *, lowest: bool = False, n_boot: int | None = None, seed: int = 0,
                 alpha: float = ALPHA) -> LayerRanking:
    """:func:`~helpers.common.stats.rank_layers` for a statistic measured on random **pairs** of
    sentences (``samples [n_pairs, layers]``, e.g. :func:`random_pair_cosines`; ``units`` from
    :func:`random_pair_units`): the layer with the highest (``lowest=True``: lowest) mean, and every
    layer a paired comparison does not show to differ from it. Each replicate resamples the
    *sentences* (the pigeonhole bootstrap: a pair weighs the product of its two sentences' counts),
    the same draw for every layer, so the comparison is paired; the extreme is picked by the data,
    so the family is every pair of layers (Bonferroni)."""
    k = (samples.shape if hasattr(samples, "shape") else np.shape(samples))[-1]
    family = extreme_family(k)
    n_boot = min(bootstrap_size(family, alpha), 20000) if n_boot is None else n_boot
    return ranking_of(_pair_replicates(samples, units, n_boot, seed), lowest=lowest, unit="sentences", alpha=alpha)


def pair_step_verdicts(samples, units, *, names=None, n_boot: int | None = None, seed: int = 0,
                       alpha: float = ALPHA) -> list[Verdict]:
    """Each step ``mean[l] - mean[l - 1]`` of random-pair ``samples [n_pairs, layers]`` as a
    :class:`~helpers.common.stats.Verdict` ("higher": a rise, "lower": a fall, or "inconclusive"),
    the sentences resampled once for all layers (pigeonhole bootstrap over ``units``), read off
    Bonferroni intervals over the ``layers - 1`` steps (fixed in advance)."""
    k = (samples.shape if hasattr(samples, "shape") else np.shape(samples))[-1]
    family = k - 1
    n_boot = bootstrap_size(family, alpha) if n_boot is None else n_boot
    reps = _pair_replicates(samples, units, n_boot, seed).steps()
    names = [f"layer {j}" for j in range(k)] if names is None else list(names)
    if len(names) != k:
        raise ValueError(f"names must label the {k} layers, got {len(names)}.")
    ivs = reps.intervals(family_level(family, alpha))
    p = np.minimum(1.0, reps.p_values() * family)
    floor = min(1.0, family * reps.p_floor)
    return [verdict(ivs[l], a=names[l + 1], b=names[l], p_value=float(p[l]), p_floor=floor, family=family,
                    alpha=alpha) for l in range(family)]


def anisotropy_profile(traces, n_pairs: int = 500, seed: int = 0, k: int = 3) -> dict:
    """Lesson 07's two anisotropy measures on one model's ``traces``, for setting two checkpoints
    side by side: ``{"rank"}`` (:func:`pair_ranking` of the within-layer random-pair cosine, highest
    first), ``"steps"`` (:func:`pair_step_verdicts`), ``"names"`` (``"the embeddings"``, ``"layer 1"``,
    ...), ``"share"`` ``[L + 1]`` (share of each layer's random-pair cosine supplied by its ``k``
    most contributing dimensions, :func:`cosine_contributions`) and ``"dims"`` ``[L + 1, k]``."""
    traces = check_traces(traces)
    L = traces[0].num_layers
    units = random_pair_units(traces, n_pairs, seed)
    samples = random_pair_cosines(traces, n_pairs, seed)
    names = ["the embeddings"] + [f"layer {l}" for l in range(1, L + 1)]
    contrib = cosine_contributions(traces, n_pairs, seed)
    dims, top = top_dimensions(contrib, k)
    return {"rank": pair_ranking(samples, units, lowest=False),
            "steps": pair_step_verdicts(samples, units, names=names), "names": names,
            "share": top / contrib.sum(dim=-1), "dims": dims}


def layer_mean_std(traces, kind: str = "content") -> tuple[torch.Tensor, torch.Tensor]:
    """Per layer, the mean vector and the per-dimension standard deviation of every token of
    ``kind``: ``([L + 1, hidden], [L + 1, hidden])``. Subtracting the mean is Mu & Viswanath's (2018)
    first post-processing step; subtracting it and dividing by the deviation is the standardisation
    of Timkey & van Schijndel (2021). Pass them as ``shift``/``scale`` to the cosine functions."""
    stack = pooled_vectors(traces, kind)  # [L+1, N, hidden]
    return stack.mean(dim=1), stack.std(dim=1).clamp_min(1e-12)


def _pair_stacks(traces, n_pairs: int, seed: int, shift=None, scale=None) -> tuple[torch.Tensor, torch.Tensor]:
    """The two tokens of each seeded random pair (:func:`_random_pairs`) at every layer, transformed
    (:func:`_transformed`): ``(left, right)``, each ``[L + 1, n_pairs, hidden]``."""
    pairs = _random_pairs(traces, n_pairs, seed)
    stacks = [torch.stack(t.hidden_states) for t in traces]  # each [L+1, seq, hidden]
    left = torch.stack([stacks[s][:, p] for (s, p), _ in pairs], dim=1)  # [L+1, n_pairs, hidden]
    right = torch.stack([stacks[s][:, p] for _, (s, p) in pairs], dim=1)
    return _transformed(left, shift, scale), _transformed(right, shift, scale)


def cosine_contributions(traces, n_pairs: int = 500, seed: int = 0, shift=None, scale=None) -> torch.Tensor:
    """Each dimension's contribution to the random-pair cosine, per layer: ``[L + 1, hidden]``, the
    mean over the pairs of ``u_i v_i / (||u|| ||v||)`` (Timkey & van Schijndel 2021). A row sums to
    the mean of :func:`random_pair_cosines` (``gap=0``) on the same pairs."""
    traces = check_traces(traces)
    left, right = _pair_stacks(traces, n_pairs, seed, shift, scale)
    return (F.normalize(left, dim=-1) * F.normalize(right, dim=-1)).mean(dim=1)


def random_pair_cosines(traces, n_pairs: int = 500, seed: int = 0, gap: int = 0, shift=None,
                        scale=None) -> torch.Tensor:
    """Cosine between random token ``a`` at layer ``l`` and a *different* random token ``b`` (from
    another sentence) at layer ``l + gap``: ``[n_pairs, L + 1 - gap]``, one row per pair.

    ``gap=0`` gives the within-layer samples whose mean is :func:`random_pair_baseline`
    (Ethayarajh 2019 defined only this one). ``gap=1`` is the control that matches a
    consecutive-layer cosine: how similar two unrelated tokens are one layer apart. The same
    seeded pairs are used at every layer. ``shift``/``scale`` (``[L + 1, hidden]``, e.g.
    :func:`layer_mean_std`) transform every vector of a layer first: mean-centring or standardising.
    """
    traces = check_traces(traces)
    L = traces[0].num_layers
    if isinstance(gap, bool) or not isinstance(gap, int) or not 0 <= gap <= L:
        raise ValueError(f"gap must be an int from 0 to {L} (layers apart), got {gap!r}.")
    left, right = _pair_stacks(traces, n_pairs, seed, shift, scale)
    return F.cosine_similarity(left[: L + 1 - gap], right[gap:], dim=-1).T


def cross_layer_baseline(traces, layer_a: int, layer_b: int, n_pairs: int = 500, seed: int = 0) -> torch.Tensor:
    """Mean cosine between a random token at ``layer_a`` and a different random token (another
    sentence) at ``layer_b``: the control for comparing one token across those two layers."""
    traces = check_traces(traces)
    low, high = sorted((traces[0].check_layer(layer_a), traces[0].check_layer(layer_b)))
    return random_pair_cosines(traces, n_pairs, seed, gap=high - low)[:, low].mean()


def cross_layer_control_matrix(traces, n_pairs: int = 500, seed: int = 0) -> torch.Tensor:
    """``[L + 1, L + 1]``: entry ``(a, b)`` is the mean cosine between a random token at layer
    ``a`` and a *different* random token (another sentence) at layer ``b`` -- the control that
    matches the inter-layer cosine of one token between those two layers (the diagonal is the
    within-layer baseline). Subtract it before comparing cells of an inter-layer matrix."""
    traces = check_traces(traces)
    L = traces[0].num_layers
    out = torch.zeros(L + 1, L + 1, device=traces[0].device)
    for gap in range(L + 1):
        means = random_pair_cosines(traces, n_pairs, seed, gap=gap).mean(dim=0)  # [L + 1 - gap]
        for a in range(L + 1 - gap):
            out[a, a + gap] = out[a + gap, a] = means[a]
    return out


def cosines_by_variant(traces, variants: dict, n_pairs: int = 500, seed: int = 0) -> tuple[dict, dict]:
    """The anisotropy measures redone per preprocessing: ``variants`` maps a name to the keyword
    arguments (``shift``, ``scale``) of the cosine functions. Returns ``(baseline, turn)``: per name
    the within-layer random-pair cosine (mean of ``n_pairs`` pairs, ``[L + 1]``), and the data tokens'
    median layer-to-layer cosine minus its one-layer-apart control (a list of ``L`` floats)."""
    baseline, turn = {}, {}
    for name, kw in variants.items():
        baseline[name] = random_pair_cosines(traces, n_pairs=n_pairs, seed=seed, **kw).mean(dim=0)
        control = random_pair_cosines(traces, n_pairs=n_pairs, seed=seed, gap=1, **kw).mean(dim=0)
        median = torch.as_tensor(quartiles(consecutive_cosines_per_token(traces, "content", **kw))[1],
                                 device=control.device)
        turn[name] = (median - control).tolist()
    return baseline, turn
