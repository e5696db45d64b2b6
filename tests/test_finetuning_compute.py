"""helpers.finetuning.compute on the real bundled model."""

import copy
import pytest
import torch

from helpers.finetuning.compute import SentenceClassifier, finetune, llrd_param_groups


def test_finetune_strategies_leave_the_loaded_model_untouched(tokenizer, model, intent_splits):
    train, test = intent_splits
    before = {k: v.clone() for k, v in model.state_dict().items()}
    L = model.config.num_hidden_layers
    res = {s: finetune(tokenizer, model, train, test, s, epochs=2, progress=False) for s in
           ("full", "freeze lower half")}
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    assert res["freeze lower half"].trainable_params < res["full"].trainable_params
    frozen = res["freeze lower half"].model.bert
    assert not any(p.requires_grad for p in frozen.encoder.layer[0].parameters())
    assert all(p.requires_grad for p in frozen.encoder.layer[L - 1].parameters())
    # the trained copy really changed
    assert not torch.equal(res["full"].model.bert.encoder.layer[L - 1].output.dense.weight,
                           model.encoder.layer[L - 1].output.dense.weight)
    with pytest.raises(ValueError, match="choose one of"):
        finetune(tokenizer, model, train, test, "magic")


def test_llrd_rates_decay_with_depth(model):
    clf = SentenceClassifier(copy.deepcopy(model), 4)
    groups = llrd_param_groups(clf, 1.0, 0.5)
    L = model.config.num_hidden_layers
    assert [g["lr"] for g in groups] == [1.0] + [0.5 ** (L + 1 - d) for d in range(L + 1)]
    with pytest.raises(ValueError, match="decay"):
        llrd_param_groups(clf, 1.0, 1.5)


def test_gradual_unfreezing_ends_fully_unfrozen(tokenizer, model, intent_splits):
    r = finetune(tokenizer, model, *intent_splits, "gradual unfreezing", epochs=2, progress=False)
    assert all(p.requires_grad for p in r.model.bert.encoder.layer.parameters())
