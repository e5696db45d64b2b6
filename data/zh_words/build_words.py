"""Segment the course's Chinese sentences into words with jieba and write ``words.jsonl``.

Run once, by hand, when the sentences change (the course itself never needs jieba)::

    pip install jieba==0.42.1
    python data/zh_words/build_words.py            # writes data/zh_words/words.jsonl
    python data/zh_words/build_words.py --check    # the committed file is what jieba gives

The sentences: every utterance of ``data/intents_zh/`` (train, then test) and the sentences of
``extra_sentences.txt``, all written for the course. jieba runs in its default "precise" mode
(``jieba.lcut(text)``, HMM on for words missing from its dictionary). One JSON object per sentence:

* ``text`` -- the sentence;
* ``words`` -- jieba's words, which join to ``text`` exactly;
* ``source`` -- ``intents_zh/train``, ``intents_zh/test`` or ``extra``;
* ``segmenter`` -- ``"jieba X.Y.Z (lcut, precise mode, HMM on)"``.
"""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "words.jsonl"


def sentences() -> list[tuple[str, str]]:
    rows = []
    for split in ("train", "test"):
        with open(HERE.parent / "intents_zh" / f"{split}.csv", newline="", encoding="utf-8") as f:
            rows += [(r["text"], f"intents_zh/{split}") for r in csv.DictReader(f)]
    extra = (HERE / "extra_sentences.txt").read_text(encoding="utf-8").splitlines()
    return rows + [(line.strip(), "extra") for line in extra if line.strip()]


def build() -> str:
    import jieba

    jieba.setLogLevel(60)  # no "Building prefix dict" chatter
    name = f"jieba {jieba.__version__} (lcut, precise mode, HMM on)"
    lines = []
    for text, source in sentences():
        words = [w for w in jieba.lcut(text)]
        assert "".join(words) == text, text
        lines.append(json.dumps({"text": text, "words": words, "source": source, "segmenter": name},
                                ensure_ascii=False))
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="compare with the committed file instead of writing")
    args = parser.parse_args()
    text = build()
    if args.check:
        same = OUT.read_text(encoding="utf-8") == text
        print("words.jsonl is what jieba gives" if same else "words.jsonl differs: rerun without --check")
        raise SystemExit(0 if same else 1)
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {text.count(chr(10))} sentences to {OUT}")


if __name__ == "__main__":
    main()
