"""helpers/mini/compute.py: both nulls, the size budget, the card's consistency check and (slow) a
resumed training run equal to an uninterrupted one."""

import json
import math
import shutil

import numpy as np
import pytest
import torch

from helpers.model.paths import COURSE_MINI_DIR
from helpers.mini import compute as cm
from helpers.mini import data as md
from helpers.pretrain.data import encode_documents, load_corpus, split_documents


@pytest.fixture(scope="module")
def small():
    tok = md.load_tokenizer()
    train, test = split_documents(load_corpus(max_documents=30), 0.2, seed=0)
    return tok, encode_documents(tok, train), encode_documents(tok, test)


def test_the_size_budget_is_read_from_the_config():
    assert 0 < cm.weights_mib() <= cm.WEIGHT_BUDGET_MIB
    from dataclasses import replace

    with pytest.raises(ValueError, match="MiB"):
        cm.check_budget(replace(cm.MINI, hidden=768, heads=12, intermediate=3072, layers=12))


def test_the_card_refuses_weights_that_were_not_evaluated(tmp_path):
    from helpers.mini.compute import card_text

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


def test_training_refuses_unclear_requests(tmp_path):
    kw = dict(out=tmp_path / "o", state_dir=tmp_path / "s", device="cpu")
    with pytest.raises(ValueError, match="exactly one"):
        cm.train(**kw)
    with pytest.raises(ValueError, match="saved schedule"):
        cm.train(**kw, resume=True, steps=5)
    with pytest.raises(ValueError, match="lr"):
        cm.train(**kw, steps=5, lr=0)
    with pytest.raises(FileNotFoundError, match="no saved state"):
        cm.train(**kw, resume=True)
    with pytest.raises(Exception, match="not valid"):
        cm.train(**kw | {"device": "gpu"}, steps=5)
