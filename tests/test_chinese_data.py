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


def test_chinese_polysemy_set_is_balanced_and_each_sentence_holds_its_word_once():
    """data/polysemy_zh.json (issue 48: lesson 09 on Chinese): words whose sense depends on the
    context, two senses each, five sentences per sense, the word exactly once in each sentence,
    no sentence twice, and every character one the Chinese model's vocabulary knows."""
    from helpers.common.data import load_polysemy

    data = load_polysemy("polysemy_zh.json")
    assert len(data) >= 10
    sentences = []
    for word, senses in data.items():
        assert len(senses) == 2, word
        for sense, texts in senses.items():
            assert len(texts) == 5, (word, sense)
            assert all(t.count(word) == 1 for t in texts), [t for t in texts if t.count(word) != 1]
            sentences += texts
    assert len(set(sentences)) == len(sentences)
    try:
        from helpers.model.loading import load_model

        tokenizer, _ = load_model("bundled-zh", verbose=False)
    except Exception as err:  # the optional Chinese model is not installed here
        pytest.skip(f"bundled-zh not available: {err}")
    unknown = {ch for t in sentences for ch in t if tokenizer.convert_tokens_to_ids(ch) == tokenizer.unk_token_id}
    assert not unknown, unknown
