"""Lesson 09 numbers: a word's vector in different contexts -- self-similarity, sense
separation, nearest neighbours."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from helpers.common.stats import Verdict
from helpers.model.trace import Trace, check_trace, device_of


def word_by_layer(trace: Trace, word: str, occurrence: int = 0) -> torch.Tensor:
    """The vector of ``word`` after every layer, ``[L + 1, hidden]``.

    A word split into several WordPieces is represented by the mean of its pieces.
    """
    span = check_trace(trace).find_word(word, occurrence)
    stack = torch.stack(trace.hidden_states)  # [L+1, seq, hidden]
    return stack[:, span.positions].mean(dim=1)


def _check_groups(groups: dict) -> dict[str, torch.Tensor]:
    if not isinstance(groups, dict) or len(groups) < 2:
        raise ValueError("give a dict {sense: tensor [n, L+1, hidden]} with at least two senses.")
    out = {}
    for sense, vecs in groups.items():
        vecs = torch.as_tensor(vecs, device=device_of(vecs))
        if vecs.ndim != 3 or vecs.shape[0] < 2:
            raise ValueError(
                f"sense {sense!r}: expected a tensor [n_sentences >= 2, layers, hidden], got shape {tuple(vecs.shape)}."
            )
        out[sense] = vecs
    if len({v.shape[1:] for v in out.values()}) != 1:
        raise ValueError("all senses must have the same [layers, hidden] shape.")
    return out


def _pairwise_cos(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``[layers, n_a, n_b]`` cosines between rows of ``a [n_a, layers, h]`` and ``b``."""
    a, b = F.normalize(a, dim=-1).transpose(0, 1), F.normalize(b, dim=-1).transpose(0, 1)
    return a @ b.transpose(1, 2)


def self_similarity(vectors: torch.Tensor) -> torch.Tensor:
    """Mean cosine between a word's vectors in different contexts, per layer: ``[layers]``.

    ``vectors`` is ``[n_contexts, layers, hidden]``; the diagonal (a context with itself) is
    left out. This is Ethayarajh's (2019) *self-similarity*.
    """
    vectors = torch.as_tensor(vectors, device=device_of(vectors))
    if vectors.ndim != 3 or vectors.shape[0] < 2:
        raise ValueError(f"vectors must be [n_contexts >= 2, layers, hidden], got shape {tuple(vectors.shape)}.")
    n = vectors.shape[0]
    cos = _pairwise_cos(vectors, vectors)
    off_diag = ~torch.eye(n, dtype=torch.bool, device=vectors.device)
    return cos[:, off_diag].mean(dim=-1)


def within_across_similarity(groups: dict) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean cosine between uses of the *same* sense and between *different* senses, per layer."""
    groups = _check_groups(groups)
    within = torch.stack([self_similarity(v) for v in groups.values()]).mean(dim=0)
    senses = list(groups)
    across = [
        _pairwise_cos(groups[a], groups[b]).mean(dim=(1, 2))
        for i, a in enumerate(senses)
        for b in senses[i + 1 :]
    ]
    return within, torch.stack(across).mean(dim=0)


def sense_separation_outcomes(groups: dict) -> torch.Tensor:
    """One row per sentence, one column per layer: was the sentence assigned to its own sense
    by the leave-one-out nearest-centroid rule? ``[n_sentences, layers]`` bool (senses in
    order). The per-item outcomes give an accuracy its bootstrap interval."""
    groups = _check_groups(groups)
    senses = list(groups)
    rows = []
    for true_idx, sense in enumerate(senses):
        vecs = groups[sense]
        for i in range(vecs.shape[0]):
            keep = torch.arange(vecs.shape[0], device=vecs.device) != i
            centroids = torch.stack(
                [groups[s][keep].mean(0) if s == sense else groups[s].mean(0) for s in senses]
            )  # [senses, layers, hidden]
            cos = F.cosine_similarity(vecs[i].unsqueeze(0), centroids, dim=-1)  # [senses, layers]
            rows.append(cos.argmax(dim=0) == true_idx)
    return torch.stack(rows)


def sense_separation(groups: dict) -> torch.Tensor:
    """Leave-one-out nearest-centroid accuracy per layer: ``[layers]``.

    For every sentence, the sense centroids are recomputed without it, and it is assigned
    to the centroid with the highest cosine. Chance level is ``1 / n_senses``.
    """
    return sense_separation_outcomes(groups).float().mean(dim=0)


def within_across_gap(groups: dict) -> torch.Tensor:
    """Within-sense minus across-sense mean cosine, per layer: ``[layers]``."""
    within, across = within_across_similarity(groups)
    return within - across


def centroid_similarity(vector: torch.Tensor, groups: dict) -> dict[str, torch.Tensor]:
    """Cosine between one use of a word (``[layers, hidden]``) and each sense's centroid:
    ``{sense: [layers]}``."""
    groups = _check_groups(groups)
    vector = torch.as_tensor(vector, device=next(iter(groups.values())).device)
    shape = next(iter(groups.values())).shape[1:]
    if vector.shape != shape:
        raise ValueError(f"vector must be [layers, hidden] = {tuple(shape)}, got {tuple(vector.shape)}.")
    return {sense: F.cosine_similarity(vector, vecs.mean(0), dim=-1) for sense, vecs in groups.items()}


def nearest_neighbours(trace: Trace, token: int, layer: int, k: int = 3) -> list[tuple[int, str, float]]:
    """The ``k`` tokens of the same sentence closest (cosine) to ``token`` at ``layer``.

    Returns ``[(position, token, cosine), ...]``, best first, the token itself excluded.
    """
    check_trace(trace).check_token(token)
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k < trace.seq_len:
        raise ValueError(f"k must be an int from 1 to {trace.seq_len - 1} (the other tokens), got {k!r}.")
    hidden = trace.hidden(layer)
    cos = F.cosine_similarity(hidden[token].unsqueeze(0), hidden, dim=-1)
    cos[token] = -float("inf")
    top = cos.topk(k)
    return [(int(i), trace.tokens[int(i)], float(c)) for c, i in zip(top.values, top.indices)]


# -- what a leave-one-out accuracy looks like with no signal: a label-permutation null --------

def permutation_accuracy(groups: dict, n_perm: int = 200, seed: int | np.random.SeedSequence = 0,
                         layers: list[int] | None = None) -> torch.Tensor:
    """Leave-one-out nearest-centroid accuracy (:func:`sense_separation`) after shuffling the
    sense labels, ``[n_perm, layers]``: what the same rule scores on these very vectors when the
    labels carry no information. Use its spread instead of a flat ``1 / n_senses`` line: with
    no signal, a sentence's own centroid rests on one sentence fewer than the other senses',
    so it is noisier and, for vectors that share a mean (as a layer's vectors do), on average
    a little farther away: the rule tends to score below chance. A confound (e.g. the word's
    position) shows up as a score outside this spread. Each shuffle keeps the number of sentences per
    sense; all shuffles are seeded. Shuffling several words? Give each its own seed
    (:func:`permutation_null` does): with one seed for all, words of the same size get the same
    shuffles, their nulls move together and a pooled null comes out too wide. ``layers`` restricts
    the rule to some layers (columns of the result, in that order)."""
    groups = _check_groups(groups)
    if isinstance(n_perm, bool) or not isinstance(n_perm, int) or n_perm < 1:
        raise ValueError(f"n_perm must be a positive int, got {n_perm!r}.")
    vecs = torch.cat(list(groups.values()))  # [n, layers, hidden]
    if layers is not None:
        bad = [l for l in layers if not isinstance(l, int) or not 0 <= l < vecs.shape[1]]
        if bad or not layers:
            raise ValueError(f"layers must list layers 0 to {vecs.shape[1] - 1}, got {layers!r}.")
        vecs = vecs[:, list(layers)]
    sizes = [v.shape[0] for v in groups.values()]
    labels = torch.cat([torch.full((s,), i) for i, s in enumerate(sizes)])  # cpu: shuffled by a seeded CPU generator
    if isinstance(seed, np.random.SeedSequence):
        seed = int(seed.generate_state(1)[0])
    gen = torch.Generator().manual_seed(seed)
    perms = torch.stack([labels[torch.randperm(len(labels), generator=gen)]  # cpu: seeded shuffles, moved next
                         for _ in range(n_perm)]).to(vecs.device)  # [P, n]
    return torch.cat([_loo_outcomes(vecs, chunk, len(sizes)).float().mean(dim=1)
                      for chunk in perms.split(250)])  # in chunks: the batched rule holds [P, n, senses, layers, H]


def permutation_null(groups_by_word: dict, n_perm: int = 200, seed: int = 0,
                     layers: list[int] | None = None) -> dict[str, torch.Tensor]:
    """:func:`permutation_accuracy` for every word of ``groups_by_word`` (``{word: {sense: [n, layers,
    hidden]}}``), each word shuffled with its **own** seed (children of one ``SeedSequence(seed)``,
    so the words' shuffles are independent and the whole is reproducible), plus
    ``"all words, pooled"``: the accuracy over all sentences of one shuffle of every word, i.e. the
    words' nulls weighted by their number of sentences. ``{name: [n_perm, layers]}``."""
    if not isinstance(groups_by_word, dict) or not groups_by_word:
        raise ValueError("give {word: {sense: tensor [n, layers, hidden]}} with at least one word.")
    children = np.random.SeedSequence(seed).spawn(len(groups_by_word))
    null = {w: permutation_accuracy(g, n_perm=n_perm, seed=c, layers=layers)
            for (w, g), c in zip(groups_by_word.items(), children)}
    sizes = {w: sum(v.shape[0] for v in g.values()) for w, g in groups_by_word.items()}
    null["all words, pooled"] = sum(null[w] * sizes[w] for w in groups_by_word) / sum(sizes.values())
    return null


def permutation_p_value(observed: float, null, exact: bool = False) -> float:
    """Two-sided permutation p-value of an accuracy against its shuffles ``null [n_perm]``: the share
    of shuffles at least as far from the shuffles' mean as ``observed``. Random shuffles count the
    real labels as one more shuffle, ``(1 + count) / (1 + n_perm)`` (never 0); ``exact=True`` when
    ``null`` is every relabelling (:func:`layer_null`), the real one among them: ``count / n``."""
    null = torch.as_tensor(null, dtype=torch.float64, device="cpu").flatten()  # cpu: a p-value from results
    if null.numel() < 1:
        raise ValueError("null must hold at least one shuffled accuracy.")
    centre = null.mean()
    count = int(((null - centre).abs() >= abs(float(observed) - float(centre)) - 1e-9).sum())
    return count / null.numel() if exact else (1 + count) / (1 + null.numel())


def layer_null(groups: dict, layer: int, n_perm: int = 2000, seed: int | np.random.SeedSequence = 0,
               max_exact: int = 5000) -> tuple[torch.Tensor, bool]:
    """The leave-one-out nearest-centroid accuracy at one ``layer`` under relabelling, for a
    permutation test: ``(accuracies [n], exact)``. With two senses and at most ``max_exact`` ways to
    choose which sentences carry the first label, **every** relabelling is scored (``exact=True``:
    an exact test, the real labels among them); otherwise ``n_perm`` seeded shuffles
    (:func:`permutation_accuracy`). The smallest p-value a word can reach is set by how few
    relabellings it has."""
    import itertools
    import math

    groups = _check_groups(groups)
    vecs = torch.cat(list(groups.values()))  # [n, layers, hidden]
    if isinstance(layer, bool) or not isinstance(layer, int) or not 0 <= layer < vecs.shape[1]:
        raise ValueError(f"layer must be an int from 0 to {vecs.shape[1] - 1}, got {layer!r}.")
    sizes = [v.shape[0] for v in groups.values()]
    n = sum(sizes)
    if len(sizes) == 2 and math.comb(n, sizes[0]) <= max_exact:
        first = torch.tensor(list(itertools.combinations(range(n), sizes[0])), device=vecs.device)  # [C, sizes[0]]
        labels = torch.ones(len(first), n, dtype=torch.long, device=vecs.device)
        labels.scatter_(1, first, 0)
        acc = torch.cat([_loo_outcomes(vecs[:, layer:layer + 1], chunk, 2).float().mean(dim=1)
                         for chunk in labels.split(250)])
        return acc[:, 0], True
    return permutation_accuracy(groups, n_perm=n_perm, seed=seed, layers=[layer])[:, 0], False


def _loo_outcomes(vecs: torch.Tensor, labels: torch.Tensor, n_senses: int) -> torch.Tensor:
    """Leave-one-out nearest-centroid outcomes for every row of ``labels [P, n]`` at once:
    ``[P, n, layers]`` bool. Sentence ``i``'s own centroid is ``(sum of its sense - h_i) / (count - 1)``."""
    onehot = torch.nn.functional.one_hot(labels, n_senses).to(vecs.dtype)  # [P, n, S]
    sums = torch.einsum("pns,nld->psld", onehot, vecs)  # [P, S, layers, hidden]
    counts = onehot.sum(dim=1)  # [P, S]
    own = onehot[..., None, None]  # [P, n, S, 1, 1]
    centroids = (sums[:, None] - own * vecs[None, :, None]) / (counts[:, None, :, None, None] - own)
    cos = F.cosine_similarity(vecs[None, :, None], centroids, dim=-1)  # [P, n, S, layers]
    return cos.argmax(dim=2) == labels[..., None]


# -- one use of a word against the senses' centroids, with an interval ------------------------

def centroid_margin(vector: torch.Tensor, groups: dict, n_boot: int = 2000, seed: int = 0) -> list:
    """``cos(vector, centroid of sense 1) - cos(vector, centroid of sense 2)`` per layer, with a
    bootstrap 95 % interval that resamples the sentences of each sense (the centroids rest on a
    handful of sentences each; the course's small-sample rule counts the smaller sense): a list of
    :class:`~helpers.common.stats.Interval`, one per layer. A layer whose interval contains 0 is
    inconclusive about which sense is nearer (see :func:`centroid_margin_verdicts` for the verdicts
    over all layers). Exactly two senses."""
    return _centroid_margin(vector, groups, n_boot, seed).intervals(0.95)


def centroid_margin_verdicts(vector: torch.Tensor, groups: dict, n_boot: int | None = None, seed: int = 0,
                             alpha: float = 0.05) -> list:
    """:func:`centroid_margin` read as one :class:`~helpers.common.stats.Verdict` per layer: "higher"
    (nearer the first sense), "lower" (nearer the second) or "inconclusive", each read off its
    Bonferroni interval over the layers (every layer is read at once)."""
    from helpers.common.stats import bootstrap_size, replicate_verdicts

    groups = _check_groups(groups)
    n_layers = next(iter(groups.values())).shape[1]
    reps = _centroid_margin(vector, groups, bootstrap_size(n_layers, alpha) if n_boot is None else n_boot, seed)
    first, second = (f"cos with the {s!r} centroid" for s in groups)
    return replicate_verdicts(reps, [first] * reps.k, b=second, alpha=alpha)


def _centroid_margin(vector, groups, n_boot, seed):
    from helpers.common.stats import Replicates

    groups = _check_groups(groups)
    if len(groups) != 2:
        raise ValueError(f"a margin compares exactly two senses; got {len(groups)}: {list(groups)}.")
    if isinstance(n_boot, bool) or not isinstance(n_boot, int) or n_boot < 100:
        raise ValueError(f"n_boot must be an int >= 100, got {n_boot!r}.")
    a, b = groups.values()
    vector = torch.as_tensor(vector, device=a.device)
    if vector.shape != a.shape[1:]:
        raise ValueError(f"vector must be [layers, hidden] = {tuple(a.shape[1:])}, got {tuple(vector.shape)}.")
    gen = torch.Generator().manual_seed(seed)

    def margin(ca, cb):  # [..., layers, hidden] centroids -> [..., layers]
        return F.cosine_similarity(vector, ca, dim=-1) - F.cosine_similarity(vector, cb, dim=-1)

    boot_a = a[torch.randint(len(a), (n_boot, len(a)), generator=gen).to(a.device)].mean(dim=1)  # [n_boot, layers, hidden]
    boot_b = b[torch.randint(len(b), (n_boot, len(b)), generator=gen).to(b.device)].mean(dim=1)
    boots = margin(boot_a, boot_b).cpu().double().numpy()  # [n_boot, layers]
    est = margin(a.mean(0), b.mean(0)).cpu().double().numpy()
    return Replicates(est, boots, min(len(a), len(b)), "sentences of each sense")


# -- a profile across layers: is each step from one layer to the next a rise, a fall, or inconclusive? --

def layer_steps(values, control=None, *, control_units=None, seed: int = 0, clusters=None) -> list:
    """``statistic[l] - statistic[l - 1]`` for ``l = 1 .. layers - 1`` with the paired bootstrap
    intervals that :func:`~helpers.common.stats.step_verdicts` reads its verdicts from (Bonferroni
    over the steps): a list of :class:`~helpers.common.stats.Interval`, one per step.

    ``values [n_items, layers]``: the items (e.g. words; or ``clusters`` of items) are resampled
    once for all layers. ``control [n_pairs, layers]`` (e.g. random-pair cosines) is subtracted as
    its column mean; ``control_units=(first, second)`` name each pair's two sentences, resampled by
    the pigeonhole bootstrap."""
    from helpers.common.stats import step_verdicts

    return [v.difference for v in step_verdicts(values, control, control_units=control_units, seed=seed,
                                                clusters=clusters)]


# -- nearest neighbours of a whole word (the mean of its pieces), its own pieces left out ----

def word_neighbours(trace: Trace, word: str, layer: int, k: int = 3, occurrence: int = 0) -> list[tuple[int, str, float]]:
    """The ``k`` tokens of the sentence closest (cosine) to ``word`` at ``layer``, the word being
    the mean of its pieces (as :func:`word_by_layer`) and its own pieces left out (a piece of
    the word says nothing about its neighbours). ``[(position, token, cosine), ...]``, best first."""
    span = check_trace(trace).find_word(word, occurrence)
    trace.check_layer(layer)
    others = [i for i in range(trace.seq_len) if i not in span.positions]
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= len(others):
        raise ValueError(f"k must be an int from 1 to {len(others)} (the tokens outside the word), got {k!r}.")
    hidden = trace.hidden(layer)
    vec = hidden[span.positions].mean(dim=0)
    cos = F.cosine_similarity(vec.unsqueeze(0), hidden[others], dim=-1)
    top = cos.topk(k)
    return [(others[int(i)], trace.tokens[others[int(i)]], float(c)) for c, i in zip(top.values, top.indices)]


def neighbour_control(traces, n_pieces: int, k: int, n_spans: int = 300, seed: int = 0) -> torch.Tensor:
    """What :func:`word_neighbours` gives with no particular word: ``[n_spans, layers, k]``, the
    ``k`` largest cosines (best first) between the mean of ``n_pieces`` consecutive non-special
    tokens of a random sentence of ``traces`` and the other tokens *of the same sentence*.

    It matches the neighbour list on all three things that raise a cosine without meaning:
    the tokens share a sentence, the query is a mean of the same number of pieces, and only the
    top ``k`` are kept. A neighbour is nearer than expected only above this control's spread."""
    traces = [check_trace(t) for t in traces]
    for name, v in (("n_pieces", n_pieces), ("k", k), ("n_spans", n_spans)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} must be a positive int, got {v!r}.")
    usable = [t for t in traces if sum(w is not None for w in t.word_ids) >= n_pieces and t.seq_len - n_pieces >= k]
    if not usable:
        raise ValueError(f"no trace has {n_pieces} non-special tokens and {k} others: give longer sentences.")
    gen = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(n_spans):
        t = usable[int(torch.randint(len(usable), (1,), generator=gen))]  # cpu: a seeded draw, read as an int
        inner = [i for i, w in enumerate(t.word_ids) if w is not None]
        start = inner[int(torch.randint(len(inner) - n_pieces + 1, (1,), generator=gen))]  # cpu: a seeded draw, read as an int
        span = list(range(start, start + n_pieces))
        others = [i for i in range(t.seq_len) if i not in span]
        stack = torch.stack(t.hidden_states)  # [layers, seq, hidden]
        cos = F.cosine_similarity(stack[:, span].mean(dim=1, keepdim=True), stack[:, others], dim=-1)
        out.append(cos.topk(k, dim=-1).values)  # [layers, k]
    return torch.stack(out)


def polysemy_vectors(tokenizer, model, polysemy: dict) -> tuple[dict, list]:
    """Trace every sentence of ``polysemy`` (``{word: {sense: [sentences]}}``, e.g.
    :func:`~helpers.common.data.load_polysemy`) with one model and keep the target word's vector at
    every layer (:func:`word_by_layer`: the mean of its pieces): ``({word: {sense: [n, L + 1, H]}},
    traces)``. A word the tokenizer maps to its unknown token is skipped."""
    from helpers.model.tokens import is_unknown
    from helpers.model.trace import trace_text

    vectors, traces = {}, []
    for word, senses in polysemy.items():
        if is_unknown(tokenizer, word):
            continue
        for sense, texts in senses.items():
            for text in texts:
                t = trace_text(tokenizer, model, text)
                traces.append(t)
                vectors.setdefault(word, {}).setdefault(sense, []).append(word_by_layer(t, word))
    if not vectors:
        raise ValueError("this tokenizer maps every target word to its unknown token: use an English vocabulary.")
    return {w: {s: torch.stack(v) for s, v in senses.items()} for w, senses in vectors.items()}, traces


# -- self-similarity and Ethayarajh (2019): one verdict over the anisotropy corrections ---------

SELF_SIMILARITY_VARIANTS = ("minus the random-pair baseline", "mean-centred, minus its baseline",
                            "standardised, minus its baseline")


def self_similarity_variants(groups_by_word: dict, traces, *, n_pairs: int = 500, seed: int = 0) -> dict:
    """Ethayarajh's self-similarity minus the within-layer random-pair baseline, three ways
    (:data:`SELF_SIMILARITY_VARIANTS`): as he defined it, after mean-centring every vector (each
    layer's mean over the content tokens of ``traces`` removed: Mu & Viswanath 2018) and after
    standardising (also divided by each dimension's deviation: Timkey & van Schijndel 2021), the
    baseline redone the same way. ``{name: {"values" [words, L + 1], "baseline" [n_pairs, L + 1],
    "rank" (lowest first), "steps"}}``: the words are resampled, and the baseline's pairs by their
    sentences (pigeonhole bootstrap), so its uncertainty counts."""
    from helpers.layerwalk.compute import (layer_mean_std, random_pair_cosines, random_pair_units, rank_layers,
                                           step_verdicts)

    if not isinstance(groups_by_word, dict) or len(groups_by_word) < 2:
        raise ValueError("give {word: {sense: tensor [n, layers, hidden]}} with at least two words.")
    units = random_pair_units(traces, n_pairs, seed)
    mean, std = layer_mean_std(traces, "content")
    words = [torch.cat(list(s.values())) for s in groups_by_word.values()]
    n_layers = words[0].shape[1]
    names = ["emb"] + [f"layer {l}" for l in range(1, n_layers)]
    out = {}
    for name, shift, scale in zip(SELF_SIMILARITY_VARIANTS, (None, mean, mean), (None, None, std)):
        def moved(w):
            w = w if shift is None else w - shift
            return w if scale is None else w / scale
        values = torch.stack([self_similarity(moved(w)) for w in words])
        base = random_pair_cosines(traces, n_pairs, seed, shift=shift, scale=scale)
        out[name] = {"values": values, "baseline": base,
                     "rank": rank_layers(values, lowest=True, control=base, control_units=units, unit="words"),
                     "steps": step_verdicts(values, control=base, control_units=units, names=names)}
    return out


def ethayarajh_reading(ranking, steps) -> str:
    """One profile against Ethayarajh's BERT-base finding (adjusted self-similarity falls with depth,
    lowest at the top): ``"follows"`` when the last layer could be the lowest and no step rises;
    ``"does not follow"`` when the last layer is clearly above the lowest; ``"mixed"`` otherwise."""
    last = len(ranking.intervals) - 1
    rises = [v for v in steps if v.kind == "higher"]
    if last in ranking.tied and not rises:
        return "follows"
    return "does not follow" if last not in ranking.tied else "mixed"


def ethayarajh_verdict(variants: dict, who: str = "this model") -> tuple[str, str, list[str]]:
    """One verdict over the anisotropy corrections (:func:`self_similarity_variants`):
    ``(kind, sentence, details)``, ``kind`` "follows" (every correction follows Ethayarajh),
    "does not follow" (none does) or "depends on the correction"; the sentence says, per correction,
    where the self-similarity is lowest and where it rises, generated from the intervals."""
    readings = {name: ethayarajh_reading(v["rank"], v["steps"]) for name, v in variants.items()}
    parts, details = [], []
    for name, v in variants.items():
        r = v["rank"]
        names = ["the embeddings"] + [f"layer {l}" for l in range(1, len(r.intervals))]
        others = [names[j] for j in r.tied if j != r.extreme]
        rises = [names[l] for l, s in enumerate(v["steps"], start=1) if s.kind == "higher"]
        text = f"{name}, it is lowest at {names[r.extreme]}"
        if others:
            text += f" ({_phrase(others)} could be as low)"
        if rises:
            text += f" and rises into {_phrase(rises)}"
        text += {"follows": ", as he found", "does not follow": ", unlike his BERT-base",
                 "mixed": ", partly as he found"}[readings[name]]
        parts.append(text)
        details.append(f"{name}: lowest at {names[r.extreme]} {r.intervals[r.extreme]}; not shown different from it "
                       f"(paired, words and the baseline's sentences resampled, Bonferroni over the "
                       f"{r.family_size} pairs of layers): {[names[j] for j in r.tied]}; steps (Bonferroni over "
                       f"{len(v['steps'])}): " + "; ".join(s.text for s in v["steps"]))
    kinds = set(readings.values())
    kind = ("follows" if kinds == {"follows"} else "does not follow" if kinds == {"does not follow"}
            else "depends on the correction")
    lead = {"follows": f"{who} follows Ethayarajh's BERT-base finding under every anisotropy correction",
            "does not follow": f"{who} does not follow Ethayarajh's BERT-base finding under any anisotropy correction",
            "depends on the correction": f"whether {who} follows Ethayarajh's BERT-base finding (self-similarity "
                                         "falling with depth, lowest at the top) depends on the anisotropy "
                                         "correction"}[kind]
    lead = lead[:1].upper() + lead[1:]
    return kind, f"{lead}: " + "; ".join(parts) + ".", details


def _phrase(items) -> str:
    items = [str(i) for i in items]
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


# -- lesson 09's "claims tested" table --------------------------------------------------------

def claim_rows(*, ethayarajh: tuple[str, str, list[str]], gap, accuracy, chance_null, n_senses: int,
               emb_null_p: float, gap_above_zero: list, n_words: int, same_ids: bool | None = None,
               other: tuple[str, str] | None = None) -> list[tuple[str, str, str, str]]:
    """Lesson 09's claims table: ``(popular claim, this model's result in plain words, published
    finding with paper and model, how we know)``; every verdict is computed.

    ``ethayarajh``: :func:`ethayarajh_verdict` (one verdict over the anisotropy corrections);
    ``gap``: ranking (highest first) of the within-minus-across gap and ``gap_above_zero`` the layers
    whose gap is surely above 0; ``accuracy``: ranking (highest first) of the pooled accuracy;
    ``chance_null``: the pooled shuffled accuracy at layer 0 (mean and 95 % range) and ``emb_null_p``
    the permutation p-value of the real layer-0 accuracy against it; ``n_words``: how many ambiguous
    words (Ethayarajh's were not chosen that way); ``same_ids``: whether every word has the same token
    ids in all its sentences; ``other`` = ``(name, kind)``: the Ethayarajh verdict on another checkpoint."""
    L = len(accuracy.intervals) - 1

    def name(j):
        return "the embeddings" if j == 0 else f"layer {j}"

    def tied(ranking):
        others = [name(j) for j in ranking.tied if j != ranking.extreme]
        return f"; {_phrase(others)} could be as high" if others else ""

    def how(ranking, what):
        return (f"{what}: {name(ranking.extreme)} {ranking.intervals[ranking.extreme]}; not shown different from it "
                f"(paired, resampling {ranking.unit}, Bonferroni over the {ranking.family_size} pairs of layers): "
                f"{[name(j) for j in ranking.tied]}")

    kind, sentence, details = ethayarajh
    self_plain = sentence[:1].lower() + sentence[1:]
    if other is not None:
        self_plain += f" On {other[0]} (BERT's own objectives) the verdict is: {other[1]}."
    emb_acc = accuracy.intervals[0]
    missing = [j for j in range(1, L + 1) if j not in gap_above_zero]
    gap_plain = (f"yes: the gap is largest at {name(gap.extreme)}{tied(gap)}; "
                 + ("it is above 0 at every layer past the embeddings" if not missing else
                    f"we cannot tell whether it is above 0 at {_phrase([name(j) for j in missing])}")
                 + f"; at the embeddings it is {gap.intervals[0].estimate:.3f}")
    acc_plain = (f"accuracy is highest at {name(accuracy.extreme)} ({accuracy.intervals[accuracy.extreme].estimate:.0%})"
                 f"{tied(accuracy)}; the embeddings ({emb_acc.estimate:.0%}) "
                 + ("could be as high" if 0 in accuracy.tied else "are clearly lower"))
    emb_plain = (f"the embeddings place {emb_acc.estimate:.0%} of the uses with their sense, against "
                 f"{chance_null.estimate:.0%} with shuffled labels: "
                 + ("they do better than shuffled labels" if emb_null_p < 0.05 and emb_acc.estimate > chance_null.estimate
                    else "they do worse than shuffled labels" if emb_null_p < 0.05
                    else "we cannot tell them apart from shuffled labels, which is not evidence that they know "
                         "nothing")
                 + ("" if same_ids is None else
                    "; every word has the same token ids in all its sentences" if same_ids else
                    "; some words have different token ids in different sentences (e.g. a cased vocabulary)"))
    return [
        ("Self-similarity falls with depth", self_plain,
         "Ethayarajh 2019 (BERT-base, also ELMo and GPT-2): self-similarity minus the random-pair baseline "
         "falls almost monotonically with depth, lowest in the upper layers; the measure is like for like, the "
         f"words are not: his were the words of a general corpus (SemEval STS sentences) that occur in several "
         f"contexts, ours {n_words} words chosen for having two senses",
         " | ".join(details)),
        ("Senses separate in the upper layers", acc_plain,
         "Coenen et al. 2019 (BERT-base): a nearest-centroid word-sense classifier reaches F1 71.1, its "
         "accuracy rising through the layers", how(accuracy, "pooled accuracy")),
        ("Same-sense uses are closer than different-sense uses", gap_plain,
         "Coenen et al. 2019 (BERT-base): the uses of a word form well-separated clusters by sense",
         how(gap, "within- minus across-sense cosine") + f"; at the embeddings {gap.intervals[0]}; above 0 "
         "(one-sided, Bonferroni over the layers) at " + str([name(j) for j in gap_above_zero])),
        ("The embedding layer knows nothing about the sense", emb_plain,
         "by construction: layer 0 is token + position + segment embedding, so where a word has the same "
         "token ids in every sentence only its position can separate its uses",
         f"layer-0 accuracy {emb_acc.percent(0)} (resampling words); shuffled labels {chance_null.percent(0)} "
         f"(mean and 95 % range); permutation p = {emb_null_p:.2g}"),
    ]
