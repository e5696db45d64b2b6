"""The helpers/ layout (helpers/README.md): topic packages split the same way, tests mirror them,
lessons import from the modules themselves, and `bash course.sh lab` serves lessons/ (as root too)."""

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
HELPERS = ROOT / "helpers"
SHARED = {"model", "common", "exercises"}
# data: a topic that prepares its own data set (lesson 05's corpus, vocabulary and masking);
# history: a topic that ships stored runs made by a committed script (lesson 05's recipe, trained
# once by `python -m helpers.pretrain.history`, read back by the lesson)
TOPIC_MODULES = {"rebuild", "compute", "plots", "widgets", "data", "history"}
TOPICS = sorted(p.name for p in HELPERS.iterdir() if (p / "__init__.py").exists() and p.name not in SHARED)


def modules(package: str) -> list[str]:
    return sorted(p.stem for p in (HELPERS / package).glob("*.py") if p.stem != "__init__")


def test_no_flat_modules_left_in_helpers():
    flat = sorted(p.name for p in HELPERS.glob("*.py") if p.name not in {"__init__.py", "__main__.py"})
    assert not flat, f"every helper lives in a topic package now; found flat modules {flat}"


def map_row(package: str) -> str:
    row = [line for line in (HELPERS / "README.md").read_text().splitlines() if line.startswith(f"| `{package}` |")]
    assert len(row) == 1, f"helpers/README.md needs one row for {package} in its map"
    return row[0]


def covering_test(package: str, name: str) -> str | None:
    """A module split out of a big one (one per method a lesson teaches) is covered by the mirror
    test of the module it came from: the test file of the package that imports it, directly or
    through a re-export (``compute.py`` re-exports ``interventions/patching.py``; ``common/stats.py``
    its intervals, verdicts and ranks). Returns that test file's name, or None."""
    imported = re.compile(rf"^\s*from helpers\.{package}\.(\w+) import|^\s*from helpers\.{package} import ([\w, ]+)", re.M)
    for test in sorted((ROOT / "tests").glob(f"test_{package}_*.py")):
        hubs = set()
        for module, listed in imported.findall(test.read_text()):
            hubs |= {module} if module else {n.split(" as ")[0].strip() for n in listed.split(",")}
        for hub in hubs:
            source = HELPERS / package / f"{hub}.py"
            if hub == name or (source.exists() and re.search(
                    rf"^from helpers\.{package}\.{name} import [^\n]*# noqa: F401", source.read_text(), re.M)):
                return test.name
    return None


@pytest.mark.parametrize("topic", TOPICS)
def test_topic_packages_split_the_same_way(topic):
    """A topic holds the standard modules, plus modules of its own that its row in the map names
    (e.g. ``interventions/patching.py``: one module per method a lesson teaches)."""
    names = modules(topic)
    row = map_row(topic)
    own = {n for n in names if n not in TOPIC_MODULES}
    unnamed = sorted(n for n in own if f"`{n}`" not in row)
    assert names and not unnamed, f"helpers/{topic}/ holds {unnamed}, neither standard ({sorted(TOPIC_MODULES)}) " \
                                  f"nor named in its row of helpers/README.md"


@pytest.mark.parametrize("package", TOPICS + ["model", "common"])
def test_every_module_has_its_mirror_test_and_a_row_in_the_map(package):
    row = map_row(package)
    for name in modules(package):
        test = ROOT / "tests" / f"test_{package}_{name}.py"
        covered = test.exists() or covering_test(package, name) is not None
        assert test.exists() or covered, f"helpers/{package}/{name}.py has no mirror test {test.name}"
        assert f"`{name}`" in row, f"helpers/README.md's row for {package} does not mention {package}/{name}.py"


@pytest.mark.parametrize("source", sorted((ROOT / "lessons").glob("[0-9]*.py")), ids=lambda p: p.stem)
def test_lessons_import_from_the_modules_themselves(source):
    text = source.read_text()
    assert not re.search(r"^from helpers import ", text, re.M), "import from helpers.<topic>.<module>, not helpers"
    for module in re.findall(r"^from (helpers\.[\w.]+) import", text, re.M):
        path = ROOT / (module.replace(".", "/") + ".py")
        package = ROOT / module.replace(".", "/") / "__init__.py"
        assert path.exists() or package.exists(), f"{source.name} imports {module}, which does not exist"


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_course_sh_lab_forwards_arguments_and_serves_lessons(tmp_path):
    port, token = _free_port(), "course-sh-test"
    env = {**os.environ, "COURSE_VENV": sys.prefix, "JUPYTER_RUNTIME_DIR": str(tmp_path), "HF_HUB_OFFLINE": "1"}
    log = open(tmp_path / "lab.log", "w+")
    proc = subprocess.Popen(["bash", "course.sh", "lab", "--no-browser", f"--port={port}", "--ServerApp.port_retries=0",
                             f"--ServerApp.token={token}", "--ServerApp.ip=127.0.0.1"],
                            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        listing, deadline = None, time.time() + 240  # a first setup may install packages
        while time.time() < deadline and proc.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/contents?token={token}", timeout=2) as r:
                    listing = [item["name"] for item in json.load(r)["content"]]
                break
            except OSError:
                time.sleep(0.5)
        log.seek(0)
        output = log.read()
        assert listing is not None, f"course.sh lab did not serve on port {port}:\n{output[-2000:]}"
        assert "00_big_picture.ipynb" in listing and "helpers" not in listing, "the server's root must be lessons/"
        if os.geteuid() == 0:
            assert "adding --allow-root" in output
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
        log.close()
