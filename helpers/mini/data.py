"""course-mini's data (:mod:`helpers.mini`): the corpus of ``data/pretrain/`` split by document
into training, dev and test documents; the committed WordPiece tokenizer; a *pool* of
next-sentence pairs drawn once by lesson 05's :class:`~helpers.pretrain.data.PairSampler` and packed
into fixed-width arrays that live on the training device, so that every step only draws rows and
masks them there (:func:`pool_batch` + :func:`~helpers.pretrain.data.mask_tokens`); the fixed dev
batch; the held-out fill-mask batch of the model card (:func:`held_out`: every scored position a
real ``[MASK]``, each with its document, the unit to resample).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from helpers.model.paths import COURSE_MINI_DIR
from helpers.pretrain.data import IGNORE, PairSampler, load_corpus, mask_tokens, split_documents

MAX_LENGTH = 128  # tokens per pair ([CLS] A [SEP] B [SEP]), as the shipped config's positions
VOCAB_SIZE = 8192  # WordPieces learnt on the training documents (see data/course_mini/README.md)
TEST_SHARE, DEV_SHARE, SPLIT_SEED = 0.10, 0.05, 0  # shares of all documents; whole documents
EVAL_SEED = 2024


def splits(seed: int = SPLIT_SEED):
    """``(train, dev, test)`` documents of the whole corpus: :data:`TEST_SHARE` of the documents
    held out for the model card, :data:`DEV_SHARE` for choosing (the checkpoint, the null's
    smoothing), the rest for training. Whole documents, so no held-out sentence's scene or
    chapter was seen in training."""
    rest, test = split_documents(load_corpus(), TEST_SHARE, seed=seed)
    train, dev = split_documents(rest, DEV_SHARE / (1 - TEST_SHARE), seed=seed + 1)
    return train, dev, test

def load_tokenizer(folder: Path | str = COURSE_MINI_DIR):
    """The committed lower-casing WordPiece tokenizer of course-mini."""
    from transformers import BertTokenizerFast

    folder = Path(folder)
    if not (folder / "tokenizer.json").exists():
        raise FileNotFoundError(f"no tokenizer in {folder}: run `python -m helpers.mini.compute vocab` "
                                "(it learns the vocabulary on the training split and saves it there).")
    return BertTokenizerFast.from_pretrained(str(folder))

def build_vocabulary(folder: Path | str = COURSE_MINI_DIR, vocab_size: int = VOCAB_SIZE,
                     max_length: int = MAX_LENGTH):
    """Learn the WordPiece vocabulary on the **training** documents only and save it to ``folder``.
    Run once: the trainer may break ties differently in another process, so the committed files,
    not a rerun, define course-mini's tokens."""
    from helpers.pretrain.data import _learn_wordpiece

    train, _, _ = splits()
    tok = _learn_wordpiece(train, vocab_size, max_length)
    Path(folder).mkdir(parents=True, exist_ok=True)
    tok.save_pretrained(str(folder))
    vocab = tok.get_vocab()  # vocab.txt too (one WordPiece a line, in id order): BERT's classic format
    (Path(folder) / "vocab.txt").write_text("".join(t + "\n" for t in sorted(vocab, key=vocab.get)), encoding="utf-8")
    return tok

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

def dev_batch(tokenizer, encoded_dev, n_pairs: int, max_length: int, device, seed: int = EVAL_SEED) -> dict:
    """A fixed dev batch: ``n_pairs`` pairs from dev documents, masked once like training (15 %,
    80/10/10) with a seeded CPU generator."""
    pool = make_pool(encoded_dev, tokenizer, n_pairs, max_length, seed)
    batch = pool_batch(pool.tensors("cpu"), torch.arange(len(pool)), tokenizer.pad_token_id)  # cpu: built once
    inputs, labels = mask_tokens(batch["input_ids"], batch["special_tokens_mask"], mask_token_id=tokenizer.mask_token_id,
                                 vocab_size=len(tokenizer), generator=torch.Generator().manual_seed(seed))
    return {k: v.to(device) for k, v in {**batch, "inputs": inputs, "labels": labels}.items()}

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

def held_out(tokenizer, encoded, n_pairs: int, max_length: int = MAX_LENGTH, seed: int = EVAL_SEED) -> HeldOut:
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
