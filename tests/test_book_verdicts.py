"""Every verdict the built lessons print agrees with its own p, and no p at its method's floor is
printed as an exact value (issue 44): read from the book build's executed notebooks."""

import re

import nbformat
import pytest

from test_lessons_layer_claims import EXECUTED, REQUIRED

# "A higher than B: A - B = ... (99.5 % interval, Bonferroni over 10 comparisons; Bonferroni-adjusted p = 0.003)"
DIFFERS = re.compile(r"\b(higher|lower) than [^:]{1,80}: .{0,200}?\(([^()]*?)\bp (=|<=) ([0-9.e-]+)\)")


def _texts():
    books = sorted(EXECUTED.glob("[0-9][0-9]_*.ipynb")) if EXECUTED.exists() else []
    if not books:
        (pytest.fail if REQUIRED else pytest.skip)("no executed lessons: run `bash course.sh book` first")
    for path in books:
        nb = nbformat.read(path, as_version=4)
        for cell in nb.cells:
            for out in cell.get("outputs", []) if cell.cell_type == "code" else []:
                yield path.name, out.get("text", "") + "".join(out.get("data", {}).get("text/plain", ""))


def test_no_printed_difference_has_a_p_that_contradicts_it():
    bad = []
    for name, text in _texts():
        for m in DIFFERS.finditer(text):
            if float(m.group(4)) >= 0.05:
                bad.append(f"{name}: {m.group(0)[:160]}")
    assert not bad, "verdicts that contradict their own p:\n" + "\n".join(bad)


def test_verdict_texts_print_the_p_with_the_one_formatter():
    from helpers.common.stats import Interval, format_p, verdict

    v = verdict(Interval(0.05, 0.02, 0.08, 0.995), p_value=0.0013, p_floor=0.0013, family=10)
    assert v.p_text == format_p(0.0013, 0.0013) == "p <= 0.0013" and "p <= 0.0013" in v.text
    floored = verdict(Interval(0.05, 0.02, 0.08, 0.995), p_value=0.076, p_floor=0.076, family=10)
    assert floored.kind == "inconclusive" and "too few units for 10 comparisons" in floored.text


def _all_text(nb) -> str:
    return "".join(o.get("text", "") + "".join(o.get("data", {}).get("text/plain", ""))
                   + "".join(o.get("data", {}).get("text/html", ""))
                   for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))


def test_lesson_15_sets_the_probe_beside_the_character_window():
    from test_lessons_layer_claims import claim_sentences, executed

    nb = executed("chinese_layer_by_layer")
    assert "character window" in _all_text(nb)
    assert any("Against the character window" in s for s in claim_sentences(nb))


def test_lesson_08_judges_sinks_per_token():
    from test_lessons_layer_claims import claim_sentences, executed

    nb = executed("attention_across_layers")
    sentences = claim_sentences(nb)
    assert any("Per token, [CLS] gets more than 2x its even share per token" in s for s in sentences), sentences


def test_executed_lesson_06_shows_the_sentence_redraw_wider():
    from test_lessons_layer_claims import executed

    text = _all_text(executed("how_we_know"))
    m = re.search(r"Two tokens of one sentence correlate ([+-][\d.]+); redrawing whole sentences gives an interval "
                  r"([\d.]+) times as wide", text)
    assert m and float(m.group(1)) > 0 and float(m.group(2)) > 1, "lesson 06's first example does not show its idea"
