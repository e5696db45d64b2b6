"""helpers/model/fingerprint.py on the real bundled model: the key sees every weight and buffer,
names included."""

import copy

import torch

from helpers.model.fingerprint import model_key, tensors_digest
from helpers.practice.compute import quantize_int8


def test_model_key_sees_every_weight(model):
    """The key used to read only a few weights; a change anywhere else went unnoticed."""
    for name in ("encoder.layer.0.attention.output.LayerNorm.bias", "pooler.dense.bias", "embeddings.position_embeddings.weight"):
        other = copy.deepcopy(model)
        with torch.no_grad():
            other.get_parameter(name).view(-1)[-1] += 1e-4
        assert model_key(other) != model_key(model), name
    assert model_key(quantize_int8(model)) != model_key(model)


def test_tensors_digest_reads_names_and_values_in_name_order():
    a, b = torch.zeros(3), torch.ones(3)
    assert tensors_digest([("x", a), ("y", b)]) == tensors_digest([("y", b), ("x", a)])
    assert tensors_digest([("x", a), ("y", b)]) != tensors_digest([("x", b), ("y", a)])
    assert tensors_digest([("x", a)]) != tensors_digest([("z", a)])
