"""Lesson 07 numbers: a token's vector across layers -- norms, cosines, the anisotropy
baseline, PCA.

Everything works on cached :class:`~helpers.model.trace.Trace` objects. Layer ``0`` is the
embedding output, ``1 .. L`` the encoder layers."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from helpers.common.stats import (ALPHA, Interval, LayerRanking, Replicates, Verdict,  # noqa: F401 (re-exported)
                                  bootstrap_size, extreme_family, family_level, pair_replicates, rank_layers,
                                  quartiles, step_verdicts, unit_weights, verdict)
from helpers.model.tokens import content_positions
from helpers.model.trace import Trace, check_trace, check_traces, device_of


def token_by_layer(trace: Trace, token: int) -> torch.Tensor:
    """The vector of one token after every layer: ``[L + 1, hidden]``."""
    check_trace(trace).check_token(token)
    return torch.stack([trace.hidden(layer)[token] for layer in range(trace.num_layers + 1)])


def layer_norms(trace: Trace, token: int | None = None) -> torch.Tensor:
    """L2 norm per layer, ``[L + 1]``: of one token, or averaged over all tokens when ``token`` is None."""
    check_trace(trace)
    if token is not None:
        return token_by_layer(trace, token).norm(dim=-1)
    return torch.stack([h.norm(dim=-1).mean() for h in trace.hidden_states])


def consecutive_cosines(trace: Trace, token: int | None = None) -> torch.Tensor:
    """Cosine between a token's vector after layer ``l`` and after layer ``l + 1``: ``[L]``.

    Entry ``i`` compares layer ``i`` with layer ``i + 1``. With ``token=None`` the cosine is
    computed for every token and averaged.
    """
    check_trace(trace)
    stack = torch.stack(trace.hidden_states)  # [L+1, seq, hidden]
    if token is not None:
        stack = stack[:, trace.check_token(token) : token + 1]
    return F.cosine_similarity(stack[:-1], stack[1:], dim=-1).mean(dim=-1)


def interlayer_similarity(trace: Trace, token: int | None = None) -> torch.Tensor:
    """Cosine between every pair of layers, ``[L + 1, L + 1]`` (one token, or the token average)."""
    check_trace(trace)
    stack = F.normalize(torch.stack(trace.hidden_states), dim=-1)  # [L+1, seq, hidden]
    if token is not None:
        stack = stack[:, trace.check_token(token) : token + 1]
    # [seq, L+1, hidden] @ [seq, hidden, L+1] -> per-token layer-by-layer cosines
    per_token = stack.transpose(0, 1) @ stack.permute(1, 2, 0)
    return per_token.mean(dim=0)


def random_pair_baseline(traces, n_pairs: int = 500, seed: int = 0) -> torch.Tensor:
    """Mean cosine between random pairs of tokens, per layer: ``[L + 1]``.

    The anisotropy baseline of Ethayarajh (2019): two *unrelated* tokens (drawn from two
    different sentences, special tokens excluded) already have this similarity at that
    layer, so a similarity is only meaningful above it. The same seeded pairs are used at
    every layer, so the curve shows the layers, not sampling noise. The samples themselves
    (for an interval) come from :func:`random_pair_cosines`.
    """
    return random_pair_cosines(check_traces(traces), n_pairs, seed, gap=0).mean(dim=0)


def baseline_adjusted(similarity: torch.Tensor, baseline: torch.Tensor) -> torch.Tensor:
    """``similarity - baseline`` per layer (Ethayarajh 2019's adjustment for anisotropy)."""
    device = device_of(similarity, baseline)
    similarity, baseline = torch.as_tensor(similarity, device=device), torch.as_tensor(baseline, device=device)
    if similarity.shape[-1] != baseline.shape[-1]:
        raise ValueError(
            f"similarity has {similarity.shape[-1]} layers but baseline has {baseline.shape[-1]}: "
            "compute both on the same model."
        )
    return similarity - baseline


def pca_trajectory(trace: Trace, tokens: list[int], n_components: int = 2) -> torch.Tensor:
    """Project the chosen tokens' vectors at every layer onto their top principal components.

    The components are fitted on the vectors of *all* tokens at *all* layers (so the picture
    is not tuned to the chosen tokens). Returns ``[len(tokens), L + 1, n_components]``.
    Signs are fixed so the largest-magnitude loading of each component is positive
    (SVD signs are otherwise arbitrary).
    """
    check_trace(trace)
    if not tokens:
        raise ValueError("tokens must list at least one token position.")
    for t in tokens:
        trace.check_token(t)
    stack = torch.stack(trace.hidden_states)  # [L+1, seq, hidden]
    flat = stack.reshape(-1, stack.shape[-1])
    if not 1 <= n_components <= min(flat.shape):
        raise ValueError(f"n_components must be 1 to {min(flat.shape)}, got {n_components}.")
    mean = flat.mean(dim=0)
    _, _, vh = torch.linalg.svd(flat - mean, full_matrices=False)
    comps = vh[:n_components]
    signs = torch.sign(comps.gather(1, comps.abs().argmax(dim=1, keepdim=True)))
    comps = comps * signs
    chosen = stack[:, tokens].transpose(0, 1)  # [k, L+1, hidden]
    return (chosen - mean) @ comps.T



def pca_variance_ratio(trace: Trace, n_components: int = 2) -> torch.Tensor:
    """Share of the variance of all tokens at all layers that each of the first
    ``n_components`` principal components (those of :func:`pca_trajectory`) explains."""
    check_trace(trace)
    flat = torch.stack(trace.hidden_states).reshape(-1, trace.hidden_size)
    if not 1 <= n_components <= min(flat.shape):
        raise ValueError(f"n_components must be 1 to {min(flat.shape)}, got {n_components}.")
    singular = torch.linalg.svdvals(flat - flat.mean(dim=0))
    return (singular[:n_components] ** 2) / (singular**2).sum()

# -- over many tokens: the aggregate every per-layer story is read from (issue 13) ----------

TOKEN_KINDS = ("content", "[CLS]", "[SEP]", "all")


def positions_of_kind(trace: Trace, kind: str = "content") -> list[int]:
    """Positions of one kind of token: ``"content"`` (everything but [CLS]/[SEP]/[PAD]),
    ``"[CLS]"``, ``"[SEP]"`` or ``"all"``."""
    check_trace(trace)
    if kind == "content":
        return content_positions(trace)
    if kind == "all":
        return list(range(trace.seq_len))
    if kind in ("[CLS]", "[SEP]"):
        return [i for i, t in enumerate(trace.tokens) if t == kind]
    raise ValueError(f"kind {kind!r} is not valid: choose one of {TOKEN_KINDS}.")


def pooled_vectors(traces, kind: str = "content") -> torch.Tensor:
    """The vectors of every token of ``kind`` in ``traces``, at every layer: ``[L + 1, N, hidden]``."""
    traces = check_traces(traces)
    parts = [torch.stack(t.hidden_states)[:, positions_of_kind(t, kind)] for t in traces]
    pooled = torch.cat(parts, dim=1)
    if pooled.shape[1] == 0:
        raise ValueError(f"the traces hold no {kind!r} token: choose another kind from {TOKEN_KINDS}.")
    return pooled


def consecutive_cosines_per_token(traces, kind: str = "content", shift=None, scale=None) -> torch.Tensor:
    """:func:`consecutive_cosines` of every token of ``kind``: ``[N, L]`` (one row per token);
    ``shift``/``scale`` as in :func:`random_pair_cosines`."""
    stack = _transformed(pooled_vectors(traces, kind), shift, scale)
    return F.cosine_similarity(stack[:-1], stack[1:], dim=-1).T


def layer_norms_per_token(traces, kind: str = "content") -> torch.Tensor:
    """L2 norm of every token of ``kind`` at every layer: ``[N, L + 1]``."""
    return pooled_vectors(traces, kind).norm(dim=-1).T


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


def interlayer_similarity_per_token(traces, kind: str = "content") -> torch.Tensor:
    """:func:`interlayer_similarity` of every token of ``kind``: ``[N, L + 1, L + 1]``."""
    stack = F.normalize(pooled_vectors(traces, kind), dim=-1).transpose(0, 1)  # [N, L+1, hidden]
    return stack @ stack.transpose(1, 2)


def interlayer_similarity_all_tokens(trace: Trace) -> torch.Tensor:
    """Every token's layer-by-layer cosine matrix of one trace at once: ``[seq, L + 1, L + 1]``
    (what the explorer caches; one batched product instead of a loop over tokens)."""
    stack = F.normalize(torch.stack(check_trace(trace).hidden_states), dim=-1).transpose(0, 1)
    return stack @ stack.transpose(1, 2)


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
    reps = _pair_replicates(samples, units, n_boot, seed)
    extreme = int(np.argmin(reps.estimate) if lowest else np.argmax(reps.estimate))
    diffs = reps.minus(extreme)
    differences = diffs.intervals(family_level(family, alpha))
    p_adj = np.minimum(1.0, diffs.p_values() * family)
    p_adj[extreme] = 1.0
    tied = [j for j in range(k) if j == extreme or differences[j].contains(0.0)]
    return LayerRanking(reps.intervals(0.95), extreme, tied, differences, [float(p) for p in p_adj], alpha,
                        "sentences", family, min(1.0, family * reps.p_floor))


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


def names_phrase(names) -> str:
    """``"a"``, ``"a and b"``, ``"a, b and c"``."""
    names = [str(n) for n in names]
    if not names:
        return "none"
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def layers_phrase(layers) -> str:
    """``"layer 1"``, ``"layers 2, 3 and 4"``."""
    layers = list(layers)
    return ("layer " if len(layers) == 1 else "layers ") + names_phrase(layers)


def ranking_sentence(ranking: LayerRanking, names, what: str, *, highest: bool = True, unit: str = "layer",
                     could: str | None = None, percent: bool = False) -> str:
    """One plain sentence from a :class:`~helpers.common.stats.LayerRanking`, generated from its
    numbers: "The random-pair cosine is highest at layer 5 (0.231), clearly above every other
    layer, the embeddings (0.057) and layer 6 (0.050) included." or "...; layers 4 and 6 could be
    just as high. At the embeddings (0.057) it is clearly lower." ``names`` labels the columns,
    ``unit`` names one of them ("layer", "transition"); ``what`` is the subject; ``could`` replaces
    "just as high"/"just as low"; ``percent`` prints the values as percentages."""
    names = list(names)
    k = len(names)
    num = (lambda v: f"{100 * v:.0f} %") if percent else _num
    word, side = ("highest", "above") if highest else ("lowest", "below")
    could = could or ("just as high" if highest else "just as low")
    top = ranking.extreme
    others = [names[j] for j in ranking.tied if j != top]
    ends = [j for j in dict.fromkeys((0, k - 1)) if j not in ranking.tied]
    where = names_phrase([f"{names[j]} ({num(ranking.intervals[j].estimate)})" for j in ends])
    head = f"{what[:1].upper()}{what[1:]} is {word} at {names[top]} ({num(ranking.intervals[top].estimate)})"
    if not others:
        return f"{head}, clearly {side} every other {unit}" + (f", {where} included." if ends else ".")
    return (f"{head}; {names_phrase(others)} could be {could}."
            + (f" At {where} it is clearly {'lower' if highest else 'higher'}." if ends else ""))


def steps_sentence(steps, names, *, what: str = "it", up: str = "rises", down: str = "falls") -> str:
    """The steps of a profile (:class:`~helpers.common.stats.Verdict` s of ``value[l] - value[l - 1]``,
    :func:`pair_step_verdicts` or :func:`~helpers.common.stats.step_verdicts`) in plain words:
    "it rises into layers 1 and 2 and falls into layer 6; we cannot tell at the other steps".
    ``names`` labels the steps (one per verdict)."""
    names = list(names)
    if len(names) != len(steps):
        raise ValueError(f"names must label the {len(steps)} steps, got {len(names)}.")
    rise = [n for n, v in zip(names, steps) if v.kind == "higher"]
    fall = [n for n, v in zip(names, steps) if v.kind == "lower"]
    unsure = [n for n, v in zip(names, steps) if v.kind not in ("higher", "lower")]
    parts = ([f"{up} at {names_phrase(rise)}"] if rise else []) + ([f"{down} at {names_phrase(fall)}"] if fall else [])
    text = f"{what} " + " and ".join(parts) if parts else f"we cannot tell whether {what} {up} or {down} at any step"
    if parts and unsure:
        text += f"; we cannot tell at {names_phrase(unsure)}"
    return text


def profile_finding(ranking: LayerRanking, names, *, what: str, highest: bool = True, steps=None,
                    step_names=None, unit: str = "layer", percent: bool = False) -> tuple[str, list[str]]:
    """A profile over the layers as ``(sentence, details)`` for
    :func:`~helpers.common.claims.show_finding`: the extreme layer and those that could be as
    extreme (:func:`ranking_sentence`), whether the first and the last column differ from the
    extreme, and, with ``steps`` (their verdicts, labelled by ``step_names``), which steps rise or
    fall. Every word comes from the intervals; the details hold the verdicts' full text."""
    names = list(names)
    k = len(names)
    e = ranking.extreme
    sentence = ranking_sentence(ranking, names, what, highest=highest, unit=unit, percent=percent)
    details = [f"{names[e]}: {ranking.intervals[e]} (95 % interval); each other {unit} minus it, read off its "
               f"interval at the Bonferroni level over the {ranking.family_size} pairs of {unit}s:"]
    details += [ranking.verdict(j, a=names[j], b=names[e]).text for j in range(k) if j != e]
    if steps is not None:
        step_names = step_names or [f"{a} to {b}" for a, b in zip(names[:-1], names[1:])]
        sentence += " From one layer to the next, " + steps_sentence(steps, step_names, what="it") + "."
        details += [f"Steps from one {unit} to the next (Bonferroni over the steps):"] + [v.text for v in steps]
    return sentence, details


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


def last_layer_word(ranking: LayerRanking) -> str:
    """Where a profile's last column stands against its highest: ``"is the peak"``, ``"could be as
    high"`` (not shown different) or ``"drops"`` (clearly lower)."""
    last = len(ranking.intervals) - 1
    if ranking.extreme == last:
        return "is the peak"
    return "could be as high" if last in ranking.tied else "drops"


def layer_mean_std(traces, kind: str = "content") -> tuple[torch.Tensor, torch.Tensor]:
    """Per layer, the mean vector and the per-dimension standard deviation of every token of
    ``kind``: ``([L + 1, hidden], [L + 1, hidden])``. Subtracting the mean is Mu & Viswanath's (2018)
    first post-processing step; subtracting it and dividing by the deviation is the standardisation
    of Timkey & van Schijndel (2021). Pass them as ``shift``/``scale`` to the cosine functions."""
    stack = pooled_vectors(traces, kind)  # [L+1, N, hidden]
    return stack.mean(dim=1), stack.std(dim=1).clamp_min(1e-12)


def _transformed(stack: torch.Tensor, shift=None, scale=None) -> torch.Tensor:
    """``(stack - shift) / scale`` per layer for ``stack [L + 1, n, hidden]`` (each ``[L + 1, hidden]``
    or None: left as it is)."""
    if shift is not None:
        stack = stack - torch.as_tensor(shift, device=stack.device)[:, None]
    if scale is not None:
        stack = stack / torch.as_tensor(scale, device=stack.device)[:, None]
    return stack


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


# -- norms: every hidden state is the output of a LayerNorm ---------------------------------

def final_layer_norms(model) -> list:
    """The LayerNorm that produces each hidden state, layers ``0 .. L``: the embeddings'
    ``embeddings.LayerNorm``, then each layer's ``output.LayerNorm`` (BERT is post-LN)."""
    bert = getattr(model, "bert", model)
    if not hasattr(bert, "embeddings") or not hasattr(bert, "encoder"):
        raise TypeError(f"expected a BertModel (or a model with a .bert), got {type(model).__name__}.")
    return [bert.embeddings.LayerNorm] + [layer.output.LayerNorm for layer in bert.encoder.layer]


def layer_norm_inputs(tokenizer, model, text: str, text_pair: str | None = None) -> list[torch.Tensor]:
    """Run the model once with forward hooks and return what each final LayerNorm received,
    ``[seq, hidden]`` for layers ``0 .. L`` (the residual sum before normalisation)."""
    from helpers.model.trace import encode

    captured = {}
    hooks = [ln.register_forward_hook(lambda mod, args, out, i=i: captured.__setitem__(i, args[0][0].detach()))
             for i, ln in enumerate(final_layer_norms(model))]
    try:
        enc, _ = encode(tokenizer, model, text, text_pair)
        enc.pop("offset_mapping")
        with torch.no_grad():
            model(**enc)
    finally:
        for hook in hooks:
            hook.remove()
    return [captured[i] for i in range(len(captured))]


def norm_parts(traces, model, kind: str = "content") -> dict[str, torch.Tensor]:
    """Split every token's length into what the LayerNorm that made it contributes.

    Each hidden state is ``h = gamma * z_hat + beta`` with ``z_hat`` of mean 0 and variance 1
    over the hidden dimension, so ``||z_hat|| = sqrt(H)`` for *every* token. With
    ``s = gamma * z_hat = h - beta`` (no division needed):

    ``||h||^2 = ||s||^2 + 2 <s, beta> + ||beta||^2``.

    Returns ``[N, L + 1]`` tensors ``norm`` (||h||), ``scaled`` (||gamma * z_hat||),
    ``cross`` (2 <s, beta>) and ``[L + 1]`` tensors ``gamma`` (||gamma||: what ``||s||``
    would be if ``z_hat`` spread its energy evenly over the dimensions) and ``beta`` (||beta||).
    """
    stack = pooled_vectors(traces, kind)  # [L+1, N, hidden]
    lns = final_layer_norms(model)
    if len(lns) != stack.shape[0]:
        raise ValueError(f"the traces have {stack.shape[0]} hidden states but the model {len(lns)} LayerNorms.")
    gamma = torch.stack([ln.weight.detach() for ln in lns])  # [L+1, hidden]
    beta = torch.stack([ln.bias.detach() for ln in lns])
    scaled = stack - beta[:, None]
    return {
        "norm": stack.norm(dim=-1).T,
        "scaled": scaled.norm(dim=-1).T,
        "cross": (2 * (scaled * beta[:, None]).sum(-1)).T,
        "gamma": gamma.norm(dim=-1),
        "beta": beta.norm(dim=-1),
    }


def energy_by_dimension(traces, kind: str = "content") -> torch.Tensor:
    """Share of the squared length ``||h||^2`` carried by each dimension, per layer:
    ``[L + 1, hidden]`` (mean ``h_i^2`` over the tokens, divided by mean ``||h||^2``; rows sum to 1)."""
    sq = pooled_vectors(traces, kind).pow(2)  # [L+1, N, hidden]
    return sq.mean(dim=1) / sq.sum(dim=-1).mean(dim=1, keepdim=True)


def top_dimensions(shares: torch.Tensor, k: int = 3) -> tuple[torch.Tensor, torch.Tensor]:
    """The ``k`` dimensions with the largest share per layer and the share they carry together:
    ``(dims [L + 1, k], share [L + 1])``."""
    shares = torch.as_tensor(shares, device=device_of(shares))
    if shares.ndim != 2 or not 1 <= k <= shares.shape[1]:
        raise ValueError(f"shares must be [layers, hidden] and k from 1 to hidden, got {tuple(shares.shape)}, k={k}.")
    top = shares.topk(k, dim=1)
    return top.indices, top.values.sum(dim=1)


def layer_norm_outliers(model, n_sigma: float = 3.0) -> list[list[int]]:
    """Dimensions whose LayerNorm scale or bias lies more than ``n_sigma`` standard deviations
    from that vector's mean, per layer ``0 .. L``. The course's test, in the spirit of Kovaleva
    et al. (2021, *BERT Busters*; high-magnitude output-LayerNorm scales and biases at the same
    position in every layer of BERT-base); their paper's exact threshold is not reproduced here.
    :func:`outliers_in_every_layer` adds their second condition, the same position throughout."""
    out = []
    for ln in final_layer_norms(model):
        flagged = set()
        for vec in (ln.weight.detach(), ln.bias.detach()):
            z = (vec - vec.mean()) / vec.std().clamp_min(1e-12)
            flagged |= set(torch.nonzero(z.abs() > n_sigma).flatten().tolist())
        out.append(sorted(flagged))
    return out


VARIANCE_PARTS = ("layer", "token", "interaction")
WITHIN_LAYER = "within a layer"  # token + interaction: how much lengths differ between the tokens of one layer


def variance_split(values) -> dict[str, float]:
    """Two-way split of the variance of ``values [N, L + 1]`` (one value per token and layer):
    the shares of the total sum of squares due to the **layer** (the layer means), the **token**
    (each token's mean over the layers) and their **interaction** (what is left: tokens that are
    long at some layers and short at others). The three add up to 1. A forward pass is
    deterministic, so the interaction is no noise: it is real token-by-layer structure, and
    token + interaction (``1 - layer``) is how much lengths differ between the tokens *of one
    layer*."""
    values = torch.as_tensor(values, dtype=torch.float64, device="cpu")  # cpu: float64 statistics on results
    if values.ndim != 2 or values.numel() < 2:
        raise ValueError(f"values must be [n_tokens, layers], got shape {tuple(values.shape)}.")
    grand = values.mean()
    total = ((values - grand) ** 2).sum()
    if total <= 0:
        return {"layer": 0.0, "token": 0.0, "interaction": 0.0}
    layer = values.shape[0] * ((values.mean(dim=0) - grand) ** 2).sum() / total
    token = values.shape[1] * ((values.mean(dim=1) - grand) ** 2).sum() / total
    return {"layer": float(layer), "token": float(token), "interaction": float(1 - layer - token)}


def _weighted_split(v: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``[B, 3]`` shares (layer, token, interaction) of :func:`variance_split` for the rows of
    ``v [N, K]`` weighted by each row of ``w [B, N]`` (a bootstrap draw: how often each row was
    drawn), all at once."""
    K = v.shape[1]
    W = w.sum(axis=1)  # [B]
    means = (w @ v) / W[:, None]  # [B, K] layer means
    grand = means.mean(axis=1)  # [B]
    total = w @ (v ** 2).sum(axis=1) - W * K * grand ** 2
    layer = W * ((means - grand[:, None]) ** 2).sum(axis=1)
    rows = v.mean(axis=1)
    token = K * (w @ rows ** 2 - W * grand ** 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.stack([layer, token, total - layer - token], axis=1) / total[:, None]
    return np.where(total[:, None] > 0, out, 0.0)


def variance_split_replicates(values, n_boot: int = 2000, seed: int = 0, clusters=None) -> Replicates:
    """Bootstrap replicates of the three parts of :func:`variance_split` (columns in the order of
    :data:`VARIANCE_PARTS`), resampling tokens (rows, each keeping its layers) or whole ``clusters``
    (e.g. :func:`cluster_labels`: sentences), the same draws for the three parts."""
    v = torch.as_tensor(values, dtype=torch.float64, device="cpu").numpy()  # cpu: float64 statistics on results
    if v.ndim != 2 or v.shape[0] < 2:
        raise ValueError(f"values must be [n_tokens >= 2, layers], got shape {tuple(v.shape)}.")
    if isinstance(n_boot, bool) or not isinstance(n_boot, int) or n_boot < 100:
        raise ValueError(f"n_boot must be an int >= 100, got {n_boot!r}.")
    labels = np.arange(v.shape[0]) if clusters is None else np.asarray(clusters)
    if labels.shape != (v.shape[0],):
        raise ValueError(f"clusters must name one unit per item: {v.shape[0]} labels, got shape {labels.shape}.")
    units, index = np.unique(labels, return_inverse=True)
    if units.size < 2:
        raise ValueError("a cluster bootstrap needs at least two clusters.")
    weights = unit_weights(units.size, n_boot, seed)[:, index]  # [B, N]: each row weighs its unit's count
    est = variance_split(v)
    return Replicates(np.array([est[p] for p in VARIANCE_PARTS]), _weighted_split(v, weights), int(units.size),
                      "sentences" if clusters is not None else "tokens")


def variance_split_ci(values, n_boot: int = 2000, level: float = 0.95, seed: int = 0,
                      clusters=None) -> dict[str, Interval]:
    """:func:`variance_split` with an interval per part (the course's bootstrap rule,
    :class:`~helpers.common.stats.Replicates`), resampling tokens or whole ``clusters``, the same
    draws for every part; the key :data:`WITHIN_LAYER` adds token + interaction (``1 - layer``)."""
    reps = variance_split_replicates(values, n_boot=n_boot, seed=seed, clusters=clusters)
    within = Replicates(reps.estimate[1:].sum(keepdims=True), reps.boots[:, 1:].sum(axis=1), reps.n_units, reps.unit)
    out = dict(zip(VARIANCE_PARTS, reps.intervals(level)))
    out[WITHIN_LAYER] = within.interval(level)
    return out


def share_explained_by_layer(values) -> float:
    """Fraction of the variance of ``values [N, L + 1]`` (all tokens, all layers) explained by
    the layer alone (eta squared: between-layer variance over total variance; the ``"layer"``
    part of :func:`variance_split`)."""
    return variance_split(values)["layer"]


def share_explained_by_layer_ci(values, n_boot: int = 1000, level: float = 0.95, seed: int = 0,
                                clusters=None) -> Interval:
    """:func:`share_explained_by_layer` with a percentile bootstrap interval over the tokens
    (rows of ``values [N, L + 1]``; each replicate keeps a token's layers together), or over whole
    ``clusters`` (one label per row, e.g. :func:`cluster_labels`: the tokens of one sentence are not
    independent, so the sentence is the unit to resample): the ``"layer"`` part of
    :func:`variance_split_ci`."""
    return variance_split_ci(values, n_boot, level, seed, clusters)["layer"]


# -- naming "the" layer: rank_layers and step_verdicts live in helpers/common/stats.py (re-exported here)

def cluster_labels(traces, kind: str = "content") -> np.ndarray:
    """The sentence (trace index) of every token of ``kind`` in ``traces``, in the order of
    :func:`pooled_vectors` and the ``*_per_token`` functions: the cluster labels that make a
    bootstrap resample whole sentences (tokens of one sentence are not independent)."""
    traces = check_traces(traces)
    return np.concatenate([np.full(len(positions_of_kind(t, kind)), i) for i, t in enumerate(traces)])


def outlier_counts(outliers: list[list[int]], top_dims=None) -> list[dict]:
    """Per flagged dimension, in how many of the ``L + 1`` LayerNorms it is a 3-sigma outlier
    (:func:`layer_norm_outliers`) and, with ``top_dims [L + 1, k]`` (:func:`top_dimensions`), in
    which layers it is among the top contributors too: one dict per dimension flagged at least
    twice, most often flagged first (``{"dimension", "flagged in", "layers", "top contributor in"}``)."""
    counts: dict[int, list[int]] = {}
    for layer, flagged in enumerate(outliers):
        for d in flagged:
            counts.setdefault(int(d), []).append(layer)
    top = None if top_dims is None else [set(torch.as_tensor(t).tolist()) for t in top_dims]  # cpu: ids as a list
    rows = []
    for d, layers in counts.items():
        if len(layers) < 2:
            continue
        row = {"dimension": d, "flagged in": len(layers), "layers": layers}
        if top is not None:
            row["top contributor in"] = [l for l, dims in enumerate(top) if d in dims]
        rows.append(row)
    return sorted(rows, key=lambda r: (-r["flagged in"], -len(r.get("top contributor in", ())), r["dimension"]))


def outlier_sentence(rows: list[dict], n_layer_norms: int) -> str:
    """:func:`outlier_counts` in plain words: whether any dimension is an outlier in every
    LayerNorm, which come closest, and where those are top contributors to the cosine too."""
    if not rows:
        return "No dimension is a LayerNorm outlier in more than one LayerNorm."
    most = rows[0]["flagged in"]
    closest = [r for r in rows if r["flagged in"] == most]
    dims = names_phrase([r["dimension"] for r in closest])
    if most == n_layer_norms:
        text = f"Dimension{'s' if len(closest) > 1 else ''} {dims} {'are' if len(closest) > 1 else 'is'} an outlier " \
               f"in every one of the {n_layer_norms} LayerNorms"
    else:
        text = (f"No dimension is an outlier in all {n_layer_norms} LayerNorms; the closest, "
                f"dimension{'s' if len(closest) > 1 else ''} {dims}, {'are' if len(closest) > 1 else 'is'} flagged in "
                f"{most} of {n_layer_norms}")
    top = [r for r in closest if r.get("top contributor in")]
    if top:
        parts = [f"{r['dimension']} in {layers_phrase(r['top contributor in'])}" for r in top]
        parts[0] = parts[0].replace(" in ", " is also among the top contributors to the random-pair cosine in ", 1)
        text += "; of them, " + names_phrase(parts)
    return text + "."


def outliers_in_every_layer(outliers: list[list[int]]) -> list[int]:
    """The dimensions flagged (:func:`layer_norm_outliers`) in *every* layer: Kovaleva et al.
    (2021) found BERT-base's outliers at the same positions throughout the model."""
    if not outliers:
        return []
    common = set(outliers[0])
    for flagged in outliers[1:]:
        common &= set(flagged)
    return sorted(common)


def path_lengths(coords) -> torch.Tensor:
    """Length of each path ``[k, layers, d]`` (e.g. :func:`pca_trajectory`): the sum of its
    step lengths, ``[k]``, in the units of the projection."""
    coords = torch.as_tensor(coords, device=device_of(coords))
    if coords.ndim != 3 or coords.shape[1] < 2:
        raise ValueError(f"coords must be [paths, layers >= 2, dims], got shape {tuple(coords.shape)}.")
    return (coords[:, 1:] - coords[:, :-1]).norm(dim=-1).sum(dim=1)


# -- lesson 07's tables and findings: rows for show_table, sentences for show_finding -----------

def _layer(l: int) -> str:
    return "emb" if l == 0 else str(l)


def transition_rows(names, per_token, token_values, token_name: str, cls_per_token=None) -> list[dict]:
    """Rows of a per-transition table of layer-to-layer cosines (raw or minus the control): the data
    tokens' median [interquartile range] of ``per_token [N, L]``, the ``[CLS]`` tokens' median of
    ``cls_per_token [N_cls, L]`` when given, and the followed token's ``token_values [L]`` under the
    column ``token_name``; three decimals."""
    q25, med, q75 = quartiles(per_token)
    cls_med = None if cls_per_token is None else quartiles(cls_per_token)[1]
    rows = []
    for l, name in enumerate(names):
        row = {"transition": name, "data tokens: median [IQR]": f"{med[l]:.3f} [{q25[l]:.3f}-{q75[l]:.3f}]"}
        if cls_med is not None:
            row["[CLS]: median"] = f"{cls_med[l]:.3f}"
        row[token_name] = f"{token_values[l]:.3f}"
        rows.append(row)
    return rows


def baseline_rows(within_ci: list, cross_ci: list, mean_of_two, names) -> list[dict]:
    """Rows of the random-pair baseline table, one per layer (``L + 1``): the same-layer mean with its
    interval (``within_ci``), and for every layer but the last its transition's name, the
    one-layer-apart control (``cross_ci``) and the mean of the two same-layer values (``mean_of_two``);
    the last layer has no next one, so its transition cells stay empty."""
    L = len(cross_ci)
    return [{"layer": _layer(l), "same layer": str(within_ci[l]),
             "transition": names[l] if l < L else "",
             "one layer apart": str(cross_ci[l]) if l < L else "",
             "mean of two same-layer": f"{mean_of_two[l]:.3f}" if l < L else ""} for l in range(L + 1)]


def turn_rows(turn: LayerRanking, names, adjusted_share, raw_share) -> list[dict]:
    """Rows of "where the data tokens turn most": per transition the adjusted median with its interval
    (``turn``, :func:`rank_layers`) and the shares of tokens whose lowest adjusted and raw
    layer-to-layer cosine is there, as whole percentages."""
    return [{"transition": name, "adjusted median [95 % CI]": str(turn.intervals[l]),
             "tokens turning most here": f"{adjusted_share[l]:.0%}", "same, raw cosine": f"{raw_share[l]:.0%}"}
            for l, name in enumerate(names)]


def norm_rows(norms, norms_data, token_name: str) -> list[dict]:
    """Rows of the L2-norm table, one per layer: the data tokens' median [interquartile range] of
    ``norms_data [N, L + 1]`` and the followed token's ``norms [L + 1]``; two decimals."""
    q25, med, q75 = quartiles(norms_data)
    return [{"layer": _layer(l), "data median": f"{med[l]:.2f} [IQR {q25[l]:.2f}-{q75[l]:.2f}]",
             f"this token ({token_name})": f"{norms[l]:.2f}"} for l in range(len(med))]


def step_rows(steps, names) -> list[dict]:
    """Rows of the step table of the mean length: per step (``names``) the change of the mean
    (its verdict's estimate) and the reading, "grows", "shrinks" or "cannot tell"."""
    words = {"higher": "grows", "lower": "shrinks"}
    return [{"step": name, "change of the mean length": f"{v.difference.estimate:+.3g}",
             "reading": words.get(v.kind, "cannot tell")} for name, v in zip(names, steps)]


def growth_finding(steps, names, medians) -> tuple[str, str, list[str]]:
    """Whether the mean length grows at every step, from the step verdicts (:func:`step_verdicts`):
    ``(grows, sentence, details)``; ``grows`` is "met" (every step higher), "not met" (some step
    lower) or "inconclusive"; the sentence names each step's reading and the layers where the median
    length (``medians [L + 1]``) is shortest and longest; the details are the verdicts' texts."""
    grows = ("met" if all(v.kind == "higher" for v in steps)
             else "not met" if any(v.kind == "lower" for v in steps) else "inconclusive")
    head = {"met": "grows at every step", "not met": "does not grow at every step"}.get(
        grows, "may or may not grow at every step")
    medians = np.asarray(medians)
    sentence = (f"The mean length {head}: " + steps_sentence(steps, names, what="it", up="grows", down="shrinks")
                + f". The median is shortest at layer {int(medians.argmin())}, longest at layer "
                f"{int(medians.argmax())}.")
    return grows, sentence, [v.text for v in steps]


def parts_rows(parts: dict) -> list[dict]:
    """Rows of the LayerNorm-parts table (:func:`norm_parts`), one per layer: the data tokens'
    medians of ``||h||``, ``||gamma*z_hat||`` and ``2<s,beta>``, and the layer's ``||gamma||`` and
    ``||beta||``; two decimals."""
    med = {key: quartiles(parts[key])[1] for key in ("norm", "scaled", "cross")}
    return [{"layer": _layer(l), "median ||h||": f"{med['norm'][l]:.2f}",
             "median ||gamma*z_hat||": f"{med['scaled'][l]:.2f}", "||gamma||": f"{parts['gamma'][l]:.2f}",
             "||beta||": f"{parts['beta'][l]:.2f}", "median 2<s,beta>": f"{med['cross'][l]:.2f}"}
            for l in range(len(med["norm"]))]


def top_dimension_rows(contrib, dims, top_share, outliers: list[list[int]]) -> list[dict]:
    """Rows of the dominant-dimension table, one per layer: the random-pair cosine (the sum of the
    layer's ``contrib``, :func:`cosine_contributions`), its top dimensions ``dims`` and the share
    ``top_share`` they supply, the layer's LayerNorm outliers (:func:`layer_norm_outliers`) and the
    dimensions in both lists."""
    return [{"layer": _layer(l), "random-pair cosine": f"{contrib[l].sum():.3f}",
             "top 3 dims": str(dims[l].tolist()), "share they supply": f"{top_share[l]:.0%}",
             "LayerNorm 3-sigma outliers": str(outliers[l]),
             "in both": str(sorted(set(dims[l].tolist()) & set(outliers[l])))} for l in range(len(outliers))]


def outlier_table_rows(rows: list[dict], n_layer_norms: int, limit: int = 10) -> list[dict]:
    """The first ``limit`` rows of :func:`outlier_counts` as table rows (in how many of the
    ``n_layer_norms`` LayerNorms each dimension is flagged, where, and where it is a top-3 cosine
    contributor too), or one row "none" when no dimension is flagged twice."""
    flagged = f"flagged in (of {n_layer_norms})"
    return [{"dimension": r["dimension"], flagged: r["flagged in"], "layers flagged": str(r["layers"]),
             "top-3 cosine contributor in": str(r["top contributor in"])}
            for r in rows[:limit]] or [{"dimension": "none", flagged: "-"}]


def outlier_finding(rows: list[dict], n_layer_norms: int, limit: int = 10) -> tuple[str, list[str]]:
    """:func:`outlier_sentence` with the layers of the first ``limit`` flagged dimensions as its
    details: ``(sentence, details)`` for :func:`~helpers.common.claims.show_finding`."""
    return (outlier_sentence(rows, n_layer_norms),
            [f"dimension {r['dimension']}: flagged in layers {r['layers']}" for r in rows[:limit]])


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


def variant_rows(values: dict, labels, index: str) -> list[dict]:
    """One row per label (a layer or a transition), one column per variant of ``values`` (name ->
    sequence), each value signed with three decimals."""
    return [{index: label} | {n: f"{v[i]:+.3f}" for n, v in values.items()} for i, label in enumerate(labels)]


def comparison_rows(profiles: list[tuple[str, LayerRanking, object]]) -> list[dict]:
    """Rows setting checkpoints side by side, one per layer of the deepest: for each ``(name, ranking,
    share)`` its random-pair cosine with interval (``ranking``, :func:`pair_ranking`) and the share of
    it from its top 3 dimensions; empty cells past a checkpoint's last layer."""
    rows = []
    for l in range(max(len(rank.intervals) for _, rank, _ in profiles)):
        row = {"layer": _layer(l)}
        for who, rank, share in profiles:
            here = l < len(rank.intervals)
            row[f"{who}: random-pair cosine"] = str(rank.intervals[l]) if here else ""
            row[f"{who}: top-3 share"] = f"{share[l]:.0%}" if here else ""
        rows.append(row)
    return rows


def comparison_finding(own: LayerRanking, own_share, other: dict, step_names) -> tuple[str, list[str]]:
    """course-mini's random-pair profile (``other``, :func:`anisotropy_profile`) in plain words beside
    this model's (``own`` and its top-3 shares ``own_share``): its peak and steps
    (:func:`profile_finding`, steps labelled ``step_names``), whether the two last layers agree on
    dropping below the peak, and both ranges of the top-3 share. ``(sentence, details)``."""
    sentence, details = profile_finding(other["rank"], other["names"], what="the random-pair cosine",
                                        steps=other["steps"], step_names=step_names)
    mine, theirs = last_layer_word(own), last_layer_word(other["rank"])
    shared = (mine == "drops") == (theirs == "drops")
    text = (f"On course-mini, {sentence[:1].lower()}{sentence[1:]} Its last layer {theirs}, this model's {mine}: "
            + ("the two checkpoints agree there, so BERT's objectives alone can give this shape." if shared else
               "the two disagree, so this model's last layer comes from its own training or size, not from BERT's"
               " architecture.")
            + (" Like BERT-base in Ethayarajh (2019), course-mini is most anisotropic at its top."
               if theirs == "is the peak" else "")
            + f" Its top 3 dimensions supply {other['share'].min():.0%}-{other['share'].max():.0%} of its"
            f" random-pair cosine per layer ({own_share.min():.0%}-{own_share.max():.0%} on this model).")
    return text, details


def confidence_finding(split: dict, grows: str, n_tokens: int, n_layers: int) -> tuple[str, list[str]]:
    """The two predictions of "norms grow because the model grows more confident", read off the
    variance split of ``||h||`` (:func:`variance_split_ci` over ``n_tokens`` tokens x ``n_layers``
    layers) and the growth verdict ``grows`` (:func:`growth_finding`): prediction 1 is met when the
    within-layer share's interval lies above one half, not met below it. ``(sentence, details)``."""
    within = split[WITHIN_LAYER]
    pred1 = "met" if within.low > 0.5 else "not met" if within.high < 0.5 else "undecided"
    share = {part: f"{split[part].estimate:.0%}" for part in split}
    sentence = (f"{share[WITHIN_LAYER]} of the variance of the length lies between the tokens of a layer (a"
                f" token's own mean length {share['token']}, tokens long at some layers and short at others"
                f" {share['interaction']}), {share['layer']} between the layers' means: prediction 1, lengths"
                f" differ mostly between tokens, is {pred1}. Prediction 2, the mean length grows at every layer,"
                f" is {grows}."
                + (" So the reading's premise, lengths growing layer after layer, fails for this model."
                   if grows == "not met" else ""))
    details = [f"two-way split of the variance of ||h|| over {n_tokens} tokens x {n_layers} layers, 95 % intervals"
               " resampling sentences: " + "; ".join(f"{p} {split[p].percent(0)}" for p in split),
               "prediction 1 is met when the within-layer share's interval lies above 50 %, not met below it;"
               " prediction 2 reads the steps above."]
    return sentence, details


# -- lesson 07's "claims tested" table --------------------------------------------------------

def _num(value) -> str:
    return f"{float(value):.3f}"


def claim_rows(*, turn: LayerRanking, transition_names: list[str], turn_share: float, peak: LayerRanking,
               cross_ci: list, mean_of_two, variance_split: dict, grows: str, top_share, k: int, hidden_size: int,
               outlier_rows: list[dict], n_layer_norms: int, top_measure: str = "the random-pair cosine",
               centred_max: float | None = None, other: tuple[str, LayerRanking] | None = None
               ) -> list[tuple[str, str, str, str]]:
    """Lesson 07's claims table: ``(popular claim, this model's result in plain words, published
    finding with paper and model, how we know)`` per row; every verdict is computed from the numbers.

    ``turn`` ranks the baseline-adjusted layer-to-layer cosines (lowest first), ``turn_share`` is the
    share of tokens whose own biggest adjusted turn is there; ``peak`` ranks the within-layer
    random-pair cosine (highest first, :func:`pair_ranking`); ``cross_ci`` is the one-layer-apart
    control per transition and ``mean_of_two`` the mean of the two same-layer baselines;
    ``variance_split`` (:func:`variance_split_ci`) gives prediction 1 -- lengths differ mostly between
    the tokens *of a layer*: token + interaction (:data:`WITHIN_LAYER`) above one half; ``grows`` is
    the verdict of prediction 2 in words ("met", "not met", "inconclusive"); ``top_share`` the share of
    ``top_measure`` in the ``k`` dimensions that supply most of it, per layer; ``outlier_rows``
    (:func:`outlier_counts`) the LayerNorm outliers per dimension over ``n_layer_norms`` LayerNorms;
    ``centred_max`` the largest |random-pair cosine| after mean-centring; ``other`` = ``(name,
    ranking)``: the same random-pair profile on another checkpoint (course-mini), for the cone row."""
    L = len(cross_ci)
    names = transition_names
    top = torch.as_tensor(top_share, device=device_of(top_share))
    # row 1: where tokens turn most
    tied = [names[j] for j in turn.tied if j != turn.extreme]
    last_among = (L - 1) in turn.tied
    turn_plain = (f"tokens turn most (beyond the control) at {names[turn.extreme]}"
                  + (f"; {names_phrase(tied)} could turn as much" if tied else "")
                  + f"; the last transition is {'among' if last_among else 'not among'} them; "
                  f"{turn_share:.0%} of the tokens turn most there")
    turn_how = (f"adjusted median {turn.intervals[turn.extreme]} at {names[turn.extreme]}; each transition minus it, "
                f"paired, resampling {turn.unit} (and the control pairs' sentences), Bonferroni over the "
                f"{turn.family_size} pairs of transitions: not shown different {[names[j] for j in turn.tied]}")
    # row 2: the cone
    p, first, last = peak.extreme, peak.intervals[0], peak.intervals[-1]
    last_word = ("the last layer is the peak" if p == L else
                 "the last layer could be as high" if L in peak.tied else f"the last layer drops to {_num(last.estimate)}")
    cone_plain = (f"the random-pair cosine rises from {_num(first.estimate)} at the embeddings to its peak at layer {p} "
                  f"({_num(peak.intervals[p].estimate)}); {last_word}")
    cone_how = (f"per layer, mean [95 % interval] resampling sentences (pigeonhole bootstrap over the pairs): "
                + ", ".join(f"{'emb' if j == 0 else j} {iv}" for j, iv in enumerate(peak.intervals))
                + f"; each layer minus the peak, Bonferroni over the {peak.family_size} pairs of layers: not shown "
                f"different from layer {p}: {peak.tied}")
    if other is not None:
        name, o = other
        L_o = len(o.intervals) - 1
        o_last = ("its last layer is the peak" if o.extreme == L_o else
                  "its last layer could be as high" if L_o in o.tied else
                  f"its last layer drops to {_num(o.intervals[-1].estimate)}")
        cone_plain += (f"; on {name} (BERT's own objectives) it peaks at layer {o.extreme} "
                       f"({_num(o.intervals[o.extreme].estimate)}) and {o_last}")
        cone_how += f"; {name}: " + ", ".join(f"{'emb' if j == 0 else j} {iv}" for j, iv in enumerate(o.intervals))
    # row 3: the matching control
    c, m = cross_ci[L - 1], float(mean_of_two[L - 1])
    outside = not c.contains(m)
    control_plain = (f"{'no' if outside else 'we cannot tell'}: at {names[L - 1]} the matching control is "
                     f"{_num(c.estimate)}, the mean of the two same-layer baselines {m:.3f}")
    control_how = f"matching control {c} (resampling sentences) against the fixed mean of two, {m:.3f}"
    # row 4: norms and confidence
    within = variance_split[WITHIN_LAYER]
    pred1 = "met" if within.low > 0.5 else "not met" if within.high < 0.5 else "undecided"
    norm_plain = (f"prediction 'lengths differ mostly between the tokens of a layer': {pred1} "
                  f"({within.estimate:.0%} of the variance); prediction 'they grow at every layer': {grows}")
    norm_how = ("two-way split of the variance of ||h||, resampling sentences: "
                + ", ".join(f"{part} {variance_split[part].percent(0)}" for part in VARIANCE_PARTS)
                + f"; within a layer (token + interaction) {within.percent(0)}; growth: each step of the mean "
                "length, Bonferroni over the steps")
    # row 5: dominant dimensions
    outlier_text = outlier_sentence(outlier_rows, n_layer_norms)
    outlier_text = outlier_text[:1].lower() + outlier_text[1:-1]
    dims_plain = (f"the top {k} dimensions supply {top.min():.0%}-{top.max():.0%} of {top_measure} per layer (an even "
                  f"spread: {k / hidden_size:.1%})"
                  + ("" if centred_max is None else f"; after mean-centring it stays within {centred_max:.3f} of 0")
                  + f"; {outlier_text}")
    dims_how = ("LayerNorm outliers: gamma or beta more than 3 standard deviations from its vector's mean; "
                "flagged per dimension: " + (", ".join(f"{r['dimension']} in {r['flagged in']}" for r in outlier_rows[:8])
                                            or "none twice"))
    return [
        ("A token changes most in the last layers", turn_plain,
         "Ethayarajh 2019 (BERT-base): upper layers are the most context-specific -- measured as self-similarity "
         "across contexts, not this layer-to-layer cosine", turn_how),
        ("Upper layers are a narrow cone (high random-pair cosine)", cone_plain,
         "Ethayarajh 2019 (BERT-base, ELMo, GPT-2): anisotropic in all non-input layers, more so higher up", cone_how),
        ("A layer-to-layer cosine can be read against the mean of the two same-layer baselines", control_plain,
         "Ethayarajh 2019 defined only within-layer baselines", control_how),
        ("Norms grow because the model grows more confident", norm_plain,
         "no published test; a course measurement (it cannot show what the length means)", norm_how),
        ("A few dimensions dominate the vector", dims_plain,
         "Kovaleva et al. 2021 (BERT-base and others): outlier LayerNorm scales and biases at the same "
         "positions in every layer; Timkey & van Schijndel 2021 (BERT, RoBERTa, GPT-2, XLNet): 1-3 rogue dimensions "
         "dominate cosine similarity, standardising corrects it", dims_how),
    ]
