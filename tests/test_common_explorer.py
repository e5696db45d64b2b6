"""The Explorer machinery: the PNG writer and blitting must show exactly what a full draw shows."""

import io

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from PIL import Image

from helpers.common.explorer import canvas_png, explorer_classes, figure_png


def decode(png: bytes) -> np.ndarray:
    image = Image.open(io.BytesIO(png))
    image.load()
    return np.asarray(image)


def drawn_canvas(facecolor):
    fig, ax = plt.subplots(figsize=(3, 2), facecolor=facecolor)
    ax.plot([0, 1, 2], [2, 0, 1], color="tab:red")
    ax.set_title("a title")
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    plt.close(fig)
    return canvas


def test_canvas_png_is_lossless_rgb_for_an_opaque_figure():
    canvas = drawn_canvas("white")
    pixels = decode(canvas_png(canvas))
    assert pixels.shape == (*canvas.get_width_height(physical=True)[::-1], 3)
    assert np.array_equal(pixels, np.asarray(canvas.buffer_rgba())[:, :, :3])


def test_canvas_png_keeps_alpha_for_a_transparent_figure():
    canvas = drawn_canvas((1, 1, 1, 0))
    pixels = decode(canvas_png(canvas))
    assert pixels.shape[2] == 4
    assert np.array_equal(pixels, np.asarray(canvas.buffer_rgba()))


def test_figure_png_is_the_same_size_as_the_explorer_image():
    canvas = drawn_canvas("white")
    assert decode(figure_png(canvas.figure)).shape[:2] == decode(canvas_png(canvas)).shape[:2]


def full_draw(explorer) -> np.ndarray:
    """The explorer's figure drawn from scratch, every artist in its usual z-order."""
    dynamic = explorer._blit_order
    for artist in dynamic:
        artist.set_animated(False)
    try:
        explorer.fig.canvas.draw()
        return np.asarray(explorer.fig.canvas.buffer_rgba())[:, :, :3].copy()
    finally:
        for artist in dynamic:
            artist.set_animated(True)
        explorer._background = None  # the canvas now holds a full draw; start blitting afresh


def test_every_explorer_is_found():
    names = {cls.__name__ for cls in explorer_classes()}
    assert {"AttentionHeadExplorer", "LayerWalkExplorer", "HeadGridExplorer", "HeadLinesExplorer",
            "NeighbourExplorer", "LogitsBox"} <= names


@pytest.mark.parametrize("cls", explorer_classes(), ids=lambda c: c.__name__)
def test_blitted_image_equals_a_full_draw(cls, tokenizer, model):
    explorer, values = cls.for_benchmark(tokenizer, model)
    for v in [*values, *values]:  # the second round draws on a background kept from the first
        explorer.update(**v)
        shown = decode(explorer.image.value)[:, :, :3]
        expected = full_draw(explorer)
        assert shown.shape == expected.shape
        differing = np.any(shown != expected, axis=-1).mean()
        assert differing == 0, f"{cls.__name__} after {v}: {differing:.2%} of pixels differ from a full draw"
    plt.close(explorer.fig)


@pytest.mark.parametrize("cls", explorer_classes(), ids=lambda c: c.__name__)
def test_for_benchmark_values_all_update(cls, tokenizer, model):
    ex, values = cls.for_benchmark(tokenizer, model)
    assert isinstance(ex, cls) and len(values) >= 2
    for v in values:
        ex.update(**v)
    assert isinstance(ex.redraw_naive(**values[0]), bytes)
