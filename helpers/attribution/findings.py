"""Lesson 13 (:mod:`helpers.attribution`): the lesson in plain words, beside the numbers they phrase
(:func:`completeness_finding`, :func:`faithfulness_finding`, :func:`rollout_finding`) and its
stories (:data:`STORIES`).
"""

from __future__ import annotations

from helpers.attribution.erasure import Faithfulness
from helpers.attribution.gradients import IG_TOLERANCE, IntegratedGradients
from helpers.common.stats import Verdict


FAITHFUL_WORDS = {
    "comprehensiveness": {"higher": "more comprehensive", "lower": "LESS comprehensive"},
    "sufficiency": {"lower": "more sufficient", "higher": "LESS sufficient"},
}


def faithful_word(v: Verdict, key: str) -> str:
    """The verdict of a method against the random ranking in the metric's own words ("more
    comprehensive", "LESS sufficient", "cannot tell")."""
    return FAITHFUL_WORDS[key].get(v.kind, "cannot tell")


# -- the lesson's findings in plain words, and its claims table -------------------------------------------


def _names(items) -> str:
    items = list(items)
    if not items:
        return "none"
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def completeness_finding(ig: IntegratedGradients, faith: Faithfulness | None = None,
                         items: str = "utterances") -> tuple[str, list]:
    """Does Integrated Gradients' sum reach ``f(x) - f(x')`` on the lesson's sentence (and on the
    test items of ``faith``: ``items`` is the benchmark's word for them, "headlines" for THUCNews)?
    Plain sentence and "How we know" lines."""
    sentence = (f"Integrated Gradients' attributions add up to the change of the logit on the lesson's sentence "
                f"after {ig.steps} steps" if ig.converged else
                f"After {ig.steps} steps Integrated Gradients' attributions still miss the change of the logit on the "
                "lesson's sentence by more than the tolerance")
    details = [f"f(x) - f(x') = {ig.gap:.3f}; convergence delta {ig.delta:+.2e} (tolerance {IG_TOLERANCE:.0%} of "
               "|f(x) - f(x')|); steps tried: " + ", ".join(f"{n} ({d:+.1e})" for n, d in ig.history)]
    if faith is not None:
        below = sum(g < IG_TOLERANCE for g in faith.ig_gaps)
        sentence += f", and on {below} of the {len(faith)} test {items} of the faithfulness test"
        details.append(f"test {items}: largest |delta| / |f(x) - f(x')| = {max(faith.ig_gaps):.2%}")
    return sentence + ".", details


def faithfulness_finding(comprehensiveness: dict, sufficiency: dict, faith: Faithfulness,
                         items: str = "utterances") -> tuple[str, list]:
    """Which methods beat a random choice of tokens (:func:`versus_random` for both metrics), in
    plain words, and the "How we know" lines; ``items`` names the test items ("headlines")."""
    better_c = [m for m, v in comprehensiveness.items() if v.kind == "higher"]
    better_s = [m for m, v in sufficiency.items() if v.kind == "lower"]
    worse = [m for m in faith.methods if comprehensiveness[m].kind == "lower" or sufficiency[m].kind == "higher"]
    unsure = [m for m in faith.methods if m not in better_c and m not in better_s and m not in worse]
    sentence = (f"On {len(faith)} test {items}, removing the top tokens hurts the prediction more than removing "
                f"random ones for {_names(better_c)}; keeping only the top tokens keeps it better than random ones "
                f"for {_names(better_s)}")
    if worse:
        sentence += f"; {_names(worse)} did worse than random on at least one of the two"
    if unsure:
        sentence += f"; for {_names(unsure)} we cannot tell either way"
    family = next(iter(comprehensiveness.values())).family
    details = [f"each method's AOPC minus the random ranking's ({faith.n_random} random rankings per item, "
               f"averaged), paired over the {len(faith)} {items} (resampled), Bonferroni over {family} "
               f"comparisons ({len(faith.methods)} methods x the two measures this sentence reads)"]
    details += [f"comprehensiveness: {comprehensiveness[m].text}" for m in faith.methods]
    details += [f"sufficiency: {sufficiency[m].text}" for m in faith.methods]
    return sentence + ".", details


def rollout_finding(v: Verdict, n: int, items: str = "utterances",
                    cls: str = "intent") -> tuple[str, list]:
    """Abnar & Zuidema's story (:func:`rollout_versus_raw`) in plain words, over ``n`` test
    ``items`` whose classes are each a ``cls`` ("headlines", "topic" for THUCNews)."""
    if v.kind == "higher":
        sentence = "Rollout's top tokens matter more to the decision than raw attention's"
    elif v.kind == "lower":
        sentence = "Raw attention's top tokens matter more to the decision than rollout's"
    else:
        sentence = f"With {n} {items} we cannot tell whether rollout or raw attention picks the tokens that matter more"
    size = abs(v.difference.estimate)
    if v.differs:
        sentence += f": removing them costs about {size:.2f} more of the predicted {cls}'s probability, on average"
    return sentence + ".", [f"comprehensiveness AOPC, tokens dropped: {v.text}"]


STORIES = {  # key: (the popular story, the published finding with its paper and model)
    "completeness": ("Integrated Gradients' attributions add up to the change of the logit",
                     "Sundararajan et al. 2017 (completeness, an axiom of the method; image and text models)"),
    "faithfulness": ("attribution methods point at the tokens the decision used",
                     "DeYoung et al. 2020 (ERASER; BERT- and LSTM-based models on seven English tasks): the metrics, "
                     "not a ranking of these methods"),
    "rollout": ("attention rollout explains a decision better than raw attention",
                "Abnar & Zuidema 2020 (a small Transformer they trained for subject-verb agreement; applied to BERT): "
                "rollout and flow agree better with blank-out and input gradients than raw attention"),
}
