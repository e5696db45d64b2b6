"""Lesson 05's corpus in the language of the lesson's model (issue 48): the public-domain English of
``data/pretrain/`` or, for a Chinese model, People's Daily of January 1998 (loaded by
:func:`helpers.common.data.load_peoples_daily`), characters as tokens as in bert-base-chinese.

:func:`lesson_corpus` returns a :class:`LessonCorpus`: the documents in Google BERT's format, the
hash that fingerprints a run, the vocabulary options of the language, the lines the lesson prints
and, for Chinese, what whole-word masking would change (:meth:`LessonCorpus.whole_word_note`) and
the live check that replaces the stored English runs: does the held-out masked-LM loss fall below
the loss of a guesser that knows only how frequent each token is (:func:`unigram_plateau`)?
"""

from __future__ import annotations

import hashlib
import math
import re
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F

from helpers.common.data import is_cjk_char, load_peoples_daily, peoples_daily_path
from helpers.pretrain.data import IGNORE, Document, corpus_hash, load_corpus, train_wordpiece

LANGUAGES = ("en", "zh")
PARAGRAPHS_PER_DOCUMENT = 10  # the file keeps no article boundaries: a document is a run of paragraphs
_SENTENCE = re.compile(r"[^。！？]+(?:[。！？]+[”’」』]?|$)")


def sentences_of(paragraph: str) -> tuple[str, ...]:
    """A Chinese paragraph cut into sentences after 。！？ (a closing quote stays with its sentence)."""
    return tuple(s for s in (m.group(0).strip() for m in _SENTENCE.finditer(paragraph)) if s)


@dataclass
class LessonCorpus:
    """Lesson 05's documents in one language, with what the lesson says about them."""

    language: str
    documents: list[Document]
    hash: str
    words: list[tuple[str, ...]] = field(default_factory=list)  # Chinese: the annotators' words per paragraph

    def vocabulary(self, train_docs, vocab_size: int, max_length: int):
        """The lesson's WordPiece vocabulary: for Chinese every frequent character is an entry of
        its own (the tokenizer cuts CJK characters apart, as bert-base-chinese's does)."""
        if self.language == "zh":
            return train_wordpiece(train_docs, vocab_size, max_length, limit_alphabet=vocab_size - 100)
        return train_wordpiece(train_docs, vocab_size, max_length)

    def describe(self, train_docs, test_docs) -> str:
        """The lines section 1 prints: documents and lines per source, the split, one line."""
        out = []
        for source in dict.fromkeys(d.source for d in self.documents):
            mine = [d for d in self.documents if d.source == source]
            n_lines = sum(len(d.sentences) for d in mine)
            out.append(f"{source}: {len(mine)} documents, {n_lines:,} lines")
        n_chars = sum(len(s) for d in train_docs for s in d.sentences)
        out.append(f"train: {len(train_docs)} documents ({n_chars:,} characters); held out: {len(test_docs)} documents")
        out.append(f"a line: {train_docs[0].sentences[0][:150]}")
        if self.language == "zh":
            out.append(f"(a document: {PARAGRAPHS_PER_DOCUMENT} consecutive paragraphs of the paper, which keeps "
                       "no article boundaries; a line: one sentence)")
        return "\n".join(out)

    def long_enough(self, line: str) -> bool:
        """A held-out line long enough to hide a word in: five words, or eight Chinese characters."""
        if self.language == "zh":
            return sum(is_cjk_char(c) for c in line) >= 8
        return len(line.split()) >= 5

    def whole_word_note(self) -> str:
        """One sentence, from this corpus's own segmentation, on what Chinese whole-word masking
        (Cui et al., 2019/2021) would change in this lesson's character-by-character masking."""
        lengths = np.array([sum(is_cjk_char(c) for c in w) for p in self.words for w in p])
        lengths = lengths[lengths > 0]
        if not len(lengths):
            return "This corpus keeps no word boundaries: whole-word masking cannot be measured on it."
        multi = lengths[lengths >= 2].sum() / lengths.sum()
        return (f"Whole-word masking: this lesson, like BERT, hides characters one by one; Chinese BERT-wwm "
                f"(Cui et al., 2019/2021, bert-base-chinese's vocabulary, words from the LTP segmenter) hides every "
                f"character of a word together. In this corpus {multi:.0%} of the {lengths.sum():,} Chinese "
                f"characters sit in words of two or more characters (the annotators' segmentation: "
                f"{len(lengths):,} words, {lengths.mean():.2f} characters on average), so about {multi:.0%} of the "
                "hidden characters would lose their easiest clue -- the other characters of their word, as 京 "
                "in 北[MASK] -- and the model would have to guess them from the words around.")


def lesson_corpus(language: str, max_documents: int | None = None) -> LessonCorpus:
    """Lesson 05's corpus for ``language`` ("en" or "zh"); ``max_documents`` keeps that many
    documents (of each source). A missing Chinese corpus stops the lesson with one line."""
    if language not in LANGUAGES:
        raise ValueError(f"language {language!r} is not valid: choose one of {LANGUAGES}.")
    if language == "en":
        return LessonCorpus("en", load_corpus(max_documents=max_documents), corpus_hash())
    from helpers.common.language import LessonStop

    if max_documents is not None and (isinstance(max_documents, bool) or not isinstance(max_documents, int)
                                      or max_documents < 2):
        raise ValueError(f"max_documents must be None or an int >= 2, got {max_documents!r}.")
    try:
        path = peoples_daily_path()
    except FileNotFoundError as err:
        raise LessonStop(f"lesson 05 stops here: {err}") from None
    lines = None if max_documents is None else max_documents * PARAGRAPHS_PER_DOCUMENT
    words = load_peoples_daily(max_lines=lines, path=path)
    docs = []
    for start in range(0, len(words), PARAGRAPHS_PER_DOCUMENT):
        sentences = [s for p in words[start:start + PARAGRAPHS_PER_DOCUMENT] for s in sentences_of("".join(p))]
        if sentences:
            docs.append(Document("peoples_daily_1998", tuple(sentences)))
    digest = hashlib.sha256(path.read_bytes() + f"|{PARAGRAPHS_PER_DOCUMENT}|{max_documents}".encode()).hexdigest()
    return LessonCorpus("zh", docs, digest, words)


# ------------------------------------------------------------------------------ the live check for Chinese
@dataclass
class PlateauCheck:
    """Held-out masked-LM loss of one checkpoint against the unigram guesser's on the same blanks."""

    step: int
    model_loss: float
    unigram_loss: float
    difference: object  # the verdict (helpers.common.stats.verdict) on model minus unigram, in nats

    @property
    def left_plateau(self) -> bool:
        return self.difference.kind == "lower"


@torch.no_grad()
def blank_losses(model, ho, slice_pairs: int = 64) -> np.ndarray:
    """The model's cross-entropy (nats) at every scored position of ``ho`` (held-out blanks)."""
    model.eval()
    device = next(model.parameters()).device
    out = []
    for start in range(0, len(ho.inputs), slice_pairs):
        sl = slice(start, start + slice_pairs)
        h = model.bert(input_ids=ho.inputs[sl].to(device), token_type_ids=ho.batch["token_type_ids"][sl].to(device),
                       attention_mask=ho.batch["attention_mask"][sl].to(device)).last_hidden_state
        labels = ho.batch["labels"][sl].to(device)
        where = labels != IGNORE
        logits = model.cls.predictions(h[where])
        out.append(F.cross_entropy(logits, labels[where], reduction="none").cpu().numpy())
    return np.concatenate(out)


def unigram_losses(counts, answers) -> np.ndarray:
    """The cross-entropy at each blank of a guesser that gives every token its training frequency
    (add-one smoothed, so no answer gets probability 0): the loss of the unigram plateau."""
    counts = np.asarray(counts, dtype=float)
    p = (counts + 1) / (counts.sum() + len(counts))
    return -np.log(p[np.asarray(answers)])


def unigram_plateau(model, counts, ho, step: int) -> PlateauCheck:
    """Is the held-out masked-LM loss of ``model`` below the unigram guesser's (``counts``: the
    training frequencies, :func:`helpers.pretrain.compute.fit_nulls`'s) on the blanks of ``ho``?
    Paired per blank, the held-out documents redrawn (:func:`helpers.common.stats.paired_difference_ci`)."""
    from helpers.common.stats import paired_difference_ci, verdict

    mine, uni = blank_losses(model, ho), unigram_losses(counts, ho.answer)
    iv = paired_difference_ci(mine, uni, clusters=ho.document)
    v = verdict(iv, a=f"step {step}", b="the unigram guesser")
    return PlateauCheck(step, float(mine.mean()), float(uni.mean()), v)


def plateau_finding(checks: dict, vocab_size: int) -> tuple[str, list[str]]:
    """The sentence and the "how we know" lines of section 8 for a Chinese run, from ``checks``
    (``{step: PlateauCheck}``), never claiming the plateau was left when it was not."""
    last = checks[max(checks)]
    first = checks[min(checks)]
    said = (f"After {last.step} steps the held-out masked-LM loss is {last.model_loss:.2f} nats (step "
            f"{first.step}: {first.model_loss:.2f}; a uniform guess, ln V: {math.log(vocab_size):.2f}) against "
            f"{last.unigram_loss:.2f} for a guesser that knows only how often each character occurs. ")
    if last.left_plateau:
        said += "It is below it: the run has left the unigram plateau and uses the characters around a blank."
    elif last.difference.kind == "higher":
        said += "It is still above it: the run has not yet reached the unigram plateau; train more steps."
    else:
        said += ("It is not shown below it: the run has not been shown to leave the unigram plateau; "
                 "train more steps.")
    details = [f"step {c.step}: model {c.model_loss:.3f} nats, unigram guesser {c.unigram_loss:.3f}; "
               + c.difference.text for c in checks.values()]
    details.append("There are no stored Chinese runs to compare with (data/pretrain_history/ holds English runs); "
                   "this live check replaces that comparison.")
    return said, details
