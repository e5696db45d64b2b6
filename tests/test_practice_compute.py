"""helpers.practice.compute on the real bundled model."""

import copy
import pytest
import torch

from helpers.classify.compute import encode_batch
from helpers.finetuning.compute import SentenceClassifier
from helpers.practice.compute import FeatureCache, enable_checkpointing, keep_hidden_states, model_key, quantize_int8, saved_for_backward_bytes, state_dict_bytes


def test_keep_hidden_states_equals_full_output(tokenizer, model):
    enc = encode_batch(tokenizer, ["set a timer for ten minutes"])
    L = model.config.num_hidden_layers
    with keep_hidden_states(model, [0, L]) as kept, torch.no_grad():
        full = model(**enc, output_hidden_states=True).hidden_states
    assert set(kept) == {0, L}
    assert torch.allclose(kept[0], full[0], atol=1e-5) and torch.allclose(kept[L], full[L], atol=1e-5)
    ours = [f for f in model.encoder.layer[L - 1]._forward_hooks.values() if "keep_hidden_states" in f.__qualname__]
    assert not ours, "our hooks must be removed (transformers keeps its own)"
    with pytest.raises(ValueError, match="valid"):
        with keep_hidden_states(model, [L + 1]):
            pass


def test_checkpointing_saves_fewer_bytes(tokenizer, model):
    batch = tokenizer(["play some jazz"] * 4, padding="max_length", max_length=32, return_tensors="pt")
    y = torch.zeros(4, dtype=torch.long)
    clf = SentenceClassifier(copy.deepcopy(model), 3)
    plain = saved_for_backward_bytes(clf, batch, y)
    enable_checkpointing(clf.bert)
    ckpt = saved_for_backward_bytes(clf, batch, y)
    assert ckpt < plain / 2
    flag = "is_activation_checkpointing" if hasattr(model, "is_activation_checkpointing") else "is_gradient_checkpointing"
    assert getattr(clf.bert, flag) and not getattr(model, flag), "only the copy"


def test_quantized_copy_is_smaller_and_close(tokenizer, model):
    q = quantize_int8(model)
    assert state_dict_bytes(q) < state_dict_bytes(model)
    assert type(model.encoder.layer[0].output.dense) is torch.nn.Linear  # original untouched
    enc = encode_batch(tokenizer, ["what's the weather like today"])
    with torch.no_grad():
        a, b = model(**enc).last_hidden_state, q(**enc).last_hidden_state
    cos = torch.nn.functional.cosine_similarity(a[0, 0], b[0, 0], dim=0)
    assert cos > 0.8


def test_feature_cache_hits_and_keys(tokenizer, model):
    cache = FeatureCache(tokenizer, model)
    L = model.config.num_hidden_layers
    calls = []
    h = model.register_forward_hook(lambda *a: calls.append(1))
    try:
        a = cache.get(["book a table", "play jazz"], L)
        b = cache.get(["play jazz", "book a table"], L - 1, "cls")
    finally:
        h.remove()
    assert len(calls) == 1 and cache.misses == 2 and cache.hits == 2
    assert a.shape == (2, model.config.hidden_size) and b.shape == a.shape
    other = copy.deepcopy(model)
    with torch.no_grad():
        other.encoder.layer[-1].output.dense.weight[0] += 1
    assert model_key(other) != model_key(model)
    with pytest.raises(ValueError, match="out of range"):
        cache.get(["x"], L + 1)
