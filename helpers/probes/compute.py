"""Lesson 14 numbers: word-level linear probes on every layer, with control tasks.

* :func:`extract_word_features` runs the model once per batch of tagged sentences and keeps
  the vector of each word's **first WordPiece** at every layer (0 = embeddings .. L);
* :func:`control_labels` is the control task of Hewitt & Liang (2019, *Designing and
  Interpreting Probes with Control Tasks*): every word type gets one random label, drawn from
  the empirical label distribution, so only memorising word types can solve it;
* :func:`train_probes` trains one linear softmax probe per layer **and** per label set at
  once, as one batched matrix product (like :func:`helpers.classify.compute.probe_per_layer`);
* :func:`probe_task` puts it together: task and control probes over several seeds, accuracy,
  control accuracy and selectivity per layer with bootstrap intervals over test sentences;
  :func:`paired_accuracy_change` compares two reports on the same test words (e.g. before and
  after fine-tuning), resampling the test sentences once for both; :meth:`ProbeReport.differences`
  compares two layers of one report the same way (all layers are tested on the same words), and
  :meth:`ProbeReport.tied_with_best` rests on it, never on overlapping intervals;
* :func:`sentence_probe_report` is lesson 10's sentence-level probe (``probe_seeds``) in the
  same report form.

The data are split by sentence (:func:`split_sentences`): no test sentence is seen in training.
The end of the module lays out lesson 14's tables and findings (:func:`word_probe_table`,
:func:`peak_findings`, :func:`cka_depth_finding`, ...) from the numbers above.
"""

from __future__ import annotations

import math
import warnings
from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import torch

from helpers.classify.comparisons import SeededAccuracy, paired_comparison, paired_difference
from helpers.classify.compute import Draw
from helpers.classify.strategies import probe_layers
from helpers.common.data import UPOS_TAGS, TaggedSentence
from helpers.common.progress import ProgressBar
from helpers.common.progress import progress as progress_bar
from helpers.common.training import (BUDGET_EXHAUSTED, CONVERGED, L2_GRID, TrainingRecord, fit_linear,
                                     linear_criterion)
from helpers.common.stats import (Interval, Replicates, bootstrap_size, cluster_replicates, differs, extreme_family,
                                  family_level, seeds_interval)
from helpers.model.trace import device_of, max_input_tokens, model_device

# OntoNotes entity types grouped into six coarse classes (+ "O", no entity): a few hundred
# sentences hold too few examples of the rarer types for a per-type probe.
ENTITY_GROUPS = {
    "PERSON": "PERSON", "NORP": "GROUP", "ORG": "ORG",
    "GPE": "PLACE", "LOC": "PLACE", "FAC": "PLACE",
    "DATE": "TIME", "TIME": "TIME",
    "CARDINAL": "NUMBER", "ORDINAL": "NUMBER", "QUANTITY": "NUMBER", "MONEY": "NUMBER", "PERCENT": "NUMBER",
    "EVENT": "OTHER", "WORK_OF_ART": "OTHER", "LAW": "OTHER", "LANGUAGE": "OTHER", "PRODUCT": "OTHER",
}
ENTITY_CLASSES = ("PERSON", "GROUP", "ORG", "PLACE", "TIME", "NUMBER", "OTHER")
# upos: every word; entity: only the words inside a named entity, labelled with the entity's type
# (like the entity task of Tenney et al.'s edge probing: the span is given, the type is asked).
TASKS = {"upos": UPOS_TAGS, "entity": ENTITY_CLASSES}


def entity_class(ner_tag: str) -> str:
    """``'B-GPE'`` -> ``'PLACE'`` (see :data:`ENTITY_GROUPS`); ``'O'`` (no entity) has no class."""
    if ner_tag == "O":
        raise ValueError("'O' marks a word outside every entity: it has no entity class (use task_mask).")
    kind = ner_tag.split("-", 1)[-1]
    if kind not in ENTITY_GROUPS:
        raise ValueError(f"unknown entity type {kind!r} in {ner_tag!r}; known: {sorted(ENTITY_GROUPS)}.")
    return ENTITY_GROUPS[kind]


def _check_task(task: str) -> tuple[str, ...]:
    if task not in TASKS:
        raise ValueError(f"task {task!r} is not valid: choose one of {tuple(TASKS)}.")
    return TASKS[task]


def _check_sentences(sentences) -> list[TaggedSentence]:
    sentences = list(sentences)
    if not sentences or not all(isinstance(s, TaggedSentence) for s in sentences):
        raise ValueError("sentences must be a non-empty list of TaggedSentence (from helpers.common.data.load_pos).")
    return sentences


@dataclass
class WordFeatures:
    """The first-WordPiece vector of every word at every layer: ``vectors`` is ``[L+1, N, H]``.

    ``sentence[i]`` and ``position[i]`` say which sentence and which word of it row ``i`` is;
    ``words[i]`` is the word itself.
    """

    vectors: torch.Tensor
    sentence: torch.Tensor
    position: torch.Tensor
    words: list[str]
    n_dropped: int = 0

    @property
    def num_layers(self) -> int:
        return self.vectors.shape[0] - 1

    def __len__(self) -> int:
        return self.vectors.shape[1]

    def select(self, mask: torch.Tensor) -> "WordFeatures":
        """The rows where ``mask`` is True (e.g. the words of the training sentences)."""
        idx = torch.as_tensor(mask, device=self.vectors.device).nonzero().flatten()
        return WordFeatures(self.vectors[:, idx], self.sentence[idx], self.position[idx],
                            [self.words[i] for i in idx.tolist()], self.n_dropped)

    def of_sentences(self, ids) -> "WordFeatures":
        """The words of the sentences numbered ``ids``."""
        return self.select(torch.isin(self.sentence, torch.as_tensor(list(ids), device=self.sentence.device)))

    def task_mask(self, sentences, task: str) -> torch.Tensor:
        """Rows that carry a label for ``task``: every word for ``'upos'``, the words inside a
        named entity for ``'entity'``."""
        _check_task(task)
        sentences = _check_sentences(sentences)
        if task == "upos":
            return torch.ones(len(self), dtype=torch.bool, device=self.vectors.device)
        return torch.tensor([sentences[s].ner[p] != "O" for s, p in zip(self.sentence.tolist(), self.position.tolist())],
                            device=self.vectors.device)

    def labels(self, sentences, task: str) -> torch.Tensor:
        """Class id of every row for ``task`` (``'upos'`` or ``'entity'``), read from ``sentences``;
        for ``'entity'`` select the rows of :meth:`task_mask` first."""
        classes = _check_task(task)
        sentences = _check_sentences(sentences)
        out = []
        for s, p in zip(self.sentence.tolist(), self.position.tolist()):
            tag = sentences[s].upos[p] if task == "upos" else entity_class(sentences[s].ner[p])
            out.append(classes.index(tag))
        return torch.tensor(out, dtype=torch.long, device=self.vectors.device)


@torch.no_grad()
def extract_word_features(tokenizer, model, sentences, *, batch_size: int = 32, progress: bool = True) -> WordFeatures:
    """Run every sentence once (pre-split into its words) and keep each word's first-WordPiece
    vector at every layer. Words whose first piece lies past the model's maximum input length
    are left out, with a warning."""
    sentences = _check_sentences(sentences)
    if not getattr(tokenizer, "is_fast", False):
        raise ValueError("extract_word_features needs a fast tokenizer (it maps pieces to words with word_ids()); "
                         "load one with AutoTokenizer.from_pretrained(..., use_fast=True).")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive int, got {batch_size!r}.")
    limit = max_input_tokens(tokenizer, model)
    # Batches of similar length waste little on padding; rows are put back in sentence order.
    order = sorted(range(len(sentences)), key=lambda i: len(sentences[i]))
    chunks, sent_ids, positions, words, dropped = [], [], [], [], 0
    for start in progress_bar(range(0, len(order), batch_size), desc="word features", disable=not progress):
        ids = order[start:start + batch_size]
        enc = tokenizer([list(sentences[i].words) for i in ids], is_split_into_words=True, padding=True,
                        truncation=True, max_length=limit, return_tensors="pt").to(model_device(model))
        hidden = torch.stack(model(**enc, output_hidden_states=True, return_dict=True).hidden_states)  # [L+1, B, T, H]
        rows, cols = [], []
        for b, i in enumerate(ids):
            first: dict[int, int] = {}
            for pos, wid in enumerate(enc.word_ids(b)):
                if wid is not None and wid not in first:
                    first[wid] = pos
            dropped += len(sentences[i]) - len(first)
            for wid, pos in sorted(first.items()):
                rows.append(b); cols.append(pos)
                sent_ids.append(i); positions.append(wid); words.append(sentences[i].words[wid])
        chunks.append(hidden[:, rows, cols])
    rank = sorted(range(len(sent_ids)), key=lambda r: (sent_ids[r], positions[r]))
    if dropped:
        warnings.warn(f"{dropped} word(s) lie past this model's maximum input length ({limit} tokens) and were "
                      "left out of the word features.", UserWarning, stacklevel=2)
    vectors = torch.cat(chunks, 1).float()[:, rank]
    return WordFeatures(vectors, torch.tensor(sent_ids, device=vectors.device)[rank],
                        torch.tensor(positions, device=vectors.device)[rank],
                        [words[r] for r in rank], dropped)


def split_sentences(n_sentences: int, test_fraction: float = 0.25, seed: int = 0) -> tuple[list[int], list[int]]:
    """A fixed random split of sentence ids ``0..n-1`` into (train, test): whole sentences, never words."""
    if isinstance(n_sentences, bool) or not isinstance(n_sentences, int) or n_sentences < 2:
        raise ValueError(f"n_sentences must be an int >= 2, got {n_sentences!r}.")
    if not 0 < test_fraction < 1:
        raise ValueError(f"test_fraction must lie strictly between 0 and 1, got {test_fraction!r}.")
    order = torch.randperm(n_sentences, generator=torch.Generator().manual_seed(seed)).tolist()  # cpu: a seeded split, read as ints
    n_test = min(max(1, round(test_fraction * n_sentences)), n_sentences - 1)
    return sorted(order[n_test:]), sorted(order[:n_test])


def control_labels(words, labels, num_classes: int, seed: int = 0) -> torch.Tensor:
    """Hewitt & Liang's control task: every word type (lower-cased) gets one label, drawn at
    random from the empirical distribution of ``labels``; every occurrence of the type keeps it."""
    device = device_of(labels)  # the control labels go where the labels are
    labels = torch.as_tensor(labels, dtype=torch.long, device="cpu")  # cpu: drawn with a seeded CPU generator
    if labels.ndim != 1 or len(labels) != len(words) or not len(words):
        raise ValueError(f"words and labels must be equally long and non-empty, got {len(words)} and {tuple(labels.shape)}.")
    if int(labels.min()) < 0 or int(labels.max()) >= num_classes:
        raise ValueError(f"labels must lie in 0..{num_classes - 1}.")
    types = sorted({w.lower() for w in words})
    p = torch.bincount(labels, minlength=num_classes).double()
    draws = torch.multinomial(p / p.sum(), len(types), replacement=True, generator=torch.Generator().manual_seed(seed))
    label_of = dict(zip(types, draws.tolist()))
    return torch.tensor([label_of[w.lower()] for w in words], dtype=torch.long, device=device)


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


def trace_word_vectors(trace) -> tuple[list[str], torch.Tensor]:
    """The words of a traced sentence (as BERT's pre-tokenizer splits them) and the vector of
    each word's first WordPiece at every layer: ``[L+1, n_words, H]``."""
    seen: Counter = Counter()
    spans = []
    for word in trace.words():
        spans.append(trace.find_word(word, seen[word.lower()]))
        seen[word.lower()] += 1
    firsts = [s.first for s in spans]
    return [s.word for s in spans], torch.stack([trace.hidden(l)[firsts] for l in range(trace.num_layers + 1)]).float()


# The popular table, for BERT-base (12 layers): where each kind of knowledge is said to live.
POPULAR_TABLE = (("upos", "part of speech", 1, 3), ("entity", "entities", 4, 8), ("intent", "sentence meaning", 9, 12))
POPULAR_TABLE_DEPTH = 12


def scaled_layers(first: int, last: int, num_layers: int, of: int = POPULAR_TABLE_DEPTH) -> list[int]:
    """Layers ``first..last`` of an ``of``-layer model mapped to ``num_layers`` by relative depth:
    layer ``l`` counts when its middle, ``(l - 1/2) / L``, lies in ``((first-1)/of, last/of]``.
    (Tenney et al. 2019 saw tasks sit at the same depth *relative to the top* in BERT-base and
    BERT-large.)"""
    if not 1 <= first <= last <= of:
        raise ValueError(f"need 1 <= first <= last <= {of}, got {first}..{last}.")
    return [l for l in range(1, num_layers + 1) if (first - 1) / of < (l - 0.5) / num_layers <= last / of]


def table_verdict(report: ProbeReport, claimed: list[int], measure: str = "accuracy") -> str:
    """How the measured peak of ``measure`` relates to the table's (scaled) layers: the best
    layer and every layer the paired difference cannot rank below it count
    (:meth:`ProbeReport.tied_with_best`). When the embeddings (layer 0) are among them, the
    probe cannot show that any layer adds what it reads: the row is not testable here."""
    best, tied = report.best_layer(measure), report.tied_with_best(measure)
    if 0 in tied:
        return f"not testable here: layer 0 already at {report.measure(measure)[0].estimate:.1%}, tied with the best"
    if set(tied) <= set(claimed):
        return "peak inside the table's layers"
    if best in claimed:
        return "best layer inside, tied with layers outside"
    if set(tied) & set(claimed):
        return "best layer outside, tied with a layer inside"
    return "peak outside the table's layers"


def summarize_layers(layers) -> str:
    """``[0, 1, 2, 5]`` -> ``'emb-2, 5'`` (``emb`` is layer 0)."""
    name = lambda l: "emb" if l == 0 else str(l)  # noqa: E731
    runs: list[list[int]] = []
    for l in sorted(layers):
        if runs and l == runs[-1][1] + 1:
            runs[-1][1] = l
        else:
            runs.append([l, l])
    return ", ".join(name(a) if a == b else f"{name(a)}-{name(b)}" for a, b in runs) or "none"


def norm_quartiles(features: WordFeatures) -> np.ndarray:
    """``[3, L+1]``: 25th, 50th and 75th percentile of the word vectors' L2 norms at each layer."""
    return np.percentile(features.vectors.norm(dim=-1).cpu().numpy(), [25, 50, 75], axis=1)


# ----------------------------------------------------------------------------- lesson 14's tables and findings
# Each returns what the lesson shows: ``(rows, title)`` for :func:`~helpers.common.tables.show_table`
# or ``(sentence, details)`` for :func:`~helpers.common.claims.show_finding`; every word comes from
# the numbers passed in.


def layer_label(l: int):
    """A table's layer column: ``'emb'`` for layer 0 (the embeddings), else the layer number."""
    return "emb" if l == 0 else l


def word_probe_table(report: ProbeReport) -> tuple[list[dict], str]:
    """``(rows, title)``: per layer, a word probe report's test accuracy, control accuracy and
    selectivity (intervals over test sentences) and the training accuracy of the task probe and
    of the control probes (mean over seeds); the title gives the seeds, the word counts, the
    number of classes and the most-frequent-tag rate."""
    if report.control is None or report.train_accuracy is None or report.control_correct is None:
        raise ValueError("word_probe_table needs a word_probe_report (control task, training contract).")
    r = report
    rows = [{"layer": layer_label(l), "task accuracy": r.accuracy[l].percent(), "control": r.control[l].percent(),
             "selectivity": r.selectivity[l].percent(), "task, on its training words": f"{r.train_accuracy[l]:.1%}",
             "control, on its training words": f"{r.control_train_accuracy[l]:.1%}"}
            for l in range(r.num_layers + 1)]
    title = (f"{r.task} probes: accuracy on test words, selectivity = task - control (control averaged over"
             f" {r.control_correct.shape[0]} seeds) [in brackets: uncertainty from resampling test sentences];"
             f" and each probe's accuracy on the words it was trained on\n{r.n_train} train / {r.n_test} test words,"
             f" {len(r.classes)} classes; most frequent training tag on test: {r.majority:.1%}")
    return rows, title


def probe_status_finding(records) -> tuple[str, list[str], object]:
    """``(sentence, details, table)`` for :func:`~helpers.common.claims.show_finding`: how many of
    the word probes' :class:`~helpers.common.training.TrainingRecord` met the convergence
    criterion, the criterion and the L2 rule, and every record's row
    (:func:`~helpers.common.training.records_table`)."""
    from helpers.common.training import records_table, status_summary

    records = list(records)
    if not records:
        raise ValueError("give the word probes' training records (ProbeReport.records).")
    summary = status_summary(records)
    sentence = (f"Of the {len(records)} word probes (task and control, every layer),"
                + (" every one met the convergence criterion." if summary.startswith("all") else f" {summary}."))
    details = [f"criterion: {records[0].criterion}; L2 strength: the task probe's dev loss chooses it (dev split:"
               " a fifth of the training sentences), the control probes take the task's (Hewitt & Liang)"]
    table = records_table(records, title="every word probe: the dev split's choice, dev loss and accuracy at step 0"
                          " and at the kept weights, training accuracy, L-BFGS iterations, status")
    return sentence, details, table


def intent_probe_table(report: ProbeReport) -> tuple[list[dict], str]:
    """``(rows, title)``: per layer, a :func:`sentence_probe_report`'s test accuracy (mean over the
    draws, interval over draws and test utterances) and its accuracy on the training utterances."""
    if report.pairing != "seeds" or report.train_accuracy is None or report.task_correct is None:
        raise ValueError("intent_probe_table needs a sentence_probe_report.")
    rows = [{"layer": layer_label(l), "intent accuracy": iv.percent(),
             "on its training utterances": f"{report.train_accuracy[l]:.1%}"}
            for l, iv in enumerate(report.accuracy)]
    title = (f"intent probe (lesson 10's probe) per layer, mean over the {report.task_correct.shape[0]} draws"
             " [in brackets: uncertainty from resampling draws and test utterances]")
    return rows, title


def peak_findings(reports: dict, table=POPULAR_TABLE) -> tuple[list[dict], str, list[tuple[str, list[str]]]]:
    """``(rows, title, findings)`` for every row ``(task, name, first, last)`` of the popular
    table: where the probe of ``reports[task]`` peaks (the best layer, the layers tied with it:
    :meth:`ProbeReport.tied_with_best`), the gain over the embeddings, the most selective layer,
    the table's layers scaled to the report's depth (:func:`scaled_layers`) and
    :func:`table_verdict`; ``findings`` holds one ``(sentence, details)`` per row, the details
    giving every other layer minus the best at the Bonferroni level over every pair of layers."""
    rows, findings = [], []
    for task, name, first, last in table:
        r = reports[task]
        L = r.num_layers
        claimed = scaled_layers(first, last, L)
        best, tied = r.best_layer(), r.tied_with_best()
        others = [l for l in tied if l != best]
        gain, verdict_text = r.gain_over_embeddings(), table_verdict(r, claimed)
        rows.append({"task": name, "best layer": summarize_layers([best]), "could be as high": summarize_layers(others),
                     "gain over emb, points": f"{100 * gain.estimate:+.1f}",
                     "most selective": summarize_layers([r.best_layer("selectivity")]) if r.selectivity else "n/a",
                     "table, scaled": summarize_layers(claimed), "verdict": verdict_text})
        sentence = (f"{name[0].upper()}{name[1:]} is read best at {'the embeddings' if best == 0 else f'layer {best}'}"
                    f" ({100 * r.accuracy[best].estimate:.1f} %)"
                    + (f"; {summarize_layers(others)} could be as high" if others else "")
                    + f"; against the popular table ({summarize_layers(claimed)}): {verdict_text}.")
        family = extreme_family(L + 1)
        diffs = r.differences(best, level=family_level(family))
        details = [f"{name}: every other layer minus layer {best}, paired on the same test items,"
                   f" {100 * family_level(family):.4g} % intervals (Bonferroni over the {family} pairs of layers,"
                   " since the best is picked from the same data): "
                   + "; ".join(f"{layer_label(l)}: {100 * d.estimate:+.1f} [{100 * d.low:+.1f}, {100 * d.high:+.1f}]"
                               for l, d in enumerate(diffs) if l != best),
                   f"gain over emb (best minus layer 0, 95 %): {100 * gain.estimate:+.1f} [{100 * gain.low:+.1f},"
                   f" {100 * gain.high:+.1f}] points"]
        findings.append((sentence, details))
    title = ("where each kind of knowledge peaks on this model: the best layer, the layers the paired comparisons"
             " cannot place below it, the best layer minus the embeddings, and the popular table's layers scaled to"
             " this model")
    return rows, title, findings


def layer_tag_table(words, tags, classes=UPOS_TAGS, *, max_shown: int = 12,
                    max_listed: int = 20) -> tuple[str, list[dict], str]:
    """``(line, rows, title)`` for the tags ``[L+1, n_words]`` (class ids) that each layer's probe
    gives the ``words`` of one sentence: ``line`` lists (up to ``max_listed``) the words every
    layer tags alike, with that tag; ``rows`` (one per layer, empty when all agree) give each
    layer's tag of the first ``max_shown`` words on which the layers disagree, a column per word
    named with its position (``'book (#2)'``: a word can occur twice)."""
    tags = torch.as_tensor(tags).cpu()  # cpu: a table of tag ids for printing
    if tags.ndim != 2 or tags.shape[1] != len(words):
        raise ValueError(f"tags must be [L+1, {len(words)}] (a tag per layer and word), got {tuple(tags.shape)}.")
    agreed = [i for i in range(len(words)) if len(set(tags[:, i].tolist())) == 1]
    disputed = [i for i in range(len(words)) if i not in agreed]
    same = " ".join(f"{words[i]}/{classes[tags[0, i]]}" for i in agreed[:max_listed]) + (
        " ..." if len(agreed) > max_listed else "")
    line = (f"every layer gives each of the {len(words)} words the same tag: {same}" if not disputed
            else f"{len(agreed)} of {len(words)} words get the same tag from every layer: {same}")
    shown = disputed[:max_shown]
    columns = [f"{words[i]} (#{i})" for i in shown]
    rows = [{"layer": layer_label(l)} | {c: classes[tags[l, i]] for c, i in zip(columns, shown)}
            for l in range(tags.shape[0])] if disputed else []
    title = (f"words on which the layers disagree ({len(disputed)}, at most {max_shown} shown; #: the word's"
             " position): the tag of each layer's probe")
    return line, rows, title


def layer_change_table(change, cka, moved, n_utterances: int) -> tuple[list[dict], str]:
    """``(rows, title)``: per layer, the seed-averaged CKA with its jackknife interval (``cka``, one
    :class:`~helpers.common.stats.Interval` per layer), the range of the per-seed CKA
    (``change.cka``, ``[seeds, L+1]``) and the relative weight change over the seeds (``moved``)."""
    seeds = change.cka.shape[0]
    if not len(cka) == len(moved) == change.cka.shape[1]:
        raise ValueError(f"give one CKA and one weight-change interval per layer ({change.cka.shape[1]}).")
    rows = []
    for l in range(len(cka)):
        spread = seeds_interval(change.cka[:, l])
        rows.append({"layer": layer_label(l), "CKA": cka[l].format(".4f"),
                     "CKA seed range": f"{spread.low:.4f}-{spread.high:.4f}",
                     "relative weight change (seed range)": moved[l].format(".4f")})
    title = (f"Pre-trained vs fine-tuned, mean of {seeds} runs: CKA [in brackets: uncertainty from leaving out one"
             f" of the {n_utterances} utterances at a time]; relative weight change with [min, max] over the runs")
    return rows, title


def cka_depth_finding(cka, loo) -> tuple[str, list[str]] | None:
    """``(sentence, details)`` on where fine-tuning changed the encoder most (``None`` with one
    layer): CKA of layer ``L`` minus layer 1, and every encoder layer minus the most changed one
    (lowest CKA, picked by the data, so at the Bonferroni level over every pair of encoder
    layers), each paired -- the same utterance left out of both -- from the leave-one-out values
    ``loo`` ``[utterances, L+1]`` (:func:`~helpers.finetuning.compute.jackknife_interval`). The
    sentence compares layer ``L`` with layer 1 against Merchant et al. (2020)."""
    from helpers.common.stats import verdict
    from helpers.finetuning.compute import jackknife_interval

    L = len(cka) - 1
    if loo.shape[1] != L + 1:
        raise ValueError(f"loo must be [utterances, {L + 1}] (one column per layer), got {tuple(loo.shape)}.")
    if L <= 1:
        return None

    def paired(a: int, b: int, level: float = 0.95) -> Interval:
        return jackknife_interval(cka[a].estimate - cka[b].estimate, loo[:, a] - loo[:, b], level=level)

    top = verdict(paired(L, 1), a=f"CKA at layer {L}", b="at layer 1")
    if top.kind == "lower":
        sentence = (f"Layer {L} changed more than layer 1, as Merchant et al. found: its CKA is lower"
                    f" ({cka[L].estimate:.3f} vs {cka[1].estimate:.3f}).")
    elif top.kind == "higher":
        sentence = (f"Layer 1 changed more than layer {L}, unlike Merchant et al.: its CKA is lower"
                    f" ({cka[1].estimate:.3f} vs {cka[L].estimate:.3f}).")
    else:
        sentence = (f"With these data we cannot tell whether layer {L} or layer 1 changed more"
                    f" (CKA {cka[L].estimate:.3f} vs {cka[1].estimate:.3f}).")
    most = min(range(1, L + 1), key=lambda l: cka[l].estimate)
    family = extreme_family(L)
    level = family_level(family)
    others = [l for l in range(1, L + 1) if l != most and paired(l, most, level).low <= 0]
    sentence += (f" Layer {most} changed most (CKA {cka[most].estimate:.3f})"
                 + (f"; {summarize_layers(others)} could have changed as much." if others
                    else "; every other encoder layer changed less."))
    details = [top.text,
               f"every other encoder layer minus layer {most}, jackknife intervals at {100 * level:.4g} %"
               f" (Bonferroni over the {family} pairs of encoder layers, since the most changed is picked from the"
               " same data): " + "; ".join(f"{l}: {paired(l, most, level).format('.4f')}"
                                           for l in range(1, L + 1) if l != most)]
    return sentence, details


def weight_norm_table(size, step) -> tuple[list[dict], str, str | None]:
    """``(rows, title, split)``: per layer the Frobenius norm of the pre-trained weights ``size``
    ``||W||``, of their change ``step`` ``||dW||`` and the ratio; ``split`` (``None`` with one
    layer) divides the change of ``log(||dW|| / ||W||)`` from layer 1 to layer ``L`` into
    ``log(||dW||_L / ||dW||_1)`` and ``-log(||W||_L / ||W||_1)`` and names the larger."""
    if len(size) != len(step):
        raise ValueError(f"give ||W|| and ||dW|| for the same layers, got {len(size)} and {len(step)}.")
    rows = [{"layer": layer_label(l), "||W||": f"{size[l]:.2f}", "||dW|| (mean of seeds)": f"{step[l]:.4f}",
             "ratio": f"{step[l] / size[l]:.4f}"} for l in range(len(size))]
    title = ("Frobenius norms per layer: pre-trained weights W, their change dW in fine-tuning, and the ratio"
             " ||dW|| / ||W||")
    L = len(size) - 1
    split = None
    if L > 1:
        from_step, from_size = math.log(step[L] / step[1]), -math.log(size[L] / size[1])
        driver = "||dW||" if abs(from_step) > abs(from_size) else "||W||"
        split = (f"layer 1 -> {L}: log ratio changes by {from_step + from_size:+.3f} = {from_step:+.3f} from ||dW||"
                 f" {from_size:+.3f} from ||W||: mostly {driver}.")
    return rows, title, split


SWAP_MEANING = {"lower": "accuracy falls: its own change is needed", "higher": "accuracy rises: its change hurt",
                "inconclusive": "we cannot tell"}


def swap_in_table(verdicts) -> tuple[list[dict], str]:
    """``(rows, title)``: per layer put back (``verdicts[d]``: the swap of layer ``d``, 0 = the
    embeddings, against the fine-tuned model), the accuracy change in points and what its verdict
    says (:data:`SWAP_MEANING`)."""
    rows = [{"layer put back": layer_label(d), "accuracy change, points": f"{100 * v.difference.estimate:+.1f}",
             "what it says": SWAP_MEANING[v.kind]} for d, v in enumerate(verdicts)]
    title = ("Test accuracy with one layer's pre-trained weights put back, minus the fine-tuned model's (same"
             " utterances and draws), in points")
    return rows, title


def _moves_sentence(lower: list[int], higher: list[int], n: int, *, fall: str, none: str, rise: str,
                    rest: str) -> str:
    """``fall`` (with the layers of ``lower``) or ``none``; then ``rise`` with ``higher``; then
    ``rest`` when some of the ``n`` layers are in neither."""
    return ((fall.format(summarize_layers(lower)) if lower else none)
            + (rise.format(summarize_layers(higher)) if higher else "")
            + (rest if len(lower) + len(higher) < n else "."))


def swap_in_finding(verdicts, n_draws: int, n_items: int) -> tuple[str, list[str]]:
    """``(sentence, details)``: which swaps lower the accuracy (the fine-tuned model needs those
    layers' own changes), which raise it, and for which we cannot tell; the details name the
    units and the Bonferroni family (one swap per layer) and hold every verdict's text."""
    verdicts = list(verdicts)
    lower = [d for d, v in enumerate(verdicts) if v.kind == "lower"]
    higher = [d for d, v in enumerate(verdicts) if v.kind == "higher"]
    sentence = _moves_sentence(
        lower, higher, len(verdicts),
        fall="Putting back {} lowers the accuracy: the fine-tuned model needs those layers' own changes",
        none="For no single layer is putting back its pre-trained weights shown to lower the accuracy",
        rise="; putting back {} raises it", rest="; for the others we cannot tell.")
    details = [f"{n_draws} draws x {n_items} test utterances, paired with the fine-tuned model; intervals resample"
               f" draws and items, Bonferroni over the {len(verdicts)} swaps", *(v.text for v in verdicts)]
    return sentence, details


def pos_change_table(before: ProbeReport, after: ProbeReport, change, seed) -> tuple[list[dict], str]:
    """``(rows, title)``: per layer the part-of-speech probe's test accuracy before and after
    fine-tuning (the fine-tuned model of draw ``seed``), the paired change ``change`` in points
    (:func:`paired_accuracy_change`), the selectivity and the training accuracy after."""
    if not len(before.accuracy) == len(after.accuracy) == len(change):
        raise ValueError("before, after and change must cover the same layers.")
    rows = [{"layer": layer_label(l), "accuracy before": before.accuracy[l].percent(),
             "accuracy after": after.accuracy[l].percent(), "after - before, points": f"{100 * d.estimate:+.1f}",
             "selectivity after": after.selectivity[l].percent(),
             "after, on its training words": f"{after.train_accuracy[l]:.1%}"} for l, d in enumerate(change)]
    title = (f"POS probes, pre-trained (before) and fine-tuned draw {seed} (after), both trained to convergence:"
             " test accuracy [in brackets: uncertainty from resampling test sentences] and the paired change")
    return rows, title


def pos_change_finding(change, family: int, records) -> tuple[str, list[str]]:
    """``(sentence, details)``: the layers at which the part-of-speech probe reads less (or more)
    after fine-tuning, each layer's paired change ``change`` (read at
    ``family_level(family)``) turned into a verdict, Bonferroni over ``family`` layers; the details
    add the fine-tuned probes' training status (``records``)."""
    from helpers.common.stats import verdict
    from helpers.common.training import status_summary

    verdicts = [verdict(d, a=f"layer {l} after", b="before", family=family, percent=True)
                for l, d in enumerate(change)]
    lower = [l for l, v in enumerate(verdicts) if v.kind == "lower"]
    higher = [l for l, v in enumerate(verdicts) if v.kind == "higher"]
    sentence = _moves_sentence(
        lower, higher, len(verdicts),
        fall="After fine-tuning, the part-of-speech probe reads less at"
             + (" layer {}" if len(lower) == 1 else " layers {}"),
        none="No layer's part-of-speech accuracy is shown to fall after fine-tuning",
        rise="; it reads more at {}", rest="; for the other layers we cannot tell.")
    details = [f"paired per word, test sentences resampled once for both; {100 * family_level(family):.4g} %"
               f" intervals, Bonferroni over the {family} layers", *(v.text for v in verdicts),
               f"fine-tuned probes: {status_summary(records)}"]
    return sentence, details


def norm_lines(quartiles) -> str:
    """The word-vector norms per layer (``quartiles``: :func:`norm_quartiles`) as printed text: the
    median [25th, 75th percentile] of every layer, then the largest median over the smallest and
    the median at layer ``L`` over layer 1."""
    q25, med, q75 = quartiles
    L = len(med) - 1
    small, large = int(med.argmin()), int(med.argmax())
    return ("word-vector norm per layer, median [25th, 75th percentile]:\n  "
            + "; ".join(f"{layer_label(l)}: {med[l]:.1f} [{q25[l]:.1f}, {q75[l]:.1f}]" for l in range(L + 1))
            + "\n" + (f"largest median / smallest median: {med[large] / med[small]:.2f} (layer {large} / layer"
                      f" {small}); median at layer {L} / layer 1: {med[L] / med[1]:.2f}" if L > 0 else ""))
