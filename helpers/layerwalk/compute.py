"""Lesson 04 numbers: a token's vector across layers -- norms, cosines, the anisotropy
baseline, PCA.

Everything works on cached :class:`~helpers.model.trace.Trace` objects. Layer ``0`` is the
embedding output, ``1 .. L`` the encoder layers."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from helpers.common.stats import (Interval, LayerRanking, Verdict, rank_layers, step_verdicts,  # noqa: F401 (re-exported)
                                  verdict)
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
    from helpers.common.stats import pair_replicates

    first, second = units
    return pair_replicates(samples, first, second).intervals(level)


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


def variance_split(values) -> dict[str, float]:
    """Two-way split of the variance of ``values [N, L + 1]`` (one value per token and layer):
    the shares of the total sum of squares due to the **layer** (the layer means), the **token**
    (each token's mean over the layers) and their **interaction** (what is left: tokens that
    differ differently at different layers). The three add up to 1; with one value per cell the
    interaction cannot be told apart from noise."""
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


def variance_split_ci(values, n_boot: int = 1000, level: float = 0.95, seed: int = 0,
                      clusters=None) -> dict[str, Interval]:
    """:func:`variance_split` with a percentile bootstrap interval per part, resampling tokens
    (rows, each keeping its layers) or whole ``clusters`` (e.g. :func:`cluster_labels`: sentences),
    the same draws for the three parts."""
    values = torch.as_tensor(values, dtype=torch.float64, device="cpu")  # cpu: float64 statistics on results
    if values.ndim != 2 or values.shape[0] < 2:
        raise ValueError(f"values must be [n_tokens >= 2, layers], got shape {tuple(values.shape)}.")
    if isinstance(n_boot, bool) or not isinstance(n_boot, int) or n_boot < 100:
        raise ValueError(f"n_boot must be an int >= 100, got {n_boot!r}.")
    rng = np.random.default_rng(seed)
    boots = [variance_split(values[torch.as_tensor(i, device="cpu")])  # cpu: index the cpu values
             for i in _resample_rows(values.shape[0], clusters, n_boot, rng)]
    alpha = (1 - level) / 2
    est = variance_split(values)
    out = {}
    for part in VARIANCE_PARTS:
        low, high = np.quantile([b[part] for b in boots], [alpha, 1 - alpha])
        out[part] = Interval(est[part], float(low), float(high), level)
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


def _resample_rows(n: int, clusters, n_boot: int, rng) -> list:
    """``n_boot`` bootstrap draws of row indices: rows one by one, or whole clusters of rows."""
    if clusters is None:
        return list(rng.integers(0, n, size=(n_boot, n)))
    labels = np.asarray(clusters)
    if labels.shape != (n,):
        raise ValueError(f"clusters must name one unit per item: {n} labels, got shape {labels.shape}.")
    units, index = np.unique(labels, return_inverse=True)
    if units.size < 2:
        raise ValueError("a cluster bootstrap needs at least two clusters.")
    members = [np.flatnonzero(index == u) for u in range(units.size)]
    draws = rng.integers(0, units.size, size=(n_boot, units.size))  # the draws of cluster_bootstrap_ci
    return [np.concatenate([members[u] for u in d]) for d in draws]


def _as_2d(values, name: str) -> np.ndarray:
    if isinstance(values, torch.Tensor):
        values = values.detach().cpu().double().numpy()
    array = np.asarray(values, dtype=float)
    if array.ndim != 2 or array.shape[0] < 2 or array.shape[1] < 1:
        raise ValueError(f"{name} must be [n_items >= 2, layers], got shape {array.shape}.")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} holds NaN or infinite values.")
    return array


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


# -- lesson 04's "claims tested" table --------------------------------------------------------

def claim_rows(*, turn: LayerRanking, transition_names: list[str], turn_share: float, within_ci: list,
               cross_ci: list, mean_of_two, eta2: float, grows: bool | str, top_share, k: int, hidden_size: int,
               every_layer_outliers: list[int], peak: LayerRanking | None = None, peak_up: Interval | None = None,
               eta2_ci: Interval | None = None,
               variance_split: dict | None = None, top_measure: str = "||h||^2",
               centred_max: float | None = None) -> list[tuple[str, str, str]]:
    """Lesson 04's claims table: ``(popular claim, this model's live numbers and verdict,
    published finding with paper and model)`` per row, every verdict computed from the numbers.

    ``turn`` ranks the baseline-adjusted layer-to-layer cosines (:func:`rank_layers`, lowest
    first), ``turn_share`` is the share of tokens whose own biggest adjusted turn is there;
    ``within_ci``/``cross_ci`` are the same-layer and one-layer-apart controls; ``eta2`` is
    :func:`share_explained_by_layer` of the norms; ``grows`` whether the length grows at every layer
    (a bool, or the verdict in words: "met", "not met" or "inconclusive"); ``top_share`` the share of ``||h||^2`` in the
    ``k`` largest dimensions per layer. Optional: ``peak`` ranks the same-layer baseline
    (highest first, :func:`rank_layers` on the paired random-pair samples) and ``peak_up`` is
    the paired difference peak minus embeddings (an Interval or its :class:`Verdict`): then the cone
    row reports the profile; and ``eta2_ci``, the interval of ``eta2``, makes prediction 1
    "inconclusive" when it straddles 0.5; ``variance_split`` (:func:`variance_split_ci`) replaces
    both: prediction 1 then reads the token part of the two-way split (over half of the variance),
    and the row prints the layer, token and interaction parts. ``top_measure`` names what
    ``top_share`` is a share of (``"the random-pair cosine"`` for :func:`cosine_contributions`);
    ``centred_max``: the largest |random-pair cosine| over the layers after mean-centring."""
    L = len(within_ci) - 1
    names = transition_names
    last_among = (L - 1) in turn.tied
    first, last = within_ci[0], within_ci[L]
    top_share = torch.as_tensor(top_share, device=device_of(top_share))
    if peak is None or peak_up is None:  # separate intervals are no test of the difference: say so
        cone_cell = (f"same-layer baseline: layer {L} {last}, the embeddings {first} (no paired comparison given, so "
                     "no verdict)")
    else:
        p = peak.extreme
        up = peak_up if isinstance(peak_up, Verdict) else verdict(peak_up)
        cone_cell = (f"same-layer baseline highest at layer {p} ({peak.intervals[p]}; not shown different from it, "
                     f"Bonferroni over {peak.family_size} pairs of layers: {peak.tied}), "
                     + {"higher": "above", "lower": "below"}.get(up.kind, "inconclusive against")
                     + f" the embeddings' {first} (peak minus embeddings {up.difference})"
                     + f"; the last layer {last} "
                     + ("is the peak" if L == p else "is not shown different from the peak" if L in peak.tied
                        else "drops from the peak"))
    if variance_split is not None:
        tok = variance_split["token"]
        pred1 = "met" if tok.low > 0.5 else "not met" if tok.high < 0.5 else "inconclusive"
        parts = (" is the token part of a two-way split of the variance (resampling sentences): "
                 + ", ".join(f"{p} {variance_split[p].percent(0)}" for p in VARIANCE_PARTS))
    elif eta2_ci is None:
        pred1 = "met" if eta2 < 0.5 else "not met"
    else:
        pred1 = "met" if eta2_ci.high < 0.5 else "not met" if eta2_ci.low > 0.5 else "inconclusive"
    return [
        ("A token changes most in the last layers",
         f"lowest adjusted median cosine at {names[turn.extreme]} ({turn.intervals[turn.extreme]}); not "
         f"shown different from it (paired, resampling {turn.unit}, Bonferroni over {turn.family_size} pairs): "
         f"{[names[j] for j in turn.tied]}; the last transition is "
         f"{'among' if last_among else 'not among'} them; biggest adjusted turn of {turn_share:.0%} of the tokens",
         "Ethayarajh 2019 (BERT-base): upper layers are the most context-specific -- measured as self-similarity "
         "across contexts, not this layer-to-layer cosine"),
        ("Upper layers are a narrow cone (high random-pair cosine)",
         cone_cell,
         "Ethayarajh 2019 (BERT-base, ELMo, GPT-2): anisotropic in all non-input layers, more so higher up"),
        ("A layer-to-layer cosine can be read against the mean of the two same-layer baselines",
         f"at {names[L - 1]}: matching control {cross_ci[L - 1]} vs mean of two {float(mean_of_two[L - 1]):.3f}",
         "Ethayarajh 2019 defined only within-layer baselines"),
        ("Norms grow because the model grows more confident",
         (f"prediction 'lengths differ mostly between tokens': {pred1} "
          + (f"({1 - eta2:.0%} of the variance lies between tokens of a layer"
             + ("" if eta2_ci is None else f"; layer share {eta2_ci.percent(0)}") + ")"
             if variance_split is None else f"(a token's own mean length{parts})"))
         + "; prediction 'they grow at every layer': "
         + (grows if isinstance(grows, str) else "met" if grows else "not met"),
         "no published test; a course measurement (it cannot show what the length means)"),
        ("A few dimensions dominate the vector",
         f"top {k} dims supply {top_share.min():.0%}-{top_share.max():.0%} of {top_measure} per layer (even spread: "
         f"{k / hidden_size:.1%})"
         + ("" if centred_max is None else f"; after mean-centring, |random-pair cosine| <= {centred_max:.3f}")
         + f"; LayerNorm 3-sigma outliers in every layer: {every_layer_outliers or 'none'}",
         "Kovaleva et al. 2021 (BERT-base and others): outlier LayerNorm scales and biases at the same "
         "positions in every layer; Timkey & van Schijndel 2021 (BERT, RoBERTa, GPT-2, XLNet): 1-3 rogue dimensions "
         "dominate cosine similarity, standardising corrects it"),
    ]
