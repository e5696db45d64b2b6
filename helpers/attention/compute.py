"""Lesson 08 numbers: where attention goes, layer by layer and head by head.

Everything works on cached :class:`~helpers.model.trace.Trace` objects, so nothing runs the
model. Attention exists for encoder layers ``1 .. L``: results have ``L`` rows, row ``i``
being layer ``i + 1``."""

from __future__ import annotations

import csv
import unicodedata
from dataclasses import dataclass

import numpy as np
import torch

from helpers.common.stats import (ALPHA, Interval, bootstrap_size, cluster_replicates, rank_layers,
                                  replicate_verdicts)
from helpers.model.paths import data_file
from helpers.model.trace import Trace, check_trace, check_traces, device_of, model_device


TOKEN_CLASSES = ("[CLS]", "[SEP]", "punctuation", "other")


def token_class(token: str) -> str:
    """One of :data:`TOKEN_CLASSES` for a WordPiece token string."""
    if token == "[CLS]":
        return "[CLS]"
    if token == "[SEP]":
        return "[SEP]"
    text = token[2:] if token.startswith("##") else token
    if text and all(unicodedata.category(ch).startswith("P") for ch in text):
        return "punctuation"
    return "other"


def class_onehot(trace: Trace) -> torch.Tensor:
    """``[seq, 4]``: row ``j`` marks the class (:data:`TOKEN_CLASSES`) of token ``j``."""
    classes = [token_class(t) for t in check_trace(trace).tokens]
    return torch.tensor([[c == k for k in TOKEN_CLASSES] for c in classes], dtype=torch.float32, device=trace.device)


def attention_shares(trace: Trace, queries: list[int] | None = None) -> torch.Tensor:
    """Share of attention landing on each token class, per layer: ``[L, 4]``.

    For every head and every query token the attention row sums to 1; we add up the
    weights on the keys of each class (:data:`TOKEN_CLASSES`) and average over queries
    and heads, so each row sums to 1. Row ``i`` is layer ``i + 1``. ``queries`` restricts
    the average to some query positions (``[0]``: what [CLS] looks at).
    """
    check_trace(trace)
    att = torch.stack(trace.attentions)  # [L, heads, q, k]
    if queries is not None:
        for q in queries:
            trace.check_token(q)
        att = att[:, :, list(queries)]
    return (att @ class_onehot(trace)).mean(dim=(1, 2))


def mean_attention_shares(traces) -> torch.Tensor:
    """:func:`attention_shares` averaged over several sentences: ``[L, 4]``."""
    return torch.stack([attention_shares(t) for t in check_traces(traces)]).mean(dim=0)


def cls_attention(trace: Trace) -> torch.Tensor:
    """What [CLS] (query position 0) attends to, per layer and head: ``[L, heads, seq]``."""
    return torch.stack(check_trace(trace).attentions)[:, :, 0, :]


def attention_entropy(trace: Trace) -> torch.Tensor:
    """Entropy (nats) of each head's attention rows, averaged over queries: ``[L, heads]``.

    Low entropy: the head looks at few tokens; ``log(seq_len)``: it spreads evenly.
    """
    from helpers.layerwalk.compute import attention_row_entropy

    return attention_row_entropy(torch.stack(check_trace(trace).attentions)).mean(dim=-1)


def offset_head_scores(trace: Trace, offset: int) -> torch.Tensor:
    """Mean attention from position ``i`` to ``i + offset``: ``[L, heads]``.

    ``offset=-1`` scores previous-token heads, ``offset=+1`` next-token heads; queries
    whose ``i + offset`` falls outside the sequence are left out.
    """
    check_trace(trace)
    if isinstance(offset, bool) or not isinstance(offset, int) or offset == 0:
        raise ValueError(f"offset must be a non-zero int such as -1 (previous) or +1 (next), got {offset!r}.")
    n = trace.seq_len
    if abs(offset) >= n:
        raise ValueError(f"offset {offset} is too large for a sequence of {n} tokens.")
    att = torch.stack(trace.attentions)
    queries = torch.arange(max(0, -offset), min(n, n - offset), device=att.device)
    return att[:, :, queries, queries + offset].mean(dim=-1)


def best_head(scores: torch.Tensor) -> tuple[int, int, float]:
    """``(layer, head, score)`` of the highest entry of an ``[L, heads]`` table; layer is 1-based."""
    scores = torch.as_tensor(scores, device=device_of(scores))
    if scores.ndim != 2:
        raise ValueError(f"scores must be an [layers, heads] table, got shape {tuple(scores.shape)}.")
    flat = int(scores.argmax())
    layer, head = divmod(flat, scores.shape[1])
    return layer + 1, head, float(scores[layer, head])


# -- picking heads to show (lesson 02) -----------------------------------------------------

HEAD_PATTERNS = ("previous token", "next token", "self", "[CLS]", "[SEP]")


def mean_max_weight(trace: Trace) -> torch.Tensor:
    """Each head's largest weight per query row, averaged over the rows: ``[L, heads]``.

    1 means every query puts all its attention on one key; ``1 / seq_len`` means every row
    is uniform. Lesson 02 shows the head where it is largest as "a clear pattern"."""
    att = torch.stack(check_trace(trace).attentions)  # [L, heads, queries, keys]
    return att.max(dim=-1).values.mean(dim=-1)


def clearest_head(trace: Trace) -> tuple[int, int, float]:
    """``(layer, head, mean max weight)`` of the head with the largest :func:`mean_max_weight`
    (layer 1-based, head 0-based)."""
    return best_head(mean_max_weight(trace))


def most_diffuse_head(trace: Trace) -> tuple[int, int, float]:
    """``(layer, head, entropy in nats)`` of the head with the largest mean row entropy
    (:func:`attention_entropy`): the one that spreads its attention most evenly."""
    return best_head(attention_entropy(trace))


def pattern_shares(trace: Trace, layer: int, head: int) -> dict[str, float]:
    """How much of one head's attention goes to each simple pattern of :data:`HEAD_PATTERNS`,
    as the mean over query rows of the weight on: the previous token, the next token, the
    query itself, ``[CLS]`` (key 0) and the ``[SEP]`` keys together.

    Rows with no previous (or next) token are left out of that pattern's mean; a pattern no
    row can have (a one-token input) is ``nan``."""
    check_trace(trace)
    trace.check_layer(layer, allow_embeddings=False)
    trace.check_head(head)
    probs = trace.attention(layer, head)
    n = trace.seq_len
    rows = torch.arange(n, device=probs.device)
    sep = torch.tensor([t == "[SEP]" for t in trace.tokens], device=probs.device)
    nan = float("nan")
    return {
        "previous token": probs[rows[1:], rows[1:] - 1].mean().item() if n > 1 else nan,
        "next token": probs[rows[:-1], rows[:-1] + 1].mean().item() if n > 1 else nan,
        "self": probs.diagonal().mean().item(),
        "[CLS]": probs[:, 0].mean().item(),
        "[SEP]": probs[:, sep].sum(dim=-1).mean().item() if sep.any() else nan,
    }


def main_pattern(shares: dict[str, float]) -> tuple[str, float]:
    """The pattern of :func:`pattern_shares` with the largest share, and that share."""
    known = {k: v for k, v in shares.items() if v == v}  # drop nan
    if not known:
        raise ValueError("no pattern can be measured on this input (too few tokens).")
    name = max(known, key=known.get)
    return name, known[name]


def row_column_head(trace: Trace, query: int = 0) -> tuple[int, int] | None:
    """A head where "the key row ``query`` attends to most" (argmax of row ``query``) and "the
    query that attends most to key ``query``" (argmax of column ``query``) are different
    positions, so a row/column mix-up gives a wrong answer. Heads are tried from the middle
    layer and the middle head outwards; ``None`` when no head of any layer separates them."""
    check_trace(trace)
    if not 0 <= query < trace.seq_len:
        raise ValueError(f"query must be a position 0 to {trace.seq_len - 1}, got {query}.")
    L, heads = trace.num_layers, trace.num_heads
    layers = sorted(range(1, L + 1), key=lambda l: (abs(l - max(1, L // 2)), l))
    order = sorted(range(heads), key=lambda h: (abs(h - heads // 2), h))
    for layer in layers:
        probs = trace.attention(layer)  # [heads, queries, keys]
        for head in order:
            if int(probs[head, query].argmax()) != int(probs[head, :, query].argmax()):
                return layer, head
    return None


# -- like for like with Clark et al. (2019): sentence pairs, lengths, the uniform share --------

def load_sentence_pairs(name: str = "sentence_pairs.tsv") -> list[tuple[str, str]]:
    """``(first, second)`` sentence pairs from a tab-separated file in ``data/`` (header
    ``first<TAB>second``): two-segment inputs, ``[CLS] first [SEP] second [SEP]``, as BERT saw
    in pre-training and Clark et al. (2019) used."""
    path = data_file(name)
    with open(path, newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh, delimiter="\t")
        if reader.fieldnames != ["first", "second"]:
            raise ValueError(f"{path.name}: expected the columns ['first', 'second'], found {reader.fieldnames}.")
        pairs = []
        for line, row in enumerate(reader, start=2):
            first, second = (row["first"] or "").strip(), (row["second"] or "").strip()
            if not first or not second:
                raise ValueError(f"{path.name} line {line}: both sentences of a pair must be non-empty.")
            pairs.append((first, second))
    if not pairs:
        raise ValueError(f"{path.name} holds no sentence pairs.")
    return pairs


def packed_pair_groups(pairs, tokenizer, max_tokens: int = 128) -> list[tuple[list[int], list[int]]]:
    """Which of ``pairs`` each input of :func:`packed_pairs` joins: per packed input, the indices
    of the pairs in segment A and in segment B. A pair belongs to at most one packed input (a last,
    incomplete input is dropped), so a packed input and the short inputs of its pairs share their
    sentences: a comparison between the two lengths can be paired on them."""
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 8:
        raise ValueError(f"max_tokens must be an int >= 8, got {max_tokens!r}.")
    sizes = [len(tokenizer.tokenize(f"{a} {b}")) for a, b in pairs]
    half = (max_tokens - 3) // 2
    groups, i = [], 0
    while i < len(sizes):
        segments = []
        for _ in range(2):
            chunk, used = [], 0
            while i < len(sizes) and used + sizes[i] <= half:
                chunk.append(i)
                used += sizes[i]
                i += 1
            if not chunk and i < len(sizes):  # one pair longer than half the budget: it fills the segment
                chunk.append(i)
                i += 1
            segments.append(chunk)
        if all(segments):
            groups.append((segments[0], segments[1]))
    return groups


def packed_pairs(pairs, tokenizer, max_tokens: int = 128) -> list[tuple[str, str]]:
    """Consecutive pairs joined into longer two-segment inputs of at most ``max_tokens`` tokens
    (special tokens included): segment A takes the next pairs while half the budget lasts,
    segment B the ones after (:func:`packed_pair_groups` says which). Clark et al. (2019) used
    such inputs: two consecutive paragraphs, up to 128 tokens."""
    texts = [f"{a} {b}" for a, b in pairs]
    return [(" ".join(texts[i] for i in a), " ".join(texts[i] for i in b))
            for a, b in packed_pair_groups(pairs, tokenizer, max_tokens)]


def uniform_shares(trace: Trace) -> torch.Tensor:
    """The share of each token class (:data:`TOKEN_CLASSES`) if every query spread its
    attention evenly over the ``n`` keys: ``count / n``, ``[4]``. Any share should be read
    against this: with 20 tokens, two [SEP] get 10 % by doing nothing special; with 128, 1.6 %."""
    check_trace(trace)
    classes = [token_class(t) for t in trace.tokens]
    return torch.tensor([classes.count(k) / len(classes) for k in TOKEN_CLASSES], device=trace.device)


def attention_shares_per_sentence(traces) -> torch.Tensor:
    """:func:`attention_shares` of every trace, ``[n_traces, L, 4]`` (for an interval over sentences)."""
    return torch.stack([attention_shares(t) for t in check_traces(traces)])


def normalized_entropy(trace: Trace) -> torch.Tensor:
    """:func:`attention_entropy` divided by ``log n``: 0 for one key, 1 for uniform attention,
    so inputs of different lengths compare: ``[L, heads]``."""
    check_trace(trace)
    if trace.seq_len < 2:
        raise ValueError("a normalized entropy needs at least 2 tokens.")
    return attention_entropy(trace) / torch.log(torch.tensor(float(trace.seq_len), device=trace.device))


# -- norm-based attention (Kobayashi et al. 2020) --------------------------------------------

def _attention_modules(model):
    bert = getattr(model, "bert", model)
    if not hasattr(bert, "encoder"):
        raise TypeError(f"expected a BertModel (or a model with a .bert), got {type(model).__name__}.")
    return [layer.attention for layer in bert.encoder.layer]


def transformed_values(trace: Trace, model, layer: int) -> torch.Tensor:
    """Kobayashi et al.'s (2020) ``f(x_j)`` for every head and key of encoder ``layer`` (1..L):
    ``[heads, seq, hidden]``.

    ``f_h(x) = (x W_V + b_V)_h W_O^h``: the head's slice of the ``value`` vector, sent through
    the matching columns of ``attention.output.dense`` (its bias, added once after the sum,
    is left out). The attention block's output is then
    ``output.dense(context)_i = sum_h sum_j alpha^h_ij f_h(x_j) + b_O``.
    """
    check_trace(trace).check_layer(layer, allow_embeddings=False)
    attn = _attention_modules(model)[layer - 1]
    heads, hidden = trace.num_heads, trace.hidden_size
    size = hidden // heads
    with torch.no_grad():
        value = attn.self.value(trace.hidden(layer - 1)).view(-1, heads, size).transpose(0, 1)  # [A, n, d]
        w_out = attn.output.dense.weight.view(hidden, heads, size)  # [hidden, A, d]
        return torch.einsum("anv,dav->and", value, w_out)


def transformed_value_norms(trace: Trace, model) -> torch.Tensor:
    """``||f_h(x_j)||`` for every layer, head and key: ``[L, heads, seq]``."""
    return torch.stack([transformed_values(trace, model, l).norm(dim=-1) for l in range(1, trace.num_layers + 1)])


def norm_attention(trace: Trace, model, norms: torch.Tensor | None = None) -> torch.Tensor:
    """Norm-based attention ``||alpha_ij f(x_j)|| = alpha_ij ||f(x_j)||``: ``[L, heads, q, k]``.
    Pass ``norms`` from :func:`transformed_value_norms` to reuse them."""
    norms = transformed_value_norms(trace, model) if norms is None else norms
    return torch.stack(check_trace(trace).attentions) * norms[:, :, None, :]


def norm_attention_shares(trace: Trace, model, norms: torch.Tensor | None = None) -> torch.Tensor:
    """:func:`attention_shares` computed on ``||alpha_ij f(x_j)||`` instead of ``alpha_ij``
    (each query's row rescaled to sum to 1): ``[L, 4]``."""
    weighted = norm_attention(trace, model, norms)
    weighted = weighted / weighted.sum(dim=-1, keepdim=True).clamp_min(1e-12)
    return (weighted @ class_onehot(trace)).mean(dim=(1, 2))


def norm_attention_layer(trace: Trace, model) -> torch.Tensor:
    """Kobayashi et al.'s (2020) norm-based attention of a whole layer, heads summed before the norm:
    ``||sum_h alpha^h_ij f_h(x_j)||`` for every layer, query and key: ``[L, q, k]``. (The
    per-head :func:`norm_attention` takes the norm of each head's term on its own.) Computed from
    the heads' Gram matrix per key, ``G_j[h, g] = <f_h(x_j), f_g(x_j)>``, so no ``[q, k, hidden]``
    tensor is built: ``||.||^2 = sum_{h,g} alpha^h_ij alpha^g_ij G_j[h, g]``."""
    check_trace(trace)
    out = []
    for layer in range(1, trace.num_layers + 1):
        f = transformed_values(trace, model, layer)  # [A, k, hidden]
        gram = torch.einsum("akd,bkd->kab", f, f)  # [k, A, A]
        alpha = trace.attention(layer)  # [A, q, k]
        out.append(torch.einsum("aqk,kab,bqk->qk", alpha, gram, alpha).clamp_min(0).sqrt())
    return torch.stack(out)


def norm_attention_shares_layer(trace: Trace, model) -> torch.Tensor:
    """:func:`attention_shares` on the layer-level :func:`norm_attention_layer` (Kobayashi et al.'s
    definition; each query's row rescaled to sum to 1), averaged over queries: ``[L, 4]``."""
    weighted = norm_attention_layer(trace, model)
    weighted = weighted / weighted.sum(dim=-1, keepdim=True).clamp_min(1e-12)
    return (weighted @ class_onehot(trace)).mean(dim=1)


def value_norms_by_class(traces, model) -> torch.Tensor:
    """Mean ``||f(x_j)||`` (over heads and keys) of each token class, per layer and input:
    ``[n_traces, L, 4]`` (NaN where an input has no token of a class)."""
    out = []
    for trace in check_traces(traces):
        norms = transformed_value_norms(trace, model).mean(dim=1)  # [L, seq]
        onehot = class_onehot(trace)
        counts = onehot.sum(dim=0)
        out.append((norms @ onehot) / counts.where(counts > 0, torch.tensor(float("nan"), device=counts.device)))
    return torch.stack(out)


def untrained_like(model, seed: int = 0):
    """A BERT with the same configuration as ``model`` and freshly initialised (random) weights,
    in eval mode: a model that has *not* learned where to look. Only for comparisons."""
    import copy

    from transformers import BertModel

    config = copy.deepcopy(getattr(model, "bert", model).config)
    config._attn_implementation = "eager"  # attention weights are returned, as load_model's models do
    with torch.random.fork_rng():  # seeded, without touching the caller's random state
        torch.manual_seed(seed)
        return BertModel(config, add_pooling_layer=False).eval().to(model_device(model))  # drawn on the CPU, then moved


# -- naming "the" layer, and per-layer comparisons: paired, Bonferroni, the small-sample rule --------
# Every interval and p-value here comes from helpers/common/stats.py (Replicates: the percentile
# bootstrap, never narrower than the t interval, so a dozen inputs cannot make it too sure).

def paired_p_values(a, b, n_boot: int = 2000, seed: int = 0) -> np.ndarray:
    """Per column of ``a``, ``b`` (``[n_inputs, k]``, measured on the same inputs): the two-sided
    p-value of "mean(a - b) = 0" under the course's small-sample rule (the larger of the paired
    bootstrap's and the paired Student-t test's; :class:`~helpers.common.stats.Replicates`).
    Not adjusted: a family multiplies it (:func:`~helpers.common.stats.bonferroni`)."""
    a, b = _as_2d_float(a, "a"), _as_2d_float(b, "b")
    if a.shape != b.shape:
        raise ValueError(f"a and b must be measured on the same inputs and layers; got {a.shape} and {b.shape}.")
    return cluster_replicates(a - b, n_boot=n_boot, seed=seed).p_values()


def _as_2d_float(values, name: str) -> np.ndarray:
    array = torch.as_tensor(values, dtype=torch.float64).cpu().numpy()  # cpu: float64 statistics on results
    if array.ndim != 2 or array.shape[0] < 2:
        raise ValueError(f"{name} must be [n_inputs >= 2, layers], got shape {array.shape}.")
    return array


def extreme_layer(values, lowest: bool = False, alpha: float = ALPHA, return_p: bool = False):
    """``(index, tied)`` for ``values [n_inputs, layers]``: the column (0-based) with the highest
    (``lowest=True``: lowest) mean over the inputs, and every column a paired comparison does not
    show to differ from it -- the extreme column included
    (:func:`~helpers.common.stats.rank_layers`: the inputs resampled once for all columns, Bonferroni
    over every pair of columns since the extreme is picked by the data). ``tied`` says "not shown
    different", never "the same": name all of it, never one winner, when it holds more than one.
    ``return_p=True`` adds the adjusted p per column (1 for the extreme)."""
    ranking = rank_layers(_as_2d_float(values, "values"), lowest=lowest, alpha=alpha)
    return (ranking.extreme, ranking.tied, ranking.p_values) if return_p else (ranking.extreme, ranking.tied)


def compare_layers(a, b, alpha: float = ALPHA, labels: tuple[str, str] = ("A", "B")) -> dict:
    """Per layer, the paired difference ``a - b`` over the same inputs (``a``, ``b``:
    ``[n_inputs, L]``), as one family of ``L`` comparisons (Bonferroni):
    ``{"above": [...], "below": [...], "inconclusive": [...]}`` (1-based layers), ``"intervals"``
    (each at ``1 - alpha / L``, the level the verdict is read from), ``"verdicts"`` and ``"p_adjusted"``.
    "inconclusive" is not "no difference". ``labels`` name ``a`` and ``b`` in the verdicts' text."""
    a, b = _as_2d_float(a, "a"), _as_2d_float(b, "b")
    if a.shape != b.shape:
        raise ValueError(f"a and b must be measured on the same inputs and layers; got {a.shape} and {b.shape}.")
    reps = cluster_replicates(a - b, n_boot=bootstrap_size(a.shape[1], alpha))
    return _per_layer(reps, alpha, labels)


def _per_layer(reps, alpha: float, labels: tuple[str, str] = ("A", "B")) -> dict:
    L = reps.k
    verdicts = replicate_verdicts(reps, [f"{labels[0]} (layer {l})" for l in range(1, L + 1)], b=labels[1],
                                  alpha=alpha)
    out = {"above": [], "below": [], "inconclusive": [], "intervals": [v.difference for v in verdicts],
           "verdicts": verdicts, "p_adjusted": [float(v.p_value) for v in verdicts]}
    for l, v in enumerate(verdicts, start=1):
        out[{"higher": "above", "lower": "below"}.get(v.kind, "inconclusive")].append(l)
    return out


def compare_unpaired_layers(a, b, n_boot: int | None = None, seed: int = 0, alpha: float = ALPHA) -> dict:
    """Per layer, ``mean(a) - mean(b)`` for two *different* sets of inputs (``a [n_a, L]``,
    ``b [n_b, L]``), each set resampled on its own (once for all layers; the small-sample rule
    counts the smaller set), one family of ``L`` comparisons: the same keys as :func:`compare_layers`."""
    a, b = _as_2d_float(a, "a"), _as_2d_float(b, "b")
    if a.shape[1] != b.shape[1]:
        raise ValueError(f"a and b must have the same layers; got {a.shape[1]} and {b.shape[1]}.")
    n_boot = bootstrap_size(a.shape[1], alpha) if n_boot is None else n_boot
    ra = cluster_replicates(a, n_boot=n_boot, seed=seed)
    rb = cluster_replicates(b, n_boot=n_boot, seed=seed + 1)
    return _per_layer(ra.minus(rb), alpha)


def above_threshold(values, threshold: float, alpha: float = ALPHA, seed: int = 0) -> dict:
    """Which columns of ``values [n_inputs, k]`` (layers, or every head of every layer flattened)
    have a mean surely above ``threshold``: a one-sided test per column at ``alpha / k``
    (Bonferroni), read off the ``1 - 2 alpha / k`` interval (its lower end is the one-sided bound):
    "above" when that lower end is above the threshold. Returns ``{"above": [0-based columns],
    "intervals": [...], "p_adjusted": [one-sided, Bonferroni-adjusted]}``."""
    array = _as_2d_float(values, "values")
    k = array.shape[1]
    reps = cluster_replicates(array - threshold, n_boot=bootstrap_size(k, alpha), seed=seed)
    ivs = reps.intervals(1 - 2 * alpha / k)
    one_sided = np.where(reps.estimate > 0, reps.p_values() / 2, 1 - reps.p_values() / 2)
    shifted = [Interval(iv.estimate + threshold, iv.low + threshold, iv.high + threshold, iv.level) for iv in ivs]
    return {"above": [j for j in range(k) if ivs[j].low > 0], "intervals": shifted,
            "p_adjusted": [float(p) for p in np.minimum(1.0, one_sided * k)]}


def head_key_share(traces, key: int = 0) -> torch.Tensor:
    """Each head's mean attention on position ``key`` (0: [CLS]), over all queries of an input:
    ``[n_traces, L, heads]``, a share of the head's attention (0 to 1)."""
    traces = check_traces(traces)
    for t in traces:
        t.check_token(key)
    return torch.stack([torch.stack(t.attentions)[..., key].mean(-1) for t in traces])


def head_token_share(traces, tokens=(".", ",")) -> tuple[torch.Tensor, torch.Tensor]:
    """Each head's mean attention (over all queries) on the keys whose token is one of ``tokens``
    (default: periods and commas, Clark et al.'s 2019 third class): ``[n_traces, L, heads]``, and
    the uniform share of those keys per input, ``count / n`` (``[n_traces]``)."""
    traces = check_traces(traces)
    shares, uniform = [], []
    for t in traces:
        mask = torch.tensor([tok in tokens for tok in t.tokens], dtype=torch.float32, device=t.device)
        shares.append((torch.stack(t.attentions) @ mask).mean(-1))  # [L, heads]
        uniform.append(mask.mean())
    return torch.stack(shares), torch.stack(uniform)


def head_key_ratio(traces, key: int = 0) -> torch.Tensor:
    """:func:`head_key_share` divided by the uniform share ``1 / n`` of its input:
    ``[n_traces, L, heads]`` (1 = no more than evenly spread)."""
    traces = check_traces(traces)
    n = torch.tensor([float(t.seq_len) for t in traces], device=traces[0].device)
    return head_key_share(traces, key) * n[:, None, None]


def deep_layers_verdict(top: int, tied: list[int], above: list[int], n_layers: int) -> str:
    """Whether "the deep layers" hold a pattern, from :func:`extreme_layer`'s ``top`` and ``tied``
    (0-based) and ``above`` (1-based layers surely above the reference, :func:`above_threshold`):
    ``"holds"`` when every layer not shown different from the largest is in the upper half of the
    ``n_layers`` and the largest is surely above the reference; ``"does not hold"`` when none of
    them is in the upper half; otherwise ``"is not decided"``."""
    upper = [j for j in tied if j + 1 > n_layers / 2]
    if len(upper) == len(tied) and top + 1 in above:
        return "holds"
    return "does not hold" if not upper else "is not decided"


def heads_above(values, floor: float, alpha: float = ALPHA) -> dict:
    """Per head, is its mean of ``values [n_inputs, L, heads]`` (e.g. a share ÷ its uniform share)
    surely above ``floor``, an effect size stated before measuring? One-sided, Bonferroni over all
    ``L x heads`` heads (:func:`above_threshold`). Returns ``{"heads": [(layer, head), ...]`` (layers
    from 1), ``"per_layer": [count per layer]``, ``"intervals"`` and ``"p_adjusted"`` (flattened,
    column ``(layer - 1) * heads + head``)}."""
    array = torch.as_tensor(values, dtype=torch.float64).cpu()  # cpu: float64 statistics on results
    if array.ndim != 3:
        raise ValueError(f"values must be [n_inputs, layers, heads], got shape {tuple(array.shape)}.")
    n, L, A = array.shape
    test = above_threshold(array.reshape(n, L * A), floor, alpha=alpha)
    heads = [(j // A + 1, j % A) for j in test["above"]]
    return {"heads": heads, "per_layer": [sum(l == layer for l, _ in heads) for layer in range(1, L + 1)],
            "intervals": test["intervals"], "p_adjusted": test["p_adjusted"]}


MIN_HEADS = 3  # a per-head story needs at least this many qualifying heads (fixed before measuring)


def deep_heads_verdict(per_layer: list[int], alpha: float = 0.05) -> str:
    """Clark et al.'s "deep heads attend to X", per head, from the count of qualifying heads per
    layer (:func:`heads_above`): with fewer than :data:`MIN_HEADS` heads, ``"is not decided (it
    rests on N head(s))"``; otherwise an exact one-sided binomial test of "more of them sit in the
    upper half of the layers than an even spread over the layers would put there": ``"holds"``
    (p < ``alpha``), ``"does not hold"`` (none qualifies, or significantly more in the lower half),
    ``"is not decided"``."""
    from scipy.stats import binomtest

    L, total = len(per_layer), sum(per_layer)
    if total == 0:
        return "does not hold"
    if total < MIN_HEADS:
        return f"is not decided (it rests on {total} head{'s' if total > 1 else ''})"
    upper = sum(c for l, c in enumerate(per_layer, start=1) if l > L / 2)
    share = sum(1 for l in range(1, L + 1) if l > L / 2) / L  # the upper half's share of the layers
    if binomtest(upper, total, share, alternative="greater").pvalue < alpha:
        return "holds"
    if binomtest(upper, total, share, alternative="less").pvalue < alpha:
        return "does not hold"
    return "is not decided"


def compare_sentence(result: dict, more: str, less: str) -> str:
    """A :func:`compare_layers` result in plain words: "larger in layers 1, 2 and 3, smaller in layer
    6; we cannot tell in layer 4" (``more``/``less`` name the two directions)."""
    from helpers.layerwalk.compute import layers_phrase

    L = len(result["verdicts"])
    parts = []
    if result["above"]:
        parts.append(f"{more} in {'every layer' if len(result['above']) == L else layers_phrase(result['above'])}")
    if result["below"]:
        parts.append(f"{less} in {'every layer' if len(result['below']) == L else layers_phrase(result['below'])}")
    text = ", ".join(parts) if parts else "we cannot tell in any layer"
    if parts and result["inconclusive"]:
        text += f"; we cannot tell in {layers_phrase(result['inconclusive'])}"
    return text


# -- lesson 08's "claims tested" table --------------------------------------------------------

def claim_rows(*, sep_rank, cls_rank, sep_over_half: list[int], sink: dict, uniform_sep: float,
               punct_heads: dict, punct_floor: float, length_differs: dict, heads_on_cls: list[int],
               heads_surely_half: list[int], heads_over_threshold: list[int], head_threshold: float,
               threshold_share: float, n_heads: int, norm_vs_weight: dict, sep_ratio, punct_ratio, sep_norm,
               self_trained: list, self_learned: list[int], self_over_half: list[int], prev_head: tuple[int, int],
               prev_ci, other: tuple[str, dict] | None = None) -> list[tuple[str, str, str, str]]:
    """Lesson 08's claims table: ``(popular claim, this model's result in plain words, published
    finding with paper and model, how we know)``, every verdict computed from the numbers it is given.

    ``sep_rank``/``cls_rank``: :func:`~helpers.common.stats.rank_layers` of the [SEP] and [CLS]
    shares (packed pairs, highest first); ``sep_over_half``: 1-based layers whose [SEP] share is surely
    above one half (:func:`above_threshold`); ``sink``: :func:`sink_test` (per token, against the
    sink floor); ``punct_heads``: :func:`heads_above` of each head's share on periods and
    commas ÷ their uniform share, against ``punct_floor`` (stated before measuring); ``length_differs``:
    ``{class: layers where share ÷ uniform differs between short and packed inputs}``;
    ``heads_on_cls``/``heads_surely_half``/``heads_over_threshold``: heads per layer with a mean [CLS]
    share above one half, surely above one half, surely above ``head_threshold`` x uniform (about
    ``threshold_share`` of a head's attention); ``norm_vs_weight``: ``{class: compare_layers(norm,
    weight)}``; ``sep_ratio``/``punct_ratio``: share ÷ uniform share per layer; ``sep_norm``: norm-based
    ÷ weight share of [SEP] per layer; ``self_trained``: [CLS]->[CLS] per layer (intervals);
    ``self_learned``: layers where it differs from random weights; ``self_over_half``: layers surely
    above one half; ``prev_head``/``prev_ci``: the best previous-token head and its score; ``other`` =
    ``(name, sink)``: :func:`sink_test` on another checkpoint (course-mini)."""
    from helpers.layerwalk.compute import layers_phrase, names_phrase

    L = len(sep_rank.intervals)
    layer = [f"layer {l}" for l in range(1, L + 1)]

    def ties(rank):
        others = [layer[j] for j in rank.tied if j != rank.extreme]
        return f"; {names_phrase(others)} could be as high" if others else ""

    def how(rank, what):
        return (f"{what}: {layer[rank.extreme]} {rank.intervals[rank.extreme].percent()}; not shown different from "
                f"it (paired over the inputs, Bonferroni over the {rank.family_size} pairs of layers): "
                f"{[j + 1 for j in rank.tied]}")

    def sink_word(result):
        on = sink_of(result)
        return f"a {on} sink" if on else f"no sink (more than {result['floor']:g}x its even share per token)"

    s = sep_rank.extreme
    sep_plain = (f"the share on [SEP] is largest at layer {s + 1} ({sep_rank.intervals[s].estimate:.1%}; an even "
                 f"spread gives {uniform_sep:.1%}){ties(sep_rank)}; it is clearly above half in "
                 + (layers_phrase(sep_over_half) if sep_over_half else "no layer")
                 + f"; per token, {sink_layers_phrase(sink)}: "
                 f"{sink_word(sink)}" + (" instead" if sink_word(sink) == "a [CLS] sink" else ""))
    if other is not None:
        sep_plain += f"; course-mini (BERT's own objectives) shows {sink_word(other[1])}"
    per = punct_heads["per_layer"]
    upper = sum(c for l, c in enumerate(per, start=1) if l > L / 2)
    punct_plain = (f"{sum(per)} of {L * n_heads} heads {'gives' if sum(per) == 1 else 'give'} periods and commas "
                   f"clearly more than {punct_floor:g}x "
                   f"their even share ({upper} in the upper half of the layers, {sum(per) - upper} in the lower): "
                   f"the claim {deep_heads_verdict(per)} here")
    length_plain = ("no: share ÷ even share still differs between short and packed inputs in "
                    + "; ".join(f"{k}: {layers_phrase(v) if v else 'no layer'}" for k, v in length_differs.items()))
    cls_plain = (f"{sum(heads_surely_half)} of {n_heads * L} heads {'puts' if sum(heads_surely_half) == 1 else 'put'} "
                 f"clearly more than half of their attention on "
                 f"[CLS] ({sum(heads_on_cls)} do on average); by a looser count, {sum(heads_over_threshold)} give it "
                 f"clearly more than {head_threshold:g}x an even share (about {threshold_share:.0%} of a head's "
                 "attention here)")
    norm_plain = "; ".join(f"{k}, the norm-based share against the weight share: "
                           f"{compare_sentence(w, 'larger', 'smaller')}" for k, w in norm_vs_weight.items())
    boundary_plain = (f"[SEP] gets at most {float(max(sep_ratio)):.1f}x its even share, punctuation at most "
                      f"{float(max(punct_ratio)):.1f}x; counting what each passes on, [SEP] keeps "
                      f"{float(min(sep_norm)):.0%}-{float(max(sep_norm)):.0%} of its weight share")
    self_plain = (f"[CLS] puts clearly more than half of its attention on itself in "
                  + (layers_phrase(self_over_half) if self_over_half else "no layer") + f" (of {L}); in layer 1 "
                  f"{self_trained[0].estimate:.0%}; it differs from a random-weight model (about 1/n by construction) "
                  + ("in every layer" if len(self_learned) == L else
                     f"in {layers_phrase(self_learned)}" if self_learned else "in no layer we can tell"))
    prev_plain = f"layer {prev_head[0]}, head {prev_head[1]} puts {prev_ci.estimate:.0%} of its attention on the previous token"
    return [
        ("Over half of the attention goes to [SEP] in the middle layers", sep_plain,
         "Clark et al. 2019 (BERT-base, <= 128-token pairs): > 50 % in layers 6-10",
         how(sep_rank, "[SEP] share") + "; " + how(cls_rank, "[CLS] share")
         + "; above one half: one-sided, Bonferroni over the layers; a sink: share ÷ even share per token "
         f"surely above {sink['floor']:g} (stated first), one-sided, Bonferroni over the layers"),
        ("Deep heads attend to periods and commas", punct_plain,
         "Clark et al. 2019 (BERT-base, Fig. 2): deep heads attend to periods and commas",
         f"per head, share on periods and commas ÷ their uniform share, one-sided test against the floor "
         f"{punct_floor:g} stated first, Bonferroni over all {L * n_heads} heads; heads clearly above: "
         f"{punct_heads['heads'] or 'none'}"),
        ("Dividing by the uniform share k/n makes shares comparable across input lengths", length_plain,
         "a check of the course's own reading, not a published finding: a sink that keeps its share whatever "
         "the length has a ratio growing with n",
         "short minus packed, paired on the same sentences, Bonferroni over the layers of each class"),
        ("Many heads put most weight on [CLS]", cls_plain,
         "Clark et al. 2019 (BERT-base, Fig. 2, each head's mean attention on [CLS], no threshold): early heads "
         "attend to [CLS]",
         "per head, one-sided, Bonferroni over all heads; per layer: "
         + ", ".join(f"L{l + 1} {n} ({m} on average)" for l, (n, m) in enumerate(zip(heads_surely_half, heads_on_cls)))),
        ("An attention weight says how much a token contributes", norm_plain,
         "Kobayashi et al. 2020 (BERT-base): weights on [CLS], [SEP], punctuation shrink once ||f(x)|| counts; "
         "Kobayashi et al. 2021 (BERT-base and other masked LMs): with the residual and LayerNorm counted, tokens mix "
         "less than attention suggests; Jain & Wallace 2019 vs Wiegreffe & Pinter 2019 (LSTM models with attention, "
         "not BERT): whether weights explain a prediction depends on the test",
         "norm-based (heads summed before the norm, Kobayashi's definition) minus weight share, paired over the "
         "inputs, Bonferroni over the layers of each class"),
        ("[SEP] gets attention because it marks the sentence boundary", boundary_plain,
         "Clark et al. 2019 (BERT-base) speculate a no-op (small gradients); Kobayashi et al. 2020 (BERT-base): "
         "small ||f(x)||", "means over the packed inputs"),
        ("[CLS] attends to itself early because it has not learned to look", self_plain,
         "untested in the papers; a random-weight model shows only what an unlearned model does",
         "per layer " + ", ".join(iv.percent() for iv in self_trained)
         + "; above one half: one-sided, Bonferroni over the layers; trained minus random: paired over the inputs, "
         "Bonferroni over the layers"),
        ("Some heads just look at the previous token", prev_plain,
         "Clark et al. 2019 (BERT-base): heads that attend heavily to the previous or next token, especially in "
         "earlier layers", f"{prev_ci.percent()} over the short pairs"),
    ]


# -- lesson 08's tables and findings: per-layer rows and plain sentences from the numbers ----------
# Formatting only: every number comes in already measured (helpers/common/stats.py behind it); these
# functions put it into table rows and the sentences that show_finding displays.

def layer_rows(columns: dict, label=int) -> list[dict]:
    """Rows of a per-layer table for :func:`~helpers.common.tables.show_table`: row ``l`` is
    ``{"layer": label(l + 1), name: values[l], ...}`` for every ``name: values`` of ``columns``
    (per-layer lists, already formatted). A list shorter than the longest (a model with fewer
    layers) leaves its cells empty (``""``). ``label=str`` writes the layer numbers as text."""
    if not columns:
        raise ValueError("layer_rows needs at least one column.")
    n = max(len(v) for v in columns.values())
    return [{"layer": label(l + 1)} | {name: (v[l] if l < len(v) else "") for name, v in columns.items()}
            for l in range(n)]


def favourite_key_rows(attention, tokens, query: str = "[CLS]") -> list[dict]:
    """Per layer, the key that one query looks at most, from ``attention [L, seq]`` (that query's
    attention row per layer, e.g. [CLS]'s with the heads averaged): rows ``{"layer", "<query> looks
    most at" (the token, quoted), "position", "attention probability" (2 decimals)}``."""
    favourite = attention.argmax(dim=-1).tolist()
    return [{"layer": layer + 1, f"{query} looks most at": repr(tokens[j]), "position": j,
             "attention probability": f"{attention[layer, j]:.2f}"} for layer, j in enumerate(favourite)]


SINK_FLOOR = 2.0  # a sink: a token class getting surely more than this many times its even share, per token


def sink_test(traces, floor: float = SINK_FLOOR) -> dict:
    """Is [CLS] or [SEP] an attention sink, compared **per token**? For every trace and layer, each
    class's share ÷ its even share (:func:`uniform_shares`: [SEP] has two tokens to [CLS]'s one, so
    raw shares would favour it twice over). A class is a sink in a layer when that ratio is surely
    above ``floor`` (fixed before measuring; one-sided, Bonferroni over the layers,
    :func:`above_threshold`). Returns ``{"[CLS]": ..., "[SEP]": ..., "compare": compare_layers of
    the [CLS] ratio minus the [SEP] ratio, "floor": floor, "ratio": [n, L, 2]}``."""
    traces = check_traces(traces)
    shares = attention_shares_per_sentence(traces)  # [n, L, 4]
    even = torch.stack([uniform_shares(t) for t in traces])  # [n, 4]
    c, s = TOKEN_CLASSES.index("[CLS]"), TOKEN_CLASSES.index("[SEP]")
    return sink_from_ratio(torch.stack([shares[:, :, c] / even[:, None, c], shares[:, :, s] / even[:, None, s]], -1),
                           floor)


def sink_from_ratio(ratio, floor: float = SINK_FLOOR) -> dict:
    """:func:`sink_test` from ``ratio [n_inputs, L, 2]``: [CLS]'s and [SEP]'s share ÷ even share."""
    ratio = torch.as_tensor(ratio, dtype=torch.float64).cpu()  # cpu: float64 statistics on results
    if ratio.ndim != 3 or ratio.shape[-1] != 2:
        raise ValueError(f"ratio must be [n_inputs, layers, 2] ([CLS], [SEP]), got shape {tuple(ratio.shape)}.")
    return {"[CLS]": above_threshold(ratio[..., 0], floor), "[SEP]": above_threshold(ratio[..., 1], floor),
            "compare": compare_layers(ratio[..., 0], ratio[..., 1], labels=("[CLS] per token", "[SEP] per token")),
            "floor": floor, "ratio": ratio}


def sink_of(result: dict) -> str | None:
    """Where a :func:`sink_test` result says the model sinks its attention: the class that is a
    sink (surely above the floor, per token) in over half of the layers; when both are, the one
    that draws more per token in over half of them (``"[CLS] and [SEP]"`` if neither does); else
    ``None``."""
    L = len(result["compare"]["verdicts"])
    sinks = [k for k in ("[CLS]", "[SEP]") if len(result[k]["above"]) > L / 2]
    if len(sinks) < 2:
        return sinks[0] if sinks else None
    cmp = result["compare"]
    return "[CLS]" if len(cmp["above"]) > L / 2 else "[SEP]" if len(cmp["below"]) > L / 2 else "[CLS] and [SEP]"


def sink_layers_phrase(result: dict) -> str:
    """"[CLS] gets more than 2x its even share per token in layers 1 and 2; [SEP] in no layer"."""
    from helpers.layerwalk.compute import layers_phrase

    parts = [f"{k} {'gets' if i == 0 else 'in'}" + ("" if i else f" more than {result['floor']:g}x its even share "
                                                    "per token in")
             + " " + (layers_phrase([l + 1 for l in result[k]["above"]]) if result[k]["above"] else "no layer")
             for i, k in enumerate(("[CLS]", "[SEP]"))]
    return "; ".join(parts)


def sink_finding(n_inputs: int, sep_rank, cls_rank, sep_half: dict, sink: dict) -> tuple[str, list[str]]:
    """Lesson 08's [CLS]/[SEP] claim on the packed pairs as ``(sentence, details)`` for
    :func:`~helpers.common.claims.show_finding`: the layer with the largest [SEP] and [CLS] share
    (``sep_rank``/``cls_rank``, :func:`~helpers.common.stats.rank_layers`), the layers where [SEP]
    is surely over one half (``sep_half``, :func:`above_threshold`) and where each is a sink, per
    token (``sink``, :func:`sink_test`), set beside Clark et al.'s [SEP] sink."""
    from helpers.layerwalk.compute import layers_phrase, profile_finding

    names = [f"layer {l}" for l in range(1, len(sep_rank.intervals) + 1)]
    (sep_text, sep_details), (cls_text, cls_details) = (
        profile_finding(r, names, what=f"the share on {c}", percent=True)
        for r, c in ((sep_rank, "[SEP]"), (cls_rank, "[CLS]")))
    over_half = [l + 1 for l in sep_half["above"]]
    on = sink_of(sink)
    sentence = (f"On the {n_inputs} packed pairs, {sep_text[:1].lower()}{sep_text[1:]} {cls_text} [SEP] gets over "
                f"half of the attention in {layers_phrase(over_half) if over_half else 'no layer'}. Per token, "
                + sink_layers_phrase(sink)
                + (". Where Clark et al. found a [SEP] sink on BERT-base, this model sinks its attention on [CLS] "
                   "instead." if on == "[CLS]" else ". Like BERT-base in Clark et al., this model sinks on [SEP]."
                   if on == "[SEP]" else ". This model sinks on both [CLS] and [SEP]." if on else
                   ". Neither is a sink in most layers of this model."))
    details = (sep_details + cls_details
               + ["[SEP] above one half, one-sided, Bonferroni over the layers: "
                  + "; ".join(f"layer {l + 1} {iv.percent()}" for l, iv in enumerate(sep_half["intervals"]))]
               + [f"{k} share ÷ its even share (per token), one-sided against {sink['floor']:g} (stated before "
                  "measuring), Bonferroni over the layers: "
                  + "; ".join(f"layer {l + 1} {iv.format('.2f')}x" for l, iv in enumerate(sink[k]["intervals"]))
                  for k in ("[CLS]", "[SEP]")]
               + ["[CLS] minus [SEP], per token, paired:"] + [v.text for v in sink["compare"]["verdicts"]])
    return sentence, details


def other_sink_finding(name: str, n_inputs: int, other: dict, sinks_on: str | None) -> tuple[str, list[str]]:
    """The same per-token sink test on another checkpoint (``other``, :func:`sink_test`; lesson 08:
    course-mini, pre-trained with BERT's own objectives) set beside this model's sink (``sinks_on``,
    :func:`sink_of`): ``(sentence, details)``, saying whether the two agree."""
    other_on = sink_of(other)
    sentence = (f"On {name} ({n_inputs} packed pairs), per token, {sink_layers_phrase(other)}"
                + f". It sinks on {other_on or 'neither in most layers'}, this model on {sinks_on or 'neither'}: "
                + (("the two agree, so BERT's own objectives can give this sink." if other_on else
                    "the two agree that neither is a sink.") if other_on == sinks_on else
                   "they disagree, so this model's sink comes from its training (or size), not from BERT's "
                   "architecture alone."))
    return sentence, [f"{k} share ÷ its even share (per token), one-sided against {other['floor']:g}: "
                      + "; ".join(f"layer {l + 1} {iv.format('.2f')}x" for l, iv in enumerate(other[k]["intervals"]))
                      for k in ("[CLS]", "[SEP]")]


def cls_heads_finding(half_heads: dict, heads_on_cls: list[int], loose: dict, threshold: float,
                      threshold_share: float) -> tuple[str, list[str]]:
    """How many heads put most of their attention on [CLS], as ``(sentence, details)``:
    ``half_heads`` (:func:`heads_above` of each head's [CLS] share against one half), ``heads_on_cls``
    (per layer, heads whose mean share is above one half) and the looser count ``loose``
    (:func:`heads_above` against ``threshold`` x the uniform share, about ``threshold_share`` of a
    head's attention)."""
    surely, total = half_heads["per_layer"], len(half_heads["intervals"])
    sentence = (f"{sum(surely)} of the {total} heads {'puts' if sum(surely) == 1 else 'put'} clearly more than half of "
                f"their attention on [CLS] ({sum(heads_on_cls)} do on average over the inputs): "
                + ("; ".join(f"layer {l + 1}: {n}" for l, n in enumerate(surely) if n) or "none")
                + f". By a looser count, {sum(loose['per_layer'])} give it clearly more than {threshold:g}x an even "
                f"share, which here is only about {threshold_share:.0%} of a head's attention, not 'most'.")
    return sentence, [f"per head, one-sided test against one half, Bonferroni over all {total} heads; clearly above: "
                      f"{half_heads['heads'] or 'none'}",
                      f"{threshold:g}x uniform, the same test: {len(loose['heads'])} heads"]


def punct_finding(punct_heads: dict, floor: float, ratio_ci: list, n_inputs: int) -> tuple[str, list[str]]:
    """Clark et al.'s "deep heads attend to periods and commas", tested per head, as ``(sentence,
    details)``: ``punct_heads`` (:func:`heads_above` of each head's share ÷ uniform share against
    ``floor``), counted in the upper and lower half of the layers (:func:`deep_heads_verdict`);
    ``ratio_ci``: per layer, the heads-averaged ratio's interval, for the details."""
    per, total = punct_heads["per_layer"], len(punct_heads["intervals"])
    upper = sum(c for l, c in enumerate(per, start=1) if l > len(per) / 2)
    named = (" (" + ", ".join(f"head {h} of layer {l}" for l, h in punct_heads["heads"]) + ")"
             if 0 < sum(per) < MIN_HEADS else "")
    sentence = (f"{sum(per)} of the {total} heads{named} {'gives' if sum(per) == 1 else 'give'} periods and commas "
                f"clearly more than {floor:g}x their even share, {upper} of them in the upper half of the layers and "
                f"{sum(per) - upper} in the lower: 'deep heads attend to periods and commas' {deep_heads_verdict(per)}"
                f" here ({n_inputs} packed inputs; Clark et al. measured BERT-base).")
    return sentence, [f"per head, one-sided test of share ÷ uniform against {floor:g}, Bonferroni over all {total} "
                      f"heads; clearly above (layer, head): {punct_heads['heads'] or 'none'}",
                      "heads averaged, per layer: "
                      + "; ".join(f"layer {l + 1} {iv.format('.2f')}x" for l, iv in enumerate(ratio_ci))]


def length_finding(comparisons: dict, n_packed: int, n_short: int) -> tuple[str, list[str]]:
    """Whether dividing by the uniform share makes short and packed inputs comparable, as
    ``(sentence, details)``: ``comparisons`` maps each token class to :func:`compare_layers` of
    its share ÷ uniform share, short minus packed, paired on the same sentences."""
    from helpers.layerwalk.compute import layers_phrase, names_phrase

    differs = {c: d["above"] + d["below"] for c, d in comparisons.items()}
    same = [c for c, v in differs.items() if not v]
    sentence = (("Dividing by the even share does not make the two lengths comparable: the short and packed ratios "
                 "differ for " + "; ".join(f"{c} in {layers_phrase(v)}" for c, v in differs.items() if v)
                 + (f"; we cannot tell for {names_phrase(same)}" if same else "")
                 if len(same) < len(differs) else
                 "We cannot tell whether the short and packed ratios differ, for any class")
                + f" ({n_packed} packed inputs and their own {n_short} short pairs).")
    return sentence, [line for c, d in comparisons.items() for line in [f"{c}:"] + [v.text for v in d["verdicts"]]]


def norm_finding(norm_vs_weight: dict, head_vs_weight: dict, n_inputs: int, paper_label: str) -> tuple[str, list[str]]:
    """Kobayashi et al.'s norm-based share against the weight share, as ``(sentence, details)``:
    ``norm_vs_weight`` maps each token class to :func:`compare_layers` of the layer-level norm-based
    share minus the weight share (the sentence reads these), ``head_vs_weight`` the same for the
    per-head variant (folded in the details); ``paper_label`` says how the loaded model relates to
    the paper's BERT-base."""
    from helpers.layerwalk.compute import names_phrase

    follow = [c for c, w in norm_vs_weight.items() if len(w["below"]) == len(w["verdicts"])]
    sentence = ("Counting what each key passes on (Kobayashi et al.'s norm-based share) instead of its weight, the "
                "share is " + "; ".join(f"for {c}, {compare_sentence(w, 'larger', 'smaller')}"
                                        for c, w in norm_vs_weight.items())
                + f". Kobayashi et al. (2020, BERT-base; {paper_label}) found all three shrink; here "
                + (f"only {names_phrase(follow)} shrinks in every layer." if follow
                   else "none of them shrinks in every layer."))
    details = [line for c, w in norm_vs_weight.items()
               for line in [f"{c}, norm-based (layer level) minus weight share, paired over {n_inputs} inputs:"]
               + [v.text for v in w["verdicts"]]]
    return sentence, details + [f"{c}, per-head variant: " + compare_sentence(w, "larger", "smaller")
                                for c, w in head_vs_weight.items()]


def boundary_finding(twice: dict, sep_excess, sep_norm, punct_ratio) -> tuple[str, list[str]]:
    """The "[SEP] marks the boundary" reading, as ``(sentence, details)``: ``twice``
    (:func:`above_threshold` of each input's [SEP] share ÷ uniform share against 2), ``sep_excess``
    (those ratios, ``[n_inputs, L]``), ``sep_norm`` ([SEP]'s norm-based ÷ weight share per layer)
    and ``punct_ratio`` (punctuation's share ÷ uniform share per layer)."""
    from helpers.layerwalk.compute import layers_phrase

    enriched = [l + 1 for l in twice["above"]]
    sentence = ((f"[SEP] gets clearly more than twice its even share in {layers_phrase(enriched)}; there what it "
                 "passes on keeps " + ", ".join(f"{sep_norm[l - 1]:.0%}" for l in enriched) + " of its weight share."
                 if enriched else
                 "In no layer does [SEP] get clearly more than twice its even share"
                 f" (at most {sep_excess.mean(0).max():.1f}x on average): this model gives [SEP] no excess of "
                 "attention to explain, boundary or not.")
                + f" Punctuation gets at most {float(punct_ratio.max()):.1f}x its even share.")
    return sentence, ["per layer, one-sided test of [SEP] share ÷ uniform against 2, Bonferroni over the layers: "
                      + "; ".join(f"layer {l + 1} {iv.format('.2f')}" for l, iv in enumerate(twice["intervals"]))]


def self_attention_finding(self_rank, self_half: dict, trained_vs_random: dict, n_inputs: int) -> tuple[str, list[str]]:
    """[CLS]'s attention on itself, as ``(sentence, details)``: the highest layer and those that
    could be as high (``self_rank``, :func:`~helpers.common.stats.rank_layers`), the layers surely
    above one half (``self_half``, :func:`above_threshold`) and where the trained model differs from
    the random-weight one (``trained_vs_random``, :func:`compare_layers`)."""
    from helpers.layerwalk.compute import layers_phrase, profile_finding

    L = len(trained_vs_random["verdicts"])
    over_half = [l + 1 for l in self_half["above"]]
    learned = sorted(trained_vs_random["above"] + trained_vs_random["below"])
    sentence, details = profile_finding(self_rank, [f"layer {l}" for l in range(1, L + 1)],
                                        what="[CLS]'s attention on itself", percent=True)
    sentence = (f"{sentence} It is clearly above half in " + (layers_phrase(over_half) if over_half else "no layer")
                + " and differs from the random-weight model (about 1/n by construction) in "
                + ("every layer" if len(learned) == L else
                   layers_phrase(learned) if learned else "no layer we can tell")
                + f" ({n_inputs} short pairs).")
    return sentence, (details + ["trained minus random weights, paired:"]
                      + [v.text for v in trained_vs_random["verdicts"]]
                      + ["above one half, one-sided, Bonferroni over the layers: "
                         + "; ".join(f"layer {l + 1} {iv.percent()}" for l, iv in enumerate(self_half["intervals"]))])


# -- attention by word ---------------------------------------------------------------------------
#
# The rule of Clark et al. (2019, "What Does BERT Look At?", section 4, and their code,
# `get_word_word_attention` in clarkkev/attention-analysis, bpe_utils.py, whose comment says
# "we use 'mean' in the paper"): attention *to* a word split into several WordPieces is the sum of
# the weights on its pieces (attention a query gives is additive over keys); attention *from* such
# a word is the mean of its pieces' rows (each row is a distribution, and the mean of
# distributions is one). Every word row then still sums to 1.


@dataclass(frozen=True)
class WordGroups:
    """The words of a traced input: ``positions[w]`` are word ``w``'s token positions, ``labels[w]``
    its text; special tokens ([CLS], [SEP]) are words of their own."""

    positions: tuple
    labels: tuple

    def __len__(self) -> int:
        return len(self.positions)

    def membership(self, n_tokens: int, device=None) -> torch.Tensor:
        """``[W, T]``: 1 where token ``t`` belongs to word ``w``."""
        m = torch.zeros(len(self), n_tokens, device=device)
        for w, positions in enumerate(self.positions):
            m[w, list(positions)] = 1.0
        return m


def word_groups(trace: Trace, word_starts=None) -> WordGroups:
    """The tokens of each word of ``trace``'s input, in order.

    Without ``word_starts`` the words are the fast tokenizer's (``word_ids``, per segment of a
    pair). BERT's basic tokenizer makes every CJK character a word of its own, so for Chinese give
    ``word_starts``: the character offsets in the text where a word begins (lesson 15's jieba
    segmentation: ``SegmentedSentence.word_starts()`` in ``helpers/chinese/compute.py``); a token
    then joins the word whose span its first character falls in."""
    trace = check_trace(trace)
    if word_starts is not None and trace.text_pair is not None:
        raise ValueError("word_starts describes one text: give a trace of a single sentence, not a pair.")
    starts = None if word_starts is None else sorted({int(s) for s in word_starts} | {0})
    groups: dict = {}
    for pos, (seq, wid) in enumerate(zip(trace.sequence_ids, trace.word_ids)):
        span = trace._char_spans[pos] if pos < len(trace._char_spans) else None
        if wid is None or span is None:
            key = ("special", pos)  # [CLS], [SEP]: a word of their own
        elif starts is not None:
            key = ("word", 0, int(np.searchsorted(starts, span[0], side="right")) - 1)
        else:
            key = ("word", seq, wid)
        groups.setdefault(key, []).append(pos)
    positions = tuple(tuple(p) for p in groups.values())
    labels = []
    for key, pos in zip(groups, positions):
        if key[0] == "special":
            labels.append(trace.tokens[pos[0]])
        else:
            source = trace.text if key[1] == 0 else trace.text_pair
            labels.append(source[trace._char_spans[pos[0]][0]:trace._char_spans[pos[-1]][1]])
    return WordGroups(positions, tuple(labels))


def attention_by_word(attention, groups: WordGroups) -> torch.Tensor:
    """``[..., T, T]`` token attention -> ``[..., W, W]`` word attention: columns (keys) summed over
    a word's tokens, rows (queries) averaged over them (Clark et al. 2019; see above). Rows that sum
    to 1 over tokens sum to 1 over words."""
    attention = torch.as_tensor(attention, device=device_of(attention))
    n = attention.shape[-1]
    if attention.shape[-2] != n or sum(len(p) for p in groups.positions) != n:
        raise ValueError(f"attention must be [..., {n}, {n}] and the words must cover its {n} tokens once; "
                         f"got shape {tuple(attention.shape)} and {sum(len(p) for p in groups.positions)} tokens.")
    m = groups.membership(n, attention.device).to(attention.dtype)  # [W, T]
    keys_summed = attention @ m.T  # [..., T, W]
    return (m / m.sum(1, keepdim=True)) @ keys_summed  # [..., W, W]


def summed_query_attention(attention, queries) -> torch.Tensor:
    """``[..., Q, K]`` attention -> ``[..., K]``: the attention of several queries (tokens or words)
    added up, what the selected queries together give each key (as bertviz #125 asks); it sums to
    ``len(queries)`` where each row sums to 1."""
    attention = torch.as_tensor(attention, device=device_of(attention))
    queries = sorted({int(q) for q in queries})
    if not queries or queries[0] < 0 or queries[-1] >= attention.shape[-2]:
        raise ValueError(f"queries must be a non-empty set of positions 0 to {attention.shape[-2] - 1}, "
                         f"got {queries}.")
    return attention[..., queries, :].sum(-2)
