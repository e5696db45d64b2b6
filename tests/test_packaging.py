"""Packaging and Colab readiness: environment.yml mirrors pyproject.toml; every lesson has a working badge."""

import re
import sys
from pathlib import Path

import jupytext
import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
LESSONS = sorted((ROOT / "lessons").glob("[0-9]*.py"))
BADGE = re.compile(
    r"\[!\[Open In Colab\]\(https://colab\.research\.google\.com/assets/colab-badge\.svg\)\]"
    r"\(https://colab\.research\.google\.com/github/[\w.-]+/[\w.-]+/blob/main/(?P<path>[\w/.-]+\.ipynb)\)"
)


def _environment_pip_requirements() -> tuple[str, list[str]]:
    text = (ROOT / "environment.yml").read_text()
    python = re.search(r"^\s*-\s*python([<>=!~].*)$", text, re.M).group(1).strip()
    pip_block = text.split("- pip:", 1)[1]
    reqs = [m.strip().strip('"') for m in re.findall(r"^\s+-\s+(.+)$", pip_block, re.M)]
    return python, reqs


def test_environment_yml_matches_pyproject():
    python, reqs = _environment_pip_requirements()
    assert python == PYPROJECT["project"]["requires-python"]
    pinned = [r for r in reqs if not r.startswith("-e")]
    wanted = PYPROJECT["project"]["dependencies"] + PYPROJECT["project"]["optional-dependencies"]["lab"]
    assert sorted(pinned) == sorted(wanted), "environment.yml's pip list must repeat pyproject's dependencies + [lab]"
    assert any(r.startswith("-e .") for r in reqs), "environment.yml must install the course package itself"


def test_dependencies_are_lower_bounds_only():
    for extra in [PYPROJECT["project"]["dependencies"], *PYPROJECT["project"]["optional-dependencies"].values()]:
        for req in extra:
            req = req.split(";")[0]  # an environment marker may compare versions
            assert "==" not in req and "<" not in req and "~=" not in req, f"{req}: use lower bounds only (Colab)"


@pytest.mark.parametrize("source", LESSONS, ids=lambda p: p.stem)
def test_lesson_has_colab_badge_pointing_at_its_ipynb(source):
    first = jupytext.read(source).cells[0]
    match = BADGE.search(first.source)
    assert match, f"{source.name}: the first cell needs an Open-in-Colab badge"
    assert match["path"] == f"lessons/{source.stem}.ipynb"
    assert (ROOT / match["path"]).exists()


def test_readme_lesson_table_has_every_lesson_with_a_badge():
    readme = (ROOT / "README.md").read_text()
    for source in LESSONS:
        number = source.stem.split("_")[0]  # "09", "09b"
        line = next((l for l in readme.splitlines() if l.startswith(f"| {number} ")), None)
        assert line, f"README lesson table lacks lesson {number}"
        match = BADGE.search(line)
        assert match and match["path"] == f"lessons/{source.stem}.ipynb", f"README row for {source.stem}: badge"


def test_contributing_shows_the_latest_benchmark():
    """CONTRIBUTING.md's speed figures are the ones in benchmarks/results.md (the script writes both)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("run_benchmarks", ROOT / "benchmarks" / "run_benchmarks.py")
    rb = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(rb)
    readme = (ROOT / "CONTRIBUTING.md").read_text()
    block = readme.split(rb.README_START, 1)[1].split(rb.README_END, 1)[0].strip()
    results = (ROOT / "benchmarks" / "results.md").read_text()
    assert block == rb.readme_block(results).strip(), "CONTRIBUTING.md speed table differs from benchmarks/results.md: rerun the benchmark"
    assert "❌" not in block, "the latest benchmark misses a target"


def test_research_extra_is_optional_and_cannot_move_torch():
    """nnsight and TransformerLens live in the optional [research] extra (lower bounds, no torch pin);
    course.sh installs it with the installed torch as a constraint, and what is installed here
    accepts this torch and this transformers (their own Requires-Dist)."""
    from importlib import metadata

    from packaging.requirements import Requirement
    from packaging.version import Version

    research = PYPROJECT["project"]["optional-dependencies"]["research"]
    assert sorted(Requirement(r).name for r in research) == ["nnsight", "transformer-lens"]
    assert not any(Requirement(r).name == "torch" for r in research)
    course_sh = (ROOT / "course.sh").read_text()
    # pip_install: uv, or pip when uv cannot be had, both with the installed torch as a constraint
    assert 'pip_install -e ".[research]"' in course_sh and 'print("torch==" + m.version("torch"))' in course_sh
    assert 'uv pip install -q --python "$VENV/bin/python" -c "$pins" "$@"' in course_sh
    assert 'pip install -q --no-compile -c "$pins" "$@"' in course_sh
    assert '".[research]" -c "$CONSTRAINTS"' in (ROOT / ".ci" / "colab_like.sh").read_text()
    installed = {name: Version(metadata.version(name)) for name in ("torch", "transformers")}
    for dist in ("nnsight", "transformer-lens"):
        try:
            requires = metadata.requires(dist) or []
        except metadata.PackageNotFoundError:
            continue  # not installed here: nothing to check
        for req in map(Requirement, requires):
            if req.name in installed and (req.marker is None or req.marker.evaluate({"extra": ""})):
                assert req.specifier.contains(installed[req.name], prereleases=True), (dist, str(req))


def test_the_readme_opens_for_learners():
    """The README's first screen is for a learner (issue 46): who it is for and the map come before
    any command, and contributor material lives in CONTRIBUTING.md, which the README links."""
    readme = (ROOT / "README.md").read_text()
    first = readme[:readme.index("## Two commands")]
    assert "Who it is for" in first and "hours in all" in first and "set-up" in first
    for maintainer in ("## Tests, CI", "## Layout", "benchmark:start", "nbval"):
        assert maintainer not in readme, f"{maintainer!r} belongs in CONTRIBUTING.md"
    assert "(CONTRIBUTING.md)" in readme and (ROOT / "CONTRIBUTING.md").exists()
