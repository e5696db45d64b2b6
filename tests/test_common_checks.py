"""helpers.common.checks: each check passes valid input through and names what was wrong otherwise."""

import pytest
import torch

from helpers.common.checks import as_batch, as_ids, check_bert, check_layer_module


def test_check_bert_and_layer_module(model):
    check_bert(model)
    assert check_layer_module(model.encoder.layer[0]) is model.encoder.layer[0]
    with pytest.raises(TypeError, match="BertModel"):
        check_bert(torch.nn.Linear(2, 2))
    with pytest.raises(TypeError, match=r"model.encoder.layer\[i\]"):
        check_layer_module(model.encoder)


def test_as_batch_adds_and_reports_the_batch_dimension():
    x, unbatched = as_batch(torch.zeros(5, 8), 8)
    assert x.shape == (1, 5, 8) and unbatched
    x, unbatched = as_batch(torch.zeros(2, 5, 8), 8)
    assert x.shape == (2, 5, 8) and not unbatched
    with pytest.raises(ValueError, match=r"\[seq, 8\]"):
        as_batch(torch.zeros(5, 7), 8)


def test_as_ids_checks_dtype_shape_and_vocabulary():
    ids, unbatched = as_ids(torch.tensor([1, 2]), "input_ids", vocab=10)
    assert ids.shape == (1, 2) and unbatched
    with pytest.raises(TypeError, match="integer"):
        as_ids(torch.tensor([1.0]), "input_ids")
    with pytest.raises(ValueError, match="outside 0..9"):
        as_ids(torch.tensor([10]), "input_ids", vocab=10)
