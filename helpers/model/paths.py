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

COURSE_TINY = "course-tiny"  # the MODEL name of the tiny BERT that lesson 05 pre-trains
COURSE_TINY_LESSON = "lessons/05_pretrain_a_tiny_bert.ipynb"
COURSE_MINI = "course-mini"  # the MODEL name of the course's own BERT-mini, shipped in data/course_mini/
COURSE_MINI_DIR = DATA_DIR / "course_mini"
COURSE_MINI_FILES = ("config.json", "model.safetensors", "vocab.txt", "tokenizer.json", "tokenizer_config.json")


def course_mini_path() -> Path | None:
    """Folder of ``MODEL = "course-mini"`` (``data/course_mini/``), or ``None`` when one of its
    files (:data:`COURSE_MINI_FILES`) is missing."""
    folder = COURSE_MINI_DIR
    return folder if all((folder / name).exists() for name in COURSE_MINI_FILES) else None


def course_cache() -> Path | None:
    """The course's disk cache: ``$COURSE_CACHE`` (default ``~/.cache/bert-layer-by-layer``);
    ``None`` when ``COURSE_CACHE`` is ``off`` (or ``0``, ``none``, empty): keep nothing. Every
    cache of the course (models, fine-tuning runs, pre-training) is a folder under this one."""
    import os

    root = os.environ.get("COURSE_CACHE", str(Path.home() / ".cache" / "bert-layer-by-layer"))
    return None if root.strip().lower() in ("off", "0", "none", "") else Path(root)


def course_tiny_pointer() -> Path | None:
    """The file naming the latest tiny BERT of lesson 05 (``$COURSE_CACHE/pretrain/course-tiny.json``)."""
    root = course_cache()
    return None if root is None else root / "pretrain" / f"{COURSE_TINY}.json"


def course_tiny_path() -> Path | None:
    """Folder of the latest checkpoint that lesson 05 saved, or ``None`` when there is none yet."""
    import json

    pointer = course_tiny_pointer()
    if pointer is None or not pointer.exists():
        return None
    folder = Path(json.loads(pointer.read_text())["path"])
    return folder if (folder / "config.json").exists() else None
