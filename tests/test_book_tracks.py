"""The website's Chinese track (issue 48; book/tracks.py and build.py's --model): which parameters
every lesson gets, where the site goes, the links between the tracks, a lesson that stops for
English data, and -- slow -- a real Chinese build of three short lessons."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("book_build_tracks", ROOT / "book" / "build.py")
build = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(build)
tracks = build.tracks


def _lesson(parameters: str):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# 00 — A lesson\n\nIntro."),
                nbformat.v4.new_code_cell(parameters, metadata={"tags": ["parameters"]}),
                nbformat.v4.new_code_cell("print(MODEL)")]
    return nb


def test_the_model_option_picks_the_track_and_refuses_what_it_does_not_know():
    assert build.tracks.track_for() is tracks.ENGLISH and not tracks.ENGLISH.params
    zh = tracks.track_for("bundled-zh")
    assert zh.params == {"MODEL": "bundled-zh", "SENTENCE": tracks.ZH_SENTENCE, "LANGUAGE": "zh"} and zh.suffix == "-zh"
    assert tracks.track_for("bundled-zh", "今天天气如何").params["SENTENCE"] == "今天天气如何"
    with pytest.raises(ValueError, match="not valid.*bundled-zh"):
        tracks.track_for("bert-base-chinese")
    with pytest.raises(ValueError, match="need --model"):
        tracks.track_for(None, "今天天气如何")
    with pytest.raises(SystemExit):  # build.py says so before running anything
        build.main(["--model", "no-such-model", "--only", "00"])


def test_parameters_are_injected_after_the_parameters_cell_where_the_lesson_has_them():
    zh = tracks.track_for("bundled-zh")
    nb = tracks.inject(_lesson('MODEL = None\nSENTENCE = "The cat sat."'), zh)
    injected = nb.cells[2].source
    assert injected.startswith("# injected parameters") and "MODEL = 'bundled-zh'" in injected
    assert f"SENTENCE = {tracks.ZH_SENTENCE!r}" in injected
    only_model = tracks.inject(_lesson("MODEL = None"), zh).cells[2].source
    assert "MODEL = 'bundled-zh'" in only_model and "SENTENCE" not in only_model
    english = _lesson("MODEL = None")
    assert len(tracks.inject(english, tracks.ENGLISH).cells) == 3  # the English track changes nothing
    with pytest.raises(ValueError, match="exactly one cell tagged 'parameters'"):
        nb = _lesson("MODEL = None")
        nb.cells[1].metadata = {}
        tracks.inject(nb, zh)


def test_a_quick_chinese_track_sets_every_lessons_budget():
    quick = tracks.track_for("bundled-zh", budget="quick")
    assert quick.params["BUDGET"] == "quick" and quick.params["MODEL"] == "bundled-zh"
    nb = tracks.inject(_lesson('MODEL = None\nBUDGET = None'), quick)
    assert "BUDGET = 'quick'" in nb.cells[2].source
    with pytest.raises(ValueError, match="need --model"):
        tracks.track_for(None, budget="quick")
    with pytest.raises(ValueError, match="choose one of"):
        tracks.track_for("bundled-zh", budget="tiny")


def test_lesson_05_gets_the_language_not_the_chinese_models_sizes():
    """Lesson 05's MODEL copies a checkpoint's sizes (m3e-small's would take hours to train): the
    track sets its LANGUAGE and SENTENCE and leaves MODEL at the lesson's own tiny SIZES; a lesson
    without SIZES gets MODEL."""
    import jupytext

    zh = tracks.track_for("bundled-zh")
    source = (ROOT / "lessons" / "05_pretrain_a_tiny_bert.py").read_text(encoding="utf-8")
    nb = tracks.inject(jupytext.reads(source, fmt="py:percent"), zh)
    at = next(i for i, c in enumerate(nb.cells) if "parameters" in c.metadata.get("tags", [])) + 1
    injected = nb.cells[at].source
    assert "LANGUAGE = 'zh'" in injected and "SENTENCE = " in injected and "MODEL" not in injected
    nb = tracks.inject(_lesson('MODEL = None\nLANGUAGE = None'), zh)
    assert "MODEL = 'bundled-zh'" in nb.cells[2].source and "LANGUAGE = 'zh'" in nb.cells[2].source


def test_a_lesson_that_stops_for_english_data_ends_its_page_at_the_one_line():
    zh = tracks.track_for("bundled-zh")
    nb = _lesson("MODEL = None")
    nb.cells.append(nbformat.v4.new_code_cell("after()"))
    nb.cells[2].outputs = [nbformat.v4.new_output("stream", name="stdout", text="bundled-zh\n"),
                           nbformat.v4.new_output("error", ename="LessonStop", evalue="lesson 06 stops here: x",
                                                  traceback=["LessonStop: lesson 06 stops here: x"])]

    class Err(Exception):
        ename, evalue = "LessonStop", "lesson 06 stops here: its data are English"

    assert tracks.is_lesson_stop(Err()) and not tracks.is_lesson_stop(ValueError("x"))
    line = tracks.end_at_stop(nb, Err(), zh)
    assert line == "LessonStop: lesson 06 stops here: its data are English"
    assert [c.cell_type for c in nb.cells] == ["markdown", "code", "code", "markdown"]  # after() is gone
    assert [o.output_type for o in nb.cells[2].outputs] == ["stream", "stream"]
    assert nb.cells[2].outputs[1].text.strip() == line
    assert "stops here" in nb.cells[3].source and "English version" in nb.cells[3].source


def test_each_page_links_the_same_page_of_the_other_track():
    zh = tracks.track_for("bundled-zh")
    en_link = tracks.track_link(tracks.ENGLISH, "lessons/05_x.html", 1, "site")
    assert 'href="../../site-zh/lessons/05_x.html"' in en_link and "中文版 (Chinese model)" in en_link
    zh_link = tracks.track_link(zh, "index.html", 0, "site-zh")
    assert 'href="../site/index.html"' in zh_link and "English version" in zh_link
    assert tracks.out_name("site", zh) == "site-zh" and tracks.out_name("site", tracks.ENGLISH) == "site"
    page = tracks.add_link("# 05 — Title\n\nText.", en_link)
    assert page.split("\n")[0] == "# 05 — Title" and en_link in page.split("\n")[2]


def test_links_only_to_a_site_that_was_built_and_back_once_it_is(tmp_path):
    english, zh = tmp_path / "site", tracks.track_for("bundled-zh")
    (english / "lessons").mkdir(parents=True)
    assert not tracks.other_site_built(english, tracks.ENGLISH)  # no Chinese site: no dead link
    (english / "index.html").write_text("<h1>BERT</h1><p>home</p>", encoding="utf-8")
    (english / "lessons" / "02_x.html").write_text("<main><h1>02</h1></main>", encoding="utf-8")
    (english / "lessons" / "03_x.html").write_text("no heading", encoding="utf-8")
    chinese = tmp_path / "site-zh"
    assert tracks.other_site(chinese, zh) == english and tracks.other_site_built(chinese, zh)
    assert tracks.link_pages(english, tracks.ENGLISH) == 2
    assert '<h1>02</h1><p class="track-link"><a href="../../site-zh/lessons/02_x.html"' in \
        (english / "lessons" / "02_x.html").read_text(encoding="utf-8")
    assert tracks.link_pages(english, tracks.ENGLISH) == 0  # once only


def _frames_tag(explorer: str) -> str:
    import base64
    import gzip
    import json

    payload = base64.b64encode(gzip.compress(json.dumps({"explorer": explorer}).encode())).decode()
    return f'<script type="application/octet-stream" class="course-frames" data-encoding="gzip-base64">{payload}</script>'


def test_a_track_of_another_model_says_why_its_explorers_have_no_box(tmp_path):
    """The "try your own sentence" box runs the English pages' model: on the Chinese track it would
    draw another model than the explorer shows, so each explorer it could redraw says why it has
    none, once, under its picture; the others are left as they are."""
    browser = build.browser_module()
    (tmp_path / "lessons").mkdir()
    page = tmp_path / "lessons" / "07_walk.html"
    html = (f'<div class="course-explorer">{_frames_tag("LayerWalkExplorer")}</div><p>between</p>'
            f'<div class="course-explorer">{_frames_tag("SomeOtherExplorer")}</div><p>end</p>')
    page.write_text(html, encoding="utf-8")
    assert browser.note_other_model(tmp_path, tracks.CHINESE.model_label) == {"pages": 1, "explorers": 1}
    text = page.read_text(encoding="utf-8")
    note = text.index("course-browser-note")
    assert text.count("course-browser-note") == 1 and "m3e-small" in text
    assert text.index("</div>") < note < text.index("<p>between</p>")  # under the first explorer
    assert text.replace(text[text.index("<span", note - 60):text.index("</span>") + 7], "") == html


def test_characters_without_a_glyph_are_named():
    nb = _lesson("MODEL = None")
    warning = ("/x.py:1: UserWarning: Glyph 40858 (\\N{CJK UNIFIED IDEOGRAPH-9F9A}) missing from font(s) "
               "DejaVu Sans.\n")
    nb.cells[2].outputs = [nbformat.v4.new_output("stream", name="stderr", text=warning)]
    assert tracks.missing_glyphs(nb) == ["龚"]
    assert tracks.missing_glyphs(_lesson("MODEL = None")) == []


@pytest.mark.slow
def test_a_chinese_build_of_short_lessons_renders_chinese_pages_linked_both_ways(tmp_path):
    sys.path.insert(0, str(ROOT / "tests"))
    from zh_support import SKIP_REASON, zh_installed

    if not zh_installed():
        pytest.skip(SKIP_REASON)
    # an English site beside it (two pages of one): the Chinese pages link to it, and it gains the
    # link back once the Chinese track is built
    english = tmp_path / "site"
    (english / "lessons").mkdir(parents=True)
    (english / "index.html").write_text("<html><body><h1>BERT</h1></body></html>", encoding="utf-8")
    (english / "lessons" / "00_big_picture.html").write_text("<h1>00</h1><p>x</p>", encoding="utf-8")
    assert build.main(["--only", "00,15", "--model", "bundled-zh", "--out", str(english)]) == 0
    site = tmp_path / "site-zh"
    home = (site / "index.html").read_text(encoding="utf-8")
    assert 'href="../site/index.html"' in home and "bundled-zh" in home
    for lesson in ("00", "15"):
        page = next((site / "lessons").glob(f"{lesson}_*.html")).read_text(encoding="utf-8")
        assert 'href="../../site/lessons/' in page and "English version" in page
        assert "Using bundled-zh" in page, f"{lesson}: the page was not made with the Chinese model"
        # 00 runs the injected sentence; 15 its own walk-through sentence
        chinese = tracks.ZH_SENTENCE[:4] if lesson == "00" else "今天天气如何"
        assert chinese in page, f"{lesson}: {chinese} is not on the page"
        assert "course-browser-model.js" not in page, f"{lesson}: the English model's box on a Chinese page"
    assert not (site / "_static" / "browser-model").exists(), "the Chinese track shipped the browser model"
    back = (english / "lessons" / "00_big_picture.html").read_text(encoding="utf-8")
    assert 'href="../../site-zh/lessons/00_big_picture.html"' in back
    assert 'href="../site-zh/index.html"' in (english / "index.html").read_text(encoding="utf-8")
