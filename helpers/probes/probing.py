"""Lesson 14 (:mod:`helpers.probes`): linear probes on every layer, with control tasks and intervals.

* :func:`train_probes` -> :class:`LayerProbes` -- one linear softmax probe per layer **and** per
  label set at once, as one batched matrix product;
* :func:`probe_task` -> :class:`ProbeReport` -- task and control probes over several seeds:
  accuracy, control accuracy and selectivity per layer with bootstrap intervals over test
  sentences (:func:`sentence_bootstrap`); :meth:`ProbeReport.differences` compares two layers on
  the same words and :meth:`ProbeReport.tied_with_best` rests on it;
* :func:`paired_accuracy_change` -- two reports on the same test words (before and after
  fine-tuning), resampling the test sentences once for both;
* :func:`word_probe_report`, :func:`fit_word_probes`, and :func:`sentence_probe_report` (lesson 10's
  sentence-level probe in the same report form).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import torch

from helpers.classify.comparisons import SeededAccuracy, paired_comparison
from helpers.classify.strategies import probe_layers
from helpers.common.progress import ProgressBar
from helpers.common.progress import progress as progress_bar
from helpers.common.stats import (Interval, Replicates, bootstrap_size, cluster_replicates, extreme_family,
                                  family_level, seeds_interval)
from helpers.common.training import BUDGET_EXHAUSTED, CONVERGED, L2_GRID, TrainingRecord, fit_linear, linear_criterion
from helpers.probes.features import WordFeatures, _check_task, control_labels


@dataclass
class LayerProbes:
    """``S`` label sets x ``L+1`` layers of linear probes, trained together.

    ``weight`` is ``[L+1, H, S*C]``: probe ``(s, l)`` is ``weight[l, :, s*C:(s+1)*C]``.
    Inputs are standardised with the training mean ``mu`` and deviation ``sigma`` of each layer."""

    mu: torch.Tensor
    sigma: torch.Tensor
    weight: torch.Tensor
    bias: torch.Tensor
    num_sets: int
    num_classes: int

    @torch.no_grad()
    def predict(self, X: torch.Tensor) -> torch.Tensor:
        """``[L+1, N, H]`` features -> ``[S, L+1, N]`` predicted class ids."""
        if X.ndim != 3 or X.shape[0] != self.weight.shape[0] or X.shape[2] != self.weight.shape[1]:
            raise ValueError(f"X must be [L+1, N, H] = [{self.weight.shape[0]}, N, {self.weight.shape[1]}], got {tuple(X.shape)}.")
        logits = torch.baddbmm(self.bias, (X.float() - self.mu) / self.sigma, self.weight)  # [L+1, N, S*C]
        return logits.unflatten(-1, (self.num_sets, self.num_classes)).argmax(-1).permute(2, 0, 1)


def train_probes(X: torch.Tensor, Y, num_classes: int, *, epochs: int = 8, batch_size: int = 256, lr: float = 0.01,
                 weight_decay: float = 1e-4, seed: int = 0, progress: bool = True, desc: str = "probes") -> LayerProbes:
    """One linear softmax probe per layer and per label set, all in one batched product.

    ``X`` is ``[L+1, N, H]``; ``Y`` is ``[S, N]`` (``S`` label sets, e.g. the task with several
    seeds and their control tasks). The loss is the sum of every probe's mean cross-entropy
    and Adam updates each weight on its own, so every probe trains exactly as if alone.
    Mini-batches of ``batch_size`` words, ``epochs`` passes; label set ``s`` starts from
    weights seeded with ``seed + s``, the mini-batch order is seeded with ``seed``.
    """
    if not isinstance(X, torch.Tensor) or X.ndim != 3:
        raise ValueError(f"X must be a [L+1, N, H] tensor, got {getattr(X, 'shape', type(X))}.")
    Y = torch.as_tensor(Y, dtype=torch.long, device=X.device)
    if Y.ndim == 1:
        Y = Y[None]
    if Y.ndim != 2 or Y.shape[1] != X.shape[1]:
        raise ValueError(f"Y must be [S, N] with N = {X.shape[1]} words, got {tuple(Y.shape)}.")
    if isinstance(num_classes, bool) or not isinstance(num_classes, int) or num_classes < 2:
        raise ValueError(f"num_classes must be an int >= 2, got {num_classes!r}.")
    if int(Y.min()) < 0 or int(Y.max()) >= num_classes:
        raise ValueError(f"labels must lie in 0..{num_classes - 1}.")
    if isinstance(epochs, bool) or not isinstance(epochs, int) or epochs < 1:
        raise ValueError(f"epochs must be a positive int, got {epochs!r}.")
    g = torch.Generator().manual_seed(seed)
    X = X.detach().float()
    n_layers, n, hidden = X.shape
    S, C = Y.shape[0], num_classes
    mu, sigma = X.mean(1, keepdim=True), X.std(1, keepdim=True).clamp(min=1e-6)
    Z = (X - mu) / sigma
    # Each label set's probes get their own seeded initial weights, so a probe's training does
    # not depend on which other label sets share the batch.
    draws = [torch.randn(n_layers, hidden, C, generator=torch.Generator().manual_seed(seed + s)).to(X.device)
             for s in range(S)]  # drawn on the CPU, the same on every device
    W = torch.nn.Parameter(torch.cat(draws, -1) / hidden ** 0.5)
    b = torch.nn.Parameter(torch.zeros(n_layers, 1, S * C, device=X.device))
    opt = torch.optim.Adam([W, b], lr=lr, weight_decay=weight_decay)
    batches = (n + batch_size - 1) // batch_size
    bar = ProgressBar(epochs * batches, desc=desc, disable=not progress)
    for _ in range(epochs):
        for idx in torch.randperm(n, generator=g).to(X.device).split(batch_size):
            logp = torch.baddbmm(b, Z[:, idx], W).unflatten(-1, (S, C)).log_softmax(-1)  # [L+1, B, S, C]
            target = Y[:, idx].T[None, :, :, None].expand(n_layers, -1, -1, 1)  # [L+1, B, S, 1]
            loss = -logp.gather(-1, target).sum() / len(idx)  # sum over probes of each probe's mean loss
            opt.zero_grad()
            loss.backward()
            opt.step()
            bar.update()
    bar.close()
    return LayerProbes(mu, sigma, W.detach(), b.detach(), S, C)


def sentence_replicates(correct: torch.Tensor, sentence: torch.Tensor, *, n_boot: int = 2000,
                        seed: int = 0) -> Replicates:
    """Replicates of the accuracy per layer, resampling **test sentences**: ``correct`` is
    ``[K, L+1, N]`` (K runs -- seeds -- of 0/1 outcomes, or differences of them); the runs are
    averaged per word, and each replicate weighs a word by how often its sentence was drawn (words
    of one sentence are not independent; :func:`~helpers.common.stats.cluster_replicates`)."""
    correct = torch.as_tensor(correct, dtype=torch.float64, device="cpu")  # cpu: float64 bootstrap on results
    if correct.ndim == 2:
        correct = correct[None]
    if correct.ndim != 3 or correct.shape[2] != len(sentence):
        raise ValueError(f"correct must be [K, L+1, N] with N = {len(sentence)}, got {tuple(correct.shape)}.")
    per_word = correct.mean(0).T.cpu().numpy()  # [N, L+1]
    labels = torch.as_tensor(sentence).cpu().numpy()  # cpu: cluster labels for the bootstrap
    return cluster_replicates(per_word, labels, n_boot=n_boot, seed=seed, unit="sentences")


def sentence_bootstrap(correct: torch.Tensor, sentence: torch.Tensor, *, n_boot: int = 2000, seed: int = 0,
                       level: float = 0.95) -> list[Interval]:
    """Accuracy per layer with a bootstrap interval that resamples **test sentences**
    (:func:`sentence_replicates`; the course's small-sample rule included)."""
    return sentence_replicates(correct, sentence, n_boot=n_boot, seed=seed).intervals(level)


@dataclass(frozen=True)
class _Column:
    """One column of paired replicates, read like a :class:`~helpers.classify.compute.PairedComparison`."""

    reps: Replicates
    column: int

    def interval(self, level: float) -> Interval:
        return self.reps.intervals(level)[self.column]

    @property
    def p_value(self) -> float:
        est = self.reps.estimate[self.column]
        if est == 0 and not self.reps.boots[:, self.column].any():
            return 1.0
        return float(self.reps.p_values()[self.column])


@dataclass
class ProbeReport:
    """Per layer (0 = embeddings .. L): task accuracy, control accuracy and selectivity, each an
    :class:`~helpers.common.stats.Interval` over test sentences (mean of the seeds), and the
    range of the task accuracy over the seeds.

    ``task_correct`` (and ``control_correct``) keep every seed's 0/1 outcome on every test item,
    so two layers can be compared **paired**, on the same items (:meth:`differences`).
    ``pairing`` says how: ``"sentences"`` (word tasks) resamples the test sentences once for
    both layers, like :func:`sentence_bootstrap`; ``"seeds"`` (lesson 10's sentence probes)
    pairs seed ``i`` with seed ``i`` and spans every pair's interval, exactly as lesson 10's
    ``compare_paired`` does, so both lessons call the same layers tied."""

    task: str
    classes: tuple[str, ...]
    accuracy: list[Interval]
    control: list[Interval] | None
    selectivity: list[Interval] | None
    seed_range: list[Interval]
    majority: float
    n_train: int
    n_test: int
    probes: LayerProbes | None = field(default=None, repr=False)  # the trained probes (set 0 = task, seed 0)
    task_correct: torch.Tensor | None = field(default=None, repr=False)  # [seeds, L+1, n_test] 0/1 outcomes
    test_sentence: torch.Tensor | None = field(default=None, repr=False)  # [n_test] sentence of each test word
    control_correct: torch.Tensor | None = field(default=None, repr=False)  # [seeds, L+1, n_test] control outcomes
    pairing: str = "sentences"
    records: list = field(default_factory=list, repr=False)  # TrainingRecord of every probe (the training contract)
    train_accuracy: list | None = None  # per layer: the task probe's accuracy on its own training words
    control_train_accuracy: list | None = None  # per layer: the control probes' (mean over seeds)

    @property
    def num_layers(self) -> int:
        return len(self.accuracy) - 1

    def measure(self, name: str) -> list[Interval]:
        values = {"accuracy": self.accuracy, "control": self.control, "selectivity": self.selectivity}
        if name not in values or values[name] is None:
            valid = [k for k, v in values.items() if v is not None]
            raise ValueError(f"measure {name!r} is not available for {self.task!r}: choose one of {valid}.")
        return values[name]

    def best_layer(self, measure: str = "accuracy") -> int:
        values = self.measure(measure)
        return max(range(len(values)), key=lambda l: values[l].estimate)

    def _outcomes(self, measure: str) -> torch.Tensor:
        """``[seeds, L+1, n_test]`` per-item outcomes whose mean is ``measure``."""
        self.measure(measure)
        if self.task_correct is None or self.test_sentence is None:
            raise ValueError("this report keeps no per-item outcomes, so its layers cannot be compared paired: "
                             "make it with word_probe_report or sentence_probe_report.")
        if measure == "accuracy":
            return self.task_correct.double()
        if self.control_correct is None:
            raise ValueError(f"this report keeps no per-item control outcomes: {measure!r} cannot be compared paired.")
        if measure == "control":
            return self.control_correct.double()
        return self.task_correct.double() - self.control_correct.double()

    def _check_reference(self, reference, outcomes) -> None:
        if isinstance(reference, bool) or not isinstance(reference, int) or not 0 <= reference < outcomes.shape[1]:
            raise ValueError(f"reference must be a layer in 0..{outcomes.shape[1] - 1}, got {reference!r}.")

    def _comparisons(self, reference: int, measure: str):
        """Per layer, an object with ``interval(level)`` and ``p_value`` for layer ``l`` minus
        ``reference``, paired on the same test items (see ``pairing``)."""
        outcomes = self._outcomes(measure)
        self._check_reference(reference, outcomes)
        if self.pairing == "seeds":
            runs = [SeededAccuracy(outcomes[:, l] > 0.5, tuple(range(len(outcomes)))) for l in range(outcomes.shape[1])]
            return [paired_comparison(run, runs[reference]) for run in runs]
        if self.pairing != "sentences":
            raise ValueError(f"pairing must be 'sentences' or 'seeds', got {self.pairing!r}.")
        diff = outcomes.mean(0) - outcomes.mean(0)[reference]  # [L+1, n_test]: one bootstrap for every layer
        reps = sentence_replicates(diff[None], self.test_sentence,
                                   n_boot=bootstrap_size(extreme_family(outcomes.shape[1])))
        return [_Column(reps, l) for l in range(outcomes.shape[1])]

    def differences(self, reference: int, measure: str = "accuracy", level: float = 0.95) -> list[Interval]:
        """Per layer ``l``: ``measure`` of layer ``l`` minus that of layer ``reference``, paired on
        the same test items (see ``pairing``), at ``level``; the two differ when it excludes 0."""
        return [c.interval(level) for c in self._comparisons(reference, measure)]

    def p_values(self, reference: int, measure: str = "accuracy") -> list[float]:
        """Per layer: the two-sided p-value of "layer ``l`` and ``reference`` score the same", from the
        same paired resampling as :meth:`differences` (1.0 for the reference itself; not adjusted)."""
        return [1.0 if l == reference else float(c.p_value) for l, c in enumerate(self._comparisons(reference, measure))]

    def tied_with_best(self, measure: str = "accuracy") -> list[int]:
        """The best layer and every layer **not shown lower** than it: each other layer minus the best,
        paired on the same test items; the best is picked by the data, so its interval is read at the
        level of a Bonferroni family over every pair of layers."""
        best = self.best_layer(measure)
        family = extreme_family(len(self.measure(measure)))
        diffs = self.differences(best, measure, level=family_level(family))
        return sorted(l for l, d in enumerate(diffs) if l == best or d.high >= 0)

    def gain_over_embeddings(self, measure: str = "accuracy") -> Interval:
        """Best layer minus layer 0 (the embeddings), paired on the same test items."""
        return self.differences(0, measure)[self.best_layer(measure)]


def probe_task(train: WordFeatures, y_train, test: WordFeatures, y_test, classes, *, seeds=(0, 1, 2),
               control_train=None, control_test=None, progress: bool = True, desc: str = "probes",
               dev_fraction: float = 0.2, l2=L2_GRID, **train_kw) -> ProbeReport:
    """The task probe and, when given, the control probes (``[K, N]`` control labels, one row per
    seed) on every layer at once, evaluated on ``test``.

    By the course's training contract (:mod:`helpers.common.training`): ``dev_fraction`` of the
    training **sentences** (seeded) become a dev split; every probe -- task and control alike --
    is fitted by full-batch L-BFGS from zero to the same gradient tolerance
    (:func:`~helpers.common.training.fit_linear`), with the one L2 strength from ``l2`` that the
    task probe's dev loss, summed over layers, chose for every layer (the control probes take the task's, as in Hewitt &
    Liang 2019: same capacity, so selectivity measures the representation), and the report keeps
    every probe's record and training accuracy. From zero the task probe has one optimum, the
    same for every seed; the control probes differ by seed (each seed draws its own control
    labels). ``train_kw`` (``epochs``, ``lr``, ...) asks instead for the old fixed-epoch
    mini-batch Adam training (:func:`train_probes`), which reports no convergence."""
    seeds = list(seeds)
    if len(seeds) < 2:
        raise ValueError("give at least two seeds: the report shows the spread over seeds.")
    device = train.vectors.device
    y_train, y_test = torch.as_tensor(y_train, device=device), torch.as_tensor(y_test, device=device)
    with_control = control_train is not None
    if with_control:
        control_train = torch.as_tensor(control_train, device=device)
        control_test = torch.as_tensor(control_test, device=device)
        if control_train.shape[0] != len(seeds) or control_test.shape[0] != len(seeds):
            raise ValueError(f"give one row of control labels per seed ({len(seeds)}).")
    K = len(seeds)
    records, train_acc, control_train_acc = [], None, None
    if train_kw:  # the old recipe, on request
        Y = [y_train] * K + (list(control_train) if with_control else [])
        probes = train_probes(train.vectors, torch.stack(Y), len(classes), seed=seeds[0], progress=progress,
                              desc=desc, **train_kw)
        pred = probes.predict(test.vectors)  # [S, L+1, N]
        task_pred, control_pred = pred[:K], pred[K:]
    else:
        probes, records, train_accs = fit_word_probes(
            train, torch.stack([y_train] + (list(control_train) if with_control else [])), len(classes),
            dev_fraction=dev_fraction, l2=l2, l2_from=0 if with_control else None, one_l2=with_control,
            names=["task"] + ([f"control, seed {s}" for s in seeds] if with_control else []), desc=desc)
        pred = probes.predict(test.vectors)  # [1 + K, L+1, N]
        task_pred, control_pred = pred[:1].expand(K, -1, -1), pred[1:]
        train_acc = train_accs[0].tolist()
        if with_control:
            control_train_acc = train_accs[1:].mean(0).tolist()
    task_ok = (task_pred == y_test).double()
    accuracy = sentence_bootstrap(task_ok, test.sentence)
    seed_range = [seeds_interval(task_ok[:, l].mean(1)) for l in range(task_ok.shape[1])]
    control = selectivity = None
    if with_control:
        control_ok = (control_pred == control_test[:, None, :]).double()
        control = sentence_bootstrap(control_ok, test.sentence)
        selectivity = sentence_bootstrap(task_ok - control_ok, test.sentence)
    majority = (y_test == torch.bincount(y_train).argmax()).double().mean().item()
    return ProbeReport("", tuple(classes), accuracy, control, selectivity, seed_range, majority, len(train), len(test),
                       probes, task_ok, test.sentence, control_ok if with_control else None, records=records,
                       train_accuracy=train_acc, control_train_accuracy=control_train_acc)


def fit_word_probes(train: WordFeatures, Y, num_classes: int, *, dev_fraction: float = 0.2, l2=L2_GRID,
                    names=None, desc: str = "probes", seed: int = 0,
                    l2_from: int | None = None, one_l2: bool = False) -> tuple[LayerProbes, list, torch.Tensor]:
    """``(probes, records, train_accuracy [S, L+1])``: one linear probe per layer and label set
    (``Y`` ``[S, N]``) by the training contract: ``dev_fraction`` of the training sentences (drawn
    with ``seed``) held out as the dev split, features standardized with the rest, one batched
    :func:`~helpers.common.training.fit_linear` over every layer, label set and L2 strength, each
    probe's strength chosen on its dev loss -- or, with ``l2_from = k``, every label set's probe at
    a layer takes the strength label set ``k``'s dev loss chose there (Hewitt & Liang 2019 give the
    control probe the task probe's hyperparameters: a control task cannot generalise, so its own
    dev loss would always pick the strongest penalty and selectivity would compare probes of
    different capacity). ``train_accuracy`` is each chosen probe's accuracy on the words it was
    fitted on. ``one_l2`` chooses one strength per label set for **all** layers (the lowest dev loss
    summed over layers), so a profile over layers never mixes penalties: a selectivity dip where the
    chosen strength switched would be the penalty's, not the representation's. A strength chosen at
    either end of the grid is flagged in its record ("at the grid's edge")."""
    Y = torch.as_tensor(Y, dtype=torch.long, device=train.vectors.device)
    Y = Y[None] if Y.ndim == 1 else Y
    sentences = sorted(set(train.sentence.tolist()))
    if len(sentences) < 2:
        raise ValueError("the dev split is carved from training sentences: give at least two.")
    order = torch.randperm(len(sentences), generator=torch.Generator().manual_seed(seed)).tolist()  # cpu: seeded ints
    n_dev = min(max(1, round(dev_fraction * len(sentences))), len(sentences) - 1)
    dev_ids = torch.tensor(sorted(sentences[i] for i in order[:n_dev]), device=train.sentence.device)
    is_dev = torch.isin(train.sentence, dev_ids)
    X = train.vectors.float()
    X_fit, X_dev = X[:, ~is_dev], X[:, is_dev]
    Y_fit, Y_dev = Y[:, ~is_dev], Y[:, is_dev]
    mu, sigma = X_fit.mean(1, keepdim=True), X_fit.std(1, keepdim=True).clamp(min=1e-6)
    Z, Z_dev = (X_fit - mu) / sigma, (X_dev - mu) / sigma
    fit = fit_linear(Z, Y_fit, num_classes, l2)
    losses, accs = fit.losses(Z_dev, Y_dev), fit.accuracies(Z_dev, Y_dev)  # [G, L+1, S]
    g = losses.argmin(0)  # [L+1, S]
    if one_l2:  # one strength per label set, the same at every layer
        g = losses.sum(1).argmin(0)[None].expand_as(g)
    if l2_from is not None:
        if not 0 <= l2_from < Y.shape[0]:
            raise ValueError(f"l2_from must index a label set, 0..{Y.shape[0] - 1}, got {l2_from!r}.")
        g = g[:, l2_from:l2_from + 1].expand_as(g)
    chosen = fit.select(g)
    train_acc = chosen.accuracies(Z, Y_fit)[0]  # [L+1, S]
    names = list(names) if names is not None else [f"label set {k}" for k in range(Y.shape[0])]
    step0 = (math.log(num_classes),)
    records = []
    for k in range(Y.shape[0]):
        dev0 = float((Y_dev[k] == 0).double().mean())
        for l in range(X.shape[0]):
            gl = int(g[l, k])
            records.append(TrainingRecord(
                run=f"{desc}: {names[k]}, layer {l}", status=CONVERGED if bool(fit.converged[gl, l, k]) else BUDGET_EXHAUSTED,
                criterion=linear_criterion(fit.tolerance, fit.max_iter),
                choice=f"L2 {fit.l2[gl].item():g}" + ("" if l2_from in (None, k) else f" ({names[l2_from]}'s)")
                + (" (at the grid's edge)" if len(fit.l2) > 1 and gl in (0, len(fit.l2) - 1) else "")
                + (", one for all layers" if one_l2 else ""),
                grid="L2 " + ", ".join(f"{v:g}" for v in fit.l2.tolist()), steps=fit.iterations[gl],
                step0=step0 + (dev0,), kept=(float(losses[gl, l, k]), float(accs[gl, l, k])),
                train_accuracy=float(train_acc[l, k]), gradient=float(fit.gradient[gl, l, k])))
    S, C = Y.shape[0], num_classes
    weight = chosen.W[0].reshape(X.shape[0], X.shape[2], S * C).float()
    bias = chosen.b[0].reshape(X.shape[0], 1, S * C).float()
    return LayerProbes(mu, sigma, weight, bias, S, C), records, train_acc.T.cpu()


def paired_accuracy_change(after: ProbeReport, before: ProbeReport, **kw) -> list[Interval]:
    """Per layer: task accuracy of ``after`` minus ``before`` (each averaged over its seeds),
    two reports on the **same** test words, with one bootstrap over the test sentences for both
    (:func:`sentence_bootstrap` of the per-word differences) -- the paired comparison."""
    for r in (after, before):
        if r.task_correct is None or r.test_sentence is None:
            raise ValueError("both reports need their per-word outcomes: make them with word_probe_report.")
    same_words = after.task_correct.shape[1:] == before.task_correct.shape[1:] and torch.equal(
        after.test_sentence, before.test_sentence)
    if not same_words:
        raise ValueError("the two reports were not measured on the same test words and layers.")
    diff = after.task_correct.mean(0) - before.task_correct.mean(0)  # [L+1, N]
    return sentence_bootstrap(diff[None], before.test_sentence, **kw)


def word_probe_report(features: WordFeatures, sentences, task: str, train_ids, test_ids, *, seeds=(0, 1, 2),
                      progress: bool = True, **train_kw) -> ProbeReport:
    """:func:`probe_task` for one task of ``data/pos`` with its control task, split by sentence."""
    classes = _check_task(task)
    features = features.select(features.task_mask(sentences, task))
    labels = features.labels(sentences, task)
    controls = torch.stack([control_labels(features.words, labels, len(classes), seed=s) for s in seeds])
    train_mask = torch.isin(features.sentence, torch.as_tensor(list(train_ids), device=features.sentence.device))
    test_mask = torch.isin(features.sentence, torch.as_tensor(list(test_ids), device=features.sentence.device))
    if (train_mask & test_mask).any():
        raise ValueError("train_ids and test_ids share a sentence: split by sentence (split_sentences).")
    report = probe_task(features.select(train_mask), labels[train_mask], features.select(test_mask), labels[test_mask],
                        classes, seeds=seeds, control_train=controls[:, train_mask], control_test=controls[:, test_mask],
                        progress=progress, desc=f"{task} + control probes", **train_kw)
    report.task = task
    return report


def sentence_probe_report(draws: dict, tests: dict, classes, *, pooling: str = "mean", progress: bool = True,
                          l2=L2_GRID) -> ProbeReport:
    """Lesson 10's sentence probe (:func:`helpers.classify.compute.probe_layers`: one linear probe per
    layer, fitted by the training contract on each draw's training set, L2 strength chosen on its dev
    split) on every seed's **own** draw, as a :class:`ProbeReport`: ``draws`` maps a seed to its
    :class:`~helpers.classify.compute.Draw`, ``tests`` to ``(LayerFeatures, labels)`` of that draw's
    test utterances (as many per seed; they may differ between seeds). Each layer's interval
    resamples seeds and test items (``SeededAccuracy.interval``); layers are compared paired, seed
    ``i`` with seed ``i`` on its own test items. There is no control task (it is defined on word
    types). ``classes`` names the label set (one draw's intents, or a description)."""
    seeds = list(draws)
    if len(seeds) < 2 or set(seeds) != set(tests):
        raise ValueError("give at least two draws and one test set per draw (the same seeds).")
    sizes = {len(tests[s][0]) for s in seeds}
    if len(sizes) != 1:
        raise ValueError(f"every draw's test set must be as large (a [seeds, items] table), got sizes {sizes}.")
    correct, records, majority = [], [], []
    for s in progress_bar(seeds, desc=f"sentence probes ({pooling}), one set per draw", disable=not progress):
        draw = draws[s]
        feats, y_test = tests[s]
        num_classes = max(max(draw.y_train), max(y_test)) + 1
        probes = probe_layers(draw, num_classes, pooling, l2=l2, run=f"{pooling} probe, draw {s}")
        y = torch.as_tensor(y_test, device=probes.weight.device)
        correct.append(probes.predict(getattr(feats, pooling)) == y)
        records += probes.records
        majority.append(float((y.cpu() == torch.bincount(torch.as_tensor(draw.y_train)).argmax()).double().mean()))  # cpu: labels
    correct = torch.stack(correct).double()  # [seeds, L+1, N]
    runs = [SeededAccuracy(correct[:, l] > 0.5, tuple(seeds)) for l in range(correct.shape[1])]
    L1 = correct.shape[1]
    train_acc = [float(np.mean([r.train_accuracy for r in records[l::L1]])) for l in range(L1)]
    return ProbeReport("intent", tuple(classes), [r.interval() for r in runs], None, None,
                       [seeds_interval(r.per_seed()) for r in runs], float(np.mean(majority)),
                       len(draws[seeds[0]].y_train), len(tests[seeds[0]][0]), None, correct.cpu(),
                       torch.arange(correct.shape[2]), None, "seeds", records=records, train_accuracy=train_acc)  # cpu: ids
