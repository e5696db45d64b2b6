"""helpers/mini/data.py on the real corpus: the pair pool and its batches (the same layout as lesson
05's PairSampler.batch), the pool's independence from the number of processes, the held-out batch."""

import numpy as np
import pytest
import torch

from helpers.mini import data as md
from helpers.pretrain.data import IGNORE, PairSampler, encode_documents, load_corpus, split_documents


@pytest.fixture(scope="module")
def small():
    tok = md.load_tokenizer()
    train, test = split_documents(load_corpus(max_documents=30), 0.2, seed=0)
    return tok, encode_documents(tok, train), encode_documents(tok, test)


def test_pool_batches_are_the_pair_samplers_batches(small):
    """The packed pool, turned into a batch on the device's side, is PairSampler.batch's layout:
    the same ids, segments, attention and special positions for the same seeded pairs."""
    tok, enc, _ = small
    pool = md.make_pool(enc, tok, 40, 64, seed=3, chunk=40)
    ref = PairSampler(enc, tok, 64, seed=3 * 1_000_003).batch(40)  # chunk 0's seed
    got = md.pool_batch(pool.tensors("cpu"), torch.arange(40), tok.pad_token_id)
    width = ref["input_ids"].shape[1]
    for key in ("input_ids", "token_type_ids", "attention_mask", "special_tokens_mask", "next_sentence_label"):
        g = got[key] if key == "next_sentence_label" else got[key][:, :width]
        assert torch.equal(g.long(), ref[key].long()), key
    assert (got["input_ids"][:, width:] == tok.pad_token_id).all()
    assert ((pool.doc_a == pool.doc_b) == (pool.label == 0)).all()  # IS_NEXT pairs stay in one document


def test_pool_is_the_same_for_any_number_of_workers(small):
    tok, enc, _ = small
    one = md.make_pool(enc, tok, 50, 48, seed=1, chunk=16)
    two = md.make_pool(enc, tok, 50, 48, seed=1, chunk=16, workers=2)
    assert len(one) == 50 and all(np.array_equal(getattr(one, k), getattr(two, k)) for k in
                                  ("ids", "len_a", "length", "label", "doc_a", "doc_b"))
    with pytest.raises(ValueError, match="workers"):
        md.make_pool(enc, tok, 10, 48, seed=1, workers=0)


def test_held_out_scores_only_masks_and_names_each_positions_document(small):
    tok, _, enc_test = small
    ho = md.held_out(tok, enc_test, 24, max_length=64, seed=5)
    ids = ho.batch["input_ids"].numpy()
    assert (ho.inputs.numpy()[ho.pair, ho.position] == tok.mask_token_id).all()  # every scored position is a [MASK]
    assert (ids[ho.pair, ho.position] == ho.answer).all()
    assert (ho.batch["labels"] != IGNORE).sum() == len(ho)
    seg = ho.batch["token_type_ids"].numpy()[ho.pair, ho.position]
    assert (seg == ho.segment).all() and set(np.unique(ho.segment)) <= {0, 1}
    sampler = PairSampler(enc_test, tok, 64, seed=5 * 1_000_003)  # the pool's first chunk
    docs = [sampler.pair_with_documents()[3:] for _ in range(24)]
    expected = [docs[p][s] for p, s in zip(ho.pair, ho.segment)]
    assert ho.document.tolist() == expected  # A's positions belong to A's document, B's to B's
    left = ho.inputs.numpy()[ho.pair, ho.position - 1]
    assert ((ho.left == -1) == (left == tok.mask_token_id)).all()
    with pytest.raises(ValueError, match="n_pairs"):
        md.held_out(tok, enc_test, 1)


def test_a_missing_tokenizer_says_how_to_make_it(tmp_path):
    with pytest.raises(FileNotFoundError, match="vocab"):
        md.load_tokenizer(tmp_path)
