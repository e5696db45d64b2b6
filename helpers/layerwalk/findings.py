"""Lesson 07 (:mod:`helpers.layerwalk`): the lesson in plain words, beside the numbers they phrase.

* profiles in sentences -- :func:`ranking_sentence`, :func:`steps_sentence`, :func:`profile_finding`
  (also lessons 08 and 09), :func:`names_phrase`, :func:`layers_phrase`;
* lesson 07's tables and findings -- rows for ``show_table`` (:func:`transition_rows`,
  :func:`baseline_rows`, :func:`norm_rows`, ...) and sentences for ``show_finding``
  (:func:`growth_finding`, :func:`outlier_finding`, :func:`comparison_finding`,
  :func:`confidence_finding`); the "claims tested" table (:func:`claim_rows`).
"""

from __future__ import annotations

import numpy as np
import torch

from helpers.common.stats import LayerRanking, quartiles
from helpers.layerwalk.variance import VARIANCE_PARTS, WITHIN_LAYER, variance_split
from helpers.model.trace import device_of


def names_phrase(names) -> str:
    """``"a"``, ``"a and b"``, ``"a, b and c"``."""
    names = [str(n) for n in names]
    if not names:
        return "none"
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def layers_phrase(layers) -> str:
    """``"layer 1"``, ``"layers 2, 3 and 4"``."""
    layers = list(layers)
    return ("layer " if len(layers) == 1 else "layers ") + names_phrase(layers)


def ranking_sentence(ranking: LayerRanking, names, what: str, *, highest: bool = True, unit: str = "layer",
                     could: str | None = None, percent: bool = False) -> str:
    """One plain sentence from a :class:`~helpers.common.stats.LayerRanking`, generated from its
    numbers: "The random-pair cosine is highest at layer 5 (0.231), clearly above every other
    layer, the embeddings (0.057) and layer 6 (0.050) included." or "...; layers 4 and 6 could be
    just as high. At the embeddings (0.057) it is clearly lower." ``names`` labels the columns,
    ``unit`` names one of them ("layer", "transition"); ``what`` is the subject; ``could`` replaces
    "just as high"/"just as low"; ``percent`` prints the values as percentages."""
    names = list(names)
    k = len(names)
    num = (lambda v: f"{100 * v:.0f} %") if percent else _num
    word, side = ("highest", "above") if highest else ("lowest", "below")
    could = could or ("just as high" if highest else "just as low")
    top = ranking.extreme
    others = [names[j] for j in ranking.tied if j != top]
    ends = [j for j in dict.fromkeys((0, k - 1)) if j not in ranking.tied]
    where = names_phrase([f"{names[j]} ({num(ranking.intervals[j].estimate)})" for j in ends])
    head = f"{what[:1].upper()}{what[1:]} is {word} at {names[top]} ({num(ranking.intervals[top].estimate)})"
    if not others:
        return f"{head}, clearly {side} every other {unit}" + (f", {where} included." if ends else ".")
    return (f"{head}; {names_phrase(others)} could be {could}."
            + (f" At {where} it is clearly {'lower' if highest else 'higher'}." if ends else ""))


def steps_sentence(steps, names, *, what: str = "it", up: str = "rises", down: str = "falls") -> str:
    """The steps of a profile (:class:`~helpers.common.stats.Verdict` s of ``value[l] - value[l - 1]``,
    :func:`pair_step_verdicts` or :func:`~helpers.common.stats.step_verdicts`) in plain words:
    "it rises into layers 1 and 2 and falls into layer 6; we cannot tell at the other steps".
    ``names`` labels the steps (one per verdict)."""
    names = list(names)
    if len(names) != len(steps):
        raise ValueError(f"names must label the {len(steps)} steps, got {len(names)}.")
    rise = [n for n, v in zip(names, steps) if v.kind == "higher"]
    fall = [n for n, v in zip(names, steps) if v.kind == "lower"]
    unsure = [n for n, v in zip(names, steps) if v.kind not in ("higher", "lower")]
    parts = ([f"{up} at {names_phrase(rise)}"] if rise else []) + ([f"{down} at {names_phrase(fall)}"] if fall else [])
    text = f"{what} " + " and ".join(parts) if parts else f"we cannot tell whether {what} {up} or {down} at any step"
    if parts and unsure:
        text += f"; we cannot tell at {names_phrase(unsure)}"
    return text


def profile_finding(ranking: LayerRanking, names, *, what: str, highest: bool = True, steps=None,
                    step_names=None, unit: str = "layer", percent: bool = False) -> tuple[str, list[str]]:
    """A profile over the layers as ``(sentence, details)`` for
    :func:`~helpers.common.claims.show_finding`: the extreme layer and those that could be as
    extreme (:func:`ranking_sentence`), whether the first and the last column differ from the
    extreme, and, with ``steps`` (their verdicts, labelled by ``step_names``), which steps rise or
    fall. Every word comes from the intervals; the details hold the verdicts' full text."""
    names = list(names)
    k = len(names)
    e = ranking.extreme
    sentence = ranking_sentence(ranking, names, what, highest=highest, unit=unit, percent=percent)
    details = [f"{names[e]}: {ranking.intervals[e]} (95 % interval); each other {unit} minus it, read off its "
               f"interval at the Bonferroni level over the {ranking.family_size} pairs of {unit}s:"]
    details += [ranking.verdict(j, a=names[j], b=names[e]).text for j in range(k) if j != e]
    if steps is not None:
        step_names = step_names or [f"{a} to {b}" for a, b in zip(names[:-1], names[1:])]
        sentence += " From one layer to the next, " + steps_sentence(steps, step_names, what="it") + "."
        details += [f"Steps from one {unit} to the next (Bonferroni over the steps):"] + [v.text for v in steps]
    return sentence, details


def last_layer_word(ranking: LayerRanking) -> str:
    """Where a profile's last column stands against its highest: ``"is the peak"``, ``"could be as
    high"`` (not shown different) or ``"drops"`` (clearly lower)."""
    last = len(ranking.intervals) - 1
    if ranking.extreme == last:
        return "is the peak"
    return "could be as high" if last in ranking.tied else "drops"


def outlier_sentence(rows: list[dict], n_layer_norms: int) -> str:
    """:func:`outlier_counts` in plain words: whether any dimension is an outlier in every
    LayerNorm, which come closest, and where those are top contributors to the cosine too."""
    if not rows:
        return "No dimension is a LayerNorm outlier in more than one LayerNorm."
    most = rows[0]["flagged in"]
    closest = [r for r in rows if r["flagged in"] == most]
    dims = names_phrase([r["dimension"] for r in closest])
    if most == n_layer_norms:
        text = f"Dimension{'s' if len(closest) > 1 else ''} {dims} {'are' if len(closest) > 1 else 'is'} an outlier " \
               f"in every one of the {n_layer_norms} LayerNorms"
    else:
        text = (f"No dimension is an outlier in all {n_layer_norms} LayerNorms; the closest, "
                f"dimension{'s' if len(closest) > 1 else ''} {dims}, {'are' if len(closest) > 1 else 'is'} flagged in "
                f"{most} of {n_layer_norms}")
    top = [r for r in closest if r.get("top contributor in")]
    if top:
        parts = [f"{r['dimension']} in {layers_phrase(r['top contributor in'])}" for r in top]
        parts[0] = parts[0].replace(" in ", " is also among the top contributors to the random-pair cosine in ", 1)
        text += "; of them, " + names_phrase(parts)
    return text + "."


# -- lesson 07's tables and findings: rows for show_table, sentences for show_finding -----------

def _layer(l: int) -> str:
    return "emb" if l == 0 else str(l)


def transition_rows(names, per_token, token_values, token_name: str, cls_per_token=None) -> list[dict]:
    """Rows of a per-transition table of layer-to-layer cosines (raw or minus the control): the data
    tokens' median [interquartile range] of ``per_token [N, L]``, the ``[CLS]`` tokens' median of
    ``cls_per_token [N_cls, L]`` when given, and the followed token's ``token_values [L]`` under the
    column ``token_name``; three decimals."""
    q25, med, q75 = quartiles(per_token)
    cls_med = None if cls_per_token is None else quartiles(cls_per_token)[1]
    rows = []
    for l, name in enumerate(names):
        row = {"transition": name, "data tokens: median [IQR]": f"{med[l]:.3f} [{q25[l]:.3f}-{q75[l]:.3f}]"}
        if cls_med is not None:
            row["[CLS]: median"] = f"{cls_med[l]:.3f}"
        row[token_name] = f"{token_values[l]:.3f}"
        rows.append(row)
    return rows


def baseline_rows(within_ci: list, cross_ci: list, mean_of_two, names) -> list[dict]:
    """Rows of the random-pair baseline table, one per layer (``L + 1``): the same-layer mean with its
    interval (``within_ci``), and for every layer but the last its transition's name, the
    one-layer-apart control (``cross_ci``) and the mean of the two same-layer values (``mean_of_two``);
    the last layer has no next one, so its transition cells stay empty."""
    L = len(cross_ci)
    return [{"layer": _layer(l), "same layer": str(within_ci[l]),
             "transition": names[l] if l < L else "",
             "one layer apart": str(cross_ci[l]) if l < L else "",
             "mean of two same-layer": f"{mean_of_two[l]:.3f}" if l < L else ""} for l in range(L + 1)]


def turn_rows(turn: LayerRanking, names, adjusted_share, raw_share) -> list[dict]:
    """Rows of "where the data tokens turn most": per transition the adjusted median with its interval
    (``turn``, :func:`rank_layers`) and the shares of tokens whose lowest adjusted and raw
    layer-to-layer cosine is there, as whole percentages."""
    return [{"transition": name, "adjusted median [95 % CI]": str(turn.intervals[l]),
             "tokens turning most here": f"{adjusted_share[l]:.0%}", "same, raw cosine": f"{raw_share[l]:.0%}"}
            for l, name in enumerate(names)]


def norm_rows(norms, norms_data, token_name: str) -> list[dict]:
    """Rows of the L2-norm table, one per layer: the data tokens' median [interquartile range] of
    ``norms_data [N, L + 1]`` and the followed token's ``norms [L + 1]``; two decimals."""
    q25, med, q75 = quartiles(norms_data)
    return [{"layer": _layer(l), "data median": f"{med[l]:.2f} [IQR {q25[l]:.2f}-{q75[l]:.2f}]",
             f"this token ({token_name})": f"{norms[l]:.2f}"} for l in range(len(med))]


def step_rows(steps, names) -> list[dict]:
    """Rows of the step table of the mean length: per step (``names``) the change of the mean
    (its verdict's estimate) and the reading, "grows", "shrinks" or "cannot tell"."""
    words = {"higher": "grows", "lower": "shrinks"}
    return [{"step": name, "change of the mean length": f"{v.difference.estimate:+.3g}",
             "reading": words.get(v.kind, "cannot tell")} for name, v in zip(names, steps)]


def growth_finding(steps, names, medians) -> tuple[str, str, list[str]]:
    """Whether the mean length grows at every step, from the step verdicts (:func:`step_verdicts`):
    ``(grows, sentence, details)``; ``grows`` is "met" (every step higher), "not met" (some step
    lower) or "inconclusive"; the sentence names each step's reading and the layers where the median
    length (``medians [L + 1]``) is shortest and longest; the details are the verdicts' texts."""
    grows = ("met" if all(v.kind == "higher" for v in steps)
             else "not met" if any(v.kind == "lower" for v in steps) else "inconclusive")
    head = {"met": "grows at every step", "not met": "does not grow at every step"}.get(
        grows, "may or may not grow at every step")
    medians = np.asarray(medians)
    sentence = (f"The mean length {head}: " + steps_sentence(steps, names, what="it", up="grows", down="shrinks")
                + f". The median is shortest at layer {int(medians.argmin())}, longest at layer "
                f"{int(medians.argmax())}.")
    return grows, sentence, [v.text for v in steps]


def parts_rows(parts: dict) -> list[dict]:
    """Rows of the LayerNorm-parts table (:func:`norm_parts`), one per layer: the data tokens'
    medians of ``||h||``, ``||gamma*z_hat||`` and ``2<s,beta>``, and the layer's ``||gamma||`` and
    ``||beta||``; two decimals."""
    med = {key: quartiles(parts[key])[1] for key in ("norm", "scaled", "cross")}
    return [{"layer": _layer(l), "median ||h||": f"{med['norm'][l]:.2f}",
             "median ||gamma*z_hat||": f"{med['scaled'][l]:.2f}", "||gamma||": f"{parts['gamma'][l]:.2f}",
             "||beta||": f"{parts['beta'][l]:.2f}", "median 2<s,beta>": f"{med['cross'][l]:.2f}"}
            for l in range(len(med["norm"]))]


def top_dimension_rows(contrib, dims, top_share, outliers: list[list[int]]) -> list[dict]:
    """Rows of the dominant-dimension table, one per layer: the random-pair cosine (the sum of the
    layer's ``contrib``, :func:`cosine_contributions`), its top dimensions ``dims`` and the share
    ``top_share`` they supply, the layer's LayerNorm outliers (:func:`layer_norm_outliers`) and the
    dimensions in both lists."""
    return [{"layer": _layer(l), "random-pair cosine": f"{contrib[l].sum():.3f}",
             "top 3 dims": str(dims[l].tolist()), "share they supply": f"{top_share[l]:.0%}",
             "LayerNorm 3-sigma outliers": str(outliers[l]),
             "in both": str(sorted(set(dims[l].tolist()) & set(outliers[l])))} for l in range(len(outliers))]


def outlier_table_rows(rows: list[dict], n_layer_norms: int, limit: int = 10) -> list[dict]:
    """The first ``limit`` rows of :func:`outlier_counts` as table rows (in how many of the
    ``n_layer_norms`` LayerNorms each dimension is flagged, where, and where it is a top-3 cosine
    contributor too), or one row "none" when no dimension is flagged twice."""
    flagged = f"flagged in (of {n_layer_norms})"
    return [{"dimension": r["dimension"], flagged: r["flagged in"], "layers flagged": str(r["layers"]),
             "top-3 cosine contributor in": str(r["top contributor in"])}
            for r in rows[:limit]] or [{"dimension": "none", flagged: "-"}]


def outlier_finding(rows: list[dict], n_layer_norms: int, limit: int = 10) -> tuple[str, list[str]]:
    """:func:`outlier_sentence` with the layers of the first ``limit`` flagged dimensions as its
    details: ``(sentence, details)`` for :func:`~helpers.common.claims.show_finding`."""
    return (outlier_sentence(rows, n_layer_norms),
            [f"dimension {r['dimension']}: flagged in layers {r['layers']}" for r in rows[:limit]])


def variant_rows(values: dict, labels, index: str) -> list[dict]:
    """One row per label (a layer or a transition), one column per variant of ``values`` (name ->
    sequence), each value signed with three decimals."""
    return [{index: label} | {n: f"{v[i]:+.3f}" for n, v in values.items()} for i, label in enumerate(labels)]


def comparison_rows(profiles: list[tuple[str, LayerRanking, object]]) -> list[dict]:
    """Rows setting checkpoints side by side, one per layer of the deepest: for each ``(name, ranking,
    share)`` its random-pair cosine with interval (``ranking``, :func:`pair_ranking`) and the share of
    it from its top 3 dimensions; empty cells past a checkpoint's last layer."""
    rows = []
    for l in range(max(len(rank.intervals) for _, rank, _ in profiles)):
        row = {"layer": _layer(l)}
        for who, rank, share in profiles:
            here = l < len(rank.intervals)
            row[f"{who}: random-pair cosine"] = str(rank.intervals[l]) if here else ""
            row[f"{who}: top-3 share"] = f"{share[l]:.0%}" if here else ""
        rows.append(row)
    return rows


def comparison_finding(own: LayerRanking, own_share, other: dict, step_names) -> tuple[str, list[str]]:
    """course-mini's random-pair profile (``other``, :func:`anisotropy_profile`) in plain words beside
    this model's (``own`` and its top-3 shares ``own_share``): its peak and steps
    (:func:`profile_finding`, steps labelled ``step_names``), whether the two last layers agree on
    dropping below the peak, and both ranges of the top-3 share. ``(sentence, details)``."""
    sentence, details = profile_finding(other["rank"], other["names"], what="the random-pair cosine",
                                        steps=other["steps"], step_names=step_names)
    mine, theirs = last_layer_word(own), last_layer_word(other["rank"])
    shared = (mine == "drops") == (theirs == "drops")
    text = (f"On course-mini, {sentence[:1].lower()}{sentence[1:]} Its last layer {theirs}, this model's {mine}: "
            + ("the two checkpoints agree there, so BERT's objectives alone can give this shape." if shared else
               "the two disagree, so this model's last layer comes from its own training or size, not from BERT's"
               " architecture.")
            + (" Like BERT-base in Ethayarajh (2019), course-mini is most anisotropic at its top."
               if theirs == "is the peak" else "")
            + f" Its top 3 dimensions supply {other['share'].min():.0%}-{other['share'].max():.0%} of its"
            f" random-pair cosine per layer ({own_share.min():.0%}-{own_share.max():.0%} on this model).")
    return text, details


def confidence_finding(split: dict, grows: str, n_tokens: int, n_layers: int) -> tuple[str, list[str]]:
    """The two predictions of "norms grow because the model grows more confident", read off the
    variance split of ``||h||`` (:func:`variance_split_ci` over ``n_tokens`` tokens x ``n_layers``
    layers) and the growth verdict ``grows`` (:func:`growth_finding`): prediction 1 is met when the
    within-layer share's interval lies above one half, not met below it. ``(sentence, details)``."""
    within = split[WITHIN_LAYER]
    pred1 = "met" if within.low > 0.5 else "not met" if within.high < 0.5 else "undecided"
    share = {part: f"{split[part].estimate:.0%}" for part in split}
    sentence = (f"{share[WITHIN_LAYER]} of the variance of the length lies between the tokens of a layer (a"
                f" token's own mean length {share['token']}, tokens long at some layers and short at others"
                f" {share['interaction']}), {share['layer']} between the layers' means: prediction 1, lengths"
                f" differ mostly between tokens, is {pred1}. Prediction 2, the mean length grows at every layer,"
                f" is {grows}."
                + (" So the reading's premise, lengths growing layer after layer, fails for this model."
                   if grows == "not met" else ""))
    details = [f"two-way split of the variance of ||h|| over {n_tokens} tokens x {n_layers} layers, 95 % intervals"
               " resampling sentences: " + "; ".join(f"{p} {split[p].percent(0)}" for p in split),
               "prediction 1 is met when the within-layer share's interval lies above 50 %, not met below it;"
               " prediction 2 reads the steps above."]
    return sentence, details


# -- lesson 07's "claims tested" table --------------------------------------------------------

def _num(value) -> str:
    return f"{float(value):.3f}"


def claim_rows(*, turn: LayerRanking, transition_names: list[str], turn_share: float, peak: LayerRanking,
               cross_ci: list, mean_of_two, variance_split: dict, grows: str, top_share, k: int, hidden_size: int,
               outlier_rows: list[dict], n_layer_norms: int, top_measure: str = "the random-pair cosine",
               centred_max: float | None = None, other: tuple[str, LayerRanking] | None = None
               ) -> list[tuple[str, str, str, str]]:
    """Lesson 07's claims table: ``(popular claim, this model's result in plain words, published
    finding with paper and model, how we know)`` per row; every verdict is computed from the numbers.

    ``turn`` ranks the baseline-adjusted layer-to-layer cosines (lowest first), ``turn_share`` is the
    share of tokens whose own biggest adjusted turn is there; ``peak`` ranks the within-layer
    random-pair cosine (highest first, :func:`pair_ranking`); ``cross_ci`` is the one-layer-apart
    control per transition and ``mean_of_two`` the mean of the two same-layer baselines;
    ``variance_split`` (:func:`variance_split_ci`) gives prediction 1 -- lengths differ mostly between
    the tokens *of a layer*: token + interaction (:data:`WITHIN_LAYER`) above one half; ``grows`` is
    the verdict of prediction 2 in words ("met", "not met", "inconclusive"); ``top_share`` the share of
    ``top_measure`` in the ``k`` dimensions that supply most of it, per layer; ``outlier_rows``
    (:func:`outlier_counts`) the LayerNorm outliers per dimension over ``n_layer_norms`` LayerNorms;
    ``centred_max`` the largest |random-pair cosine| after mean-centring; ``other`` = ``(name,
    ranking)``: the same random-pair profile on another checkpoint (course-mini), for the cone row."""
    L = len(cross_ci)
    names = transition_names
    top = torch.as_tensor(top_share, device=device_of(top_share))
    # row 1: where tokens turn most
    tied = [names[j] for j in turn.tied if j != turn.extreme]
    last_among = (L - 1) in turn.tied
    turn_plain = (f"tokens turn most (beyond the control) at {names[turn.extreme]}"
                  + (f"; {names_phrase(tied)} could turn as much" if tied else "")
                  + f"; the last transition is {'among' if last_among else 'not among'} them; "
                  f"{turn_share:.0%} of the tokens turn most there")
    turn_how = (f"adjusted median {turn.intervals[turn.extreme]} at {names[turn.extreme]}; each transition minus it, "
                f"paired, resampling {turn.unit} (and the control pairs' sentences), Bonferroni over the "
                f"{turn.family_size} pairs of transitions: not shown different {[names[j] for j in turn.tied]}")
    # row 2: the cone
    p, first, last = peak.extreme, peak.intervals[0], peak.intervals[-1]
    last_word = ("the last layer is the peak" if p == L else
                 "the last layer could be as high" if L in peak.tied else f"the last layer drops to {_num(last.estimate)}")
    cone_plain = (f"the random-pair cosine rises from {_num(first.estimate)} at the embeddings to its peak at layer {p} "
                  f"({_num(peak.intervals[p].estimate)}); {last_word}")
    cone_how = (f"per layer, mean [95 % interval] resampling sentences (pigeonhole bootstrap over the pairs): "
                + ", ".join(f"{'emb' if j == 0 else j} {iv}" for j, iv in enumerate(peak.intervals))
                + f"; each layer minus the peak, Bonferroni over the {peak.family_size} pairs of layers: not shown "
                f"different from layer {p}: {peak.tied}")
    if other is not None:
        name, o = other
        L_o = len(o.intervals) - 1
        o_last = ("its last layer is the peak" if o.extreme == L_o else
                  "its last layer could be as high" if L_o in o.tied else
                  f"its last layer drops to {_num(o.intervals[-1].estimate)}")
        cone_plain += (f"; on {name} (BERT's own objectives) it peaks at layer {o.extreme} "
                       f"({_num(o.intervals[o.extreme].estimate)}) and {o_last}")
        cone_how += f"; {name}: " + ", ".join(f"{'emb' if j == 0 else j} {iv}" for j, iv in enumerate(o.intervals))
    # row 3: the matching control
    c, m = cross_ci[L - 1], float(mean_of_two[L - 1])
    outside = not c.contains(m)
    control_plain = (f"{'no' if outside else 'we cannot tell'}: at {names[L - 1]} the matching control is "
                     f"{_num(c.estimate)}, the mean of the two same-layer baselines {m:.3f}")
    control_how = f"matching control {c} (resampling sentences) against the fixed mean of two, {m:.3f}"
    # row 4: norms and confidence
    within = variance_split[WITHIN_LAYER]
    pred1 = "met" if within.low > 0.5 else "not met" if within.high < 0.5 else "undecided"
    norm_plain = (f"prediction 'lengths differ mostly between the tokens of a layer': {pred1} "
                  f"({within.estimate:.0%} of the variance); prediction 'they grow at every layer': {grows}")
    norm_how = ("two-way split of the variance of ||h||, resampling sentences: "
                + ", ".join(f"{part} {variance_split[part].percent(0)}" for part in VARIANCE_PARTS)
                + f"; within a layer (token + interaction) {within.percent(0)}; growth: each step of the mean "
                "length, Bonferroni over the steps")
    # row 5: dominant dimensions
    outlier_text = outlier_sentence(outlier_rows, n_layer_norms)
    outlier_text = outlier_text[:1].lower() + outlier_text[1:-1]
    dims_plain = (f"the top {k} dimensions supply {top.min():.0%}-{top.max():.0%} of {top_measure} per layer (an even "
                  f"spread: {k / hidden_size:.1%})"
                  + ("" if centred_max is None else f"; after mean-centring it stays within {centred_max:.3f} of 0")
                  + f"; {outlier_text}")
    dims_how = ("LayerNorm outliers: gamma or beta more than 3 standard deviations from its vector's mean; "
                "flagged per dimension: " + (", ".join(f"{r['dimension']} in {r['flagged in']}" for r in outlier_rows[:8])
                                            or "none twice"))
    return [
        ("A token changes most in the last layers", turn_plain,
         "Ethayarajh 2019 (BERT-base): upper layers are the most context-specific -- measured as self-similarity "
         "across contexts, not this layer-to-layer cosine", turn_how),
        ("Upper layers are a narrow cone (high random-pair cosine)", cone_plain,
         "Ethayarajh 2019 (BERT-base, ELMo, GPT-2): anisotropic in all non-input layers, more so higher up", cone_how),
        ("A layer-to-layer cosine can be read against the mean of the two same-layer baselines", control_plain,
         "Ethayarajh 2019 defined only within-layer baselines", control_how),
        ("Norms grow because the model grows more confident", norm_plain,
         "no published test; a course measurement (it cannot show what the length means)", norm_how),
        ("A few dimensions dominate the vector", dims_plain,
         "Kovaleva et al. 2021 (BERT-base and others): outlier LayerNorm scales and biases at the same "
         "positions in every layer; Timkey & van Schijndel 2021 (BERT, RoBERTa, GPT-2, XLNet): 1-3 rogue dimensions "
         "dominate cosine similarity, standardising corrects it", dims_how),
    ]
