"""Worked solutions for lesson 06 (plain functions; the tests run them through the checkers)."""

from helpers.common.stats import cluster_replicates, family_level, intra_cluster_correlation
from helpers.layerwalk.compute import attention_entropy_per_token, cluster_labels


def solution_1(traces) -> tuple[float, float]:
    """In the last layer: the sentence-level interval's width over the token-level one, and the
    intra-sentence correlation."""
    spread = attention_entropy_per_token(traces)[:, -1].double().cpu().numpy()
    by_token = cluster_replicates(spread).interval(0.95)
    by_sentence = cluster_replicates(spread, cluster_labels(traces)).interval(0.95)
    return by_sentence.width / by_token.width, intra_cluster_correlation(spread, cluster_labels(traces))


def solution_2(traces) -> list[int]:
    """Layers whose step of the mean attention spread is surely a rise, the L - 1 steps read together."""
    spread = attention_entropy_per_token(traces).double().cpu().numpy()
    steps = cluster_replicates(spread, cluster_labels(traces)).steps()
    return [l + 2 for l, iv in enumerate(steps.intervals(family_level(steps.k))) if iv.low > 0]


def solution_3() -> float:
    """One accuracy point, fixed before looking."""
    return 0.01


REFLECTION = """Two things: a margin, fixed before measuring, of what difference would not
matter; and an interval of the difference (paired, on the same sentences) that lies inside
it -- the equivalence test. "We cannot tell" only says the data are too few or too noisy to
decide; the two layers may still differ by a lot."""
