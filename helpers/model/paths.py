"""Where the course's files live, so lessons never depend on the working directory."""

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]  # helpers/model/paths.py -> the repository
DATA_DIR = REPO_ROOT / "data"
LESSONS_DIR = REPO_ROOT / "lessons"


def data_file(name: str) -> Path:
    """Path of a file in ``data/``; a clear error when it is missing."""
    path = DATA_DIR / name
    if not path.exists():
        available = sorted(p.name for p in DATA_DIR.iterdir()) if DATA_DIR.is_dir() else []
        raise FileNotFoundError(f"data file {name!r} not found in {DATA_DIR}; available: {available}")
    return path
