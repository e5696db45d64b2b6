"""The Chinese intent set (data/intents_zh) and the segmented sentences (data/zh_words): counts,
labels, no duplicate within or across splits, words that join to their sentence."""

import re
from collections import Counter

import pytest

from helpers.chinese.compute import INTENTS_ZH, load_intents_zh, load_zh_words


def _norm(text: str) -> str:
    return re.sub(r"[\s，。？！、,.?!]", "", text)


def test_intents_zh_counts_and_labels():
    train, test = load_intents_zh("train"), load_intents_zh("test")
    assert train.names == test.names == INTENTS_ZH and len(INTENTS_ZH) == 17
    assert Counter(train.labels) == {c: 24 for c in range(17)}
    assert Counter(test.labels) == {c: 10 for c in range(17)}


def test_intents_zh_has_no_duplicate_within_or_across_splits():
    texts = load_intents_zh("train").texts + load_intents_zh("test").texts
    seen = Counter(_norm(t) for t in texts)
    assert [t for t, n in seen.items() if n > 1] == []


def test_default_sentence_is_not_in_the_intent_data():
    texts = load_intents_zh("train").texts + load_intents_zh("test").texts
    assert "今天天气如何" not in texts


def test_bad_split_is_a_clear_error():
    with pytest.raises(ValueError, match="split 'dev' is not valid"):
        load_intents_zh("dev")


def test_zh_words_cover_the_intents_and_join_to_their_text():
    sentences = load_zh_words()
    assert len(sentences) >= 300
    assert all("".join(s.words) == s.text for s in sentences)
    texts = {s.text for s in sentences}
    assert set(load_intents_zh("train").texts + load_intents_zh("test").texts) <= texts
    assert all(s.segmenter.startswith("jieba ") for s in sentences)
    assert sentences[0].word_starts() == {0, 2, 4}  # 今儿 | 天气 | 咋样
