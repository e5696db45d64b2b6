"""helpers/pretrain/course_mini.py: the pair pool, the device-side batches, both nulls, the size
budget, the card's consistency check and (slow) a resumed training run equal to an uninterrupted one."""

import json
import math
import shutil

import numpy as np
import pytest
import torch

from helpers.model.paths import COURSE_MINI_DIR
from helpers.pretrain import course_mini as cm
from helpers.pretrain.data import PairSampler, encode_documents, load_corpus, split_documents


@pytest.fixture(scope="module")
def small():
    tok = cm.load_tokenizer()
    train, test = split_documents(load_corpus(max_documents=30), 0.2, seed=0)
    return tok, encode_documents(tok, train), encode_documents(tok, test)


def test_pool_batches_are_the_pair_samplers_batches(small):
    """The packed pool, turned into a batch on the device's side, is PairSampler.batch's layout:
    the same ids, segments, attention and special positions for the same seeded pairs."""
    tok, enc, _ = small
    pool = cm.make_pool(enc, tok, 40, 64, seed=3, chunk=40)
    ref = PairSampler(enc, tok, 64, seed=3 * 1_000_003).batch(40)  # chunk 0's seed
    got = cm.pool_batch(pool.tensors("cpu"), torch.arange(40), tok.pad_token_id)
    width = ref["input_ids"].shape[1]
    for key in ("input_ids", "token_type_ids", "attention_mask", "special_tokens_mask", "next_sentence_label"):
        g = got[key] if key == "next_sentence_label" else got[key][:, :width]
        assert torch.equal(g.long(), ref[key].long()), key
    assert (got["input_ids"][:, width:] == tok.pad_token_id).all()
    assert ((pool.doc_a == pool.doc_b) == (pool.label == 0)).all()  # IS_NEXT pairs stay in one document


def test_pool_is_the_same_for_any_number_of_workers(small):
    tok, enc, _ = small
    one = cm.make_pool(enc, tok, 50, 48, seed=1, chunk=16)
    two = cm.make_pool(enc, tok, 50, 48, seed=1, chunk=16, workers=2)
    assert len(one) == 50 and all(np.array_equal(getattr(one, k), getattr(two, k)) for k in
                                  ("ids", "len_a", "length", "label", "doc_a", "doc_b"))
    with pytest.raises(ValueError, match="workers"):
        cm.make_pool(enc, tok, 10, 48, seed=1, workers=0)


def test_position_segment_null_is_the_most_frequent_token_per_cell(small):
    tok, enc, _ = small
    pool = cm.make_pool(enc, tok, 300, 64, seed=2)
    null = cm.PositionSegmentUnigram.fit(pool, len(tok), bucket=8)
    ids, pos, seg = cm._candidates(pool)
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
    pool = cm.PairPool(ids, np.array([2, 2, 2]), np.array([4, 4, 5]), np.zeros(3, np.int32), np.zeros(3, np.int32),
                       np.zeros(3, np.int32))
    null = cm.BigramContext.fit(pool, v, lam=0.99)
    top = null.topk(np.array([5, 5, -1]), np.array([-1, 8, -1]), k=2)
    assert top[0, 0] == 6 and top[1, 0] == 7
    uni = np.bincount(ids[np.arange(5)[None] < pool.length[:, None]], minlength=v) + 1.0  # add-one counts
    assert np.allclose(null.unigram, uni / uni.sum()) and math.isclose(null.unigram.sum(), 1.0, rel_tol=1e-5)
    assert top[2, 0] == int(np.argmax(uni))  # no neighbour: the most frequent token (ties: the lowest id)


def test_the_size_budget_is_read_from_the_config():
    assert 0 < cm.weights_mib() <= cm.WEIGHT_BUDGET_MIB
    from dataclasses import replace

    with pytest.raises(ValueError, match="MiB"):
        cm.check_budget(replace(cm.MINI, hidden=768, heads=12, intermediate=3072, layers=12))


def test_the_card_refuses_weights_that_were_not_evaluated(tmp_path):
    from helpers.pretrain.course_mini_card import card_text

    for name in ("config.json", cm.RUN, cm.EVALUATION, cm.LOG, cm.WEIGHTS):
        shutil.copy(COURSE_MINI_DIR / name, tmp_path / name)
    evaluation = json.loads((tmp_path / cm.EVALUATION).read_text())
    assert "sha256" in card_text(tmp_path)
    evaluation["weights_sha256"] = "0" * 64
    (tmp_path / cm.EVALUATION).write_text(json.dumps(evaluation))
    with pytest.raises(ValueError, match="evaluate"):
        card_text(tmp_path)


@pytest.mark.slow
def test_a_resumed_run_equals_an_uninterrupted_one(tmp_path):
    """Two steps in one call, and the same two steps as one step, a saved state and a resumed call:
    the same weights (the CPU's random draws are restored from the state)."""
    kw = dict(device="cpu", batch_size=2, pool_pairs=64, dev_pairs=4, log_every=1, eval_seconds=1e9,
              save_seconds=1e9)
    whole = cm.train(out=tmp_path / "a", state_dir=tmp_path / "sa", steps=2, **kw)
    cm.train(out=tmp_path / "b", state_dir=tmp_path / "sb", steps=2, max_seconds=0, **kw)
    state = torch.load(tmp_path / "sb" / "state.pt", weights_only=False)
    assert state["step"] == 1
    resumed = cm.train(out=tmp_path / "b", state_dir=tmp_path / "sb", resume=True, **kw)
    assert whole["steps_done"] == resumed["steps_done"] == 2
    a = torch.load(tmp_path / "sa" / "state.pt", weights_only=False)["model"]
    b = torch.load(tmp_path / "sb" / "state.pt", weights_only=False)["model"]
    assert all(torch.equal(a[k], b[k]) for k in a)
    with pytest.raises(ValueError, match="same settings"):
        cm.train(out=tmp_path / "b", state_dir=tmp_path / "sb", resume=True, **{**kw, "batch_size": 4})
