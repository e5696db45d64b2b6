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


@pytest.mark.parametrize("topic", TOPICS)
def test_topic_packages_split_the_same_way(topic):
    names = modules(topic)
    assert names and set(names) <= TOPIC_MODULES, f"helpers/{topic}/ holds {names}; allowed: {sorted(TOPIC_MODULES)}"


@pytest.mark.parametrize("package", TOPICS + ["model", "common"])
def test_every_module_has_its_mirror_test_and_a_row_in_the_map(package):
    readme = (HELPERS / "README.md").read_text()
    assert f"| `{package}` |" in readme, f"helpers/README.md has no row for {package}"
    for name in modules(package):
        test = ROOT / "tests" / f"test_{package}_{name}.py"
        assert test.exists(), f"helpers/{package}/{name}.py has no mirror test {test.name}"
        assert f"`{name}`" in readme, f"helpers/README.md does not mention {package}/{name}.py"


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
