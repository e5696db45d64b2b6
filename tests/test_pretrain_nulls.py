"""helpers/pretrain/nulls.py: the two fill-mask nulls (course-mini's card and lesson 05), on pools of
real pairs from the course's corpus with course-mini's committed tokenizer, and on a hand-made pool."""

import math

import numpy as np
import pytest

from helpers.mini.data import load_tokenizer
from helpers.pretrain.data import PairPool, encode_documents, load_corpus, make_pool, pool_positions, split_documents
from helpers.pretrain.nulls import BigramContext, PositionSegmentUnigram


@pytest.fixture(scope="module")
def small():
    tok = load_tokenizer()
    train, test = split_documents(load_corpus(max_documents=30), 0.2, seed=0)
    return tok, encode_documents(tok, train), encode_documents(tok, test)


def test_position_segment_null_is_the_most_frequent_token_per_cell(small):
    tok, enc, _ = small
    pool = make_pool(enc, tok, 300, 64, seed=2)
    null = PositionSegmentUnigram.fit(pool, len(tok), bucket=8)
    ids, pos, seg = pool_positions(pool)
    for b, s in ((0, 0), (3, 1), (5, 1)):
        cell = ids[(pos // 8 == b) & (seg == s)]
        if len(cell):
            counts = np.bincount(cell, minlength=len(tok))
            assert counts[null.top[b, s, 0]] == counts.max()


def test_bigram_null_scores_by_hand(small):
    """On a hand-made pool: after 'a' comes 'b' twice and 'c' once, and 'd' follows only 'c', so
    with its left neighbour 'a' the null guesses 'b'; with right neighbour 'd' too, 'c'."""
    tok, _, _ = small
    v = 12
    ids = np.array([[2, 5, 6, 3, 0], [2, 5, 6, 3, 0], [2, 5, 7, 8, 3]], dtype=np.int32)  # 5=a 6=b 7=c 8=d
    pool = PairPool(ids, np.array([2, 2, 2]), np.array([4, 4, 5]), np.zeros(3, np.int32), np.zeros(3, np.int32),
                       np.zeros(3, np.int32))
    null = BigramContext.fit(pool, v, lam=0.99)
    top = null.topk(np.array([5, 5, -1]), np.array([-1, 8, -1]), k=2)
    assert top[0, 0] == 6 and top[1, 0] == 7
    uni = np.bincount(ids[np.arange(5)[None] < pool.length[:, None]], minlength=v) + 1.0  # add-one counts
    assert np.allclose(null.unigram, uni / uni.sum()) and math.isclose(null.unigram.sum(), 1.0, rel_tol=1e-5)
    assert top[2, 0] == int(np.argmax(uni))  # no neighbour: the most frequent token (ties: the lowest id)
