"""helpers.common.style: the course style applies, and its checks catch what they promise to catch."""

import matplotlib as mpl
import matplotlib.pyplot as plt
import pytest

from helpers.common import style


def test_course_style_is_applied_on_import():
    for key in ("xtick.labelsize", "ytick.labelsize", "legend.fontsize", "axes.labelsize"):
        size = mpl.font_manager.FontProperties(size=mpl.rcParams[key]).get_size_in_points()
        assert size >= style.MIN_FONT_PT, key


def test_small_text_finds_tiny_labels_and_nothing_else():
    fig, ax = plt.subplots()
    ax.set_title("fine")
    ax.text(0.5, 0.5, "tiny", fontsize=6)
    found = style.small_text(fig)
    assert len(found) == 1 and "tiny" in found[0]


def test_colorbar_needs_a_label():
    fig, ax = plt.subplots()
    image = ax.imshow([[0, 1], [1, 0]])
    with pytest.raises(ValueError, match="label"):
        style.colorbar(image, ax, "")
    cbar = style.colorbar(image, ax, "attention probability")
    assert cbar.ax.get_ylabel() == "attention probability"


def test_layer_labels_and_matrix_checks():
    assert style.layer_labels(4) == ["emb", "1", "2", "3"]
    with pytest.raises(ValueError, match="2-D"):
        style.as_matrix([1, 2, 3], "probs")


def test_annotate_bars_puts_labels_inside_long_bars_and_outside_short_ones():
    fig, ax = plt.subplots()
    bars = ax.barh([0, 1], [10.0, 0.5])
    texts = style.annotate_bars(ax, bars, ["ten", "half"])
    assert [t.get_text() for t in texts] == ["ten", "half"]
    assert texts[0].get_ha() == "right" and texts[0].get_position()[0] < 10.0  # inside
    assert texts[1].get_ha() == "left" and texts[1].get_position()[0] > 0.5  # past the end


def test_colorbar_can_serve_several_axes():
    fig, axes = plt.subplots(1, 2)
    image = axes[0].imshow([[0, 1], [1, 0]])
    cbar = style.colorbar(image, list(axes), "shared value")
    assert cbar.ax.get_ylabel() == "shared value"


def test_figure_description_reads_titles_and_axes():
    import matplotlib.pyplot as plt

    from helpers.common.style import colorbar, figure_description

    fig, (a, b) = plt.subplots(1, 2)
    fig.suptitle("two views")
    a.set_title("cosine between layers")
    a.set_xlabel("layer")
    image = b.imshow([[0, 1], [1, 0]])
    b.set_ylabel("token")
    colorbar(image, b, "attention probability")
    text = figure_description(fig)
    assert text.startswith("Figure: two views") and "cosine between layers (x: layer)" in text
    assert "y: token" in text and text.count("attention probability") <= 1
    plt.close(fig)
    empty, ax = plt.subplots()
    ax.set_xticks([])
    ax.set_yticks([])
    assert figure_description(empty) == "Figure (no title)"
    ax.text(0.5, 0.5, "encoder diagram", fontsize=14)
    ax.text(0.5, 0.2, "a note", fontsize=8)
    assert figure_description(empty) == "Figure: encoder diagram"  # a drawing: its largest text
    plt.close(empty)


def test_a_figure_wider_than_the_page_is_reported_as_cropped_in_the_notebook():
    assert style.PAGE_WIDTH_IN == 6.72  # the 672 px text column at 100 dpi (issue 49)
    fig, ax = plt.subplots(figsize=(6.0, 3))
    ax.set_title("fits")
    assert not style.too_wide(fig) and not style.small_text(fig)
    assert style.shown_width_in(fig) <= 6.0 + 2 * style.SAVE_PAD_IN
    ax.plot([0, 1], [0, 1], label="a legend entry long enough to push the picture past the column")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1))  # outside the axes: the notebook shows it
    found = style.small_text(fig)
    assert len(found) == 1 and "> page 6.72 in" in found[0]
    assert style.too_wide(fig, cropped=False) == []  # the canvas itself is 6 in
    wide, _ = plt.subplots(figsize=(9.0, 3))
    assert style.too_wide(wide, cropped=False) and "shrink its text to 75%" in style.too_wide(wide, cropped=False)[0]
    plt.close("all")


def _course_font_builder():
    import importlib.util
    from pathlib import Path

    path = Path(style.__file__).parent / "fonts" / "build_font.py"
    spec = importlib.util.spec_from_file_location("build_font", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_chinese_text_draws_with_the_course_font_and_latin_keeps_dejavu():
    import warnings

    from matplotlib.font_manager import fontManager

    assert style.CJK_FONT_FILE.exists(), "the course's Chinese font is missing (helpers/common/fonts/)"
    assert style.CJK_FAMILY in mpl.rcParams["font.family"]
    assert mpl.rcParams["font.family"][0] == "sans-serif", "Latin text must keep the course's usual font"
    assert style.CJK_FAMILY in {f.name for f in fontManager.ttflist}
    fig, ax = plt.subplots(figsize=(3, 1))
    ax.set_title("今天天气很好，银行行长")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a missing glyph warns "Glyph ... missing from font(s)"
        fig.canvas.draw()


def test_the_font_subset_covers_every_chinese_character_of_the_course():
    """A new Chinese sentence in data/ or a lesson needs the font rebuilt (build_font.py)."""
    from fontTools.ttLib import TTFont

    have = {chr(c) for c in TTFont(str(style.CJK_FONT_FILE)).getBestCmap()}
    missing = set(_course_font_builder().course_characters()) - have
    assert not missing, (f"{len(missing)} character(s) of the course are not in the font subset, e.g. "
                         f"{''.join(sorted(missing)[:20])}: run helpers/common/fonts/build_font.py (see its README)")
