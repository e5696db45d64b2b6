"""The built website (``bash course.sh book`` -> build/site/), read from disk with no network.

Without a browser: every lesson has a page, no page needs a network address to render, and each
page's download link serves the committed, output-free notebook.

In headless Chromium (Playwright), pages opened as ``file://`` (Sphinx writes relative links and
its search index is a script, so the site works straight from disk; no server is involved) with
every request that is not ``file:`` aborted and recorded. On each lesson page: nothing asked the
network for anything, every formula was typeset by MathJax (no raw ``$$``, ``\\frac``, ``\\(`` left
in the prose, no MathJax error), every image loaded (``naturalWidth > 0``), each explorer output
is a picture, the Colab badge and the download link are there, and previous/next lead to the
neighbouring lessons. The home page links every lesson; the search finds a lesson; lesson 00
shows the architecture diagram. Screenshots go to build/screenshots-site/.

Skips with a reason when the site is not built or Chromium/Playwright is missing, unless
COURSE_REQUIRE_BROWSER=1 (set by .ci/run, which builds the site first), in which case it fails.
"""

from __future__ import annotations

import importlib.util
import os
import re
from pathlib import Path
from urllib.parse import unquote, urlparse

import nbformat
import pytest

import browser_support as bs  # tests/ is on sys.path (rootdir conftest)

ROOT = Path(__file__).resolve().parent.parent
SITE = Path(os.environ.get("COURSE_SITE", ROOT / "build" / "site"))
PAGES_SRC = ROOT / "build" / "book" / "src" / "lessons"  # the site's copies of the executed lessons
SHOTS = Path(os.environ.get("COURSE_SITE_SCREENSHOTS", ROOT / "build" / "screenshots-site"))
LESSONS = sorted((ROOT / "lessons").glob("[0-9][0-9]*_*.ipynb"))  # 09b too
REQUIRED = os.environ.get("COURSE_REQUIRE_BROWSER") == "1"
DIAGRAM_CALL = "architecture_diagram("

_spec = importlib.util.spec_from_file_location("book_build", ROOT / "book" / "build.py")
build = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(build)


def _missing(reason: str):
    if REQUIRED:
        pytest.fail(f"COURSE_REQUIRE_BROWSER=1 but {reason}")
    pytest.skip(reason)


def page_of(lesson: Path) -> Path:
    return SITE / "lessons" / f"{lesson.stem}.html"


@pytest.fixture(scope="module")
def site() -> Path:
    """The built site, with a page for every lesson (an older build skips, or fails in CI)."""
    if not (SITE / "index.html").exists():
        _missing(f"no built site at {SITE} (run `bash course.sh book` first)")
    missing = [p.name for p in LESSONS if not page_of(p).exists()]
    if missing:
        _missing(f"the site in {SITE} has no page for {missing}: it is older than the lessons "
                 "(run `bash course.sh book`)")
    return SITE


# --------------------------------------------------------------------------- without a browser
def test_there_are_lessons():
    assert LESSONS, "no lessons/NN_*.ipynb found"


def test_every_lesson_has_a_page(site):
    assert all(page_of(p).exists() for p in LESSONS)  # the fixture names any missing page


def test_no_page_needs_the_network(site):
    found = build.external_resources(site)
    assert not found, "pages would load these from the network:\n" + "\n".join(f"{f}: {u}" for f, u in found[:30])


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda p: p.stem)
def test_download_link_serves_the_output_free_notebook(site, lesson):
    html = page_of(lesson).read_text()
    hrefs = re.findall(r'<a class="reference download internal" download="" href="([^"]+)"', html)
    assert hrefs, f"{lesson.stem}: no download link on the page"
    target = (page_of(lesson).parent / unquote(hrefs[0])).resolve()
    assert target.name == lesson.name and target.read_bytes() == lesson.read_bytes(), \
        f"{lesson.stem}: the download is not the committed notebook ({target})"


# --------------------------------------------------------------------------- in a browser
@pytest.fixture(scope="module")
def browser(site):
    reason = bs.chromium_missing_reason()
    if reason:
        _missing(reason)
    from playwright.sync_api import sync_playwright

    SHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=bs.CHROMIUM, headless=True, args=bs.LAUNCH_ARGS)
        context = chromium.new_context(viewport={"width": 1400, "height": 1000})
        network: list[str] = []

        def offline(route):
            if route.request.url.startswith(("file:", "data:", "blob:", "about:")):
                route.continue_()
            else:
                network.append(route.request.url)
                route.abort()

        context.route("**/*", offline)
        page = context.new_page()
        page.set_default_timeout(30_000)
        page.on("console", lambda msg: CONSOLE.append(msg.text) if msg.type == "error" else None)
        page.on("pageerror", lambda err: CONSOLE.append(str(err)))
        yield page, network
        context.close()
        chromium.close()


CONSOLE: list[str] = []  # console errors of the page opened last
WIDTHS = (390, 1280)  # a phone and a laptop
MAX_PAGE_BYTES = 2_000_000  # what a lesson page may load (issue: <= 2 MB)
# The smallest figure text (8 pt at 100 dpi = 11 px when a figure is shown at its own width)
# as rendered at 1280 px: 8 px or more for every figure (a figure wider than the column is
# shown smaller, and its text with it); build/screenshots-site/figure-text.txt lists every
# figure's size.
MIN_LABEL_PX = 8.0
FILE_NAME_ALT = re.compile(r"(^|/)[\w.-]+\.(png|svg|jpe?g)$|^\s*$")


def _open(page, network, path: Path) -> None:
    network.clear()
    CONSOLE.clear()
    page.goto(path.as_uri(), wait_until="load")
    _wait_for_maths(page, path.name)


def _wait_for_maths(page, name: str) -> None:
    """Wait until every formula Sphinx wrote (.math) holds a MathJax rendering."""
    try:
        page.wait_for_function(
            """() => { const m = [...document.querySelectorAll('.math')];
                       return m.every(e => e.querySelector('mjx-container')); }""", timeout=30_000)
    except Exception:
        raw = page.eval_on_selector_all(".math", "els => els.filter(e => !e.querySelector('mjx-container'))"
                                                 ".map(e => e.textContent.slice(0, 80))")
        raise AssertionError(f"{name}: MathJax did not typeset {len(raw)} formula(s), e.g. {raw[:3]}")


def _prose(page) -> str:
    """The article's text without code and its outputs (code may hold '$' or TeX in strings)."""
    return page.evaluate(
        """() => { const a = document.querySelector('article') || document.body;
                   const c = a.cloneNode(true);
                   c.querySelectorAll('pre, code, script, style, .cell_input, .cell_output .output')
                    .forEach(e => e.remove());
                   return c.textContent; }""")


def _broken_images(page) -> list[str]:
    return page.evaluate("() => [...document.images].filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.src)")


def _same_file(url: str, path: Path) -> bool:
    parsed = urlparse(url)
    return parsed.scheme == "file" and Path(unquote(parsed.path)).resolve() == path.resolve()


@pytest.mark.browser
@pytest.mark.slow
def test_the_network_really_is_blocked(browser):
    """The guard itself: a page that tries to fetch from the network is refused and recorded."""
    page, network = browser
    _open(page, network, SITE / "index.html")
    result = page.evaluate("() => fetch('https://example.org/x.json').then(() => 'loaded', () => 'refused')")
    assert result == "refused" and network == ["https://example.org/x.json"]


@pytest.mark.browser
@pytest.mark.slow
def test_home_page_links_every_lesson(browser):
    page, network = browser
    _open(page, network, SITE / "index.html")
    page.screenshot(path=str(SHOTS / "index.png"))
    assert not network, f"the home page asked the network for {network}"
    assert not _broken_images(page), f"home page images did not load: {_broken_images(page)}"
    links = page.eval_on_selector_all("article table a", "els => els.map(a => [a.href, a.querySelector('img') ? 'badge' : 'text'])")
    for lesson in LESSONS:
        assert any(kind == "text" and _same_file(href, page_of(lesson)) for href, kind in links), \
            f"the home table has no working link to {lesson.stem}"
        badge = "https://colab.research.google.com/github/"
        assert any(kind == "badge" and href.startswith(badge) and href.endswith(f"/lessons/{lesson.name}")
                   for href, kind in links), f"the home table has no Colab badge for {lesson.stem}"
    first = page.locator("article table a", has_text=re.compile(r"\w")).first
    first.click()
    page.wait_for_load_state("load")
    assert _same_file(page.url, page_of(LESSONS[0])), f"clicking the first lesson opened {page.url}"


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.parametrize("index", range(len(LESSONS)), ids=[p.stem for p in LESSONS])
def test_lesson_page(browser, index):
    page, network = browser
    lesson = LESSONS[index]
    _open(page, network, page_of(lesson))
    page.screenshot(path=str(SHOTS / f"{lesson.stem}.png"))
    name = lesson.stem

    assert not network, f"{name}: the page asked the network for {network}"
    prose = _prose(page)
    for raw in ["$$", "\\frac", "\\(", "\\[", "\\begin{"]:
        at = prose.find(raw)
        assert at < 0, f"{name}: raw TeX {raw!r} visible in the text: ...{prose[max(0, at - 80):at + 80]!r}..."
    errors = page.eval_on_selector_all("mjx-merror, [data-mjx-error]", "els => els.map(e => e.textContent)")
    assert not errors, f"{name}: MathJax errors {errors[:3]}"
    # TeX that MathJax typeset but did not understand shows up as a literal backslash
    # (e.g. `\_` inside \text{} without the textmacros extension).
    leaks = page.eval_on_selector_all("mjx-container", "els => els.map(e => e.textContent).filter(t => t.includes('\\\\'))")
    assert not leaks, f"{name}: rendered maths shows a backslash: {leaks[:3]}"
    assert not _broken_images(page), f"{name}: images that did not load: {_broken_images(page)}"
    assert not CONSOLE, f"{name}: console errors {CONSOLE[:3]}"
    alts = page.eval_on_selector_all("article img", "els => els.map(i => [i.getAttribute('alt') || '', i.src])")
    bad = [src for alt, src in alts if FILE_NAME_ALT.search(alt)]
    assert not bad, f"{name}: {len(bad)} picture(s) without a description (alt is empty or a file name): {bad[:3]}"
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 1000})
        over = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
        assert over <= 0, f"{name}: at {width} px the page is {over} px wider than the screen"
    page.set_viewport_size({"width": 1400, "height": 1000})

    badge = page.locator(f'article a[href^="https://colab.research.google.com/github/"][href$="/lessons/{lesson.name}"] img')
    assert badge.count() >= 1 and badge.first.evaluate("i => i.naturalWidth") > 0, f"{name}: no Colab badge"
    download = page.locator("article a[download]")
    assert download.count() >= 1 and download.first.get_attribute("href").endswith(lesson.name), f"{name}: no download link"

    _check_explorer_pictures(page, lesson)

    previous = SITE / "index.html" if index == 0 else page_of(LESSONS[index - 1])
    prev = page.locator("a.left-prev")
    assert prev.count() == 1 and _same_file(prev.evaluate("a => a.href"), previous), \
        f"{name}: 'previous' does not lead to {previous.name}"
    nxt = page.locator("a.right-next")
    if index == len(LESSONS) - 1:
        assert nxt.count() == 0 or not _same_file(nxt.evaluate("a => a.href"), page_of(lesson)), f"{name}: next loops"
        return
    nxt.click()
    page.wait_for_load_state("load")
    assert _same_file(page.url, page_of(LESSONS[index + 1])), f"{name}: 'next' opened {page.url}"


def _check_explorer_pictures(page, lesson: Path) -> None:
    """Every code cell whose saved output is a widget view shows a picture on the page."""
    copy = PAGES_SRC / lesson.name
    if not copy.exists():
        pytest.fail(f"{copy} missing: the site's notebook copies are written by `bash course.sh book`")
    code = [c for c in nbformat.read(copy, as_version=4).cells if c.cell_type == "code"]
    cells = page.locator("article div.cell")
    assert cells.count() == len(code), f"{lesson.stem}: {cells.count()} code cells on the page, {len(code)} in the notebook"
    for i, cell in enumerate(code):
        if not any(build.WIDGET_VIEW in o.get("data", {}) for o in cell.get("outputs", [])):
            continue
        pictures = cells.nth(i).locator(".cell_output img")
        assert pictures.count() >= 1, f"{lesson.stem}: code cell {i + 1} shows an explorer but no picture on the page"
        widths = pictures.evaluate_all("els => els.map(i => i.naturalWidth)")
        assert min(widths) > 0, f"{lesson.stem}: code cell {i + 1}: explorer picture did not load"
        cells.nth(i).screenshot(path=str(SHOTS / f"{lesson.stem}_explorer_cell{i + 1}.png"))


@pytest.mark.browser
@pytest.mark.slow
def test_lesson_00_shows_the_architecture_diagram(browser):
    page, network = browser
    lesson = next((p for p in LESSONS if p.stem.startswith("00_")), None)
    assert lesson is not None, "no lesson 00"
    code = [c for c in nbformat.read(lesson, as_version=4).cells if c.cell_type == "code"]
    calls = [i for i, c in enumerate(code) if DIAGRAM_CALL in c.source]
    if not calls:
        if (ROOT / "helpers" / "architecture" / "plots.py").exists():
            pytest.fail(f"{lesson.name} does not call helpers.architecture.plots.architecture_diagram")
        pytest.skip(f"{lesson.name} has no cell calling helpers.architecture.plots.architecture_diagram yet "
                    "(helpers/architecture/plots.py does not exist on this branch); nothing to check")
    _open(page, network, page_of(lesson))
    cell = page.locator("article div.cell").nth(calls[0])
    assert DIAGRAM_CALL in cell.locator(".cell_input").inner_text(), "page cells and notebook cells are misaligned"
    pictures = cell.locator(".cell_output img")
    assert pictures.count() >= 1, f"{lesson.stem}: the cell calling {DIAGRAM_CALL}...) shows no image"
    assert pictures.first.evaluate("i => i.naturalWidth") > 0, f"{lesson.stem}: the architecture diagram did not load"
    cell.screenshot(path=str(SHOTS / f"{lesson.stem}_architecture_diagram.png"))


@pytest.mark.browser
@pytest.mark.slow
def test_search_finds_a_lesson(browser):
    page, network = browser
    _open(page, network, SITE / "search.html")
    page.goto((SITE / "search.html").as_uri() + "?q=attention", wait_until="load")
    page.wait_for_function("() => document.querySelectorAll('#search-results ul.search li').length > 0", timeout=60_000)
    page.screenshot(path=str(SHOTS / "search.png"))
    hrefs = page.eval_on_selector_all("#search-results ul.search li a", "els => els.map(a => a.href)")
    assert any("/lessons/" in h for h in hrefs), f"searching 'attention' found no lesson page: {hrefs[:5]}"
    assert not network, f"the search asked the network for {network}"


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda p: p.stem)
def test_every_figure_has_a_numbered_caption(site, lesson):
    """Each picture of a lesson page (not the Colab badge) sits in a <figure> whose caption starts
    "Figure N.k." with k counting 1, 2, 3, ... down the page; an explorer's caption says that it is
    a static picture."""
    text = page_of(lesson).read_text(encoding="utf-8")
    figures = re.findall(r"<figure\b.*?</figure>", text, re.S)
    outside = re.sub(r"<figure\b.*?</figure>", "", text, flags=re.S)
    loose = [m for m in re.findall(r"<img\s[^>]*>", outside) if re.search(r'src="[^"]*_images/[^"]*\.png"', m)]
    assert not loose, f"{lesson.stem}: {len(loose)} picture(s) without a caption, e.g. {loose[0][:160]}"
    numbers = [re.search(r"<figcaption>.*?Figure (\d+[a-z]?)\.(\d+)\.", f, re.S) for f in figures]
    assert all(numbers), f"{lesson.stem}: a figure without a numbered caption"
    lesson_number = lesson.stem.split("_")[0].lstrip("0") or "0"  # "9", "9b"
    assert [(m[1], int(m[2])) for m in numbers] == [
        (lesson_number, k) for k in range(1, len(figures) + 1)], f"{lesson.stem}: figure numbers out of order"
    for figure in figures:
        caption = re.sub(r"<[^>]+>", "", figure.split("<figcaption>", 1)[1])
        words = caption.split(".", 2)[-1].split()
        assert len(words) >= 8, f"{lesson.stem}: a caption says too little: {caption.strip()[:120]!r}"
        if "Static picture of the" in figure:
            assert "run the notebook to explore" in caption, f"{lesson.stem}: an explorer caption lacks the note"


def test_every_page_is_light(site):
    """What a page loads (HTML, scripts, styles, fonts, images) stays under the target; the
    figures' pictures are part of it."""
    spec = importlib.util.spec_from_file_location("book_postprocess_site", ROOT / "book" / "postprocess.py")
    post = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(post)
    weights = post.page_weights(site)
    heavy = {page: round(size / 1e6, 2) for page, size in weights.items() if size > MAX_PAGE_BYTES}
    (SHOTS).mkdir(parents=True, exist_ok=True)
    (SHOTS / "page-weights.txt").write_text("\n".join(f"{p}\t{b}" for p, b in sorted(weights.items())) + "\n")
    assert not heavy, f"pages over {MAX_PAGE_BYTES / 1e6:.0f} MB: {heavy}"


@pytest.mark.browser
@pytest.mark.slow
def test_figure_text_is_readable_at_1280_px(browser):
    """Each figure is drawn at 100 dpi with text of at least 8 pt (helpers.common.style) and
    shown as a 2x picture whose width attribute is its 1x size; the page may shrink it to the
    column. The smallest text, as rendered: 8 pt x 100/72 px per pt x shown width / 1x width."""
    page, network = browser
    page.set_viewport_size({"width": 1280, "height": 1000})
    rows = []
    for lesson in LESSONS:
        _open(page, network, page_of(lesson))
        sizes = page.eval_on_selector_all(
            "article .cell_output img",
            "els => els.map(i => [i.clientWidth, +(i.getAttribute('width') || i.naturalWidth), i.alt])")
        rows += [(lesson.stem, shown, width, alt) for shown, width, alt in sizes if width]
    page.set_viewport_size({"width": 1400, "height": 1000})
    smallest = sorted((8 * 100 / 72 * shown / width, stem, alt[:60]) for stem, shown, width, alt in rows)
    SHOTS.mkdir(parents=True, exist_ok=True)
    (SHOTS / "figure-text.txt").write_text("\n".join(f"{px:.1f} px\t{stem}\t{alt}" for px, stem, alt in smallest) + "\n")
    assert smallest, "no figures found on the lesson pages"
    assert smallest[0][0] >= MIN_LABEL_PX, f"smallest figure text {smallest[0][0]:.1f} px: {smallest[0][1:]}"
