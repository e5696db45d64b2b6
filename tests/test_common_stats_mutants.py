"""Wrong methods must fail the calibration tests (issue 44).

A calibration test that every method passes proves nothing. Each named wrong method below -- the
mistakes a statistician would expect in code like the course's -- is run through the same kind of
simulation as ``tests/test_common_stats_calibration.py``, beside the course's method, and must
fail where the course's passes. Bounds come from the Monte Carlo error (three standard errors of
the simulated rate), not from slack. The floor regime (an interval that excludes 0 beside a p that
cannot go below alpha) is caught by ``test_no_verdict_contradicts_its_own_p_in_random_cluster_designs``
in ``tests/test_common_stats.py``.

| wrong method | caught by |
| --- | --- |
| tokens resampled one by one (the wrong unit) | coverage of a clustered mean |
| plain percentile interval with few units (no small-sample rule) | coverage at 12 units |
| an interval 15 % too narrow | coverage at 40 units |
| random pairs resampled one by one (not by sentence) | coverage of a random-pair mean |
| seed variance ignored (items resampled, seeds pooled) | coverage of a seeds x items accuracy |
| Wald interval for paired right/wrong outcomes | coverage with few items |
| the conditional interval for paired outcomes | false "equivalent" at the margin |
| patched pairs resampled one by one (not by word) | coverage of a patched share (0/1, clustered) |
"""

import numpy as np

from helpers.common.calibration import (cluster_coverage, clustered_values, mc_se, conditional_false_equivalence,
                                        pair_coverage, paired_counts, paired_coverage, paired_false_equivalence)
from helpers.common.stats import cluster_replicates, seeds_items_ci

LEVEL = 0.95


def covers(rate: float, r: int, level: float = LEVEL) -> bool:
    """A coverage within three Monte Carlo standard errors of the nominal level (or above it)."""
    return rate >= level - 3 * mc_se(level, r)


def test_resampling_tokens_instead_of_sentences_fails_coverage():
    r = 400
    assert covers(cluster_coverage(40, r), r)
    assert not covers(cluster_coverage(40, r, by_sentence=False), r)


def test_the_plain_percentile_interval_with_few_units_fails_coverage():
    r = 1500
    assert covers(cluster_coverage(12, r), r)
    assert not covers(cluster_coverage(12, r, small_sample_rule=False), r)


def test_an_interval_15_percent_too_narrow_fails_coverage():
    r = 1500
    values, labels = clustered_values(np.random.default_rng(7), 40, r)
    reps = cluster_replicates(values, labels, n_boot=1000, seed=7)
    right = np.array([iv.low <= 0 <= iv.high for iv in reps.intervals(LEVEL)])
    narrow = np.array([iv.estimate - 0.85 * (iv.estimate - iv.low) <= 0 <= iv.estimate + 0.85 * (iv.high - iv.estimate)
                       for iv in reps.intervals(LEVEL)])
    assert covers(right.mean(), r) and not covers(narrow.mean(), r)


def test_resampling_random_pairs_one_by_one_fails_coverage():
    r = 400
    assert covers(pair_coverage(40, r), r)
    assert not covers(pair_coverage(40, r, by_sentence=False), r)


def test_ignoring_the_seed_variance_fails_coverage():
    """Five seeds x 300 items; each seed's model has its own accuracy around the truth. Pooling the
    seeds and resampling only the items treats the seed-to-seed spread as if it did not exist."""
    rng = np.random.default_rng(3)
    r, truth, hits_right, hits_wrong = 300, 0.8, 0, 0
    for i in range(r):
        per_seed = np.clip(truth + rng.normal(0, 0.03, size=5), 0, 1)
        correct = (rng.random((5, 300)) < per_seed[:, None]).astype(float)
        right = seeds_items_ci(correct, n_boot=500, seed=i)
        hits_right += right.low <= truth <= right.high
        pooled = cluster_replicates(correct.mean(0), n_boot=500, seed=i).interval(LEVEL)  # items only
        hits_wrong += pooled.low <= truth <= pooled.high
    assert covers(hits_right / r, r) and not covers(hits_wrong / r, r)


def test_the_wald_interval_for_paired_outcomes_fails_coverage_with_few_items():
    r, n, p12, p21 = 4000, 30, 0.06, 0.02
    assert covers(paired_coverage(n, p12, p21, r), r)
    b, c = paired_counts(np.random.default_rng(0), n, p12, p21, r)
    d = (b - c) / n
    se = np.sqrt(np.maximum((b + c) / n - d ** 2, 0) / n)
    wald = ((d - 1.96 * se <= p12 - p21) & (p12 - p21 <= d + 1.96 * se)).mean()
    assert not covers(wald, r)


def test_the_conditional_interval_calls_equivalence_at_the_margin_far_too_often():
    r, alpha = 4000, 0.05
    limit = alpha + 3 * mc_se(alpha, r)
    assert paired_false_equivalence(385, 0.01, 0.0, r) <= limit
    assert conditional_false_equivalence(385, 0.01, 0.0, r) > limit


def test_resampling_patched_pairs_instead_of_words_fails_coverage():
    """Lesson 12's shares: 12 words x 25 patched pairs (0/1), words differing in how often they
    follow. Resampling the words covers the true share; treating every pair as its own word does not."""
    import torch

    from helpers.interventions.compute import share_verdicts, word_cluster_shares

    rng, r, truth = np.random.default_rng(11), 300, 0.7
    right = wrong = 0
    for _ in range(r):
        own = rng.beta(truth * 8.3, (1 - truth) * 8.3, size=12)  # sd about 0.15 between words
        follows = (rng.random((12, 25)) < own[:, None]).astype(np.float32)
        by_word = {f"w{k}": {"pairs": [(i, 0) for i in range(25)], "follows": torch.tensor(f[:, None])}
                   for k, f in enumerate(follows)}
        by_pair = {f"p{k}": {"pairs": [(0, 0)], "follows": torch.tensor([[v]])} for k, v in enumerate(follows.ravel())}
        right += share_verdicts(*word_cluster_shares(by_word, n_boot=1000))[0].share.contains(truth)
        wrong += share_verdicts(*word_cluster_shares(by_pair, n_boot=1000))[0].share.contains(truth)
    assert covers(right / r, r) and not covers(wrong / r, r), (right / r, wrong / r)
