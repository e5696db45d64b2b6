"""Lessons 04 and 10 numbers: sentence features of every layer, linear heads, probes, layer strategies.

Features are computed once for every layer (:func:`extract_features`; :class:`FeatureBank` keeps
them per distinct text, so seeded few-shot draws of BANKING77 index into one extraction), and
probes and strategies never re-run the model. Layer ``0`` is the embedding output. Runs over
seeds are :class:`SeededAccuracy`; with :func:`probe_draws`, :func:`strategy_draws` and
:func:`head_predictions` each seed is also a different few-shot training set.

This module holds the features (:func:`extract_features`, :class:`FeatureBank`), the heads
(:class:`LinearHead`, :func:`train_head`, :func:`correct_per_item`) and the training contract
(:func:`fit_head`); the methods built on them have modules of their own:
``helpers/classify/comparisons.py`` (:class:`SeededAccuracy`, :func:`paired_comparison`),
``strategies.py`` (:func:`probe_draws`, :func:`strategy_draws`), ``confusions.py``
(:func:`top_confusions`) and ``findings.py`` (the lesson in plain words, the published numbers)."""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

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
