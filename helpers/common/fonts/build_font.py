"""Build ``NotoSansSC-CourseSubset.ttf``: Noto Sans SC Regular cut down to the characters the
course's Chinese material uses and GB 2312's 6,763 hanzi (what a Chinese run draws from the data
it reads at run time), so lesson 15's figures can show Chinese (helpers.common.style
registers it with Matplotlib) without shipping a 10 MB font.

Source: the npm package ``@expo-google-fonts/noto-sans-sc@0.4.3``, file
``400Regular/NotoSansSC_400Regular.ttf`` (Google Fonts' Noto Sans SC, SIL Open Font License 1.1;
the package's code is MIT). Fetch it with the ordinary npm client, then run this script:

    npm pack @expo-google-fonts/noto-sans-sc@0.4.3 && tar xzf expo-google-fonts-noto-sans-sc-0.4.3.tgz
    python helpers/common/fonts/build_font.py package/400Regular/NotoSansSC_400Regular.ttf

It checks the source's SHA-256, keeps every character of :data:`SOURCES` in the CJK ranges
(:func:`course_characters`) plus CJK punctuation and full-width forms, drops hinting, renames the
family to ``Noto Sans SC Course`` (a modified font under a name of its own, as the OFL asks of
modified versions; "Noto" is no Reserved Font Name), and writes the font and ``README.md``'s
checksum line. ``--check`` rebuilds in memory and fails when the committed font differs.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
OUT = HERE / "NotoSansSC-CourseSubset.ttf"
FAMILY = "Noto Sans SC Course"
SOURCE_SHA256 = "d45f67f0a7c0ca3f256950777ce6a61cc7ce5f9696d02900cbbaac25f8aa7d16"
# Where the course's Chinese lives: data sets (folders or files), the lessons, helpers and tests.
SOURCES = ["data/intents_zh", "data/zh_words", "lessons", "helpers/chinese", "tests",
           "data/polysemy_zh.json", "data/attention_sentences_zh.txt", "data/sentence_pairs_zh.tsv"]
SUFFIXES = {".csv", ".txt", ".tsv", ".json", ".jsonl", ".py", ".md"}
CJK = re.compile("[\u2e80-\u2fdf\u3000-\u303f\u3040-\u30ff\u3100-\u312f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\ufe30-\ufe4f\uff00-\uffef]")
ALWAYS = "".join(chr(c) for c in range(0x3000, 0x3040)) + "".join(chr(c) for c in range(0xFF01, 0xFF5F))


def gb2312_characters() -> set[str]:
    """The 6,763 hanzi of GB 2312 (3,755 common ones in level 1, 3,008 in level 2): what a Chinese
    run draws from data the course does not ship (THUCNews headlines, the People's Daily) is
    almost always among them. Read off Python's own gb2312 codec: rows 0xB0-0xF7, cells 0xA1-0xFE."""
    found = set()
    for row in range(0xB0, 0xF8):
        for cell in range(0xA1, 0xFF):
            try:
                found.add(bytes((row, cell)).decode("gb2312"))
            except UnicodeDecodeError:  # the five empty cells at the end of level 1
                pass
    return found


def course_characters() -> str:
    """Every CJK character in the course's files (:data:`SOURCES`), GB 2312's hanzi
    (:func:`gb2312_characters`), and CJK punctuation."""
    found = set(ALWAYS) | gb2312_characters()
    for folder in SOURCES:
        where = ROOT / folder  # a folder, or one file
        for path in [where] if where.is_file() else sorted(where.rglob("*")):
            if path.is_file() and path.suffix in SUFFIXES:
                found |= set(CJK.findall(path.read_text(encoding="utf-8", errors="ignore")))
    return "".join(sorted(found))


def subset(source: Path) -> bytes:
    from fontTools import subset as ft
    from fontTools.ttLib import TTFont

    options = ft.Options()
    options.hinting = False
    options.layout_features = ["*"]
    options.name_IDs = ["*"]
    options.name_languages = ["*"]
    options.notdef_outline = True
    options.drop_tables += ["DSIG"]
    font = TTFont(str(source), recalcTimestamp=False)  # the same bytes on every run
    sub = ft.Subsetter(options)
    sub.populate(text=course_characters())
    sub.subset(font)
    names = font["name"]
    for record in names.names:
        if record.nameID in (1, 16):  # family
            record.string = FAMILY
        elif record.nameID == 4:  # full name
            record.string = f"{FAMILY} Regular"
        elif record.nameID == 6:  # PostScript name
            record.string = FAMILY.replace(" ", "") + "-Regular"
        elif record.nameID == 3:  # unique id
            record.string = f"{FAMILY} Regular; subset for the BERT course"
    buffer = io.BytesIO()
    font.save(buffer)
    return buffer.getvalue()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("source", type=Path, help="NotoSansSC_400Regular.ttf from the npm package")
    parser.add_argument("--check", action="store_true", help="fail when the committed font differs")
    args = parser.parse_args(argv)
    digest = hashlib.sha256(args.source.read_bytes()).hexdigest()
    if digest != SOURCE_SHA256:
        print(f"build_font: the source's SHA-256 is {digest}, expected {SOURCE_SHA256}", file=sys.stderr)
        return 1
    data = subset(args.source)
    if args.check:
        same = OUT.exists() and OUT.read_bytes() == data
        print("build_font: " + ("the committed font is up to date" if same else "the committed font differs"))
        return 0 if same else 1
    OUT.write_bytes(data)
    print(f"build_font: {len(course_characters())} characters, {len(data) // 1000} kB -> {OUT.name}, "
          f"SHA-256 {hashlib.sha256(data).hexdigest()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
