"""Prose against output for the layer-story lessons (walking through the layers, attention across
layers, meaning in context, the Chinese lesson), read from the copies the book build executed
(``build/book/executed/``, full budget; run ``bash course.sh book`` first, as for the static-export
test).

Issue 33 found sentences that the output contradicted: a segmentation example typed into the
prose that the labels disagree with, "other seeds give other probabilities" while every seed
printed the same, a summary citing comparisons that did not exist. Here:

* every line of a lesson's generated summary ("In this run") is a claim the lesson printed above;
* the Chinese lesson's segmentation lines agree with the data (jieba's words in
  ``data/zh_words/words.jsonl``), and its example sentence counts the agreement the lines show;
* its sentence about the seeds says what the seeds printed;
* no visible output of these lessons speaks statistics (issue 35): the words of
  ``STATISTICS_TERMS`` appear only inside the folded "How we know" blocks.

The lessons are found by name, not number (lessons get renumbered)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import nbformat
import pytest

from helpers.common.claims import STATISTICS_TERMS

ROOT = Path(__file__).resolve().parent.parent
EXECUTED = ROOT / "build" / "book" / "executed"
REQUIRED = os.environ.get("COURSE_REQUIRE_BROWSER") == "1"
STORIES = ("walking_through_the_layers", "attention_across_layers", "meaning_in_context", "chinese_layer_by_layer")
WITH_SUMMARY = ("attention_across_layers", "meaning_in_context", "chinese_layer_by_layer")


def lesson(name: str) -> Path:
    found = sorted((ROOT / "lessons").glob(f"[0-9][0-9]_{name}.ipynb"))
    assert len(found) == 1, f"expected one lesson named *_{name}.ipynb, found {found}"
    return found[0]


def executed(name: str):
    """The book build's executed copy of the lesson; skips (fails in CI) when missing or stale."""
    source = lesson(name)
    path = EXECUTED / source.name
    code = lambda nb: [c.source for c in nb.cells if c.cell_type == "code"]  # noqa: E731
    problem = None
    if not path.exists():
        problem = f"no executed copy at {path} (run `bash course.sh book` first)"
    elif code(nbformat.read(path, as_version=4)) != code(nbformat.read(source, as_version=4)):
        problem = f"{path} is older than {source.name}: run `bash course.sh book`"
    if problem:
        if REQUIRED:
            pytest.fail(problem)
        pytest.skip(problem)
    return nbformat.read(path, as_version=4)


def outputs(nb):
    return [(i, o) for i, c in enumerate(nb.cells) if c.cell_type == "code" for o in c.get("outputs", [])]


def claim_sentences(nb) -> list[str]:
    """The plain sentences of every claim the lesson displayed (``helpers.common.claims.Claim``)."""
    found = []
    for _, o in outputs(nb):
        html = o.get("data", {}).get("text/html", "")
        if 'class="course-claim"' in html:
            found.append(o["data"]["text/plain"].splitlines()[0])
    return found


def visible_text(nb) -> list[str]:
    """What a reader sees without unfolding anything: printed text, tables, and each claim's sentence."""
    seen = []
    for _, o in outputs(nb):
        if o.output_type == "stream":
            if not o.text.startswith(("Not yet", "Correct")):  # an exercise checker may name an API
                seen.append(o.text)
        elif "data" in o:
            html = o["data"].get("text/html", "")
            plain = o["data"].get("text/plain", "")
            if plain.startswith(("Not yet", "Correct")):  # an exercise checker may name an API
                continue
            if 'class="course-claim"' in html:
                seen.append(plain.splitlines()[0])
            elif html:
                seen.append(re.sub(r"<details.*?</details>", "", html, flags=re.S))
            else:
                seen.append(plain)
    return seen


def summary_lines(nb) -> list[str]:
    marker = next((i for i, c in enumerate(nb.cells) if c.cell_type == "markdown" and "In this run" in c.source), None)
    assert marker is not None, "the summary has no generated 'In this run' part"
    text = "".join(o.get("text", "") for c in nb.cells[marker + 1:marker + 2] for o in c.get("outputs", []))
    return [line[2:] for line in text.splitlines() if line.startswith("* ")]


@pytest.mark.slow
@pytest.mark.parametrize("name", WITH_SUMMARY)
def test_the_summary_repeats_claims_the_lesson_printed(name):
    nb = executed(name)
    lines, claims = summary_lines(nb), claim_sentences(nb)
    assert lines, "the generated summary printed nothing"
    for line in lines:
        assert line in claims, f"summary line not among the lesson's claims: {line[:120]}"


@pytest.mark.slow
@pytest.mark.parametrize("name", STORIES)
def test_no_statistics_words_outside_the_folded_blocks(name):
    nb = executed(name)
    for text in visible_text(nb):
        hits = [t for t in STATISTICS_TERMS if t in text]
        assert not hits, f"visible output uses {hits}: {text[:200]}"


@pytest.mark.slow
def test_the_chinese_segmentation_lines_agree_with_the_data():
    nb = executed("chinese_layer_by_layer")
    words = {}
    with open(ROOT / "data" / "zh_words" / "words.jsonl", encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                row = json.loads(line)
                words[row["text"]] = "|".join(row["words"])
    text = "".join(o.get("text", "") for _, o in outputs(nb) if o.output_type == "stream")
    jieba = dict(re.findall(r"^(.+?), jieba: (\S+)$", text, flags=re.M))
    probes = re.findall(r"^(.+?), probe at (.+?): (\S+)$", text, flags=re.M)
    assert jieba and probes, "the lesson printed no segmentation lines"
    for label, cut in jieba.items():
        assert words.get(cut.replace("|", "")) == cut, f"{label}: printed {cut}, the data say otherwise"
    # the example sentence counts the agreement the printed lines show
    claim = next(s for s in claim_sentences(nb) if s.startswith("jieba, whose words the probe learns"))
    held = next(label for label in jieba if label.startswith("closest held-out") or label.endswith("(held out)"))
    truth = jieba[held]

    def starts(cut):
        out, offset = set(), 0
        for w in cut.split("|"):
            out.add(offset)
            offset += len(w)
        return out

    n = len(truth.replace("|", ""))
    for label, layer, cut in probes:
        if label == held:
            agree = sum((p in starts(cut)) == (p in starts(truth)) for p in range(n))
            assert f"{agree} of {n} characters at {layer}" in claim, (layer, cut, truth, claim)


@pytest.mark.slow
def test_the_seed_sentence_says_what_the_seeds_printed():
    nb = executed("chinese_layer_by_layer")
    text = "".join(o.get("text", "") for _, o in outputs(nb) if o.output_type == "stream")
    seeds = re.findall(r"^seed \d+: (\S+) ([\d.]+)%$", text, flags=re.M)
    assert len(seeds) >= 2, "the lesson printed no per-seed predictions"
    claim = next(s for s in claim_sentences(nb) if "seeds predict" in s or s.startswith("The seeds disagree"))
    intents = {i for i, _ in seeds}
    if len(intents) == 1:
        probs = sorted(float(p) for _, p in seeds)
        assert f"seeds predict {intents.pop()!r}" in claim
        assert f"from {probs[0]:.1f}% to {probs[-1]:.1f}%" in claim
    else:
        assert claim.startswith("The seeds disagree") and all(i in claim for i in intents)


def test_the_checks_catch_what_they_look_for():
    """The parsing above on a made-up notebook: a term inside the fold is fine, outside it is seen."""
    from helpers.common.claims import Claim

    claim = Claim("Layer 4 is highest.", ["Bonferroni over 6 comparisons; p = 0.01"])
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("x")
    cell.outputs = [nbformat.v4.new_output("display_data", data={"text/plain": repr(claim),
                                                                 "text/html": claim._repr_html_()}),
                    nbformat.v4.new_output("stream", name="stdout", text="Holm over 6 layers\n")]
    nb.cells = [cell, nbformat.v4.new_markdown_cell("In this run:"), nbformat.v4.new_code_cell("y")]
    nb.cells[2].outputs = [nbformat.v4.new_output("stream", name="stdout", text="* Layer 4 is highest.\n* typed\n")]
    assert claim_sentences(nb) == ["Layer 4 is highest."]
    seen = visible_text(nb)
    assert not any("Bonferroni" in t for t in seen) and any("Holm" in t for t in seen)
    assert summary_lines(nb) == ["Layer 4 is highest.", "typed"]
