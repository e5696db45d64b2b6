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


def long_text(tokenizer, model) -> str:
    """Real sentences repeated past the model's maximum input length."""
    from helpers.common.data import load_sentences
    from helpers.model.trace import max_input_tokens

    limit, text = max_input_tokens(tokenizer, model), ""
    while len(tokenizer(text, truncation=False, verbose=False)["input_ids"]) <= limit + 8:
        text = (text + " " + " ".join(load_sentences())).strip()
    return text


def takes_text(cls) -> bool:
    import inspect

    return "text" in inspect.signature(cls.for_benchmark).parameters


@pytest.mark.slow  # every explorer at the maximum length: the --all tier (CI) runs it
@pytest.mark.parametrize("cls", explorer_classes(), ids=lambda c: c.__name__)
def test_blitted_image_equals_a_full_draw_at_the_maximum_length(cls, tokenizer, model):
    if not takes_text(cls):
        pytest.skip(f"{cls.__name__}.for_benchmark has no text= parameter yet")
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the course's truncation warning is expected
        explorer, values = cls.for_benchmark(tokenizer, model, text=long_text(tokenizer, model))
    from helpers.model.trace import max_input_tokens

    assert explorer.input_tokens == max_input_tokens(tokenizer, model)
    for v in [*values, *values][:12]:
        explorer.update(**v)
        shown = decode(explorer.image.value)[:, :, :3]
        expected = full_draw(explorer)
        assert shown.shape == expected.shape
        differing = np.any(shown != expected, axis=-1).mean()
        assert differing == 0, f"{cls.__name__} after {v}: {differing:.2%} of pixels differ from a full draw"
    plt.close(explorer.fig)


@pytest.mark.parametrize("cls", explorer_classes(), ids=lambda c: c.__name__)
def test_every_explorer_leaves_a_static_picture_with_its_widget(cls, tokenizer, model):
    import base64

    from helpers.common.explorer import WIDGET_VIEW_MIMETYPE

    explorer, values = cls.for_benchmark(tokenizer, model)
    explorer.update(**values[-1])
    bundle, meta = explorer._repr_mimebundle_()
    assert bundle[WIDGET_VIEW_MIMETYPE]["model_id"] == explorer.widget.model_id  # the live widget
    png = base64.b64decode(bundle["image/png"])
    assert png == explorer.image.value and png.startswith(b"\x89PNG")  # its picture as it is now
    assert cls.__name__ in bundle["text/plain"]
    assert "run the notebook to explore" in meta["image/png"]["alt"]  # the website's alt text
    assert explorer.build_seconds > 0 and explorer.build_cpu_seconds >= 0
    plt.close(explorer.fig)


@pytest.mark.parametrize("cls", explorer_classes(), ids=lambda c: c.__name__)
def test_every_explorer_exports_its_view_at_print_size(cls, tokenizer, model, tmp_path):
    """export() writes name.png (300 dpi, the figure's size in inches), name.svg (the same size in
    points) and name.txt (the caption), of the view as it is now, and leaves the explorer as it was."""
    import xml.etree.ElementTree as ET

    explorer, values = cls.for_benchmark(tokenizer, model)
    explorer.update(**values[1])
    shown = explorer.image.value
    paths = explorer.export("view", tmp_path)
    assert {p.name for p in tmp_path.iterdir()} == {"view.png", "view.svg", "view.txt"}
    width_in, height_in = explorer.fig.get_size_inches()
    dpi = explorer.fig.dpi * round(cls.EXPORT_DPI / explorer.fig.dpi)
    with Image.open(paths["png"]) as png:
        assert png.size == (round(width_in * dpi), round(height_in * dpi)), (png.size, width_in, height_in)
        printed = png.info.get("dpi")
    assert printed is None or round(printed[0]) == dpi  # the PNG says its resolution, so it prints at size
    # the PNG is the view now: scaled down to the screen's pixels it matches the explorer's picture
    small = np.asarray(Image.open(paths["png"]).convert("RGB").resize(decode(shown).shape[1::-1], Image.BOX))
    assert np.abs(small.astype(int) - decode(shown)[:, :, :3].astype(int)).mean() < 12
    root = ET.parse(paths["svg"]).getroot()
    assert root.tag.endswith("svg")
    size_pt = [root.get(k) for k in ("width", "height")]
    assert all(v.endswith("pt") for v in size_pt), size_pt
    assert np.allclose([float(v[:-2]) for v in size_pt], [width_in * 72, height_in * 72], atol=0.01), size_pt
    caption = paths["txt"].read_text()
    assert caption.startswith(cls.__name__) and all(f"{k}={v!r}" in caption for k, v in values[1].items()
                                                    if k in explorer.controls)
    for v in values:  # the explorer still updates, and shows what a full draw shows
        explorer.update(**v)
    explorer.update(**values[1])
    assert np.array_equal(decode(explorer.image.value), decode(shown))
    assert np.array_equal(decode(explorer.image.value)[:, :, :3], full_draw(explorer))
    with pytest.raises(ValueError, match="plain file name"):
        explorer.export("a/b", tmp_path)
    plt.close(explorer.fig)


@pytest.mark.parametrize("long_input", [False, pytest.param(True, marks=pytest.mark.slow)],
                         ids=["benchmark-sentence", "maximum-length"])  # maximum length: --all (CI)
@pytest.mark.parametrize("cls", explorer_classes(), ids=lambda c: c.__name__)
def test_every_explorer_picture_fits_the_page_with_readable_text(cls, long_input, tokenizer, model):
    """The picture an explorer leaves (what the website shows) is at most PAGE_WIDTH_IN wide,
    canvas and all (it is not cropped), with no text under 8 pt, on a short and a maximal input."""
    import warnings

    from helpers.common.style import PAGE_WIDTH_IN, small_text, too_wide

    if long_input and not takes_text(cls):
        pytest.skip(f"{cls.__name__}.for_benchmark has no text= parameter")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the course's truncation warning is expected
        explorer, values = cls.for_benchmark(tokenizer, model, text=long_text(tokenizer, model) if long_input else None)
    for value in values[:2]:
        explorer.update(**value)
        width, _ = explorer.fig.get_size_inches()
        assert width <= PAGE_WIDTH_IN + 1e-6 and not too_wide(explorer.fig, cropped=False), (cls.__name__, width)
        assert not small_text(explorer.fig), small_text(explorer.fig)
        assert decode(explorer.static_png()).shape[1] <= round(PAGE_WIDTH_IN * explorer.fig.dpi)
    plt.close(explorer.fig)


def test_display_publishes_one_bundle_with_the_fallback(sample_trace):
    from IPython.core.formatters import DisplayFormatter

    from helpers.attention.widgets import AttentionHeadExplorer
    from helpers.common.explorer import WIDGET_VIEW_MIMETYPE

    data, meta = DisplayFormatter().format(AttentionHeadExplorer(sample_trace))
    assert {WIDGET_VIEW_MIMETYPE, "image/png", "text/plain"} <= set(data)
    assert "AttentionHeadExplorer" in meta["image/png"]["alt"]  # the picture's alt text travels along


def test_label_strip_windows_line_up():
    from helpers.common.explorer import LabelStrip

    labels = ["[CLS]", "the", "bank", "##ly", "[SEP]"]
    rows = LabelStrip(labels, 14)
    cols = LabelStrip(labels, 14, vertical=True)
    assert rows.rgba.shape[:2] == (5 * 14, rows.thickness)
    assert cols.rgba.shape[:2] == (cols.thickness, 5 * 14)
    window = rows.window(1, 3)
    assert window.shape[0] == 3 * 14 and window[..., 3].max() > 0  # text is there
    for i in range(5):  # every label lies inside its own band
        band = rows.rgba[i * 14:(i + 1) * 14, :, 3]
        assert band.max() > 0
    assert np.array_equal(cols.window(2, 1)[..., 3], np.rot90(rows.window(2, 1)[..., 3]))
    with pytest.raises(ValueError, match="outside"):
        rows.window(4, 3)
    with pytest.raises(ValueError, match="pitch"):
        LabelStrip(labels, 2)


@pytest.mark.slow
@pytest.mark.parametrize("store_state", [False, True], ids=["no-widget-state", "widget-state"])
def test_nbconvert_html_keeps_the_explorer_picture(tmp_path, store_state):
    """A notebook showing an explorer, exported with nbconvert --execute: without stored widget
    state the HTML shows the explorer's PNG as an <img> (offline, GitHub, the website); with it
    (nbconvert's default) the embedded widget state holds the same picture for the ipywidgets
    JavaScript to show."""
    import base64
    import json
    import re
    import subprocess
    import sys

    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(
        "from helpers.model.loading import load_model\n"
        "from helpers.model.trace import trace_text\n"
        "from helpers.attention.widgets import AttentionHeadExplorer\n"
        "tokenizer, model = load_model('bundled:all-MiniLM-L6-v2', verbose=False)\n"
        "explorer = AttentionHeadExplorer(trace_text(tokenizer, model, 'The bank by the river.'), layer=2)\n"
        "explorer"),
        nbformat.v4.new_code_cell("open('explorer.png', 'wb').write(explorer.image.value)")]
    path = tmp_path / "explorer.ipynb"
    nbformat.write(nb, path)
    subprocess.run([sys.executable, "-m", "jupyter", "nbconvert", "--to", "html", "--execute", str(path),
                    f"--ExecutePreprocessor.store_widget_state={store_state}"], check=True, cwd=tmp_path,
                   capture_output=True)
    html = (tmp_path / "explorer.html").read_text()
    picture = base64.b64encode((tmp_path / "explorer.png").read_bytes()).decode()
    images = re.findall(r'<img [^>]*src="data:image/png;base64,([^"]+)"', html)
    if not store_state:
        assert picture in images, "the explorer's PNG is not an <img> of the HTML"
    else:
        start = html.index('<script type="application/vnd.jupyter.widget-state+json">')
        state = json.loads(html[html.index(">", start) + 1:html.index("</script>", start)])
        buffers = [b["data"] for m in state["state"].values() if m["model_name"] == "ImageModel"
                   for b in m.get("buffers", [])]
        assert picture in buffers, "the widget state in the HTML does not hold the explorer's picture"


def test_label_strips_draw_chinese_with_the_course_font():
    """An explorer's token labels (a Chinese model's characters) are drawn from every family of
    font.family, as Matplotlib's own text is: no "Glyph ... missing" empty boxes."""
    import warnings

    from helpers.common import style  # noqa: F401 - registers the course's Chinese font
    from helpers.common.explorer import LabelStrip

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # Matplotlib warns "Glyph ... missing from font(s)" otherwise
        mask, _ = LabelStrip._render("明天北京会下雨吗？", 9, 100)
    assert mask.sum() > 0
