"""Fine-tuning BERT with a classification head (:mod:`helpers.finetuning`, lessons 11 and 14): what fine-tuning changed, layer by layer (lesson 14).

* linear CKA between the token vectors of a layer before and after (:func:`linear_cka`,
  :func:`token_vectors`, :func:`layer_cka`, :func:`weighted_cka`), with a jackknife over utterances
  (:func:`cka_jackknife`, :func:`jackknife_interval`);
* the relative weight change of each layer (:func:`layer_weight_norms`,
  :func:`relative_weight_change`); :func:`layer_change` -> :class:`LayerChange`;
* the swap-in test (:func:`swap_in_correct`): one layer's pre-trained weights put back.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from statistics import NormalDist

import torch

from helpers.classify.compute import encode_batch
from helpers.common.stats import Interval
from helpers.finetuning.strategies import FinetuneRun, layer_groups
from helpers.finetuning.study import classifier_correct
from helpers.model.trace import device_of, model_device


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

    def by_text(A):  # A @ G for the one-hot token -> text matrix G, without forming G: O(size of A)
        return torch.zeros(A.shape[0], n_texts, dtype=A.dtype, device=A.device).index_add_(1, inverse, A)

    def blocks(A):  # G^T A G: the sum of A's entries over each pair of texts
        return by_text(by_text(A).T).T

    w, N = C[:, inverse], C @ torch.bincount(inverse, minlength=n_texts).to(C)  # [B, n] token weights, [B] sums
    X, Y = X - X.mean(0), Y - Y.mean(0)  # CKA ignores shifts; centring first keeps the sums well conditioned
    grams = {"K": X @ X.T, "M": Y @ Y.T}
    per_text = {k: by_text(A) for k, A in grams.items()}  # [n, texts]: each token's sum over each text
    Aw = {k: C @ s.T for k, s in per_text.items()}  # [B, n]: (K w), (M w)
    wAw = {k: (C @ by_text(s.T).T * C).sum(1) for k, s in per_text.items()}  # [B]: w^T K w, w^T M w

    def S(a, b):
        quad = ((C @ blocks(grams[a] * grams[b])) * C).sum(1)
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
