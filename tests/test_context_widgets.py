"""helpers.context.widgets: updates change artists and image bytes, never run the model."""

import numpy as np
import pytest
import torch.nn.functional as F

from helpers.common.style import small_text
from helpers.context.compute import nearest_neighbours
from helpers.context.widgets import NeighbourExplorer
from helpers.model.trace import max_input_tokens


def heights(ex):
    """Bar heights of the profile: the top-left corner of each rectangle."""
    return np.array([path.vertices[1, 1] for path in ex.profile.get_paths()])


def test_neighbours(sample_trace, no_model_calls):
    ex = NeighbourExplorer(sample_trace, token=2, layer=0)
    before, png = heights(ex), ex.image.value
    assert before[2] == pytest.approx(1.0, abs=1e-5)
    ex.update(layer=sample_trace.num_layers)
    after = heights(ex)
    assert not np.allclose(after, before)
    h = sample_trace.hidden(sample_trace.num_layers)
    assert np.allclose(after, F.cosine_similarity(h[2:3], h, dim=-1).numpy(), atol=1e-5)
    assert ex.image.value != png and "cosine of 'bank'" in ex.title.get_text()
    best = nearest_neighbours(sample_trace, 2, sample_trace.num_layers, k=ex.k)
    assert [t.get_text() for t in ex.near_labels] == [f"{p}: {tok}" for p, tok, _ in best]
    assert not small_text(ex.fig)


def test_long_input_names_positions_not_tokens(tokenizer, model):
    with pytest.warns(UserWarning, match="truncated"):
        ex, values = NeighbourExplorer.for_benchmark(tokenizer, model, text=" ".join(["A quiet river bank."] * 200))
    assert ex.trace.seq_len == max_input_tokens(tokenizer, model)
    assert "too many to name" in ex.fig.axes[0].get_xlabel()
    for v in values:
        ex.update(**v)
