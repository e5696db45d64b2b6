"""Lesson 08 (:mod:`helpers.attention`): the lesson in plain words, beside the numbers they phrase: the
"claims tested" table (:func:`claim_rows`), per-layer rows (:func:`layer_rows`,
:func:`favourite_key_rows`) and findings (:func:`sink_finding`, :func:`cls_heads_finding`,
:func:`punct_finding`, :func:`length_finding`, :func:`norm_finding`, :func:`boundary_finding`,
:func:`self_attention_finding`; the attention-sink test :func:`sink_test`).
"""

from __future__ import annotations

import torch

from helpers.attention.comparisons import (MIN_HEADS, above_threshold, compare_layers, compare_sentence,
                                           deep_heads_verdict)
from helpers.attention.shares import TOKEN_CLASSES, attention_shares_per_sentence, uniform_shares
from helpers.model.trace import check_traces


# -- lesson 08's "claims tested" table --------------------------------------------------------

def claim_rows(*, sep_rank, cls_rank, sep_over_half: list[int], sink: dict, uniform_sep: float,
               punct_heads: dict, punct_floor: float, length_differs: dict, heads_on_cls: list[int],
               heads_surely_half: list[int], heads_over_threshold: list[int], head_threshold: float,
               threshold_share: float, n_heads: int, norm_vs_weight: dict, sep_ratio, punct_ratio, sep_norm,
               self_trained: list, self_learned: list[int], self_over_half: list[int], prev_head: tuple[int, int],
               prev_ci, other: tuple[str, dict] | None = None) -> list[tuple[str, str, str, str]]:
    """Lesson 08's claims table: ``(popular claim, this model's result in plain words, published
    finding with paper and model, how we know)``, every verdict computed from the numbers it is given.

    ``sep_rank``/``cls_rank``: :func:`~helpers.common.stats.rank_layers` of the [SEP] and [CLS]
    shares (packed pairs, highest first); ``sep_over_half``: 1-based layers whose [SEP] share is surely
    above one half (:func:`above_threshold`); ``sink``: :func:`sink_test` (per token, against the
    sink floor); ``punct_heads``: :func:`heads_above` of each head's share on periods and
    commas ÷ their uniform share, against ``punct_floor`` (stated before measuring); ``length_differs``:
    ``{class: layers where share ÷ uniform differs between short and packed inputs}``;
    ``heads_on_cls``/``heads_surely_half``/``heads_over_threshold``: heads per layer with a mean [CLS]
    share above one half, surely above one half, surely above ``head_threshold`` x uniform (about
    ``threshold_share`` of a head's attention); ``norm_vs_weight``: ``{class: compare_layers(norm,
    weight)}``; ``sep_ratio``/``punct_ratio``: share ÷ uniform share per layer; ``sep_norm``: norm-based
    ÷ weight share of [SEP] per layer; ``self_trained``: [CLS]->[CLS] per layer (intervals);
    ``self_learned``: layers where it differs from random weights; ``self_over_half``: layers surely
    above one half; ``prev_head``/``prev_ci``: the best previous-token head and its score; ``other`` =
    ``(name, sink)``: :func:`sink_test` on another checkpoint (course-mini)."""
    from helpers.layerwalk.compute import layers_phrase, names_phrase

    L = len(sep_rank.intervals)
    layer = [f"layer {l}" for l in range(1, L + 1)]

    def ties(rank):
        others = [layer[j] for j in rank.tied if j != rank.extreme]
        return f"; {names_phrase(others)} could be as high" if others else ""

    def how(rank, what):
        return (f"{what}: {layer[rank.extreme]} {rank.intervals[rank.extreme].percent()}; not shown different from "
                f"it (paired over the inputs, Bonferroni over the {rank.family_size} pairs of layers): "
                f"{[j + 1 for j in rank.tied]}")

    def sink_word(result):
        on = sink_of(result)
        return f"a {on} sink" if on else f"no sink (more than {result['floor']:g}x its even share per token)"

    s = sep_rank.extreme
    sep_plain = (f"the share on [SEP] is largest at layer {s + 1} ({sep_rank.intervals[s].estimate:.1%}; an even "
                 f"spread gives {uniform_sep:.1%}){ties(sep_rank)}; it is clearly above half in "
                 + (layers_phrase(sep_over_half) if sep_over_half else "no layer")
                 + f"; per token, {sink_layers_phrase(sink)}: "
                 f"{sink_word(sink)}" + (" instead" if sink_word(sink) == "a [CLS] sink" else ""))
    if other is not None:
        sep_plain += f"; course-mini (BERT's own objectives) shows {sink_word(other[1])}"
    per = punct_heads["per_layer"]
    upper = sum(c for l, c in enumerate(per, start=1) if l > L / 2)
    punct_plain = (f"{sum(per)} of {L * n_heads} heads {'gives' if sum(per) == 1 else 'give'} periods and commas "
                   f"clearly more than {punct_floor:g}x "
                   f"their even share ({upper} in the upper half of the layers, {sum(per) - upper} in the lower): "
                   f"the claim {deep_heads_verdict(per)} here")
    length_plain = ("no: share ÷ even share still differs between short and packed inputs in "
                    + "; ".join(f"{k}: {layers_phrase(v) if v else 'no layer'}" for k, v in length_differs.items()))
    cls_plain = (f"{sum(heads_surely_half)} of {n_heads * L} heads {'puts' if sum(heads_surely_half) == 1 else 'put'} "
                 f"clearly more than half of their attention on "
                 f"[CLS] ({sum(heads_on_cls)} do on average); by a looser count, {sum(heads_over_threshold)} give it "
                 f"clearly more than {head_threshold:g}x an even share (about {threshold_share:.0%} of a head's "
                 "attention here)")
    norm_plain = "; ".join(f"{k}, the norm-based share against the weight share: "
                           f"{compare_sentence(w, 'larger', 'smaller')}" for k, w in norm_vs_weight.items())
    boundary_plain = (f"[SEP] gets at most {float(max(sep_ratio)):.1f}x its even share, punctuation at most "
                      f"{float(max(punct_ratio)):.1f}x; counting what each passes on, [SEP] keeps "
                      f"{float(min(sep_norm)):.0%}-{float(max(sep_norm)):.0%} of its weight share")
    self_plain = (f"[CLS] puts clearly more than half of its attention on itself in "
                  + (layers_phrase(self_over_half) if self_over_half else "no layer") + f" (of {L}); in layer 1 "
                  f"{self_trained[0].estimate:.0%}; it differs from a random-weight model (about 1/n by construction) "
                  + ("in every layer" if len(self_learned) == L else
                     f"in {layers_phrase(self_learned)}" if self_learned else "in no layer we can tell"))
    prev_plain = f"layer {prev_head[0]}, head {prev_head[1]} puts {prev_ci.estimate:.0%} of its attention on the previous token"
    return [
        ("Over half of the attention goes to [SEP] in the middle layers", sep_plain,
         "Clark et al. 2019 (BERT-base, <= 128-token pairs): > 50 % in layers 6-10",
         how(sep_rank, "[SEP] share") + "; " + how(cls_rank, "[CLS] share")
         + "; above one half: one-sided, Bonferroni over the layers; a sink: share ÷ even share per token "
         f"surely above {sink['floor']:g} (stated first), one-sided, Bonferroni over the layers"),
        ("Deep heads attend to periods and commas", punct_plain,
         "Clark et al. 2019 (BERT-base, Fig. 2): deep heads attend to periods and commas",
         f"per head, share on periods and commas ÷ their uniform share, one-sided test against the floor "
         f"{punct_floor:g} stated first, Bonferroni over all {L * n_heads} heads; heads clearly above: "
         f"{punct_heads['heads'] or 'none'}"),
        ("Dividing by the uniform share k/n makes shares comparable across input lengths", length_plain,
         "a check of the course's own reading, not a published finding: a sink that keeps its share whatever "
         "the length has a ratio growing with n",
         "short minus packed, paired on the same sentences, Bonferroni over the layers of each class"),
        ("Many heads put most weight on [CLS]", cls_plain,
         "Clark et al. 2019 (BERT-base, Fig. 2, each head's mean attention on [CLS], no threshold): early heads "
         "attend to [CLS]",
         "per head, one-sided, Bonferroni over all heads; per layer: "
         + ", ".join(f"L{l + 1} {n} ({m} on average)" for l, (n, m) in enumerate(zip(heads_surely_half, heads_on_cls)))),
        ("An attention weight says how much a token contributes", norm_plain,
         "Kobayashi et al. 2020 (BERT-base): weights on [CLS], [SEP], punctuation shrink once ||f(x)|| counts; "
         "Kobayashi et al. 2021 (BERT-base and other masked LMs): with the residual and LayerNorm counted, tokens mix "
         "less than attention suggests; Jain & Wallace 2019 vs Wiegreffe & Pinter 2019 (LSTM models with attention, "
         "not BERT): whether weights explain a prediction depends on the test",
         "norm-based (heads summed before the norm, Kobayashi's definition) minus weight share, paired over the "
         "inputs, Bonferroni over the layers of each class"),
        ("[SEP] gets attention because it marks the sentence boundary", boundary_plain,
         "Clark et al. 2019 (BERT-base) speculate a no-op (small gradients); Kobayashi et al. 2020 (BERT-base): "
         "small ||f(x)||", "means over the packed inputs"),
        ("[CLS] attends to itself early because it has not learned to look", self_plain,
         "untested in the papers; a random-weight model shows only what an unlearned model does",
         "per layer " + ", ".join(iv.percent() for iv in self_trained)
         + "; above one half: one-sided, Bonferroni over the layers; trained minus random: paired over the inputs, "
         "Bonferroni over the layers"),
        ("Some heads just look at the previous token", prev_plain,
         "Clark et al. 2019 (BERT-base): heads that attend heavily to the previous or next token, especially in "
         "earlier layers", f"{prev_ci.percent()} over the short pairs"),
    ]


# -- lesson 08's tables and findings: per-layer rows and plain sentences from the numbers ----------
# Formatting only: every number comes in already measured (helpers/common/stats.py behind it); these
# functions put it into table rows and the sentences that show_finding displays.

def layer_rows(columns: dict, label=int) -> list[dict]:
    """Rows of a per-layer table for :func:`~helpers.common.tables.show_table`: row ``l`` is
    ``{"layer": label(l + 1), name: values[l], ...}`` for every ``name: values`` of ``columns``
    (per-layer lists, already formatted). A list shorter than the longest (a model with fewer
    layers) leaves its cells empty (``""``). ``label=str`` writes the layer numbers as text."""
    if not columns:
        raise ValueError("layer_rows needs at least one column.")
    n = max(len(v) for v in columns.values())
    return [{"layer": label(l + 1)} | {name: (v[l] if l < len(v) else "") for name, v in columns.items()}
            for l in range(n)]


def favourite_key_rows(attention, tokens, query: str = "[CLS]") -> list[dict]:
    """Per layer, the key that one query looks at most, from ``attention [L, seq]`` (that query's
    attention row per layer, e.g. [CLS]'s with the heads averaged): rows ``{"layer", "<query> looks
    most at" (the token, quoted), "position", "attention probability" (2 decimals)}``."""
    favourite = attention.argmax(dim=-1).tolist()
    return [{"layer": layer + 1, f"{query} looks most at": repr(tokens[j]), "position": j,
             "attention probability": f"{attention[layer, j]:.2f}"} for layer, j in enumerate(favourite)]


SINK_FLOOR = 2.0  # a sink: a token class getting surely more than this many times its even share, per token


def sink_test(traces, floor: float = SINK_FLOOR) -> dict:
    """Is [CLS] or [SEP] an attention sink, compared **per token**? For every trace and layer, each
    class's share ÷ its even share (:func:`uniform_shares`: [SEP] has two tokens to [CLS]'s one, so
    raw shares would favour it twice over). A class is a sink in a layer when that ratio is surely
    above ``floor`` (fixed before measuring; one-sided, Bonferroni over the layers,
    :func:`above_threshold`). Returns ``{"[CLS]": ..., "[SEP]": ..., "compare": compare_layers of
    the [CLS] ratio minus the [SEP] ratio, "floor": floor, "ratio": [n, L, 2]}``."""
    traces = check_traces(traces)
    shares = attention_shares_per_sentence(traces)  # [n, L, 4]
    even = torch.stack([uniform_shares(t) for t in traces])  # [n, 4]
    c, s = TOKEN_CLASSES.index("[CLS]"), TOKEN_CLASSES.index("[SEP]")
    return sink_from_ratio(torch.stack([shares[:, :, c] / even[:, None, c], shares[:, :, s] / even[:, None, s]], -1),
                           floor)


def sink_from_ratio(ratio, floor: float = SINK_FLOOR) -> dict:
    """:func:`sink_test` from ``ratio [n_inputs, L, 2]``: [CLS]'s and [SEP]'s share ÷ even share."""
    ratio = torch.as_tensor(ratio, dtype=torch.float64).cpu()  # cpu: float64 statistics on results
    if ratio.ndim != 3 or ratio.shape[-1] != 2:
        raise ValueError(f"ratio must be [n_inputs, layers, 2] ([CLS], [SEP]), got shape {tuple(ratio.shape)}.")
    return {"[CLS]": above_threshold(ratio[..., 0], floor), "[SEP]": above_threshold(ratio[..., 1], floor),
            "compare": compare_layers(ratio[..., 0], ratio[..., 1], labels=("[CLS] per token", "[SEP] per token")),
            "floor": floor, "ratio": ratio}


def sink_of(result: dict) -> str | None:
    """Where a :func:`sink_test` result says the model sinks its attention: the class that is a
    sink (surely above the floor, per token) in over half of the layers; when both are, the one
    that draws more per token in over half of them (``"[CLS] and [SEP]"`` if neither does); else
    ``None``."""
    L = len(result["compare"]["verdicts"])
    sinks = [k for k in ("[CLS]", "[SEP]") if len(result[k]["above"]) > L / 2]
    if len(sinks) < 2:
        return sinks[0] if sinks else None
    cmp = result["compare"]
    return "[CLS]" if len(cmp["above"]) > L / 2 else "[SEP]" if len(cmp["below"]) > L / 2 else "[CLS] and [SEP]"


def sink_layers_phrase(result: dict) -> str:
    """"[CLS] gets more than 2x its even share per token in layers 1 and 2; [SEP] in no layer"."""
    from helpers.layerwalk.compute import layers_phrase

    parts = [f"{k} {'gets' if i == 0 else 'in'}" + ("" if i else f" more than {result['floor']:g}x its even share "
                                                    "per token in")
             + " " + (layers_phrase([l + 1 for l in result[k]["above"]]) if result[k]["above"] else "no layer")
             for i, k in enumerate(("[CLS]", "[SEP]"))]
    return "; ".join(parts)


def sink_finding(n_inputs: int, sep_rank, cls_rank, sep_half: dict, sink: dict) -> tuple[str, list[str]]:
    """Lesson 08's [CLS]/[SEP] claim on the packed pairs as ``(sentence, details)`` for
    :func:`~helpers.common.claims.show_finding`: the layer with the largest [SEP] and [CLS] share
    (``sep_rank``/``cls_rank``, :func:`~helpers.common.stats.rank_layers`), the layers where [SEP]
    is surely over one half (``sep_half``, :func:`above_threshold`) and where each is a sink, per
    token (``sink``, :func:`sink_test`), set beside Clark et al.'s [SEP] sink."""
    from helpers.layerwalk.compute import layers_phrase, profile_finding

    names = [f"layer {l}" for l in range(1, len(sep_rank.intervals) + 1)]
    (sep_text, sep_details), (cls_text, cls_details) = (
        profile_finding(r, names, what=f"the share on {c}", percent=True)
        for r, c in ((sep_rank, "[SEP]"), (cls_rank, "[CLS]")))
    over_half = [l + 1 for l in sep_half["above"]]
    on = sink_of(sink)
    sentence = (f"On the {n_inputs} packed pairs, {sep_text[:1].lower()}{sep_text[1:]} {cls_text} [SEP] gets over "
                f"half of the attention in {layers_phrase(over_half) if over_half else 'no layer'}. Per token, "
                + sink_layers_phrase(sink)
                + (". Where Clark et al. found a [SEP] sink on BERT-base, this model sinks its attention on [CLS] "
                   "instead." if on == "[CLS]" else ". Like BERT-base in Clark et al., this model sinks on [SEP]."
                   if on == "[SEP]" else ". This model sinks on both [CLS] and [SEP]." if on else
                   ". Neither is a sink in most layers of this model."))
    details = (sep_details + cls_details
               + ["[SEP] above one half, one-sided, Bonferroni over the layers: "
                  + "; ".join(f"layer {l + 1} {iv.percent()}" for l, iv in enumerate(sep_half["intervals"]))]
               + [f"{k} share ÷ its even share (per token), one-sided against {sink['floor']:g} (stated before "
                  "measuring), Bonferroni over the layers: "
                  + "; ".join(f"layer {l + 1} {iv.format('.2f')}x" for l, iv in enumerate(sink[k]["intervals"]))
                  for k in ("[CLS]", "[SEP]")]
               + ["[CLS] minus [SEP], per token, paired:"] + [v.text for v in sink["compare"]["verdicts"]])
    return sentence, details


def other_sink_finding(name: str, n_inputs: int, other: dict, sinks_on: str | None) -> tuple[str, list[str]]:
    """The same per-token sink test on another checkpoint (``other``, :func:`sink_test`; lesson 08:
    course-mini, pre-trained with BERT's own objectives) set beside this model's sink (``sinks_on``,
    :func:`sink_of`): ``(sentence, details)``, saying whether the two agree."""
    other_on = sink_of(other)
    sentence = (f"On {name} ({n_inputs} packed pairs), per token, {sink_layers_phrase(other)}"
                + f". It sinks on {other_on or 'neither in most layers'}, this model on {sinks_on or 'neither'}: "
                + (("the two agree, so BERT's own objectives can give this sink." if other_on else
                    "the two agree that neither is a sink.") if other_on == sinks_on else
                   "they disagree, so this model's sink comes from its training (or size), not from BERT's "
                   "architecture alone."))
    return sentence, [f"{k} share ÷ its even share (per token), one-sided against {other['floor']:g}: "
                      + "; ".join(f"layer {l + 1} {iv.format('.2f')}x" for l, iv in enumerate(other[k]["intervals"]))
                      for k in ("[CLS]", "[SEP]")]


def cls_heads_finding(half_heads: dict, heads_on_cls: list[int], loose: dict, threshold: float,
                      threshold_share: float) -> tuple[str, list[str]]:
    """How many heads put most of their attention on [CLS], as ``(sentence, details)``:
    ``half_heads`` (:func:`heads_above` of each head's [CLS] share against one half), ``heads_on_cls``
    (per layer, heads whose mean share is above one half) and the looser count ``loose``
    (:func:`heads_above` against ``threshold`` x the uniform share, about ``threshold_share`` of a
    head's attention)."""
    surely, total = half_heads["per_layer"], len(half_heads["intervals"])
    sentence = (f"{sum(surely)} of the {total} heads {'puts' if sum(surely) == 1 else 'put'} clearly more than half of "
                f"their attention on [CLS] ({sum(heads_on_cls)} do on average over the inputs): "
                + ("; ".join(f"layer {l + 1}: {n}" for l, n in enumerate(surely) if n) or "none")
                + f". By a looser count, {sum(loose['per_layer'])} give it clearly more than {threshold:g}x an even "
                f"share, which here is only about {threshold_share:.0%} of a head's attention, not 'most'.")
    return sentence, [f"per head, one-sided test against one half, Bonferroni over all {total} heads; clearly above: "
                      f"{half_heads['heads'] or 'none'}",
                      f"{threshold:g}x uniform, the same test: {len(loose['heads'])} heads"]


def punct_finding(punct_heads: dict, floor: float, ratio_ci: list, n_inputs: int) -> tuple[str, list[str]]:
    """Clark et al.'s "deep heads attend to periods and commas", tested per head, as ``(sentence,
    details)``: ``punct_heads`` (:func:`heads_above` of each head's share ÷ uniform share against
    ``floor``), counted in the upper and lower half of the layers (:func:`deep_heads_verdict`);
    ``ratio_ci``: per layer, the heads-averaged ratio's interval, for the details."""
    per, total = punct_heads["per_layer"], len(punct_heads["intervals"])
    upper = sum(c for l, c in enumerate(per, start=1) if l > len(per) / 2)
    named = (" (" + ", ".join(f"head {h} of layer {l}" for l, h in punct_heads["heads"]) + ")"
             if 0 < sum(per) < MIN_HEADS else "")
    sentence = (f"{sum(per)} of the {total} heads{named} {'gives' if sum(per) == 1 else 'give'} periods and commas "
                f"clearly more than {floor:g}x their even share, {upper} of them in the upper half of the layers and "
                f"{sum(per) - upper} in the lower: 'deep heads attend to periods and commas' {deep_heads_verdict(per)}"
                f" here ({n_inputs} packed inputs; Clark et al. measured BERT-base).")
    return sentence, [f"per head, one-sided test of share ÷ uniform against {floor:g}, Bonferroni over all {total} "
                      f"heads; clearly above (layer, head): {punct_heads['heads'] or 'none'}",
                      "heads averaged, per layer: "
                      + "; ".join(f"layer {l + 1} {iv.format('.2f')}x" for l, iv in enumerate(ratio_ci))]


def length_finding(comparisons: dict, n_packed: int, n_short: int) -> tuple[str, list[str]]:
    """Whether dividing by the uniform share makes short and packed inputs comparable, as
    ``(sentence, details)``: ``comparisons`` maps each token class to :func:`compare_layers` of
    its share ÷ uniform share, short minus packed, paired on the same sentences."""
    from helpers.layerwalk.compute import layers_phrase, names_phrase

    differs = {c: d["above"] + d["below"] for c, d in comparisons.items()}
    same = [c for c, v in differs.items() if not v]
    sentence = (("Dividing by the even share does not make the two lengths comparable: the short and packed ratios "
                 "differ for " + "; ".join(f"{c} in {layers_phrase(v)}" for c, v in differs.items() if v)
                 + (f"; we cannot tell for {names_phrase(same)}" if same else "")
                 if len(same) < len(differs) else
                 "We cannot tell whether the short and packed ratios differ, for any class")
                + f" ({n_packed} packed inputs and their own {n_short} short pairs).")
    return sentence, [line for c, d in comparisons.items() for line in [f"{c}:"] + [v.text for v in d["verdicts"]]]


def norm_finding(norm_vs_weight: dict, head_vs_weight: dict, n_inputs: int, paper_label: str) -> tuple[str, list[str]]:
    """Kobayashi et al.'s norm-based share against the weight share, as ``(sentence, details)``:
    ``norm_vs_weight`` maps each token class to :func:`compare_layers` of the layer-level norm-based
    share minus the weight share (the sentence reads these), ``head_vs_weight`` the same for the
    per-head variant (folded in the details); ``paper_label`` says how the loaded model relates to
    the paper's BERT-base."""
    from helpers.layerwalk.compute import names_phrase

    follow = [c for c, w in norm_vs_weight.items() if len(w["below"]) == len(w["verdicts"])]
    sentence = ("Counting what each key passes on (Kobayashi et al.'s norm-based share) instead of its weight, the "
                "share is " + "; ".join(f"for {c}, {compare_sentence(w, 'larger', 'smaller')}"
                                        for c, w in norm_vs_weight.items())
                + f". Kobayashi et al. (2020, BERT-base; {paper_label}) found all three shrink; here "
                + (f"only {names_phrase(follow)} shrinks in every layer." if follow
                   else "none of them shrinks in every layer."))
    details = [line for c, w in norm_vs_weight.items()
               for line in [f"{c}, norm-based (layer level) minus weight share, paired over {n_inputs} inputs:"]
               + [v.text for v in w["verdicts"]]]
    return sentence, details + [f"{c}, per-head variant: " + compare_sentence(w, "larger", "smaller")
                                for c, w in head_vs_weight.items()]


def boundary_finding(twice: dict, sep_excess, sep_norm, punct_ratio) -> tuple[str, list[str]]:
    """The "[SEP] marks the boundary" reading, as ``(sentence, details)``: ``twice``
    (:func:`above_threshold` of each input's [SEP] share ÷ uniform share against 2), ``sep_excess``
    (those ratios, ``[n_inputs, L]``), ``sep_norm`` ([SEP]'s norm-based ÷ weight share per layer)
    and ``punct_ratio`` (punctuation's share ÷ uniform share per layer)."""
    from helpers.layerwalk.compute import layers_phrase

    enriched = [l + 1 for l in twice["above"]]
    sentence = ((f"[SEP] gets clearly more than twice its even share in {layers_phrase(enriched)}; there what it "
                 "passes on keeps " + ", ".join(f"{sep_norm[l - 1]:.0%}" for l in enriched) + " of its weight share."
                 if enriched else
                 "In no layer does [SEP] get clearly more than twice its even share"
                 f" (at most {sep_excess.mean(0).max():.1f}x on average): this model gives [SEP] no excess of "
                 "attention to explain, boundary or not.")
                + f" Punctuation gets at most {float(punct_ratio.max()):.1f}x its even share.")
    return sentence, ["per layer, one-sided test of [SEP] share ÷ uniform against 2, Bonferroni over the layers: "
                      + "; ".join(f"layer {l + 1} {iv.format('.2f')}" for l, iv in enumerate(twice["intervals"]))]


def self_attention_finding(self_rank, self_half: dict, trained_vs_random: dict, n_inputs: int) -> tuple[str, list[str]]:
    """[CLS]'s attention on itself, as ``(sentence, details)``: the highest layer and those that
    could be as high (``self_rank``, :func:`~helpers.common.stats.rank_layers`), the layers surely
    above one half (``self_half``, :func:`above_threshold`) and where the trained model differs from
    the random-weight one (``trained_vs_random``, :func:`compare_layers`)."""
    from helpers.layerwalk.compute import layers_phrase, profile_finding

    L = len(trained_vs_random["verdicts"])
    over_half = [l + 1 for l in self_half["above"]]
    learned = sorted(trained_vs_random["above"] + trained_vs_random["below"])
    sentence, details = profile_finding(self_rank, [f"layer {l}" for l in range(1, L + 1)],
                                        what="[CLS]'s attention on itself", percent=True)
    sentence = (f"{sentence} It is clearly above half in " + (layers_phrase(over_half) if over_half else "no layer")
                + " and differs from the random-weight model (about 1/n by construction) in "
                + ("every layer" if len(learned) == L else
                   layers_phrase(learned) if learned else "no layer we can tell")
                + f" ({n_inputs} short pairs).")
    return sentence, (details + ["trained minus random weights, paired:"]
                      + [v.text for v in trained_vs_random["verdicts"]]
                      + ["above one half, one-sided, Bonferroni over the layers: "
                         + "; ".join(f"layer {l + 1} {iv.percent()}" for l, iv in enumerate(self_half["intervals"]))])
