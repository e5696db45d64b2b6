"""helpers.classify.rebuild: the pooler by hand against the model."""

import pytest
import torch

from helpers.classify.rebuild import pooler_by_hand


def test_pooler_by_hand_matches_model(model, sample_trace):
    out = pooler_by_hand(model, sample_trace.vector(sample_trace.num_layers, 0))
    assert torch.allclose(out, sample_trace.pooler_output, atol=1e-5)
    assert not torch.allclose(out, sample_trace.vector(sample_trace.num_layers, 0), atol=1e-2)
    with pytest.raises(ValueError, match="hidden_size"):
        pooler_by_hand(model, torch.zeros(3))
