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
from helpers.pretrain.data import (IGNORE, HeldOut, PairPool, PairSampler, load_corpus, make_pool,  # noqa: F401 - course-mini's names
                                   mask_tokens, pool_batch, pool_positions, split_documents)
from helpers.pretrain.data import held_out as pretrain_held_out

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
    from helpers.pretrain.data import learn_wordpiece

    train, _, _ = splits()
    tok = learn_wordpiece(train, vocab_size, max_length)
    Path(folder).mkdir(parents=True, exist_ok=True)
    tok.save_pretrained(str(folder))
    vocab = tok.get_vocab()  # vocab.txt too (one WordPiece a line, in id order): BERT's classic format
    (Path(folder) / "vocab.txt").write_text("".join(t + "\n" for t in sorted(vocab, key=vocab.get)), encoding="utf-8")
    return tok

def dev_batch(tokenizer, encoded_dev, n_pairs: int, max_length: int, device, seed: int = EVAL_SEED) -> dict:
    """A fixed dev batch: ``n_pairs`` pairs from dev documents, masked once like training (15 %,
    80/10/10) with a seeded CPU generator."""
    pool = make_pool(encoded_dev, tokenizer, n_pairs, max_length, seed)
    batch = pool_batch(pool.tensors("cpu"), torch.arange(len(pool)), tokenizer.pad_token_id)  # cpu: built once
    inputs, labels = mask_tokens(batch["input_ids"], batch["special_tokens_mask"], mask_token_id=tokenizer.mask_token_id,
                                 vocab_size=len(tokenizer), generator=torch.Generator().manual_seed(seed))
    return {k: v.to(device) for k, v in {**batch, "inputs": inputs, "labels": labels}.items()}

def held_out(tokenizer, encoded, n_pairs: int, max_length: int = MAX_LENGTH, seed: int = EVAL_SEED) -> HeldOut:
    """:func:`helpers.pretrain.data.held_out` with course-mini's pair length and evaluation seed:
    ``n_pairs`` seeded pairs from ``encoded`` (held-out) documents, every scored position a real
    ``[MASK]``."""
    return pretrain_held_out(tokenizer, encoded, n_pairs, max_length, seed)
