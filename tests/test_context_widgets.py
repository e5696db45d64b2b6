"""helpers.context.widgets: updates change artists and image bytes, never run the model."""

import pytest

from helpers.context.widgets import NeighbourExplorer


def test_neighbours(sample_trace, no_model_calls):
    ex = NeighbourExplorer(sample_trace, token=2, layer=0)
    heights, png = [b.get_height() for b in ex.bars], ex.image.value
    assert heights[2] == pytest.approx(1.0, abs=1e-5)
    ex.update(layer=sample_trace.num_layers)
    assert [b.get_height() for b in ex.bars] != heights
    assert ex.image.value != png and "nearest" in ex.title.get_text()
