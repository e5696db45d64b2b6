"""The website's explorers in a real browser: ``book/static/course-explorer.js`` draws the frames
of ``helpers.common.explorer_frames`` as Matplotlib would.

For every explorer class (its ``for_benchmark`` state, the bundled model), a page holding the
explorer's picture, its frames and the script is opened in headless Chromium from ``file://``
with the network blocked. The test moves every slider to another value (the input event a
reader's drag fires), then compares the canvas with Matplotlib's own 2x picture of that state:
the same size, and the same pixels up to anti-aliasing (text is set by the browser, so its edges
differ by a pixel here and there). Moving the sliders changes the picture; moving them back hides
the canvas and shows the picture again. Screenshots go to build/screenshots-site/.
"""

from __future__ import annotations

import base64
import io
import json
import os
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pytest
from PIL import Image

import browser_support as bs  # tests/ is on sys.path (rootdir conftest)
from helpers.common import explorer_frames as ef
from helpers.common.explorer import explorer_classes

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "book" / "static" / "course-explorer.js"
CSS = ROOT / "book" / "static" / "course.css"
SHOTS = Path(os.environ.get("COURSE_SITE_SCREENSHOTS", ROOT / "build" / "screenshots-site"))
REQUIRED = os.environ.get("COURSE_REQUIRE_BROWSER") == "1"
MAX_MEAN_DIFF = 4.0  # mean absolute difference per channel (0-255) between canvas and Matplotlib
MAX_FAR_OFF = 0.03  # share of pixels more than 64 levels off (text edges, bar edges snapped differently)


@pytest.fixture(scope="module")
def chromium():
    reason = bs.chromium_missing_reason()
    if reason:
        if REQUIRED:
            pytest.fail(f"COURSE_REQUIRE_BROWSER=1 but {reason}")
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=bs.CHROMIUM, headless=True, args=bs.LAUNCH_ARGS)
        context = browser.new_context(viewport={"width": 1000, "height": 900})
        network = []

        def offline(route):
            if route.request.url.startswith(("file:", "data:", "blob:", "about:")):
                route.continue_()
            else:
                network.append(route.request.url)
                route.abort()

        context.route("**/*", offline)
        yield context.new_page(), network
        context.close()
        browser.close()


def _pixels(png: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB")).astype(int)


def _page(tmp_path: Path, data: dict, picture: bytes) -> Path:
    """The markup book/postprocess.py writes, with the frames as plain JSON."""
    width, _ = data["size"]
    uri = "data:image/png;base64," + base64.b64encode(picture).decode("ascii")
    html = (f"<!doctype html><html><head><meta charset='utf-8'><link rel='stylesheet' href='{CSS.as_uri()}'>"
            f"<script defer src='{SCRIPT.as_uri()}'></script></head><body>"
            f"<div class='course-explorer'><div class='course-explorer-stage'><img alt='x' src='{uri}' width='{width}'>"
            f"</div><script type='application/json' class='course-frames'>{json.dumps(data)}</script></div></body></html>")
    path = tmp_path / "explorer.html"
    path.write_text(html, encoding="utf-8")
    return path


def _canvas(page) -> np.ndarray:
    url = page.eval_on_selector("canvas.course-explorer-canvas", "c => c.toDataURL('image/png')")
    return _pixels(base64.b64decode(url.split(",", 1)[1]))


def _move(page, index: list[int]) -> None:
    page.eval_on_selector_all(
        "div.course-explorer-controls input[type=range]",
        "(inputs, index) => inputs.forEach((e, k) => { e.value = index[k]; e.dispatchEvent(new Event('input')); })",
        index)
    page.wait_for_timeout(150)  # the frame's small pictures decode


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.parametrize("cls", explorer_classes(), ids=lambda c: c.__name__)
def test_the_browser_draws_every_state_as_matplotlib_does(cls, chromium, tokenizer, model, tmp_path):
    page, network = chromium
    explorer, _ = cls.for_benchmark(tokenizer, model)
    if callable(getattr(explorer, "site_multiples", None)):
        pytest.skip(f"{cls.__name__} takes free text: the website shows example states side by side instead")
    data = ef.explorer_frames(explorer)
    grid = ef.site_grid(explorer)[:len(data["controls"])]
    first = [c["value"] for c in data["controls"]]
    other = [(v + max(1, len(c["labels"]) // 2)) % len(c["labels"]) for v, c in zip(first, data["controls"])]
    start = dict(explorer.values)
    explorer.values.update({g["name"]: g["options"][i][1] for g, i in zip(grid, other)})
    explorer._update_artists(**explorer.values)
    expected = _pixels(ef.scaled_png(explorer.fig))
    explorer.values.update(start)
    explorer._update_artists(**explorer.values)

    network.clear()
    page.goto(_page(tmp_path, data, ef.scaled_png(explorer.fig)).as_uri(), wait_until="load")
    page.wait_for_selector("div.course-explorer[data-ready]", state="attached", timeout=20_000)
    sliders = page.locator("div.course-explorer-controls input[type=range]")
    assert sliders.count() == len(data["controls"]), f"{cls.__name__}: one slider per moving control"
    assert not page.locator("canvas.course-explorer-canvas").is_visible(), "the first state is the picture itself"

    _move(page, other)
    assert page.locator("canvas.course-explorer-canvas").is_visible(), "a moved state is drawn on the canvas"
    drawn = _canvas(page)
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.locator("div.course-explorer").screenshot(path=str(SHOTS / f"explorer-frames-{cls.__name__}.png"))
    assert drawn.shape == expected.shape, f"{cls.__name__}: canvas {drawn.shape} vs picture {expected.shape}"
    diff = np.abs(drawn - expected)
    far = (diff.max(axis=2) > 64).mean()
    assert diff.mean() <= MAX_MEAN_DIFF and far <= MAX_FAR_OFF, \
        f"{cls.__name__}: the canvas differs from Matplotlib's picture (mean {diff.mean():.2f}, {far:.2%} far off)"

    readouts = page.locator("output.course-explorer-value").all_text_contents()
    assert readouts == [c["labels"][i] for c, i in zip(data["controls"], other)]
    _move(page, first)
    assert not page.locator("canvas.course-explorer-canvas").is_visible(), "back at the first state: the picture"
    _check_phone_controls(page, data, first, cls.__name__)
    assert not network, f"the explorer asked the network for {network}"
    plt.close(explorer.fig)


def _check_phone_controls(page, data, first, name) -> None:
    """Issue 49: at 390 px each control has a line of its own, its slider most of the width, and
    step buttons move it one step at a time (a thumb gets ~9 px per step on a short slider)."""
    viewport = page.viewport_size
    page.set_viewport_size({"width": 390, "height": 900})
    rows = page.locator("span.course-explorer-control")
    assert rows.count() == len(data["controls"]), f"{name}: one control row per slider"
    for k in range(rows.count()):
        row = rows.nth(k)
        slider = row.locator("input[type=range]")
        width = slider.evaluate("e => e.getBoundingClientRect().width")
        assert width >= 0.6 * 390, f"{name}: slider {k + 1} is {width:.0f} px wide at 390 px"
        steps = row.locator("button.course-explorer-step")
        assert steps.count() == 2 and min(steps.evaluate_all("els => els.map(b => b.offsetHeight)")) >= 32
        labels = data["controls"][k]["labels"]
        top = len(labels) - 1
        step, back = (steps.last, steps.first) if first[k] < top else (steps.first, steps.last)
        step.click()
        moved = first[k] + (1 if first[k] < top else -1)
        assert int(slider.input_value()) == moved, f"{name}: a step button did not move slider {k + 1} by one"
        assert row.locator("output.course-explorer-value").text_content() == labels[moved]
        assert page.locator("canvas.course-explorer-canvas").is_visible(), f"{name}: a step drew nothing"
        back.click()
        assert int(slider.input_value()) == first[k]
    assert not page.locator("canvas.course-explorer-canvas").is_visible(), f"{name}: stepping back shows the picture"
    page.locator("div.course-explorer-controls").screenshot(path=str(SHOTS / f"explorer-controls-390-{name}.png"))
    page.set_viewport_size(viewport)
