"""Every lesson with an explorer in a real browser: JupyterLab + headless Chromium (Playwright).

The lessons that show an explorer (their source imports a ``helpers.<topic>.widgets`` module:
:data:`LESSONS`) are the ones a browser can check beyond nbval and the book build, which
execute every lesson; CI runs this file twice (ipywidgets 8 and, in the Colab-like
environment, the widgets-7 front end), so running the others here too would only repeat them.

For each of them: open it, Run All Cells, wait for the kernel to be idle, assert there is no
error output, save a screenshot to build/screenshots/, and -- when the lesson shows an
explorer -- type a new value into a slider's readout and assert the figure changed (the
widget Image's src changed); where it shows a text box with a button (lesson 04's logits
box), type a new sentence, click, and assert the same.

The notebooks are copied to a temporary root (with data/ and helpers/ linked) so JupyterLab's
autosave can never write outputs into the committed lessons/*.ipynb; each copy runs with
``BUDGET = "quick"`` (``lesson_params.quick``): the browser test checks the front end, the full
budget runs once, in the book build.

``COURSE_BROWSER_LESSONS`` (lesson numbers, e.g. ``02,04``) runs only those: the Colab-like run
checks the widgets-7 *front end*, which renders ipywidgets classes, not lessons, so it runs lessons
that together construct every class any explorer does (:func:`widget_classes`;
``test_there_are_lessons`` fails when they do not).

Skips with a reason when Chromium or Playwright is missing, unless COURSE_REQUIRE_BROWSER=1
(set by .ci/run), in which case it fails.
"""

from __future__ import annotations

import os
import re

import pytest

import nbformat

import browser_support as bs  # tests/ is on sys.path (rootdir conftest)
from lesson_params import quick

pytestmark = [pytest.mark.browser, pytest.mark.slow]

WIDGETS_TOPIC = re.compile(r"^from helpers\.(\w+)\.widgets import", re.M)


def shows_an_explorer(notebook) -> bool:
    """True when the lesson (its py:percent source beside the notebook) imports an explorer."""
    return bool(WIDGETS_TOPIC.search(notebook.with_suffix(".py").read_text(encoding="utf-8")))


WIDGET_CLASS = re.compile(r"\bwidgets\.([A-Z]\w*)\(")  # constructed (an isinstance check does not count)
EXPLORER_BASE = bs.ROOT / "helpers" / "common" / "explorer.py"


def widget_classes(notebook) -> set[str]:
    """The ipywidgets classes the lesson's explorers construct: those of the ``helpers.<topic>.widgets``
    modules it imports, with those of ``helpers/common/explorer.py`` where a module builds on it."""
    found = set()
    for topic in WIDGETS_TOPIC.findall(notebook.with_suffix(".py").read_text(encoding="utf-8")):
        text = (bs.ROOT / "helpers" / topic / "widgets.py").read_text(encoding="utf-8")
        found |= set(WIDGET_CLASS.findall(text))
        if "helpers.common.explorer import" in text:
            found |= set(WIDGET_CLASS.findall(EXPLORER_BASE.read_text(encoding="utf-8")))
    return found


ALL_LESSONS = sorted((bs.ROOT / "lessons").glob("[0-9]*.ipynb"))
EXPLORER_LESSONS = [nb for nb in ALL_LESSONS if shows_an_explorer(nb)]
CHOSEN = [n.strip() for n in os.environ.get("COURSE_BROWSER_LESSONS", "").split(",") if n.strip()]
LESSONS = [nb for nb in EXPLORER_LESSONS if not CHOSEN or nb.stem[:2] in CHOSEN]
REQUIRED = os.environ.get("COURSE_REQUIRE_BROWSER") == "1"
LESSON_TIMEOUT_S = float(os.environ.get("COURSE_BROWSER_LESSON_TIMEOUT", "300"))


@pytest.fixture(scope="module")
def lab_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("lab")
    (root / "lessons").mkdir()
    for nb in LESSONS:
        nbformat.write(quick(nbformat.read(nb, as_version=4)), root / "lessons" / nb.name)
    for name in ("data", "helpers"):
        if (bs.ROOT / name).exists():
            (root / name).symlink_to(bs.ROOT / name)
    return root


@pytest.fixture(scope="module")
def browser_page(lab_root):
    reason = bs.chromium_missing_reason()
    if reason:
        if REQUIRED:
            pytest.fail(f"COURSE_REQUIRE_BROWSER=1 but {reason}")
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    bs.SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    with bs.jupyter_lab(lab_root) as (base, token), sync_playwright() as p:
        browser = p.chromium.launch(executable_path=bs.CHROMIUM, headless=True, args=bs.LAUNCH_ARGS)
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        page = context.new_page()
        page.set_default_timeout(30_000)
        yield page, base, token
        context.close()
        browser.close()


def test_there_are_lessons():
    assert LESSONS, f"no lessons/NN_*.ipynb with an explorer found (COURSE_BROWSER_LESSONS={CHOSEN or 'all'})"
    # a lesson that builds an explorer (an ...Explorer or the LogitsBox) is among those with one
    builds = [nb for nb in ALL_LESSONS
              if re.search(r"\b[A-Z]\w*(Explorer|Box)\(", nb.with_suffix(".py").read_text(encoding="utf-8"))]
    assert builds and set(builds) <= set(EXPLORER_LESSONS), sorted(p.name for p in set(builds) - set(EXPLORER_LESSONS))
    # a chosen subset still renders every widget class the explorers construct, and a text box
    everything = set().union(*(widget_classes(nb) for nb in EXPLORER_LESSONS))
    chosen = set().union(*(widget_classes(nb) for nb in LESSONS))
    assert {"IntSlider", "Image", "Text", "Button"} <= everything, sorted(everything)
    assert chosen == everything, (f"COURSE_BROWSER_LESSONS={','.join(CHOSEN)} leaves out "
                                  f"{sorted(everything - chosen)}: add a lesson whose explorer constructs them")


@pytest.mark.parametrize("notebook", LESSONS, ids=lambda p: p.stem)
def test_lesson_in_browser(browser_page, notebook):
    page, base, token = browser_page
    bs.open_notebook(page, base, token, f"lessons/{notebook.name}")
    try:
        _run_and_check(page, notebook)
    finally:
        bs.shutdown_sessions(base, token)
        page.goto("about:blank")


def _run_and_check(page, notebook):
    bs.run_all_cells(page, timeout_s=LESSON_TIMEOUT_S)
    page.screenshot(path=str(bs.SCREENSHOTS / f"{notebook.stem}.png"), full_page=False)

    errors = bs.error_outputs(page)
    assert not errors, f"{notebook.name}: {len(errors)} error output(s) in the browser:\n" + "\n---\n".join(errors)

    if page.locator(".widget-text input").count() and page.locator("button.jupyter-button").count():
        _type_and_click(page, notebook)
    sliders = page.locator(".widget-slider .widget-readout")
    if sliders.count() == 0:
        # Only the slider step is skipped; the lesson has run and been checked above.
        return
    before = bs.widget_images_src(page)
    assert before, f"{notebook.name}: a slider but no widget Image"
    old, new = bs.move_first_slider(page)
    bs.wait_for_image_change(page, before, timeout_ms=10_000)
    page.locator(".widget-slider").first.scroll_into_view_if_needed()
    page.screenshot(path=str(bs.SCREENSHOTS / f"{notebook.stem}_slider.png"), full_page=False)
    assert bs.widget_images_src(page) != before, f"{notebook.name}: slider {old} -> {new} did not change the figure"
    assert not bs.error_outputs(page), f"{notebook.name}: moving the slider produced an error output"


def _type_and_click(page, notebook):
    """A text box + button explorer (lesson 04's logits box): type a new sentence, click."""
    before = bs.widget_images_src(page)
    assert before, f"{notebook.name}: a text box but no widget Image"
    box = page.locator(".widget-text input").first
    box.scroll_into_view_if_needed()
    box.fill("could you wake me up at half past six tomorrow")
    page.locator("button.jupyter-button").first.click()
    bs.wait_for_image_change(page, before, timeout_ms=30_000)  # a new sentence runs the model once
    page.screenshot(path=str(bs.SCREENSHOTS / f"{notebook.stem}_textbox.png"), full_page=False)
    assert not bs.error_outputs(page), f"{notebook.name}: clicking the button produced an error output"
