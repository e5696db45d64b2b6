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


def train_wordpiece(docs: list[Document], vocab_size: int = 8000, max_length: int = 128,
                    limit_alphabet: int | None = None):
    """A lower-casing BERT WordPiece vocabulary of ``vocab_size`` entries learnt on ``docs`` with
    the ``tokenizers`` library, wrapped as a ``BertTokenizerFast`` (saved and loaded like any
    BERT tokenizer).

    The trainer breaks ties between equally frequent pairs in an order that changes from one
    process to the next, so two runs can learn slightly different vocabularies. The first
    vocabulary learnt for these documents and sizes is therefore kept in the course cache
    (``$COURSE_CACHE/pretrain/vocab-<hash>``) and reused, so a rerun of lesson 05 tokenizes as
    the cached training run did (:func:`vocabulary_hash` is part of a run's fingerprint too).

    ``limit_alphabet`` keeps that many of the most frequent characters as entries (the trainer's
    default keeps 1,000): Chinese text, where every character is a token as in bert-base-chinese,
    needs thousands (:func:`helpers.pretrain.corpora.lesson_corpus` sets it)."""
    from transformers import BertTokenizerFast

    if isinstance(vocab_size, bool) or not isinstance(vocab_size, int) or vocab_size < 200:
        raise ValueError(f"vocab_size must be an int >= 200, got {vocab_size!r}.")
    from helpers.model.paths import course_cache

    alphabet = "" if limit_alphabet is None else f"alphabet {limit_alphabet}|"
    key = hashlib.sha256(f"{vocab_size}|{max_length}|{alphabet}".encode())
    for d in docs:
        for sentence in d.sentences:
            key.update(sentence.encode("utf-8") + b"\n")
    root = course_cache()
    folder = None if root is None else root / "pretrain" / f"vocab-{key.hexdigest()[:16]}"
    if folder is not None and (folder / "tokenizer.json").exists():
        return BertTokenizerFast.from_pretrained(str(folder), model_max_length=max_length)
    tok = (_learn_wordpiece(docs, vocab_size, max_length) if limit_alphabet is None
           else _learn_wordpiece(docs, vocab_size, max_length, limit_alphabet=limit_alphabet))
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


def learn_wordpiece(docs: list[Document], vocab_size: int, max_length: int, limit_alphabet: int | None = None):
    from tokenizers import BertWordPieceTokenizer
    from transformers import BertTokenizerFast

    wp = BertWordPieceTokenizer(lowercase=True)
    wp.train_from_iterator((s for d in docs for s in d.sentences), vocab_size=vocab_size, min_frequency=2,
                           special_tokens=list(SPECIAL_TOKENS), show_progress=False,
                           **({} if limit_alphabet is None else {"limit_alphabet": limit_alphabet}))
    tok = BertTokenizerFast(tokenizer_object=wp._tokenizer, do_lower_case=True, model_max_length=max_length,
                            pad_token="[PAD]", unk_token="[UNK]", cls_token="[CLS]", sep_token="[SEP]",
                            mask_token="[MASK]")
    return tok


_learn_wordpiece = learn_wordpiece  # the name train_vocabulary calls (a test replaces it there)


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


# ------------------------------------------------------------------------------ pools of pairs (course-mini, lesson 05's nulls)
@dataclass
class PairPool:
    """Next-sentence pairs packed into fixed-width arrays: ``ids`` ``[N, width]`` ([CLS] A [SEP] B
    [SEP], then padding), the lengths of A and of the whole pair, the label, and the documents
    (indices into the sampler's documents) that A and B come from."""

    ids: np.ndarray
    len_a: np.ndarray
    length: np.ndarray
    label: np.ndarray
    doc_a: np.ndarray
    doc_b: np.ndarray

    def __len__(self) -> int:
        return len(self.ids)

    def tensors(self, device) -> dict[str, torch.Tensor]:
        """The pool on ``device`` (ids as int32: half the memory of int64)."""
        return {k: torch.from_numpy(getattr(self, k)).to(device)  # cpu: numpy arrays, then moved
                for k in ("ids", "len_a", "length", "label")}

_POOL_ARGS: dict = {}  # what forked pool workers read (set before the processes start)

def _pool_chunk(index: int, size: int) -> PairPool:
    a = _POOL_ARGS
    sampler = PairSampler(a["encoded"], a["tokenizer"], a["max_length"], seed=a["seed"] * 1_000_003 + index)
    rows = [sampler.pair_with_documents() for _ in range(size)]
    ids = np.full((size, a["max_length"]), a["pad"], dtype=np.int32)
    for i, (sa, sb, *_r) in enumerate(rows):
        seq = [a["cls"], *sa, a["sep"], *sb, a["sep"]]
        ids[i, :len(seq)] = seq
    len_a = np.array([len(r[0]) for r in rows], dtype=np.int32)
    length = len_a + np.array([len(r[1]) for r in rows], dtype=np.int32) + 3
    label, doc_a, doc_b = (np.array([r[k] for r in rows], dtype=np.int32) for k in (2, 3, 4))
    return PairPool(ids, len_a, length, label, doc_a, doc_b)

def make_pool(encoded, tokenizer, n: int, max_length: int, seed: int, *, workers: int = 1,
              chunk: int = 32768) -> PairPool:
    """``n`` next-sentence pairs from ``encoded`` documents, drawn by :class:`PairSampler` in chunks
    of ``chunk`` pairs, chunk ``c`` seeded by ``(seed, c)``: the same pool for any ``workers``."""
    from concurrent.futures import ProcessPoolExecutor
    import multiprocessing

    for name, value in (("n", n), ("workers", workers), ("chunk", chunk)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive int, got {value!r}.")
    _POOL_ARGS.update(encoded=encoded, tokenizer=tokenizer, max_length=max_length, seed=seed,
                      pad=tokenizer.pad_token_id, cls=tokenizer.cls_token_id, sep=tokenizer.sep_token_id)
    sizes = [min(chunk, n - start) for start in range(0, n, chunk)]
    if workers > 1 and len(sizes) > 1:
        ctx = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(min(workers, len(sizes)), mp_context=ctx) as ex:
            parts = list(ex.map(_pool_chunk, range(len(sizes)), sizes))
    else:
        parts = [_pool_chunk(i, s) for i, s in enumerate(sizes)]
    return PairPool(*(np.concatenate([getattr(p, k) for p in parts]) for k in
                      ("ids", "len_a", "length", "label", "doc_a", "doc_b")))

def pool_batch(pool: dict[str, torch.Tensor], rows: torch.Tensor, pad_id: int) -> dict[str, torch.Tensor]:
    """The pairs ``rows`` of a pool on the device (:meth:`PairPool.tensors`) as a BERT batch:
    input_ids, token_type_ids (1 from B's first token to its [SEP]), attention_mask,
    special_tokens_mask ([CLS], both [SEP] and padding) and next_sentence_label."""
    ids = pool["ids"][rows].long()
    len_a, length = pool["len_a"][rows, None].long(), pool["length"][rows, None].long()
    pos = torch.arange(ids.shape[1], device=ids.device)[None]
    real = pos < length
    in_a = (pos >= 1) & (pos <= len_a)
    in_b = (pos >= len_a + 2) & (pos < length - 1)
    return {"input_ids": ids, "token_type_ids": ((pos >= len_a + 2) & real).long(), "attention_mask": real.long(),
            "special_tokens_mask": ~(in_a | in_b), "next_sentence_label": pool["label"][rows].long()}

def pool_positions(pool: PairPool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Non-special positions of a pool: ``(ids, positions, segments)``, flattened."""
    width = pool.ids.shape[1]
    pos = np.arange(width)[None]
    la, ln = pool.len_a[:, None], pool.length[:, None]
    in_a = (pos >= 1) & (pos <= la)
    in_b = (pos >= la + 2) & (pos < ln - 1)
    keep = in_a | in_b
    rows, cols = np.nonzero(keep)
    return pool.ids[rows, cols], cols, in_b[rows, cols].astype(np.int64)


@dataclass
class HeldOut:
    """Every scored position of a held-out batch (all of them real ``[MASK]`` s): its answer, the
    document it belongs to (the unit to resample), its position and segment, its neighbours in the
    input (``-1`` where a neighbour is itself masked), and the pair it sits in."""

    inputs: torch.Tensor
    batch: dict
    answer: np.ndarray
    document: np.ndarray
    position: np.ndarray
    segment: np.ndarray
    left: np.ndarray
    right: np.ndarray
    pair: np.ndarray
    pair_document: np.ndarray  # per pair: segment A's document (next-sentence outcomes resample it)
    pair_document_b: np.ndarray  # per pair: segment B's document

    def __len__(self) -> int:
        return len(self.answer)

def held_out(tokenizer, encoded, n_pairs: int, max_length: int, seed: int) -> HeldOut:
    """``n_pairs`` seeded pairs from ``encoded`` (held-out) documents with 15 % of their non-special
    positions replaced by ``[MASK]`` -- all of them, no random or kept tokens, so each scored
    position is a real fill-in-the-blank (as :func:`helpers.pretrain.compute.heldout_batch`)."""
    if isinstance(n_pairs, bool) or not isinstance(n_pairs, int) or n_pairs < 2:
        raise ValueError(f"n_pairs must be an int >= 2, got {n_pairs!r}.")
    pool = make_pool(encoded, tokenizer, n_pairs, max_length, seed)
    batch = pool_batch(pool.tensors("cpu"), torch.arange(len(pool)), tokenizer.pad_token_id)  # cpu: evaluation batch
    inputs, labels = mask_tokens(batch["input_ids"], batch["special_tokens_mask"], mask_token_id=tokenizer.mask_token_id,
                                 vocab_size=len(tokenizer), generator=torch.Generator().manual_seed(seed),
                                 mask_share=1.0, random_share=0.0)
    where = (labels != IGNORE).nonzero().cpu().numpy()
    rows, cols = where[:, 0], where[:, 1]
    ids = inputs.cpu().numpy()
    segment = batch["token_type_ids"].cpu().numpy()[rows, cols]
    left = ids[rows, cols - 1]
    right = ids[rows, np.minimum(cols + 1, ids.shape[1] - 1)]
    masked = tokenizer.mask_token_id
    left = np.where(left == masked, -1, left)
    right = np.where(right == masked, -1, right)
    document = np.where(segment == 0, pool.doc_a[rows], pool.doc_b[rows])
    return HeldOut(inputs, {**batch, "labels": labels}, labels.cpu().numpy()[rows, cols], document, cols, segment,
                   left, right, rows, pool.doc_a, pool.doc_b)
