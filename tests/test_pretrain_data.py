"""helpers/pretrain/data.py on the real corpus of data/pretrain/."""

import gzip
import json
import hashlib

import pytest
import torch
from transformers import DataCollatorForLanguageModeling

from helpers.pretrain.data import (CORPUS_DIR, IGNORE, IS_NEXT, NOT_NEXT, PairSampler, encode_documents, load_corpus,
                                   mask_tokens, masking_counts, split_documents, train_wordpiece, truncate_pair)
from helpers.common.stats import clopper_pearson


@pytest.fixture(scope="module")
def small():
    docs = load_corpus(max_documents=60)
    train, test = split_documents(docs, 0.1, seed=0)
    tok = train_wordpiece(train, 1000, 64)
    return train, test, tok, encode_documents(tok, train)


def test_corpus_files_match_their_recorded_checksums():
    record = json.loads((CORPUS_DIR / "SOURCES.json").read_text())
    for name, info in record.items():
        path = CORPUS_DIR / info["output"]
        assert hashlib.sha256(path.read_bytes()).hexdigest() == info["output_sha256"], name
        text = gzip.decompress(path.read_bytes()).decode("utf-8")
        assert "**" not in text and "_Enter" not in text  # speaker names and stage directions were removed
    docs = load_corpus()
    assert len([d for d in docs if d.source == "kjv"]) == 1189  # the chapters of the King James Bible
    assert sum(len(d.sentences) for d in docs if d.source == "kjv") == 31102  # its verses (3 John 1:15 is "[]" in the source)


def test_split_holds_out_whole_documents():
    docs = load_corpus(max_documents=50)
    train, test = split_documents(docs, 0.2, seed=3)
    assert len(train) + len(test) == len(docs) and not set(train) & set(test)
    assert split_documents(docs, 0.2, seed=3)[1] == test
    with pytest.raises(ValueError, match="held_out"):
        split_documents(docs, 1.5)


def test_wordpiece_vocabulary_round_trips(small):
    _, _, tok, _ = small
    assert len(tok) == 1000 and tok.mask_token == "[MASK]" and tok.pad_token_id == 0
    ids = tok("And God said, Let there be light.")["input_ids"]
    assert ids[0] == tok.cls_token_id and ids[-1] == tok.sep_token_id
    assert tok.decode(ids, skip_special_tokens=True) == "and god said, let there be light."
    with pytest.raises(ValueError, match="vocab_size"):
        train_wordpiece(small[0], 10)


def test_pairs_are_half_random_and_well_formed(small):
    _, _, tok, enc = small
    b = PairSampler(enc, tok, 48, seed=0).batch(600)
    share = clopper_pearson(int((b["next_sentence_label"] == NOT_NEXT).sum()), 600, level=0.999)
    assert share.contains(0.5)
    assert b["input_ids"].shape[1] <= 48
    for row in range(20):
        ids, types = b["input_ids"][row], b["token_type_ids"][row]
        real = ids[b["attention_mask"][row].bool()]
        assert real[0] == tok.cls_token_id and real[-1] == tok.sep_token_id
        assert int((real == tok.sep_token_id).sum()) == 2
        sep = int((real == tok.sep_token_id).nonzero()[0])
        assert (types[: sep + 1] == 0).all() and (types[sep + 1: len(real)] == 1).all()
        assert b["special_tokens_mask"][row][~b["attention_mask"][row].bool()].all()
    assert set(b["next_sentence_label"].tolist()) == {IS_NEXT, NOT_NEXT}


def test_is_next_pairs_continue_the_same_document(small):
    """With one-line documents removed, an IS_NEXT pair's B starts with the line after A's last line."""
    _, _, tok, enc = small
    s = PairSampler(enc, tok, 400, seed=1)  # long enough that nothing is truncated
    flat = {tuple(sent) for d in s.docs for sent in d}
    found = 0
    for _ in range(200):
        a, b, label = s.pair()
        if label == IS_NEXT:
            doc = next(d for d in s.docs if any(list(x) == a[:len(x)] for x in d[:len(d)]) and
                       any(b[:len(x)] == x for x in d))
            found += 1
            assert doc is not None
    assert found > 50 and flat


def test_truncate_pair_trims_the_longer_segment_from_its_end():
    a, b = truncate_pair(list(range(10)), [100, 101, 102], 8)
    assert a == [0, 1, 2, 3, 4] and b == [100, 101, 102]


def test_masking_matches_the_data_collator_in_proportion(small):
    _, _, tok, enc = small
    s = PairSampler(enc, tok, 64, seed=2)
    coll = DataCollatorForLanguageModeling(tok, mlm_probability=0.15, seed=0)
    gen = torch.Generator().manual_seed(0)
    totals = {"hand": {}, "lib": {}}
    for _ in range(15):
        b = s.batch(64)
        ids, special = b["input_ids"], b["special_tokens_mask"]
        for who, (inp, lab) in (("hand", mask_tokens(ids, special, mask_token_id=tok.mask_token_id,
                                                      vocab_size=len(tok), generator=gen)),
                                ("lib", coll.torch_mask_tokens(ids.clone(), special.clone()))):
            assert ((lab == IGNORE) | (lab == ids)).all()
            for k, v in masking_counts(ids, inp, lab, special, tok.mask_token_id).items():
                totals[who][k] = totals[who].get(k, 0) + v
    for who in totals:
        t = totals[who]
        assert clopper_pearson(t["chosen"], t["candidates"], 0.999).contains(0.15), who
        assert clopper_pearson(t["mask"], t["chosen"], 0.999).contains(0.8), who
        assert clopper_pearson(t["kept"], t["chosen"], 0.999).contains(0.1), who


def test_masking_never_touches_special_positions_and_rejects_bad_input(small):
    _, _, tok, enc = small
    b = PairSampler(enc, tok, 64, seed=0).batch(32)
    inp, lab = mask_tokens(b["input_ids"], b["special_tokens_mask"], mask_token_id=tok.mask_token_id,
                           vocab_size=len(tok), generator=torch.Generator().manual_seed(0), probability=0.9)
    assert (lab[b["special_tokens_mask"]] == IGNORE).all()
    assert (inp[b["special_tokens_mask"]] == b["input_ids"][b["special_tokens_mask"]]).all()
    with pytest.raises(ValueError, match="probability"):
        mask_tokens(b["input_ids"], b["special_tokens_mask"], mask_token_id=4, vocab_size=10, probability=0)
    bad = lab.clone()
    bad[0, 0] = 5  # the [CLS] position chosen
    with pytest.raises(ValueError, match="special"):
        masking_counts(b["input_ids"], inp, bad, b["special_tokens_mask"], tok.mask_token_id)
