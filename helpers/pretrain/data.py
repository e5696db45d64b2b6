"""Lesson 05's data: the public-domain corpus of ``data/pretrain/``, a WordPiece vocabulary trained
on it, next-sentence pairs and BERT's masking, by hand.

The corpus files are in the input format of Google's BERT (``create_pretraining_data.py``): one
sentence per line, a blank line between documents. :func:`load_corpus` reads them;
:func:`split_documents` holds whole documents out; :func:`train_wordpiece` learns a vocabulary with
the ``tokenizers`` library; :class:`PairSampler` draws next-sentence pairs (half of them with a
second segment from another document) and :func:`mask_tokens` applies Devlin et al.'s (2019) 15 %
masking with the 80 / 10 / 10 split, the way ``DataCollatorForLanguageModeling`` does it.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import shutil
from dataclasses import dataclass

import numpy as np
import torch

from helpers.model.paths import DATA_DIR

CORPUS_DIR = DATA_DIR / "pretrain"
SOURCES = ("shakespeare", "kjv")
SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
IGNORE = -100  # the label of every position the masked-LM loss does not score (PyTorch's ignore_index)
IS_NEXT, NOT_NEXT = 0, 1  # transformers' next_sentence_label: 0 = B follows A in the corpus


@dataclass(frozen=True)
class Document:
    """One document of the corpus: a scene of a play or a chapter of the Bible."""

    source: str
    sentences: tuple[str, ...]


def corpus_path(name: str):
    if name not in SOURCES:
        raise ValueError(f"corpus {name!r} is not valid: use one of {SOURCES}.")
    path = CORPUS_DIR / f"{name}.txt.gz"
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing: rebuild it with data/pretrain/build_corpus.py (see its README).")
    return path


def load_corpus(names=SOURCES, max_documents: int | None = None) -> list[Document]:
    """The documents of the named corpora (all of them by default), in file order. ``max_documents``
    keeps that many from each corpus (a smaller run)."""
    if isinstance(names, str):
        names = (names,)
    if max_documents is not None and (isinstance(max_documents, bool) or not isinstance(max_documents, int)
                                      or max_documents < 2):
        raise ValueError(f"max_documents must be None or an int >= 2, got {max_documents!r}.")
    docs = []
    for name in names:
        text = gzip.decompress(corpus_path(name).read_bytes()).decode("utf-8")
        blocks = [b for b in text.split("\n\n") if b.strip()]
        docs += [Document(name, tuple(b.strip().split("\n"))) for b in blocks[:max_documents]]
    return docs


def corpus_hash(names=SOURCES) -> str:
    """sha256 of the corpus files (part of a training run's fingerprint)."""
    h = hashlib.sha256()
    for name in ([names] if isinstance(names, str) else names):
        h.update(corpus_path(name).read_bytes())
    return h.hexdigest()


def split_documents(docs: list[Document], held_out: float = 0.1, seed: int = 0):
    """``(train, test)``: a seeded ``held_out`` share of whole documents for testing only, so no
    test sentence's document was seen in training."""
    if not 0 < held_out < 1:
        raise ValueError(f"held_out must lie strictly between 0 and 1, got {held_out!r}.")
    if len(docs) < 4:
        raise ValueError(f"need at least 4 documents to hold some out, got {len(docs)}.")
    order = np.random.default_rng(seed).permutation(len(docs))
    n_test = max(2, int(round(held_out * len(docs))))
    test = set(order[:n_test].tolist())
    return [d for i, d in enumerate(docs) if i not in test], [d for i, d in enumerate(docs) if i in test]


def train_wordpiece(docs: list[Document], vocab_size: int = 8000, max_length: int = 128):
    """A lower-casing BERT WordPiece vocabulary of ``vocab_size`` entries learnt on ``docs`` with
    the ``tokenizers`` library, wrapped as a ``BertTokenizerFast`` (saved and loaded like any
    BERT tokenizer).

    The trainer breaks ties between equally frequent pairs in an order that changes from one
    process to the next, so two runs can learn slightly different vocabularies. The first
    vocabulary learnt for these documents and sizes is therefore kept in the course cache
    (``$COURSE_CACHE/pretrain/vocab-<hash>``) and reused, so a rerun of lesson 05 tokenizes as
    the cached training run did (:func:`vocabulary_hash` is part of a run's fingerprint too)."""
    from transformers import BertTokenizerFast

    if isinstance(vocab_size, bool) or not isinstance(vocab_size, int) or vocab_size < 200:
        raise ValueError(f"vocab_size must be an int >= 200, got {vocab_size!r}.")
    from helpers.model.paths import course_cache

    key = hashlib.sha256(f"{vocab_size}|{max_length}|".encode())
    for d in docs:
        for sentence in d.sentences:
            key.update(sentence.encode("utf-8") + b"\n")
    root = course_cache()
    folder = None if root is None else root / "pretrain" / f"vocab-{key.hexdigest()[:16]}"
    if folder is not None and (folder / "tokenizer.json").exists():
        return BertTokenizerFast.from_pretrained(str(folder), model_max_length=max_length)
    tok = _learn_wordpiece(docs, vocab_size, max_length)
    if folder is not None:
        partial = folder.with_name(folder.name + f".{os.getpid()}.part")
        tok.save_pretrained(str(partial))
        try:
            partial.rename(folder)  # atomic; another process may have won the race
        except OSError:
            shutil.rmtree(partial, ignore_errors=True)
            return BertTokenizerFast.from_pretrained(str(folder), model_max_length=max_length)
    return tok


def vocabulary_hash(tokenizer) -> str:
    """A short hash of a tokenizer's vocabulary (tokens in id order)."""
    vocab = tokenizer.get_vocab()
    ordered = sorted(vocab, key=vocab.get)
    return hashlib.sha256("\n".join(ordered).encode("utf-8")).hexdigest()[:16]


def _learn_wordpiece(docs: list[Document], vocab_size: int, max_length: int):
    from tokenizers import BertWordPieceTokenizer
    from transformers import BertTokenizerFast

    wp = BertWordPieceTokenizer(lowercase=True)
    wp.train_from_iterator((s for d in docs for s in d.sentences), vocab_size=vocab_size, min_frequency=2,
                           special_tokens=list(SPECIAL_TOKENS), show_progress=False)
    tok = BertTokenizerFast(tokenizer_object=wp._tokenizer, do_lower_case=True, model_max_length=max_length,
                            pad_token="[PAD]", unk_token="[UNK]", cls_token="[CLS]", sep_token="[SEP]",
                            mask_token="[MASK]")
    return tok


def encode_documents(tokenizer, docs: list[Document]) -> list[list[list[int]]]:
    """Every sentence as WordPiece ids (no special tokens): ``[document][sentence] -> ids``."""
    flat = [s for d in docs for s in d.sentences]
    ids = tokenizer(flat, add_special_tokens=False, verbose=False)["input_ids"]  # long lines are cut into pairs later
    out, i = [], 0
    for d in docs:
        out.append(ids[i:i + len(d.sentences)])
        i += len(d.sentences)
    return out


def truncate_pair(a: list[int], b: list[int], max_tokens: int) -> tuple[list[int], list[int]]:
    """Google BERT's ``truncate_seq_pair``: drop tokens from the end of the longer segment until the
    pair fits ``max_tokens``."""
    a, b = list(a), list(b)
    while len(a) + len(b) > max_tokens:
        (a if len(a) > len(b) else b).pop()
    return a, b


class PairSampler:
    """Seeded next-sentence pairs from encoded documents (:func:`encode_documents`).

    Segment A is one or more consecutive sentences of a document, up to about half of
    ``max_length``; with probability 1/2 segment B is the sentences that follow it (label
    ``IS_NEXT``), else sentences from a random start in **another** document (``NOT_NEXT``); the
    pair is cut to ``max_length - 3`` tokens (``[CLS] A [SEP] B [SEP]``) by :func:`truncate_pair`."""

    def __init__(self, encoded, tokenizer, max_length: int = 64, seed: int = 0):
        if max_length < 8:
            raise ValueError(f"max_length must be >= 8 tokens, got {max_length!r}.")
        self.docs = [encoded[i] for i in self.kept_documents(encoded)]
        if len(self.docs) < 2:
            raise ValueError("need at least 2 documents of 2 or more sentences to build next-sentence pairs.")
        self.tok, self.max_length = tokenizer, max_length
        self.rng = np.random.default_rng(seed)

    @staticmethod
    def kept_documents(encoded) -> list[int]:
        """Indices of the documents a sampler draws from: two or more sentences, the first two not
        empty (a pair's document indices refer to this list)."""
        return [i for i, d in enumerate(encoded) if len(d) >= 2 and all(len(s) for s in d[:2])]

    def _span(self, doc, start, budget):
        out, i = [], start
        while i < len(doc) and (not out or len(out) + len(doc[i]) <= budget):
            out += doc[i]
            i += 1
        return out, i

    def pair(self) -> tuple[list[int], list[int], int]:
        """``(segment A ids, segment B ids, label)``."""
        return self.pair_with_documents()[:3]

    def pair_with_documents(self) -> tuple[list[int], list[int], int, int, int]:
        """:meth:`pair` plus the documents the two segments come from (indices into ``self.docs``;
        equal for ``IS_NEXT``): the unit an evaluation resamples. Same draws as :meth:`pair`."""
        budget = self.max_length - 3
        d = int(self.rng.integers(len(self.docs)))
        doc = self.docs[d]
        start = int(self.rng.integers(len(doc) - 1))
        a, end = self._span(doc, start, budget // 2)
        if end >= len(doc) or self.rng.random() < 0.5:
            other = int(self.rng.integers(len(self.docs) - 1))
            other += other >= d  # any document but this one
            odoc = self.docs[other]
            b, _ = self._span(odoc, int(self.rng.integers(len(odoc))), budget - len(a))
            label, doc_b = NOT_NEXT, other
        else:
            b, _ = self._span(doc, end, budget - len(a))
            label, doc_b = IS_NEXT, d
        a, b = truncate_pair(a, b, budget)
        return a, b, label, d, doc_b

    def batch(self, size: int) -> dict[str, torch.Tensor]:
        """``size`` pairs, padded to the longest: input_ids, token_type_ids, attention_mask,
        special_tokens_mask and next_sentence_label."""
        t = self.tok
        rows = [self.pair() for _ in range(size)]
        seqs = [[t.cls_token_id] + a + [t.sep_token_id] + b + [t.sep_token_id] for a, b, _ in rows]
        width = max(map(len, seqs))
        ids = torch.full((size, width), t.pad_token_id, dtype=torch.long)  # cpu: a batch is built on the CPU, moved by the training step
        types = torch.zeros_like(ids)
        special = torch.ones_like(ids, dtype=torch.bool)
        for r, ((a, b, _), seq) in enumerate(zip(rows, seqs)):
            ids[r, :len(seq)] = torch.tensor(seq)  # cpu: into the CPU batch
            types[r, len(a) + 2:len(seq)] = 1
            special[r, 1:len(a) + 1] = False
            special[r, len(a) + 2:len(seq) - 1] = False
        return {"input_ids": ids, "token_type_ids": types, "attention_mask": (ids != t.pad_token_id).long(),
                "special_tokens_mask": special,
                "next_sentence_label": torch.tensor([lab for *_, lab in rows], dtype=torch.long)}  # cpu: CPU batch


def mask_tokens(input_ids: torch.Tensor, special_tokens_mask: torch.Tensor, *, mask_token_id: int, vocab_size: int,
                generator: torch.Generator | None = None, probability: float = 0.15,
                mask_share: float = 0.8, random_share: float = 0.1) -> tuple[torch.Tensor, torch.Tensor]:
    """BERT's masking (Devlin et al., 2019, section 3.1), written out: every non-special position
    is chosen with probability ``probability``; a chosen position becomes ``[MASK]`` with
    probability ``mask_share``, a uniformly random vocabulary id with probability ``random_share``,
    and stays as it was otherwise. Returns ``(inputs, labels)``: labels hold the original id at the
    chosen positions and :data:`IGNORE` (-100) everywhere else.

    Like ``DataCollatorForLanguageModeling`` each position is chosen independently (a Bernoulli
    draw); Google's original code picked exactly ``round(15 %)`` positions per sequence instead.

    With a ``generator`` (a seeded CPU ``torch.Generator``) the draws are made on the CPU and moved
    to the batch's device, so a seed gives the same masks everywhere. Without one they come from
    torch's global generator of the batch's own device (seed it with ``torch.manual_seed``): the
    fast path for a batch that lives on a GPU, reproducible on the same device only."""
    if not 0 < probability < 1 or not 0 <= mask_share + random_share <= 1:
        raise ValueError(f"need 0 < probability < 1 and mask_share + random_share <= 1, got "
                         f"{probability}, {mask_share}, {random_share}.")
    if input_ids.shape != special_tokens_mask.shape:
        raise ValueError(f"input_ids {tuple(input_ids.shape)} and special_tokens_mask "
                         f"{tuple(special_tokens_mask.shape)} must have the same shape.")
    u = _uniform(input_ids, generator)
    chosen = (u < probability) & ~special_tokens_mask.bool()
    labels = torch.where(chosen, input_ids, torch.full_like(input_ids, IGNORE))
    # which of the three happens to a chosen position
    action = _uniform(input_ids, generator)
    to_mask = chosen & (action < mask_share)
    to_random = chosen & (action >= mask_share) & (action < mask_share + random_share)
    if generator is None:  # torch's global (seeded) generator of the batch's own device: no copy per batch
        random_ids = torch.randint(vocab_size, input_ids.shape, device=input_ids.device)
    else:
        random_ids = torch.randint(vocab_size, input_ids.shape, generator=generator).to(input_ids.device)
    inputs = input_ids.clone()
    inputs[to_mask] = mask_token_id
    inputs[to_random] = random_ids[to_random]
    return inputs, labels


def _uniform(like: torch.Tensor, generator: torch.Generator | None) -> torch.Tensor:
    """Uniform draws of ``like``'s shape on ``like``'s device (see :func:`mask_tokens`)."""
    if generator is None:
        return torch.rand(like.shape, device=like.device)
    return torch.rand(like.shape, generator=generator).to(like.device)  # seeded on the CPU, then moved


def masking_counts(original: torch.Tensor, inputs: torch.Tensor, labels: torch.Tensor, special_tokens_mask,
                   mask_token_id: int) -> dict[str, int]:
    """How a masking treated a batch: ``candidates`` (non-special positions), ``chosen`` (scored:
    label != -100), and among the chosen ``mask`` ([MASK]), ``changed`` (another id, not [MASK])
    and ``kept`` (the original id). A random id that happens to equal the original counts as kept,
    which is also what the learner sees."""
    chosen = labels != IGNORE
    cand = ~special_tokens_mask.bool()
    if (chosen & ~cand).any():
        raise ValueError("a special position ([CLS], [SEP], [PAD]) was chosen for masking.")
    if (labels[chosen] != original[chosen]).any():
        raise ValueError("labels must hold the original id at every chosen position.")
    is_mask = inputs == mask_token_id
    return {"candidates": int(cand.sum()), "chosen": int(chosen.sum()), "mask": int((chosen & is_mask).sum()),
            "changed": int((chosen & ~is_mask & (inputs != original)).sum()),
            "kept": int((chosen & (inputs == original)).sum())}
