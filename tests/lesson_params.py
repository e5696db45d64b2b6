"""Overriding a lesson's ``parameters`` cell (the papermill convention), shared by the test runs,
the browser tests and the Colab-like run.

:func:`with_parameters` inserts a cell right after the one tagged ``parameters`` that sets the
given names; :func:`quick` sets ``BUDGET = "quick"`` in a lesson that has the knob (lessons
without it run one sentence and have nothing to shrink). The full budget runs once, in the book
build (``bash course.sh book``).
"""

from __future__ import annotations

import re

import nbformat

QUICK = "quick"


def parameters_cell(nb):
    """The lesson's cell tagged ``parameters``; an error names the notebook's problem."""
    cells = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    if len(cells) != 1:
        raise ValueError(f"a lesson needs exactly one cell tagged 'parameters', found {len(cells)}")
    return cells[0]


def defines(nb, name: str) -> bool:
    """True when the parameters cell assigns ``name``."""
    return re.search(rf"^{re.escape(name)}\s*=", parameters_cell(nb).source, re.M) is not None


def with_parameters(nb, **params):
    """Insert ``name = value`` lines (``repr`` of each value) after the parameters cell."""
    cell = parameters_cell(nb)
    overrides = "\n".join(f"{k} = {v!r}" for k, v in params.items())
    index = nb.cells.index(cell)
    nb.cells.insert(index + 1, nbformat.v4.new_code_cell("# injected parameters\n" + overrides))
    return nb


def quick(nb, **params):
    """``with_parameters`` plus ``BUDGET = "quick"`` where the lesson has that knob."""
    if defines(nb, "BUDGET"):
        params = {"BUDGET": QUICK, **params}
    return with_parameters(nb, **params) if params else nb


LESSON_CHAIN = ("05", "11", "14")  # 14 reads what 05 and 11 leave in the course cache (as in the book)


def lesson_group(stem: str) -> str:
    """The pytest-xdist work unit of a test that runs one lesson (conftest's scheduler under
    ``--dist loadfile``): the lesson, or the chain 05-11-14, which shares a worker and so its
    course cache."""
    return "lessons-" + "-".join(LESSON_CHAIN) if stem[:2] in LESSON_CHAIN else f"lesson-{stem}"
