"""Issue 12's export check: `jupyter nbconvert --to html --execute` of every lesson, in the course
environment, shows every explorer as an image and leaves no progress-bar residue."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LESSONS = sorted((ROOT / "lessons").glob("[0-9][0-9]_*.ipynb"))
JUPYTER = Path(sys.prefix) / "bin" / "jupyter"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def nbconvert(*args: str) -> None:
    done = subprocess.run([str(JUPYTER), "nbconvert", *args], capture_output=True, text=True, timeout=900,
                          env={**__import__("os").environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"})
    assert done.returncode == 0, done.stderr[-3000:]


def test_the_course_environment_saves_no_widget_state():
    config = Path(sys.prefix) / "etc" / "jupyter" / "jupyter_nbconvert_config.json"
    assert config.exists(), "run `bash course.sh test` (its setup writes the nbconvert config)"
    assert json.loads(config.read_text())["ExecutePreprocessor"]["store_widget_state"] is False


@pytest.mark.slow
@pytest.mark.parametrize("lesson", LESSONS, ids=lambda p: p.stem)
def test_html_export_shows_explorers_as_images(lesson, tmp_path):
    # `--to html --execute` is this execution followed by this export: the execution is the part
    # the course configures (no widget state), so it runs once, then both files are checked.
    nbconvert("--to", "notebook", "--execute", "--output-dir", str(tmp_path), "--output", "run", str(lesson))
    nbconvert("--to", "html", "--output-dir", str(tmp_path), str(tmp_path / "run.ipynb"))
    nb = json.loads((tmp_path / "run.ipynb").read_text())
    html = (tmp_path / "run.html").read_text()
    assert "widgets" not in nb["metadata"], "the execution saved widget state"
    views = [o["data"] for c in nb["cells"] for o in c.get("outputs", []) if WIDGET_VIEW in o.get("data", {})]
    assert all("image/png" in d for d in views), "an explorer output has no static picture"
    assert 'script type="application/vnd.jupyter.widget-view+json"' not in html, \
        "an explorer was exported as a widget placeholder (needs the ipywidgets JavaScript) instead of its image"
    assert html.count("<img") >= len(views)
    text = re.sub(r"<[^>]+>", " ", html)
    assert not re.search(r"\d+%\|", text) and "<progress" not in html, "a progress bar left residue in the export"
