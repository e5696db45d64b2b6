"""Fine-tuning BERT with a classification head (:mod:`helpers.finetuning`, lessons 11 and 14): the strategies and one run of each.

* :data:`FINETUNE_STRATEGIES` -- the frozen probe, full fine-tuning, LP-FT, freeze lower half,
  layer-wise lr decay (:func:`llrd_param_groups`), gradual unfreezing; :data:`FROM_PROBE`: those
  whose head starts from the linear probe (:func:`fit_probe_head`, :class:`ProbeHead`);
* :class:`SentenceClassifier` -- BERT, mean pooling of the last layer, a linear head;
* :class:`FinetuneConfig` -- the converging recipe (AdamW in Devlin et al.'s lr range, warm-up +
  linear decay, early stopping on a dev split);
* :func:`finetune_run` -> :class:`FinetuneRun` -- one strategy trained by the course's training
  contract on a ``copy.deepcopy`` of the model; :func:`finetune_strategy` picks its learning rate
  on the dev split.
"""

from __future__ import annotations

import copy
import math
import time
import warnings
from dataclasses import asdict, dataclass, field

import torch

from helpers.classify.compute import mean_pool
from helpers.common.progress import ProgressBar
from helpers.common.training import (BUDGET_EXHAUSTED, CONVERGED, FIRST_EVALUATION, L2_GRID, TrainingRecord,
                                     fit_linear, linear_criterion)
from helpers.model.trace import model_device, synchronize


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
