"""book/postprocess.py: formulas typeset at build time, the icon subset, palette PNGs, figure
descriptions and page weights -- on small real inputs (MathJax really runs in Node, the icons
come from the theme's real Font Awesome bundle)."""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import io
import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("book_postprocess", ROOT / "book" / "postprocess.py")
post = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(post)
_bspec = importlib.util.spec_from_file_location("book_build_pp", ROOT / "book" / "build.py")
build = importlib.util.module_from_spec(_bspec)
_bspec.loader.exec_module(build)

PAGE = """<html><head><title>t</title>
<script>window.MathJax = {"tex": {}}</script>
<script defer="defer" src="../_static/mathjax/tex-svg.js?v=1"></script>
</head><body class="x"><article>
<p>inline <span class="math notranslate nohighlight">\\(\\frac{QK^\\top}{\\sqrt{d}}\\)</span> and
<span class="math notranslate nohighlight">\\(\\text{token\\_type}\\)</span></p>
<div class="math notranslate nohighlight">\\[P = \\operatorname{softmax}(S)\\]</div>
</article></body></html>"""


def _site(tmp_path: Path, body: str = PAGE) -> Path:
    (tmp_path / "lessons").mkdir(parents=True)
    (tmp_path / "_static").mkdir()
    (tmp_path / "lessons" / "00_x.html").write_text(body, encoding="utf-8")
    return tmp_path


@pytest.mark.skipif(post.node_executable() is None, reason="no Node.js: the build falls back to MathJax in the browser")
def test_prerender_math_replaces_every_formula_and_the_script(tmp_path):
    site = _site(tmp_path)
    result = post.prerender_math(site, build.mathjax_es5(), post.node_executable())
    html = (site / "lessons" / "00_x.html").read_text()
    assert result == {"formulas": 3, "pages": 1, "errors": []}
    assert html.count("<mjx-container") == 3 and html.count("<svg") == 4  # 3 formulas + the glyphs
    assert html.count('id="MJX-SVG-global-cache"') == 1 and "<use" in html  # shapes defined once
    assert "\\frac" not in html.split("aria-label")[0] and "window.MathJax" not in html and "tex-svg.js" not in html
    assert 'aria-label="\\frac{QK^\\top}{\\sqrt{d}}"' in html  # the TeX stays readable to a screen reader
    assert 'display="true"' in html  # the display formula is typeset as a display
    assert (site / "_static" / post.MATH_CSS).read_text().count("mjx-container") > 0
    assert "../_static/mathjax-svg.css" in html


@pytest.mark.skipif(post.node_executable() is None, reason="no Node.js")
def test_prerender_math_reports_a_formula_it_cannot_parse(tmp_path):
    site = _site(tmp_path, PAGE.replace("\\sqrt{d}", "\\sqrt{d"))
    result = post.prerender_math(site, build.mathjax_es5(), post.node_executable())
    assert len(result["errors"]) == 1 and result["errors"][0][0] == "lessons/00_x.html"


def _theme_fontawesome() -> Path:
    import pydata_sphinx_theme

    # the bundled script the theme copies into a site (not its unbundled source under assets/)
    found = list(Path(pydata_sphinx_theme.__file__).parent.glob("theme/*/static/scripts/fontawesome.js"))
    if not found:
        pytest.skip("this pydata-sphinx-theme ships no fontawesome.js")
    return found[0]


def test_subset_icons_keeps_only_the_icons_in_use(tmp_path):
    site = _site(tmp_path, '<i class="fa-solid fa-magnifying-glass fa-lg"></i><i class="fa-brands fa-github"></i>')
    (site / "_static" / "scripts").mkdir()
    (site / "_static" / "scripts" / "fontawesome.js").write_bytes(_theme_fontawesome().read_bytes())
    result = post.subset_icons(site)
    script = (site / "_static" / "scripts" / "fontawesome.js").read_text()
    assert result["replaced"] and result["icons"] == 2 and result["after"] < 20_000 < result["before"]
    assert '"fas:magnifying-glass":[512,512,"M' in script and '"fab:github":' in script


def test_subset_icons_keeps_the_full_script_when_an_icon_is_unknown(tmp_path):
    site = _site(tmp_path, '<i class="fa-solid fa-not-an-icon-xyz"></i>')
    (site / "_static" / "scripts").mkdir()
    full = _theme_fontawesome().read_bytes()
    (site / "_static" / "scripts" / "fontawesome.js").write_bytes(full)
    result = post.subset_icons(site)
    assert not result["replaced"] and "not-an-icon-xyz" in result["reason"]
    assert (site / "_static" / "scripts" / "fontawesome.js").read_bytes() == full


def _figure_png() -> bytes:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(3, 2))
    ax.imshow([[0, 0.5], [1, 0.2]])
    ax.set_title("attention probability")
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    plt.close(fig)
    return buffer.getvalue()


def test_describe_images_and_compress(tmp_path):
    png = _figure_png()
    digest = hashlib.sha256(png).hexdigest()
    # The second picture as MyST-NB writes a captioned figure: inside a link to itself.
    page = (f'<img alt="Open In Colab" src="../_images/colab-badge.svg" />'
            f'<figure class="align-default" id="fig-00-x"><a class="reference internal image-reference" '
            f'href="../_images/{digest}.png"><img alt="../_images/{digest}.png" height="10" '
            f'src="../_images/{digest}.png" width="20" />\n</a><figcaption><p>Figure 0.1.</p></figcaption></figure>'
            f'<img alt="../_images/{"0" * 64}.png" src="../_images/{"0" * 64}.png" />')
    site = _site(tmp_path, page)
    (site / "_images").mkdir()
    (site / "_images" / f"{digest}.png").write_bytes(png)
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("plot()")
    cell.outputs = [nbformat.v4.new_output("display_data", data={"image/png": base64.b64encode(png).decode()},
                                           metadata={"image/png": {"alt": "Figure: attention probability"}})]
    nb.cells = [cell]
    result = post.describe_images(site, post.image_descriptions([nb]))
    html = (site / "lessons" / "00_x.html").read_text()
    assert result["described"] == 1 and len(result["undescribed"]) == 1
    assert 'alt="Figure: attention probability"' in html and 'alt="Open In Colab"' in html
    assert html.count('class="course-enlarge"') == 2  # both figures open full size; the badge does not
    assert "image-reference" not in html and html.count("<a ") == 2, "one link per picture, never nested"
    packed = post.compress_images(site)
    from PIL import Image

    with Image.open(site / "_images" / f"{digest}.png") as image:
        assert image.size == Image.open(io.BytesIO(png)).size  # same picture, same size
    assert packed["after"] <= packed["before"]


def test_page_weight_counts_what_the_page_loads(tmp_path):
    site = _site(tmp_path, '<link rel="stylesheet" href="../_static/a.css"><script src="../_static/b.js"></script>'
                           '<link rel="next" href="01_y.html"><img src="../_static/c.png">')
    (site / "_static" / "a.css").write_text("x" * 100)
    (site / "_static" / "b.js").write_text("y" * 200)
    (site / "_static" / "c.png").write_bytes(b"z" * 300)
    (site / "lessons" / "01_y.html").write_text("w" * 5000)
    weight = post.page_weight(site / "lessons" / "00_x.html")
    assert weight["styles"] == 100 and weight["scripts"] == 200 and weight["images"] == 300
    assert sum(weight.values()) < 5000  # the next page is a link, not a load


# --------------------------------------------------------------------------- issue 37: tables, assets, explorers
def test_style_table_merges_the_index_row_aligns_numbers_and_keeps_intervals_whole():
    from helpers.common.tables import TitledTable, results_table

    table = results_table([{"layer": "emb", "accuracy": "84.5% [83.4, 85.6]", "output": "last_hidden_state"},
                           {"layer": "1", "accuracy": "−3.5% [−4.1, 2.0]", "output": "model.config"}], index="layer")
    html = post.style_table(TitledTable(table, "accuracy per layer")._repr_html_())
    head = html.split("<thead>")[1].split("</thead>")[0]
    assert head.count("<tr") == 1, "the index's name sits in the header row, not in a row of its own"
    assert '<th class="course-num">accuracy</th>' in head and "<th>output</th>" in head
    assert '<td class="course-num">84.5% <span class="course-ci">[83.4, 85.6]</span></td>' in html
    assert "last_<wbr>hidden_<wbr>state" in html and "model.<wbr>config" in html  # breaks only at _ and .
    assert 'style="text-align: right;"' not in head
    css = (ROOT / "book" / "static" / "course-page.css").read_text()
    assert "tabular-nums" in css and "span.course-ci" in css and "white-space: nowrap" in css


def test_style_table_folds_the_intervals_and_the_caption_words_on_how_they_were_made():
    """Issue 49: the estimate stays in view; each interval after it, anywhere in a cell, and the
    caption's aside on the intervals go into the fold; a cell that mixes quantities is a number,
    a cell without digits ("not run here") does not make its column text; an interval that is
    the whole cell (a column of intervals) stays in view."""
    from helpers.common.tables import TitledTable, results_table

    table = results_table([
        {"layer": "1", "share": "34.1% [33.5, 34.7] (49.6%)", "paper": "84.1% [82.9, 85.3]", "interval": "[1.9, 2.0]",
         "note": "in layer_3 [2.0, 3.5] of 6"},
        {"layer": "2", "share": "−1.2% [−3.3, 0.8] (4.4%)", "paper": "not run here", "interval": "[1.8, 2.1]",
         "note": "none"},
    ], index="layer")
    out = post.style_table(TitledTable(table, "share, mean [95 % CI over the inputs] (in brackets: resampling)")
                           ._repr_html_())
    assert '<td class="course-num">34.1% <span class="course-ci">[33.5, 34.7]</span> (49.6%)</td>' in out
    assert '<td class="course-num">−1.2% <span class="course-ci">[−3.3, 0.8]</span> (4.4%)</td>' in out
    assert '<td class="course-num">not run here</td>' in out, "a column of numbers and 'not run here' is numeric"
    assert "<td>[1.9, 2.0]</td>" in out or '<td class="course-num">[1.9, 2.0]</td>' in out, \
        "an interval with no estimate before it is not hidden"
    assert '<td>in layer_<wbr>3 <span class="course-ci">[2.0, 3.5]</span> of 6</td>' in out  # text column too
    caption = out.split("<caption", 1)[1].split("</caption>", 1)[0]
    assert caption.count('<span class="course-ci-note">') == 2 and "share, mean<span" in caption
    unfolded = re.sub(r'<span class="course-ci(-note)?">.*?</span>', "", out)
    assert not post.CI.search(re.sub(r"<td[^>]*>\[[^\]]*\]</td>", "", unfolded)), "an interval left in view"


def test_style_table_leaves_out_pandas_default_index_only():
    import pandas as pd
    from helpers.common.tables import TitledTable

    stories = pd.DataFrame({"popular story": ["a", "b", "c"], "this run": ["x", "y", "z"]})
    out = post.style_table(stories.to_html(notebook=True))
    assert "<th>0</th>" not in out and "<th>2</th>" not in out and len(re.findall(r"<th[ >]", out)) == 2
    assert "<td>a</td>" in out and "<th>popular story</th>" in out
    # a named index, or one that does not count 0, 1, 2, stays
    named = post.style_table(TitledTable(stories.set_index("popular story"), "t")._repr_html_())
    assert "<th>a</th>" in named
    layers = pd.DataFrame({"acc": ["1", "2"]}, index=[1, 2])
    assert re.search(r"<th[^>]*>1</th>", post.style_table(layers.to_html()))


def test_style_tables_puts_a_switch_above_a_table_with_intervals_only(tmp_path):
    from helpers.common.tables import TitledTable, results_table

    with_ci = TitledTable(results_table([{"a": "1.0 [0.5, 1.5]"}]), "t")._repr_html_()
    without = TitledTable(results_table([{"a": "1.0"}]), "u")._repr_html_()
    site = _site(tmp_path, f"<html><body><main>{with_ci}{without}{with_ci}</main></body></html>")
    assert post.style_tables(site) == {"tables": 3, "folded": 2}
    page = (site / "lessons" / "00_x.html").read_text()
    assert page.count('<input type="checkbox" class="course-ci-toggle" id="course-ci-') == 2
    assert 'id="course-ci-1"' in page and 'for="course-ci-2"' in page  # one switch per table, unique ids
    assert page.count('<div class="course-scroll"><table') == 3
    css = (ROOT / "book" / "static" / "course-page.css").read_text()
    assert "input.course-ci-toggle:not(:checked) ~ div.course-scroll .course-ci" in css


def test_style_tables_wraps_each_pandas_table_in_a_scroll_box(tmp_path):
    from helpers.common.tables import TitledTable, results_table

    table = TitledTable(results_table([{"a": 1, "b": "x"}]), "t")._repr_html_()
    site = _site(tmp_path, f"<html><body><main>{table}<table><tr><td>markdown</td></tr></table></main></body></html>")
    assert post.style_tables(site) == {"tables": 1, "folded": 0}
    html = (site / "lessons" / "00_x.html").read_text()
    assert html.count('<div class="course-scroll"><table') == 1  # the pandas one, not the Markdown table


def test_purge_css_keeps_what_pages_use_and_drops_the_rest():
    import pydata_sphinx_theme

    css_path = next(Path(pydata_sphinx_theme.__file__).parent.glob("theme/*/static/styles/pydata-sphinx-theme.css"))
    css = css_path.read_text(encoding="utf-8")
    used = {"bd-header", "navbar-nav", "bd-sidebar-primary", "btn", "sidebar-toggle"}
    trimmed = post.purge_css(css, used)
    assert len(trimmed) < len(css) / 3, (len(css), len(trimmed))
    assert ".bd-header" in trimmed and ".btn" in trimmed and ":root" in trimmed  # used rules and variables stay
    assert ".mt-1{" not in trimmed and ".g-col-md-7" not in trimmed  # bootstrap utilities no page uses go
    assert "fa-brands-400.woff2" not in trimmed, "no icon class in use: the icon web fonts go"
    assert "Bootstrap" in trimmed, "licence comments stay"
    with_icons = post.purge_css(css, used | {"fa-brands", "fa-github"})
    assert "fa-brands-400.woff2" in with_icons, "a page that uses a brand icon keeps its font"


def test_css_blocks_respects_strings_comments_and_nesting():
    css = '@charset "UTF-8";/*! keep */a{content:"}{"}/* drop */@media (x){.b{c:d}.e{f:g}}.h,.i:not(.j){k:l}'
    blocks = post.css_blocks(css)
    assert [p for p, _ in blocks] == ['@charset "UTF-8";', "/*! keep */", "a", "@media (x)", ".h,.i:not(.j)"]
    assert post.purge_css(css, {"e", "i"}) == '@charset "UTF-8";/*! keep */a{content:"}{"}@media (x){.e{f:g}}.i:not(.j){k:l}'


def test_inline_icons_draws_the_icons_into_the_html(tmp_path):
    site = _site(tmp_path, '<button><i class="fa-brands fa-github fa-lg"></i></button><i class="fa-solid fa-moon"></i>'
                           '<span class="fa-solid fa-bars"></span>')
    (site / "_static" / "scripts").mkdir()
    (site / "_static" / "scripts" / "fontawesome.js").write_bytes(_theme_fontawesome().read_bytes())
    post.subset_icons(site)
    result = post.inline_icons(site)
    html = (site / "lessons" / "00_x.html").read_text()
    assert result == {"icons": 3, "missing": []}
    assert "<i class" not in html and "<span class" not in html and html.count('<svg class="svg-inline--fa') == 3
    assert "fa-brands" not in html, "the pack class would make the browser fetch the brands font"


def test_search_index_loads_only_on_the_search_page(tmp_path):
    tag = '<script src="../searchindex.js" defer></script>'
    site = _site(tmp_path, f"<head>{tag}</head>")
    (site / "search.html").write_text('<head><script src="searchindex.js" defer></script></head>')
    assert post.search_index_only_on_the_search_page(site) == 1
    assert "searchindex" not in (site / "lessons" / "00_x.html").read_text()
    assert "searchindex.js" in (site / "search.html").read_text()


def test_readable_text_leaves_out_page_chrome_and_code_and_reads_maths():
    page = ('<main id="main-content" role="main"><div class="header-article-items">Colab .ipynb .pdf</div>'
            '<section id="intro"><h1>Title<a class="headerlink" href="#intro">#</a></h1>'
            '<p>Scores (<span class="math course-math"><mjx-container aria-label="QK^\\top"><svg>x</svg>'
            '</mjx-container></span>) are scaled.</p><div class="cell_input"><div class="highlight"><pre>'
            '<span>x</span> <span>=</span> <span>1</span></pre></div></div><div class="cell_output">'
            '<pre>printed 42</pre></div><button>Light Dark</button></section></main>')
    text = post.readable_text(page)
    assert text.startswith('<section id="intro">') and text.endswith("</section>")
    assert "Colab" not in text and "Light" not in text and "#" not in text
    assert "x = 1" not in text and "printed 42" in text
    assert "Scores ( QK^T ) are scaled." in text  # the TeX read out plainly


def test_plain_tex_reads_maths_out_in_an_alt_text():
    assert post.plain_tex("scores $QK^\\top/\\sqrt{d}$, $\\frac{a_{i}}{b}$") == "scores QK^T/√d, a_i/b"
    assert post.plain_tex("no maths here") == "no maths here"


def test_attach_explorers_puts_frames_and_background_beside_the_picture(tmp_path):
    import gzip
    import json

    png = _figure_png()
    digest = hashlib.sha256(png).hexdigest()
    page = (f'<html><head></head><body><figure><a class="course-enlarge" href="../_images/{digest}.png" target="_blank">'
            f'<img alt="Explorer" src="../_images/{digest}.png" width="20" /></a></figure></body></html>')
    site = _site(tmp_path, page)
    (site / "_images").mkdir()
    frames = tmp_path / "frames" / "00_x"
    frames.mkdir(parents=True)
    record = {"format": 1, "kind": "frames", "size": [300, 200], "scale": 2, "controls": [{"label": "layer"}],
              "background": "data:image/png;base64," + base64.b64encode(png).decode(), "prims": [], "frames": [[]]}
    (frames / f"{digest}.json").write_text(json.dumps(record))
    result = post.attach_explorers(site, tmp_path / "frames")
    html = (site / "lessons" / "00_x.html").read_text()
    assert result["explorers"] == 1 and result["pages"] == 1
    assert '<div class="course-explorer"><div class="course-explorer-stage"><img alt="Explorer"' in html
    assert "course-enlarge" not in html, "the full-size link would open the first state whatever the sliders show"
    assert html.count('src="../_static/course-explorer.js"') == 1
    packed = html.split('data-encoding="gzip-base64">')[1].split("</script>")[0]
    carried = json.loads(gzip.decompress(base64.b64decode(packed)))
    assert carried["controls"] == record["controls"] and "background" not in carried
    assert (site / "_images" / f"{digest}-background.png").exists()
    assert f'src="../_images/{digest}-background.png"' in html


def test_icon_fonts_are_cut_to_the_icons_the_stylesheets_draw(tmp_path):
    pytest.importorskip("brotli")
    import pydata_sphinx_theme
    from fontTools.ttLib import TTFont

    solid = next(Path(pydata_sphinx_theme.__file__).parent.glob("theme/*/static/vendor/fontawesome/webfonts/fa-solid-900.woff2"))
    site = _site(tmp_path)
    (site / "_static" / "fonts").mkdir()
    (site / "_static" / "fonts" / "fa-solid-900.woff2").write_bytes(solid.read_bytes())
    (site / "_static" / "theme.css").write_text(
        '@font-face{font-family:X;src:url(fonts/fa-solid-900.woff2)}:root{--pst-icon-download:"\\f019"}'
        'a.download:before{content:var(--pst-icon-download);font-family:X}')
    result = post.subset_css_fonts(site)
    cut = site / "_static" / "fonts" / "fa-solid-900.woff2"
    assert result["fonts"] == 1 and result["after"] < 10_000 < result["before"]
    assert set(TTFont(str(cut)).getBestCmap()) == {0xF019}, "exactly the icon the stylesheet draws"


def test_a_phone_reader_is_told_that_a_tap_opens_a_figure_full_size():
    """Issue 49: on a 390 px screen figure text is 5-6 px; the hint must be visible, not a hover title."""
    from pathlib import Path

    css = (Path(__file__).resolve().parent.parent / "book" / "static" / "course.css").read_text()
    narrow = css[css.index("@media (max-width: 700px)"):]
    assert "a.course-enlarge::after" in narrow and "Tap the figure to open it full size" in narrow


def test_fold_setup_makes_one_closed_block_and_leaves_a_broken_run_open(tmp_path):
    start = '<div class="course-setup-start" data-model="bundled:tiny (2 layers)"></div>'
    good = (f"<section><h1>T</h1>{start}<p><strong>Parameters</strong></p><div class=\"cell\">x</div>"
            '<div class="course-setup-end"></div><p>Where this lesson sits</p></section>')
    site = _site(tmp_path, f"<html><body><main>{good}</main></body></html>")
    (site / "lessons" / "01_y.html").write_text(
        '<main><section><div class="course-setup-start"></div><p>a</p></section>'
        '<section><div class="course-setup-end"></div></section></main>', encoding="utf-8")
    assert post.fold_setup(site) == {"pages": 1, "left_open": ["01_y.html"]}
    page = (site / "lessons" / "00_x.html").read_text()
    assert '<details class="course-setup"><summary>' in page and "<details open" not in page
    assert "Model: bundled:tiny (2 layers)" in page and "course-setup-start" not in page
    assert page.index("</details>") < page.index("Where this lesson sits")
    broken = (site / "lessons" / "01_y.html").read_text()
    assert "course-setup" not in broken and "<p>a</p>" in broken


def test_names_in_tables_break_only_after_a_dot_or_underscore(tmp_path):
    """Issue 49: lesson 00's conventions table broke "config.num_hidden_lay|ers" on a phone."""
    cell = '<code class="docutils literal notranslate"><span class="pre">config.num_hidden_layers</span></code>'
    prose = '<p><code class="docutils literal notranslate"><span class="pre">model.config</span></code></p>'
    site = _site(tmp_path, f"<main>{prose}<table><tr><td>{cell}</td></tr></table></main>")
    assert post.breakable_names_in_tables(site) == {"names": 1}
    page = (site / "lessons" / "00_x.html").read_text()
    assert '<span class="pre">config.<wbr>num_<wbr>hidden_<wbr>layers</span>' in page
    assert '<span class="pre">model.config</span>' in page, "prose is left as it is"
    css = (ROOT / "book" / "static" / "course.css").read_text()
    assert re.search(r"article td code \{ overflow-wrap: normal; word-break: normal; \}", css)
    assert not re.search(r"article td code[^{]*\{[^}]*anywhere", css)


def test_chinese_runs_get_lang_zh_and_a_font_cut_to_the_pages_characters(tmp_path):
    """Issue 49: Chinese text is marked lang="zh" (so a browser does not pick Japanese glyph forms)
    and set in the course's own Noto Sans SC subset, cut to the characters the pages use and linked
    only from the pages that have Chinese; tags, scripts and the title are left alone."""
    from fontTools.ttLib import TTFont

    page = ('<html><head><title>银行</title></head><body><p>The word 银行 (bank), "我的卡" and '
            '<a title="银行">一句话。</a></p><script>var s = "中";</script></body></html>')
    site = _site(tmp_path, page)
    (site / "lessons" / "01_y.html").write_text("<html><head></head><body><p>no Chinese</p></body></html>")
    font = ROOT / "helpers" / "common" / "fonts" / "NotoSansSC-CourseSubset.ttf"
    done = post.chinese_text(site, font)
    out = (site / "lessons" / "00_x.html").read_text()
    assert '<span lang="zh">银行</span> (bank), "<span lang="zh">我的卡</span>"' in out
    assert '<a title="银行"><span lang="zh">一句话。</span></a>' in out  # the attribute stays plain
    assert "<title>银行</title>" in out and 'var s = "中";' in out
    assert out.count('href="../_static/course-zh.css"') == 1
    assert "course-zh.css" not in (site / "lessons" / "01_y.html").read_text()
    chars = set("银行我的卡一句话。")
    assert done["pages"] == 1 and done["characters"] == len(chars)
    shipped = site / "_static" / "course-zh.woff2"
    cmap = TTFont(str(shipped)).getBestCmap()
    assert {ord(c) for c in chars} <= set(cmap) and len(cmap) < 40  # the page's characters, not all 1,085
    assert shipped.stat().st_size < 0.2 * font.stat().st_size
    css = (site / "_static" / "course-zh.css").read_text()
    assert 'url("course-zh.woff2")' in css and ":lang(zh)" in css and "http" not in css
    post.chinese_text(site, font)  # a second run wraps nothing twice and links once
    again = (site / "lessons" / "00_x.html").read_text()
    assert again.count('<span lang="zh">') == out.count('<span lang="zh">') == 3
    assert again.count("course-zh.css") == 1


def test_lesson_cards_get_a_light_thumbnail_of_the_first_figure(tmp_path):
    """Issue 49: each lesson card on the home page shows a small picture of the lesson's first
    figure about its subject (not the "you are here" strip), made at build time as a palette PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from PIL import Image

    def png(colour):
        fig, ax = plt.subplots(figsize=(6.5, 3))
        ax.plot([0, 1, 2], [0, 2, 1], color=colour)
        ax.set_title("a figure")
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", dpi=200)
        plt.close(fig)
        return buffer.getvalue()

    strip, figure = png("tab:grey"), png("tab:orange")
    out = lambda data: nbformat.v4.new_output("display_data", data={"image/png": base64.b64encode(data).decode()})
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("you_are_here(model.config, 'tokens');", outputs=[out(strip)]),
        nbformat.v4.new_code_cell("print(1)"),
        nbformat.v4.new_code_cell("plot_it()", outputs=[out(figure)])])
    pictures = build.first_figures({"03_x": nb, "04_y": nbformat.v4.new_notebook()})
    assert pictures == {"03_x": figure}
    (tmp_path / "_images").mkdir()
    (tmp_path / "index.html").write_text(
        '<nav><a class="reference internal" href="lessons/03_x.html">03 - Three</a></nav>'
        '<table class="colwidths-auto lesson-table"><tr><td><p><a class="reference internal" href="lessons/03_x.html">'
        "<span>Three</span></a></p></td></tr></table>", encoding="utf-8")
    done = post.lesson_thumbnails(tmp_path, pictures)
    page = (tmp_path / "index.html").read_text()
    assert done["thumbnails"] == 1 and page.count('class="course-thumb"') == 1
    assert '<img class="course-thumb" src="_images/thumb-03_x.png" width="96"' in page
    assert page.index("<table") < page.index("course-thumb") < page.rindex('href="lessons/03_x.html"')  # not the sidebar
    thumb = tmp_path / "_images" / "thumb-03_x.png"
    with Image.open(thumb) as image:
        assert image.mode == "P" and image.width == 192 and image.height <= 128
    assert thumb.stat().st_size < 15_000 and done["bytes"] == thumb.stat().st_size
    post.lesson_thumbnails(tmp_path, pictures)  # a second run adds nothing
    assert (tmp_path / "index.html").read_text().count("course-thumb") == 1


def test_explorer_moves_up_to_just_after_the_strip_and_leaves_a_link_back(tmp_path):
    """Issue 49: a page opens on its idea. The explorer's figure (picture, sliders, caption, number)
    of a cell tagged course-explorer-top goes up to just after the first figure below the Set-up
    block (the "you are here" strip), outside that cell, under one lead line; the cell's printout
    stays, and where the figure was a line links back up to it by its id. Only once."""
    cell = ('<div class="cell{tag} docutils container"><div class="cell_input">code</div>'
            '<div class="cell_output docutils container">{out}</div></div>')
    strip = '<figure id="fig-strip"><img src="../_images/s.png" width="672" /></figure>'
    explorer = ('<figure class="align-default" id="fig-02-head-explorer"><div class="course-explorer">'
                '<div class="course-explorer-stage"><img alt="Explorer (layer, head on sliders), first state" '
                'height="515" src="../_images/e.png" width="551" /></div></div><figcaption><p><span '
                'class="caption-text"><strong>Figure 2.2.</strong> One head</span></p></figcaption></figure>')
    body = ('<html><head></head><body><article><details class="course-setup"><summary>Set-up</summary>'
            + cell.format(tag="", out="<pre>loaded</pre>")
            + '<details class="hide above-input"><summary>code</summary></details>'  # a folded cell in Set-up
            + cell.format(tag="", out='<figure id="fig-in-setup"></figure>') + "</details>"
            + cell.format(tag="", out=strip)
            + "<p>text</p>" + cell.format(tag="", out='<figure id="fig-other"><img src="o.png" /></figure>')
            + cell.format(tag=" tag_course-explorer-top tag_hide-input",
                          out=explorer + '<div class="output stream"><pre>printed</pre></div>')
            + "<p>after</p></article></body></html>")
    site = _site(tmp_path, body)
    assert post.explorers_to_top(site) == {"pages": 1, "explorers": 1}
    page = (site / "lessons" / "00_x.html").read_text()
    top = page.index('<div class="course-explorer-top"')
    assert page.index("fig-strip") < top < page.index("<p>text</p>") < page.index("fig-other")
    assert page[:top].endswith("</div></div>"), "the explorer sits inside the strip's cell"
    assert page.count('id="fig-02-head-explorer"') == 1 and page.count("course-explorer-stage") == 1
    assert top < page.index('id="fig-02-head-explorer"') < page.index("<p>text</p>")
    lead = page[page.index('<p class="course-explorer-lead">'):]
    assert not re.search(r"\d", lead[:lead.index("</p>")]), "the lead line is generic: no numbers"
    back = page.index('<p class="course-explorer-back">')
    line = page[back:page.index("</p>", back)]
    assert page.index("fig-other") < back < page.index("printed") < page.index("<p>after</p>")
    assert 'href="#fig-02-head-explorer"' in line and "(Figure 2.2)" in line and "(layer, head)" in line
    assert "<img" not in line and "\u2191 The explorer at the top of this page" in line
    assert post.explorers_to_top(site) == {"pages": 0, "explorers": 0}  # once
    plain = _site(tmp_path / "plain", body.replace(" tag_course-explorer-top", ""))
    assert post.explorers_to_top(plain) == {"pages": 0, "explorers": 0}, "only a tagged cell moves"