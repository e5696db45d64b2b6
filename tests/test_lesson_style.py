"""Style rules a reader sees: code lines that fit the website's code boxes, and exercises
that say how hard, how important and how long they are.

* Every code line of a lesson is at most :data:`MAX_LINE` characters (longer lines scroll
  sideways on the website and in narrow notebook windows). Markdown is left alone: it
  wraps.
* Every figure caption (a code cell's ``mystnb: figure`` metadata, shown under the figure on
  the website, numbered by book/build.py) has a name ``fig-NN-...`` unique in the course and
  a caption of 8-80 words that does not number itself.
* Every exercise (a ``### Exercise N`` heading) carries the rating line of
  :func:`helpers.exercises.rating` (``Difficulty ●●○○○ · Importance ●●●●○ · ~10 min``),
  and every lesson has at least one "predict, then measure" exercise.

:data:`LINE_CHECKED` and :data:`EXERCISES_CHECKED` list the lessons held to these rules so
far; a lesson joins when it has been brought up to them.
"""

import re
from pathlib import Path

import jupytext
import pytest

from helpers.exercises import RATING_PATTERN

LESSONS = Path(__file__).resolve().parent.parent / "lessons"
MAX_LINE = 79
# every lesson: a new lesson is held to the rules from the start
ALL_LESSONS = sorted(p.name.split("_")[0] for p in LESSONS.glob("[0-9][0-9]*_*.py"))  # "00", ..., and a split lesson "NNb"
LINE_CHECKED = ALL_LESSONS
EXERCISES_CHECKED = ALL_LESSONS
EXERCISE_HEADING = re.compile(r"^###\s+Exercise\s+\d+", re.M)


def lesson_source(number: str) -> Path:
    found = sorted(LESSONS.glob(f"{number}_*.py"))
    assert len(found) == 1, f"expected one lesson {number}_*.py, found {found}"
    return found[0]


def long_code_lines(path: Path) -> list[str]:
    """``"cell K line J (N chars): ..."`` for every code line longer than MAX_LINE."""
    nb = jupytext.read(path)
    code = [c for c in nb.cells if c.cell_type == "code"]
    return [f"code cell {k} line {j} ({len(line)} chars): {line[:60]}..."
            for k, cell in enumerate(code)
            for j, line in enumerate(cell.source.splitlines(), 1) if len(line) > MAX_LINE]


def exercise_sections(path: Path) -> list[str]:
    """The Markdown text of each ``### Exercise`` heading up to the next heading."""
    text = "\n".join(c.source for c in jupytext.read(path).cells if c.cell_type == "markdown")
    starts = [m.start() for m in EXERCISE_HEADING.finditer(text)]
    sections = []
    for i, start in enumerate(starts):
        end = starts[i + 1] if i + 1 < len(starts) else len(text)
        body = text.index("\n", start) if "\n" in text[start:end] else end
        nxt = re.search(r"^#{1,3}\s", text[body:end], re.M)
        sections.append(text[start:body + nxt.start()] if nxt else text[start:end])
    return sections


@pytest.mark.parametrize("number", LINE_CHECKED)
def test_code_lines_fit(number):
    long = long_code_lines(lesson_source(number))
    assert not long, f"lesson {number}: code lines over {MAX_LINE} characters:\n" + "\n".join(long)


@pytest.mark.parametrize("number", EXERCISES_CHECKED)
def test_every_exercise_is_rated(number):
    sections = exercise_sections(lesson_source(number))
    assert sections, f"lesson {number} has no '### Exercise N' headings"
    unrated = [s.splitlines()[0] for s in sections if not RATING_PATTERN.search(s)]
    assert not unrated, f"lesson {number}: exercises without a rating line: {unrated}"


@pytest.mark.parametrize("number", EXERCISES_CHECKED)
def test_a_predict_then_measure_exercise(number):
    sections = exercise_sections(lesson_source(number))
    assert any("predict, then measure" in s.lower() for s in sections), \
        f"lesson {number} has no 'predict, then measure' exercise"


def figure_options(path: Path) -> list[dict]:
    """Each code cell's ``mystnb: figure`` options, in order."""
    return [c.metadata["mystnb"]["figure"] for c in jupytext.read(path).cells
            if c.cell_type == "code" and "figure" in c.metadata.get("mystnb", {})]


@pytest.mark.parametrize("number", ALL_LESSONS)
def test_figure_captions_are_well_formed(number):
    figures = figure_options(lesson_source(number))
    assert figures, f"lesson {number} has no captioned figure"
    for fig in figures:
        name, caption = fig.get("name", ""), fig.get("caption", "")
        assert re.fullmatch(rf"fig-{number}-[a-z0-9-]+", name), f"lesson {number}: bad figure name {name!r}"
        words = len(caption.split())
        assert 8 <= words <= 80, f"lesson {number}: {name}: caption of {words} words"
        assert not re.match(r"\**Fig(ure)?\.? ?\d", caption), f"{name}: the build numbers captions"


def test_figure_names_are_unique_in_the_course():
    names = [f.get("name") for n in ALL_LESSONS for f in figure_options(lesson_source(n))]
    assert len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)


def uncaptioned_figure_cells(path: Path) -> list[str]:
    """Code cells that call ``plt.show()`` without a ``mystnb: figure`` caption, read from the
    source: a figure drawn only on some machines (say, when lesson 05's checkpoint is in the
    cache) is caught here even when the run that built the website did not draw it."""
    return [c.source.splitlines()[0] for c in jupytext.read(path).cells
            if c.cell_type == "code" and "plt.show()" in c.source
            and "figure" not in c.metadata.get("mystnb", {})]


@pytest.mark.parametrize("number", ALL_LESSONS)
def test_every_cell_that_shows_a_figure_has_a_caption(number):
    loose = uncaptioned_figure_cells(lesson_source(number))
    assert not loose, f"lesson {number}: cells that show a figure without a caption, starting {loose}"


SHOWS_TABLE = re.compile(r"show_table\(|display\(")
PRINTS = re.compile(r"\bprint\(|textwrap\.fill\(")


def text_around_tables(path: Path) -> list[str]:
    """Code cells whose printed text would land on the wrong side of a table on the website.

    The site merges all printed text of a cell into one block where the first print was
    (MyST-NB's ``nb_merge_streams``), so a cell that prints both before and after a table (or
    prints and shows tables in a loop) shows its later text above the table. A table's title
    is part of the table (``show_table``), so it never moves."""
    import ast

    found = []
    for cell in jupytext.read(path).cells:
        if cell.cell_type != "code":
            continue
        try:
            body = ast.parse(cell.source).body
        except SyntaxError:
            continue
        parts = [ast.get_source_segment(cell.source, st) or "" for st in body]
        shown = [k for k, text in enumerate(parts) if SHOWS_TABLE.search(text)]
        if not shown:
            continue
        before = any(PRINTS.search(t) for t in parts[:shown[0]])
        after = any(PRINTS.search(t) for t in parts[shown[0] + 1:])
        looped = any(isinstance(body[k], (ast.For, ast.While)) and PRINTS.search(parts[k]) for k in shown)
        if (before and after) or looped:
            found.append(cell.source.splitlines()[0])
    return found


@pytest.mark.parametrize("number", ALL_LESSONS)
def test_printed_text_stays_on_its_side_of_a_table(number):
    cells = text_around_tables(lesson_source(number))
    assert not cells, (f"lesson {number}: cells that print before and after a table (the site would show it all "
                       f"above the table), starting {cells}: move the later prints to the next cell")


def test_the_checks_catch_what_they_look_for(tmp_path):
    bad = tmp_path / "99_bad.py"
    bad.write_text("# %% [markdown]\n# ### Exercise 1: x\n#\n# no rating\n\n# %%\n"
                   + "x = 1  # " + "y" * 80 + "\n")
    assert long_code_lines(bad) and "(89 chars)" in long_code_lines(bad)[0]
    sections = exercise_sections(bad)
    assert len(sections) == 1 and not RATING_PATTERN.search(sections[0])
    figure = tmp_path / "98_figure.py"
    figure.write_text("# %%\nif lens is not None:\n    plt.show()\n\n"
                      '# %% mystnb={"figure": {"caption": "c", "name": "fig-98-x"}}\nplt.show()\n')
    assert uncaptioned_figure_cells(figure) == ["if lens is not None:"]
    tables = tmp_path / "97_tables.py"
    tables.write_text('# %%\nprint("a")\nshow_table(rows)\nprint("b")\n\n'
                      '# %%\nfor r in runs:\n    print(r)\n    show_table(r)\n\n'
                      '# %%\nif ok:\n    show_table(rows)\nelse:\n    print("none")\n\n'
                      '# %%\nprint("a")\nshow_table(rows)\n')
    assert text_around_tables(tables) == ['print("a")', "for r in runs:"]
