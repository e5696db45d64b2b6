"""helpers.classify.compute on the real bundled model."""

import warnings

import numpy as np
import pytest
import torch

from helpers.classify.comparisons import (SeededAccuracy, claims_markdown, compare_paired, compare_two_paired,
                                          paired_comparison, paired_difference, per_item)
from helpers.classify.compute import (Draw, accuracy, correct_per_item, extract_features, fit_head, fit_head_split,
                                      predict, train_head)
from helpers.classify.findings import PUBLISHED_07, layers_tied_with_peak, peak_layer_verdict
from helpers.classify.strategies import (STRATEGIES, last_k_layers, layer_weights_summary, probe_draws, probe_layers,
                                         strategy_draws, strategy_features)
from helpers.common.stats import Interval, accuracy_ci
from helpers.common.training import CONVERGED, L2_GRID, stratified_dev_split


def _split(features, labels, per_class=2, seed=0):
    """A Draw: ``per_class`` utterances of every intent held out of the features as the dev split."""
    rows, dev = stratified_dev_split(labels, per_class=per_class, seed=seed)
    return Draw(features.select(rows), [labels[i] for i in rows], features.select(dev), [labels[i] for i in dev])


def test_features_match_a_single_forward_pass(tokenizer, model, intent_data):
    train, _, ft, _ = intent_data
    L, H = model.config.num_hidden_layers, model.config.hidden_size
    assert ft.cls.shape == (L + 1, len(train), H) and ft.mean.shape == ft.cls.shape
    enc = tokenizer(train.texts[3], return_tensors="pt")
    with torch.no_grad():
        hs = model(**enc, output_hidden_states=True).hidden_states
    assert torch.allclose(ft.cls[2, 3], hs[2][0, 0], atol=1e-5)
    assert torch.allclose(ft.mean[L, 3], hs[L][0].mean(0), atol=1e-5)  # padding ignored
    with pytest.raises(ValueError, match="out of range"):
        ft.layer(L + 1)
    with pytest.raises(ValueError, match="list"):
        extract_features(tokenizer, model, "one string", progress=False)


def test_head_learns_and_predicts_argmax(intent_data):
    train, test, ft, fe = intent_data
    L = ft.num_layers
    head = train_head(ft.layer(L, "mean"), train.labels, train.num_classes, progress=False)
    assert accuracy(head, fe.layer(L, "mean"), test.labels) > 0.6  # chance is 0.1
    X = fe.layer(L, "mean")
    # the logits by hand from the head's weights: standardize, then x W^T + b
    W, b = head.classifier.weight.detach(), head.classifier.bias.detach()
    z = ((X - ft.layer(L, "mean").mean(0)) / ft.layer(L, "mean").std(0)) @ W.T + b
    with torch.no_grad():
        assert torch.allclose(head(X), z, atol=1e-4)
    assert torch.equal(predict(head, X), z.argmax(-1))
    assert torch.equal(correct_per_item(head, X, test.labels), z.argmax(-1) == torch.tensor(test.labels))
    with pytest.raises(ValueError, match="labels"):
        train_head(ft.layer(L), [0, 1], 10, progress=False)


def test_a_contract_head_is_chosen_on_dev_converges_and_reports_it(intent_data):
    train, test, ft, fe = intent_data
    L = ft.num_layers
    draw = _split(ft, train.labels)
    head, record = fit_head(draw.train.layer(L, "mean"), draw.y_train, train.num_classes,
                            draw.dev.layer(L, "mean"), draw.y_dev, run="t")
    assert record.status == CONVERGED and record.gradient <= 1e-4 and record.steps > 0
    assert record.choice in {f"L2 {v:g}" for v in L2_GRID}
    assert record.step0[0] == pytest.approx(np.log(train.num_classes)), "scored at W = 0: every class equally likely"
    # the kept dev loss is the head's own cross-entropy on the dev features, and the lowest of the grid
    with torch.no_grad():
        dev_loss = torch.nn.functional.cross_entropy(head(draw.dev.layer(L, "mean")), torch.tensor(draw.y_dev)).item()
    assert record.kept[0] == pytest.approx(dev_loss, abs=1e-4)
    for l2 in L2_GRID:
        _, other = fit_head(draw.train.layer(L, "mean"), draw.y_train, train.num_classes, draw.dev.layer(L, "mean"),
                            draw.y_dev, l2=(l2,))
        assert other.kept[0] >= record.kept[0] - 1e-6
    assert record.train_accuracy == pytest.approx(
        correct_per_item(head, draw.train.layer(L, "mean"), draw.y_train).float().mean().item())
    assert accuracy(head, fe.layer(L, "mean"), test.labels) > 0.6
    same, rec2 = fit_head_split(ft.layer(L, "mean"), train.labels, train.num_classes, dev_per_class=2, seed=0)
    assert torch.equal(same.classifier.weight, head.classifier.weight) and rec2.choice == record.choice
    with pytest.raises(ValueError, match="X_dev"):
        fit_head(ft.layer(L), train.labels, train.num_classes, ft.layer(L)[:, :5], train.labels)


def test_batched_probes_reach_a_sensible_accuracy_and_converge(intent_data):
    train, test, ft, fe = intent_data
    draw = _split(ft, train.labels)
    y = torch.tensor(test.labels)
    accs = (probe_layers(draw, train.num_classes, "mean").predict(fe.mean) == y).float().mean(1)
    assert len(accs) == ft.num_layers + 1 and max(accs) > 0.6
    probes = probe_layers(draw, train.num_classes, "cls")
    assert (probes.predict(fe.cls)[0] == y).float().mean() <= 0.2, "layer-0 [CLS] is one vector: chance level"
    assert all(r.status == CONVERGED for r in probes.records) and len(probes.records) == ft.num_layers + 1


def test_strategies_and_last_four_note(intent_data):
    train, test, ft, fe = intent_data
    assert last_k_layers(6) == ([3, 4, 5, 6], "layers 3..6")
    layers, note = last_k_layers(3)
    assert layers == [1, 2, 3] and "only 3" in note
    assert strategy_features(ft, "concat last four [CLS]").shape[1] == 4 * ft.cls.shape[-1]
    res = strategy_draws({0: _split(ft, train.labels, seed=0), 1: _split(ft, train.labels, seed=1)}, fe, test.labels,
                         train.num_classes, progress=False)
    assert set(STRATEGIES) == set(res.accuracy) and all(a.correct.shape == (2, len(test)) for a in res.accuracy.values())
    w = res.layer_weights
    assert w.shape == (2, ft.num_layers + 1) and torch.allclose(w.sum(1), torch.ones(2))
    assert all(r.status == CONVERGED for recs in res.records.values() for r in recs), "every family converges"
    with pytest.raises(ValueError, match="unknown strategy"):
        strategy_features(ft, "best")


def test_probe_draws_are_the_probes_of_each_draw(intent_data):
    train, test, ft, fe = intent_data
    C = train.num_classes
    draws = {s: _split(ft, train.labels, seed=s) for s in (0, 1)}
    result = probe_draws(draws, fe, test.labels, C, "mean", progress=False)
    assert len(result.runs) == ft.num_layers + 1 and result.runs[0].correct.shape == (2, len(test))
    assert result.predictions.shape == (ft.num_layers + 1, 2, len(test))
    for i, s in enumerate((0, 1)):
        assert torch.equal(result.predictions[:, i], probe_layers(draws[s], C, "mean").predict(fe.mean))
    assert len(result.records) == 2 * (ft.num_layers + 1)


def test_seeded_accuracy_intervals():
    from helpers.common.stats import seeds_items_ci

    one = SeededAccuracy(torch.tensor([[True, False, True, True] * 10]), (0,))
    assert one.interval() == accuracy_ci(one.correct[0])  # one seed: the exact interval over items
    two = SeededAccuracy(torch.tensor([[True] * 30 + [False] * 10, [True] * 36 + [False] * 4]), (0, 1))
    ci = two.interval()
    assert ci == seeds_items_ci(two.correct.double().numpy())  # seeds and items resampled together
    assert ci.estimate == pytest.approx(66 / 80)
    spread = two.seed_spread()
    assert (min(spread.values), max(spread.values)) == pytest.approx((0.75, 0.9)) and "2 seeds x 40 items" in two.describe()
    assert two.spread_summary() == "SD over seeds 10.6 pt, range 75.0-90.0%", two.spread_summary()
    assert one.spread_summary("draws") == "one draw"
    perfect = SeededAccuracy(torch.ones(1, 50, dtype=torch.bool), (0,))
    assert perfect.interval().low == pytest.approx(0.025 ** (1 / 50)), "a perfect score gets the exact bound, not [1, 1]"
    with pytest.raises(ValueError, match="n_seeds"):
        SeededAccuracy(torch.ones(2, 5, dtype=torch.bool), (0,))


def test_peak_layer_verdict_compares_every_layer_also_when_the_peak_is_last():
    rng = torch.Generator().manual_seed(0)
    outcome = lambda p: SeededAccuracy(torch.rand(1, 200, generator=rng) < p, (0,))  # noqa: E731
    runs = [outcome(0.2), outcome(0.9), outcome(0.88), outcome(0.95)]
    top, tied, verdicts = layers_tied_with_peak(runs)
    assert top == 3 and 0 not in tied and verdicts[0].kind == "lower"
    text = peak_layer_verdict(runs, "[CLS]")
    assert "peak at the last layer" in text and "Bonferroni over the 6 pairs of layers" in text
    same = [outcome(0.9)] * 3
    assert layers_tied_with_peak(same)[1] == [1, 2], "identical layers are never called lower"
    table = claims_markdown([("a | b", "x", "y")])
    assert table.splitlines()[2] == "| a \\| b | x | y |"
    with pytest.raises(ValueError, match="3 cells"):
        claims_markdown([("only", "two")])
    assert all(len(v) == 2 and v[1] for v in PUBLISHED_07.values())


def test_batched_probes_are_the_heads_fit_head_fits_alone(intent_data):
    """Every layer's probe, fitted in one batch with all the others, is the head fit_head fits on that
    layer alone (the problems share no parameter): the same L2 choice and, both converged, the same
    value of the objective -- computed here from each one's weights -- and the same answers."""
    train, test, ft, fe = intent_data
    C = train.num_classes
    draw = _split(ft, train.labels)
    y = torch.tensor(draw.y_train)
    for pooling in ("cls", "mean"):
        probes = probe_layers(draw, C, pooling)
        for l in (1, ft.num_layers):
            head, record = fit_head(draw.train.layer(l, pooling), draw.y_train, C, draw.dev.layer(l, pooling),
                                    draw.y_dev)
            assert record.choice == probes.records[l].choice
            lam = float(record.choice.split()[-1])
            Z = (draw.train.layer(l, pooling) - head.mu) / head.sigma

            def objective(W, b):  # mean cross-entropy + L2 penalty, W [H, C]
                return float(torch.nn.functional.cross_entropy(Z @ W + b, y) + lam / 2 * W.pow(2).sum())

            alone = objective(head.classifier.weight.detach().T, head.classifier.bias.detach())
            batched = objective(probes.weight[l], probes.bias[l])
            assert abs(alone - batched) < 1e-4, (alone, batched)
            agree = (predict(head, fe.layer(l, pooling)) == probes.predict(getattr(fe, pooling))[l]).float().mean()
            assert agree >= 0.97


def test_paired_comparisons_use_the_item_by_item_difference():
    best = torch.ones(100, dtype=torch.bool)
    best[:5] = False  # 95 right
    worse = best.clone()
    worse[5:15] = False  # the same items wrong, and 10 more: 85 right
    other = torch.ones(100, dtype=torch.bool)
    other[50:60] = False  # 90 right, but on other items
    assert torch.equal(per_item(SeededAccuracy(torch.stack([best, worse]), (0, 1))), (best.float() + worse.float()) / 2)
    comp = paired_comparison(worse, best)
    assert comp.method == "Tango's score interval, McNemar's test" and comp.difference.estimate == pytest.approx(-0.10)
    assert comp.difference.high < 0 and comp.p_value < 0.01, "never better on any item: the paired test sees it"
    wa, ba = accuracy_ci(worse), accuracy_ci(best)
    assert wa.high > ba.low, "while the two separate intervals overlap"
    assert paired_difference(other, best).high > 0, "wrong on other items: inconclusive"
    text = compare_paired({"best": best, "worse": worse, "other": other}, width=None)
    assert text.startswith("Highest accuracy: best, 95.0%") and "Bonferroni-adjusted over the 3 pairs" in text
    assert "inconclusive (not shown lower): other (-5.0 points" in text
    assert "lower (interval below 0): worse (-10.0 points" in text
    assert "no effect" not in text and "not distinguishable" not in text
    assert all(len(line) <= 110 for line in compare_paired({f"layer {i}": other for i in range(9)} | {"best": best}).splitlines())
    two = compare_two_paired("best", best, "worse", worse)
    assert "paired on the same 100 test items (Tango's score interval, McNemar's test): best higher than worse" in two
    assert "inconclusive" in compare_two_paired("other", other, "best", best)
    assert "inconclusive" in compare_paired({"a": best, "b": best.clone()}, margin=0.02), "100 items cannot show +/-2"
    many = torch.ones(3000, dtype=torch.bool)
    assert "equivalent within +/-2.0 points" in compare_paired({"a": many, "b": many.clone()}, margin=0.02)
    assert "right and wrong on exactly the same items" in compare_two_paired("a", best, "b", best.clone())
    with pytest.raises(ValueError, match="same test items"):
        paired_difference(best, best[:50])


def test_layer_weights_summary_and_finding():
    from helpers.classify.findings import layer_weights_finding

    w = torch.tensor([[0.1, 0.3, 0.6], [0.2, 0.35, 0.45]])
    text = layer_weights_summary(w)
    assert "0.15" in text and "0.10-0.20" in text and "0.45-0.60" in text
    assert text.splitlines()[-1].startswith("largest mean on layer 2 (0.53)")
    sentence, details = layer_weights_finding(w)
    assert sentence.startswith("The weighted-sum heads, with their pull toward equal weights chosen on the dev "
                               "split, put 53 % of their weight on layer 2 (mean over 2 draws")
    assert details == text.splitlines()
    with pytest.raises(ValueError, match="n_seeds"):
        layer_weights_summary(torch.ones(3))


def test_paired_difference_with_seeds_resamples_seeds_and_items():
    from helpers.common.stats import bootstrap_size, seeds_items_ci

    g = torch.Generator().manual_seed(0)
    a = SeededAccuracy(torch.rand(3, 80, generator=g) < 0.9, (0, 1, 2))
    b = SeededAccuracy(torch.rand(3, 80, generator=g) < 0.7, (0, 1, 2))
    comp = paired_comparison(a, b)
    assert comp.method == "bootstrap over seeds and items" and comp.n_seeds == 3
    assert comp.difference == seeds_items_ci((a.correct.double() - b.correct.double()).numpy(),
                                             n_boot=bootstrap_size(20))
    assert comp.difference90.low >= comp.difference.low and comp.difference90.high <= comp.difference.high
    one = b.correct[0]  # a single run is paired with every seed of the other
    assert paired_difference(a, one).estimate == pytest.approx(a.estimate - one.float().mean().item())
    with pytest.raises(ValueError, match="same number of seeds"):
        paired_difference(a, SeededAccuracy(b.correct[:2], (0, 1)))
    assert "bootstrap over seeds and items" in compare_paired({"a": a, "b": b})


def test_encode_batch_warns_when_it_truncates(tokenizer):
    from helpers.classify.compute import encode_batch

    long = " ".join(["word"] * 40)
    with pytest.warns(UserWarning, match="1 of 2 text"):
        enc = encode_batch(tokenizer, ["short one", long], max_length=16)
    assert enc["input_ids"].shape[1] == 16
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        encode_batch(tokenizer, ["short one"], max_length=16)
    with pytest.raises(ValueError, match="max_length"):
        encode_batch(tokenizer, ["a"], max_length=1)


def test_sorted_extraction_and_the_feature_bank_give_the_features_of_each_text(tokenizer, model, intent_data):
    from helpers.classify.compute import FeatureBank

    train, _, ft, _ = intent_data
    texts = train.texts[:12]
    plain = extract_features(tokenizer, model, texts, progress=False, batch_size=5)
    by_length = extract_features(tokenizer, model, texts, progress=False, batch_size=5, sort_by_length=True)
    assert torch.allclose(by_length.cls, plain.cls, atol=1e-5) and torch.allclose(by_length.mean, plain.mean, atol=1e-5)
    assert torch.allclose(by_length.pooler, plain.pooler, atol=1e-5)
    # a bank built from the texts twice over (duplicates stored once) returns any order asked for
    bank = FeatureBank(tokenizer, model, texts + texts[:4], max_length=32, batch_size=5, progress=False)
    assert len(bank) == len(set(texts))
    picked = bank.take([texts[7], texts[2], texts[7]])
    assert torch.allclose(picked.mean, plain.mean[:, [7, 2, 7]], atol=1e-5) and len(picked) == 3
    assert torch.allclose(picked.cls, ft.cls[:, [7, 2, 7]], atol=1e-5)  # the fixture's own extraction
    with pytest.raises(ValueError, match="not in this bank"):
        bank.take(["a sentence nobody drew"])
    with pytest.raises(ValueError, match="rows"):
        plain.select([0, 99])
    with pytest.warns(UserWarning, match="1 of 2 text"):  # once for the whole list, not once per batch
        extract_features(tokenizer, model, ["short", " ".join(["word"] * 40)], max_length=16, progress=False,
                         batch_size=1, sort_by_length=True)


@pytest.fixture(scope="module")
def banking_draws(tokenizer, model):
    """Four BANKING77 intents, two seeded 3-shot draws with a dev split of 2 per intent, and 5 test
    utterances per intent, from one bank."""
    from helpers.classify.compute import FeatureBank
    from helpers.common.data import load_banking77

    pool, test = load_banking77("train"), load_banking77("test")
    names = pool.names[:4]
    pool, test = pool.only(names), test.only(names).sample(5, seed=0)
    splits = {s: pool.split_off(2, seed=10 + s) for s in (0, 1)}
    draws = {s: (rest.sample(3, seed=s), dev) for s, (rest, dev) in splits.items()}
    bank = FeatureBank(tokenizer, model, test.texts + [t for d in draws.values() for split in d for t in split.texts],
                       max_length=64, progress=False)
    return ({s: Draw(bank.take(tr.texts), tr.labels, bank.take(dev.texts), dev.labels) for s, (tr, dev) in draws.items()},
            bank.take(test.texts), test)


def test_probes_and_heads_per_draw_train_each_seed_on_its_own_draw(banking_draws):
    from helpers.classify.strategies import head_predictions

    sets, fe, test = banking_draws
    assert not torch.equal(sets[0].train.mean, sets[1].train.mean), "two seeds draw two training sets"
    assert not set(map(tuple, sets[0].dev.mean[0].tolist())) & set(map(tuple, sets[0].train.mean[0].tolist())), \
        "the dev split never holds a training utterance"
    runs = probe_draws(sets, fe, test.labels, 4, "mean", progress=False).runs
    assert len(runs) == fe.num_layers + 1 and runs[0].seeds == (0, 1)
    L = fe.num_layers
    result = head_predictions(sets, fe, L, "mean", 4, test.labels, progress=False)
    assert result.predictions.shape == (2, len(test)) and len(result.records) == 2
    head, _ = fit_head(sets[1].train.layer(L, "mean"), sets[1].y_train, 4, sets[1].dev.layer(L, "mean"), sets[1].y_dev)
    assert torch.equal(result.predictions[1], predict(head, fe.layer(L, "mean")))
    assert torch.equal(result.runs[0].correct, runs[L].correct), "the layer-L probe is the layer-L head"
    with pytest.raises(ValueError, match="Draw"):
        probe_draws({0: (sets[0].train, sets[0].y_train)}, fe, test.labels, 4)


def test_strategy_draws_take_a_subset(banking_draws):
    sets, fe77, test77 = banking_draws
    two = strategy_draws(sets, fe77, test77.labels, 4, strategies=("last layer [CLS]", "mean pooling, last layer"),
                         progress=False)
    assert set(two.accuracy) == {"last layer [CLS]", "mean pooling, last layer"} and two.layer_weights is None
    with pytest.raises(ValueError, match="unknown strategies"):
        strategy_draws(sets, fe77, test77.labels, 4, strategies=("best",))


def test_top_confusions_and_the_confusion_subset_keep_every_count():
    from helpers.classify.confusions import confusion_matrix, confusion_subset, top_confusions

    y_true = [0, 0, 0, 1, 1, 2, 2, 3]
    runs = [[1, 1, 0, 0, 1, 3, 2, 3], [1, 0, 0, 0, 1, 3, 2, 2]]  # two runs' predictions, counted together
    cm = confusion_matrix(y_true, runs, 4)
    per_run = confusion_matrix(y_true, runs[0], 4) + confusion_matrix(y_true, runs[1], 4)
    assert cm.sum() == 16 and cm.tolist() == per_run.tolist()
    assert top_confusions(cm, k=3) == [(0, 1, 3), (1, 0, 2), (2, 3, 2)]
    assert all(n > 0 for *_, n in top_confusions(cm, k=50)) and top_confusions(np.eye(3, dtype=int)) == []
    sub = confusion_subset(cm, [1, 0])
    assert sub.tolist() == [[2, 2, 0], [3, 3, 0]]
    assert (sub.sum(1) == cm[[1, 0]].sum(1)).all(), "the last column keeps each row's total"
    assert confusion_subset(cm, [2]).tolist() == [[2, 2]]
    with pytest.raises(ValueError, match="distinct class ids"):
        confusion_subset(cm, [0, 0])
    with pytest.raises(ValueError, match="positive int"):
        top_confusions(cm, k=0)


def test_compare_with_adjusts_over_its_comparisons():
    from helpers.classify.comparisons import compare_with

    ref = torch.ones(100, dtype=torch.bool)
    others = {}
    for i in range(3):  # each wrong on 6 items the reference gets right: exact p = 2 / 2**6 = 0.031 alone
        worse = ref.clone()
        worse[6 * i:6 * i + 6] = False
        others[f"w{i}"] = worse
    alone = compare_two_paired("w0", others["w0"], "ref", ref)
    assert "w0 lower than ref" in alone and "p = 0.014" in alone
    text = compare_with(others | {"ref": ref}, "ref", width=None)
    assert "Bonferroni over the 3 comparisons" in text and "98.33 % interval" in text
    assert text.count("lower than ref") == 3 and "Bonferroni-adjusted p = 0.043" in text  # 3 x 0.014
    with pytest.raises(ValueError, match="reference"):
        compare_with(others, "ref")


def test_layers_tied_with_any_layer_and_draws_in_the_description():
    from helpers.classify.findings import layers_tied_with

    base = torch.zeros(5, 300, dtype=torch.bool)
    base[:, :200] = True  # 200 of 300 right in every run (5 seeds: the small-sample rule leaves room)
    better = base.clone()
    better[:, 200:240] = True  # right on the same items and 40 more
    same = base.clone()
    same[:, :2], same[:, 200:202] = False, True  # 2 items traded: no gap to resolve
    seeds = (0, 1, 2, 3, 4)
    runs = [SeededAccuracy(base, seeds), SeededAccuracy(better, seeds), SeededAccuracy(same, seeds)]
    tied, verdicts = layers_tied_with(runs, 0)  # compared with a layer that is not the peak
    assert verdicts[1].kind == "higher" and verdicts[2].kind == "inconclusive" and tied == [1, 2]
    assert layers_tied_with_peak(runs)[:2] == (1, [])
    with pytest.raises(ValueError, match="layer must be"):
        layers_tied_with(runs, 3)
    assert "5 draws x 300 items; SD over draws" in runs[1].describe("draws")
    assert "one draw" in SeededAccuracy(better[:1], (0,)).describe("draws")


def test_remembered_comparisons_follow_the_outcomes_not_the_objects():
    g = torch.Generator().manual_seed(2)
    a = SeededAccuracy(torch.rand(3, 60, generator=g) < 0.9, (0, 1, 2))
    b = SeededAccuracy(torch.rand(3, 60, generator=g) < 0.6, (0, 1, 2))
    first = paired_comparison(a, b)
    assert paired_comparison(SeededAccuracy(a.correct.clone(), a.seeds), b) == first  # same outcomes, same answer
    a.correct[:] = b.correct  # the outcomes change: the comparison is computed anew
    again = paired_comparison(a, b)
    assert again.difference.estimate == 0 and again.p_value == 1.0 and again != first
    assert a.interval() == SeededAccuracy(b.correct.clone(), b.seeds).interval()


@pytest.mark.slow  # several seconds: runs in the --all tier (CI)
def test_the_scalar_mix_is_pulled_toward_equal_weights_by_a_strength_chosen_on_dev():
    """Issue 43: the weighted-sum head's corner was the optimum of its L2 penalty. Four standardized
    layers, each the same signal plus its own noise (so an even mix is the better feature): without a
    pull the penalised fit still moves off equal weights; a strong pull keeps them near equal; the
    dev split chooses among the pulls of MIX_GRID and the record names the choice."""
    from helpers.classify.compute import MIX_GRID, _fit_weighted, _weighted_problems

    g = torch.Generator().manual_seed(0)
    n, k, h, c = 300, 4, 8, 3
    y = torch.randint(c, (n,), generator=g)
    signal = torch.nn.functional.one_hot(y, c).double() @ torch.randn(c, h, generator=g, dtype=torch.float64)
    noise = torch.tensor([0.5, 1.0, 1.5, 2.0], dtype=torch.float64)[None, :, None]
    X = signal[:, None, :] + noise * torch.randn(n, k, h, generator=g, dtype=torch.float64)
    X = (X - X.mean(0)) / X.std(0)
    fit, dev = X[:200], X[200:]
    s, *_ = _weighted_problems(fit, y[:200], dev, y[200:], c, [(1e-2, 0.0), (1e-2, 10.0)], tol=1e-6, max_iter=500)
    free_w, held_w = torch.softmax(s[0], -1), torch.softmax(s[1], -1)
    uniform = torch.full((k,), 1 / k, dtype=torch.float64)
    assert (held_w - uniform).abs().max() < 0.02
    assert (free_w - uniform).abs().max() > (held_w - uniform).abs().max()
    assert int(free_w.argmax()) == 0  # the least noisy layer leads
    kw = dict(num_classes=c, mu=torch.zeros(k, h), sigma=torch.ones(k, h), l2=(1e-2,), run="mix", tol=1e-6,
              max_iter=500)
    chosen, record = _fit_weighted(fit, y[:200], dev, y[200:], **kw)
    assert "pull" in record.choice and any(f"pull {m:g}" in record.choice for m in MIX_GRID)
    assert "then pull" in record.grid and record.status == CONVERGED
