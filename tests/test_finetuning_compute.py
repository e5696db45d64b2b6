"""helpers.finetuning.compute on the real bundled model."""

import copy
import pytest
import torch

from helpers.finetuning.compute import SentenceClassifier, compare_finetuning, finetune, llrd_param_groups


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


def test_finetune_is_seeded_and_deterministic(tokenizer, model, intent_splits):
    a = finetune(tokenizer, model, *intent_splits, "full", epochs=1, seed=3, progress=False)
    b = finetune(tokenizer, model, *intent_splits, "full", epochs=1, seed=3, progress=False)
    assert torch.equal(a.correct, b.correct)
    assert all(torch.equal(p, q) for p, q in zip(a.model.parameters(), b.model.parameters()))
    c = finetune(tokenizer, model, *intent_splits, "full", epochs=1, seed=4, progress=False)
    assert not torch.equal(a.model.classifier.weight, c.model.classifier.weight)


def test_compare_finetuning_keeps_every_run(tokenizer, model, intent_splits):
    train, test = intent_splits
    before = {k: v.clone() for k, v in model.state_dict().items()}
    res = compare_finetuning(tokenizer, model, train, test, ("full", "freeze lower half"), seeds=(0, 1),
                             epochs=1, progress=False)
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    assert set(res.accuracy) == {"full", "freeze lower half"} == set(res.models)
    assert res.accuracy["full"].correct.shape == (2, len(test))
    assert all(len(v) == 2 and min(v) > 0 for v in res.seconds.values())
    # the seed-0 run inside the comparison is the same run as finetune(seed=0) on its own
    alone = finetune(tokenizer, model, train, test, "full", epochs=1, seed=0, progress=False)
    assert torch.equal(res.accuracy["full"].correct[0], alone.correct)
    # its outcomes are what the returned model predicts
    enc = tokenizer(test.texts, padding=True, truncation=True, max_length=16, return_tensors="pt")
    with torch.no_grad():
        pred = res.models["full"](enc["input_ids"], enc["attention_mask"]).argmax(-1)
    assert torch.equal(pred == torch.tensor(test.labels), res.accuracy["full"].correct[0])
    with pytest.raises(ValueError, match="at least one"):
        compare_finetuning(tokenizer, model, train, test, (), progress=False)
