"""Calibration of every verdict function the lessons use, on simulated data whose truth is known.

Each test draws many data sets from a design the lessons use, with a known true value, runs the
course's own function (helpers/common/stats.py and the verdict functions built on it) and counts:

* **coverage** of an interval: how often it holds the true value (nominal 95 %);
* **type-I error** of a difference test: how often it says "higher"/"lower" when the truth is 0
  (nominal 5 %);
* **false "equivalent"**: how often an equivalence test says "equivalent" when the true
  difference equals the margin, the least favourable case (nominal <= 5 %).

Tolerances. A rate estimated from R simulated data sets has Monte Carlo standard error
sqrt(p (1 - p) / R): 0.0034 at p = 0.05 and 0.0049 at p = 0.95 with R = 2,000 (0.0015 and 0.0022
with R = 10,000). Every bound below allows 3 Monte Carlo SEs (a seeded test that passes is not
luck: a method that is truly at the bound passes in 99.9 % of seeds) plus, for the approximate
methods, a stated **method allowance**: 1.5 points for Tango's asymptotic score interval (its
coverage dips to about 93.7 % at n = 385 when all changes go one way) and 2.5 points for bootstrap
intervals with fewer than 30 units (1.5 from 30 on): under skew a bootstrap over a dozen units
falls short of nominal even with the course's small-sample rule (the expanded percentile and the t
floor), though by far less than the plain percentile interval, which the tests show too.
Equivalence and type-I rates get no method allowance beyond 0.5 points: those are the errors a
lesson's verdict would print.

The designs: paired right/wrong outcomes of n = 24 ... 385 items with few or many items that
change (lessons 10-14), tokens clustered in 6-69 sentences (07-09, 15), random pairs of sentences
(the random-pair baselines of 07, 09, 15), seeds x items (10, 11, 14), a family of layers ranked
against the extreme one and steps between layers (03, 07-09), and one order against random orders (12).
Everything is seeded and vectorised; the whole file runs in well under a minute on 2 cores.
"""

import numpy as np
import pytest

from helpers.common import stats
from helpers.common.calibration import mc_se, conditional_false_equivalence, paired_counts
from helpers.common.stats import (cluster_replicates, mcnemar, mcnemar_p, pair_replicates, rank_layers, rank_p_value,
                                  seeds_items_replicates, step_verdicts, tango_interval)

ALPHA = 0.05


def at_most(rate: float, nominal: float, r: int, allowance: float = 0.005) -> bool:
    return rate <= nominal + allowance + 3 * mc_se(nominal, r)


def at_least(rate: float, nominal: float, r: int, allowance: float) -> bool:
    return rate >= nominal - allowance - 3 * mc_se(nominal, r)


# Designs of the lessons: (items, true discordance in each direction).
PAIRED_DESIGNS = [(24, 0.1, 0.02), (77, 0.05, 0.05), (77, 0.1, 0.02), (154, 0.02, 0.01), (385, 0.01, 0.0),
                  (385, 0.003, 0.003), (385, 0.2, 0.1)]


@pytest.mark.parametrize("n, p12, p21", PAIRED_DESIGNS)
def test_tango_interval_covers_the_true_difference(n, p12, p21):
    r = 10000
    b, c = paired_counts(np.random.default_rng(n), n, p12, p21, r)
    low, high = tango_interval(b, c, n, 0.95)
    truth = p12 - p21
    coverage = float(((low <= truth) & (truth <= high)).mean())
    assert at_least(coverage, 0.95, r, allowance=0.015), f"coverage {coverage:.3f} at n={n}, {p12}/{p21}"


@pytest.mark.parametrize("n, p", [(24, 0.05), (77, 0.02), (154, 0.05), (385, 0.005), (385, 0.1)])
def test_mcnemar_type_one_error_at_no_difference(n, p):
    r = 10000
    b, c = paired_counts(np.random.default_rng(n + 1), n, p, p, r)
    rate = float((mcnemar_p(b, c) < ALPHA).mean())
    assert at_most(rate, ALPHA, r), f"type-I error {rate:.3f} at n={n}, discordance {p} each way"


# (items, margin): lesson 12's head ablation (385 items, 1 point) and smaller sets.
EQUIVALENCE_DESIGNS = [(385, 0.01), (385, 0.02), (154, 0.02), (77, 0.05), (1000, 0.01)]


@pytest.mark.parametrize("n, margin", EQUIVALENCE_DESIGNS)
def test_tost_rarely_calls_a_difference_at_the_margin_equivalent(n, margin):
    rng, r = np.random.default_rng(n + 2), 4000
    for p21 in (0.0, 0.002, 0.005, 0.01, 0.03):  # few or many items change, the net change = the margin
        for sign in (1, -1):
            b, c = paired_counts(rng, n, p21 + margin, p21, r)
            if sign < 0:
                b, c = c, b
            low, high = tango_interval(b, c, n, 0.90)
            rate = float(((low > -margin) & (high < margin)).mean())
            assert at_most(rate, ALPHA, r), f"'equivalent' in {rate:.1%} at a true difference of {sign * margin}"


def test_the_old_conditional_interval_fails_the_same_check():
    """The interval the course used before this check existed (conditional on the number of items
    that changed) calls a one-point change "equivalent within one point" in far more than 5 % of
    samples when few items change: the failure this file was written to catch."""
    assert conditional_false_equivalence(385, 0.01, r=4000, seed=7) > 0.3


def test_the_printed_equivalence_verdict_is_calibrated_end_to_end():
    """The path a lesson prints: per-item 0/1 outcomes -> mcnemar -> verdict with a 1-point margin,
    at a true difference of exactly 1 point on 385 items, with few items changing (the case the
    old conditional interval called "equivalent" in about 40 % of samples)."""
    rng, r, n, margin = np.random.default_rng(11), 400, 385, 0.01
    calls = []
    for _ in range(r):
        base = rng.random(n) < 0.9
        hurt = rng.random(n) < margin / 0.9  # ablation breaks about 1 % of the items, fixes none
        after = base & ~hurt
        calls.append(mcnemar(base, after).verdict("unchanged", "ablated", margin=margin).kind == "equivalent")
    rate = float(np.mean(calls))
    assert at_most(rate, ALPHA, r), f"'equivalent' in {rate:.1%} of samples at a true difference of 1 point"


@pytest.mark.slow  # about 40 s: the --all tier (CI)
def test_outcome_changes_family_is_calibrated():
    """Lesson 12's verdicts over a family of interventions (heads): with every head truly at the
    margin, how often does any head read "equivalent"; with every head truly harmless (difference 0),
    how often does any head read "lowers"? Both at most alpha: the family is adjusted."""
    from helpers.interventions.compute import outcome_changes

    rng, r, n, k, margin = np.random.default_rng(12), 600, 385, 12, 0.01
    any_eq = any_diff = 0
    for _ in range(r):
        base = (rng.random(n) < 0.9).astype(float)
        at_margin = base * (rng.random((k, n)) >= margin / 0.9)
        any_eq += any(c.kind == "equivalent" for c in outcome_changes(at_margin, base, range(k), margin=margin))
        flips = rng.random((k, n)) < 0.01  # items that flip either way, no net change
        swapped = np.where(flips, 1 - base, base)
        any_diff += any(c.verdict.differs for c in outcome_changes(swapped, base, range(k)))
    # bounds from the Monte Carlo error alone (three standard errors at r = 600: 7.7 %), no allowance
    assert at_most(any_eq / r, ALPHA, r, allowance=0.0), f"a head called equivalent in {any_eq / r:.1%}"
    assert at_most(any_diff / r, ALPHA, r, allowance=0.0), f"a head called different in {any_diff / r:.1%}"


def _skewed(rng, shape):
    """Mean 0, SD 1, skewness 1 (a shifted gamma): like the lessons' shares and cosines."""
    return (rng.gamma(4.0, 1.0, size=shape) - 4.0) / 2.0


@pytest.mark.parametrize("units", [6, 12, 30, 69])
@pytest.mark.parametrize("skewed", [False, True])
def test_cluster_bootstrap_covers_with_the_small_sample_rule(units, skewed):
    """Tokens in sentences (07-09, 15): sentences of 3-29 tokens, half the variance between
    sentences. R = 2,000 data sets at once: one column each, the same sentence layout."""
    rng, r = np.random.default_rng(units + 100 * skewed), 2000
    draw = (lambda shape: _skewed(rng, shape)) if skewed else (lambda shape: rng.normal(size=shape))
    sizes = rng.integers(3, 30, units)
    labels = np.repeat(np.arange(units), sizes)
    values = draw((units, r))[labels] + draw((labels.size, r))  # truth: mean 0
    reps = cluster_replicates(values, labels, n_boot=2000, seed=3)
    coverage = np.mean([iv.contains(0.0) for iv in reps.intervals(0.95)])
    allowance = 0.025 if units < stats.SMALL_SAMPLE else 0.015
    assert at_least(coverage, 0.95, r, allowance), f"coverage {coverage:.3f} with {units} sentences"
    # the difference test at 0 (every column's truth): its type-I error
    rate = float((reps.p_values() < ALPHA).mean())
    assert at_most(rate, ALPHA, r, allowance=allowance), f"type-I error {rate:.3f} with {units} sentences"
    if units <= 12:  # the percentile interval alone is the one that falls short
        low, high = np.quantile(reps.boots, [0.025, 0.975], axis=0)
        assert ((low <= 0) & (0 <= high)).mean() < coverage


@pytest.mark.parametrize("units", [12, 30, 69])
def test_pair_bootstrap_resamples_sentences_not_pairs(units):
    """Random-pair baselines: 500 pairs of tokens from two different sentences each; a sentence's
    own offset enters every pair it is in. Resampling pairs one by one ignores that and covers far
    too rarely; the pigeonhole bootstrap over sentences covers."""
    rng, r = np.random.default_rng(200 + units), 2000
    first = rng.integers(0, units, 500)
    second = (first + rng.integers(1, units, 500)) % units
    values = _skewed(rng, (units, r))[first] + _skewed(rng, (units, r))[second] + rng.normal(size=(500, r))
    reps = pair_replicates(values, first, second, n_boot=2000, seed=4)
    coverage = np.mean([iv.contains(0.0) for iv in reps.intervals(0.95)])
    allowance = 0.025 if units < stats.SMALL_SAMPLE else 0.015
    assert at_least(coverage, 0.95, r, allowance), f"coverage {coverage:.3f} over {units} sentences"
    naive = cluster_replicates(values, n_boot=2000, seed=4)  # each pair its own unit: wrong here
    assert np.mean([iv.contains(0.0) for iv in naive.intervals(0.95)]) < 0.8


@pytest.mark.parametrize("seed_sd, item_sd", [(1.0, 0.1), (0.2, 1.0), (1.0, 1.0)])
def test_seeds_by_items_bootstrap_covers(seed_sd, item_sd):
    """Strategies run with 5 seeds on 200 test items (10, 11, 14): seeds, items and their
    interaction all vary; the two-way bootstrap with the small-sample rule on the seeds covers."""
    rng, r = np.random.default_rng(int(10 * seed_sd + item_sd)), 400
    covered = 0
    for i in range(r):
        values = seed_sd * rng.normal(size=(5, 1)) + item_sd * rng.normal(size=(1, 200)) + rng.normal(size=(5, 200))
        covered += seeds_items_replicates(values, n_boot=1000, seed=i).interval(0.95).contains(0.0)
    assert at_least(covered / r, 0.95, r, allowance=0.025), f"coverage {covered / r:.3f}"


@pytest.mark.slow  # 30 s: the --all tier (CI)
@pytest.mark.parametrize("nested", [False, True])
def test_seeds_by_items_bootstrap_covers_zero_one_outcomes(nested):
    """Right/wrong outcomes, 5 seeds x 400 items, as lessons 10 and 11 store them: each seed's model
    has its own accuracy around the truth, and each item its own difficulty. Crossed: every seed
    is tested on the same items. Nested (lesson 11's draws): every seed draws its own items (new
    intents, new test utterances), so a column is not one item across seeds. The two-way bootstrap
    covers the true accuracy in both."""
    from scipy.special import expit, logit

    rng, r, truth = np.random.default_rng(17 + nested), 400, 0.75
    covered = 0
    for i in range(r):
        seed_effect = rng.normal(0, 0.3, size=(5, 1))
        items = rng.normal(0, 1.0, size=(5, 400)) if nested else np.repeat(rng.normal(0, 1.0, size=(1, 400)), 5, 0)
        p = expit(logit(truth) + seed_effect + items)
        correct = (rng.random((5, 400)) < p).astype(float)
        # the truth of this design: the mean of p over seeds and items, in expectation
        covered += seeds_items_replicates(correct, n_boot=1000, seed=i).interval(0.95).contains(TRUE_MEAN)
    assert at_least(covered / r, 0.95, r, allowance=0.025), f"coverage {covered / r:.3f}"


def _true_mean_accuracy(n: int = 2_000_000) -> float:
    """E[expit(logit(0.75) + seed + item)], seed ~ N(0, 0.3), item ~ N(0, 1): by simulation."""
    from scipy.special import expit, logit

    rng = np.random.default_rng(99)
    return float(expit(logit(0.75) + rng.normal(0, 0.3, n) + rng.normal(0, 1.0, n)).mean())


TRUE_MEAN = _true_mean_accuracy()


def test_bonferroni_family_covers_all_layers_at_once():
    """Six layers measured on the same 30 sentences (correlated columns): the family's intervals
    (99.17 % each) hold all six true values together in >= 95 % of data sets."""
    rng, r, units = np.random.default_rng(300), 2000, 30
    labels = np.repeat(np.arange(units), rng.integers(3, 30, units))
    shared = rng.normal(size=(units, r))[labels]
    cover_all = np.ones(r, dtype=bool)
    for layer in range(6):
        values = shared + _skewed(rng, (labels.size, r))
        ivs = cluster_replicates(values, labels, n_boot=stats.bootstrap_size(6), seed=layer).intervals(
            stats.family_level(6))
        cover_all &= np.array([iv.contains(0.0) for iv in ivs])
    assert at_least(float(cover_all.mean()), 0.95, r, allowance=0.015)


def test_bootstrap_equivalence_at_the_margin_is_rare():
    """The TOST path of the bootstrap verdicts (replicate_verdicts with a margin): a true difference
    exactly at the margin reads "equivalent" in at most alpha of the data sets."""
    rng, r, units, margin = np.random.default_rng(301), 2000, 40, 0.3
    labels = np.repeat(np.arange(units), rng.integers(3, 12, units))
    values = margin + rng.normal(size=(units, r))[labels] * 0.5 + rng.normal(size=(labels.size, r))
    reps = cluster_replicates(values, labels, n_boot=2000, seed=5)
    d95, d90 = reps.intervals(0.95), reps.intervals(stats.equivalence_level(1))
    kinds = [stats.verdict(a, margin=margin, equivalence_interval=b).kind for a, b in zip(d95, d90)]
    rate = kinds.count("equivalent") / r
    assert at_most(rate, ALPHA, r), f"'equivalent' in {rate:.1%} at the margin"


def test_rank_layers_calls_no_layer_different_when_all_are_alike():
    """The extreme layer is picked by the data, then compared with the others: with every layer
    truly alike, how often is some layer declared different from the extreme (the family-wise error)?
    And how often does a step between consecutive layers read as a rise or fall? Both at most alpha."""
    rng, r, units, k = np.random.default_rng(302), 300, 30, 5
    labels = np.repeat(np.arange(units), rng.integers(3, 15, units))
    wrong_rank = wrong_step = 0
    for i in range(r):
        values = rng.normal(size=(units, 1))[labels] + _skewed(rng, (labels.size, k))
        wrong_rank += len(rank_layers(values, clusters=labels, seed=i, n_boot=2000).tied) < k
        wrong_step += any(v.differs for v in step_verdicts(values, clusters=labels, seed=i, n_boot=2000))
    assert at_most(wrong_rank / r, ALPHA, r, allowance=0.01), f"a layer called different in {wrong_rank / r:.1%}"
    assert at_most(wrong_step / r, ALPHA, r, allowance=0.01), f"a step called a change in {wrong_step / r:.1%}"


def test_rank_layers_with_a_random_pair_control_keeps_its_error_rate():
    """Lesson 07's turn ranking: token values minus a random-pair control drawn from the same
    sentences, both resampled with one draw of sentences. No true difference between columns."""
    rng, r, units, k = np.random.default_rng(303), 200, 20, 4
    labels = np.repeat(np.arange(units), rng.integers(3, 15, units))
    first = rng.integers(0, units, 300)
    second = (first + rng.integers(1, units, 300)) % units
    wrong = 0
    for i in range(r):
        offset = rng.normal(size=units)
        values = offset[labels, None] + rng.normal(size=(labels.size, k))
        control = (offset[first] + offset[second])[:, None] / 2 + rng.normal(size=(300, k))
        ranking = rank_layers(values, clusters=labels, control=control, control_units=(first, second), seed=i,
                              n_boot=2000)
        wrong += len(ranking.tied) < k
    assert at_most(wrong / r, ALPHA, r, allowance=0.01), f"a column called different in {wrong / r:.1%}"


def test_one_order_against_random_orders_has_its_nominal_error():
    """Lesson 12's pruning order against R random orders: when the order is just one more random
    order, the rank p-value is below alpha in at most alpha of the cases (it is exact)."""
    rng, r = np.random.default_rng(304), 4000
    curves = _skewed(rng, (r, 101))  # each row: one order's score and 100 random orders'
    p = np.array([rank_p_value(row[0], row[1:]) for row in curves])
    assert at_most(float((p < ALPHA).mean()), ALPHA, r)
