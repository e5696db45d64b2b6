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


# ---------------------------------------------------------------------------------------------
# Lesson 10: what fine-tuning changes, layer by layer -- linear CKA on token vectors and the
# relative weight change of every layer, pre-trained model vs a fine-tuned copy.

def _as_float_matrix(X, name: str) -> torch.Tensor:
    X = torch.as_tensor(X)
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


@torch.no_grad()
def token_vectors(tokenizer, bert, texts, max_length: int = 32, batch_size: int = 64) -> torch.Tensor:
    """``[L+1, n_tokens, H]``: the vector of every real token (no [CLS], [SEP] or padding) of
    ``texts`` at every layer, in a fixed order (text by text, token by token)."""
    chunks = []
    for start in range(0, len(texts), batch_size):
        enc = encode_batch(tokenizer, texts[start:start + batch_size], max_length)
        special = torch.tensor([tokenizer.get_special_tokens_mask(ids, already_has_special_tokens=True)
                                for ids in enc["input_ids"].tolist()], dtype=torch.bool)
        keep = enc["attention_mask"].bool() & ~special
        hidden = torch.stack(bert(**enc, output_hidden_states=True, return_dict=True).hidden_states)
        chunks.append(hidden[:, keep])
    return torch.cat(chunks, 1).float()


def layer_cka(before: torch.Tensor, after: torch.Tensor) -> list[float]:
    """Linear CKA between two ``[L+1, n, H]`` stacks, layer by layer (0 = embeddings)."""
    if before.shape[:2] != after.shape[:2]:
        raise ValueError(f"the two stacks must hold the same layers and tokens: {tuple(before.shape)} vs {tuple(after.shape)}.")
    return [linear_cka(b, a) for b, a in zip(before, after)]


def relative_weight_change(before, after) -> list[float]:
    """``||W_after - W_before|| / ||W_before||`` per depth, every parameter of the depth taken
    together (Frobenius norm of all of them): ``[embeddings, layer 1, ..., layer L]``. The word
    embeddings are left out (``finetune`` keeps them frozen)."""
    pairs = list(zip(layer_groups(before)[:-1], layer_groups(after)[:-1]))
    if len(pairs) != before.config.num_hidden_layers + 1 or len(layer_groups(after)) != len(layer_groups(before)):
        raise ValueError("before and after must be BERT models of the same depth.")
    skip = {id(before.embeddings.word_embeddings.weight), id(after.embeddings.word_embeddings.weight)}
    out = []
    for params_b, params_a in pairs:
        diff = base = 0.0
        for pb, pa in zip(params_b, params_a):
            if id(pb) in skip or id(pa) in skip:
                continue
            if pb.shape != pa.shape:
                raise ValueError(f"parameter shapes differ: {tuple(pb.shape)} vs {tuple(pa.shape)}.")
            diff += float((pa.detach().double() - pb.detach().double()).pow(2).sum())
            base += float(pb.detach().double().pow(2).sum())
        out.append((diff / base) ** 0.5)
    return out


@dataclass
class LayerChange:
    """Pre-trained vs fine-tuned, one row per fine-tuning seed: ``cka`` and ``weight_change``
    are ``[seeds, L+1]`` (index 0 = embeddings), ``accuracy`` the test accuracy of each run."""

    seeds: list[int]
    cka: torch.Tensor
    weight_change: torch.Tensor
    accuracy: list[float]
    runs: list[FinetuneResult]
    before: torch.Tensor  # [L+1, n_tokens, H] token vectors of the pre-trained model
    after: list[torch.Tensor]  # the same for each fine-tuned run


def compare_finetuned(tokenizer, bert, train, test, *, seeds=(0, 1, 2), epochs: int = 3, lr: float = 1e-4,
                      batch_size: int = 16, max_length: int = 16, progress: bool = True) -> LayerChange:
    """Fine-tune the whole model (``finetune(..., "full")``) once per seed and compare every
    layer with the pre-trained one on the test utterances' token vectors."""
    seeds = list(seeds)
    if not seeds:
        raise ValueError("give at least one seed.")
    before = token_vectors(tokenizer, bert, test.texts, max_length)
    cka, change, runs, after = [], [], [], []
    for seed in seeds:
        run = finetune(tokenizer, bert, train, test, "full", epochs=epochs, lr=lr, batch_size=batch_size,
                       max_length=max_length, seed=seed, progress=progress)
        after.append(token_vectors(tokenizer, run.model.bert, test.texts, max_length))
        cka.append(layer_cka(before, after[-1]))
        change.append(relative_weight_change(bert, run.model.bert))
        runs.append(run)
    return LayerChange(seeds, torch.tensor(cka), torch.tensor(change), [r.accuracy for r in runs], runs, before, after)
