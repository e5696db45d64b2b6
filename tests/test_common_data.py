"""helpers.common.data: the intent data set (counts, fixed split, no duplicates, clear errors) and the polysemy data."""

from collections import Counter

import pytest

from helpers.common.data import INTENTS, load_intents, load_polysemy


@pytest.fixture(scope="module")
def splits():
    return load_intents("train"), load_intents("test")


def test_at_least_ten_intents_and_25_utterances_each(splits):
    train, test = splits
    assert len(INTENTS) >= 10
    counts = Counter(train.labels) + Counter(test.labels)
    assert set(counts) == set(range(len(INTENTS)))
    assert min(counts.values()) >= 25
    assert set(Counter(test.labels)) == set(range(len(INTENTS))), "every intent must be in the test split"


def test_split_is_fixed_and_disjoint(splits):
    train, test = splits
    assert (len(train), len(test)) == (200, 100)
    assert not {t.lower() for t in train.texts} & {t.lower() for t in test.texts}


def test_no_duplicate_utterances(splits):
    everything = [t.lower().strip() for s in splits for t in s.texts]
    dupes = [t for t, n in Counter(everything).items() if n > 1]
    assert not dupes, dupes


def test_subset_takes_the_first_n_of_each_intent(splits):
    small = splits[0].subset(3)
    assert len(small) == 3 * len(INTENTS)
    assert Counter(small.labels) == {i: 3 for i in range(len(INTENTS))}
    assert small.texts[0] == splits[0].texts[0]
    with pytest.raises(ValueError, match="positive int"):
        splits[0].subset(0)


def test_bad_split_and_bad_file(tmp_path):
    with pytest.raises(ValueError, match="choose one of"):
        load_intents("dev")
    (tmp_path / "train.csv").write_text("text,intent\nhello there,greeting\n")
    with pytest.raises(ValueError, match="unknown intent 'greeting'"):
        load_intents("train", tmp_path)


def test_polysemy_data_shape():
    data = load_polysemy()
    assert len(data) >= 3
    for word, senses in data.items():
        assert len(senses) >= 2
        for sense, sentences in senses.items():
            assert len(sentences) >= 5, (word, sense)
            for s in sentences:
                assert word in s.lower().replace(".", " ").split(), (word, s)


def test_pos_data_is_complete_and_matches_its_source():
    from helpers.common.data import UPOS_TAGS, load_pos
    from helpers.model.paths import DATA_DIR

    sentences = load_pos()
    source = [s.strip() for s in (DATA_DIR / "pos" / "sentences.txt").read_text().splitlines() if s.strip()]
    assert 300 <= len(sentences) <= 500
    assert [s.text for s in sentences] == source, "pos.jsonl must be the tagging of sentences.txt, in order"
    assert len({s.text for s in sentences}) == len(sentences)
    tags = {t for s in sentences for t in s.upos}
    assert tags <= set(UPOS_TAGS) and {"NOUN", "VERB", "ADJ", "ADP", "DET", "PROPN"} <= tags
    assert sum(t != "O" for s in sentences for t in s.ner) >= 300
    for s in sentences:
        assert "".join(s.words).replace(" ", "") == s.text.replace(" ", ""), "words must cover the sentence"
        roots = [i for i, h in enumerate(s.head) if h == i]
        assert roots, s.text
    import json

    first = json.loads((DATA_DIR / "pos" / "pos.jsonl").read_text().splitlines()[0])
    assert first["tagger"].startswith("spacy 3.") and "en_core_web_sm" in first["tagger"]
    assert {s.tagger for s in sentences} == {first["tagger"]}


def test_bad_pos_file(tmp_path):
    from helpers.common.data import load_pos

    path = tmp_path / "pos.jsonl"
    path.write_text('{"text": "A b", "words": ["A", "b"], "upos": ["DET", "NOUNY"], "ner": ["O", "O"], '
                    '"head": [1, 1], "deprel": ["det", "ROOT"]}\n')
    with pytest.raises(ValueError, match="unknown UPOS tag"):
        load_pos(path)
    path.write_text('{"text": "A b", "words": ["A", "b"], "upos": ["DET"], "ner": ["O", "O"], '
                    '"head": [1, 1], "deprel": ["det", "ROOT"]}\n')
    with pytest.raises(ValueError, match="equally long"):
        load_pos(path)
    with pytest.raises(FileNotFoundError, match="data/pos"):
        load_pos(tmp_path / "missing.jsonl")


def test_banking77_splits_sizes_and_few_shot_draws():
    import json

    from helpers.common.data import load_banking77
    from helpers.model.paths import DATA_DIR

    train, test = load_banking77("train"), load_banking77("test")
    assert (len(train), len(test), train.num_classes) == (10_003, 3_080, 77) and train.names == test.names
    source = json.loads((DATA_DIR / "banking77" / "SOURCE.json").read_text())
    assert source["splits"]["train"]["utterances"] == len(train) and "CC BY 4.0" in source["licence"]
    assert all(test.labels.count(c) == 40 for c in range(77))
    few = train.sample(10, seed=0)
    assert len(few) == 770 and all(few.labels.count(c) == 10 for c in range(77))
    assert few.texts == train.sample(10, seed=0).texts and few.texts != train.sample(10, seed=1).texts
    assert set(few.texts) <= set(train.texts)
    rest, dev = few.split_off(2, seed=0)
    assert (len(rest), len(dev)) == (616, 154) and not set(rest.texts) & set(dev.texts)
    sub = test.only(train.names[:3])
    assert sub.names == train.names[:3] and set(sub.labels) == {0, 1, 2} and len(sub) == 120
    with pytest.raises(ValueError, match="fewer than"):
        train.sample(500)
    with pytest.raises(ValueError, match="unknown"):
        test.only(["no_such_intent"])
