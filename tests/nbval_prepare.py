"""Copy every lesson notebook into a build folder for nbval, with expected outputs filled in and
``BUDGET = "quick"`` injected after the parameters cell (``lesson_params.quick``): the test run
executes each lesson once, small; the full budget runs in the book build.

The committed ``lessons/*.ipynb`` carry no outputs (Colab opens them, and outputs would go
stale). nbval compares a cell marked ``# NBVAL_CHECK_OUTPUT`` with its stored output, so the
expected text of those cells -- only deterministic cells that do not depend on the model --
lives in ``tests/expected_outputs/<lesson>.json`` (a list, one entry per checked cell, in
order) and is written into the copies here. A checked cell without an entry is an error.

Usage: python tests/nbval_prepare.py OUT_DIR
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import nbformat

from lesson_params import quick

ROOT = Path(__file__).resolve().parent.parent
LESSONS = ROOT / "lessons"
EXPECTED = Path(__file__).resolve().parent / "expected_outputs"
MARKER = "# NBVAL_CHECK_OUTPUT"


def checked_cells(cells) -> list:
    """The code cells among ``cells`` marked ``# NBVAL_CHECK_OUTPUT``."""
    return [c for c in cells if c.cell_type == "code" and MARKER in c.source]


def expected_for(stem: str) -> list[str]:
    path = EXPECTED / f"{stem}.json"
    return json.loads(path.read_text()) if path.exists() else []


def prepare(src: Path, out_dir: Path) -> Path:
    nb = nbformat.read(src, as_version=4)
    cells = checked_cells(nb.cells)
    expected = expected_for(src.stem)
    if len(cells) != len(expected):
        raise SystemExit(
            f"{src.name}: {len(cells)} cell(s) marked {MARKER} but {len(expected)} expected "
            f"output(s) in {EXPECTED / (src.stem + '.json')}"
        )
    for cell, text in zip(cells, expected):
        cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=text)] if text else []
        cell.execution_count = 1  # nbval ignores outputs of cells it thinks were never run
    quick(nb)
    dest = out_dir / src.name
    nbformat.write(nb, dest)
    return dest


def main(out: str) -> None:
    out_dir = Path(out)
    shutil.rmtree(out_dir, ignore_errors=True)
    out_dir.mkdir(parents=True)
    made = [prepare(nb, out_dir) for nb in sorted(LESSONS.glob("[0-9]*.ipynb"))]
    if not made:
        raise SystemExit(f"no lesson notebooks found in {LESSONS}")
    print(f"prepared {len(made)} lesson notebook(s) for nbval in {out_dir}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else str(ROOT / "build" / "nbval"))
