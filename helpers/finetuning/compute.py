"""Fine-tuning BERT with a classification head (lesson 08): strategies that treat layers
differently. Every run trains a ``copy.deepcopy`` of the model, so the cached model that
:func:`helpers.model.loading.load_model` hands out is never changed."""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass

import torch

from helpers.common.progress import ProgressBar

from helpers.classify.compute import SeededAccuracy, encode_batch, mean_pool


FINETUNE_STRATEGIES = ("full", "freeze lower half", "layer-wise lr decay", "gradual unfreezing")


class SentenceClassifier(torch.nn.Module):
    """BERT + mean pooling of the last layer + a linear layer: ``logits = W mean(h_L) + b``."""

    def __init__(self, bert, num_classes: int):
        super().__init__()
        self.bert = bert
        self.classifier = torch.nn.Linear(bert.config.hidden_size, num_classes)

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


@dataclass
class FinetuneResult:
    strategy: str
    accuracy: float
    seconds: float
    trainable_params: int  # at the end of training
    model: SentenceClassifier
    correct: torch.Tensor | None = None  # [n_test] booleans: which test items it got right


def finetune(tokenizer, bert, train, test, strategy: str = "full", *, epochs: int = 2, lr: float = 1e-4,
             batch_size: int = 16, max_length: int = 16, seed: int = 0, progress: bool = True) -> FinetuneResult:
    """Fine-tune a deep copy of ``bert`` + a linear head on an :class:`~helpers.common.data.IntentSplit`."""
    if strategy not in FINETUNE_STRATEGIES:
        raise ValueError(f"strategy {strategy!r} is not valid: choose one of {FINETUNE_STRATEGIES}.")
    if isinstance(epochs, bool) or not isinstance(epochs, int) or epochs < 1:
        raise ValueError(f"epochs must be a positive int, got {epochs!r}.")
    torch.manual_seed(seed)
    clf = SentenceClassifier(copy.deepcopy(bert), train.num_classes)
    groups = layer_groups(clf.bert)
    L = len(groups) - 2
    # The word-embedding matrix (vocab x H) is most of a small BERT's weights and gets sparse
    # gradients: freezing it in every strategy keeps CPU steps fast and the comparison fair.
    clf.bert.embeddings.word_embeddings.weight.requires_grad_(False)
    groups[0] = [p for p in groups[0] if p is not clf.bert.embeddings.word_embeddings.weight]
    if strategy == "freeze lower half":
        for params in groups[: 1 + L // 2]:  # embeddings + layers 1..L//2
            _set_trainable(params, False)
        opt = torch.optim.AdamW([p for p in clf.parameters() if p.requires_grad], lr=lr)
    if strategy == "layer-wise lr decay":
        opt = torch.optim.AdamW(llrd_param_groups(clf, lr))
    elif strategy != "freeze lower half":
        opt = torch.optim.AdamW([p for p in clf.parameters() if p.requires_grad], lr=lr)
    enc = encode_batch(tokenizer, train.texts, max_length)
    y = torch.tensor(train.labels)
    g = torch.Generator().manual_seed(seed)
    steps_per_epoch = (len(y) + batch_size - 1) // batch_size
    start = time.perf_counter()
    clf.train()
    bar = ProgressBar(epochs * steps_per_epoch, desc=strategy, disable=not progress)
    for epoch in range(epochs):
        if strategy == "gradual unfreezing":
            # epoch 0 trains the head only; each later epoch unfreezes the next block of layers from the top
            n_open = round(epoch * (L + 1) / max(epochs - 1, 1))
            for depth, params in enumerate(groups[:-1]):
                _set_trainable(params, depth > L - n_open)
        for idx in torch.randperm(len(y), generator=g).split(batch_size):
            loss = torch.nn.functional.cross_entropy(
                clf(enc["input_ids"][idx], enc["attention_mask"][idx]), y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()  # AdamW skips parameters whose grad is None (frozen ones)
            bar.update()
    bar.close()
    seconds = time.perf_counter() - start
    clf.eval()
    right = classifier_correct(tokenizer, clf, test, max_length)
    trainable = sum(p.numel() for p in clf.parameters() if p.requires_grad)
    return FinetuneResult(strategy, right.float().mean().item(), seconds, trainable, clf, right)


def warm_up(tokenizer, bert, texts, *, max_length: int = 16, batch_size: int = 16) -> None:
    """One untimed forward + backward on a throwaway copy of ``bert``.

    The first training step in a process pays one-off costs (memory allocation, kernel
    selection); without this, whichever run is timed first looks slower for no reason of its own.
    """
    clf = SentenceClassifier(copy.deepcopy(bert), 2)
    clf.train()
    enc = encode_batch(tokenizer, list(texts)[:batch_size], max_length)
    clf(enc["input_ids"], enc["attention_mask"]).sum().backward()


@dataclass
class FinetuneComparison:
    """Every strategy run once per seed: accuracies with intervals, seconds per run, and the
    seed-0 model of each strategy (the others are dropped to save memory)."""

    accuracy: dict  # strategy -> SeededAccuracy
    seconds: dict  # strategy -> [seconds per seed]
    trainable_params: dict  # strategy -> trainable parameters at the end
    models: dict  # strategy -> SentenceClassifier of the first seed


def compare_finetuning(tokenizer, bert, train, test, strategies=FINETUNE_STRATEGIES, seeds=(0, 1, 2), *,
                       progress: bool = True, **kw) -> FinetuneComparison:
    """:func:`finetune` every strategy once per seed, timed honestly.

    A warm-up step runs first (:func:`warm_up`), and the runs take turns (seed 0 of every
    strategy, then seed 1, ...) so that a slow spell of a shared machine hits every strategy
    alike instead of the one that happened to run then.
    """
    strategies, seeds = tuple(strategies), tuple(seeds)
    if not seeds or not strategies:
        raise ValueError("give at least one strategy and one seed.")
    warm_up(tokenizer, bert, train.texts, max_length=kw.get("max_length", 16), batch_size=kw.get("batch_size", 16))
    correct = {s: [] for s in strategies}
    seconds = {s: [] for s in strategies}
    trainable, models = {}, {}
    bar = ProgressBar(len(seeds) * len(strategies), desc="fine-tuning runs", disable=not progress)
    for seed in seeds:
        for strategy in strategies:
            run = finetune(tokenizer, bert, train, test, strategy, seed=seed, progress=False, **kw)
            correct[strategy].append(run.correct)
            seconds[strategy].append(run.seconds)
            trainable[strategy] = run.trainable_params
            if seed == seeds[0]:
                models[strategy] = run.model
            bar.update()
    bar.close()
    accuracy = {s: SeededAccuracy(torch.stack(c), seeds) for s, c in correct.items()}
    return FinetuneComparison(accuracy, seconds, trainable, models)


@torch.no_grad()
def classifier_correct(tokenizer, clf, split, max_length: int = 16) -> torch.Tensor:
    """``[n]`` booleans: which items of ``split`` the classifier gets right."""
    enc = encode_batch(tokenizer, split.texts, max_length)
    pred = clf(enc["input_ids"], enc["attention_mask"]).argmax(-1)
    return pred == torch.tensor(split.labels)


@torch.no_grad()
def classifier_accuracy(tokenizer, clf, split, max_length: int = 16) -> float:
    enc = encode_batch(tokenizer, split.texts, max_length)
    pred = clf(enc["input_ids"], enc["attention_mask"]).argmax(-1)
    return (pred == torch.tensor(split.labels)).float().mean().item()
