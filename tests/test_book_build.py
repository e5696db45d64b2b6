"""book/build.py, the website builder: lesson discovery, the home page from README.md, the site's
copy of a lesson, the offline check, and (one small Sphinx build) that an explorer's output
shows its image/png when the notebook carries no widget state."""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("book_build", ROOT / "book" / "build.py")
build = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(build)

REPO = "https://github.com/bert-layer-by-layer/bert-layer-by-layer"
BADGE_IMG = "https://colab.research.google.com/assets/colab-badge.svg"


def _png(width: int, rgb: tuple[int, int, int]) -> str:
    """Base64 of a real one-row PNG (what an explorer's ipywidgets.Image holds)."""
    import struct
    import zlib

    def chunk(tag, body):
        return struct.pack(">I", len(body)) + tag + body + struct.pack(">I", zlib.crc32(tag + body))

    raw = b"\x00" + bytes(rgb) * width
    png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, 1, 8, 2, 0, 0, 0))
           + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))
    return base64.b64encode(png).decode()


# The explorer's own picture (in its display bundle) and the one its widget state holds.
PNG_A, PNG_B = _png(1, (255, 0, 0)), _png(2, (0, 0, 255))


def _badge(stem: str) -> str:
    return f"[![Open In Colab]({BADGE_IMG})]({REPO.replace('https://github.com', 'https://colab.research.google.com/github')}/blob/main/lessons/{stem}.ipynb)"


def test_lessons_are_every_two_digit_notebook_in_order(tmp_path):
    for name in ["10_ten.ipynb", "00_zero.ipynb", "09b_nine_b.ipynb", "09_nine.ipynb", "9_short.ipynb", "notes.ipynb",
                 "01_one.py"]:
        (tmp_path / name).write_text("{}")
    assert [p.name for p in build.lessons(tmp_path)] == ["00_zero.ipynb", "09_nine.ipynb", "09b_nine_b.ipynb",
                                                         "10_ten.ipynb"]
    assert build.lesson_number("09b_nine_b") == "09b" and build.lesson_number("09_nine") == "09"
    real = build.lessons()
    assert real and [p.name for p in real] == sorted(p.name for p in (ROOT / "lessons").glob("[0-9][0-9]*_*.ipynb"))


def test_home_page_is_the_readme_title_intro_and_lesson_table():
    readme = (ROOT / "README.md").read_text()
    files = build.lessons()
    titles = {p.stem: build.lesson_title(nbformat.read(p, as_version=4)) for p in files}
    page, warnings = build.home_page(readme, files, titles, "2030-01-01", REPO)
    assert page.startswith(readme.splitlines()[0] + "\n"), "the home page opens with the README's title"
    rows = [l for l in readme.split("## Lessons", 1)[1].splitlines() if l.startswith("| ")][2:]
    assert rows, "README.md's lesson table has rows"
    for row in rows:
        assert build.keep_together(row.replace(BADGE_IMG, build.LOCAL_BADGE)) in page, \
            f"README row missing from the home page: {row[:60]}"
    assert BADGE_IMG not in page, "badge pictures come from the site, not the network"
    toctree = page.split("```{toctree}", 1)[1]
    assert [l for l in toctree.splitlines() if l.startswith("lessons/")] == [f"lessons/{p.stem}" for p in files]
    assert not warnings, warnings
    # the sidebar groups the lessons by the README's parts, in order (issue 36)
    captions = [l.split(": ", 1)[1] for l in page.splitlines() if l.startswith(":caption: ")]
    assert captions == [caption for caption, _ in build.PARTS]


def test_part_toctrees_place_every_lesson_once_and_keep_a_new_one():
    files = [Path(n) for n in ("00_zero.ipynb", "04_four.ipynb", "09_nine.ipynb", "16_new.ipynb")]
    text = build.part_toctrees(files)
    listed = [l for l in text.splitlines() if l.startswith("lessons/")]
    assert listed == ["lessons/00_zero", "lessons/04_four", "lessons/09_nine", "lessons/16_new"]
    blocks = text.split("```{toctree}")[1:]
    assert ":caption: Part 1" in blocks[0] and "lessons/04_four" in blocks[0]
    assert ":caption:" not in blocks[-1] and "lessons/16_new" in blocks[-1], "a lesson of no part is still listed"


def test_home_page_adds_a_lesson_the_readme_lacks_and_drops_one_that_does_not_exist(tmp_path):
    readme = "\n".join([
        "# Course", "", "Intro with a [guide](docs/guide.md).", "", "## Lessons", "",
        "| # | lesson | what |", "| --- | --- | --- |",
        "| 00 | [Zero](lessons/00_zero.ipynb) | a |",
        "| 98 | [Gone](lessons/98_gone.ipynb) | b |", "", "## After", "not on the page",
    ])
    files = [tmp_path / "00_zero.ipynb", tmp_path / "09_new.ipynb"]
    page, warnings = build.home_page(readme, files, {"00_zero": "Zero", "09_new": "09 — New"}, "2030-01-01", REPO)
    assert "| 09 | [09 — New](lessons/09_new.ipynb) |  |" in page
    assert "98_gone" not in page and "not on the page" not in page
    assert f"[guide]({REPO}/blob/main/docs/guide.md)" in page, "a README link outside lessons/ points at the repository"
    assert len(warnings) == 2
    assert any("lesson 98" in w and "does not exist" in w for w in warnings)
    assert any("no row for 09_new.ipynb" in w for w in warnings)


def test_repository_links_keeps_lessons_anchors_and_web_addresses():
    text = "[a](lessons/03_x.ipynb) [b](https://x.org/y) [c](#sec) [d](helpers/README.md) [e](/colab-badge.svg) ![f](g.png)"
    assert build.repository_links(text, REPO) == (
        f"[a](lessons/03_x.ipynb) [b](https://x.org/y) [c](#sec) [d]({REPO}/blob/main/helpers/README.md) "
        "[e](/colab-badge.svg) ![f](g.png)")


def test_repository_links_from_a_lesson_resolve_like_github():
    text = "[a](04_y.ipynb) [b](../helpers/README.md#map) [c](solutions/solutions_03.py) [d](mailto:a@b.c)"
    assert build.repository_links(text, REPO, "lessons") == (
        f"[a](04_y.ipynb) [b]({REPO}/blob/main/helpers/README.md#map) "
        f"[c]({REPO}/blob/main/lessons/solutions/solutions_03.py) [d](mailto:a@b.c)")


def _widget_state(image_b64s: list[str]) -> tuple[dict, str]:
    """A saved ipywidgets state: VBox(HBox(IntSlider), Image...) and the VBox's model id."""
    state = {
        "slider": {"model_name": "IntSliderModel", "state": {"value": 1}},
        "hbox": {"model_name": "HBoxModel", "state": {"children": ["IPY_MODEL_slider"]}},
    }
    children = ["IPY_MODEL_hbox"]
    for i, data in enumerate(image_b64s):
        state[f"img{i}"] = {"model_name": "ImageModel", "state": {"format": "png"},
                            "buffers": [{"path": ["value"], "encoding": "base64", "data": data}]}
        children.append(f"IPY_MODEL_img{i}")
    state["vbox"] = {"model_name": "VBoxModel", "state": {"children": children}}
    return state, "vbox"


def _executed_lesson(with_png: bool) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    state, vbox = _widget_state([PNG_B])
    nb.metadata["widgets"] = {build.WIDGET_STATE: {"state": state, "version_major": 2, "version_minor": 0}}
    data = {build.WIDGET_VIEW: {"model_id": vbox, "version_major": 2, "version_minor": 0}, "text/plain": "VBox(...)"}
    if with_png:
        data["image/png"] = PNG_A
    code = nbformat.v4.new_code_cell("# NBVAL_CHECK_OUTPUT\nexplorer", metadata=CAPTIONED, outputs=[
        nbformat.v4.new_output("display_data", data={"text/plain": ""}),  # a finished progress bar
        nbformat.v4.new_output("display_data", data=data),
    ])
    nb.cells = [nbformat.v4.new_markdown_cell(f"# 03 — Title\n\n{_badge('03_x')}\n\nText."), code]
    return nb


CAPTIONED = {"mystnb": {"figure": {"caption": "The picture.", "name": "fig-03-x"}}}


def _figure_cell(caption: str | None, *extra_displays: dict, picture: bool = True):
    outputs = [nbformat.v4.new_output("display_data", data=d) for d in extra_displays]
    if picture:
        outputs.append(nbformat.v4.new_output("display_data", data={"image/png": PNG_A, "text/plain": "<Figure>"}))
    outputs.append(nbformat.v4.new_output("stream", name="stdout", text="printed beside it\n"))
    metadata = {"mystnb": {"figure": {"caption": caption}}} if caption is not None else {}
    return nbformat.v4.new_code_cell("plot()", metadata=metadata, outputs=outputs)


def test_number_captions_counts_per_lesson_and_names_what_is_missing():
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# 04 — Title"),
        _figure_cell("First."),
        nbformat.v4.new_code_cell("x = 1"),
        _figure_cell(None),  # a picture with no caption
        _figure_cell("Second, after an uncaptioned one."),
        _figure_cell("Shows a table too.", {"text/html": "<table></table>", "text/plain": "table"}),
        _figure_cell("No picture here.", picture=False),
    ])
    notes = build.number_captions(nb, "04_walk")
    captions = [c.metadata.get("mystnb", {}).get("figure", {}).get("caption") for c in nb.cells[1:]]
    assert captions == ["**Figure 4.1.** First.", None, None, "**Figure 4.2.** Second, after an uncaptioned one.",
                        "**Figure 4.3.** Shows a table too.", None]
    assert notes == ["04_walk: code cell 4 shows a figure without a caption",
                     "04_walk: code cell 6 shows 2 outputs beside its captioned figure; "
                     "a captioned cell must display the picture alone",
                     "04_walk: code cell 7 has a figure caption but shows no picture; the caption is left off "
                     "the page"]


def _explorer_cell(caption: str, picture: str):
    data = {build.WIDGET_VIEW: {"model_id": "m", "version_major": 2, "version_minor": 0},
            "image/png": picture, "text/plain": "VBox(...)"}
    return nbformat.v4.new_code_cell("explorer", metadata={"mystnb": {"figure": {"caption": caption}}},
                                     outputs=[nbformat.v4.new_output("display_data", data=data)])


def test_number_captions_counts_a_moving_explorer_where_the_page_shows_it():
    """Issue 49: an explorer whose frames move on the site is shown just after the page's first
    figure (postprocess.explorers_to_top): it takes the number after the first figure's and the
    tag that moves it, and the first figure's code folds; a static explorer (no frames, or
    "multiples") keeps its place and order."""
    moving, still = _png(3, (0, 255, 0)), _png(4, (9, 9, 9))
    sha = {p: hashlib.sha256(base64.b64decode(p)).hexdigest() for p in (moving, still)}
    records = {sha[moving]: {"kind": "frames", "controls": [{"label": "layer"}]},
               sha[still]: {"kind": "multiples", "note": "Examples."}}
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# 04 — Title"),
        _figure_cell("Strip."), _figure_cell("Second."), _explorer_cell("Still.", still),
        _figure_cell("Third."), _explorer_cell("Moves.", moving),
    ])
    build.number_captions(nb, "04_walk", records)
    captions = [c.metadata["mystnb"]["figure"]["caption"].split(" *")[0] for c in nb.cells[1:]]
    assert captions == ["**Figure 4.1.** Strip.", "**Figure 4.3.** Second.", "**Figure 4.4.** Still.",
                        "**Figure 4.5.** Third.", "**Figure 4.2.** Moves."]
    tagged = [c.metadata.get("tags", []) for c in nb.cells[1:]]
    assert tagged == [["hide-input"], [], [], [], [build.TOP_TAG]], "the strip's code folds, the explorer moves"
    # without frames nothing moves: numbers in cell order, no tag
    nb2 = nbformat.v4.new_notebook(cells=[_figure_cell("Strip."), _explorer_cell("Moves.", moving)])
    build.number_captions(nb2, "04_walk", {})
    assert [c.metadata["mystnb"]["figure"]["caption"][:15] for c in nb2.cells] == ["**Figure 4.1.**", "**Figure 4.2.**"]
    assert not any(c.metadata.get("tags") for c in nb2.cells)


@pytest.mark.parametrize("with_png", [True, False], ids=["bundle-has-png", "png-from-widget-state"])
def test_site_notebook(with_png):
    original = _executed_lesson(with_png)
    nb, notes = build.site_notebook(original, "03_x", REPO)
    assert "widgets" not in nb.metadata, "no widget state on the page (its scripts would come from a CDN)"
    first = nb.cells[0].source
    assert f"[![Open In Colab]({build.LOCAL_BADGE})](https://colab.research.google.com/github/" in first
    assert "{download}`Download the notebook (.ipynb, no outputs) </notebooks/03_x.ipynb>`" in first
    code = nb.cells[1]
    assert build.MARKER not in code.source and code.source == "explorer"
    assert len(code.outputs) == 1, "the empty progress-bar display is gone"
    # The bundle's own picture wins; the widget state's picture only fills in a missing one.
    assert code.outputs[0]["data"]["image/png"] == (PNG_A if with_png else PNG_B)
    assert bool(notes) == (not with_png)
    caption = code.metadata["mystnb"]["figure"]["caption"]
    assert caption == f"**Figure 3.1.** The picture. *{build._postprocess().EXPLORER_CAPTION}*"
    assert code.metadata["mystnb"]["figure"]["name"] == "fig-03-x", "the name (the link target) is kept"
    assert "widgets" in original.metadata and build.MARKER in original.cells[1].source, "the input is not modified"


def test_site_notebook_adds_badge_and_download_when_the_lesson_has_no_badge():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# 04 — Title\n\nNo badge here.")])
    page, _ = build.site_notebook(nb, "04_y", REPO)
    added = page.cells[1].source
    assert added.startswith(f"[![Open In Colab]({build.LOCAL_BADGE})](https://colab.research.google.com/github/"
                            "bert-layer-by-layer/bert-layer-by-layer/blob/main/lessons/04_y.ipynb)")
    assert "</notebooks/04_y.ipynb>" in added


def test_widget_picture_needs_exactly_one_image():
    state, vbox = _widget_state([PNG_A])
    assert build.widget_picture(state, vbox) == PNG_A
    state, vbox = _widget_state([PNG_A, PNG_B])
    assert build.widget_picture(state, vbox) is None
    state, vbox = _widget_state([])
    assert build.widget_picture(state, vbox) is None
    assert build.widget_picture(state, "no-such-model") is None


def test_external_resources_flags_what_a_page_would_load_from_the_network(tmp_path):
    (tmp_path / "page.html").write_text("""<html><head>
        <script src="https://cdn.jsdelivr.net/npm/mathjax@3/es5/tex-chtml.js"></script>
        <link rel="stylesheet" href="//fonts.googleapis.com/css?family=Lato">
        <link rel="canonical" href="https://example.org/page.html">
        <style>@import "https://cdn.example.org/a.css";</style>
        </head><body>
        <img src="http://colab.research.google.com/assets/colab-badge.svg">
        <img src="_images/local.png"><a href="https://colab.research.google.com/github/x">a link is fine</a>
        <div style="background: url('https://cdn.example.org/bg.png')"></div>
        </body></html>""")
    (tmp_path / "_static").mkdir()
    (tmp_path / "_static" / "k.css").write_text("@font-face { src: url(https://cdn.example.org/KaTeX_Main.woff2); }"
                                                " .x { background: url(images/ok.png); }")
    (tmp_path / "_static" / "s.js").write_text('fetch("https://api.example.org/x.json"); var a = "https://not.a.load/";')
    found = {u for _, u in build.external_resources(tmp_path)}
    assert found == {
        "https://cdn.jsdelivr.net/npm/mathjax@3/es5/tex-chtml.js", "//fonts.googleapis.com/css?family=Lato",
        "https://cdn.example.org/a.css", "http://colab.research.google.com/assets/colab-badge.svg",
        "https://cdn.example.org/bg.png", "https://cdn.example.org/KaTeX_Main.woff2", "https://api.example.org/x.json",
    }


def test_the_book_extra_is_part_of_dev():
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert set(extras["book"]) <= set(extras["dev"]), "CI builds the site through the dev setup"


@pytest.mark.slow
def test_an_explorer_shows_its_png_on_the_page_when_the_widget_state_is_absent(tmp_path):
    """One output with both a widget view and an image/png, no widget state in the notebook
    (what a saved explorer looks like once nbclient keeps no state): the page shows the picture,
    not a widget placeholder, not the text repr, and loads nothing from the network."""
    src, out = tmp_path / "src", tmp_path / "site"
    src.mkdir()
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# Explorer page\n\nThe maths $a_{ij} = \\frac{1}{n}$ stays local."),
        nbformat.v4.new_code_cell("explorer", metadata={"mystnb": {"figure": {
            "caption": "**Figure 3.1.** What `x` shows.", "name": "fig-03-x"}}},
            outputs=[nbformat.v4.new_output("display_data", data={
            build.WIDGET_VIEW: {"model_id": "0123abcd", "version_major": 2, "version_minor": 0},
            "image/png": PNG_B,
            "text/plain": "VBox(children=(IntSlider(value=1),))",
        })]),
    ])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    nbformat.write(nb, src / "page.ipynb")
    (src / "index.md").write_text("# Home\n\n```{toctree}\npage\n```\n")
    env = {"COURSE_BOOK_SITE": json.dumps({"repository": REPO}), "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-m", "sphinx", "-b", "html", "-c", str(ROOT / "book"), "-q", "-W",
                           str(src), str(out)], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    html = (out / "page.html").read_text()
    output = html.split('class="cell_output', 1)[1].split("</div>", 1)[0]
    assert "<img" in output, "the explorer's image/png is shown"
    figure = html.split("<figure", 1)[1].split("</figure>", 1)[0]
    assert "<img" in figure and "<figcaption>" in figure, "the picture and its caption form one figure"
    assert "<strong>Figure 3.1.</strong> What <code" in figure, "the caption's Markdown is rendered"
    assert 'id="fig-03-x"' in figure
    assert build.WIDGET_VIEW not in html, "no widget placeholder script"
    assert "VBox(children=" not in html, "not the widget's text repr"
    images = [p for p in (out / "_images").glob("*.png")]
    assert [p.read_bytes() for p in images] == [base64.b64decode(PNG_B)]
    assert build.external_resources(out) == [], "a page needs nothing from the network"
    assert 'src="_static/mathjax/tex-svg.js"' in html, "MathJax is loaded from the site itself"


# --------------------------------------------------------------------------- issue 37
INSTALL = ('# NBVAL_CHECK_OUTPUT\nimport sys\n\nif "google.colab" in sys.modules:\n    import subprocess\n'
           '    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "-e", "/content/course"])\n'
           'else:\n    print("Running locally: nothing to install.")')


def test_site_notebook_leaves_off_the_install_cell_and_shows_exercises_as_to_do():
    from helpers.exercises import NO_ANSWER, correct

    def shown(feedback):
        data, _ = {"text/html": feedback._repr_html_(), "text/plain": repr(feedback)}, None
        return nbformat.v4.new_output("display_data", data=data)

    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell(f"# 03 — Title\n\n{_badge('03_x')}\n\nThe idea.\n\nThe first cell installs the "
                                      "course when you run it on Google Colab; on your own\nmachine it does nothing."),
        nbformat.v4.new_code_cell(INSTALL, outputs=[nbformat.v4.new_output("stream", name="stdout", text="Running locally")]),
        nbformat.v4.new_code_cell("check_exercise_1(None)", outputs=[shown(NO_ANSWER)]),
        nbformat.v4.new_code_cell("check_exercise_2(2)", outputs=[shown(correct("that is right."))]),
    ])
    page, notes = build.site_notebook(nb, "03_x", REPO)
    sources = [c.source for c in page.cells if c.cell_type == "code"]
    assert sources == ["check_exercise_1(None)", "check_exercise_2(2)"], "the Colab install cell is not on the page"
    assert any("install cell" in n for n in notes)
    first = next(c.source for c in page.cells if c.cell_type == "markdown" and "The idea." in c.source)
    assert "first cell installs" not in first, "no sentence about a cell the page left off (issue 49)"
    for wrapped in ("The first cell installs the course when you run it on Google Colab; on your own machine it does\n"
                    "nothing.", "The first cell installs the course when you run it\non Google Colab; on your own "
                    "machine it does nothing."):
        assert build.INSTALL_SENTENCE.sub("", f"Intro.\n\n{wrapped}") == "Intro.", "wrapped anywhere (08 wraps it late)"
    inside = ("Every number is computed. The first cell installs the course on Google Colab; locally it does\n"
              "nothing.\n\nNext paragraph.")
    assert build.INSTALL_SENTENCE.sub("", inside) == "Every number is computed.\n\nNext paragraph."
    todo, done = (c.outputs[0]["data"] for c in page.cells[1:])
    assert "Not yet" not in todo["text/html"] and "notebook to check your answer" in todo["text/html"]
    assert todo["text/plain"] == build.FEEDBACK_CHECK
    assert 'data-course-feedback="correct"' in done["text/html"], "a solved exercise keeps its feedback"
    nbformat.validate(page)  # the page is still a valid notebook (MyST-NB reads it)
    nbformat.writes(page)


def test_unanswered_feedback_is_recognised_in_its_markdown_form_of_earlier_builds_too():
    assert build.is_unanswered_feedback({"text/markdown": "**❌ Not yet:** no answer given.",
                                         "text/plain": "Not yet: no answer given."})
    assert not build.is_unanswered_feedback({"text/plain": "Not yet: this is printed text", "text/html": "<p>x</p>"})
    assert not build.is_unanswered_feedback({"text/markdown": "**✅ Correct:** yes", "text/plain": "Correct: yes"})


def test_a_code_wall_is_folded_and_a_short_cell_is_not():
    wall = nbformat.v4.new_code_cell("\n".join(f"x{i} = {i}" for i in range(build.CODE_WALL_LINES + 1)))
    short = nbformat.v4.new_code_cell("x = 1\nprint(x)")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(f"# 03 — T\n\n{_badge('03_x')}"), wall, short])
    page, _ = build.site_notebook(nb, "03_x", REPO)
    assert page.cells[1].metadata.get("tags") == ["hide-input"] and "tags" not in page.cells[2].metadata


def test_the_home_table_keeps_numbers_with_their_units():
    assert build.keep_together("| ~10 s | 4.3 min | 50 % random |") == "| ~10\u00a0s | 4.3\u00a0min | 50\u00a0% random |"
    assert build.keep_together("layer 5 shows") == "layer 5 shows"


def test_an_explorer_caption_says_what_the_page_lets_a_reader_do():
    moving = {"kind": "frames", "controls": [{"label": "layer"}, {"label": "head"}], "still": ["first token"]}
    assert build.explorer_caption(moving) == ("Move the layer and head sliders above the picture: every state was "
                                              "drawn when this site was built. In the notebook you can also change "
                                              "first token.")
    note = "The page cannot run the model; in the notebook, type any sentence."
    assert build.explorer_caption({"kind": "multiples", "note": note}) == note
    assert build.explorer_caption(None) == build._postprocess().EXPLORER_CAPTION


def test_cells_that_only_format_results_are_folded_on_the_page():
    """Issue 37: a cell that only prints or shows results already computed folds its input on the
    site (its output stays); a cell that computes, plots or runs a model stays open."""
    cell = nbformat.v4.new_code_cell
    folded = [cell('for c in claims:\n    print(f"* {c.sentence}")'),
              cell('from helpers.common.tables import show_table\nshow_table(rows, title="per layer")'),
              cell('print(", ".join(f"{x:.2f}" for x in sorted(values)))')]
    kept = [cell('print(course_mini_lens(SENTENCE).message)'),  # runs a model inside the print
            cell('rows = [r for r in table]\nshow_table(rows)'),  # builds something first
            cell('ax = plot_logits(logits)\nplt.show()'), cell('x = 1'), cell('%time print(1)\nrun()')]
    assert all(build.is_format_only(c) for c in folded)
    assert not any(build.is_format_only(c) for c in kept)
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# 04 — A lesson")] + folded + kept)
    page, _ = build.site_notebook(nb, "04_a_lesson", "https://github.com/example/course")
    codes = [c for c in page.cells if c.cell_type == "code"]
    assert ["hide-input" in c.metadata.get("tags", []) for c in codes] == [True] * 3 + [False] * 5


def _picture_cell(source: str):
    png = nbformat.v4.new_output("display_data", data={"image/png": "iVBORw0KGgo=", "text/plain": "<Figure>"})
    return nbformat.v4.new_code_cell(source, outputs=[png])


def test_the_set_up_is_one_folded_block_and_the_first_picture_follows_it():
    """Issue 49: parameters, imports and the loading printout go between two markers (one
    <details> on the page, book/postprocess.py), up to the text before the first picture; the
    block's headings become bold lines, its cells' own folds are lifted, the model it loaded is
    named for the summary."""
    md, code = nbformat.v4.new_markdown_cell, nbformat.v4.new_code_cell
    load = code("\n".join(f"import m{i}" for i in range(build.CODE_WALL_LINES + 3)), outputs=[nbformat.v4.new_output(
        "stream", name="stdout", text="Using bundled:tiny (2 layers, hidden 8) on cpu -- offline.\nmore\n")])
    nb = nbformat.v4.new_notebook(cells=[
        md(f"# 08 — T\n\n{_badge('08_x')}\n\nThe idea."), code(INSTALL), md("## Parameters\n\n`MODEL` names it."),
        code("MODEL = None"), md("## Load the model and trace the inputs\n\nTwo data sets."), load,
        md("Where this lesson sits:"), _picture_cell("you_are_here(config)"), md("## The idea\n\nText."),
        code("x = 1")])
    nb.cells[3].metadata["tags"] = ["parameters"]
    page, notes = build.site_notebook(nb, "08_x", REPO)
    cells = page.cells
    start = next(i for i, c in enumerate(cells) if 'class="course-setup-start"' in c.source)
    end = next(i for i, c in enumerate(cells) if 'class="course-setup-end"' in c.source)
    inside = [c.source.split("\n")[0] for c in cells[start + 1:end]]
    assert inside == ["**Parameters**", "MODEL = None", "**Load the model and trace the inputs**", "import m0"]
    assert cells[end + 1].source == "Where this lesson sits:" and "image/png" in cells[end + 2].outputs[0]["data"]
    assert 'data-model="bundled:tiny (2 layers, hidden 8) on cpu"' in cells[start].source
    assert cells[start + 2].metadata.get("tags") == ["parameters"] and "tags" not in cells[start + 4].metadata
    assert cells[start + 3].source == "**Load the model and trace the inputs**\n\nTwo data sets."
    assert any("Set-up" in n for n in notes)
    nbformat.validate(page)
    # a lesson heading that is not set-up ends the block there; no Parameters, no block
    assert list(build.setup_cells([md("## Parameters"), code("MODEL = None"), md("## The data"), code("x")])) == [0, 1]
    assert build.setup_cells([md("# T"), code("import torch")]) is None
    assert build.setup_cells([md("## Parameters"), _picture_cell("plot()")]) is None  # no code to fold


def test_exercise_code_folds_on_the_page_and_its_task_stays():
    """Issue 49: an exercise's stub and checker are for the notebook; on the page the task (the
    Markdown) and the "Your turn" box (the output) show, the code folds. Code of the sections
    before and after the exercises stays open."""
    md, code = nbformat.v4.new_markdown_cell, nbformat.v4.new_code_cell
    nb = nbformat.v4.new_notebook(cells=[
        md(f"# 03 — T\n\n{_badge('03_x')}"), md("## The idea"), code("x = 1"),
        md("Takeaway.\n\n## Summary\n\n* a\n\n## Exercises\n\n### Exercise 1: count\n\nDo it."),
        code("answer_1 = None\ncheck_exercise_1(answer_1)"), md("### Exercise 2: more"), code("answer_2 = None"),
        md("## Further reading"), code("y = 2")])
    page, _ = build.site_notebook(nb, "03_x", REPO)
    folded = {c.source.split("\n")[0]: "hide-input" in c.metadata.get("tags", [])
              for c in page.cells if c.cell_type == "code"}
    assert folded == {"x = 1": False, "answer_1 = None": True, "answer_2 = None": True, "y = 2": False}


def test_lessons_start_longest_chain_first(monkeypatch):
    """--jobs starts the longest lessons first (14, then 05), the short lessons last, in course
    order; a lesson that waits for another (RUNS_AFTER) counts that one's time before its own."""
    lessons = [f"{i:02d}" for i in range(16)]
    order = build.critical_order(lessons)
    assert sorted(order) == lessons
    assert order[:2] == ["14", "05"]
    short = [n for n in lessons if n not in build.EXPECTED_SECONDS]
    assert order[-len(short):] == short
    monkeypatch.setattr(build, "RUNS_AFTER", {"14": ("11",)})
    order = build.critical_order(lessons)
    assert order[0] == "11" and order.index("11") < order.index("14")
