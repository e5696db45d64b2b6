"""Fine-tuning BERT with a classification head (lessons 08 and 10): strategies that treat layers
differently, trained to convergence on a dev split (:class:`FinetuneConfig`, :func:`finetune_run`,
:func:`finetune_study`, with a disk cache so that lesson 10 reuses lesson 08's runs), and lesson 10's
measures of what fine-tuning changed, layer by layer. Every run trains a ``copy.deepcopy`` of the
model, so the cached model that :func:`helpers.model.loading.load_model` hands out is never changed."""

from __future__ import annotations

import copy
import hashlib
import json
import time
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path
from statistics import NormalDist

import torch

from helpers.common.progress import ProgressBar
from helpers.common.stats import Interval

from helpers.classify.compute import HEAD_STEPS, SeededAccuracy, encode_batch, mean_pool, train_head
from helpers.model.trace import device_of, model_device, synchronize


FROZEN = "frozen encoder, linear probe"
FULL = "full fine-tuning"
LPFT = "linear probe, then fine-tuning"
FREEZE = "freeze lower half"
LLRD = "layer-wise lr decay"
GRADUAL = "gradual unfreezing"
FINETUNE_STRATEGIES = (FROZEN, FULL, LPFT, FREEZE, LLRD, GRADUAL)
# Strategies whose head starts from the linear probe (LP-FT's first stage, Kumar et al. 2022): from a
# trained head a run converges in a few epochs, from a random head (FULL) it takes several times more.
FROM_PROBE = (FROZEN, LPFT, FREEZE, LLRD, GRADUAL)
# Devlin et al. (2019), Appendix A.3: the fine-tuning learning rates they searched for BERT.
DEVLIN_LRS = (5e-5, 4e-5, 3e-5, 2e-5)
ENGINE_VERSION = 1  # part of every cache key: bump it when a change alters what a run computes


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
    """How every fine-tuning run trains (lesson 08's recipe; lesson 10 reuses it).

    AdamW at ``lr`` (in Devlin et al.'s range, :data:`DEVLIN_LRS`) with weight decay, a linear
    warm-up over the first ``warmup`` share of the step budget and a linear decay to 0 at the end of
    it; the budget is ``max_epochs`` epochs of batches of ``batch_size``. After every epoch the dev
    split is scored; training stops when the dev loss has not improved by ``min_delta`` for ``patience`` epochs
    (early stopping: the run *converged* on dev) and the weights of the best epoch are kept. The
    word-embedding matrix stays frozen in every run (it is half of a small BERT's weights).
    ``head_steps`` trains the linear probe of the frozen and LP-FT strategies (lesson 07's head).
    """

    lr: float = 5e-5
    warmup: float = 0.06  # the share RoBERTa (Liu et al., 2019) warmed up over
    max_epochs: int = 10
    patience: int = 2
    min_delta: float = 0.01  # a dev loss must beat the best by this much to count as an improvement
    batch_size: int = 8
    max_length: int = 96  # tokens per utterance; BANKING77's longest has 82
    weight_decay: float = 0.01
    llrd_decay: float = 0.8
    unfreeze_epochs: int = 3  # gradual unfreezing: head only in epoch 0, every layer trains from this epoch on
    head_steps: int = HEAD_STEPS

    def __post_init__(self):
        for name in ("max_epochs", "patience", "batch_size", "max_length", "unfreeze_epochs", "head_steps"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}.")
        if not 0 < self.lr < 1 or not 0 <= self.warmup < 1:
            raise ValueError(f"lr must lie in (0, 1) and warmup in [0, 1), got {self.lr!r} and {self.warmup!r}.")

    def describe(self) -> str:
        return (f"AdamW lr {self.lr:g} (Devlin et al.'s range {min(DEVLIN_LRS):g}-{max(DEVLIN_LRS):g}), weight decay "
                f"{self.weight_decay:g}, linear warm-up over {self.warmup:.0%} of the step budget then linear decay; batches "
                f"of {self.batch_size}; at most {self.max_epochs} epochs, early stopping when the dev loss has not "
                f"improved by {self.min_delta:g} for {self.patience} epochs (the best epoch's weights are kept)")


@dataclass
class FinetuneRun:
    """One strategy, one seed: which test items it got right, its dev curve, its cost."""

    strategy: str
    seed: int
    correct: torch.Tensor  # [n_test] bool, on the CPU
    dev_curve: list  # [(optimiser steps so far, dev loss, dev accuracy)] after every epoch
    steps: int  # optimiser steps run
    best_step: int  # the steps at the best dev epoch (the weights kept)
    converged: bool  # stopped by the dev loss (True) or by the step budget (False)
    seconds: float  # wall-clock seconds of the training loop (dev scoring included, test scoring not)
    trainable_params: int
    from_cache: bool = False
    model: SentenceClassifier | None = None

    @property
    def accuracy(self) -> float:
        return self.correct.float().mean().item()


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


def _linear_probe_head(tokenizer, clf, train, config: FinetuneConfig, seed: int) -> None:
    """Lesson 07's head on the frozen mean-pooled last layer (standardized features, full-batch Adam,
    ``head_steps``), folded into ``clf.classifier``: ``W ((x - mu) / sigma) + b = (W / sigma) x + (b - (W / sigma) mu)``."""
    tokens = _Tokens(tokenizer, train, config.max_length)
    device = _device(clf)
    clf.bert.eval()
    rows_all, feats = [], []
    with torch.no_grad():
        for rows in tokens.eval_batches():
            ids, mask, _ = tokens.batch(rows, device)
            feats.append(mean_pool(clf.bert(input_ids=ids, attention_mask=mask).last_hidden_state, mask))
            rows_all += rows
    X = torch.empty(len(tokens), feats[0].shape[1], device=device)
    X[torch.as_tensor(rows_all, device=device)] = torch.cat(feats)
    head = train_head(X, train.labels, train.num_classes, epochs=config.head_steps, seed=seed, progress=False)
    with torch.no_grad():
        W = head.classifier.weight / head.sigma
        clf.classifier.weight.copy_(W)
        clf.classifier.bias.copy_(head.classifier.bias - W @ head.mu)


def _optimizer(clf, strategy: str, config: FinetuneConfig, L: int):
    groups = layer_groups(clf.bert)
    if strategy == FREEZE:
        for params in groups[: 1 + L // 2]:  # embeddings + layers 1..L//2
            _set_trainable(params, False)
    if strategy == LLRD:
        param_groups = llrd_param_groups(clf, config.lr, config.llrd_decay)
    else:
        param_groups = [{"params": [p for p in clf.parameters() if p.requires_grad], "lr": config.lr}]
    # AdamW leaves out of the update every parameter whose .grad is None (frozen for now, or for good)
    return torch.optim.AdamW(param_groups, weight_decay=config.weight_decay)


def _unfreeze_for_epoch(clf, epoch: int, config: FinetuneConfig, L: int) -> None:
    """Gradual unfreezing (Howard & Ruder, 2018): epoch 0 trains the head only; each later epoch opens
    the next block of layers from the top, every layer (and the embeddings) from ``unfreeze_epochs`` on."""
    groups = layer_groups(clf.bert)[:-1]  # depth 0 = embeddings .. L
    n_open = len(groups) if epoch >= config.unfreeze_epochs else round(epoch * len(groups) / config.unfreeze_epochs)
    for depth, params in enumerate(groups):
        _set_trainable(params, depth >= len(groups) - n_open)
    clf.bert.embeddings.word_embeddings.weight.requires_grad_(False)


def finetune_run(tokenizer, bert, train, dev, test, strategy: str = FULL, *, seed: int = 0,
                 config: FinetuneConfig = FinetuneConfig(), keep_model: bool = False,
                 progress: bool = False) -> FinetuneRun:
    """Train a deep copy of ``bert`` + a linear head with one strategy of :data:`FINETUNE_STRATEGIES`
    and score it on ``test`` (``train``, ``dev``, ``test``: :class:`~helpers.common.data.IntentSplit`).

    * ``FROZEN``: no BERT weight changes; lesson 07's linear probe on the mean-pooled last layer;
    * ``FULL``: every weight (but the word embeddings) from a randomly initialised head;
    * ``LPFT``: the linear probe first, then full fine-tuning from that head (Kumar et al., 2022);
    * ``FREEZE``: embeddings and layers 1..L//2 frozen; ``LLRD``: layer ``l`` at ``lr * decay**(L+1-l)``;
    * ``GRADUAL``: gradual unfreezing from the top (:func:`_unfreeze_for_epoch`).

    Every strategy but ``FULL`` starts from the linear probe's head (:data:`FROM_PROBE`), so the layer
    treatments are compared with LP-FT, each converged, at one step budget.

    The recipe is :class:`FinetuneConfig`; the loaded ``bert`` is never changed.
    """
    if strategy not in FINETUNE_STRATEGIES:
        raise ValueError(f"strategy {strategy!r} is not valid: choose one of {FINETUNE_STRATEGIES}.")
    if train.names != dev.names or train.names != test.names:
        raise ValueError("train, dev and test must share one label set (the same intent names in the same order).")
    torch.manual_seed(seed)
    clf = SentenceClassifier(copy.deepcopy(bert), train.num_classes)
    clf.bert.embeddings.word_embeddings.weight.requires_grad_(False)
    L = bert.config.num_hidden_layers
    device = _device(clf)
    test_tokens = _Tokens(tokenizer, test, config.max_length)
    synchronize()  # on a GPU, time the work itself, not only its launch
    start = time.perf_counter()
    if strategy in FROM_PROBE:
        _linear_probe_head(tokenizer, clf, train, config, seed)
    if strategy == FROZEN:
        synchronize()
        seconds = time.perf_counter() - start
        _set_trainable(clf.bert.parameters(), False)
        clf.eval()
        dev_loss, dev_right = _score(clf, _Tokens(tokenizer, dev, config.max_length))
        _, right = _score(clf, test_tokens)
        return FinetuneRun(strategy, seed, right, [(config.head_steps, dev_loss, dev_right.float().mean().item())],
                           config.head_steps, config.head_steps, True, seconds,
                           sum(p.numel() for p in clf.classifier.parameters()), model=clf if keep_model else None)
    tokens, dev_tokens = _Tokens(tokenizer, train, config.max_length), _Tokens(tokenizer, dev, config.max_length)
    opt = _optimizer(clf, strategy, config, L)
    g = torch.Generator().manual_seed(seed)  # cpu: the order of the training texts
    per_epoch = (len(tokens) + config.batch_size - 1) // config.batch_size
    budget, warm = per_epoch * config.max_epochs, int(config.warmup * per_epoch * config.max_epochs)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda step: (step + 1) / max(warm, 1) if step < warm else max(0.0, (budget - step) / max(budget - warm, 1)))
    best = (float("inf"), None, 0)  # dev loss, state, steps
    curve, steps, stale, converged = [], 0, 0, False
    bar = ProgressBar(budget, desc=strategy, disable=not progress)
    for epoch in range(config.max_epochs):
        if strategy == GRADUAL:
            _unfreeze_for_epoch(clf, epoch, config, L)
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
        dev_loss, dev_right = _score(clf, dev_tokens)
        curve.append((steps, dev_loss, dev_right.float().mean().item()))
        unfrozen = strategy != GRADUAL or epoch >= config.unfreeze_epochs
        if dev_loss < best[0] - config.min_delta or best[1] is None:
            best, stale = (dev_loss, copy.deepcopy(clf.state_dict()), steps), 0
        else:
            if dev_loss < best[0]:  # better, but by less than min_delta: keep these weights, count no progress
                best = (dev_loss, copy.deepcopy(clf.state_dict()), steps)
            stale += int(unfrozen)
        if stale >= config.patience:
            converged = True
            break
    bar.close()
    clf.load_state_dict(best[1])
    synchronize()
    seconds = time.perf_counter() - start
    _, right = _score(clf, test_tokens)
    trainable = sum(p.numel() for p in clf.parameters() if p.requires_grad)
    return FinetuneRun(strategy, seed, right, curve, steps, best[2], converged, seconds, trainable,
                       model=clf.eval() if keep_model else None)


@dataclass(frozen=True)
class FewShotTask:
    """A few-shot intent task cut from BANKING77: ``train`` and ``dev`` (carved from the drawn training
    utterances, never from the test set) and ``test``, all with the same ``intents``."""

    train: object
    dev: object
    test: object
    intents: tuple
    shots: int

    def describe(self) -> str:
        return (f"BANKING77, {len(self.intents)} of its 77 intents, {self.shots} training utterances per intent drawn "
                f"with a seed ({len(self.train)} train + {len(self.dev)} dev, the dev carved out of them); "
                f"{len(self.test)} test utterances ({len(self.test) // len(self.intents)} per intent)")


def few_shot_task(n_intents: int | None = None, shots: int = 10, dev_per_intent: int = 2,
                  test_per_intent: int | None = None, seed: int = 0) -> FewShotTask:
    """BANKING77 (:func:`~helpers.common.data.load_banking77`) cut to a CPU-sized few-shot task:
    ``n_intents`` intents drawn with ``seed`` (``None``: all 77), ``shots`` training utterances per
    intent (Casanueva et al. use 10 and 30), of which ``dev_per_intent`` become the dev split, and
    the chosen intents' test utterances (all, or a stratified ``test_per_intent`` of them)."""
    import random

    from helpers.common.data import load_banking77

    train_all, test_all = load_banking77("train"), load_banking77("test")
    if n_intents is not None and (isinstance(n_intents, bool) or not isinstance(n_intents, int)
                                  or not 2 <= n_intents <= train_all.num_classes):
        raise ValueError(f"n_intents must be None (all) or an int from 2 to {train_all.num_classes}, got {n_intents!r}.")
    if not isinstance(dev_per_intent, int) or not 1 <= dev_per_intent < shots:
        raise ValueError(f"dev_per_intent must be an int from 1 to shots - 1 = {shots - 1}, got {dev_per_intent!r}.")
    names = train_all.names if n_intents is None else tuple(sorted(random.Random(seed).sample(train_all.names, n_intents)))
    drawn = train_all.only(names).sample(shots, seed=seed)
    train, dev = drawn.split_off(dev_per_intent, seed=seed)
    test = test_all.only(names)
    if test_per_intent is not None:
        test = test.sample(test_per_intent, seed=seed)
    return FewShotTask(train, dev, test, names, shots)


def lesson_setup(budget) -> tuple[FewShotTask, FinetuneConfig, tuple]:
    """``(task, recipe, seeds)`` that lessons 08 and 10 share, for a :class:`~helpers.common.budget.Budget`,
    so that lesson 10 finds lesson 08's runs in the disk cache. Full: 10 of the 77 intents, 10-shot
    (8 train + 2 dev per intent), 20 test utterances per intent, batches of 8, at most 30 epochs (300
    steps), 5 seeds: sized so that lesson 08 fits in five minutes on 2 CPU cores. Quick:
    5 intents, 6-shot, 6 test utterances per intent, 2 epochs, 2 seeds (a check that the code runs)."""
    task = few_shot_task(**budget.pick(dict(n_intents=10, shots=10, dev_per_intent=2, test_per_intent=20),
                                       dict(n_intents=5, shots=6, dev_per_intent=2, test_per_intent=6)))
    recipe = budget.pick(FinetuneConfig(max_epochs=30), FinetuneConfig(max_epochs=2, head_steps=100))
    return task, recipe, budget.pick((0, 1, 2, 3, 4), (0, 1))


# -- a disk cache, so that lesson 10 reuses lesson 08's runs (and a rerun of a lesson is fast) --------
def cache_dir() -> Path | None:
    """Where fine-tuning runs are kept: ``finetune`` in the course cache
    (:func:`~helpers.model.paths.course_cache`); ``COURSE_CACHE=off`` keeps nothing."""
    from helpers.model.paths import course_cache

    root = course_cache()
    return None if root is None else root / "finetune"


def run_key(bert_key: str, train, dev, test, strategy: str, seed: int, config: FinetuneConfig) -> str:
    """A hash of everything a run depends on: the model's weights (``bert_key``, from
    :func:`~helpers.practice.compute.model_key`), the three splits, the strategy, the seed, the recipe,
    the engine's version and torch's."""
    blob = json.dumps([ENGINE_VERSION, torch.__version__, bert_key, strategy, seed, asdict(config),
                       [(list(s.texts), list(s.labels), list(s.names)) for s in (train, dev, test)]])
    return hashlib.sha256(blob.encode()).hexdigest()[:24]


def _save(folder: Path, run: FinetuneRun) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    meta = {k: v for k, v in asdict(run).items() if k not in ("model", "correct", "from_cache")}
    torch.save({"meta": meta, "correct": run.correct}, folder / "run.pt")
    if run.model is not None:  # the weights that can differ from the loaded model's
        state = {k: v.cpu() for k, v in run.model.state_dict().items() if k != "bert.embeddings.word_embeddings.weight"}
        torch.save(state, folder / "model.pt")


def _load(folder: Path, bert, num_classes: int, keep_model: bool) -> FinetuneRun | None:
    if not (folder / "run.pt").exists() or (keep_model and not (folder / "model.pt").exists()):
        return None
    saved = torch.load(folder / "run.pt", weights_only=True)
    meta = saved["meta"]
    meta["dev_curve"] = [tuple(point) for point in meta["dev_curve"]]
    model = None
    if keep_model:
        model = SentenceClassifier(copy.deepcopy(bert), num_classes)
        missing, unexpected = model.load_state_dict(torch.load(folder / "model.pt", weights_only=True), strict=False)
        if unexpected or missing != ["bert.embeddings.word_embeddings.weight"]:
            return None
        model.eval()
    return FinetuneRun(correct=saved["correct"], from_cache=True, model=model, **meta)


@dataclass
class FinetuneStudy:
    """Every strategy run once per seed on the same splits: ``runs[strategy]`` is a list over seeds."""

    config: FinetuneConfig
    seeds: tuple
    runs: dict

    @property
    def strategies(self) -> tuple:
        return tuple(self.runs)

    def accuracy(self, strategy: str) -> SeededAccuracy:
        return SeededAccuracy(torch.stack([r.correct for r in self.runs[strategy]]), self.seeds)

    def accuracies(self) -> dict:
        return {s: self.accuracy(s) for s in self.runs}

    def seconds(self, strategy: str) -> list[float]:
        return [r.seconds for r in self.runs[strategy]]

    def steps(self, strategy: str) -> list[int]:
        return [r.steps for r in self.runs[strategy]]

    def converged(self, strategy: str) -> int:
        return sum(r.converged for r in self.runs[strategy])

    def from_cache(self) -> int:
        return sum(r.from_cache for runs in self.runs.values() for r in runs)

    def models(self, strategy: str) -> list:
        return [r.model for r in self.runs[strategy]]


def finetune_study(tokenizer, bert, train, dev, test, strategies=FINETUNE_STRATEGIES, seeds=(0, 1, 2, 3, 4), *,
                   config: FinetuneConfig = FinetuneConfig(), keep_models=(), progress: bool = True) -> FinetuneStudy:
    """:func:`finetune_run` for every strategy and seed, seed by seed (so a slow spell of a shared
    machine hits every strategy alike), each run read from the disk cache (:func:`cache_dir`) when
    an identical run was made before and written to it otherwise. ``keep_models``: the strategies
    whose trained models are kept (lesson 10 reads the fine-tuned layers)."""
    from helpers.practice.compute import model_key

    strategies, seeds, keep = tuple(strategies), tuple(seeds), set(keep_models)
    if not strategies or not seeds or len(set(seeds)) != len(seeds):
        raise ValueError("give at least one strategy and one seed, the seeds distinct.")
    unknown = [s for s in strategies + tuple(keep) if s not in FINETUNE_STRATEGIES]
    if unknown:
        raise ValueError(f"unknown strategies {unknown}: choose from {FINETUNE_STRATEGIES}.")
    bert_key, root = model_key(bert), cache_dir()
    runs = {s: [] for s in strategies}
    bar = ProgressBar(len(seeds) * len(strategies), desc="fine-tuning runs", disable=not progress)
    for seed in seeds:
        for strategy in strategies:
            folder = None if root is None else root / run_key(bert_key, train, dev, test, strategy, seed, config)
            run = None if folder is None else _load(folder, bert, train.num_classes, strategy in keep)
            if run is None:
                run = finetune_run(tokenizer, bert, train, dev, test, strategy, seed=seed, config=config,
                                   keep_model=strategy in keep)
                if folder is not None:
                    _save(folder, run)
            runs[strategy].append(run)
            bar.update()
    bar.close()
    return FinetuneStudy(config, seeds, runs)


@torch.no_grad()
def classifier_correct(tokenizer, clf, split, max_length: int = 64) -> torch.Tensor:
    """``[n]`` booleans on the CPU: which items of ``split`` the classifier gets right."""
    return _score(clf, _Tokens(tokenizer, split, max_length))[1]


# ---------------------------------------------------------------------------------------------
# Lesson 10: what fine-tuning changes, layer by layer -- linear CKA on token vectors (with a
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


def baseline_verdict(accuracy: dict, baseline: str = FROZEN, margin: float | None = None) -> str:
    """Each strategy against the baseline that fine-tunes nothing, paired on the same test items and
    seeds (:func:`~helpers.classify.compute.paired_comparison`), one Bonferroni family over the
    strategies: which beat it, which fall below it, which are inconclusive -- and a closing verdict."""
    from helpers.classify.compute import _join, paired_comparison, points

    if baseline not in accuracy or len(accuracy) < 2:
        raise ValueError(f"accuracy must hold {baseline!r} and at least one other strategy.")
    others = [s for s in accuracy if s != baseline]
    comps = {s: paired_comparison(accuracy[s], accuracy[baseline]) for s in others}
    family = len(others)
    verdicts = {s: comps[s].verdict(s, baseline, margin=margin, family=family) for s in others}
    above = [s for s in others if verdicts[s].kind == "higher"]
    below = [s for s in others if verdicts[s].kind == "lower"]
    same = [s for s in others if verdicts[s].kind == "equivalent"]
    open_ = [s for s in others if verdicts[s].kind == "inconclusive"]
    lines = [f"each strategy minus '{baseline}', paired on the same test items and seeds "
             f"({comps[others[0]].method}; intervals and p Bonferroni-adjusted over {family}): "
             + "; ".join(f"{s} {points(verdicts[s].difference)} (p {verdicts[s].p_value:.2g})" for s in others) + "."]
    if above:
        lines.append(f"above the baseline: {_join(above)}.")
    if below:
        lines.append(f"below the baseline: {_join(below)}.")
    if same:
        lines.append(f"equivalent within +/-{100 * margin:.1f} points: {_join(same)}.")
    if open_:
        lines.append(f"inconclusive: {_join(open_)}.")
    lines.append("verdict: " + (f"{_join(above)} beat{'s' if len(above) == 1 else ''} not fine-tuning at all here"
                                if above else "no fine-tuning strategy is shown to beat the frozen encoder with a trained "
                                "probe on this data" + (f"; {_join(below)} fall{'s' if len(below) == 1 else ''} below it"
                                                        if below else "")) + ".")
    return " ".join(lines)
