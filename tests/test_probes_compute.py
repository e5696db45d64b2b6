"""helpers.probes.compute on the real bundled model and the real data/pos labels."""

import re
import math
import warnings

import numpy as np
import pytest
import torch

from helpers.common.data import UPOS_TAGS, TaggedSentence, load_pos
from helpers.model.trace import trace_text
from helpers.probes.compute import (
    ENTITY_CLASSES, ProbeReport, control_labels, entity_class, extract_word_features, norm_quartiles,
    paired_accuracy_change, scaled_layers, sentence_bootstrap, sentence_probe_report, split_sentences, summarize_layers,
    table_verdict, trace_word_vectors, train_probes, word_probe_report,
)


@pytest.fixture(scope="module")
def sentences():
    return load_pos()


@pytest.fixture(scope="module")
def features(tokenizer, model, sentences):
    return extract_word_features(tokenizer, model, sentences[:160], progress=False)


def test_word_features_are_each_words_first_wordpiece_at_every_layer(tokenizer, model, sentences, features):
    L = model.config.num_hidden_layers
    assert features.vectors.shape == (L + 1, sum(len(s) for s in sentences[:160]), model.config.hidden_size)
    # rows come sentence by sentence, word by word, whatever the batching order was
    assert features.sentence.tolist() == [i for i, s in enumerate(sentences[:160]) for _ in s.words]
    assert features.words == [w for s in sentences[:160] for w in s.words]
    for i in (0, 7, 123):  # an independent single-sentence run
        enc = tokenizer([list(sentences[i].words)], is_split_into_words=True, return_tensors="pt")
        with torch.no_grad():
            hs = model(**enc, output_hidden_states=True).hidden_states
        firsts = [enc.word_ids(0).index(k) for k in range(len(sentences[i]))]
        rows = (features.sentence == i).nonzero().flatten()
        for l in range(L + 1):
            assert torch.allclose(features.vectors[l, rows], hs[l][0, firsts], atol=1e-4)


def test_words_past_the_maximum_length_are_left_out_with_a_warning(other_bert_dir):
    from helpers.model.loading import load_model

    tok, small = load_model(other_bert_dir, verbose=False)
    n = 2 * small.config.max_position_embeddings
    long = TaggedSentence("x", tuple(["river"] * n), ("NOUN",) * n, ("O",) * n, tuple(range(n)), ("dep",) * n)
    with pytest.warns(UserWarning, match="maximum input length"):
        f = extract_word_features(tok, small, [long], progress=False)
    assert len(f) == small.config.max_position_embeddings - 2 and f.n_dropped == n - len(f)
    assert f.position.tolist() == list(range(len(f)))


def test_bad_inputs_get_clear_errors(tokenizer, model, sentences):
    with pytest.raises(ValueError, match="TaggedSentence"):
        extract_word_features(tokenizer, model, ["a plain string"], progress=False)
    with pytest.raises(ValueError, match="batch_size"):
        extract_word_features(tokenizer, model, sentences[:2], batch_size=0, progress=False)
    with pytest.raises(ValueError, match="choose one of"):
        word_probe_report(None, sentences, "dependency", [0], [1])


def test_labels_and_entity_classes(sentences, features):
    upos = features.labels(sentences, "upos")
    assert [UPOS_TAGS[i] for i in upos[: len(sentences[0])]] == list(sentences[0].upos)
    mask = features.task_mask(sentences, "entity")
    ents = features.select(mask).labels(sentences, "entity")
    assert 0 < int(mask.sum()) < len(features) and int(ents.max()) < len(ENTITY_CLASSES)
    assert entity_class("B-GPE") == entity_class("I-LOC") == "PLACE" and entity_class("B-DATE") == "TIME"
    with pytest.raises(ValueError, match="no entity class"):
        entity_class("O")
    with pytest.raises(ValueError, match="unknown entity type"):
        entity_class("B-ALIEN")


def test_split_is_by_sentence_fixed_and_complete():
    train, test = split_sentences(100, 0.25, seed=0)
    assert len(test) == 25 and not set(train) & set(test) and sorted(train + test) == list(range(100))
    assert split_sentences(100, 0.25, seed=0) == (train, test) and split_sentences(100, 0.25, seed=1) != (train, test)
    with pytest.raises(ValueError, match="test_fraction"):
        split_sentences(10, 1.0)


def test_control_labels_are_fixed_per_word_type_and_follow_the_label_distribution(sentences, features):
    y = features.labels(sentences, "upos")
    c = control_labels(features.words, y, len(UPOS_TAGS), seed=0)
    label_of = {}
    for w, lab in zip(features.words, c.tolist()):
        assert label_of.setdefault(w.lower(), lab) == lab, "every occurrence of a type keeps its control label"
    assert torch.equal(c, control_labels(features.words, y, len(UPOS_TAGS), seed=0))
    assert not torch.equal(c, control_labels(features.words, y, len(UPOS_TAGS), seed=1))
    empirical = torch.bincount(y, minlength=len(UPOS_TAGS)).double() / len(y)
    per_type = torch.bincount(torch.tensor(list(label_of.values())), minlength=len(UPOS_TAGS)).double() / len(label_of)
    assert 0.5 * (per_type - empirical).abs().sum() < 0.12
    with pytest.raises(ValueError, match="equally long"):
        control_labels(features.words[:3], y, len(UPOS_TAGS))


def test_batched_probes_train_each_label_set_as_if_alone():
    g = torch.Generator().manual_seed(0)
    X = torch.randn(3, 400, 16, generator=g)
    y = (X[1, :, 0] > 0).long()  # readable from layer 1 only
    noise = torch.randint(0, 2, (400,), generator=g)
    together = train_probes(X, torch.stack([y, noise]), 2, epochs=150, progress=False)
    other = train_probes(X, torch.stack([y, 1 - noise]), 2, epochs=150, progress=False)
    assert torch.allclose(together.weight[..., :2], other.weight[..., :2], atol=1e-5)
    pred = together.predict(X)  # [S, L+1, N]
    assert pred.shape == (2, 3, 400)
    acc = (pred[0] == y).double().mean(1)
    assert acc[1] > 0.95 and acc[0] < 0.7 and acc[2] < 0.7
    with pytest.raises(ValueError, match="labels must lie"):
        train_probes(X, torch.full((400,), 5), 2, progress=False)


def test_sentence_bootstrap_resamples_sentences():
    # 40 sentences of 3 words, every word of a sentence right or every one wrong: resampling whole
    # sentences sees 40 units, resampling words would pretend to see 120 (an interval about sqrt(3)x
    # too narrow)
    right = (torch.arange(40) % 3 != 0).double()
    correct = right.repeat_interleave(3)[None, None]
    by_sentence = torch.arange(40).repeat_interleave(3)
    (iv,) = sentence_bootstrap(correct, by_sentence)
    (naive,) = sentence_bootstrap(correct, torch.arange(120))  # every word its own unit
    assert iv.estimate == pytest.approx(right.mean().item()) and iv.width > 1.5 * naive.width
    sentence = torch.tensor([0, 0, 1, 1, 2, 2])
    (ones,) = sentence_bootstrap(torch.ones(2, 1, 6), sentence)
    assert (ones.estimate, ones.low, ones.high) == (1.0, 1.0, 1.0)
    # three sentences only: the small-sample rule (Student t on 2 degrees of freedom) widens it
    (few,) = sentence_bootstrap(torch.tensor([[[1, 1, 0, 0, 1, 1]]], dtype=torch.float64), sentence)
    assert few.low < 0 and few.high > 1
    with pytest.raises(ValueError, match="correct must be"):
        sentence_bootstrap(torch.ones(1, 1, 5), sentence)


@pytest.mark.slow  # several seconds: runs in the --all tier (CI)
def test_real_pos_probe_beats_the_majority_tag_and_is_selective(sentences, features):
    train, test = split_sentences(160, 0.25, seed=0)
    r = word_probe_report(features, sentences, "upos", train, test, seeds=(0, 1), progress=False)
    L = features.num_layers
    assert r.task == "upos" and len(r.accuracy) == len(r.control) == len(r.selectivity) == L + 1
    best = r.accuracy[r.best_layer()]
    assert best.low > r.majority + 0.3, "a linear probe must read POS far better than the most frequent tag"
    assert max(s.estimate for s in r.selectivity) > 0.1
    assert r.best_layer() in r.tied_with_best() and r.best_layer("selectivity") in r.tied_with_best("selectivity")
    sel = r.differences(0, "selectivity")
    by_hand = (r.task_correct - r.control_correct).mean(0)
    assert [d.estimate for d in sel] == pytest.approx((by_hand - by_hand[0]).mean(1).tolist())
    # one task probe (one optimum, the same for every seed) and one control probe per seed
    assert r.probes is not None and r.probes.predict(features.vectors[:, :5]).shape == (3, L + 1, 5)
    assert r.task_correct.shape == (2, L + 1, r.n_test) and len(r.test_sentence) == r.n_test
    assert torch.equal(r.task_correct[0], r.task_correct[1])


@pytest.mark.slow  # several seconds: runs in the --all tier (CI)
def test_task_and_control_probes_meet_the_same_criterion(sentences, features):
    from helpers.common.training import CONVERGED
    from helpers.probes.compute import fit_word_probes

    train, test = split_sentences(160, 0.25, seed=0)
    r = word_probe_report(features, sentences, "upos", train, test, seeds=(0, 1), progress=False)
    L = features.num_layers
    assert len(r.records) == 3 * (L + 1) and all(rec.status == CONVERGED for rec in r.records)
    assert {rec.criterion for rec in r.records} == {r.records[0].criterion}, "one criterion for task and control"
    assert len(r.train_accuracy) == len(r.control_train_accuracy) == L + 1
    # the printed control training accuracy is the mean over seeds of each control probe's own record
    for l in range(L + 1):
        per_seed = [rec.train_accuracy for rec in r.records
                    if rec.run.endswith(f", layer {l}") and ": control, seed" in rec.run]
        assert len(per_seed) == 2 and r.control_train_accuracy[l] == pytest.approx(np.mean(per_seed))
    # the training accuracy is the chosen probe's own, recomputed here on the words it was fitted on
    y = features.labels(sentences, "upos")
    tr = features.of_sentences(train)
    probes, records, acc = fit_word_probes(tr, y[torch.isin(features.sentence, torch.tensor(train))][None], len(UPOS_TAGS))
    assert acc.shape == (1, L + 1) and records[L].train_accuracy == pytest.approx(float(acc[0, L]))
    assert records[L].kept[0] < records[L].step0[0], "the dev loss fell from step 0"
    old = word_probe_report(features, sentences, "upos", train, test, seeds=(0, 1), progress=False, epochs=2)
    assert old.records == [] and old.train_accuracy is None, "the old fixed-epoch recipe, on request, reports nothing"


def task_and_control(sentences, features):
    """The training words of 120 of 160 sentences and their label sets: part of speech, and one
    control task (seed 0) over the same words."""
    train, _ = split_sentences(160, 0.25, seed=0)
    tr = features.of_sentences(train)
    keep = torch.isin(features.sentence, torch.tensor(train))
    y = features.labels(sentences, "upos")[keep]
    return tr, torch.stack([y, control_labels(tr.words, y, len(UPOS_TAGS), seed=0)])


@pytest.mark.slow  # several seconds: runs in the --all tier (CI)
def test_control_probes_take_the_task_probes_l2_strength(sentences, features):
    """Hewitt & Liang's rule: the control probe gets the task probe's hyperparameters. On its own
    dev loss a control task (it cannot generalise to unseen word types) picks a stronger penalty
    than the task does somewhere; with ``l2_from`` every layer's control probe uses the task's."""
    from helpers.probes.compute import fit_word_probes

    tr, Y = task_and_control(sentences, features)
    L1 = features.num_layers + 1
    _, own, _ = fit_word_probes(tr, Y, len(UPOS_TAGS))
    _, shared, acc = fit_word_probes(tr, Y, len(UPOS_TAGS), l2_from=0)
    strength = lambda rec: float(rec.choice.split()[1])  # "L2 0.01" or "L2 0.01 (label set 0's)"
    task_own, control_own = [strength(r) for r in own[:L1]], [strength(r) for r in own[L1:]]
    assert any(c > t for t, c in zip(task_own, control_own)), "on its own dev loss a control picks a stronger penalty"
    assert [strength(r) for r in shared[:L1]] == task_own, "the task's own choice is unchanged"
    assert [strength(r) for r in shared[L1:]] == task_own, "each layer's control probe takes the task's strength"
    assert all("label set 0's" in r.choice for r in shared[L1:])
    # a weaker penalty fits the control's training words at least as well as its own stronger one
    own_acc = [r.train_accuracy for r in own[L1:]]
    assert all(a >= b - 1e-9 for a, b, t, c in zip(acc[1].tolist(), own_acc, task_own, control_own) if c >= t)
    with pytest.raises(ValueError, match="l2_from"):
        fit_word_probes(tr, Y, len(UPOS_TAGS), l2_from=2)


@pytest.mark.slow  # several seconds: runs in the --all tier (CI)
def test_paired_accuracy_change_resamples_sentences_once_for_both(sentences, features):
    train, test = split_sentences(160, 0.25, seed=0)
    before = word_probe_report(features, sentences, "upos", train, test, seeds=(0, 1), progress=False)
    same = paired_accuracy_change(before, before)
    assert all((d.estimate, d.low, d.high) == (0.0, 0.0, 0.0) for d in same)
    # a second report on the same words whose outcomes differ from the first on a few words
    after = ProbeReport(**{**before.__dict__})
    flipped = before.task_correct.clone()
    flipped[:, :, :40] = 1 - flipped[:, :, :40]
    after.task_correct = flipped
    change = paired_accuracy_change(after, before)
    by_hand = (flipped.mean(0) - before.task_correct.mean(0)).mean(1)  # per layer, over the test words
    assert [d.estimate for d in change] == pytest.approx(by_hand.tolist())
    assert all(d.low <= d.estimate <= d.high for d in change)
    other = word_probe_report(features, sentences, "upos", test, train, seeds=(0, 1), progress=False)
    with pytest.raises(ValueError, match="same test words"):
        paired_accuracy_change(other, before)
    with pytest.raises(ValueError, match="per-word outcomes"):
        paired_accuracy_change(ProbeReport("upos", UPOS_TAGS, before.accuracy, None, None, before.accuracy, 0.2, 10, 10),
                               before)


def _intent_draws(intent_data):
    from helpers.classify.compute import Draw
    from helpers.common.training import stratified_dev_split

    train, test, f_train, f_test = intent_data
    draws = {}
    for s in (0, 1):
        rows, dev = stratified_dev_split(train.labels, per_class=2, seed=s)
        draws[s] = Draw(f_train.select(rows), [train.labels[i] for i in rows], f_train.select(dev),
                        [train.labels[i] for i in dev])
    return draws, {s: (f_test, test.labels) for s in draws}


def test_sentence_probe_report_is_lesson_10s_probe(intent_data):
    from helpers.classify.strategies import probe_draws

    train, test, f_train, f_test = intent_data
    draws, tests = _intent_draws(intent_data)
    r = sentence_probe_report(draws, tests, train.names, progress=False)
    assert r.task == "intent" and r.control is None and r.selectivity is None
    with pytest.raises(ValueError, match="not available"):
        r.best_layer("selectivity")
    assert max(i.estimate for i in r.accuracy) > 1 / train.num_classes + 0.2
    runs = probe_draws(draws, f_test, test.labels, train.num_classes, "mean", progress=False).runs  # lesson 10's probes
    assert [i.estimate for i in r.accuracy] == pytest.approx([run.estimate for run in runs])
    assert all(i.low <= i.estimate <= i.high for i in r.accuracy)
    assert len(r.records) == 2 * len(runs) and len(r.train_accuracy) == len(runs)
    assert r.n_test == len(test.labels)
    with pytest.raises(ValueError, match="two draws"):
        sentence_probe_report({0: draws[0]}, {0: tests[0]}, train.names, progress=False)


def test_scaled_layers_reproduce_the_table_at_12_and_partition_every_depth():
    assert [scaled_layers(a, b, 12) for a, b in ((1, 3), (4, 8), (9, 12))] == [[1, 2, 3], [4, 5, 6, 7, 8],
                                                                               [9, 10, 11, 12]]
    assert [scaled_layers(a, b, 24) for a, b in ((1, 3), (4, 8), (9, 12))] == [list(range(1, 7)), list(range(7, 17)),
                                                                               list(range(17, 25))]
    assert [scaled_layers(a, b, 6) for a, b in ((1, 3), (4, 8), (9, 12))] == [[1, 2], [3, 4], [5, 6]]
    for L in range(3, 49):
        parts = [scaled_layers(a, b, L) for a, b in ((1, 3), (4, 8), (9, 12))]
        assert sorted(sum(parts, [])) == list(range(1, L + 1)) and all(parts)
    with pytest.raises(ValueError):
        scaled_layers(5, 3, 12)


def _report(correct, sentence=None, pairing="sentences"):
    """A report from per-word outcomes ``[seeds, L+1, N]`` (sentence ``i // 2`` holds words ``2i, 2i+1``)."""
    correct = torch.as_tensor(correct, dtype=torch.float64)
    sentence = torch.arange(correct.shape[2]) // 2 if sentence is None else sentence
    ivs = sentence_bootstrap(correct, sentence)
    return ProbeReport("upos", UPOS_TAGS, ivs, None, None, ivs, 0.2, 10, correct.shape[2], None, correct, sentence,
                       None, pairing)


def _layers(*wrong, n=200):
    """One seed; layer ``l`` gets every word right except the first ``wrong[l]`` of the given order."""
    order = torch.randperm(n, generator=torch.Generator().manual_seed(0))
    out = torch.ones(1, len(wrong), n)
    for l, k in enumerate(wrong):
        out[0, l, order[:k]] = 0
    return out


def test_ties_come_from_paired_differences_not_from_overlapping_intervals():
    # layer 2 is wrong on a subset of layer 1's mistakes: their own intervals overlap, but on the
    # same words layer 1 is never better, so the paired difference ranks it below layer 2
    r = _report(_layers(60, 26, 16, 40))
    assert r.best_layer() == 2 and r.accuracy[1].high > r.accuracy[2].low  # the separate intervals overlap
    d = r.differences(2)
    assert d[1].high < 0 and (d[2].estimate, d[2].low, d[2].high) == (0.0, 0.0, 0.0)
    assert r.tied_with_best() == [2]
    assert d[1].estimate == pytest.approx(r.accuracy[1].estimate - r.accuracy[2].estimate)
    assert r.gain_over_embeddings().estimate == pytest.approx((60 - 16) / 200) and r.gain_over_embeddings().low > 0
    # independent outcomes at the same accuracy cannot be ranked: layer 1 is tied with the best
    noisy = _layers(60, 16, 16, 40)
    noisy[0, 1] = noisy[0, 1, torch.randperm(200, generator=torch.Generator().manual_seed(1))]
    assert 1 in _report(noisy).tied_with_best()
    with pytest.raises(ValueError, match="per-item outcomes"):
        ProbeReport("upos", UPOS_TAGS, r.accuracy, None, None, r.accuracy, 0.2, 10, 10).tied_with_best()
    with pytest.raises(ValueError, match="reference"):
        r.differences(9)


def test_word_ties_resample_whole_sentences_once_for_both_layers():
    # layer 1 misses both words of every fourth sentence (10 of 40): the paired difference resamples
    # those sentences whole, for both layers at once
    layer1 = (torch.arange(40) % 4 != 0).double().repeat_interleave(2)
    correct = torch.stack([torch.ones(80, dtype=torch.float64), layer1])[None]
    sentence = torch.arange(40).repeat_interleave(2)
    r = _report(correct, sentence)
    (first, _) = r.differences(1)
    assert first.estimate == pytest.approx(10 / 40)
    from helpers.probes.compute import sentence_replicates

    n_boot = r._comparisons(1, "accuracy")[0].reps.n_boot  # the report's own number of replicates
    direct = sentence_replicates((correct[:, 0] - correct[:, 1])[:, None], sentence, n_boot=n_boot).intervals()[0]
    assert (first.low, first.high) == pytest.approx((direct.low, direct.high))


def test_peak_verdicts_use_the_paired_ties():
    sharp = _report(_layers(80, 30, 10, 40, 60))
    assert sharp.best_layer() == 2 and sharp.tied_with_best() == [2]
    assert table_verdict(sharp, [1, 2]) == "peak inside the table's layers"
    assert table_verdict(sharp, [3, 4]) == "peak outside the table's layers"
    close = _layers(80, 10, 10, 40, 60)
    close[0, 1] = close[0, 1, torch.randperm(200, generator=torch.Generator().manual_seed(2))]
    wide = _report(close)
    assert wide.tied_with_best() == [1, 2] and wide.best_layer() in (1, 2)
    inside, outside = wide.best_layer(), 3 - wide.best_layer()
    assert table_verdict(wide, [outside]) == "best layer outside, tied with a layer inside"
    assert table_verdict(wide, [inside, 3]) == "best layer inside, tied with layers outside"
    assert table_verdict(wide, [1, 2, 3]) == "peak inside the table's layers"
    flat = _layers(10, 10, 10)
    for l in (1, 2):
        flat[0, l] = flat[0, l, torch.randperm(200, generator=torch.Generator().manual_seed(l))]
    assert table_verdict(_report(flat), [1]) == "not testable here: layer 0 already at 95.0%, tied with the best"
    assert summarize_layers([0, 1, 2, 5]) == "emb-2, 5" and summarize_layers([]) == "none"


def test_sentence_probe_ties_are_lesson_10s_paired_comparison(intent_data):
    from helpers.classify.comparisons import paired_comparison
    from helpers.classify.findings import layers_tied_with_peak
    from helpers.classify.strategies import probe_draws
    from helpers.common.stats import extreme_family, family_level

    train, test, f_train, f_test = intent_data
    draws, tests = _intent_draws(intent_data)
    r = sentence_probe_report(draws, tests, train.names, progress=False)
    runs = probe_draws(draws, f_test, test.labels, train.num_classes, "mean", progress=False).runs
    best, tied, _ = layers_tied_with_peak(runs)  # lesson 10's peak and its ties
    assert r.pairing == "seeds" and r.best_layer() == best and r.tied_with_best() == sorted([best] + tied)
    level = family_level(extreme_family(len(runs)))
    assert [(d.low, d.high) for d in r.differences(best, level=level)] == [
        (pytest.approx(p.low), pytest.approx(p.high))
        for p in (paired_comparison(run, runs[best]).interval(level) for run in runs)]


def test_trace_word_vectors_and_norms(tokenizer, model, features):
    trace = trace_text(tokenizer, model, "The bank can book a table, and the book is on the table.")
    words, vectors = trace_word_vectors(trace)
    assert words == trace.words() and vectors.shape == (trace.num_layers + 1, len(words), trace.hidden_size)
    second_table = trace.find_word("table", 1).first
    assert torch.equal(vectors[3, len(words) - 2], trace.hidden(3)[second_table])
    q = norm_quartiles(features)
    assert q.shape == (3, features.num_layers + 1) and np.all(q[0] <= q[1]) and np.all(q[1] <= q[2])


def test_no_warning_for_normal_sentences(tokenizer, model, sentences):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        extract_word_features(tokenizer, model, sentences[:3], progress=False)


# ----------------------------------------------------------------------------- lesson 14's tables and findings
@pytest.fixture(scope="module")
def upos_report(sentences, features):
    train, test = split_sentences(160, 0.25, seed=0)
    return word_probe_report(features, sentences, "upos", train, test, seeds=(0, 1), progress=False)


@pytest.mark.slow  # several seconds: runs in the --all tier (CI)
def test_word_probe_table_and_status_finding_read_the_real_report(sentences, features, upos_report):
    from helpers.probes.compute import layer_label, probe_status_finding, word_probe_table

    r, L = upos_report, features.num_layers
    rows, title = word_probe_table(r)
    assert [row["layer"] for row in rows] == ["emb"] + list(range(1, L + 1))
    assert layer_label(0) == "emb" and layer_label(3) == 3
    for l in (0, L):  # the test accuracy, recomputed from the per-word outcomes
        acc = r.task_correct[:, l].double().mean().item()
        assert rows[l]["task accuracy"].startswith(f"{100 * acc:.1f}% [")
        per_seed = [rec.train_accuracy for rec in r.records
                    if rec.run.endswith(f", layer {l}") and ": control, seed" in rec.run]
        assert rows[l]["control, on its training words"] == f"{np.mean(per_seed):.1%}"
    # the most frequent training tag's share of the test words, by hand
    train, test = split_sentences(160, 0.25, seed=0)
    y = features.labels(sentences, "upos")
    y_train = y[torch.isin(features.sentence, torch.tensor(train))]
    y_test = y[torch.isin(features.sentence, torch.tensor(test))]
    majority = (y_test == torch.bincount(y_train).argmax()).double().mean().item()
    assert f"most frequent training tag on test: {majority:.1%}" in title
    assert "averaged over 2 seeds" in title and f"{len(y_train)} train / {len(y_test)} test words, 17 classes" in title
    sentence, details, table = probe_status_finding(r.records)
    assert sentence == f"Of the {3 * (L + 1)} word probes (task and control, every layer), every one met the" \
                       " convergence criterion."
    assert details[0].startswith(f"criterion: {r.records[0].criterion}; ") and len(table.table) == 3 * (L + 1)
    import dataclasses

    from helpers.common.training import BUDGET_EXHAUSTED
    stuck = [dataclasses.replace(r.records[0], status=BUDGET_EXHAUSTED)] + r.records[1:]
    assert probe_status_finding(stuck)[0].endswith(
        f" {3 * (L + 1) - 1} of {3 * (L + 1)} runs converged; 1 {BUDGET_EXHAUSTED}.")
    with pytest.raises(ValueError, match="records"):
        probe_status_finding([])
    with pytest.raises(ValueError, match="word_probe_report"):
        word_probe_table(_report(_layers(10, 5)))


def test_intent_probe_table_reads_the_draws(intent_data):
    from helpers.probes.compute import intent_probe_table

    train = intent_data[0]
    r = sentence_probe_report(*_intent_draws(intent_data), train.names, progress=False)
    rows, title = intent_probe_table(r)
    assert len(rows) == len(r.accuracy) and rows[0]["layer"] == "emb"
    for l, row in enumerate(rows):  # mean over the two draws of each draw's accuracy
        assert row["intent accuracy"].startswith(f"{100 * r.task_correct[:, l].mean().item():.1f}% [")
    assert "mean over the 2 draws" in title and "test utterances" in title
    # lesson 14 with a Chinese model (issue 48): THUCNews's words, the same numbers
    from helpers.interventions.compute import lesson_benchmark

    zh_rows, zh_title = intent_probe_table(r, bench=lesson_benchmark("zh"))
    assert set(zh_rows[0]) == {"layer", "topic accuracy", "on its training headlines"}
    assert [z["topic accuracy"] for z in zh_rows] == [row["intent accuracy"] for row in rows]
    assert zh_title.startswith("topic probe") and "test headlines" in zh_title and "utterance" not in zh_title


def test_peak_findings_name_the_best_layer_its_ties_and_the_gain():
    from helpers.probes.compute import peak_findings

    outcomes = {"upos": _layers(80, 30, 10, 40, 60), "entity": _layers(10, 12, 60, 70, 80),
                "intent": _layers(90, 70, 60, 40, 5)}
    reports = {t: _report(o) for t, o in outcomes.items()}
    rows, title, findings = peak_findings(reports)
    assert [row["task"] for row in rows] == ["part of speech", "entities", "sentence meaning"]
    acc = {t: o[0].mean(1) for t, o in outcomes.items()}  # per layer, by hand
    pos = rows[0]
    assert pos["best layer"] == "2" and pos["most selective"] == "n/a"
    assert pos["gain over emb, points"] == f"{100 * (acc['upos'][2] - acc['upos'][0]).item():+.1f}"
    # layers 1..3 of 12 at 4 layers: the middle of layer 1 (1/8) lies in (0, 3/12], that of layer 2 (3/8) not
    assert pos["table, scaled"] == "1" and pos["could be as high"] == "none"
    assert pos["verdict"] == "peak outside the table's layers"
    sentence, details = findings[0]
    assert sentence == (f"Part of speech is read best at layer 2 ({100 * acc['upos'][2].item():.1f} %); against the"
                        " popular table (1): peak outside the table's layers.")
    assert f"3: {100 * (acc['upos'][3] - acc['upos'][2]).item():+.1f} [" in details[0]
    assert "Bonferroni over the 10 pairs of layers" in details[0]  # 5 layers (emb + 4): 10 pairs
    # entities: the embeddings are about as good as layer 1 (both nearly perfect)
    assert rows[1]["verdict"].startswith("not testable here")
    assert findings[1][0].startswith("Entities is read best at the embeddings (95.0 %)")
    assert rows[2]["best layer"] == "4" and rows[2]["table, scaled"] == "4" and "peak inside" in rows[2]["verdict"]
    assert "popular table's layers scaled to this model" in title


def test_layer_tag_table_keeps_only_the_disputed_words():
    from helpers.probes.compute import layer_tag_table

    classes = ("A", "B", "C", "D", "E")
    tags = torch.tensor([[1, 2, 3], [1, 2, 4], [1, 2, 3]])  # emb, layer 1, layer 2
    line, rows, title = layer_tag_table(["book", "a", "book"], tags, classes)
    assert line == "2 of 3 words get the same tag from every layer: book/B a/C"
    assert rows == [{"layer": "emb", "book (#2)": "D"}, {"layer": 1, "book (#2)": "E"}, {"layer": 2, "book (#2)": "D"}]
    assert title.startswith("words on which the layers disagree (1, at most 12 shown;")
    line, rows, _ = layer_tag_table(["a", "b", "c"], torch.zeros(2, 3, dtype=torch.long), classes, max_listed=2)
    assert line == "every layer gives each of the 3 words the same tag: a/A b/A ..." and rows == []
    with pytest.raises(ValueError, match="tags must be"):
        layer_tag_table(["a"], tags, classes)


def test_layer_change_table_gives_each_layers_cka_and_seed_range():
    from types import SimpleNamespace

    from helpers.common.stats import Interval
    from helpers.probes.compute import layer_change_table

    per_seed = torch.tensor([[1.0, 0.95, 0.80], [1.0, 0.90, 0.70], [1.0, 0.93, 0.75]])  # [seeds, L+1]
    cka = [Interval(float(v), float(v) - 0.01, float(v) + 0.01) for v in per_seed.mean(0)]
    moved = [Interval(0.1, 0.05, 0.2)] * 3
    rows, title = layer_change_table(SimpleNamespace(cka=per_seed), cka, moved, 40)
    assert rows[2] == {"layer": 2, "CKA": "0.7500 [0.7400, 0.7600]", "CKA seed range": "0.7000-0.8000",
                       "relative weight change (seed range)": "0.1000 [0.0500, 0.2000]"}
    assert rows[0]["layer"] == "emb" and "mean of 3 runs" in title and "one of the 40 utterances" in title
    _, zh_title = layer_change_table(SimpleNamespace(cka=per_seed), cka, moved, 40, "headlines")
    assert "one of the 40 headlines" in zh_title and "utterance" not in zh_title  # THUCNews (issue 48)
    with pytest.raises(ValueError, match="per layer"):
        layer_change_table(SimpleNamespace(cka=per_seed), cka[:2], moved, 40)


def _jackknife_low(values, level):
    """The lower end of a jackknife interval by hand: ``mean -/+ z * sqrt((n-1)/n * sum(dev^2))``."""
    from statistics import NormalDist

    n = len(values)
    se = math.sqrt((n - 1) / n * float(((values - values.mean()) ** 2).sum()))
    return float(values.mean()) - NormalDist().inv_cdf(0.5 + level / 2) * se


def test_cka_depth_finding_compares_layers_paired():
    from helpers.common.stats import Interval, extreme_family, family_level
    from helpers.probes.compute import cka_depth_finding

    g = torch.Generator().manual_seed(0)
    n = 30
    loo = torch.tensor([1.0, 0.99, 0.801, 0.80]).repeat(n, 1).double()
    loo[:, 2] = loo[:, 3] + 0.001 + 0.05 * torch.randn(n, generator=g, dtype=torch.float64) / n  # about layer 3
    cka = [Interval(float(v), float(v), float(v)) for v in loo.mean(0)]
    sentence, details = cka_depth_finding(cka, loo)
    tied = _jackknife_low(loo[:, 2] - loo[:, 3], family_level(extreme_family(3))) <= 0
    assert tied, "the test builds layer 2 as changed about as much as layer 3"
    assert sentence == (f"Layer 3 changed more than layer 1, as Merchant et al. found: its CKA is lower"
                        f" ({cka[3].estimate:.3f} vs {cka[1].estimate:.3f}). Layer 3 changed most"
                        f" (CKA {cka[3].estimate:.3f}); 2 could have changed as much.")
    assert "Bonferroni over the 3 pairs of encoder layers" in details[1] and details[1].count(": ") == 3
    # the top and the bottom layer swapped: layer 1 changed more, and alone
    flipped = loo[:, [0, 3, 2, 1]].clone()
    flipped[:, 2] = 0.95
    cka2 = [Interval(float(v), float(v), float(v)) for v in flipped.mean(0)]
    sentence, _ = cka_depth_finding(cka2, flipped)
    assert sentence.startswith("Layer 1 changed more than layer 3, unlike Merchant et al.: its CKA is lower (0.800 vs")
    assert sentence.endswith("Layer 1 changed most (CKA 0.800); every other encoder layer changed less.")
    assert cka_depth_finding(cka[:2], loo[:, :2]) is None  # one encoder layer: nothing to compare
    with pytest.raises(ValueError, match="one column per layer"):
        cka_depth_finding(cka, loo[:, :3])


def test_weight_norm_table_splits_the_log_ratio():
    from helpers.probes.compute import weight_norm_table

    size, step = torch.tensor([10.0, 20.0, 40.0]), torch.tensor([0.1, 0.2, 0.2])
    rows, title, split = weight_norm_table(size, step)
    assert rows[1] == {"layer": 1, "||W||": "20.00", "||dW|| (mean of seeds)": "0.2000", "ratio": "0.0100"}
    # log(0.2/40) - log(0.2/20) = 0 from ||dW|| + (-log 2) from ||W||
    assert split == (f"layer 1 -> 2: log ratio changes by {-math.log(2):+.3f} = +0.000 from ||dW||"
                     f" {-math.log(2):+.3f} from ||W||: mostly ||W||.")
    assert weight_norm_table(size[:2], step[:2])[2] is None and "||dW|| / ||W||" in title


def test_swap_in_table_and_finding_follow_the_verdicts():
    from helpers.common.stats import Interval, verdict
    from helpers.probes.compute import swap_in_finding, swap_in_table

    diffs = [Interval(-0.10, -0.15, -0.05), Interval(0.01, -0.02, 0.04), Interval(0.06, 0.02, 0.10)]
    verdicts = [verdict(d, a=f"layer {l}", b="fine-tuned") for l, d in enumerate(diffs)]
    assert [v.kind for v in verdicts] == ["lower", "inconclusive", "higher"]
    rows, title = swap_in_table(verdicts)
    assert "(same utterances and draws)" in title
    assert "(same headlines and draws)" in swap_in_table(verdicts, "headlines")[1]  # THUCNews (issue 48)
    assert rows == [{"layer put back": "emb", "accuracy change, points": "-10.0",
                     "what it says": "accuracy falls: its own change is needed"},
                    {"layer put back": 1, "accuracy change, points": "+1.0", "what it says": "we cannot tell"},
                    {"layer put back": 2, "accuracy change, points": "+6.0",
                     "what it says": "accuracy rises: its change hurt"}]
    sentence, details = swap_in_finding(verdicts, 2, 20)
    assert sentence == ("Putting back emb lowers the accuracy: the fine-tuned model needs those layers' own changes;"
                        " putting back 2 raises it; for the others we cannot tell.")
    assert details[0].startswith("2 draws x 20 test utterances") and details[0].endswith("Bonferroni over the 3 swaps")
    sentence, _ = swap_in_finding(verdicts[1:2], 2, 20)
    assert sentence == ("For no single layer is putting back its pre-trained weights shown to lower the accuracy;"
                        " for the others we cannot tell.")
    assert swap_in_finding([verdicts[0], verdicts[2]], 2, 20)[0].endswith("putting back 1 raises it.")
    assert swap_in_finding(verdicts, 2, 20, "headlines")[1][0].startswith("2 draws x 20 test headlines")


@pytest.mark.slow  # several seconds: runs in the --all tier (CI)
def test_pos_change_table_and_finding(upos_report):
    from helpers.common.stats import Interval, family_level
    from helpers.probes.compute import pos_change_finding, pos_change_table

    spans = [(-0.05, -0.08, -0.02), (-0.03, -0.05, -0.01), (0.0, -0.01, 0.01), (0.03, 0.01, 0.05)]

    def at(family, *layers):  # the layers' changes as intervals at the family's level
        return [Interval(*spans[l], family_level(family)) for l in layers]

    change = at(4, 0, 1, 2, 3)
    before = ProbeReport("upos", UPOS_TAGS, [Interval(0.9, 0.88, 0.92)] * 4, None, None, [], 0.2, 10, 10)
    after = ProbeReport("upos", UPOS_TAGS, [Interval(0.85, 0.83, 0.87)] * 4, None, [Interval(0.4, 0.35, 0.45)] * 4,
                        [], 0.2, 10, 10, train_accuracy=[0.975] * 4)
    rows, title = pos_change_table(before, after, change, 3)
    assert rows[0] == {"layer": "emb", "accuracy before": "90.0% [88.0, 92.0]", "accuracy after": "85.0% [83.0, 87.0]",
                       "after - before, points": "-5.0", "selectivity after": "40.0% [35.0, 45.0]",
                       "after, on its training words": "97.5%"}
    assert "fine-tuned draw 3 (after)" in title
    sentence, details = pos_change_finding(change, 4, upos_report.records)
    assert sentence == ("After fine-tuning, the part-of-speech probe reads less at layers emb-1; it reads more at 3;"
                        " for the other layers we cannot tell.")
    assert details[0].endswith(f"{100 * family_level(4):.4g} % intervals, Bonferroni over the 4 layers")
    assert len(details) == 6 and details[-1].startswith("fine-tuned probes: all ")
    sentence, _ = pos_change_finding(at(2, 0, 2), 2, upos_report.records)
    assert sentence == ("After fine-tuning, the part-of-speech probe reads less at layer emb; for the other layers"
                        " we cannot tell.")
    assert pos_change_finding(at(1, 2), 1, upos_report.records)[0] == (
        "No layer's part-of-speech accuracy is shown to fall after fine-tuning; for the other layers we cannot tell.")
    with pytest.raises(ValueError, match="same layers"):
        pos_change_table(before, after, change[:2], 3)


def test_norm_lines_print_medians_and_ratios(features):
    from helpers.probes.compute import norm_lines

    q = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [3.0, 5.0, 9.0]])  # 25th, 50th, 75th; emb, 1, 2
    assert norm_lines(q) == ("word-vector norm per layer, median [25th, 75th percentile]:\n"
                             "  emb: 2.0 [1.0, 3.0]; 1: 4.0 [2.0, 5.0]; 2: 6.0 [3.0, 9.0]\n"
                             "largest median / smallest median: 3.00 (layer 2 / layer 0); median at layer 2 / layer 1:"
                             " 1.50")
    median_emb = np.median(features.vectors[0].norm(dim=-1).cpu().numpy())  # by hand, on the real words
    assert f"emb: {median_emb:.1f} [" in norm_lines(norm_quartiles(features))


@pytest.mark.slow  # several seconds: runs in the --all tier (CI)
def test_one_l2_for_all_layers_is_the_lowest_summed_dev_loss(sentences, features):
    """Issue 43: a selectivity profile must not change penalty between layers. With ``one_l2`` task and
    control probes share one strength at every layer, and it is the grid value whose dev loss summed
    over layers is lowest (recomputed here by fitting each value alone); an edge of the grid is flagged."""
    from helpers.common.training import L2_GRID
    from helpers.probes.compute import fit_word_probes

    tr, Y = task_and_control(sentences, features)
    L1 = features.num_layers + 1
    _, one, _ = fit_word_probes(tr, Y, len(UPOS_TAGS), l2_from=0, one_l2=True)
    strengths = {float(re.search(r"L2 ([0-9.e+-]+?)(?:,| |$)", r.choice).group(1)) for r in one}
    assert len(strengths) == 1 and all("one for all layers" in r.choice for r in one)
    summed = {v: sum(r.kept[0] for r in fit_word_probes(tr, Y[:1], len(UPOS_TAGS), l2=(v,))[1][:L1]) for v in L2_GRID}
    assert strengths == {min(summed, key=summed.get)}
    edge = strengths.pop() in (min(L2_GRID), max(L2_GRID))
    assert all(("at the grid's edge" in r.choice) == edge for r in one)


def test_a_weak_penalty_is_fitted_to_its_own_optimum():
    """Issue 43: with an absolute gradient tolerance alone, the continuation path (strongest penalty
    first) let a much weaker one "converge" after 0 iterations. The tolerance is now also relative
    to the strength, so the weak fit moves and reaches a gradient below a tenth of its strength."""
    from helpers.common.training import fit_linear, strength_tolerance

    g = torch.Generator().manual_seed(0)
    Z = torch.randn(1, 200, 6, generator=g, dtype=torch.float64)
    y = (Z[0, :, 0] + 0.5 * torch.randn(200, generator=g, dtype=torch.float64) > 0).long()
    fit = fit_linear(Z, y, 2, (1e-1, 1e-5))
    assert fit.iterations[1] > 0, "the weak penalty's fit must run"
    assert float(fit.gradient[1].max()) <= strength_tolerance(1e-4, 1e-5) == pytest.approx(1e-6)
    assert bool(fit.converged.all())
    weak_norm, strong_norm = float(fit.W[1].norm()), float(fit.W[0].norm())
    assert weak_norm > strong_norm, "a weaker penalty leaves larger weights"

