"""Fine-tuning BERT with a classification head (lesson 08): strategies that treat layers
differently. Every run trains a ``copy.deepcopy`` of the model, so the cached model that
:func:`helpers.model.loading.load_model` hands out is never changed."""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass
from statistics import NormalDist

import torch

from helpers.common.progress import ProgressBar
from helpers.common.stats import Interval

from helpers.classify.compute import HEAD_STEPS, SeededAccuracy, encode_batch, mean_pool, train_head
from helpers.model.trace import device_of, model_device, synchronize


FROZEN = "frozen encoder, head only"
FINETUNE_STRATEGIES = ("full", "freeze lower half", "layer-wise lr decay", "gradual unfreezing", FROZEN)
# The head-only baseline trains its head as lesson 07 does (standardized features, full-batch
# Adam at lr 0.01) for HEAD_STEPS (from helpers.classify.compute), the steps that reach an
# independent solver there.


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


@dataclass
class FinetuneResult:
    strategy: str
    accuracy: float
    seconds: float
    trainable_params: int  # at the end of training
    model: SentenceClassifier
    correct: torch.Tensor | None = None  # [n_test] booleans: which test items it got right


def _frozen_head_only(tokenizer, clf, train, max_length: int, head_steps: int, seed: int) -> None:
    """The baseline: no BERT weight changes; a linear head on the mean-pooled last layer, trained
    like lesson 07's (:func:`~helpers.classify.compute.train_head`) and folded into
    ``clf.classifier``: ``W ((x - mu) / sigma) + b = (W / sigma) x + (b - (W / sigma) mu)``."""
    _set_trainable(clf.bert.parameters(), False)
    clf.bert.eval()
    enc = encode_batch(tokenizer, train.texts, max_length, device=model_device(clf))
    with torch.no_grad():
        X = mean_pool(clf.bert(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"]).last_hidden_state,
                      enc["attention_mask"])
    head = train_head(X, train.labels, train.num_classes, epochs=head_steps, seed=seed, progress=False)
    with torch.no_grad():
        W = head.classifier.weight / head.sigma
        clf.classifier.weight.copy_(W)
        clf.classifier.bias.copy_(head.classifier.bias - W @ head.mu)


def finetune(tokenizer, bert, train, test, strategy: str = "full", *, epochs: int = 2, lr: float = 1e-4,
             batch_size: int = 16, max_length: int = 16, seed: int = 0, progress: bool = True,
             head_steps: int = HEAD_STEPS) -> FinetuneResult:
    """Fine-tune a deep copy of ``bert`` + a linear head on an :class:`~helpers.common.data.IntentSplit`.

    ``"frozen encoder, head only"`` (:data:`FROZEN`) is the baseline that fine-tunes nothing: the
    encoder stays as loaded and only the head is trained, as in lesson 07 (standardized features,
    full-batch Adam at lr 0.01 for ``head_steps`` steps; ``epochs``, ``lr`` and ``batch_size`` do not
    apply to it). Its seconds include the forward pass that computes its features."""
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
    if strategy == FROZEN:
        synchronize()  # on a GPU, time the work itself, not only its launch
        start = time.perf_counter()
        _frozen_head_only(tokenizer, clf, train, max_length, head_steps, seed)
        synchronize()
        seconds = time.perf_counter() - start
        clf.eval()
        right = classifier_correct(tokenizer, clf, test, max_length)
        trainable = sum(p.numel() for p in clf.classifier.parameters())
        return FinetuneResult(strategy, right.float().mean().item(), seconds, trainable, clf, right)
    enc = encode_batch(tokenizer, train.texts, max_length, device=model_device(clf))
    y = torch.tensor(train.labels, device=model_device(clf))
    g = torch.Generator().manual_seed(seed)
    steps_per_epoch = (len(y) + batch_size - 1) // batch_size
    synchronize()  # on a GPU, time the training itself, not only its launch
    start = time.perf_counter()
    clf.train()
    bar = ProgressBar(epochs * steps_per_epoch, desc=strategy, disable=not progress)
    for epoch in range(epochs):
        if strategy == "gradual unfreezing":
            # epoch 0 trains the head only; each later epoch unfreezes the next block of layers from the top
            n_open = round(epoch * (L + 1) / max(epochs - 1, 1))
            for depth, params in enumerate(groups[:-1]):
                _set_trainable(params, depth > L - n_open)
        for idx in torch.randperm(len(y), generator=g).to(y.device).split(batch_size):
            loss = torch.nn.functional.cross_entropy(
                clf(enc["input_ids"][idx], enc["attention_mask"][idx]), y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()  # AdamW skips parameters whose grad is None (frozen ones)
            bar.update()
    bar.close()
    synchronize()
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
    enc = encode_batch(tokenizer, list(texts)[:batch_size], max_length, device=model_device(clf))
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
    enc = encode_batch(tokenizer, split.texts, max_length, device=model_device(clf))
    pred = clf(enc["input_ids"], enc["attention_mask"]).argmax(-1)
    return pred == torch.tensor(split.labels, device=pred.device)


@torch.no_grad()
def classifier_accuracy(tokenizer, clf, split, max_length: int = 16) -> float:
    enc = encode_batch(tokenizer, split.texts, max_length, device=model_device(clf))
    pred = clf(enc["input_ids"], enc["attention_mask"]).argmax(-1)
    return (pred == torch.tensor(split.labels, device=pred.device)).float().mean().item()


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
    runs: list[FinetuneResult]
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


def compare_finetuned(tokenizer, bert, train, test, *, seeds=(0, 1, 2), epochs: int = 3, lr: float = 1e-4,
                      batch_size: int = 16, max_length: int = 16, progress: bool = True) -> LayerChange:
    """Fine-tune the whole model (``finetune(..., "full")``) once per seed and compare every
    layer with the pre-trained one on the test utterances' token vectors."""
    seeds = list(seeds)
    if not seeds:
        raise ValueError("give at least one seed.")
    before = token_vectors(tokenizer, bert, test.texts, max_length)
    cka, sizes, moves, runs, after = [], None, [], [], []
    for seed in seeds:
        run = finetune(tokenizer, bert, train, test, "full", epochs=epochs, lr=lr, batch_size=batch_size,
                       max_length=max_length, seed=seed, progress=progress)
        after.append(token_vectors(tokenizer, run.model.bert, test.texts, max_length))
        cka.append(layer_cka(before, after[-1]))
        sizes, moved = layer_weight_norms(bert, run.model.bert)
        moves.append(moved)
        runs.append(run)
    weight_norm = torch.tensor(sizes, dtype=torch.float64)  # cpu: a table of Python floats (results)
    delta_norm = torch.tensor(moves, dtype=torch.float64)  # cpu: a table of Python floats (results)
    cka = torch.tensor(cka)  # cpu: a table of Python floats (results)
    return LayerChange(seeds, cka, delta_norm / weight_norm, [r.accuracy for r in runs], runs, before,
                       after, weight_norm, delta_norm, token_owners(tokenizer, test.texts, max_length))


def baseline_verdict(accuracy: dict, baseline: str = FROZEN) -> str:
    """Each strategy against the baseline that fine-tunes nothing, paired on the same test items
    and seeds (:func:`~helpers.classify.compute.paired_difference`): which beat it, which fall
    below it, which this test set cannot tell from it -- and a closing verdict."""
    from helpers.classify.compute import _join, paired_difference, points
    from helpers.common.stats import differs

    if baseline not in accuracy or len(accuracy) < 2:
        raise ValueError(f"accuracy must hold {baseline!r} and at least one other strategy.")
    diffs = {s: paired_difference(a, accuracy[baseline]) for s, a in accuracy.items() if s != baseline}
    above = [s for s, d in diffs.items() if differs(d) and d.estimate > 0]
    below = [s for s, d in diffs.items() if differs(d) and d.estimate < 0]
    lines = [f"each strategy minus '{baseline}', paired on the same test items and seeds: "
             + "; ".join(f"{s} {points(d)}" for s, d in diffs.items()) + "."]
    if above:
        lines.append(f"above the baseline (the interval excludes 0): {_join(above)}.")
    if below:
        lines.append(f"below the baseline (the interval excludes 0): {_join(below)}.")
    lines.append("verdict: " + (f"{_join(above)} beat{'s' if len(above) == 1 else ''} not fine-tuning at all here"
                                if above else "no fine-tuning strategy beats the frozen encoder with a trained head "
                                "on this data" + (f"; {_join(below)} fall{'s' if len(below) == 1 else ''} below it"
                                                  if below else "")) + ".")
    return " ".join(lines)
