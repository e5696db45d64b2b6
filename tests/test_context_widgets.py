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
    L = sample_trace.num_layers
    baseline = np.linspace(0.1, 0.3, L + 1)
    ex = NeighbourExplorer(sample_trace, token=2, layer=0, baseline=baseline)
    before, png = heights(ex), ex.image.value
    assert before[2] == 0.0  # the token's cosine with itself (1 by definition) is left out, and marked
    assert list(ex.self_marker.get_xdata()) == [2]
    ex.update(layer=L)
    after = heights(ex)
    assert not np.allclose(after, before)
    h = sample_trace.hidden(L)
    expected = F.cosine_similarity(h[2:3], h, dim=-1).numpy()
    expected[2] = 0.0
    assert np.allclose(after, expected, atol=1e-5)
    assert ex.image.value != png and "cosine of 'bank'" in ex.title.get_text()
    assert list(ex.base_line.get_ydata()) == [baseline[L]] * 2 and f"{baseline[L]:.2f}" in ex.title.get_text()
    assert list(ex.near_base.get_xdata()) == [baseline[L]] * 2
    best = nearest_neighbours(sample_trace, 2, L, k=ex.k)
    assert [t.get_text() for t in ex.near_labels] == [f"{p}: {tok}" for p, tok, _ in best]
    assert not small_text(ex.fig) and ex.fig.get_figwidth() <= 9
    assert not NeighbourExplorer(sample_trace, token=2, layer=0).base_line.get_visible()  # no baseline given
    with pytest.raises(ValueError, match="one value per layer"):
        NeighbourExplorer(sample_trace, baseline=baseline[:2])


def test_long_input_names_positions_not_tokens(tokenizer, model):
    with pytest.warns(UserWarning, match="truncated"):
        ex, values = NeighbourExplorer.for_benchmark(tokenizer, model, text=" ".join(["A quiet river bank."] * 200))
    assert ex.trace.seq_len == max_input_tokens(tokenizer, model)
    assert "too many to name" in ex.fig.axes[0].get_xlabel()
    for v in values:
        ex.update(**v)


def test_neighbour_explorer_gives_the_website_its_baseline(sample_trace):
    """Issue 50: the frames record carries what the reader's browser needs to redraw the explorer
    for another sentence: the lesson's random-pair baseline per layer and k."""
    from helpers.common import explorer_frames as ef

    L = sample_trace.num_layers
    baseline = np.linspace(0.1, 0.3, L + 1)
    ex = NeighbourExplorer(sample_trace, token=1, layer=0, baseline=baseline)
    record = ef.explorer_frames(ex)["browser"]
    np.testing.assert_allclose(record["baseline"], baseline)
    assert record["k"] == ex.k and record["normal"] != record["highlight"]
    assert ef.explorer_frames(NeighbourExplorer(sample_trace, token=1))["browser"]["baseline"] is None
