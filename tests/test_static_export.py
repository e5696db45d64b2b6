"""Issue 12's export check: an executed lesson exported with ``jupyter nbconvert --to html`` in the
course environment shows every explorer as an image and leaves no progress-bar residue.

The lessons are not executed again here: the check reads the copies the book build executed
(``build/book/executed/``, full budget, store_widget_state off as in the course's nbconvert
configuration) and exports each to HTML. Skips when the book was not built, unless
COURSE_REQUIRE_BROWSER=1 (set by .ci/run, which builds the book first): then it fails.
"""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
LESSONS = sorted((ROOT / "lessons").glob("[0-9][0-9]*_*.ipynb"))  # split lessons (NNb) too
EXECUTED = ROOT / "build" / "book" / "executed"
JUPYTER = Path(sys.prefix) / "bin" / "jupyter"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
REQUIRED = os.environ.get("COURSE_REQUIRE_BROWSER") == "1"


def nbconvert(*args: str) -> None:
    done = subprocess.run([str(JUPYTER), "nbconvert", *args], capture_output=True, text=True, timeout=900,
                          env={**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"})
    assert done.returncode == 0, done.stderr[-3000:]


def test_the_course_environment_saves_no_widget_state():
    config = Path(sys.prefix) / "etc" / "jupyter" / "jupyter_nbconvert_config.json"
    assert config.exists(), "run `bash course.sh test` (its setup writes the nbconvert config)"
    assert json.loads(config.read_text())["ExecutePreprocessor"]["store_widget_state"] is False


def code_sources(nb) -> list[str]:
    return [c.source for c in nb.cells if c.cell_type == "code"]


def executed_copy(lesson: Path) -> Path:
    """The book build's executed copy of ``lesson``; skips (or fails in CI) when it is missing or
    older than the lesson (its code differs from the committed notebook's)."""
    path = EXECUTED / lesson.name
    problem = None
    if not path.exists():
        problem = f"no executed copy at {path} (run `bash course.sh book` first)"
    elif code_sources(nbformat.read(path, as_version=4)) != code_sources(nbformat.read(lesson, as_version=4)):
        problem = f"{path} is older than {lesson.name} (its code differs): run `bash course.sh book`"
    if problem:
        if REQUIRED:
            pytest.fail(f"COURSE_REQUIRE_BROWSER=1 but {problem}")
        pytest.skip(problem)
    return path


@pytest.mark.slow
@pytest.mark.parametrize("lesson", LESSONS, ids=lambda p: p.stem)
def test_html_export_shows_explorers_as_images(lesson, tmp_path):
    run = executed_copy(lesson)
    nbconvert("--to", "html", "--output-dir", str(tmp_path), "--output", "run", str(run))
    nb = json.loads(run.read_text())
    html = (tmp_path / "run.html").read_text()
    assert "widgets" not in nb["metadata"], "the execution saved widget state"
    views = [o["data"] for c in nb["cells"] for o in c.get("outputs", []) if WIDGET_VIEW in o.get("data", {})]
    assert all("image/png" in d for d in views), "an explorer output has no static picture"
    assert 'script type="application/vnd.jupyter.widget-view+json"' not in html, \
        "an explorer was exported as a widget placeholder (needs the ipywidgets JavaScript) instead of its image"
    assert html.count("<img") >= len(views)
    text = re.sub(r"<[^>]+>", " ", html)
    assert not re.search(r"\d+%\|", text) and "<progress" not in html, "a progress bar left residue in the export"
