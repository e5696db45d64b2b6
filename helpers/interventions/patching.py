"""Lesson 12 (:mod:`helpers.interventions`): activation patching between the senses of a word.

* :func:`patch_word_vectors` -- one word's vector swapped in at layer ``l``; :func:`sense_patching`
  -- does the patched word follow the donor's sense (cosine votes against the two senses'
  centroids), with a rest-of-sentence control;
* :func:`polysemy_traces` / :func:`patch_every_word` -- the lesson's polysemous words, every one
  patched at every layer;
* :func:`word_cluster_shares` -- patched pairs pooled over words, resampling words;
  :func:`share_verdicts` -> :class:`ShareVerdict` -- a patched share above or below one half: the
  bootstrap over the words, or the exact binomial when every word agrees, Bonferroni over the
  layers.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from helpers.common.progress import progress as progress_bar
from helpers.common.stats import (Interval, Replicates, bootstrap_size, clopper_pearson, cluster_bootstrap_ci,
                                  family_level, format_p, sign_test_p)
from helpers.interventions.ranking import _as_float_array
from helpers.interventions.runs import CachedRun, run_from_traces
from helpers.model.layers import check_layer, continue_from, model_sizes
from helpers.model.trace import check_trace


def word_vectors(hidden: torch.Tensor, spans: list) -> torch.Tensor:
    """``[..., B, T, H]`` hidden states -> ``[..., B, H]``: item ``i``'s word as the mean of its
    WordPiece positions ``spans[i]`` (as lesson 09's ``word_by_layer``)."""
    return torch.stack([hidden[..., i, list(pos), :].mean(-2) for i, pos in enumerate(spans)], -2)


# -- 4. activation patching ------------------------------------------------------------------------


@torch.no_grad()
def patch_word_vectors(model, target: CachedRun, target_spans: list, donors: torch.Tensor,
                       layer: int) -> torch.Tensor:
    """Overwrite the word of every target item at ``layer`` (0 = embeddings) with ``donors``
    (``[B, n_pieces, H]``, the donor sentence's vectors of the same word at the same layer),
    run the layers above, and return the last hidden state ``[B, T, H]``."""
    layer = check_layer(model, layer, allow_embeddings=True)
    hidden = target.hidden(layer).clone()
    for i, pos in enumerate(target_spans):
        if len(pos) != donors.shape[1]:
            raise ValueError(f"item {i}: the word has {len(pos)} pieces here but {donors.shape[1]} in the donor.")
        hidden[i, list(pos)] = donors[i]
    return continue_from(model, hidden, target.attention_mask, layer)


def _cosine_votes(vectors: torch.Tensor, centroid_a: torch.Tensor, centroid_b: torch.Tensor) -> torch.Tensor:
    """1 where a vector is closer (cosine) to centroid ``a`` than to ``b``."""
    closer_a = F.cosine_similarity(vectors, centroid_a, dim=-1) > F.cosine_similarity(vectors, centroid_b, dim=-1)
    return closer_a.float()


def sense_patching(model, traces_a: list, traces_b: list, word: str, progress: bool = False) -> dict:
    """Patch ``word``'s vector from each sense-``a`` sentence into each sense-``b`` sentence.

    For every pair ``(i, j)`` and every layer ``l = 0 .. L``, sentence ``b_j`` runs with its
    ``word`` vector after layer ``l`` replaced by ``a_i``'s, and lesson 09's sense probe reads
    the word at the last layer: nearest centroid (cosine), the centroids being the unpatched
    last-layer vectors of the *other* sentences (``a`` without ``i``, ``b`` without ``j``).

    The probe reads the very position that was patched, so at the last layer it reads the donor's
    vector itself. A second probe reads the **rest of the sentence** instead: the mean of the last
    layer over every real token except the word, with centroids of the other sentences' such means.
    It follows the patch only when the layers above carried the patched sense into other tokens.

    Returns ``{"follows": [pairs, L + 1]`` (1 = the probe says sense ``a``, the patch's sense),
    ``"follows_context": [pairs, L + 1]`` (the same, read from the rest of the sentence),
    ``"control": [pairs]`` (1 = unpatched ``b_j`` is read as ``b``), ``"control_context": [pairs]``
    (the same for the rest of the sentence), ``"pairs": [(i, j), ...]}``.
    """
    traces_a, traces_b = [check_trace(t) for t in traces_a], [check_trace(t) for t in traces_b]
    if len(traces_a) < 2 or len(traces_b) < 2:
        raise ValueError("need at least two sentences of each sense (a centroid leaves one out).")
    L, _ = model_sizes(model)
    spans_a = [t.find_word(word).positions for t in traces_a]
    spans_b = [t.find_word(word).positions for t in traces_b]
    last_a = torch.stack([t.hidden(L)[p].mean(0) for t, p in zip(traces_a, spans_a)])
    last_b = torch.stack([t.hidden(L)[p].mean(0) for t, p in zip(traces_b, spans_b)])
    pairs = [(i, j) for i in range(len(traces_a)) for j in range(len(traces_b))]
    keep_a = [torch.arange(len(traces_a), device=last_a.device) != i for i, _ in pairs]
    keep_b = [torch.arange(len(traces_b), device=last_b.device) != j for _, j in pairs]
    cent_a = torch.stack([last_a[k].mean(0) for k in keep_a])
    cent_b = torch.stack([last_b[k].mean(0) for k in keep_b])
    rest_a = torch.stack([_rest_mean(t.hidden(L), p) for t, p in zip(traces_a, spans_a)])
    rest_b = torch.stack([_rest_mean(t.hidden(L), p) for t, p in zip(traces_b, spans_b)])
    ctx_a = torch.stack([rest_a[k].mean(0) for k in keep_a])
    ctx_b = torch.stack([rest_b[k].mean(0) for k in keep_b])
    target = run_from_traces([traces_b[j] for _, j in pairs])
    spans = [spans_b[j] for _, j in pairs]
    follows, follows_context = [], []
    for layer in progress_bar(range(L + 1), desc=f"patching {word!r} layer by layer", disable=not progress):
        donors = torch.stack([traces_a[i].hidden(layer)[spans_a[i]] for i, _ in pairs])
        last = patch_word_vectors(model, target, spans, donors, layer)
        follows.append(_cosine_votes(word_vectors(last, spans), cent_a, cent_b))
        rest = torch.stack([_rest_mean(last[r][target.attention_mask[r].bool()], p) for r, p in enumerate(spans)])
        follows_context.append(_cosine_votes(rest, ctx_a, ctx_b))
    own = [j for _, j in pairs]
    return {"follows": torch.stack(follows, 1), "follows_context": torch.stack(follows_context, 1),
            "control": 1.0 - _cosine_votes(last_b[own], cent_a, cent_b),
            "control_context": 1.0 - _cosine_votes(rest_b[own], ctx_a, ctx_b), "pairs": pairs}


def _rest_mean(hidden: torch.Tensor, span) -> torch.Tensor:
    """``[H]``: the mean of ``hidden`` (``[T, H]``, real tokens only) over every position outside ``span``."""
    keep = torch.ones(hidden.shape[0], dtype=torch.bool, device=hidden.device)
    keep[list(span)] = False
    return hidden[keep].mean(0)


def word_cluster_shares(results: dict, key: str = "follows", *, n_boot: int | None = None, seed: int = 0):
    """The share of patched pairs with outcome 1, pooled over the words of ``results``
    (``{word: sense_patching result}``), with a bootstrap that resamples **words**: a word's pairs
    reuse its few sentences, so the word (its pair of senses) is the independent unit
    (:func:`~helpers.common.stats.cluster_bootstrap_ci`).

    Returns ``(intervals, boots, word_shares)``: one interval per column (patched layer), the
    replicates ``[n_boot, K]`` and each word's own share ``[n_words, K]``. ``n_boot`` defaults to
    enough replicates for the ``K`` columns read as one family (:func:`bootstrap_size`), so that a
    p-value at the bootstrap's floor still lies below the family's level when the interval says so. A column where every pair
    has the same outcome gets the exact interval of ``n_words`` out of ``n_words`` (a zero-width
    interval would look like certainty)."""
    if not isinstance(results, dict) or len(results) < 2 or any(key not in r for r in results.values()):
        raise ValueError(f"give {{word: sense_patching result}} for at least two words, each with {key!r}.")
    values = [_as_float_array(r[key]).reshape(len(r["pairs"]), -1) for r in results.values()]
    clusters = np.concatenate([[w] * len(v) for w, v in zip(results, values)])
    n_boot = bootstrap_size(values[0].shape[1]) if n_boot is None else n_boot
    intervals, boots = cluster_bootstrap_ci(np.concatenate(values), clusters, n_boot=n_boot, seed=seed,
                                            return_boots=True)
    boots, pooled = boots.reshape(n_boot, -1), np.concatenate(values)
    n_words = len(results)
    out = []
    for k, ci in enumerate(intervals):
        if pooled[:, k].min() == pooled[:, k].max():  # every pair alike
            exact = clopper_pearson(int(round(ci.estimate * n_words)), n_words)
            out.append(Interval(ci.estimate, exact.low, exact.high, ci.level))
        else:
            out.append(ci)
    return out, boots, np.stack([v.mean(0) for v in values])


@dataclass(frozen=True)
class ShareVerdict:
    """Is a share above or below one half? ``kind`` is ``"above"`` (e.g. a majority of the pairs
    follows the patch), ``"below"`` or ``"inconclusive"``, read off ``share``: the interval at the
    level of a Bonferroni family over the columns (layers) tested together; ``adjusted_p`` is the
    p-value of the same test, adjusted to match."""

    share: Interval
    p_value: float
    adjusted_p: float
    kind: str
    why: str = ""  # why an interval that clears one half is still "inconclusive" (too few words)
    adjusted_floor: float | None = None  # the smallest adjusted p these words can give

    @property
    def p_text(self) -> str:
        """The adjusted p, printed as a bound at its floor (:func:`~helpers.common.stats.format_p`)."""
        return format_p(self.adjusted_p, self.adjusted_floor)


def share_verdicts(intervals, boots, unit_shares, half: float = 0.5, alpha: float = 0.05) -> list[ShareVerdict]:
    """One :class:`ShareVerdict` per column (e.g. per patched layer) of :func:`word_cluster_shares`'
    output, the columns one Bonferroni family. One estimand -- the share of all patched pairs with
    outcome 1 -- and one rule per column, whose interval and p come from the same procedure:

    * the words differ: the bootstrap over the words (:class:`~helpers.common.stats.Replicates`,
      the course's small-sample rule, never narrower than the t interval over ``n_words`` units);
    * every word gave the same share: the exact (Clopper-Pearson) interval and binomial p of that
      count of words (a zero-width bootstrap interval would look like certainty).

    "above" when the interval at ``1 - alpha / K`` lies above ``half`` *and* the adjusted p is
    below ``alpha``, "below" likewise; they part only where the p cannot go that low -- too few
    words for ``K`` comparisons -- and the verdict is then "inconclusive" (``why`` says so), as in
    :func:`~helpers.common.stats.verdict`."""
    boots, unit_shares = _as_float_array(boots), _as_float_array(unit_shares)
    boots = boots[:, None] if boots.ndim == 1 else boots
    unit_shares = unit_shares[:, None] if unit_shares.ndim == 1 else unit_shares
    intervals = list(intervals)
    if boots.shape[1] != len(intervals) or unit_shares.shape[1] != len(intervals):
        raise ValueError(f"need one column of replicates and of unit shares per interval: {boots.shape[1]} and "
                         f"{unit_shares.shape[1]} vs {len(intervals)}.")
    family, n_units = max(1, len(intervals)), unit_shares.shape[0]
    level = family_level(family, alpha)
    est = np.array([ci.estimate for ci in intervals])
    reps = Replicates(est - half, boots - half, n_units, "words")
    shifted, p = reps.intervals(level), reps.p_values()
    out = []
    for k, ci in enumerate(intervals):
        if unit_shares[:, k].min() == unit_shares[:, k].max():  # every word alike: exact over the words
            count = int(round(ci.estimate * n_units))
            exact = clopper_pearson(count, n_units, level)
            share = Interval(ci.estimate, exact.low, exact.high, level)
            p_k = sign_test_p(count, n_units)
            floor = float(min(1.0, 2 * 0.5 ** n_units))
        else:
            share = Interval(ci.estimate, max(0.0, shifted[k].low + half), min(1.0, shifted[k].high + half), level)
            p_k, floor = float(p[k]), reps.p_floor
        adjusted, adjusted_floor = min(1.0, family * p_k), min(1.0, family * floor)
        side = "above" if share.low > half else "below" if share.high < half else "inconclusive"
        why = ""
        if side != "inconclusive" and not adjusted < alpha:
            why = (f"too few words for {family} comparison{'s' if family > 1 else ''}: the smallest p they "
                   f"can give is {adjusted_floor:.2g}, not below {alpha:g}")
            side = "inconclusive"
        out.append(ShareVerdict(share, p_k, adjusted, side, why, adjusted_floor))
    return out


# -- the lesson's data plumbing: lesson 09's ambiguous words, traced once -----------------------------


@dataclass
class PolysemyTraces:
    """Lesson 09's ambiguous words, every sentence traced once: ``words`` ``{word: {sense:
    [sentences]}}``, ``jobs`` one ``(word, sense, sentence)`` per trace, ``traces`` and each trace's
    word ``spans`` (token positions), ``left_out`` the words the tokenizer cannot read."""

    words: dict
    jobs: list
    traces: list
    spans: list
    left_out: list

    def of(self, word: str, sense: str) -> list:
        """The traces of ``word``'s sentences of ``sense``."""
        return [t for (w, s, _), t in zip(self.jobs, self.traces) if (w, s) == (word, sense)]


# the ambiguous words of each language (lesson 09's, and lesson 12's with a Chinese model)
POLYSEMY_FILES = {"en": ("polysemy.json", "polysemy_more.json"), "zh": ("polysemy_zh.json",)}


def polysemy_traces(tokenizer, model, n_words: int | None = None, progress: bool = True,
                    language: str = "en") -> PolysemyTraces:
    """Load the ambiguous words of ``language`` as lesson 09 does (two senses per word, five
    sentences per sense: ``data/polysemy.json`` and ``data/polysemy_more.json`` in English,
    ``data/polysemy_zh.json`` in Chinese, :data:`POLYSEMY_FILES`), leave out words the tokenizer
    maps to its unknown token, keep the first ``n_words`` (all when None) and trace every sentence.
    A Chinese word of several characters is found as its run of character tokens
    (``Trace.find_word``); its vector is the mean of its characters, as a word of several
    WordPieces is the mean of its pieces."""
    from helpers.common.data import load_polysemy
    from helpers.model.tokens import is_unknown
    from helpers.model.trace import trace_text

    if language not in POLYSEMY_FILES:
        raise ValueError(f"language {language!r} is not valid: choose one of {tuple(POLYSEMY_FILES)}.")
    everything = {w: senses for name in POLYSEMY_FILES[language] for w, senses in load_polysemy(name).items()}
    left_out = [w for w in everything if is_unknown(tokenizer, w)]
    known = [w for w in everything if w not in left_out]
    words = {w: everything[w] for w in known[:n_words]}
    jobs = [(w, s, x) for w, senses in words.items() for s, xs in senses.items() for x in xs]
    traces = [trace_text(tokenizer, model, x) for _, _, x in progress_bar(jobs, desc="tracing polysemy sentences",
                                                                          disable=not progress)]
    spans = [t.find_word(w).positions for (w, _, _), t in zip(jobs, traces)]
    return PolysemyTraces(words, jobs, traces, spans, left_out)


def patch_every_word(model, poly: PolysemyTraces) -> dict:
    """``{word: sense_patching result + "senses"}``: every (first sense, second sense) sentence pair
    of every word, the first sense's vector patched into the second's sentence (:func:`sense_patching`)."""
    out = {}
    for w, senses in poly.words.items():
        s_a, s_b = list(senses)[:2]
        out[w] = sense_patching(model, poly.of(w, s_a), poly.of(w, s_b), w)
        out[w]["senses"] = (s_a, s_b)
    return out
