"""Worked solutions for lesson 06 (plain functions; the tests run them through the checkers)."""

from helpers.common.stats import cluster_replicates, family_level
from helpers.layerwalk.compute import cluster_labels, layer_norms_per_token


def solution_1(traces) -> float:
    """Width of the sentence-level interval over the token-level one, at layer 0."""
    norms = layer_norms_per_token(traces)[:, 0].double().cpu().numpy()
    by_token = cluster_replicates(norms).interval(0.95)
    by_sentence = cluster_replicates(norms, cluster_labels(traces)).interval(0.95)
    return by_sentence.width / by_token.width


def solution_2(traces) -> list[int]:
    """Layers whose step of the mean length is surely a rise, the L steps read together."""
    norms = layer_norms_per_token(traces).double().cpu().numpy()
    steps = cluster_replicates(norms, cluster_labels(traces)).steps()
    return [l + 1 for l, iv in enumerate(steps.intervals(family_level(steps.k))) if iv.low > 0]


def solution_3() -> float:
    """One accuracy point, fixed before looking."""
    return 0.01


REFLECTION = """Two things: a margin, fixed before measuring, of what difference would not
matter; and an interval of the difference (paired, on the same sentences) that lies inside
it -- the equivalence test. "We cannot tell" only says the data are too few or too noisy to
decide; the two layers may still differ by a lot."""
