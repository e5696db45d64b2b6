"""Fine-tuning BERT with a classification head (lessons 11 and 14): strategies that treat layers
differently, each trained by the course's training contract (:mod:`helpers.common.training`): a
learning rate chosen per strategy from a small grid on a dev split carved from training data,
scored at step 0, early stopping on the dev loss or accuracy after the warm-up, and a recorded
status (converged / stopped at first evaluation / budget exhausted; a run that kept its start is
*not fine-tuned*). :func:`finetune_study` runs every strategy on one few-shot task per seed (a new
draw of intents and utterances each time), with a disk cache (lesson 11's stored sweep,
:mod:`helpers.finetuning.history`, resumes from it); then lesson 14's measures of what
fine-tuning changed, layer by layer. Every run trains a ``copy.deepcopy`` of the model, so the
cached model that :func:`helpers.model.loading.load_model` hands out is never changed."""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import math
import time
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path
from statistics import NormalDist

import torch

from helpers.common.progress import ProgressBar
from helpers.common.stats import Interval
from helpers.common.training import (BUDGET_EXHAUSTED, CONVERGED, FIRST_EVALUATION, L2_GRID, TrainingRecord,
                                     fit_linear, linear_criterion)

from helpers.classify.compute import SeededAccuracy, encode_batch, mean_pool
from helpers.model.trace import device_of, model_device, synchronize


FROZEN = "frozen encoder, linear probe"
FULL = "full fine-tuning"
LPFT = "linear probe, then fine-tuning"
FREEZE = "freeze lower half"
LLRD = "layer-wise lr decay"
GRADUAL = "gradual unfreezing"
FINETUNE_STRATEGIES = (FROZEN, FULL, LPFT, FREEZE, LLRD, GRADUAL)
# Strategies whose head starts from the linear probe (LP-FT's first stage, Kumar et al. 2022); FULL
# starts from a random head, as in Devlin et al. (2019).
FROM_PROBE = (FROZEN, LPFT, FREEZE, LLRD, GRADUAL)
# Devlin et al. (2019), Appendix A.3: the fine-tuning learning rates they searched for BERT.
DEVLIN_LRS = (5e-5, 4e-5, 3e-5, 2e-5)
ENGINE_VERSION = 3  # part of every cache key: bump it when a change alters what a run computes


class SentenceClassifier(torch.nn.Module):
    """BERT + mean pooling of the last layer + a linear layer: ``logits = W mean(h_L) + b``."""

    def __init__(self, bert, num_classes: int):
        super().__init__()
        self.bert = bert
        # drawn on the CPU (the same head on every device), then put where the encoder is
        self.classifier = torch.nn.Linear(bert.config.hidden_size, num_classes).to(model_device(bert))

    def forward(self, input_ids, attention_mask, **kw):
        out = self.bert(input_ids=input_ids, attention_mask=attention_mask, **kw)
        return self.classifier(mean_pool(out.last_hidden_state, attention_mask))


def layer_groups(bert) -> list[list[torch.nn.Parameter]]:
    """Parameters by depth: ``[embeddings, layer 1, ..., layer L, pooler]``."""
    groups = [list(bert.embeddings.parameters())]
    groups += [list(layer.parameters()) for layer in bert.encoder.layer]
    groups.append(list(bert.pooler.parameters()) if bert.pooler is not None else [])
    return groups


def llrd_param_groups(clf: SentenceClassifier, lr: float, decay: float = 0.8) -> list[dict]:
    """Layer-wise learning-rate decay: the head gets ``lr``, layer ``l`` gets ``lr * decay**(L+1-l)``."""
    if not 0 < decay <= 1:
        raise ValueError(f"decay must be in (0, 1], got {decay!r}.")
    groups = layer_groups(clf.bert)
    L = len(groups) - 2
    out = [{"params": list(clf.classifier.parameters()) + groups[-1], "lr": lr}]
    for depth, params in enumerate(groups[:-1]):  # depth 0 = embeddings
        params = [p for p in params if p.requires_grad]
        if params:
            out.append({"params": params, "lr": lr * decay ** (L + 1 - depth)})
    return out


def _set_trainable(params, flag: bool) -> None:
    for p in params:
        p.requires_grad_(flag)


@dataclass(frozen=True)
class FinetuneConfig:
    """How every fine-tuning run trains (lesson 11's recipe; lesson 14 reuses it).

    AdamW with weight decay; the learning rate of each strategy is chosen on the dev split from
    ``lrs`` (the run with the lowest dev loss wins; Mosbach et al. 2021 and Zhang et al. 2021
    showed how much few-sample fine-tuning of BERT depends on it), for every seed on its own draw
    (``tune="each seed"``) or on the first seed's draw only (``"first seed"``). A linear warm-up
    over the first ``warmup`` share of ``max_steps``, then a linear decay to 0 at ``max_steps``.
    The dev split is scored at step 0 and every ``eval_every`` steps (0: once per epoch);
    training stops when the dev loss has not improved by ``min_delta`` for ``patience``
    evaluations **after the warm-up** (and, for gradual unfreezing, after every layer is open),
    keeping the weights of the best evaluation (:func:`finetune_run` says which status that is).
    The word-embedding matrix stays frozen in every run (it is half of a small BERT's weights).
    Gradual unfreezing trains the head alone in the first epoch and opens every layer by epoch
    ``unfreeze_epochs``. The linear probe (the frozen strategy, and the head LP-FT starts from)
    chooses its L2 strength from ``head_l2`` on the same dev split."""

    lrs: tuple = (3e-5, 1e-4)
    tune: str = "each seed"
    max_steps: int = 200
    warmup: float = 0.06
    eval_every: int = 0
    patience: int = 2
    min_delta: float = 0.005
    batch_size: int = 8
    max_length: int = 96  # tokens per utterance; BANKING77's longest has 82
    weight_decay: float = 0.01
    llrd_decay: float = 0.8
    unfreeze_epochs: int = 4
    head_l2: tuple = L2_GRID
    monitor: str = "loss"  # what early stopping and the lr choice read: dev "loss" or dev "accuracy"
    min_steps: int = 0  # patience starts only after this many steps (and after the warm-up)

    def __post_init__(self):
        for name in ("max_steps", "patience", "batch_size", "max_length", "unfreeze_epochs"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}.")
        if isinstance(self.eval_every, bool) or not isinstance(self.eval_every, int) or self.eval_every < 0:
            raise ValueError(f"eval_every must be an int >= 0 (0: once per epoch), got {self.eval_every!r}.")
        lrs = tuple(self.lrs)
        if not lrs or not all(isinstance(lr, float) and 0 < lr < 1 for lr in lrs) or len(set(lrs)) != len(lrs):
            raise ValueError(f"lrs must be distinct learning rates in (0, 1), got {self.lrs!r}.")
        object.__setattr__(self, "lrs", lrs)
        object.__setattr__(self, "head_l2", tuple(self.head_l2))
        if not 0 <= self.warmup < 1:
            raise ValueError(f"warmup must lie in [0, 1), got {self.warmup!r}.")
        if self.tune not in ("each seed", "first seed"):
            raise ValueError(f"tune must be 'each seed' or 'first seed', got {self.tune!r}.")
        if self.monitor not in ("loss", "accuracy"):
            raise ValueError(f"monitor must be 'loss' or 'accuracy' (what the dev split is read for), got "
                             f"{self.monitor!r}.")
        if isinstance(self.min_steps, bool) or not isinstance(self.min_steps, int) or self.min_steps < 0:
            raise ValueError(f"min_steps must be an int >= 0, got {self.min_steps!r}.")

    @property
    def warmup_steps(self) -> int:
        return int(self.warmup * self.max_steps)

    @property
    def patience_from(self) -> int:
        """The step after which evaluations without improvement count towards the patience."""
        return max(self.warmup_steps, self.min_steps)

    def _watched(self) -> str:
        return ("dev accuracy (ties: the lower dev loss)" if self.monitor == "accuracy" else "dev loss")

    def better(self, loss: float, accuracy: float, best_loss: float, best_accuracy: float) -> bool:
        """Whether a dev evaluation beats the best so far: by ``min_delta`` in dev loss, or, with
        ``monitor="accuracy"``, a higher dev accuracy (an equal one with a dev loss lower by
        ``min_delta``)."""
        if self.monitor == "accuracy" and accuracy != best_accuracy:
            return accuracy > best_accuracy
        return loss < best_loss - self.min_delta

    def describe(self) -> str:
        grid = ", ".join(f"{lr:g}" for lr in self.lrs)
        where = "each seed's own dev split" if self.tune == "each seed" else "the first seed's dev split"
        return (f"AdamW, weight decay {self.weight_decay:g}, learning rate chosen per strategy from {{{grid}}} by the "
                f"{self._watched()} on "
                f"{where} (Devlin et al. searched {min(DEVLIN_LRS):g}-{max(DEVLIN_LRS):g}); linear warm-up over "
                f"{self.warmup_steps} steps, then linear decay; batches of {self.batch_size}; at most "
                f"{self.max_steps} steps; dev split scored at step 0 and after every "
                + ("epoch" if self.eval_every == 0 else f"{self.eval_every} steps")
                + f"; early stopping once the {self._watched()} has not improved for {self.patience} "
                f"evaluations {self._counted_from()} (the best evaluation's weights are kept)")

    def _counted_from(self) -> str:
        if self.min_steps <= self.warmup_steps:
            return f"after the warm-up ({self.warmup_steps} steps)"
        return f"after step {self.patience_from} (past the warm-up and a minimum of {self.min_steps} steps)"

    def criterion(self) -> str:
        """The stated convergence criterion of a fine-tuning run, in words."""
        if self.monitor == "accuracy":
            return (f"the dev accuracy stops improving for {self.patience} evaluations "
                    f"{self._counted_from()}, within {self.max_steps} steps")
        return (f"the dev loss stops improving (by {self.min_delta:g}) for {self.patience} evaluations after the "
                f"{self.warmup_steps}-step warm-up, within {self.max_steps} steps")


@dataclass
class FinetuneRun:
    """One strategy, one seed: which test items it got right, its dev curve (step 0 first), its
    training record (:class:`~helpers.common.training.TrainingRecord`: status, dev-split choice),
    the dev results of every learning rate tried, its cost."""

    strategy: str
    seed: int
    lr: float | None  # None: the frozen probe (no fine-tuning)
    correct: torch.Tensor  # [n_test] bool, on the CPU
    dev_curve: list  # [(optimiser steps so far, dev loss, dev accuracy)], step 0 first
    steps: int  # optimiser steps run
    best_step: int  # the steps at the best dev evaluation (the weights kept)
    status: str  # converged / stopped at first evaluation / budget exhausted
    seconds: float  # wall-clock seconds of the training loop (dev scoring included, test scoring not)
    trainable_params: int
    record: dict = field(default_factory=dict)  # the TrainingRecord, as a dict (it is cached on disk)
    grid: dict = field(default_factory=dict)  # {lr: (best dev loss, status, steps)} of every lr tried
    opened_at: int | None = None  # gradual unfreezing: the step from which every layer trains
    from_cache: bool = False
    model: SentenceClassifier | None = None

    @property
    def accuracy(self) -> float:
        return self.correct.float().mean().item()

    @property
    def converged(self) -> bool:
        return self.status == CONVERGED

    @property
    def moved(self) -> bool:
        """Whether the weights kept are not the starting point: early stopping kept an evaluation
        after step 0. A run that kept its start was **not fine-tuned** (for the strategies that
        start from the probe, it *is* the probe), so it stays out of strategy verdicts."""
        return self.strategy != FROZEN and self.best_step > 0

    def training_record(self) -> TrainingRecord:
        return TrainingRecord(**self.record)


def _device(module) -> torch.device:
    return next(module.parameters()).device


class _Tokens:
    """A split tokenized once (no padding); batches are padded to their longest text."""

    def __init__(self, tokenizer, split, max_length: int):
        full = tokenizer(list(split.texts))["input_ids"]
        cut = [len(ids) for ids in full if len(ids) > max_length]
        if cut:
            warnings.warn(f"{len(cut)} of {len(full)} text(s) are longer than max_length={max_length} tokens (longest: "
                          f"{max(cut)}) and were truncated: the model sees only their first {max_length} tokens.",
                          stacklevel=3)
        enc = tokenizer(list(split.texts), truncation=True, max_length=max_length)
        self.ids, self.tokenizer = enc["input_ids"], tokenizer
        self.labels = torch.tensor(split.labels)  # cpu: moved with each batch
        self.lengths = [len(ids) for ids in self.ids]

    def __len__(self) -> int:
        return len(self.ids)

    def batch(self, rows, device):
        padded = self.tokenizer.pad({"input_ids": [self.ids[i] for i in rows]}, return_tensors="pt").to(device)
        return (padded["input_ids"], padded["attention_mask"],
                self.labels[torch.as_tensor(rows)].to(device))  # cpu: row indices into the CPU labels

    def shuffled_batches(self, batch_size: int, generator) -> list[list[int]]:
        """A random order, then texts of similar length batched together (less padding) and the
        batches shuffled: every text once per epoch."""
        order = torch.randperm(len(self), generator=generator).tolist()  # cpu: a seeded order, read as ints
        window = 8 * batch_size
        batches = []
        for start in range(0, len(order), window):
            chunk = sorted(order[start:start + window], key=self.lengths.__getitem__)
            batches += [chunk[i:i + batch_size] for i in range(0, len(chunk), batch_size)]
        return [batches[i] for i in torch.randperm(len(batches), generator=generator).tolist()]  # cpu: seeded ints

    def eval_batches(self, batch_size: int = 128) -> list[list[int]]:
        order = sorted(range(len(self)), key=self.lengths.__getitem__)
        return [order[i:i + batch_size] for i in range(0, len(order), batch_size)]


@torch.no_grad()
def _score(clf, tokens: _Tokens) -> tuple[float, torch.Tensor]:
    """(mean cross-entropy, [n] right/wrong on the CPU) of ``clf`` on a tokenized split, in eval mode."""
    was_training = clf.training
    clf.eval()
    device, total = _device(clf), 0.0
    right = torch.zeros(len(tokens), dtype=torch.bool)  # cpu: per-item outcomes for statistics
    for rows in tokens.eval_batches():
        ids, mask, y = tokens.batch(rows, device)
        logits = clf(ids, mask)
        total += float(torch.nn.functional.cross_entropy(logits, y, reduction="sum"))
        right[torch.as_tensor(rows)] = (logits.argmax(-1) == y).cpu()  # cpu: outcomes for statistics
    clf.train(was_training)
    return total / len(tokens), right


@torch.no_grad()
def _pooled(bert, tokens: _Tokens) -> torch.Tensor:
    """``[n, H]`` mean-pooled last-layer vectors of a tokenized split (eval mode, no gradients)."""
    was_training = bert.training
    bert.eval()
    device = _device(bert)
    out = torch.empty(len(tokens), bert.config.hidden_size, device=device)
    for rows in tokens.eval_batches():
        ids, mask, _ = tokens.batch(rows, device)
        out[torch.as_tensor(rows, device=device)] = mean_pool(bert(input_ids=ids, attention_mask=mask).last_hidden_state,
                                                              mask)
    bert.train(was_training)
    return out


@dataclass
class ProbeHead:
    """The linear probe on the frozen mean-pooled last layer, fitted by the training contract
    (:func:`~helpers.common.training.fit_linear`, L2 strength chosen on the dev split) on features
    centred and divided by **one** number, their overall scale ``scale`` -- not by a standard
    deviation per dimension. Folded into a ``SentenceClassifier``'s linear layer it is
    ``weight = W / scale``, ``bias = b - weight mu``: the same size in every direction, so that
    fine-tuning from it does not start with huge weights on the dimensions that hardly vary
    (:func:`fold_sizes` compares the two foldings)."""

    weight: torch.Tensor  # [C, H], folded: acts on the raw features
    bias: torch.Tensor  # [C]
    record: TrainingRecord
    dev_loss: float
    dev_correct: torch.Tensor
    test_correct: torch.Tensor | None = None


def fit_probe_head(X: torch.Tensor, y, X_dev: torch.Tensor, y_dev, num_classes: int, *, l2=L2_GRID,
                   run: str = "linear probe") -> ProbeHead:
    """:class:`ProbeHead` on ``[N, H]`` features: one scale (the root mean square of the centred
    features), the L2 strength with the lowest dev loss from ``l2``, L-BFGS to the contract's
    gradient tolerance."""
    X, X_dev = X.detach().double(), X_dev.detach().double().to(X.device)
    mu = X.mean(0, keepdim=True)
    scale = (X - mu).pow(2).mean().sqrt().clamp(min=1e-12)
    Z, Zd = ((X - mu) / scale)[None], ((X_dev - mu) / scale)[None]
    y_dev_t = torch.as_tensor(y_dev, device=X.device)
    fit = fit_linear(Z, y, num_classes, l2)
    dev_loss = fit.losses(Zd, y_dev_t)[:, 0, 0]  # [G]
    g = int(dev_loss.argmin())
    chosen = fit.select(torch.full((1, 1), g, dtype=torch.long, device=X.device))
    W, b = chosen.W[0, 0, :, 0, :], chosen.b[0, 0, 0]  # [H, C], [C]
    weight = (W / scale).T.float()
    bias = (b - (mu @ (W / scale))[0]).float()
    logits_dev = X_dev.float() @ weight.T + bias
    dev_right = (logits_dev.argmax(-1) == y_dev_t).cpu()
    train_acc = float(chosen.accuracies(Z, y)[0, 0, 0])
    step0 = (math.log(num_classes), float((y_dev_t == 0).double().mean()))  # W = 0, b = 0: every class equally likely
    record = TrainingRecord(
        run=run, status=CONVERGED if bool(chosen.converged.all()) else BUDGET_EXHAUSTED,
        criterion=linear_criterion(fit.tolerance, fit.max_iter), choice=f"L2 {fit.l2[g].item():g}",
        grid="L2 " + ", ".join(f"{v:g}" for v in fit.l2.tolist()), steps=fit.iterations[g], step0=step0,
        kept=(float(dev_loss[g]), float(dev_right.double().mean())), train_accuracy=train_acc,
        gradient=float(chosen.gradient.max()))
    return ProbeHead(weight, bias, record, float(dev_loss[g]), dev_right)


def fold_sizes(X: torch.Tensor, y, num_classes: int, l2: float = 1e-3) -> dict:
    """The largest entry of a linear probe folded into raw-feature weights, two ways: standardized
    per dimension (``W / sigma``, the head of lessons 04 and 10) and scaled by one number (:func:`fit_probe_head`),
    both fitted at the same L2 strength; and the smallest per-dimension standard deviation. A
    dimension that hardly varies gets a huge folded weight in the first: tiny changes of it -- which
    fine-tuning makes -- swing the logits."""
    X = X.detach().double()
    mu, sigma = X.mean(0, keepdim=True), X.std(0, keepdim=True).clamp(min=1e-6)
    scale = (X - mu).pow(2).mean().sqrt()
    out = {"smallest standard deviation": float(X.std(0).min())}
    for name, div in (("per dimension", sigma), ("one scale", scale)):
        fit = fit_linear(((X - mu) / div)[None], y, num_classes, (l2,))
        out[name] = float((fit.W[0, 0, :, 0, :] / div.reshape(-1, 1)).abs().max())
    return out


def _optimizer(clf, strategy: str, lr: float, config: FinetuneConfig, L: int):
    groups = layer_groups(clf.bert)
    if strategy == FREEZE:
        for params in groups[: 1 + L // 2]:  # embeddings + layers 1..L//2
            _set_trainable(params, False)
    if strategy == LLRD:
        param_groups = llrd_param_groups(clf, lr, config.llrd_decay)
    elif strategy == GRADUAL:  # every parameter is in the optimiser; a frozen one gets no gradient, so no update
        param_groups = [{"params": [p for p in clf.parameters() if p is not clf.bert.embeddings.word_embeddings.weight],
                         "lr": lr}]
    else:
        param_groups = [{"params": [p for p in clf.parameters() if p.requires_grad], "lr": lr}]
    return torch.optim.AdamW(param_groups, weight_decay=config.weight_decay)


def _unfreeze_for_epoch(clf, epoch: int, config: FinetuneConfig) -> bool:
    """Gradual unfreezing (Howard & Ruder, 2018): epoch 0 trains the head only; each later epoch opens
    the next layers from the top, every layer (and the embeddings) from epoch ``unfreeze_epochs`` on.
    Returns whether every layer is open."""
    groups = layer_groups(clf.bert)[:-1]  # depth 0 = embeddings .. L
    n_open = (len(groups) if epoch >= config.unfreeze_epochs
              else math.ceil(epoch * len(groups) / config.unfreeze_epochs))
    for depth, params in enumerate(groups):
        _set_trainable(params, depth >= len(groups) - n_open)
    clf.bert.embeddings.word_embeddings.weight.requires_grad_(False)
    return n_open == len(groups)


def finetune_run(tokenizer, bert, train, dev, test, strategy: str = FULL, *, seed: int = 0, lr: float | None = None,
                 config: FinetuneConfig = FinetuneConfig(), keep_model: bool = False, head: ProbeHead | None = None,
                 score_test: bool = True, progress: bool = False) -> FinetuneRun:
    """Train a deep copy of ``bert`` + a linear head with one strategy of :data:`FINETUNE_STRATEGIES`
    at one learning rate ``lr`` (default: the first of ``config.lrs``) and score it on ``test``
    (``train``, ``dev``, ``test``: :class:`~helpers.common.data.IntentSplit`).

    * ``FROZEN``: no BERT weight changes; the linear probe (:func:`fit_probe_head`);
    * ``FULL``: every weight (but the word embeddings) from a randomly initialised head;
    * ``LPFT``: the linear probe first, then full fine-tuning from that head (Kumar et al., 2022);
    * ``FREEZE``: embeddings and layers 1..L//2 frozen; ``LLRD``: layer ``l`` at ``lr * decay**(L+1-l)``;
    * ``GRADUAL``: gradual unfreezing from the top (:func:`_unfreeze_for_epoch`).

    Every strategy but ``FULL`` starts from the linear probe's head (:data:`FROM_PROBE`; ``head``:
    one already fitted on these splits). The dev split is scored at step 0 and after every epoch;
    the status (:data:`~helpers.common.training.STATUSES`) is *converged* when the dev loss stopped
    improving after the warm-up and its last real improvement (by ``min_delta``) came after the
    first evaluation, *stopped at first evaluation* when nothing after the first evaluation beat
    the best by ``min_delta`` (the best is step 0 or the first evaluation), *budget exhausted*
    when ``max_steps`` ran out first. The loaded ``bert`` is never
    changed."""
    if strategy not in FINETUNE_STRATEGIES:
        raise ValueError(f"strategy {strategy!r} is not valid: choose one of {FINETUNE_STRATEGIES}.")
    if train.names != dev.names or train.names != test.names:
        raise ValueError("train, dev and test must share one label set (the same intent names in the same order).")
    lr = config.lrs[0] if lr is None else lr
    torch.manual_seed(seed)
    clf = SentenceClassifier(copy.deepcopy(bert), train.num_classes)
    clf.bert.embeddings.word_embeddings.weight.requires_grad_(False)
    L = bert.config.num_hidden_layers
    tokens, dev_tokens = _Tokens(tokenizer, train, config.max_length), _Tokens(tokenizer, dev, config.max_length)
    synchronize()  # on a GPU, time the work itself, not only its launch
    start = time.perf_counter()
    if strategy in FROM_PROBE and head is None:
        head = probe_head(clf.bert, tokens, dev_tokens, train, dev, config)
    if strategy in FROM_PROBE:
        with torch.no_grad():
            clf.classifier.weight.copy_(head.weight)
            clf.classifier.bias.copy_(head.bias)
    if strategy == FROZEN:
        synchronize()
        seconds = time.perf_counter() - start
        _set_trainable(clf.bert.parameters(), False)
        clf.eval()
        if not score_test:
            right = torch.zeros(0, dtype=torch.bool)  # cpu: outcomes for statistics
        elif head.test_correct is not None:  # the probe's own outcomes: the same weights on the same features
            right = head.test_correct
        else:
            right = _score(clf, _Tokens(tokenizer, test, config.max_length))[1]
        record = asdict(head.record)
        return FinetuneRun(strategy, seed, None, right, [(0, head.dev_loss, float(head.dev_correct.double().mean()))],
                           0, 0, head.record.status, seconds, sum(p.numel() for p in clf.classifier.parameters()),
                           record, model=clf if keep_model else None)
    opt = _optimizer(clf, strategy, lr, config, L)
    g = torch.Generator().manual_seed(seed)  # cpu: the order of the training texts
    per_epoch = -(-len(tokens) // config.batch_size)
    every = config.eval_every or per_epoch
    budget, warm = config.max_steps, config.warmup_steps
    schedule = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda step: (step + 1) / max(warm, 1) if step < warm else max(0.0, (budget - step) / max(budget - warm, 1)))
    device = _device(clf)
    dev_loss, dev_right = _score(clf, dev_tokens)
    curve = [(0, dev_loss, dev_right.float().mean().item())]
    best = (dev_loss, copy.deepcopy(clf.state_dict()), 0, 0)  # dev loss, state, steps, index in curve
    best_acc = curve[0][2]
    steps, stale, stopped, opened_at, epoch = 0, 0, False, (None if strategy == GRADUAL else 0), 0
    improved_at = 0  # the last evaluation that beat the best by min_delta (the one whose weights are kept)
    bar = ProgressBar(budget, desc=strategy, disable=not progress)
    while steps < budget and not stopped:
        if strategy == GRADUAL and _unfreeze_for_epoch(clf, epoch, config) and opened_at is None:
            opened_at = steps
        clf.train()
        for rows in tokens.shuffled_batches(config.batch_size, g):
            ids, mask, y = tokens.batch(rows, device)
            loss = torch.nn.functional.cross_entropy(clf(ids, mask), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            schedule.step()
            steps += 1
            bar.update()
            if steps % every and steps < budget:
                continue
            dev_loss, dev_right = _score(clf, dev_tokens)
            curve.append((steps, dev_loss, dev_right.float().mean().item()))
            # patience starts after the warm-up, min_steps (and unfreezing)
            counts = steps > config.patience_from and opened_at is not None
            if config.better(dev_loss, curve[-1][2], best[0], best_acc):
                best, stale = (dev_loss, copy.deepcopy(clf.state_dict()), steps, len(curve) - 1), 0
                best_acc = curve[-1][2]
                improved_at = len(curve) - 1
            else:  # no improvement by min_delta (as Keras's EarlyStopping counts it): the best stays
                stale += int(counts)
            if stale >= config.patience or steps >= budget:
                stopped = stale >= config.patience
                break
        epoch += 1
    bar.close()
    status = BUDGET_EXHAUSTED if not stopped else FIRST_EVALUATION if improved_at <= 1 else CONVERGED
    clf.load_state_dict(best[1])
    synchronize()
    seconds = time.perf_counter() - start
    if not score_test:
        right = torch.zeros(0, dtype=torch.bool)  # cpu: outcomes for statistics
    elif best[2] == 0 and strategy in FROM_PROBE and head.test_correct is not None:
        right = head.test_correct  # early stopping kept the start, the probe itself: its outcomes
    else:
        right = _score(clf, _Tokens(tokenizer, test, config.max_length))[1]
    trainable = sum(p.numel() for p in clf.parameters() if p.requires_grad)
    kept = curve[best[3]]
    train_loss, train_right = _score(clf, tokens)
    record = TrainingRecord(run=f"{strategy}, seed {seed}", status=status, criterion=config.criterion(),
                            choice=f"lr {lr:g}", steps=steps, step0=curve[0][1:], kept=kept[1:],
                            train_accuracy=float(train_right.double().mean()),
                            grid="lr " + ", ".join(f"{v:g}" for v in config.lrs), curve=list(curve))
    return FinetuneRun(strategy, seed, lr, right, curve, steps, best[2], status, seconds, trainable, asdict(record),
                       opened_at=opened_at, model=clf.eval() if keep_model else None)


def probe_head(bert, tokens: _Tokens, dev_tokens: _Tokens, train, dev, config: FinetuneConfig,
               test_tokens: _Tokens | None = None) -> ProbeHead:
    """:func:`fit_probe_head` on the frozen ``bert``'s mean-pooled last layer of a tokenized split;
    with ``test_tokens``, also the probe's right/wrong on the test split (``test_correct``), which
    the frozen strategy and every run that keeps its starting weights share."""
    X, X_dev = _pooled(bert, tokens), _pooled(bert, dev_tokens)
    head = fit_probe_head(X, train.labels, X_dev, dev.labels, train.num_classes, l2=config.head_l2)
    if test_tokens is not None:
        logits = _pooled(bert, test_tokens) @ head.weight.T + head.bias
        head.test_correct = (logits.argmax(-1).cpu() == test_tokens.labels)  # cpu: outcomes for statistics
    return head


def finetune_strategy(tokenizer, bert, train, dev, test, strategy: str, *, seed: int = 0,
                      config: FinetuneConfig = FinetuneConfig(), lrs=None, keep_model: bool = False,
                      head: ProbeHead | None = None, progress: bool = False) -> FinetuneRun:
    """One strategy on one draw, its learning rate chosen on the dev split: :func:`finetune_run` at
    every rate of ``lrs`` (default ``config.lrs``), the run with the lowest dev loss at its kept
    weights is the one returned (ties: the smaller rate), scored on ``test``; ``run.grid`` keeps
    every rate's dev result. The test set is scored for the chosen run only."""
    lrs = tuple(config.lrs if lrs is None else lrs)
    if strategy == FROZEN:
        return finetune_run(tokenizer, bert, train, dev, test, FROZEN, seed=seed, config=config, keep_model=keep_model,
                            head=head, progress=progress)
    runs = {lr: finetune_run(tokenizer, bert, train, dev, test, strategy, seed=seed, lr=lr, config=config,
                             keep_model=True, head=head, score_test=False, progress=progress) for lr in lrs}
    def rank(lr):  # what the dev split is read for, then the smaller rate
        loss, acc = runs[lr].record["kept"]
        return (-acc, loss, lr) if config.monitor == "accuracy" else (loss, lr)

    chosen = min(lrs, key=rank)
    tie = [lr for lr in lrs if lr != chosen and rank(lr)[:-1] == rank(chosen)[:-1]]
    run = runs[chosen]
    if run.best_step == 0 and strategy in FROM_PROBE and head is not None and head.test_correct is not None:
        run.correct = head.test_correct  # early stopping kept the start, the probe itself: its outcomes
    else:
        run.correct = _score(run.model, _Tokens(tokenizer, test, config.max_length))[1]
    run.grid = {lr: (r.record["kept"][0], r.status, r.steps) for lr, r in runs.items()}
    def dev(lr):
        loss, acc = runs[lr].record["kept"]
        return f"{acc:.1%}, {loss:.3f}" if config.monitor == "accuracy" else f"{loss:.3f}"

    others = [f"{lr:g}: {dev(lr)}" for lr in lrs if lr != chosen]
    what = "dev accuracy, loss" if config.monitor == "accuracy" else "dev loss"
    run.record["choice"] = (f"no choice: lr {chosen:g} tied with {', '.join(f'{lr:g}' for lr in tie)}, the smaller "
                            f"kept ({what} {dev(chosen)})" if tie else
                            f"lr {chosen:g}" + (f" ({what} {dev(chosen)}; " + "; ".join(others) + ")"
                                                if others else ""))
    run.seconds = sum(r.seconds for r in runs.values())
    if not keep_model:
        run.model = None
    return run


@dataclass(frozen=True)
class FewShotTask:
    """A few-shot intent task cut from BANKING77: ``train`` (``shots`` utterances per intent),
    ``dev`` (more utterances of the same intents from BANKING77's training split, disjoint from
    ``train``, never from the test split) and ``test`` (the intents' test utterances), all with the
    same ``intents``; ``seed`` drew the intents and the utterances."""

    train: object
    dev: object
    test: object
    intents: tuple
    shots: int
    seed: int = 0

    def describe(self) -> str:
        return (f"{len(self.intents)} of BANKING77's 77 intents, {self.shots} training utterances per intent "
                f"({len(self.train)}), a dev split of {len(self.dev) // len(self.intents)} more per intent "
                f"({len(self.dev)}, from the training split), {len(self.test)} test utterances "
                f"({len(self.test) // len(self.intents)} per intent)")


def few_shot_task(n_intents: int | None = None, shots: int = 10, dev_per_intent: int = 5,
                  test_per_intent: int | None = None, seed: int = 0) -> FewShotTask:
    """BANKING77 (:func:`~helpers.common.data.load_banking77`) cut to a CPU-sized few-shot task:
    ``n_intents`` intents drawn with ``seed`` (``None``: all 77), ``shots`` training utterances per
    intent (Casanueva et al. use 10 and 30) drawn with ``seed``, ``dev_per_intent`` more from the
    rest of the training split as the dev split, and the chosen intents' test utterances (all, or a
    stratified ``test_per_intent`` of them)."""
    import random

    from helpers.common.data import load_banking77

    train_all, test_all = load_banking77("train"), load_banking77("test")
    if n_intents is not None and (isinstance(n_intents, bool) or not isinstance(n_intents, int)
                                  or not 2 <= n_intents <= train_all.num_classes):
        raise ValueError(f"n_intents must be None (all) or an int from 2 to {train_all.num_classes}, got {n_intents!r}.")
    if isinstance(dev_per_intent, bool) or not isinstance(dev_per_intent, int) or dev_per_intent < 1:
        raise ValueError(f"dev_per_intent must be a positive int, got {dev_per_intent!r}.")
    names = train_all.names if n_intents is None else tuple(sorted(random.Random(seed).sample(train_all.names, n_intents)))
    pool = train_all.only(names)
    rest, train = pool.split_off(shots, seed=seed, name="train")
    dev = rest.sample(dev_per_intent, seed=seed + 10_000)
    test = test_all.only(names)
    if test_per_intent is not None:
        test = test.sample(test_per_intent, seed=seed)
    return FewShotTask(train, dataclasses.replace(dev, split="dev"), test, names, shots, seed)


def lesson_setup(budget) -> tuple[dict, FinetuneConfig, tuple]:
    """``(tasks, recipe, seeds)`` of lesson 14's probes and fine-tuning runs on the loaded model,
    for a :class:`~helpers.common.budget.Budget` (lesson 11's stored sweep has its own design:
    :mod:`helpers.finetuning.history`): ``tasks`` maps each seed to its own :class:`FewShotTask` -- a new draw of intents and
    utterances per seed, so the spread over seeds carries the data's variance. Full: 10 of the 77
    intents, 10-shot, 4 dev utterances per intent, every test utterance of the intents (40 each),
    5 seeds, learning rates chosen from two on the first seed's dev split, the dev split scored
    every 7 steps (about half an epoch), at most 160 steps, gradual unfreezing open by its third
    epoch. Quick: 4 intents, 4-shot, 2 dev and 5 test
    utterances per intent, 2 seeds, one learning rate, 12 steps (a check that the code runs)."""
    seeds = budget.pick((0, 1, 2, 3, 4), (0, 1))
    task_kw = budget.pick(dict(n_intents=10, shots=10, dev_per_intent=4, test_per_intent=None),
                          dict(n_intents=4, shots=4, dev_per_intent=2, test_per_intent=5))
    tasks = {s: few_shot_task(**task_kw, seed=s) for s in seeds}
    recipe = budget.pick(FinetuneConfig(tune="first seed", max_steps=160, eval_every=7, unfreeze_epochs=2),
                         FinetuneConfig(lrs=(1e-4,), max_steps=12, warmup=0.2, patience=1, unfreeze_epochs=2))
    return tasks, recipe, seeds


# -- a disk cache, so that lesson 14 reuses lesson 11's runs (and a rerun of a lesson is fast) --------
def cache_dir() -> Path | None:
    """Where fine-tuning runs are kept: ``finetune`` in the course cache
    (:func:`~helpers.model.paths.course_cache`); ``COURSE_CACHE=off`` keeps nothing."""
    from helpers.model.paths import course_cache

    root = course_cache()
    return None if root is None else root / "finetune"


def run_key(bert_key: str, train, dev, test, strategy: str, seed: int, config: FinetuneConfig, lrs=None) -> str:
    """A hash of everything a run depends on: the model's weights (``bert_key``, from
    :func:`~helpers.model.fingerprint.model_key`), the three splits, the strategy, the seed, the recipe
    and the learning rates tried (``lrs``, default the recipe's), the engine's version and torch's."""
    lrs = list(config.lrs if lrs is None else lrs)
    blob = json.dumps([ENGINE_VERSION, torch.__version__, bert_key, strategy, seed, asdict(config), lrs,
                       [(list(s.texts), list(s.labels), list(s.names)) for s in (train, dev, test)]])
    return hashlib.sha256(blob.encode()).hexdigest()[:24]


def run_meta(run: FinetuneRun) -> dict:
    """A run's record as plain JSON-ready values (no model, no outcomes): what the disk cache and
    lesson 11's stored sweep keep; :func:`run_from_meta` reads it back."""
    meta = {k: v for k, v in asdict(run).items() if k not in ("model", "correct", "from_cache")}
    meta["grid"] = [[lr, *result] for lr, result in run.grid.items()]
    return meta


def run_from_meta(meta: dict, correct: torch.Tensor, model=None) -> FinetuneRun:
    """The :class:`FinetuneRun` of a :func:`run_meta` record read back from JSON (its tuples
    restored), with its test outcomes ``correct``, marked as read from disk."""
    meta = dict(meta, record=dict(meta["record"]))
    meta["dev_curve"] = [tuple(point) for point in meta["dev_curve"]]
    meta["grid"] = {row[0]: tuple(row[1:]) for row in meta["grid"]}
    for key in ("step0", "kept"):
        meta["record"][key] = tuple(meta["record"][key])
    meta["record"]["curve"] = [tuple(point) for point in meta["record"]["curve"]]
    return FinetuneRun(correct=correct, from_cache=True, model=model, **meta)


def _save(folder: Path, run: FinetuneRun) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    torch.save({"meta": json.dumps(run_meta(run)), "correct": run.correct}, folder / "run.pt")
    if run.model is not None:  # the weights that can differ from the loaded model's
        state = {k: v.cpu() for k, v in run.model.state_dict().items() if k != "bert.embeddings.word_embeddings.weight"}
        torch.save(state, folder / "model.pt")


def _load(folder: Path, bert, num_classes: int, keep_model: bool) -> FinetuneRun | None:
    if not (folder / "run.pt").exists() or (keep_model and not (folder / "model.pt").exists()):
        return None
    saved = torch.load(folder / "run.pt", weights_only=True)
    model = None
    if keep_model:
        model = SentenceClassifier(copy.deepcopy(bert), num_classes)
        missing, unexpected = model.load_state_dict(torch.load(folder / "model.pt", weights_only=True), strict=False)
        if unexpected or missing != ["bert.embeddings.word_embeddings.weight"]:
            return None
        model.eval()
    return run_from_meta(json.loads(saved["meta"]), saved["correct"], model)


@dataclass
class FinetuneStudy:
    """Every strategy run once per seed, each seed on its own few-shot draw (``tasks[seed]``):
    ``runs[strategy]`` is a list over seeds."""

    config: FinetuneConfig
    seeds: tuple
    runs: dict
    tasks: dict = field(default_factory=dict)

    @property
    def strategies(self) -> tuple:
        return tuple(self.runs)

    def accuracy(self, strategy: str) -> SeededAccuracy:
        """Test outcomes ``[seeds, items]``; item ``j`` of one seed is a test utterance of that seed's
        own draw (the items are nested in the seeds, so strategies pair within a seed)."""
        return SeededAccuracy(torch.stack([r.correct for r in self.runs[strategy]]), self.seeds)

    def accuracies(self) -> dict:
        return {s: self.accuracy(s) for s in self.runs}

    def records(self, strategy: str | None = None) -> list[TrainingRecord]:
        """The training records of one strategy's runs (every run's, strategy by strategy, with ``None``)."""
        strategies = self.strategies if strategy is None else (strategy,)
        return [r.training_record() for s in strategies for r in self.runs[s]]

    def seconds(self, strategy: str) -> list[float]:
        return [r.seconds for r in self.runs[strategy]]

    def steps(self, strategy: str) -> list[int]:
        return [r.steps for r in self.runs[strategy]]

    def lrs(self, strategy: str) -> list:
        """The learning rate each seed's dev split chose (``None`` for the frozen probe)."""
        return [r.lr for r in self.runs[strategy]]

    def converged(self, strategy: str) -> int:
        return sum(r.converged for r in self.runs[strategy])

    def from_cache(self) -> int:
        return sum(r.from_cache for runs in self.runs.values() for r in runs)

    def models(self, strategy: str) -> list:
        return [r.model for r in self.runs[strategy]]


def _check_tasks(tasks) -> dict:
    if not isinstance(tasks, dict) or not tasks or not all(isinstance(t, FewShotTask) for t in tasks.values()):
        raise ValueError("tasks must map each seed to its FewShotTask (lesson_setup or few_shot_task).")
    sizes = {len(t.test) for t in tasks.values()}
    if len(sizes) != 1:
        raise ValueError(f"every seed's test set must hold as many utterances (for a [seeds, items] table), got {sizes}.")
    return tasks


def finetune_study(tokenizer, bert, tasks: dict, strategies=FINETUNE_STRATEGIES, *,
                   config: FinetuneConfig = FinetuneConfig(), keep_models=(), progress: bool = True,
                   cache: Path | None = None) -> FinetuneStudy:
    """:func:`finetune_strategy` for every strategy on every seed's task (``tasks`` maps a seed to its
    :class:`FewShotTask`), seed by seed (so a slow spell of a shared machine hits every strategy
    alike), each run read from the disk cache (:func:`cache_dir`) when an identical run was made
    before and written to it otherwise. The strategies that start from the linear probe share one
    probe per seed. With ``config.tune == "first seed"`` the first seed's dev split chooses each
    strategy's learning rate and the other seeds train at that rate only. ``keep_models``: the
    strategies whose trained models are kept (lesson 14 reads the fine-tuned layers); ``cache``: a
    folder to keep the runs in instead of :func:`cache_dir` (the sweep's own, so it resumes)."""
    from helpers.model.fingerprint import model_key

    tasks = _check_tasks(tasks)
    strategies, seeds, keep = tuple(strategies), tuple(tasks), set(keep_models)
    if not strategies:
        raise ValueError("give at least one strategy.")
    unknown = [s for s in strategies + tuple(keep) if s not in FINETUNE_STRATEGIES]
    if unknown:
        raise ValueError(f"unknown strategies {unknown}: choose from {FINETUNE_STRATEGIES}.")
    bert_key, root = model_key(bert), (cache_dir() if cache is None else Path(cache))
    runs = {s: [] for s in strategies}
    chosen: dict = {}
    bar = ProgressBar(len(seeds) * len(strategies), desc="fine-tuning runs", disable=not progress)
    for seed in seeds:
        task, head = tasks[seed], None
        for strategy in strategies:
            lrs = config.lrs if config.tune == "each seed" or strategy not in chosen else (chosen[strategy],)
            splits = (task.train, task.dev, task.test)
            folder = None if root is None else root / run_key(bert_key, *splits, strategy, seed, config, lrs)
            run = None if folder is None else _load(folder, bert, task.train.num_classes, strategy in keep)
            if run is None:
                if strategy in FROM_PROBE and head is None:
                    tokens = _Tokens(tokenizer, task.train, config.max_length)
                    dev_tokens = _Tokens(tokenizer, task.dev, config.max_length)
                    head = probe_head(bert, tokens, dev_tokens, task.train, task.dev, config,
                                      test_tokens=_Tokens(tokenizer, task.test, config.max_length))
                run = finetune_strategy(tokenizer, bert, *splits, strategy, seed=seed, config=config, lrs=lrs,
                                        keep_model=strategy in keep, head=head)
                if strategy == FROZEN:
                    run.record["run"] = f"{FROZEN}, seed {seed}"
                if folder is not None:
                    _save(folder, run)
            chosen.setdefault(strategy, run.lr)
            runs[strategy].append(run)
            bar.update()
    bar.close()
    return FinetuneStudy(config, seeds, runs, tasks)


def detectable_difference(n_items: int, n_seeds: int, *, family: int = 1, discordance: float = 0.10,
                          seed_sd: float = 0.01, power: float = 0.8, alpha: float = 0.05) -> float:
    """The smallest accuracy difference between two strategies that a design of ``n_seeds`` draws x
    ``n_items`` test items per draw detects with probability ``power`` -- computed **before** any
    run, from the design alone and two stated assumptions: the strategies disagree on a share
    ``discordance`` of the test items, and their difference varies from draw to draw with standard
    deviation ``seed_sd``. The comparison is read at the Bonferroni level of ``family`` comparisons
    with the course's small-sample rule (Student t with ``n_seeds - 1`` degrees of freedom):
    ``(t_{1 - alpha / (2 family)} + t_{power}) * sqrt(discordance / (n_items n_seeds) + seed_sd^2 / n_seeds)``."""
    from scipy.stats import t as student_t

    for name, value in (("n_items", n_items), ("n_seeds", n_seeds), ("family", family)):
        if isinstance(value, bool) or not isinstance(value, int) or value < (2 if name == "n_seeds" else 1):
            raise ValueError(f"{name} must be an int >= {2 if name == 'n_seeds' else 1}, got {value!r}.")
    if not 0 < discordance <= 1 or seed_sd < 0 or not 0 < power < 1:
        raise ValueError("discordance must lie in (0, 1], seed_sd be >= 0 and power lie in (0, 1).")
    df = n_seeds - 1
    se = math.sqrt(discordance / (n_items * n_seeds) + seed_sd ** 2 / n_seeds)
    return (student_t.ppf(1 - alpha / (2 * family), df) + student_t.ppf(power, df)) * se


def seeds_needed(difference: float, n_items: int, *, most: int = 1000, **kw) -> int | None:
    """How many draws (with ``n_items`` test items each) :func:`detectable_difference` needs to detect
    ``difference``; ``None`` when more than ``most`` would not do."""
    for n in range(2, most + 1):
        if detectable_difference(n_items, n, **kw) <= difference:
            return n
    return None


@torch.no_grad()
def classifier_correct(tokenizer, clf, split, max_length: int = 64) -> torch.Tensor:
    """``[n]`` booleans on the CPU: which items of ``split`` the classifier gets right."""
    return _score(clf, _Tokens(tokenizer, split, max_length))[1]


# ---------------------------------------------------------------------------------------------
# Lesson 14: what fine-tuning changes, layer by layer -- linear CKA on token vectors (with a
# jackknife over the utterances) and the relative weight change of every layer, pre-trained
# model vs a fine-tuned copy.

def _as_float_matrix(X, name: str) -> torch.Tensor:
    X = torch.as_tensor(X, device=device_of(X))
    if X.ndim != 2 or X.shape[0] < 2:
        raise ValueError(f"{name} must be a [n, features] matrix with n >= 2 rows, got shape {tuple(X.shape)}.")
    if not torch.isfinite(X).all():
        raise ValueError(f"{name} holds NaN or infinite values.")
    return X.double()


def linear_cka(X, Y) -> float:
    """Linear centered kernel alignment (Kornblith et al. 2019) of two representations of the
    same ``n`` items (rows): ``||Yc^T Xc||_F^2 / (||Xc^T Xc||_F ||Yc^T Yc||_F)`` with
    column-centred ``Xc``, ``Yc``. 1 = the same up to rotation and scale; invariant to
    orthogonal transforms and isotropic scaling, not to arbitrary linear maps."""
    X, Y = _as_float_matrix(X, "X"), _as_float_matrix(Y, "Y")
    if X.shape[0] != Y.shape[0]:
        raise ValueError(f"X and Y must describe the same items: {X.shape[0]} vs {Y.shape[0]} rows.")
    X, Y = X - X.mean(0), Y - Y.mean(0)
    denominator = torch.linalg.matrix_norm(X.T @ X) * torch.linalg.matrix_norm(Y.T @ Y)
    if denominator == 0:
        raise ValueError("a representation is constant over the items: CKA is undefined.")
    return float(torch.linalg.matrix_norm(Y.T @ X) ** 2 / denominator)


def _real_tokens(tokenizer, enc) -> torch.Tensor:
    """``[B, T]`` True at the real tokens of a padded batch: no [CLS], [SEP] or padding."""
    special = torch.tensor([tokenizer.get_special_tokens_mask(ids, already_has_special_tokens=True)
                            for ids in enc["input_ids"].tolist()], dtype=torch.bool, device=enc["attention_mask"].device)
    return enc["attention_mask"].bool() & ~special


@torch.no_grad()
def token_vectors(tokenizer, bert, texts, max_length: int = 32, batch_size: int = 64) -> torch.Tensor:
    """``[L+1, n_tokens, H]``: the vector of every real token (no [CLS], [SEP] or padding) of
    ``texts`` at every layer, in a fixed order (text by text, token by token)."""
    chunks = []
    for start in range(0, len(texts), batch_size):
        enc = encode_batch(tokenizer, texts[start:start + batch_size], max_length, device=model_device(bert))
        hidden = torch.stack(bert(**enc, output_hidden_states=True, return_dict=True).hidden_states)
        chunks.append(hidden[:, _real_tokens(tokenizer, enc)])
    return torch.cat(chunks, 1).float()


def token_owners(tokenizer, texts, max_length: int = 32, batch_size: int = 64) -> torch.Tensor:
    """``[n_tokens]``: which text each row of :func:`token_vectors` (same arguments) comes from."""
    owners = []
    for start in range(0, len(texts), batch_size):
        keep = _real_tokens(tokenizer, encode_batch(tokenizer, texts[start:start + batch_size], max_length))  # cpu: token bookkeeping, no model
        rows = torch.arange(start, start + keep.shape[0], device=keep.device)[:, None].expand_as(keep)
        owners.append(rows[keep])
    return torch.cat(owners)


def layer_cka(before: torch.Tensor, after: torch.Tensor) -> list[float]:
    """Linear CKA between two ``[L+1, n, H]`` stacks, layer by layer (0 = embeddings)."""
    if before.shape[:2] != after.shape[:2]:
        raise ValueError(f"the two stacks must hold the same layers and tokens: {tuple(before.shape)} vs {tuple(after.shape)}.")
    return [linear_cka(b, a) for b, a in zip(before, after)]


def layer_weight_norms(before, after) -> tuple[list[float], list[float]]:
    """``(||W_before||, ||W_after - W_before||)`` per depth, every parameter of the depth taken
    together (Frobenius norm of all of them): ``[embeddings, layer 1, ..., layer L]`` each. The
    word embeddings are left out (``finetune`` keeps them frozen)."""
    pairs = list(zip(layer_groups(before)[:-1], layer_groups(after)[:-1]))
    if len(pairs) != before.config.num_hidden_layers + 1 or len(layer_groups(after)) != len(layer_groups(before)):
        raise ValueError("before and after must be BERT models of the same depth.")
    skip = {id(before.embeddings.word_embeddings.weight), id(after.embeddings.word_embeddings.weight)}
    sizes, moves = [], []
    for params_b, params_a in pairs:
        diff = base = 0.0
        for pb, pa in zip(params_b, params_a):
            if id(pb) in skip or id(pa) in skip:
                continue
            if pb.shape != pa.shape:
                raise ValueError(f"parameter shapes differ: {tuple(pb.shape)} vs {tuple(pa.shape)}.")
            diff += float((pa.detach().double() - pb.detach().double()).pow(2).sum())
            base += float(pb.detach().double().pow(2).sum())
        sizes.append(base ** 0.5)
        moves.append(diff ** 0.5)
    return sizes, moves


def relative_weight_change(before, after) -> list[float]:
    """``||W_after - W_before|| / ||W_before||`` per depth (see :func:`layer_weight_norms`):
    ``[embeddings, layer 1, ..., layer L]``."""
    sizes, moves = layer_weight_norms(before, after)
    return [m / s for m, s in zip(moves, sizes)]


def weighted_cka(X, Y, owners, counts) -> torch.Tensor:
    """``[B]``: linear CKA of ``X`` and ``Y`` (``[n, H]``, the same ``n`` tokens) when the
    tokens of text ``u`` count ``counts[b, u]`` times -- what :func:`linear_cka` gives on the
    rows repeated that often, computed from sums of the Gram matrices over texts.

    With token weights ``w`` (``N`` their sum) and Gram matrices ``K = X X^T``, ``M = Y Y^T``,
    the weighted, centred cross term is
    ``S(K, M) = w^T (K o M) w - (2/N) sum_i w_i (Kw)_i (Mw)_i + (w^T K w)(w^T M w) / N^2``,
    and ``CKA = S(K, M) / sqrt(S(K, K) S(M, M))``."""
    X, Y = _as_float_matrix(X, "X"), _as_float_matrix(Y, "Y")
    owners = torch.as_tensor(owners, dtype=torch.long, device=X.device)
    if X.shape[0] != Y.shape[0] or owners.shape != (X.shape[0],):
        raise ValueError(f"X, Y and owners must describe the same tokens: {X.shape[0]}, {Y.shape[0]}, "
                         f"{tuple(owners.shape)}.")
    _, inverse = torch.unique(owners, return_inverse=True)
    n_texts = int(inverse.max()) + 1
    C = torch.as_tensor(counts, dtype=torch.float64, device=X.device)
    C = C[None] if C.ndim == 1 else C
    if C.ndim != 2 or C.shape[1] != n_texts:
        raise ValueError(f"counts must be [B, {n_texts}] (one weight per text), got {tuple(C.shape)}.")
    G = torch.zeros(len(inverse), n_texts, dtype=torch.float64, device=X.device)
    G[torch.arange(len(inverse), device=X.device), inverse] = 1.0  # token -> text, one-hot
    w, N = C @ G.T, C @ G.sum(0)  # [B, n] token weights, [B] their sums
    X, Y = X - X.mean(0), Y - Y.mean(0)  # CKA ignores shifts; centring first keeps the sums well conditioned
    grams = {"K": X @ X.T, "M": Y @ Y.T}
    per_text = {k: A @ G for k, A in grams.items()}  # [n, texts]: each token's sum over each text
    Aw = {k: C @ s.T for k, s in per_text.items()}  # [B, n]: (K w), (M w)
    wAw = {k: (C @ (G.T @ s) * C).sum(1) for k, s in per_text.items()}  # [B]: w^T K w, w^T M w

    def S(a, b):
        quad = ((C @ (G.T @ (grams[a] * grams[b]) @ G)) * C).sum(1)
        return quad - 2 * (w * Aw[a] * Aw[b]).sum(1) / N + wAw[a] * wAw[b] / N ** 2

    return S("K", "M") / (S("K", "K") * S("M", "M")).sqrt()


def cka_jackknife(before: torch.Tensor, afters, owners) -> torch.Tensor:
    """``[n_texts, L+1]``: linear CKA between ``before`` and each of ``afters`` (``[L+1, n, H]``
    stacks of the same ``n`` tokens), averaged over ``afters`` (the fine-tuning seeds), with
    text ``u`` left out in row ``u`` (``owners[i]`` is the text of token ``i``; the tokens of
    one text go together). :func:`jackknife_interval` turns the rows into an interval.

    Why not a bootstrap: drawing texts with replacement repeats some of them, and a repeated
    token matches its copy perfectly in both representations, which pushes CKA up; leaving
    texts out repeats nothing."""
    afters = [torch.as_tensor(a, device=before.device) for a in afters]
    owners = torch.as_tensor(owners, dtype=torch.long, device=before.device)
    if before.ndim != 3 or not afters or any(a.shape != before.shape for a in afters):
        raise ValueError("give a [L+1, n, H] stack before and a non-empty list of stacks of the same shape after.")
    if owners.shape != (before.shape[1],):
        raise ValueError(f"owners needs one text index per token ({before.shape[1]}), got shape {tuple(owners.shape)}.")
    n_texts = len(torch.unique(owners))
    if n_texts < 3:
        raise ValueError(f"the jackknife needs at least 3 texts, got {n_texts}.")
    leave_one_out = 1.0 - torch.eye(n_texts, dtype=torch.float64, device=before.device)  # row u: every text but u, once
    return torch.stack([sum(weighted_cka(before[l], a[l], owners, leave_one_out) for a in afters) / len(afters)
                        for l in range(before.shape[0])], 1)


def jackknife_interval(estimate: float, leave_one_out, level: float = 0.95) -> Interval:
    """``estimate`` with a normal interval from the jackknife standard error of ``n``
    leave-one-out values: ``se = sqrt((n-1)/n * sum((v_i - mean(v))^2))``."""
    values = torch.as_tensor(leave_one_out, dtype=torch.float64, device="cpu").flatten()  # cpu: an interval from results
    if values.numel() < 3 or not torch.isfinite(values).all():
        raise ValueError("give at least 3 finite leave-one-out values.")
    if not 0 < level < 1:
        raise ValueError(f"level must lie strictly between 0 and 1, got {level!r}.")
    n = values.numel()
    se = float(((n - 1) / n * ((values - values.mean()) ** 2).sum()).sqrt())
    z = NormalDist().inv_cdf(0.5 + level / 2)
    return Interval(float(estimate), float(estimate) - z * se, float(estimate) + z * se, level)


@dataclass
class LayerChange:
    """Pre-trained vs fine-tuned, one row per fine-tuning seed: ``cka`` and ``weight_change``
    are ``[seeds, L+1]`` (index 0 = embeddings), ``accuracy`` the test accuracy of each run;
    ``weight_norm`` is ``||W||`` per depth before fine-tuning, ``delta_norm`` ``||dW||`` per
    seed and depth; ``owners`` says which test text each token row comes from."""

    seeds: list[int]
    cka: torch.Tensor
    weight_change: torch.Tensor
    accuracy: list[float]
    runs: list[FinetuneRun]
    before: torch.Tensor  # [L+1, n_tokens, H] token vectors of the pre-trained model
    after: list[torch.Tensor]  # the same for each fine-tuned run
    weight_norm: torch.Tensor | None = None  # [L+1]
    delta_norm: torch.Tensor | None = None  # [seeds, L+1]
    owners: torch.Tensor | None = None  # [n_tokens]

    def cka_jackknife(self) -> torch.Tensor:
        """``[n_texts, L+1]`` seed-averaged CKA with one test text left out per row (:func:`cka_jackknife`)."""
        if self.owners is None:
            raise ValueError("this LayerChange has no owners (which text each token comes from): "
                             "build it with compare_finetuned.")
        return cka_jackknife(self.before, self.after, self.owners)


def layer_change(tokenizer, bert, runs, test, *, max_length: int = 64) -> LayerChange:
    """Compare every layer of each fine-tuned run (:class:`FinetuneRun` with its ``model``, one per
    seed, e.g. ``study.runs[FULL]``) with the pre-trained ``bert``: linear CKA of the test
    utterances' token vectors and the relative weight change, per depth."""
    runs = list(runs)
    if not runs or any(r.model is None for r in runs):
        raise ValueError("give fine-tuning runs that kept their models (finetune_study(..., keep_models=[...])).")
    before = token_vectors(tokenizer, bert, test.texts, max_length)
    cka, sizes, moves, after = [], None, [], []
    for run in runs:
        after.append(token_vectors(tokenizer, run.model.bert, test.texts, max_length))
        cka.append(layer_cka(before, after[-1]))
        sizes, moved = layer_weight_norms(bert, run.model.bert)
        moves.append(moved)
    weight_norm, delta_norm = torch.tensor(sizes, dtype=torch.float64), torch.tensor(moves, dtype=torch.float64)  # cpu: result tables
    cka = torch.tensor(cka)  # cpu: a result table
    return LayerChange([r.seed for r in runs], cka, delta_norm / weight_norm, [r.accuracy for r in runs],
                       runs, before, after, weight_norm, delta_norm, token_owners(tokenizer, test.texts, max_length))


def swap_in_correct(tokenizer, bert, run, test, depth: int, *, max_length: int = 64) -> torch.Tensor:
    """The swap-in test for one layer: a copy of the fine-tuned ``run.model`` with the **pre-trained**
    weights of one depth put back (0 = embeddings, ``l`` = layer ``l``), everything else as fine-tuned;
    ``[n_test]`` right/wrong. Its accuracy minus the fine-tuned model's is what that layer's *own*
    change contributes, given the fine-tuned layers around it (its input still carries every change below)."""
    L = bert.config.num_hidden_layers
    if isinstance(depth, bool) or not isinstance(depth, int) or not 0 <= depth <= L:
        raise ValueError(f"depth {depth!r} is out of range: 0 (embeddings) to {L}.")
    clf = copy.deepcopy(run.model)
    source = bert.embeddings if depth == 0 else bert.encoder.layer[depth - 1]
    target = clf.bert.embeddings if depth == 0 else clf.bert.encoder.layer[depth - 1]
    target.load_state_dict(source.state_dict())
    return classifier_correct(tokenizer, clf, test, max_length)


def _paired_base(accuracy: dict, strategy: str, baseline: str):
    """The baseline's runs on the draws ``strategy`` has (all of them, or those it moved on)."""
    a, b = accuracy[strategy], accuracy[baseline]
    return b.only(a.seeds) if getattr(a, "seeds", None) and a.seeds != b.seeds else b


def moved_accuracies(study) -> dict:
    """``{strategy: SeededAccuracy}`` for strategy verdicts: the frozen probe on every draw, each
    fine-tuning strategy on the draws where it moved (its kept weights are not its start); a
    strategy that moved on no draw is left out. :func:`baseline_finding` pairs each with the probe
    on the same draws."""
    from helpers.classify.compute import SeededAccuracy

    out = {}
    for s, runs in study.runs.items():
        kept = runs if s == FROZEN else [r for r in runs if r.moved]
        if kept:
            out[s] = SeededAccuracy(torch.stack([r.correct for r in kept]), tuple(r.seed for r in kept))
    return out


def baseline_verdict(accuracy: dict, baseline: str = FROZEN, margin: float | None = None) -> str:
    """Each strategy against the baseline that fine-tunes nothing, paired on the same test items and
    seeds (:func:`~helpers.classify.compute.paired_comparison`), one Bonferroni family over the
    strategies: which beat it, which fall below it, which are inconclusive -- and a closing verdict."""
    from helpers.classify.compute import join_names, paired_comparison, points

    if baseline not in accuracy or len(accuracy) < 2:
        raise ValueError(f"accuracy must hold {baseline!r} and at least one other strategy.")
    others = [s for s in accuracy if s != baseline]
    comps = {s: paired_comparison(accuracy[s], _paired_base(accuracy, s, baseline)) for s in others}
    family = len(others)
    verdicts = {s: comps[s].verdict(s, baseline, margin=margin, family=family) for s in others}
    above = [s for s in others if verdicts[s].kind == "higher"]
    below = [s for s in others if verdicts[s].kind == "lower"]
    same = [s for s in others if verdicts[s].kind == "equivalent"]
    open_ = [s for s in others if verdicts[s].kind == "inconclusive"]
    lines = [f"each strategy minus '{baseline}', paired on the same test items and seeds "
             f"({comps[others[0]].method}; intervals and p Bonferroni-adjusted over {family}): "
             + "; ".join(f"{s} {points(verdicts[s].difference)} ({verdicts[s].p_text})" for s in others) + "."]
    if above:
        lines.append(f"above the baseline: {join_names(above)}.")
    if below:
        lines.append(f"below the baseline: {join_names(below)}.")
    if same:
        lines.append(f"equivalent within +/-{100 * margin:.1f} points: {join_names(same)}.")
    if open_:
        lines.append(f"inconclusive: {join_names(open_)}.")
    lines.append("verdict: " + (f"{join_names(above)} beat{'s' if len(above) == 1 else ''} not fine-tuning at all here"
                                if above else "no fine-tuning strategy is shown to beat the frozen encoder with a trained "
                                "probe on this data" + (f"; {join_names(below)} fall{'s' if len(below) == 1 else ''} below it"
                                                        if below else "")) + ".")
    return " ".join(lines)


def baseline_finding(accuracy: dict, baseline: str = FROZEN, margin: float | None = None) -> tuple[str, list[str]]:
    """``(sentence, details)``: :func:`baseline_verdict` in plain words first -- "No fine-tuning
    strategy is shown to beat the frozen probe (92.1 %); full fine-tuning falls below it (89.0 %);
    for the others we cannot tell." -- with every comparison's full verdict as the details."""
    from helpers.classify.compute import join_names, paired_comparison

    if baseline not in accuracy or len(accuracy) < 2:
        raise ValueError(f"accuracy must hold {baseline!r} and at least one other strategy.")
    others = [s for s in accuracy if s != baseline]
    family = len(others)
    verdicts = {s: paired_comparison(accuracy[s], _paired_base(accuracy, s, baseline)).verdict(
        s, baseline, margin=margin, family=family) for s in others}
    pct = lambda s: f"{100 * accuracy[s.strip(chr(39))].estimate:.1f} %"  # noqa: E731
    # the baseline on the draws each strategy is compared on (all of them, or those it moved on)
    base_pct = lambda s: f"{100 * _paired_base(accuracy, s.strip(chr(39)), baseline).estimate:.1f} %"  # noqa: E731
    paired_apart = any(_paired_base(accuracy, s, baseline) is not accuracy[baseline] for s in others)
    quoted = lambda kind: [f"'{s}'" for s in others if verdicts[s].kind == kind]  # noqa: E731 - names hold commas
    above, below, same, open_ = (quoted(k) for k in ("higher", "lower", "equivalent", "inconclusive"))
    name = "the frozen probe" if baseline == FROZEN else f"'{baseline}'"

    def versus(group):  # "95.0 % vs 50.0 %": each against the baseline on its own draws
        if paired_apart:
            return "; ".join(f"{pct(s)} vs {base_pct(s)}" for s in group) + " on the same draws"
        return f"{', '.join(map(pct, group))} vs {pct(baseline)}"

    if above:
        parts = [f"{join_names(above)} beat{'s' if len(above) == 1 else ''} {name} ({versus(above)})"]
    else:
        parts = [f"no fine-tuning strategy is shown to beat {name} ({pct(baseline)})"]
    if below:
        parts.append(f"{join_names(below)} fall{'s' if len(below) == 1 else ''} below it ({versus(below)})")
    if same:
        parts.append(f"{join_names(same)} come{'s' if len(same) == 1 else ''} out the same within the margin set "
                     "beforehand")
    if open_:
        parts.append(f"for {'the others' if (above or below or same) and len(open_) > 1 else join_names(open_)} we "
                     "cannot tell" + (f" ({join_names(open_)})" if (above or below or same) and len(open_) > 1 else ""))
    sentence = "; ".join(parts) + "."
    return sentence[0].upper() + sentence[1:], [baseline_verdict(accuracy, baseline, margin)] + [
        verdicts[s].text for s in others]
