"""helpers/common/language.py on the real tokenizers: the bundled English BERT reads English and not
Chinese, m3e-small (bundled-zh) reads Chinese and not the course's English sentences."""

import pytest

from helpers.common.language import LessonStop, require_reading, unread, unread_share
from zh_support import zh_loaded, zh_tokenizer  # noqa: F401 - fixtures


def test_english_tokenizer_reads_english_not_chinese(tokenizer):
    assert require_reading(tokenizer, "en", lesson="09") <= 0.05
    with pytest.raises(LessonStop, match=r"lesson 15 stops here: its data are Chinese.*bundled-zh"):
        require_reading(tokenizer, "zh", lesson="15")


def test_chinese_tokenizer_reads_chinese_not_english(zh_tokenizer):
    assert require_reading(zh_tokenizer, "zh", lesson="15") <= 0.05
    with pytest.raises(LessonStop) as err:
        require_reading(zh_tokenizer, "en", lesson="09", what="the polysemy sets")
    line = err.value._render_traceback_()
    assert len(line) == 1 and "the polysemy sets are English" in line[0] and "MODEL = None" in line[0]


def test_unread_units(zh_tokenizer, tokenizer):
    chars = "今儿天气咋样，我想听鹦鹉唱歌"
    assert any(unread(tokenizer, c) for c in chars if c != "，")
    assert not any(unread(zh_tokenizer, c) for c in chars)
    assert not unread(tokenizer, "river")
    assert unread_share(zh_tokenizer, ["今天天气如何"], "zh") == 0.0


def test_bad_language_is_a_clear_error(tokenizer):
    with pytest.raises(ValueError, match="language 'fr' is not valid"):
        require_reading(tokenizer, "fr", lesson="00")
