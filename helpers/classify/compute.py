"""Lessons 04 and 10 numbers: sentence features of every layer, linear heads, probes, layer strategies.

Features are computed once for every layer (:func:`extract_features`; :class:`FeatureBank` keeps
them per distinct text, so seeded few-shot draws of BANKING77 index into one extraction), and
probes and strategies never re-run the model. Layer ``0`` is the embedding output. Runs over
seeds are :class:`SeededAccuracy`; with :func:`probe_draws`, :func:`strategy_draws` and
:func:`head_predictions` each seed is also a different few-shot training set."""

from __future__ import annotations

import hashlib
import math
import textwrap
import warnings
from dataclasses import dataclass, field

import numpy as np
import torch

from helpers.common.progress import progress as progress_bar
from helpers.common.training import (BUDGET_EXHAUSTED, CONVERGED, GRADIENT_TOLERANCE, L2_GRID, MAX_ITERATIONS, LinearFit,
                                     TrainingRecord, fit_linear, linear_criterion, minimize_lbfgs, stratified_dev_split)
from helpers.common.stats import (Interval, McNemar, Replicates, SeedSpread, Verdict, accuracy_ci, bootstrap_size,
                                  equivalence_level, extreme_family, family_level, mcnemar, rank_layers,
                                  seeds_items_ci, seeds_items_replicates, verdict)
from helpers.model.trace import device_of, model_device


POOLINGS = ("cls", "mean")


@dataclass
class LayerFeatures:
    """Sentence features of every layer: ``cls``/``mean`` are ``[L+1, N, H]``, ``pooler`` ``[N, H]``."""

    cls: torch.Tensor
    mean: torch.Tensor
    pooler: torch.Tensor | None

    @property
    def num_layers(self) -> int:
        return self.cls.shape[0] - 1

    def layer(self, layer: int, pooling: str = "cls") -> torch.Tensor:
        """``[N, H]`` features of one layer (0 = embeddings) with one pooling."""
        if pooling not in POOLINGS:
            raise ValueError(f"pooling {pooling!r} is not valid: choose one of {POOLINGS}.")
        if isinstance(layer, bool) or not isinstance(layer, int) or not 0 <= layer <= self.num_layers:
            raise ValueError(f"layer {layer!r} is out of range: valid layers are 0 (embeddings) to {self.num_layers}.")
        return getattr(self, pooling)[layer]

    def select(self, rows) -> "LayerFeatures":
        """The features of some utterances (``rows``: indices into the N axis), in that order."""
        rows = torch.as_tensor(rows, dtype=torch.long, device=self.cls.device)
        if rows.ndim != 1 or (len(rows) and not 0 <= int(rows.min()) <= int(rows.max()) < self.cls.shape[1]):
            raise ValueError(f"rows must be a 1-D list of indices in 0..{self.cls.shape[1] - 1}.")
        return LayerFeatures(self.cls[:, rows], self.mean[:, rows], None if self.pooler is None else self.pooler[rows])

    def __len__(self) -> int:
        return self.cls.shape[1]


def _check_texts(texts) -> list[str]:
    if isinstance(texts, str) or not all(isinstance(t, str) and t.strip() for t in texts) or not len(texts):
        raise ValueError("texts must be a non-empty list of non-empty strings (wrap a single sentence in a list).")
    return list(texts)


def encode_batch(tokenizer, texts, max_length: int = 32, *, device=None):
    """Pad + truncate a list of texts to ``max_length`` tokens; warns when a text is cut.
    ``device``: where the tensors go (pass the model's, ``model_device(model)``); default the CPU."""
    texts = _check_texts(texts)
    if isinstance(max_length, bool) or not isinstance(max_length, int) or max_length < 2:
        raise ValueError(f"max_length must be an int >= 2 (room for [CLS] and [SEP]), got {max_length!r}.")
    lengths = [len(ids) for ids in tokenizer(texts)["input_ids"]]
    cut = [n for n in lengths if n > max_length]
    if cut:
        warnings.warn(f"{len(cut)} of {len(texts)} text(s) are longer than max_length={max_length} tokens "
                      f"(longest: {max(cut)}) and were truncated: the model sees only their first "
                      f"{max_length} tokens.", stacklevel=2)
    return tokenizer(texts, padding=True, truncation=True, max_length=max_length,
                     return_tensors="pt").to("cpu" if device is None else device)


def mean_pool(hidden: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """Average of the token vectors that are not padding: ``[B, T, H] -> [B, H]``."""
    mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
    return (hidden * mask).sum(1) / mask.sum(1).clamp(min=1)


@torch.no_grad()
def extract_features(tokenizer, model, texts, *, batch_size: int = 64, max_length: int = 32,
                     progress: bool = True, sort_by_length: bool = False) -> LayerFeatures:
    """One forward pass per batch; keep [CLS] and mean-pooled vectors of every layer.

    ``sort_by_length``: batch the texts in order of their token count (so a batch pads little)
    and put the features back in the order given -- the same vectors up to float rounding, in a
    fraction of the time when lengths vary."""
    texts = _check_texts(texts)
    order = list(range(len(texts)))
    if sort_by_length:
        lengths = [len(ids) for ids in tokenizer(texts, truncation=False, verbose=False)["input_ids"]]
        order.sort(key=lengths.__getitem__)
        cut = [n for n in lengths if n > max_length]
        if cut:  # warned once here, not once per batch below
            warnings.warn(f"{len(cut)} of {len(texts)} text(s) are longer than max_length={max_length} tokens "
                          f"(longest: {max(cut)}) and were truncated: the model sees only their first "
                          f"{max_length} tokens.", stacklevel=3)
    cls, mean, pooled = [], [], []
    batches = range(0, len(texts), batch_size)
    for start in progress_bar(batches, desc="features", disable=not progress):
        batch = [texts[i] for i in order[start:start + batch_size]]
        with warnings.catch_warnings():
            if sort_by_length:
                warnings.simplefilter("ignore", UserWarning)
            enc = encode_batch(tokenizer, batch, max_length, device=model_device(model))
        out = model(**enc, output_hidden_states=True, return_dict=True)
        hs = torch.stack(out.hidden_states)  # [L+1, B, T, H]
        cls.append(hs[:, :, 0])
        mean.append(torch.stack([mean_pool(h, enc["attention_mask"]) for h in hs]))
        if out.pooler_output is not None:
            pooled.append(out.pooler_output)
    feats = LayerFeatures(torch.cat(cls, 1), torch.cat(mean, 1), torch.cat(pooled) if pooled else None)
    if sort_by_length:
        back = [0] * len(order)  # back[i]: the row of text i in the sorted order
        for row, i in enumerate(order):
            back[i] = row
        feats = feats.select(back)
    return feats


class FeatureBank:
    """Features of every distinct text, extracted once (:func:`extract_features`, batched by length)
    and looked up by text: a few-shot draw takes its rows from the bank instead of re-running the
    model. The same text always has the same features, so duplicates are stored once."""

    def __init__(self, tokenizer, model, texts, *, max_length: int = 32, batch_size: int = 64, progress: bool = True):
        unique = list(dict.fromkeys(_check_texts(texts)))
        self.index = {text: i for i, text in enumerate(unique)}
        self.features = extract_features(tokenizer, model, unique, batch_size=batch_size, max_length=max_length,
                                         progress=progress, sort_by_length=True)

    def __len__(self) -> int:
        return len(self.index)

    def take(self, texts) -> LayerFeatures:
        """``LayerFeatures`` of ``texts``, in their order."""
        texts = _check_texts(texts)
        missing = [t for t in texts if t not in self.index]
        if missing:
            raise ValueError(f"{len(missing)} text(s) are not in this bank (first: {missing[0]!r}); build the "
                             "bank from every text the draws and the test set use.")
        return self.features.select([self.index[t] for t in texts])


class LinearHead(torch.nn.Module):
    """Standardize with the training statistics, then ``logits = x W^T + b``."""

    def __init__(self, in_features: int, num_classes: int, mean=None, std=None):
        super().__init__()
        self.register_buffer("mu", torch.zeros(in_features, device=device_of(mean, std)) if mean is None else mean)
        self.register_buffer("sigma", torch.ones(in_features, device=device_of(mean, std)) if std is None else std)
        self.classifier = torch.nn.Linear(in_features, num_classes)

    def forward(self, x):
        return self.classifier((x - self.mu) / self.sigma)


class WeightedLayerHead(torch.nn.Module):
    """Learned softmax-weighted sum of all layers (ELMo-style scalar mix), then a linear head.

    Input ``[N, L+1, H]``; ``softmax(layer_logits)`` are the learned layer weights.
    """

    def __init__(self, num_layers_plus_one: int, hidden: int, num_classes: int, mean=None, std=None):
        super().__init__()
        shape = (num_layers_plus_one, hidden)
        self.register_buffer("mu", torch.zeros(shape, device=device_of(mean, std)) if mean is None else mean)
        self.register_buffer("sigma", torch.ones(shape, device=device_of(mean, std)) if std is None else std)
        self.layer_logits = torch.nn.Parameter(torch.zeros(num_layers_plus_one, device=device_of(mean, std)))
        self.classifier = torch.nn.Linear(hidden, num_classes)

    def layer_weights(self) -> torch.Tensor:
        return torch.softmax(self.layer_logits, 0)

    def forward(self, x):
        z = (x - self.mu) / self.sigma
        return self.classifier((self.layer_weights()[None, :, None] * z).sum(1))


# Full-batch Adam steps (lr 0.01) of a linear head on frozen features. Lesson 10 checks on BANKING77
# whether SHORT_STEPS already land within a margin stated beforehand of HEAD_STEPS and of an
# independent solver (scikit-learn); its BANKING77 heads then train SHORT_STEPS if so, HEAD_STEPS
# otherwise. Lessons 11 and 14 train HEAD_STEPS.
SHORT_STEPS = 150
HEAD_STEPS = 4 * SHORT_STEPS


def _labels(y, n: int, device=None) -> torch.Tensor:
    y = torch.as_tensor(y, dtype=torch.long, device=device)
    if y.ndim != 1 or len(y) != n:
        raise ValueError(f"labels must be a 1-D sequence of {n} class ids, got shape {tuple(y.shape)}.")
    return y


def train_head(X: torch.Tensor, y, num_classes: int, *, weighted: bool = False, epochs: int = 150,
               lr: float = 0.01, weight_decay: float = 1e-3, seed: int = 0, progress: bool = True):
    """Full-batch Adam on frozen features. ``X`` is ``[N, H]`` (or ``[N, L+1, H]`` when ``weighted``)."""
    if not isinstance(X, torch.Tensor) or X.ndim != (3 if weighted else 2):
        raise ValueError(f"X must be a {'[N, L+1, H]' if weighted else '[N, H]'} tensor, got {getattr(X, 'shape', type(X))}.")
    if isinstance(num_classes, bool) or not isinstance(num_classes, int) or num_classes < 2:
        raise ValueError(f"num_classes must be an int >= 2, got {num_classes!r}.")
    y = _labels(y, len(X), X.device)
    if int(y.max()) >= num_classes or int(y.min()) < 0:
        raise ValueError(f"labels must lie in 0..{num_classes - 1}.")
    torch.manual_seed(seed)
    X = X.detach().float()
    mu, sigma = X.mean(0), X.std(0).clamp(min=1e-6)
    head = (WeightedLayerHead(X.shape[1], X.shape[2], num_classes, mu, sigma) if weighted
            else LinearHead(X.shape[1], num_classes, mu, sigma)).to(X.device)  # initialised on the CPU, then moved
    opt = torch.optim.Adam(head.parameters(), lr=lr, weight_decay=weight_decay)
    for _ in progress_bar(range(epochs), desc="training head", disable=not progress):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(head(X), y)
        loss.backward()
        opt.step()
    head.eval()
    return head


@torch.no_grad()
def predict(head, X: torch.Tensor) -> torch.Tensor:
    """argmax of the logits: one class id per row (``X`` goes to the head's device)."""
    return head(X.float().to(model_device(head))).argmax(-1)


def accuracy(head, X: torch.Tensor, y) -> float:
    y = _labels(y, len(X), model_device(head))
    return (predict(head, X) == y).float().mean().item()


def correct_per_item(head, X: torch.Tensor, y) -> torch.Tensor:
    """``[N]`` booleans: which test items the head classifies right (for intervals over items)."""
    y = _labels(y, len(X), model_device(head))
    return predict(head, X) == y


@dataclass
class SeededAccuracy:
    """Test outcomes of one classifier setting trained once per seed.

    ``correct`` is ``[n_seeds, n_test]`` (True = right). :meth:`interval` is the 95% interval of the
    accuracy with **both** sources of spread: a two-way bootstrap that resamples the seeds and the
    test items (:func:`~helpers.common.stats.seeds_items_ci`); with one seed, the exact
    Clopper-Pearson interval over the items. :meth:`seed_spread` is the spread of the per-seed
    accuracies alone, reported as such (mean, SD and range over the seeds).
    """

    correct: torch.Tensor
    seeds: tuple

    def __post_init__(self):
        self.correct = torch.as_tensor(self.correct).bool().cpu()  # cpu: per-item outcomes for statistics
        self.seeds = tuple(self.seeds)
        if self.correct.ndim != 2 or self.correct.shape[0] != len(self.seeds) or self.correct.shape[1] == 0:
            raise ValueError(f"correct must be [n_seeds={len(self.seeds)}, n_test > 0], got {tuple(self.correct.shape)}.")

    @property
    def estimate(self) -> float:
        """Accuracy averaged over seeds and items."""
        return self.correct.float().mean().item()

    @property
    def n_items(self) -> int:
        return self.correct.shape[1]

    def per_seed(self) -> list[float]:
        return self.correct.float().mean(1).tolist()

    def only(self, seeds) -> "SeededAccuracy":
        """The runs of ``seeds`` (a subset of :attr:`seeds`, in their order here)."""
        seeds = tuple(seeds)
        missing = [s for s in seeds if s not in self.seeds]
        if missing or not seeds:
            raise ValueError(f"seeds must be a non-empty subset of {self.seeds}, got {seeds}.")
        rows = [self.seeds.index(s) for s in seeds]
        return SeededAccuracy(self.correct[rows], seeds)

    def run_interval(self, run: int = 0) -> Interval:
        """Exact 95% interval over the test items of one seed's run (:func:`~helpers.common.stats.accuracy_ci`)."""
        return accuracy_ci(self.correct[run])

    def interval(self) -> Interval:
        """The mean over seeds and items with a 95% interval that resamples both (one seed: over items)."""
        if len(self.seeds) == 1:
            return self.run_interval(0)
        return _remembered(("interval", _content_key(self.correct)),
                           lambda: seeds_items_ci(self.correct.double().cpu().numpy()))

    def seed_spread(self) -> SeedSpread | None:
        """Mean, SD and range of the per-seed accuracies (``None`` with one seed)."""
        return SeedSpread(tuple(self.per_seed())) if len(self.seeds) > 1 else None

    def seed_range(self) -> Interval | None:
        """Mean and ``[min, max]`` of the per-seed accuracies (``None`` with one seed)."""
        spread = self.seed_spread()
        return None if spread is None else Interval(spread.mean, min(spread.values), max(spread.values), 1.0)

    def describe(self, unit: str = "seeds") -> str:
        """``84.1% [82.9, 85.3] (5 seeds x 3080 items; seed SD 0.4 pt, range 83.6-84.7%)``; ``unit`` names
        what a seed stands for (``"draws"`` when each seed drew another few-shot training set)."""
        text = self.interval().percent()
        if len(self.seeds) == 1:  # spread_summary says "one seed" (or "one draw")
            return f"{text} (exact interval over {self.n_items} items, {self.spread_summary(unit)})"
        return f"{text} ({len(self.seeds)} {unit} x {self.n_items} items; {self.spread_summary(unit)})"

    def spread_summary(self, unit: str = "seeds") -> str:
        """``SD over seeds 0.4 pt, range 83.6-84.7%``: how much the accuracy moved between runs (a table
        column beside :meth:`interval`); ``one seed`` when there is one run."""
        spread = self.seed_spread()
        if spread is None:
            return f"one {unit[:-1] if unit.endswith('s') else unit}"
        return (f"SD over {unit} {100 * spread.sd:.1f} pt, "
                f"range {100 * min(spread.values):.1f}-{100 * max(spread.values):.1f}%")


def per_item(outcomes) -> torch.Tensor:
    """``[n_items]`` floats: the share of runs that got each test item right -- the mean over
    seeds of a :class:`SeededAccuracy`, or a 1-D 0/1 (bool) vector as it is."""
    if isinstance(outcomes, SeededAccuracy):
        return outcomes.correct.float().mean(0)
    values = torch.as_tensor(np.asarray(outcomes) if not isinstance(outcomes, torch.Tensor) else outcomes).float().cpu()  # cpu: outcomes for statistics
    if values.ndim != 1 or values.numel() == 0:
        raise ValueError(f"give a SeededAccuracy or a 1-D vector of per-item outcomes, got shape {tuple(values.shape)}.")
    return values


def outcome_interval(outcomes) -> Interval:
    """The accuracy of a :class:`SeededAccuracy` (:meth:`SeededAccuracy.interval`) or of a 1-D
    vector of per-item outcomes (:func:`~helpers.common.stats.accuracy_ci`)."""
    return outcomes.interval() if isinstance(outcomes, SeededAccuracy) else accuracy_ci(per_item(outcomes))


def _runs(outcomes) -> torch.Tensor:
    """``[n_runs, n_items]`` floats: the per-seed outcomes of a :class:`SeededAccuracy`, or one run."""
    if isinstance(outcomes, SeededAccuracy):
        return outcomes.correct.float()
    return per_item(outcomes)[None]


@dataclass(frozen=True)
class PairedComparison:
    """A minus B on the same test items: the accuracy difference with the interval at any level
    (:meth:`interval`: Tango's score interval for one run each, a bootstrap over seeds and items
    for several seeds), its two-sided p-value from the same test, and how it was computed."""

    difference: Interval  # 95 %
    difference90: Interval  # 90 %, for one equivalence test
    p_value: float
    method: str
    n_items: int
    n_seeds: int
    source: object = None  # the McNemar result or the Replicates the intervals are read from
    p_floor: float | None = None

    def interval(self, level: float) -> Interval:
        if isinstance(self.source, McNemar):
            return self.source.interval(level)
        if isinstance(self.source, Replicates):
            return self.source.interval(level)
        raise ValueError("this comparison keeps no source to read another level from.")

    def verdict(self, a: str = "A", b: str = "B", margin: float | None = None, family: int = 1) -> Verdict:
        """:func:`~helpers.common.stats.verdict` read off the interval at the family's level
        (Bonferroni over ``family`` comparisons), the p-value adjusted to match."""
        d = self.interval(family_level(family))
        eq = self.interval(equivalence_level(family)) if margin is not None else None
        floor = None if self.p_floor is None else min(1.0, family * self.p_floor)
        return verdict(d, a=a, b=b, margin=margin, equivalence_interval=eq, p_value=min(1.0, family * self.p_value),
                       p_floor=floor, family=family, percent=True)


def paired_comparison(a, b) -> PairedComparison:
    """Accuracy of ``a`` minus accuracy of ``b``, measured on the **same** test items.

    One run each: Tango's score interval and McNemar's test (:func:`~helpers.common.stats.mcnemar`).
    Several seeds (:class:`SeededAccuracy`; run ``i`` of ``a`` paired with run ``i`` of ``b``, a
    single run paired with every run of the other): the per-item, per-seed differences are
    resampled over seeds and items together (:func:`~helpers.common.stats.seeds_items_replicates`,
    small-sample rule on the seeds), the p-value from the same replicates.
    """
    A, B = _runs(a), _runs(b)
    if A.shape[1] != B.shape[1]:
        raise ValueError(f"a and b must be measured on the same test items: {A.shape[1]} vs {B.shape[1]} items.")
    if len(A) != len(B) and 1 not in (len(A), len(B)):
        raise ValueError(f"a and b must have the same number of seeds (or one run), got {len(A)} and {len(B)}.")
    return _remembered(("paired", _content_key(A), _content_key(B)), lambda: _paired_comparison(A, B))


def _paired_comparison(A: torch.Tensor, B: torch.Tensor) -> PairedComparison:
    n_seeds = max(len(A), len(B))
    if n_seeds == 1:
        m = mcnemar(A[0].cpu().numpy(), B[0].cpu().numpy())
        return PairedComparison(m.difference, m.difference90, m.p_value, "Tango's score interval, McNemar's test",
                                A.shape[1], 1, m)
    D = (A.expand(n_seeds, -1) - B.expand(n_seeds, -1)).double().cpu().numpy()
    if not D.any():  # right and wrong on the same items in every run: the seeds x items bootstrap has no spread
        m = mcnemar(A[0].cpu().numpy(), B[0].cpu().numpy())
        return PairedComparison(m.difference, m.difference90, 1.0, "no item differs in any run: Tango's score "
                                "interval of one run", A.shape[1], n_seeds, m)
    reps = seeds_items_replicates(D, n_boot=bootstrap_size(20))  # enough replicates for a family of 20
    return PairedComparison(reps.interval(0.95), reps.interval(0.90), float(reps.p_values()[0]),
                            "bootstrap over seeds and items", A.shape[1], n_seeds, reps, reps.p_floor)


# The seeded bootstraps above give the same answer for the same outcomes, so a lesson that asks
# twice (the layer ranking, then the peak verdict, then the claims table) computes once. Keyed by
# the outcomes' content, never by object identity; kept small.
_REMEMBERED: dict = {}


def _content_key(outcomes: torch.Tensor) -> tuple:
    array = outcomes.detach().cpu().contiguous().numpy()
    return array.shape, str(array.dtype), hashlib.sha1(array.tobytes()).hexdigest()


def _remembered(key, compute):
    if key not in _REMEMBERED:
        if len(_REMEMBERED) >= 1024:
            _REMEMBERED.clear()
        _REMEMBERED[key] = compute()
    return _REMEMBERED[key]


def paired_difference(a, b) -> Interval:
    """The 95% interval of accuracy(a) - accuracy(b) on the same items (:func:`paired_comparison`)."""
    return paired_comparison(a, b).difference


def points(interval: Interval) -> str:
    """An accuracy difference in percentage points: ``+4.0 points [-1.0, +9.0]``."""
    return f"{100 * interval.estimate:+.1f} points [{100 * interval.low:+.1f}, {100 * interval.high:+.1f}]"


def compare_paired(named: dict, what: str = "accuracy", width: int | None = 110, margin: float | None = None) -> str:
    """A few lines that rank classifiers tested on the same items, pairing each with the best.

    ``named`` maps names to :class:`SeededAccuracy` (or 1-D per-item outcomes). The highest
    estimate is named; every other is compared with it item by item (:func:`paired_comparison`).
    The best is picked on the same test items, so the family is every pair of classifiers
    (Bonferroni): an other one is "lower" when its interval at that level lies below 0; else, with a
    ``margin`` (in accuracy, e.g. 0.02, stated before the measurement), "equivalent" when its
    equivalence interval lies inside the margin; else "inconclusive". Lines are
    wrapped at ``width`` characters (``None``: one line).
    """
    if not named:
        raise ValueError("named must map at least one name to a SeededAccuracy or per-item outcomes.")
    est = {k: _runs(v).mean().item() for k, v in named.items()}
    best = max(named, key=est.__getitem__)
    lines = [f"Highest {what}: {best}, {outcome_interval(named[best]).percent()}."]
    if len(named) > 1:
        others = [k for k in named if k != best]
        comps = {k: paired_comparison(named[k], named[best]) for k in others}
        family = extreme_family(len(named))  # the best is picked by the data: every pair counts
        verdicts = {k: comps[k].verdict(k, best, margin=margin, family=family) for k in others}
        groups = {kind: [f"{k} ({points(verdicts[k].difference)}, adjusted {verdicts[k].p_text})" for k in others
                         if verdicts[k].kind == kind] for kind in ("lower", "higher", "equivalent", "inconclusive")}
        first = comps[others[0]]
        lines.append(f"Each other one minus it, paired on the same {first.n_items} test items ({first.method}; "
                     f"{100 * family_level(family):.4g} % intervals and p-values Bonferroni-adjusted over the "
                     f"{family} pairs, since the best is picked from the same data):")
        if groups["lower"]:
            lines.append(f"lower (interval below 0): {join_names(groups['lower'])}.")
        if groups["equivalent"]:
            lines.append(f"equivalent within +/-{100 * margin:.1f} points ({100 * equivalence_level(family):.4g} % "
                         "interval inside the margin): "
                         f"{join_names(groups['equivalent'])}.")
        if groups["inconclusive"]:
            lines.append("inconclusive (not shown lower" + ("" if margin is None else ", not shown equivalent")
                         + f"): {join_names(groups['inconclusive'])}.")
    if width is None:
        return " ".join(lines)
    return "\n".join(textwrap.fill(line, width, initial_indent="  " if i else "", subsequent_indent="    ",
                                   break_on_hyphens=False)
                     for i, line in enumerate(lines))


def compare_with(named: dict, reference: str, width: int | None = 110, margin: float | None = None) -> str:
    """Every classifier in ``named`` minus the ``reference`` one (a key of ``named``), paired on the same
    test items (:func:`paired_comparison`), one Bonferroni family over those comparisons; each
    line is the :class:`~helpers.common.stats.Verdict` by the course's rules."""
    if reference not in named or len(named) < 2:
        raise ValueError(f"named must hold the reference {reference!r} and at least one other classifier; "
                         f"got {list(named)}.")
    others = [k for k in named if k != reference]
    comps = {k: paired_comparison(named[k], named[reference]) for k in others}
    family = len(others)
    first = comps[others[0]]
    lines = [f"each minus {reference} ({outcome_interval(named[reference]).percent()}), paired on the same "
             f"{first.n_items} test items ({first.method}"
             + ("" if family == 1 else f"; Bonferroni over the {family} comparisons") + "):"]
    lines += [f"{k} {outcome_interval(named[k]).percent()}: "
              + comps[k].verdict(k, reference, margin=margin, family=family).text for k in others]
    if width is None:
        return lines[0] + " " + "; ".join(lines[1:])
    return "\n".join(textwrap.fill(line, width, initial_indent="  " if i else "", subsequent_indent="    ",
                                   break_on_hyphens=False) for i, line in enumerate(lines))


def compare_two_paired(a_name: str, a, b_name: str, b, margin: float | None = None) -> str:
    """``"A 88.0% [..] vs B 92.0% [..]; A - B paired on the same 100 items (Tango's interval):
    inconclusive: ..."`` -- the verdict by the course's rules (:class:`~helpers.common.stats.Verdict`)."""
    comp = paired_comparison(a, b)
    if _runs(a).shape == _runs(b).shape and torch.equal(_runs(a), _runs(b)):
        text = (f"right and wrong on exactly the same items ({comp.verdict(a_name, b_name, margin=margin).kind}: "
                "no item differs, but a test set this size bounds how many could)")
    else:
        text = comp.verdict(a_name, b_name, margin=margin).text
    return (f"{a_name} {outcome_interval(a).percent()} vs {b_name} {outcome_interval(b).percent()}; paired on the "
            f"same {comp.n_items} test items ({comp.method}): {text}")


def claims_markdown(rows, header=("popular claim", "what this model shows (this run)", "published finding (paper, model)")) -> str:
    """A Markdown table (for ``IPython.display.Markdown``) from rows of three strings."""
    cell = lambda text: str(text).replace("|", "\\|").replace("\n", " ")
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        if len(row) != len(header):
            raise ValueError(f"each row needs {len(header)} cells, got {len(row)}: {row!r}.")
        lines.append("| " + " | ".join(cell(c) for c in row) + " |")
    return "\n".join(lines)


def join_names(names) -> str:
    names = list(names)
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def confusion_matrix(y_true, y_pred, num_classes: int) -> np.ndarray:
    """``cm[i, j]`` = how many items of true class ``i`` were predicted as ``j``. ``y_pred`` may be
    ``[n_runs, n_items]`` (one row per seed or draw): the counts of all runs are added."""
    y_true, y_pred = (np.asarray(y.cpu() if isinstance(y, torch.Tensor) else y) for y in (y_true, y_pred))
    if y_pred.ndim == 2 and y_true.ndim == 1:
        y_true = np.broadcast_to(y_true, y_pred.shape)
    if y_true.shape != y_pred.shape:
        raise ValueError(f"y_true and y_pred differ in shape: {y_true.shape} vs {y_pred.shape}.")
    cm = np.zeros((num_classes, num_classes), dtype=int)
    np.add.at(cm, (y_true.ravel(), y_pred.ravel()), 1)
    return cm


def top_confusions(cm, k: int = 10) -> list[tuple[int, int, int]]:
    """The ``k`` largest off-diagonal counts of a confusion matrix as ``(true, predicted, count)``,
    largest first (ties: lower true id, then lower predicted id); never a zero count."""
    cm = np.asarray(cm)
    if cm.ndim != 2 or cm.shape[0] != cm.shape[1]:
        raise ValueError(f"cm must be a square confusion matrix, got shape {cm.shape}.")
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be a positive int, got {k!r}.")
    pairs = [(int(i), int(j), int(cm[i, j])) for i, j in zip(*np.nonzero(cm)) if i != j]
    return sorted(pairs, key=lambda p: (-p[2], p[0], p[1]))[:k]


def confusion_subset(cm, classes) -> np.ndarray:
    """The rows and columns of ``classes`` (in that order) of a confusion matrix, plus one last column
    that counts the predictions of every other class: ``[k, k + 1]``, each row keeps its total."""
    cm = np.asarray(cm)
    classes = [int(c) for c in classes]
    if not classes or len(set(classes)) != len(classes) or not all(0 <= c < cm.shape[0] for c in classes):
        raise ValueError(f"classes must be distinct class ids in 0..{cm.shape[0] - 1}, got {classes}.")
    sub = cm[np.ix_(classes, classes)]
    return np.concatenate([sub, (cm[classes].sum(1) - sub.sum(1))[:, None]], axis=1)


# --------------------------------------------------------------------------- the training contract
# Every head and probe below is fitted by helpers.common.training's contract: the L2 strength is
# chosen on a dev split carved from training data (never the test set), the fit runs full-batch
# L-BFGS from W = 0 (scored there: step 0) until its gradient is below the stated tolerance, and a
# TrainingRecord says whether it converged.


@dataclass
class Draw:
    """One training set and the dev split carved for it: ``LayerFeatures`` and labels of each."""

    train: LayerFeatures
    y_train: list
    dev: LayerFeatures
    y_dev: list

    def __post_init__(self):
        if not isinstance(self.train, LayerFeatures) or not isinstance(self.dev, LayerFeatures):
            raise ValueError("a Draw holds the LayerFeatures of its training and dev utterances.")
        self.y_train, self.y_dev = [int(v) for v in self.y_train], [int(v) for v in self.y_dev]
        if len(self.y_train) != len(self.train) or len(self.y_dev) != len(self.dev):
            raise ValueError(f"labels must match the features: {len(self.y_train)} vs {len(self.train)} training, "
                             f"{len(self.y_dev)} vs {len(self.dev)} dev utterances.")


def _step0(y_dev, num_classes: int) -> tuple[float, float]:
    """Dev loss and accuracy of a head at ``W = 0, b = 0``: every class equally likely, argmax class 0."""
    y = torch.as_tensor(y_dev)  # cpu: labels, compared on the CPU
    return math.log(num_classes), float((y == 0).double().mean())


def _record(run: str, fit: LinearFit, g: int, p: int, s: int, dev_loss: float, dev_acc: float, train_acc: float,
            step0) -> TrainingRecord:
    return TrainingRecord(run=run, status=CONVERGED if bool(fit.converged[g, p, s]) else BUDGET_EXHAUSTED,
                          criterion=linear_criterion(fit.tolerance, fit.max_iter), choice=f"L2 {fit.l2[g].item():g}",
                          grid="L2 " + ", ".join(f"{v:g}" for v in fit.l2.tolist()), steps=fit.iterations[g],
                          step0=step0, kept=(float(dev_loss), float(dev_acc)), train_accuracy=float(train_acc),
                          gradient=float(fit.gradient[g, p, s]))


def _chosen_by_dev(fit: LinearFit, Z_dev: torch.Tensor, y_dev) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(g [P, S], dev loss [P, S], dev accuracy [P, S])``: per problem, the L2 strength with the
    lowest dev loss (ties: the stronger penalty, the later grid entry never wins a tie)."""
    losses, accs = fit.losses(Z_dev, y_dev), fit.accuracies(Z_dev, y_dev)  # [G, P, S]
    g = losses.argmin(0)
    return g, losses.gather(0, g[None])[0], accs.gather(0, g[None])[0]


def fit_head(X: torch.Tensor, y, num_classes: int, X_dev: torch.Tensor, y_dev, *, weighted: bool = False,
             l2=L2_GRID, run: str = "head", tol: float = GRADIENT_TOLERANCE,
             max_iter: int = MAX_ITERATIONS) -> tuple[torch.nn.Module, TrainingRecord]:
    """A :class:`LinearHead` (or, ``weighted``, a :class:`WeightedLayerHead` on ``[N, L+1, H]``)
    fitted by the training contract: features standardized with the training mean and standard
    deviation, one fit per L2 strength in ``l2`` (:func:`~helpers.common.training.fit_linear`,
    L-BFGS to the gradient tolerance), the one with the lowest loss on the dev features kept.
    Returns the head and its :class:`~helpers.common.training.TrainingRecord`."""
    if not isinstance(X, torch.Tensor) or X.ndim != (3 if weighted else 2):
        raise ValueError(f"X must be a {'[N, L+1, H]' if weighted else '[N, H]'} tensor, got {getattr(X, 'shape', type(X))}.")
    if not isinstance(X_dev, torch.Tensor) or X_dev.shape[1:] != X.shape[1:]:
        raise ValueError(f"X_dev must hold the same features as X: shape [n_dev, {', '.join(map(str, X.shape[1:]))}], "
                         f"got {getattr(X_dev, 'shape', type(X_dev))}.")
    y, y_dev = _labels(y, len(X), X.device), _labels(y_dev, len(X_dev), X.device)
    if int(y.max()) >= num_classes or int(y.min()) < 0 or int(y_dev.max()) >= num_classes or int(y_dev.min()) < 0:
        raise ValueError(f"labels must lie in 0..{num_classes - 1}.")
    X, X_dev = X.detach().float(), X_dev.detach().float().to(X.device)
    mu, sigma = X.mean(0), X.std(0).clamp(min=1e-6)
    Z, Z_dev = (X - mu) / sigma, (X_dev - mu) / sigma
    if weighted:
        return _fit_weighted(Z, y, Z_dev, y_dev, num_classes, mu, sigma, l2=l2, run=run, tol=tol, max_iter=max_iter)
    fit = fit_linear(Z[None], y, num_classes, l2, tol=tol, max_iter=max_iter)
    g, dev_loss, dev_acc = _chosen_by_dev(fit, Z_dev[None], y_dev)
    k = int(g[0, 0])
    head = LinearHead(X.shape[1], num_classes, mu, sigma).to(X.device)
    with torch.no_grad():
        head.classifier.weight.copy_(fit.W[k, 0, :, 0, :].T)
        head.classifier.bias.copy_(fit.b[k, 0, 0])
    head.eval()
    train_acc = fit.accuracies(Z[None], y)[k, 0, 0]
    return head, _record(run, fit, k, 0, 0, dev_loss[0, 0], dev_acc[0, 0], train_acc, _step0(y_dev, num_classes))


# The scalar mix's pull toward equal layer weights: mu / 2 * ||s - mean(s)||^2 on the mix logits s,
# chosen on the dev split together with the head's L2 strength (0: no pull). Without it, the head's
# L2 penalty alone decides where the mix goes: a mix of standardized layers has a smaller spread than
# one layer, so the head needs larger weights for it and the penalty pays for a single layer (a
# corner) -- a property of the penalty, not of the layers.
MIX_GRID = (0.0, 1e-4, 1e-3, 1e-2, 1e-1)


def _weighted_problems(Z, y, Z_dev, y_dev, num_classes, pairs, *, tol, max_iter, start=None):
    """Fit one scalar mix + linear head per ``(L2 strength, pull)`` pair, batched in one L-BFGS run,
    from equal weights and ``W = 0`` (or from ``start = (s, W, b)`` of one earlier fit, for every
    pair). Returns ``(s, W, b, dev loss, largest gradient, iterations)``, one row per pair."""
    lam = torch.tensor([a for a, _ in pairs], dtype=torch.float64, device=Z.device)
    pull = torch.tensor([m for _, m in pairs], dtype=torch.float64, device=Z.device)
    G, (N, K, H), C = len(pairs), Z.shape, num_classes
    if start is None:
        start = (torch.zeros(K, dtype=torch.float64, device=Z.device),
                 torch.zeros(H, C, dtype=torch.float64, device=Z.device),
                 torch.zeros(1, C, dtype=torch.float64, device=Z.device))
    s, W, b = (x.detach().to(torch.float64).expand(G, *x.shape).clone().requires_grad_(True) for x in start)

    def logits(A):
        mixed = torch.einsum("gk,nkh->gnh", torch.softmax(s, -1), A)
        return mixed @ W + b  # [G, N, C]

    def per_problem(A, labels):
        return torch.nn.functional.cross_entropy(logits(A).transpose(1, 2), labels[None].expand(G, -1),
                                                 reduction="none").mean(1)

    def objective():
        centred = s - s.mean(1, keepdim=True)
        return (per_problem(Z, y) + 0.5 * lam * W.pow(2).sum((1, 2)) + 0.5 * pull * centred.pow(2).sum(1)).sum()

    def largest_gradient():
        return torch.stack([s.grad.abs().amax(1), W.grad.abs().amax((1, 2)), b.grad.abs().amax((1, 2))]).amax(0)

    iterations = minimize_lbfgs([s, W, b], objective, largest_gradient, tol=tol, max_iter=max_iter)
    grad = largest_gradient().detach()
    with torch.no_grad():
        dev_loss = per_problem(Z_dev, y_dev)
    return s.detach(), W.detach(), b.detach(), dev_loss, grad, iterations


def _fit_weighted(Z, y, Z_dev, y_dev, num_classes, mu, sigma, *, l2, run, tol, max_iter, mix=MIX_GRID):
    """The scalar mix (softmax weights over layers) and the linear head on the mixed vector, jointly
    by L-BFGS. Chosen on the dev split in two steps (the full grid of pairs would cost the product
    of both grids): the head's L2 strength with no pull, from uniform weights and ``W = 0``; then
    the pull toward equal weights (``mix``, on the centred mix logits, :data:`MIX_GRID`) at that
    strength, each started from the chosen no-pull fit; the pair with the lowest dev loss is kept. Not convex: "converged" means the gradient
    vanished (a stationary point)."""
    Z, Z_dev = Z.double(), Z_dev.double()
    strengths = [float(a) for a in torch.as_tensor(l2).reshape(-1).tolist()]  # cpu: a list of numbers
    first = [(a, 0.0) for a in strengths]
    fits = [(first, _weighted_problems(Z, y, Z_dev, y_dev, num_classes, first, tol=tol, max_iter=max_iter))]
    j = int(fits[0][1][3].argmin())
    best_l2 = first[j][0]
    second = [(best_l2, float(m)) for m in mix if m > 0]
    if second:  # started from the chosen no-pull fit: the same stationary points need fewer iterations
        start = tuple(fits[0][1][i][j] for i in range(3))
        fits.append((second, _weighted_problems(Z, y, Z_dev, y_dev, num_classes, second, tol=tol, max_iter=max_iter,
                                                start=start)))
    pairs = [p for ps, _ in fits for p in ps]
    s, W, b, dev_loss, grad = (torch.cat([f[i] for _, f in fits]) for i in range(5))
    iterations = sum(f[5] for _, f in fits)
    k = int(dev_loss.argmin())
    (N, K, H), C = Z.shape, num_classes
    with torch.no_grad():
        def predict(A):
            return (torch.einsum("k,nkh->nh", torch.softmax(s[k], -1), A) @ W[k] + b[k]).argmax(-1)

        dev_acc = float((predict(Z_dev) == y_dev).double().mean())
        train_acc = float((predict(Z) == y).double().mean())
    head = WeightedLayerHead(K, H, C, mu, sigma).to(Z.device)
    with torch.no_grad():
        head.layer_logits.copy_(s[k].float())
        head.classifier.weight.copy_(W[k].T.float())
        head.classifier.bias.copy_(b[k, 0].float())
    head.eval()
    lam_k, pull_k = pairs[k]
    edge = " (the grid's strongest pull)" if pull_k == max(mix) and max(mix) > 0 else ""
    record = TrainingRecord(run=run, status=CONVERGED if float(grad[k]) <= tol else BUDGET_EXHAUSTED,
                            criterion=linear_criterion(tol, max_iter),
                            choice=f"L2 {lam_k:g}, pull {pull_k:g}{edge}",
                            grid="L2 " + ", ".join(f"{v:g}" for v in strengths) + " (no pull), then pull "
                                 + ", ".join(f"{v:g}" for v in mix) + " at the chosen L2", steps=iterations,
                            step0=_step0(y_dev.cpu(), num_classes), kept=(float(dev_loss[k]), dev_acc),
                            train_accuracy=train_acc, gradient=float(grad[k]))
    return head, record


def fit_head_split(X: torch.Tensor, y, num_classes: int, *, dev_per_class: int = 4, seed: int = 0,
                   run: str = "head") -> tuple[torch.nn.Module, TrainingRecord]:
    """:func:`fit_head` on a small labelled set that has no dev split of its own (lesson 04's ten
    intents): ``dev_per_class`` utterances of every class, drawn with ``seed``, become the dev split
    (:func:`~helpers.common.training.stratified_dev_split`), the rest trains the head."""
    rows, dev_rows = stratified_dev_split(torch.as_tensor(y).tolist(), per_class=dev_per_class, seed=seed)  # cpu: a list
    y = torch.as_tensor(y).tolist()  # cpu: a list
    return fit_head(X[rows], [y[i] for i in rows], num_classes, X[dev_rows], [y[i] for i in dev_rows], run=run)


@dataclass
class ProbeSet:
    """Per layer 0..L, the linear probe the dev split chose (``weight [L+1, H, C]``, ``bias
    [L+1, C]``, on features standardized with ``mu``/``sigma`` ``[L+1, 1, H]``) and its record."""

    mu: torch.Tensor
    sigma: torch.Tensor
    weight: torch.Tensor
    bias: torch.Tensor
    records: list

    @torch.no_grad()
    def predict(self, X: torch.Tensor) -> torch.Tensor:
        """``[L+1, N, H]`` features -> ``[L+1, N]`` predicted class ids."""
        Z = (X.float() - self.mu) / self.sigma
        return (torch.baddbmm(self.bias[:, None], Z, self.weight)).argmax(-1)


def probe_layers(draw: Draw, num_classes: int, pooling: str = "cls", *, l2=L2_GRID, run: str = "probe") -> ProbeSet:
    """One linear probe per layer 0..L on one pooling (``"cls"`` or ``"mean"``), all fitted at once
    by the training contract (:func:`~helpers.common.training.fit_linear`: every layer and L2
    strength one problem of one batched L-BFGS), each layer's L2 strength chosen on its dev loss."""
    if pooling not in POOLINGS:
        raise ValueError(f"pooling {pooling!r} is not valid: choose one of {POOLINGS}.")
    X, Xd = getattr(draw.train, pooling).float(), getattr(draw.dev, pooling).float()  # [L+1, N, H]
    y = _labels(draw.y_train, X.shape[1], X.device)
    y_dev = _labels(draw.y_dev, Xd.shape[1], X.device)
    mu, sigma = X.mean(1, keepdim=True), X.std(1, keepdim=True).clamp(min=1e-6)
    Z, Zd = (X - mu) / sigma, (Xd.to(X.device) - mu) / sigma
    fit = fit_linear(Z, y, num_classes, l2)
    g, dev_loss, dev_acc = _chosen_by_dev(fit, Zd, y_dev)
    chosen = fit.select(g)
    train_acc = chosen.accuracies(Z, y)[0]
    step0 = _step0(draw.y_dev, num_classes)
    records = [_record(f"{run}, layer {l}", fit, int(g[l, 0]), l, 0, dev_loss[l, 0], dev_acc[l, 0], train_acc[l, 0],
                       step0) for l in range(X.shape[0])]
    return ProbeSet(mu, sigma, chosen.W[0, :, :, 0, :].float(), chosen.b[0, :, 0, :].float(), records)


def _check_draws(draws) -> dict:
    if not isinstance(draws, dict) or not draws or not all(isinstance(d, Draw) for d in draws.values()):
        raise ValueError("draws must map each seed to a Draw: the features and labels of the training set drawn "
                         "with that seed and of its dev split.")
    return draws


@dataclass
class DrawResults:
    """Outcomes over draws: ``runs`` (one :class:`SeededAccuracy` per layer or per strategy),
    ``predictions`` (predicted ids, ``[..., n_draws, N_test]``) and every fit's record."""

    runs: list
    predictions: torch.Tensor
    records: list


def probe_draws(draws: dict, test: LayerFeatures, y_test, num_classes: int, pooling: str = "cls", *,
                progress: bool = True, l2=L2_GRID) -> DrawResults:
    """One :class:`SeededAccuracy` per layer 0..L, one run per **few-shot draw** (``draws`` maps a seed
    to its :class:`Draw`): :func:`probe_layers` on each draw. The spread over seeds is then the spread
    over training sets, the variance that matters for a frozen probe. ``predictions`` is
    ``[L+1, n_draws, N_test]`` (for confusions)."""
    draws = _check_draws(draws)
    seeds = tuple(draws)
    yt = _labels(y_test, len(test), test.cls.device)
    preds, records = [], []
    for s in progress_bar(seeds, desc=f"probes ({pooling}), one set per draw", disable=not progress):
        probes = probe_layers(draws[s], num_classes, pooling, l2=l2, run=f"{pooling} probe, draw {s}")
        preds.append(probes.predict(getattr(test, pooling)))
        records += probes.records
    preds = torch.stack(preds, 1)  # [L+1, n_draws, N_test]
    return DrawResults([SeededAccuracy(p == yt, seeds) for p in preds], preds, records)


def head_predictions(draws: dict, test: LayerFeatures, layer: int, pooling: str, num_classes: int, y_test=None, *,
                     progress: bool = True, l2=L2_GRID) -> DrawResults:
    """One :func:`fit_head` per draw on one layer and pooling: ``predictions`` ``[n_draws, N_test]``,
    ``runs`` one :class:`SeededAccuracy` when the test labels ``y_test`` are given (else empty)."""
    draws = _check_draws(draws)
    X_test = test.layer(layer, pooling)
    preds, records = [], []
    for s, d in progress_bar(list(draws.items()), desc="heads, one per draw", disable=not progress):
        head, record = fit_head(d.train.layer(layer, pooling), d.y_train, num_classes, d.dev.layer(layer, pooling),
                                d.y_dev, l2=l2, run=f"{pooling} layer {layer} head, draw {s}")
        preds.append(predict(head, X_test))
        records.append(record)
    preds = torch.stack(preds)
    runs = [] if y_test is None else [SeededAccuracy(preds == _labels(y_test, len(test), preds.device), tuple(draws))]
    return DrawResults(runs, preds, records)


def last_k_layers(num_layers: int, k: int = 4) -> tuple[list[int], str]:
    """Encoder layers for "the last k": all available (and a note) when the model has fewer."""
    if num_layers >= k:
        return list(range(num_layers - k + 1, num_layers + 1)), f"layers {num_layers - k + 1}..{num_layers}"
    return list(range(1, num_layers + 1)), f"this model has only {num_layers} layers: using all of them"


def strategy_features(feats: LayerFeatures, strategy: str) -> torch.Tensor:
    """Features for one named strategy (see :data:`STRATEGIES`)."""
    L = feats.num_layers
    if strategy == "last layer [CLS]":
        return feats.cls[L]
    if strategy == "second-to-last [CLS]":
        return feats.cls[max(L - 1, 0)]
    if strategy == "concat last four [CLS]":
        layers, _ = last_k_layers(L)
        return torch.cat([feats.cls[i] for i in layers], -1)
    if strategy == "weighted sum, all layers [CLS]":
        return feats.cls.transpose(0, 1)  # [N, L+1, H]
    if strategy == "mean pooling, last layer":
        return feats.mean[L]
    raise ValueError(f"unknown strategy {strategy!r}; valid: {STRATEGIES}.")


STRATEGIES = ("last layer [CLS]", "second-to-last [CLS]", "concat last four [CLS]",
              "weighted sum, all layers [CLS]", "mean pooling, last layer")


@dataclass
class StrategyComparison:
    """Every strategy's :class:`SeededAccuracy`, the weighted head's learned layer weights
    ``[n_draws, L+1]`` and every head's :class:`~helpers.common.training.TrainingRecord` (by strategy)."""

    accuracy: dict
    layer_weights: torch.Tensor | None
    records: dict = field(default_factory=dict)


def strategy_draws(draws: dict, test: LayerFeatures, y_test, num_classes: int, strategies=STRATEGIES, *,
                   progress: bool = True, l2=L2_GRID) -> StrategyComparison:
    """Each strategy's head once per draw (``draws`` maps a seed to its :class:`Draw`), fitted by the
    training contract (:func:`fit_head`); every test item's outcome is kept. ``layer_weights`` is
    ``None`` unless the weighted strategy is among them."""
    draws = _check_draws(draws)
    unknown = [name for name in strategies if name not in STRATEGIES]
    if unknown or not strategies:
        raise ValueError(f"unknown strategies {unknown}; valid: {STRATEGIES}.")
    seeds = tuple(draws)
    correct = {name: [] for name in strategies}
    records = {name: [] for name in strategies}
    weights = []
    steps = [(s, name) for s in seeds for name in strategies]
    for seed, name in progress_bar(steps, desc="strategies x draws", disable=not progress):
        weighted = name.startswith("weighted")
        d = draws[seed]
        head, record = fit_head(strategy_features(d.train, name), d.y_train, num_classes,
                                strategy_features(d.dev, name), d.y_dev, weighted=weighted, l2=l2,
                                run=f"{name}, draw {seed}")
        correct[name].append(correct_per_item(head, strategy_features(test, name), y_test))
        records[name].append(record)
        if weighted:
            weights.append(head.layer_weights().detach())
    return StrategyComparison({n: SeededAccuracy(torch.stack(c), seeds) for n, c in correct.items()},
                              torch.stack(weights) if weights else None, records)


def layer_weights_summary(weights) -> str:
    """The learned scalar-mix weights ``[n_seeds, L+1]`` as a small table (per layer: mean and
    min-max over seeds), then the layer with the largest mean and the layers whose weight a paired
    comparison over the seeds does not show lower (:func:`~helpers.common.stats.rank_layers`)."""
    weights = torch.as_tensor(weights, dtype=torch.float64, device="cpu")  # cpu: a float64 table of results
    if weights.ndim != 2 or weights.shape[1] < 2:
        raise ValueError(f"weights must be [n_seeds, L+1] with L >= 1, got shape {tuple(weights.shape)}.")
    mean, low, high = weights.mean(0), weights.min(0).values, weights.max(0).values
    top = int(mean.argmax())
    n_seeds = weights.shape[0]
    lines = [f"learned layer weights over {n_seeds} seed(s) (uniform would be {1 / len(mean):.2f}):",
             f"{'layer':<8}" + "".join(f"{l:>11}" for l in range(len(mean))),
             f"{'mean':<8}" + "".join(f"{m:>11.2f}" for m in mean.tolist()),
             f"{'min-max':<8}" + "".join(f"{f'{lo:.2f}-{hi:.2f}':>11}" for lo, hi in zip(low.tolist(), high.tolist()))]
    verdict = f"largest mean on layer {top} ({mean[top]:.2f})"
    if n_seeds == 1:
        verdict += "; one seed, so nothing to compare it with"
    else:  # paired over the seeds; the top layer is picked by the data, so every pair of layers counts
        ranking = rank_layers(weights.cpu().numpy(), lowest=False, unit="seeds")
        tied = [str(l) for l in ranking.tied if l != top]
        verdict += ("; no other layer's weight is shown different from it" if len(tied) == len(mean) - 1 else
                    f"; not shown lower than it (paired over the {n_seeds} seeds, Bonferroni over the "
                    f"{ranking.family} pairs of layers): " + (join_names(tied) if tied else "no other layer"))
    return "\n".join(lines + [verdict])


# Devlin et al. 2019, BERT paper, Table 7: feature-based approach on CoNLL-2003 NER,
# BERT-base, dev F1. Published reference numbers, not measured here.
BERT_TABLE7 = (
    ("embeddings", 91.0),
    ("second-to-last hidden", 95.6),
    ("last hidden", 94.9),
    ("weighted sum last four hidden", 95.9),
    ("concat last four hidden", 96.1),
    ("weighted sum all 12 layers", 95.5),
)


def layers_tied_with_peak(runs, margin: float | None = None) -> tuple[int, list[int], dict]:
    """``(peak, tied, verdicts)`` for per-layer :class:`SeededAccuracy` runs (index = layer): the layer
    with the highest accuracy, the layers **not shown lower** than it (every other layer compared
    with it paired on the same items; the peak is picked by the data, so the Bonferroni family is
    every pair of layers), and each layer's :class:`~helpers.common.stats.Verdict`. The peak is
    picked on the test items themselves, so its score is optimistic."""
    top = max(range(len(runs)), key=lambda l: runs[l].estimate)
    tied, verdicts = layers_tied_with(runs, top, margin, family=extreme_family(len(runs)))
    return top, tied, verdicts


def layers_tied_with(runs, layer: int, margin: float | None = None, family: int | None = None) -> tuple[list[int], dict]:
    """``(tied, verdicts)``: every other layer of per-layer :class:`SeededAccuracy` runs minus
    ``layer``, paired on the same items, one Bonferroni family (``family``: the other layers, or more
    when ``layer`` was picked from the same data); ``tied`` are the layers not shown lower than ``layer``."""
    if isinstance(layer, bool) or not isinstance(layer, int) or not 0 <= layer < len(runs):
        raise ValueError(f"layer must be an int in 0..{len(runs) - 1}, got {layer!r}.")
    others = [l for l in range(len(runs)) if l != layer]
    family = max(1, len(others)) if family is None else family
    comps = {l: paired_comparison(runs[l], runs[layer]) for l in others}
    verdicts = {l: comps[l].verdict(f"layer {l}", f"layer {layer}", margin=margin, family=family) for l in others}
    return [l for l in others if verdicts[l].kind != "lower"], verdicts


def peak_layer_verdict(runs, label: str, margin: float | None = None) -> str:
    """Where a list of per-layer :class:`SeededAccuracy` peaks, and which layers the paired
    comparisons (Bonferroni over every pair of layers) cannot place below it -- always computed, also when
    the peak is the last layer."""
    last = len(runs) - 1
    top, tied, verdicts = layers_tied_with_peak(runs, margin)
    where = "the last layer" if top == last else f"layer {top}"
    text = (f"{label} probes peak at {where}, {runs[top].interval().percent()} (picked on the test items, so "
            f"optimistic); not shown lower than it (Bonferroni over the {extreme_family(len(runs))} pairs of layers): "
            + (", ".join("emb" if l == 0 else str(l) for l in tied) if tied else "no other layer"))
    if top != last:
        text += f"; last layer: {verdicts[last].kind}, {points(verdicts[last].difference)}"
    return text


# --------------------------------------------------------------------------- findings, in plain words
def layer_name(layer: int) -> str:
    """``"layer 0 (the embeddings)"`` for 0, else ``"layer l"``."""
    return "layer 0 (the embeddings)" if layer == 0 else f"layer {layer}"


def _layers_text(layers) -> str:
    layers = list(layers)
    return ("layer " if len(layers) == 1 else "layers ") + join_names([str(l) for l in layers])


def peak_finding(runs, label: str) -> tuple[str, list[str]]:
    """``(sentence, details)``: where per-layer :class:`SeededAccuracy` runs peak, in plain words
    ("Mean-pooled probes score highest at layer 6 (84.5 %); every other layer scores lower."), and
    the paired comparisons behind it (every other layer minus the peak, Bonferroni over every pair
    of layers, since the peak is picked by the data) as the lines of a "How we know" block."""
    top, tied, verdicts = layers_tied_with_peak(runs)
    sentence = f"{label[0].upper()}{label[1:]} probes score highest at {layer_name(top)} ({100 * runs[top].estimate:.1f} %)"
    sentence += ("; every other layer scores lower." if not tied else
                 f"; {_layers_text(tied)} could be just as high.")
    details = [f"{label} probes: every other layer minus layer {top}, paired on the same test items, "
               f"{100 * family_level(extreme_family(len(runs))):.4g} % intervals (Bonferroni over the "
               f"{extreme_family(len(runs))} pairs of layers, since the peak is picked from the same data); layer "
               f"{top}: {runs[top].interval().percent()}, optimistic because picked on these items."]
    details += [verdicts[l].text for l in sorted(verdicts)]
    return sentence, details


def reference_finding(runs, reference: int, label: str, reference_name: str) -> tuple[str | None, list[str]]:
    """``(sentence or None, details)``: the layers that score **below** a reference layer chosen
    before looking (e.g. layer 0, the bag of words), each other layer minus it paired on the same
    test items, one Bonferroni family over the other layers. The sentence names every layer whose
    accuracy lies below the reference and says which of them the comparison shows lower -- "Mean-pooled
    layers 1 and 2 score below the layer-0 bag of words (72.8 %, 71.7 % vs 73.9 %); layer 2 is shown
    lower, for layer 1 we cannot tell." -- and is ``None`` when no layer lies below it."""
    tied, verdicts = layers_tied_with(runs, reference)
    ref = 100 * runs[reference].estimate
    # below by at least a twentieth of a point, so that a sentence never reads "74.5 % vs 74.5 %"
    below = [l for l in sorted(verdicts) if runs[l].estimate < runs[reference].estimate - 5e-4]
    details = [f"{label} probes: every other layer minus {reference_name} ({runs[reference].interval().percent()}), "
               f"paired on the same test items, Bonferroni over the {len(verdicts)} comparisons:"]
    details += [verdicts[l].text for l in sorted(verdicts)]
    if not below:
        return None, details
    shown = [l for l in below if verdicts[l].kind == "lower"]
    unsure = [l for l in below if verdicts[l].kind != "lower"]
    values = ", ".join(f"{100 * runs[l].estimate:.1f} %" for l in below)
    sentence = (f"{label} {_layers_text(below)} score{'s' if len(below) == 1 else ''} below {reference_name} "
                f"({values} vs {ref:.1f} %)")
    if not unsure:
        sentence += "; the comparison shows " + ("it" if len(below) == 1 else "each of them") + " lower."
    elif not shown:
        sentence += ("; with these data we cannot tell whether " + ("it is" if len(below) == 1 else "they are")
                     + " really lower.")
    else:
        sentence += (f"; {_layers_text(shown)} {'is' if len(shown) == 1 else 'are'} shown lower, for "
                     f"{_layers_text(unsure)} we cannot tell.")
    return sentence, details


def ranking_finding(named: dict, what: str = "scores highest", quote: bool = False) -> tuple[str, list[str]]:
    """``(sentence, details)`` for classifiers tested on the same items: the highest, and the others
    that could be just as high (each minus the best, paired; Bonferroni over every pair, since the
    best is picked by the data) -- "mean pooling, last layer scores highest (84.5 %); every other
    one scores lower." The details are :func:`compare_paired`'s lines. ``quote``: put the names in
    quotes (names that hold commas)."""
    est = {k: _runs(v).mean().item() for k, v in named.items()}
    q = (lambda k: f"'{k}'") if quote else (lambda k: k)  # noqa: E731
    best = max(named, key=est.__getitem__)
    others = [k for k in named if k != best]
    family = extreme_family(len(named))
    verdicts = {k: paired_comparison(named[k], named[best]).verdict(k, best, family=family) for k in others}
    tied = [k for k in others if verdicts[k].kind != "lower"]
    sentence = f"{q(best)} {what} ({100 * est[best]:.1f} %)"
    sentence = sentence[0].upper() + sentence[1:] if not quote else sentence
    sentence += ("; every other one scores lower." if not tied else
                 f"; {join_names([q(k) for k in tied])} could be just as high.")
    return sentence, compare_paired(named, width=None).split("\n") + [v.text for v in verdicts.values()]


def layer_weights_finding(weights) -> tuple[str, list[str]]:
    """``(sentence, details)`` for the learned scalar-mix weights ``[n_draws, L+1]``: where the
    weight sits ("The weighted-sum heads, with their pull toward equal weights chosen on the dev split, put
    40 % of their weight on layer 6 (mean over 5 draws; ...).")
    and the per-layer table of :func:`layer_weights_summary` as details."""
    weights = torch.as_tensor(weights, dtype=torch.float64, device="cpu")  # cpu: a table of results
    mean = weights.mean(0)
    top = int(mean.argmax())
    n = weights.shape[0]
    over = f"mean over {n} draws" if n > 1 else "one draw"
    sentence = (f"The weighted-sum heads, with their pull toward equal weights chosen on the dev split, put "
                f"{100 * mean[top]:.0f} % of their weight on {layer_name(top)} ({over}; a uniform mix would give "
                f"each of the {len(mean)} layers {100 / len(mean):.0f} %).")
    return sentence, layer_weights_summary(weights).split("\n")


def family_table(families: dict, title: str | None = None):
    """A :class:`~helpers.common.tables.TitledTable`, one row per head family (``families`` maps a
    name to its :class:`~helpers.common.training.TrainingRecord` list): how many heads, how many
    converged (the status column), the most L-BFGS iterations, the largest final gradient, the L2
    strengths the dev split chose, dev loss at step 0 and at the kept weights (median), training
    accuracy (range)."""
    from collections import Counter

    from helpers.common.tables import TitledTable, results_table
    from helpers.common.training import status_summary

    rows = []
    for name, records in families.items():
        records = list(records)
        chosen = Counter(r.choice for r in records)
        train = [r.train_accuracy for r in records]
        rows.append({
            "heads": name,
            "count": len(records),
            "status": status_summary(records),
            "L-BFGS iterations (most)": max(r.steps for r in records),
            "largest final gradient": f"{max(r.gradient for r in records):.1e}",
            "dev-split choice": "; ".join(f"{c} x{k}" for c, k in chosen.most_common()),
            "dev loss, step 0 -> kept (median)": (f"{float(np.median([r.step0[0] for r in records])):.2f} -> "
                                                  f"{float(np.median([r.kept[0] for r in records])):.2f}"),
            "training accuracy": (f"{100 * min(train):.1f} %" if min(train) == max(train)
                                  else f"{100 * min(train):.1f}-{100 * max(train):.1f} %"),
        })
    return TitledTable(results_table(rows, index="heads"), title)


# Casanueva et al. 2020, Efficient Intent Detection with Dual Sentence Encoders, Table 3: BANKING77, all 77
# intents, the full test set, accuracy in %. (training utterances per intent, None = the full training data;
# system; accuracy). Different models from any this course runs: published reference numbers, not measured here.
BANKING77_PUBLISHED = (
    (10, "USE+ConveRT (fixed dual sentence encoders + classifier)", 85.19),
    (None, "USE+ConveRT (fixed dual sentence encoders + classifier)", 93.36),
    (None, "BERT-Large fine-tuned on it (their BERT-TUNED)", 93.66),
)


# Lesson 10's "claims tested" table: the popular claim and the published finding (paper and
# model it was measured on). The lesson adds the middle column from its own run.
PUBLISHED_07 = {
    "fewshot": ("a frozen sentence encoder with a linear head is a strong few-shot intent classifier",
                "Casanueva et al. 2020, Table 3 (BANKING77, all 77 intents, full test set; different models): "
                "USE+ConveRT (fixed dual sentence encoders + classifier) 85.19% with 10 examples per intent, 93.36% "
                "with the full training data; BERT-Large fine-tuned on the full training data 93.66%"),
    "pooler": ("`pooler_output` is the [CLS] vector",
               "Devlin et al. 2019, BERT (BERT-base/large): the pooler is a dense + tanh layer on the final "
               "[CLS] vector, trained with next-sentence prediction"),
    "cls": ("[CLS] is the sentence representation",
            "Reimers & Gurevych 2019, Sentence-BERT, Table 1 (BERT-base, no fine-tuning, STS benchmark, "
            "Spearman x100; a similarity task, not a trained probe): [CLS] vector 16.50, mean of output vectors 46.35"),
    "last": ("the last layer gives the best features",
             "Liu et al. 2019, Linguistic Knowledge and Transferability of Contextual Representations (BERT-base/large, "
             "token-level probing tasks): the middle layers of transformers transfer best; Devlin et al. 2019 Table 7 "
             "(BERT-base, CoNLL-2003 NER dev F1): second-to-last 95.6 vs last 94.9"),
    "combine": ("combining layers beats the last layer",
                "Devlin et al. 2019 Table 7 (BERT-base, CoNLL-2003 NER dev F1): concat last four 96.1, "
                "weighted sum of last four 95.9, last hidden 94.9"),
}


def show_verdict(v, **sentence_kw):
    """:func:`~helpers.common.claims.show_claim` of a verdict whose sentence starts with a capital
    letter also when it opens with A's name ("the fine-tuned model beats ..."): name A and B in
    lower case, as they read in the middle of a sentence ("we cannot tell whether the fine-tuned
    model or ..."). Returns the :class:`~helpers.common.claims.Claim`."""
    from helpers.common.claims import claim, show_claim

    sentence = claim(v, **{k: w for k, w in sentence_kw.items() if k not in ("table", "extra")}).sentence
    return show_claim(v, sentence=sentence[0].upper() + sentence[1:], **sentence_kw)
