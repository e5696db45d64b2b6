"""Lesson 14 (:mod:`helpers.probes`): what a word probe reads, and what it is asked.

* :func:`extract_word_features` -> :class:`WordFeatures` -- runs the model once per batch of tagged
  sentences and keeps the vector of each word's **first WordPiece** at every layer (0 = embeddings
  .. L); :func:`trace_word_vectors` does it for traced sentences;
* the tasks (:data:`TASKS`): part of speech, dependency, the entity type grouped into
  :data:`ENTITY_GROUPS` (:func:`entity_class`);
* :func:`control_labels` -- the control task of Hewitt & Liang (2019): every word type gets one
  random label, drawn from the empirical label distribution;
* :func:`split_sentences` -- the data split by sentence: no test sentence is seen in training.
"""

from __future__ import annotations

import warnings
from collections import Counter
from dataclasses import dataclass

import torch

from helpers.common.data import UPOS_TAGS, TaggedSentence
from helpers.common.progress import progress as progress_bar
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
