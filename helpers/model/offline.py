"""Prepare a machine (or a classroom) to run the course offline.

``python -m helpers download NAME FOLDER`` saves tokenizer + model of a hub checkpoint into
``FOLDER`` as safetensors; afterwards ``export BERT_COURSE_MODEL=FOLDER`` makes every lesson
use it with no network. Run it once on a machine that has network access, then copy the
folder to the workshop machines (or a shared drive).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def download_model(name: str, folder: str | Path) -> Path:
    """Fetch ``name`` (hub id or local folder) and save it as a local, offline checkpoint."""
    from helpers.model.loading import ModelLoadError, _load_uncached, resolve_model_name

    folder = Path(folder)
    if folder.exists() and any(folder.iterdir()):
        raise FileExistsError(f"{folder} exists and is not empty; choose a new folder or remove it first.")
    loaded = _load_uncached(resolve_model_name(name))
    folder.mkdir(parents=True, exist_ok=True)
    loaded.tokenizer.save_pretrained(folder)
    loaded.model.save_pretrained(folder, safe_serialization=True)
    if not (folder / "model.safetensors").exists():
        raise ModelLoadError(f"saving {name!r} to {folder} did not produce model.safetensors")
    return folder


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m helpers", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    dl = sub.add_parser("download", help="save a BERT checkpoint into a local folder for offline use")
    dl.add_argument("name", help="hub id (e.g. bert-base-uncased) or local folder")
    dl.add_argument("folder", help="where to save it (must be new or empty)")
    args = parser.parse_args(argv)
    try:
        folder = download_model(args.name, args.folder)
    except Exception as err:  # noqa: BLE001 - a command-line tool reports, it does not trace back
        print(f"error: {err}", file=sys.stderr)
        return 1
    print(f"Saved {args.name} to {folder}.\nUse it offline with:  export BERT_COURSE_MODEL={folder.resolve()}")
    return 0
