"""Lessons of one sitting (issue 36): every lesson stays within the size a fresh reader can take in
one go, with its exercises.

For every ``lessons/NN*_*.py`` (the py:percent source; solutions are not lessons):

* at most :data:`MAX_CELLS` cells (markdown and code, as jupytext reads them),
* at most :data:`MAX_EXERCISES` exercises: ``### Exercise N`` headings in the lesson (the rule
  ``tests/test_lesson_style.py`` checks ratings by), and as many ``check_exercise_N`` checkers in its
  module ``helpers/exercises/lessonNN.py`` (each exercise has exactly one checker),
* at most :data:`MAX_LINES` source lines.

The targets are never raised to let a lesson pass: a lesson that outgrows them is split, or its
machinery moves into its helpers package (as lessons 07, 08, 11, 12 and 14 did, issue 36).
"""

import re
from pathlib import Path

import jupytext
import pytest

ROOT = Path(__file__).resolve().parent.parent
LESSONS = sorted((ROOT / "lessons").glob("[0-9][0-9]*_*.py"))
EXERCISE_MODULES = ROOT / "helpers" / "exercises"
MAX_CELLS = 60
MAX_EXERCISES = 4
MAX_LINES = 1000
EXERCISE_HEADING = re.compile(r"^#\s+###\s+Exercise\s+\d+", re.M)
CHECKER = re.compile(r"^def (check_exercise_\d+)\(", re.M)


def sizes(source: Path) -> dict:
    """Cells, exercises and source lines of one lesson."""
    text = source.read_text(encoding="utf-8")
    return {"cells": len(jupytext.read(source).cells), "exercises": len(EXERCISE_HEADING.findall(text)),
            "lines": len(text.splitlines())}


def checkers(source: Path) -> list[str]:
    """The ``check_exercise_N`` functions of the lesson's exercise module (none if it has no module)."""
    module = EXERCISE_MODULES / f"lesson{source.name.split('_')[0]}.py"
    return CHECKER.findall(module.read_text(encoding="utf-8")) if module.exists() else []


def test_every_lesson_is_measured():
    assert len(LESSONS) >= 16, [p.name for p in LESSONS]


@pytest.mark.parametrize("source", LESSONS, ids=lambda p: p.stem)
def test_lesson_fits_one_sitting(source):
    size = sizes(source)
    allowed = {"cells": MAX_CELLS, "lines": MAX_LINES}
    assert size["exercises"] <= MAX_EXERCISES, f"{source.name}: {size['exercises']} exercises (at most {MAX_EXERCISES})"
    for what in ("cells", "lines"):
        assert size[what] <= allowed[what], (
            f"{source.name}: {size[what]} {what}, over the target {allowed[what]} (split the lesson, "
            "or move its machinery into its helpers package)")


@pytest.mark.parametrize("source", LESSONS, ids=lambda p: p.stem)
def test_one_checker_per_exercise(source):
    found = checkers(source)
    assert len(found) <= MAX_EXERCISES, f"{source.name}: {len(found)} checkers (at most {MAX_EXERCISES})"
    assert len(found) == sizes(source)["exercises"], (
        f"{source.name}: {sizes(source)['exercises']} exercise headings but checkers {found}")
