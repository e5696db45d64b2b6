"""helpers.common.explorer_frames: the states the website's explorers move through.

The frames are drawing instructions recorded from the explorer's own artists; these tests check
them against independent computations (the attention probabilities of the real model, coloured
by the colour map), that every state is there, that the model never runs for a frame, and that
the explorer is left as it was. tests/test_explorer_frames_browser.py draws them in Chromium and
compares the result with Matplotlib's picture of the same state.
"""

from __future__ import annotations

import base64
import io
import json
import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pytest
from PIL import Image

from helpers.attention.widgets import AttentionHeadExplorer
from helpers.common import explorer_frames as ef
from helpers.common.explorer import explorer_classes


def decode(uri: str) -> np.ndarray:
    image = Image.open(io.BytesIO(base64.b64decode(uri.split(",", 1)[1])))
    return np.asarray(image.convert("RGBA"))


def test_the_grid_enumerates_sliders_and_menus_and_leaves_what_does_not_fit():
    import ipywidgets as widgets

    class Fake:
        controls = {"layer": widgets.IntSlider(min=1, max=6, value=2, description="layer"),
                    "change": widgets.Dropdown(options=[("skip", -1), ("head 0", 0), ("head 1", 1)], value=0,
                                               description="change"),
                    "token": widgets.Dropdown(options=[(f"{i}: t", i) for i in range(40)], value=0),
                    "text": widgets.Text(value="free")}

    grid = ef.site_grid(Fake(), max_frames=100)
    assert [g["name"] for g in grid] == ["layer", "change"]  # 6 x 3 = 18; x 40 tokens would be 720 > 100
    assert [v for _, v in grid[0]["options"]] == [1, 2, 3, 4, 5, 6]
    assert grid[1]["options"] == [("skip", -1), ("head 0", 0), ("head 1", 1)]
    assert ef.control_values(Fake.controls["text"]) is None  # free text: nothing to enumerate


def test_every_layer_and_head_is_a_frame_drawn_from_the_trace(sample_trace, no_model_calls):
    explorer = AttentionHeadExplorer(sample_trace, layer=1, head=0)
    before = explorer.image.value
    data = ef.explorer_frames(explorer)
    L, A = sample_trace.num_layers, sample_trace.num_heads
    assert [c["name"] for c in data["controls"]] == ["layer", "head"]
    assert data["controls"][0]["labels"] == [str(l) for l in range(1, L + 1)]
    assert len(data["frames"]) == L * A and data["pixels"] == []  # every artist described, none as pixels
    assert explorer.image.value == before and explorer.values["layer"] == 1  # left as it was
    cmap = plt.get_cmap("viridis")
    for layer, head in [(1, 0), (L, A - 1), (2, 3 % A)]:
        frame = [data["prims"][i] for i in data["frames"][(layer - 1) * A + head]]
        heat = [p for p in frame if p["t"] == "img" and min(p["box"][2:]) > 50]  # the heat map, not a label strip
        assert len(heat) == 1
        expected = cmap(sample_trace.attention(layer, head).cpu().numpy(), bytes=True)
        assert np.array_equal(decode(heat[0]["src"]), expected), f"layer {layer} head {head}: cells differ"
        texts = " ".join(line[0] for p in frame if p["t"] == "text" for line in p["lines"])
        peak = float(sample_trace.attention(layer, head).max())
        assert f"layer {layer} of {L}, head {head}" in texts and f"max {peak:.2f}" in texts
    assert ef.packed_size(data) <= ef.MAX_BYTES
    plt.close(explorer.fig)


@pytest.mark.slow  # a few seconds: the --all tier (CI)
def test_the_background_is_the_figure_without_what_moves(sample_trace):
    explorer = AttentionHeadExplorer(sample_trace, layer=1, head=0)
    data = ef.explorer_frames(explorer)
    background = decode(data["background"])
    width, height = data["size"]
    assert background.shape[:2] == (height * ef.SCALE, width * ef.SCALE)
    prim = next(p for p in data["prims"] if p["t"] == "img" and min(p["box"][2:]) > 50)
    x, y, w, h = (round(v * ef.SCALE) for v in prim["box"])
    inside = background[y + 4:y + h - 4, x + 4:x + w - 4, :3]
    assert (inside == 255).all(), "the heat map's cells should not be in the background"
    plt.close(explorer.fig)


@pytest.mark.slow  # a few seconds: the --all tier (CI)
def test_the_grid_shrinks_until_the_frames_fit_the_byte_budget(sample_trace):
    explorer = AttentionHeadExplorer(sample_trace, layer=1, head=0)
    small = ef.explorer_frames(explorer, max_bytes=ef.explorer_frames(explorer)["bytes"] - 1)
    assert [c["name"] for c in small["controls"]] == ["layer"] and small["still"] == ["head"]
    assert len(small["frames"]) == sample_trace.num_layers
    plt.close(explorer.fig)


def test_site_bundle_writes_the_frames_beside_a_2x_picture(sample_trace, tmp_path, monkeypatch):
    import hashlib

    monkeypatch.setenv(ef.FRAMES_ENV, str(tmp_path))
    explorer = AttentionHeadExplorer(sample_trace, layer=1, head=0)
    data, meta = ef.site_bundle(explorer)
    png = base64.b64decode(data["image/png"])
    width, height = explorer.fig.canvas.get_width_height()
    assert Image.open(io.BytesIO(png)).size == (width * ef.SCALE, height * ef.SCALE)
    assert (meta["image/png"]["width"], meta["image/png"]["height"]) == (width, height)  # shown at 1x
    alt = meta["image/png"]["alt"]
    assert "Static picture" not in alt and "layer, head on sliders" in alt and "layer 1 of" in alt, alt
    record = json.loads((tmp_path / f"{hashlib.sha256(png).hexdigest()}.json").read_text())
    assert record["kind"] == "frames" and len(record["frames"]) == sample_trace.num_layers * sample_trace.num_heads
    plt.close(explorer.fig)


def test_outside_the_book_build_nothing_changes(sample_trace, monkeypatch):
    monkeypatch.delenv(ef.FRAMES_ENV, raising=False)
    explorer = AttentionHeadExplorer(sample_trace, layer=1, head=0)
    assert ef.site_bundle(explorer) == explorer._repr_mimebundle_()
    assert ef.register() is False
    plt.close(explorer.fig)


@pytest.mark.slow  # a few seconds: the --all tier (CI)
def test_logits_box_shows_example_sentences_side_by_side(tokenizer, model, intent_data):
    from helpers.classify.compute import train_head
    from helpers.classify.widgets import LogitsBox
    from helpers.common.style import small_text

    train, test, f_train, _ = intent_data
    head = train_head(f_train.layer(f_train.num_layers, "cls"), train.labels, train.num_classes, epochs=5,
                      seed=0, progress=False)
    box = LogitsBox(tokenizer, model, head, train.names, layer=f_train.num_layers, sentence=test.texts[0],
                    examples=test.texts[1:4])
    fig, note = box.site_multiples()
    panels = [ax for ax in fig.axes if ax.get_visible() and ax.axison]
    assert len(panels) == 4 and "4 sentences" in note and "in the notebook" in note
    for ax, sentence in zip(panels, test.texts[:4]):
        pred = int(box.logits_for(sentence).argmax())
        assert train.names[pred] in ax.get_title(loc="left")  # each panel names its sentence's prediction
    assert small_text(fig) == []
    with pytest.raises(ValueError, match="examples"):
        LogitsBox(tokenizer, model, head, train.names, layer=1, sentence="hi", examples=[""])
    plt.close("all")


@pytest.mark.slow  # every explorer class (the --all tier and CI)
@pytest.mark.parametrize("cls", explorer_classes(), ids=lambda c: c.__name__)
def test_every_explorer_has_frames_or_examples(cls, tokenizer, model):
    explorer, _ = cls.for_benchmark(tokenizer, model)
    if callable(getattr(explorer, "site_multiples", None)):
        fig, note = explorer.site_multiples()
        assert note and fig.axes
        plt.close(fig)
        return
    data = ef.explorer_frames(explorer)
    grid = ef.site_grid(explorer)
    assert data["controls"], f"{cls.__name__}: no control the website can move"
    assert len(data["frames"]) == math.prod(len(c["labels"]) for c in data["controls"])
    assert all(0 <= i < len(data["prims"]) for frame in data["frames"] for i in frame)
    assert ef.packed_size(data) <= ef.MAX_BYTES
    # two different states draw differently
    first, last = data["frames"][0], data["frames"][-1]
    assert first != last, f"{cls.__name__}: the first and last states draw the same"
    assert len(grid) >= len(data["controls"])
    plt.close(explorer.fig)


def test_the_picture_after_recording_is_the_complete_opening_state(sample_trace, monkeypatch, tmp_path):
    """Issue 49: after the frames were recorded, the blitted artists stayed animated and the saved
    picture lost the figure-level ones (lesson 02's token labels, lesson 07's title): savefig skips
    animated figure-level artists. The picture the notebook and the site keep must show them."""
    explorer = AttentionHeadExplorer(sample_trace, layer=1, head=0)  # token labels: figure images
    monkeypatch.setenv(ef.FRAMES_ENV, str(tmp_path))
    data, _ = ef.site_bundle(explorer)
    kept = np.asarray(Image.open(io.BytesIO(base64.b64decode(data["image/png"]))).convert("RGBA")).astype(int)
    strips = [a for a in explorer.fig.images if a.get_animated()]
    assert strips, "the recording left the label strips animated (the case to test)"
    unlabelled = decode(ef._data_uri(ef.scaled_png(explorer.fig, hide=explorer.fig.images))).astype(int)
    assert np.abs(kept - unlabelled).max() > 100, "the kept picture has no token labels"
    plt.close(explorer.fig)
