"""The fill-mask nulls that lesson 05's tiny BERT and course-mini (:mod:`helpers.mini`) are judged
against: what a model could get right at a ``[MASK]`` without reading the sentence.

* :class:`PositionSegmentUnigram` -- null (a): the most frequent training token at each position
  bucket and segment, all that the embeddings can know at a ``[MASK]``;
* :class:`BigramContext` -- null (b): the masked token from its unmasked neighbours' bigram
  statistics on the training split, smoothed with the unigram (Jelinek-Mercer).

Both are fitted on a :class:`~helpers.pretrain.data.PairPool` of training pairs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from helpers.pretrain.data import PairPool, pool_positions


POSITION_BUCKET = 4  # the position/segment null groups positions 0-3, 4-7, ...


@dataclass
class PositionSegmentUnigram:
    """Null (a): the most frequent training token at each position bucket (``bucket`` positions
    wide) and segment. A ``[MASK]``'s input vector is the [MASK] embedding plus its position and
    segment embeddings, so this is what a model could know from the embeddings alone."""

    top: np.ndarray  # [buckets, 2, k] token ids, most frequent first
    bucket: int

    @classmethod
    def fit(cls, pool: PairPool, vocab_size: int, bucket: int = POSITION_BUCKET, k: int = 5):
        ids, pos, seg = pool_positions(pool)
        n_buckets = -(-pool.ids.shape[1] // bucket)
        counts = np.zeros((n_buckets, 2, vocab_size), dtype=np.int64)
        np.add.at(counts, (pos // bucket, seg, ids), 1)
        return cls(np.argsort(-counts, axis=-1, kind="stable")[..., :k], bucket)

    def topk(self, position: np.ndarray, segment: np.ndarray) -> np.ndarray:
        return self.top[np.asarray(position) // self.bucket, np.asarray(segment)]


@dataclass
class BigramContext:
    """Null (b): the masked token from its unmasked neighbours' bigram statistics on the training
    split. Score of a candidate ``w`` between ``l`` and ``r``: ``log P(w | l) + log P(r | w)`` (a
    factor dropped where that neighbour is masked too), each bigram probability interpolated with
    the unigram one (Jelinek-Mercer, weight ``lam`` chosen on the dev split). ``[CLS]`` and
    ``[SEP]`` count as neighbours: they mark segment starts and ends."""

    counts: object  # scipy CSR [V, V]: counts[a, b] = how often b follows a
    unigram: np.ndarray  # [V] probabilities
    lam: float = 0.9

    @classmethod
    def fit(cls, pool: PairPool, vocab_size: int, lam: float = 0.9):
        from scipy.sparse import csr_matrix

        real = np.arange(pool.ids.shape[1])[None] < pool.length[:, None]
        pairs = real[:, :-1] & real[:, 1:]
        a, b = pool.ids[:, :-1][pairs].astype(np.int64), pool.ids[:, 1:][pairs].astype(np.int64)
        counts = csr_matrix((np.ones_like(a, dtype=np.float32), (a, b)), shape=(vocab_size, vocab_size))
        counts.sum_duplicates()
        uni = np.bincount(pool.ids[real].astype(np.int64), minlength=vocab_size).astype(np.float64) + 1.0
        return cls(counts, (uni / uni.sum()).astype(np.float32), lam)

    def topk(self, left: np.ndarray, right: np.ndarray, k: int = 5, chunk: int = 1024) -> np.ndarray:
        rows_out = self.counts.sum(1).A1.astype(np.float32)  # how often each token has a successor
        cols = self.counts.T.tocsr()
        lam, uni = self.lam, self.unigram
        log_uni = np.log(uni)
        out = []
        for start in range(0, len(left), chunk):
            l, r = left[start:start + chunk], right[start:start + chunk]
            score = np.zeros((len(l), len(uni)), dtype=np.float32)
            has_l, has_r = l >= 0, r >= 0
            if has_l.any():  # log P(w | l)
                c = self.counts[l[has_l]].toarray()
                tot = np.maximum(rows_out[l[has_l]], 1.0)[:, None]
                score[has_l] += np.log(lam * c / tot + (1 - lam) * uni)
            if has_r.any():  # log P(r | w)
                c = cols[r[has_r]].toarray()
                p = lam * c / np.maximum(rows_out, 1.0)[None] + (1 - lam) * uni[r[has_r]][:, None]
                score[has_r] += np.log(p)
            score[~has_l & ~has_r] += log_uni
            out.append(_top_k(score, k))
        return np.concatenate(out)


def _top_k(score: np.ndarray, k: int) -> np.ndarray:
    """The ``k`` highest-scoring ids of each row, best first (ties: the lower id first)."""
    part = np.argpartition(-score, k, axis=1)[:, :k]
    vals = np.take_along_axis(score, part, 1)
    order = np.lexsort((part, -vals), axis=1)
    return np.take_along_axis(part, order, 1)
