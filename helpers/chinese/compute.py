"""Lesson 11 numbers: a Chinese BERT layer by layer, its 17-intent head, and where characters
become words.

* :func:`load_intents_zh` reads ``data/intents_zh/`` (17 intents) as an
  :class:`~helpers.common.data.IntentSplit`, so lesson 07's heads and intervals apply unchanged;
* :func:`is_cjk_char` is the test BERT's basic tokenizer applies before WordPiece (every character
  in the CJK blocks is cut out as a word of its own), written out from the Unicode blocks;
  :func:`split_cjk` is that pre-tokenisation step by hand;
* :func:`cls_walk` gathers, over many traced sentences, the [CLS] vector's norm per layer, the
  cosine between consecutive layers and the share of [CLS]'s attention on each token class;
* :func:`load_zh_words` reads ``data/zh_words/words.jsonl`` (jieba's words); :func:`boundary_features`
  keeps every CJK character's vector at every layer with its label (does it start a word?), in
  the :class:`~helpers.probes.compute.WordFeatures` form, so lesson 10's probes, control tasks
  (:func:`~helpers.probes.compute.control_labels`: one random label per *character* type) and
  sentence-bootstrap intervals apply unchanged (:func:`boundary_report`);
  :func:`character_lookup_correct` is the non-contextual baseline: each character's most frequent
  label in training.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import torch

from helpers.common.data import SPLITS, IntentSplit, read_intent_csv
from helpers.common.progress import progress as progress_bar
from helpers.model.paths import DATA_DIR
from helpers.model.trace import check_traces, max_input_tokens, model_device
from helpers.probes.compute import ProbeReport, WordFeatures, control_labels, probe_task, sentence_bootstrap

INTENTS_ZH_DIR = DATA_DIR / "intents_zh"
WORDS_ZH_FILE = DATA_DIR / "zh_words" / "words.jsonl"
INTENTS_ZH = ("weather", "alarm", "music", "navigation", "reminder", "call", "message", "translate", "news",
              "schedule", "restaurant", "taxi", "flight", "smart_home", "joke", "stock", "recipe")
BOUNDARY_CLASSES = ("inside a word", "starts a word")

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


def split_cjk(text: str) -> list[str]:
    """BERT's pre-tokenisation of CJK text by hand: every CJK character becomes a chunk of its own,
    the rest is split on whitespace (punctuation splitting and WordPiece come afterwards)."""
    spaced = "".join(f" {ch} " if is_cjk_char(ch) else ch for ch in text)
    return spaced.split()


# -- [CLS] across layers, over many sentences ---------------------------------------------------

@dataclass
class ClsWalk:
    """Per sentence and layer: ``norms`` ``[N, L+1]`` (‖[CLS]‖), ``cosines`` ``[N, L]`` (cosine of
    [CLS] after layer ``l`` and ``l+1``), ``attention`` ``[N, L, 4]`` (share of [CLS]'s attention,
    mean over heads, on each class of :data:`helpers.attention.compute.TOKEN_CLASSES`) and
    ``uniform`` ``[N, 4]`` (those shares if [CLS] attended evenly)."""

    norms: torch.Tensor
    cosines: torch.Tensor
    attention: torch.Tensor
    uniform: torch.Tensor


def cls_walk(traces) -> ClsWalk:
    """:class:`ClsWalk` of every trace (position 0 is [CLS] in every BERT input)."""
    from helpers.attention.compute import attention_shares, uniform_shares

    traces = check_traces(traces)
    stacks = [torch.stack(t.hidden_states)[:, 0] for t in traces]  # [L+1, H] each
    norms = torch.stack([s.norm(dim=-1) for s in stacks])
    cosines = torch.stack([torch.nn.functional.cosine_similarity(s[:-1], s[1:], dim=-1) for s in stacks])
    attention = torch.stack([attention_shares(t, queries=[0]) for t in traces])
    uniform = torch.stack([uniform_shares(t) for t in traces])
    return ClsWalk(norms, cosines, attention, uniform)


# -- word boundaries --------------------------------------------------------------------------

@dataclass(frozen=True)
class SegmentedSentence:
    """One line of ``data/zh_words/words.jsonl``: a sentence and a segmenter's words."""

    text: str
    words: tuple[str, ...]
    source: str
    segmenter: str

    def word_starts(self) -> set[int]:
        """Character offsets in ``text`` where a word begins."""
        starts, offset = set(), 0
        for word in self.words:
            starts.add(offset)
            offset += len(word)
        return starts

    def __len__(self) -> int:
        return len(self.words)


def load_zh_words(path: Path | str = WORDS_ZH_FILE) -> list[SegmentedSentence]:
    """Every sentence of ``data/zh_words/words.jsonl``, checked (the words must join to the text)."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist: the segmented sentences live in data/zh_words/.")
    out = []
    with open(path, encoding="utf-8") as fh:
        for line_no, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            row = json.loads(line)
            if "".join(row["words"]) != row["text"] or not row["words"]:
                raise ValueError(f"{path.name} line {line_no}: the words do not join to the text.")
            out.append(SegmentedSentence(row["text"], tuple(row["words"]), row["source"], row["segmenter"]))
    if not out:
        raise ValueError(f"{path} holds no sentences.")
    return out


@torch.no_grad()
def boundary_features(tokenizer, model, sentences, *, batch_size: int = 64,
                      progress: bool = True) -> tuple[WordFeatures, torch.Tensor]:
    """``(features, labels)``: the vector at every layer of every token that is exactly one CJK
    character (``features.vectors`` ``[L+1, N, H]``, ``features.words`` the characters,
    ``features.position`` their offset in the sentence) and its label, 1 when a word starts there.

    Tokens that are not one CJK character (punctuation, Latin words, digits, [UNK]) carry no label
    and are left out; so are characters past the model's maximum input length."""
    sentences = list(sentences)
    if not sentences or not all(isinstance(s, SegmentedSentence) for s in sentences):
        raise ValueError("sentences must be a non-empty list of SegmentedSentence (from load_zh_words).")
    if not getattr(tokenizer, "is_fast", False):
        raise ValueError("boundary_features needs a fast tokenizer (it reads each token's character offsets).")
    limit = max_input_tokens(tokenizer, model)
    chunks, sent_ids, positions, chars, labels = [], [], [], [], []
    for start in progress_bar(range(0, len(sentences), batch_size), desc="character features", disable=not progress):
        batch = sentences[start:start + batch_size]
        enc = tokenizer([s.text for s in batch], padding=True, truncation=True, max_length=limit,
                        return_offsets_mapping=True, return_tensors="pt")  # cpu: moved with .to below
        offsets = enc.pop("offset_mapping").tolist()
        ids = enc["input_ids"].tolist()
        hidden = torch.stack(model(**enc.to(model_device(model)), output_hidden_states=True,
                                   return_dict=True).hidden_states)  # [L+1, B, T, H]
        rows, cols = [], []
        for b, sentence in enumerate(batch):
            starts = sentence.word_starts()
            for pos, (a, z) in enumerate(offsets[b]):
                if z - a != 1 or ids[b][pos] == tokenizer.unk_token_id or not is_cjk_char(sentence.text[a]):
                    continue
                rows.append(b); cols.append(pos)
                sent_ids.append(start + b); positions.append(a); chars.append(sentence.text[a])
                labels.append(int(a in starts))
        chunks.append(hidden[:, rows, cols])
    vectors = torch.cat(chunks, 1).float()
    device = vectors.device
    features = WordFeatures(vectors, torch.tensor(sent_ids, device=device), torch.tensor(positions, device=device),
                            chars)
    return features, torch.tensor(labels, dtype=torch.long, device=device)


def boundary_report(features: WordFeatures, labels, train_ids, test_ids, *, seeds=(0, 1, 2),
                    progress: bool = True, **train_kw) -> ProbeReport:
    """Lesson 10's probe per layer (:func:`~helpers.probes.compute.probe_task`) for "does this
    character start a word?", with Hewitt & Liang's control task (every character *type* gets one
    random label from the label distribution), split by sentence."""
    labels = torch.as_tensor(labels, device=features.vectors.device)
    if labels.ndim != 1 or len(labels) != len(features):
        raise ValueError(f"labels must be one 0/1 label per character ({len(features)}), got {tuple(labels.shape)}.")
    train = features.of_sentences(train_ids)
    test = features.of_sentences(test_ids)
    if not len(train) or not len(test):
        raise ValueError("train_ids and test_ids must each hold sentences with at least one CJK character.")
    in_train = torch.isin(features.sentence, torch.as_tensor(list(train_ids), device=features.sentence.device))
    in_test = torch.isin(features.sentence, torch.as_tensor(list(test_ids), device=features.sentence.device))
    y_train, y_test = labels[in_train], labels[in_test]
    seeds = list(seeds)
    controls = [control_labels(features.words, labels, len(BOUNDARY_CLASSES), seed=s) for s in seeds]
    report = probe_task(train, y_train, test, y_test, BOUNDARY_CLASSES, seeds=seeds,
                        control_train=torch.stack([c[in_train] for c in controls]),
                        control_test=torch.stack([c[in_test] for c in controls]),
                        progress=progress, desc="boundary probes", **train_kw)
    report.task = "word start"
    return report


def character_lookup_correct(train: WordFeatures, y_train, test: WordFeatures, y_test) -> torch.Tensor:
    """``[n_test]`` 0/1: is the test character's label the one it has most often in training?
    (A character never seen in training gets the most frequent label overall.) The baseline that
    knows each character but no context."""
    y_train = torch.as_tensor(y_train).tolist()  # cpu: labels as a list
    y_test = torch.as_tensor(y_test).tolist()  # cpu: labels as a list
    if len(y_train) != len(train) or len(y_test) != len(test):
        raise ValueError("give one label per training and per test character.")
    counts: dict[str, list[int]] = {}
    for ch, y in zip(train.words, y_train):
        counts.setdefault(ch, [0, 0])[y] += 1
    overall = int(sum(y_train) * 2 > len(y_train))
    guess = [max((0, 1), key=lambda k: (counts[ch][k], k == overall)) if ch in counts else overall
             for ch in test.words]
    return torch.tensor([float(g == y) for g, y in zip(guess, y_test)], dtype=torch.float64)  # cpu: outcomes


def lookup_interval(correct, test: WordFeatures):
    """The lookup baseline's accuracy with the same sentence-bootstrap interval as the probes."""
    correct = torch.as_tensor(correct, dtype=torch.float64).cpu()  # cpu: statistics on results
    return sentence_bootstrap(correct[None, None], test.sentence.cpu())[0]
