"""Rooms one can read: no module of helpers/ is longer than MAX_LINES lines (issue 47). A big module
is split along the methods a lesson teaches, its old import path kept by re-exports where it can be
(helpers/README.md, "The map"). Exceptions are named here with their reason, and an exception that
is no longer needed fails too, so the list cannot go stale."""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAX_LINES = 600
EXCEPTIONS = {
    # the website's explorer recorder: issue 47 breaks its import circle and changes nothing else,
    # because the website's explorers are being reworked at the same time (book/static, claims, tables)
    "helpers/common/explorer_frames.py": 620,
}


def line_counts() -> dict[str, int]:
    return {p.relative_to(ROOT).as_posix(): len(p.read_text(encoding="utf-8").splitlines())
            for p in sorted((ROOT / "helpers").rglob("*.py"))}


def too_long(counts: dict[str, int], limit: int = MAX_LINES, exceptions: dict = EXCEPTIONS) -> list[str]:
    return [f"{path}: {n} lines (at most {exceptions.get(path, limit)})"
            for path, n in counts.items() if n > exceptions.get(path, limit)]


def test_no_helpers_module_is_longer_than_the_limit():
    problems = too_long(line_counts())
    assert not problems, "split these along the methods a lesson teaches:\n" + "\n".join(problems)


def test_every_exception_is_still_needed():
    counts = line_counts()
    stale = [path for path in EXCEPTIONS if counts.get(path, 0) <= MAX_LINES]
    assert not stale, f"no longer over {MAX_LINES} lines (or gone): drop them from EXCEPTIONS: {stale}"


def test_the_check_catches_a_long_module():
    counts = {"helpers/a/compute.py": 601, "helpers/a/plots.py": 600, "helpers/common/explorer_frames.py": 615}
    assert too_long(counts) == ["helpers/a/compute.py: 601 lines (at most 600)"]
    assert too_long({"helpers/common/explorer_frames.py": 621}) == [
        "helpers/common/explorer_frames.py: 621 lines (at most 620)"]
