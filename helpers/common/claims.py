"""Measured claims, told first in plain words, with their statistics folded beneath.

A lesson hands :func:`show_claim` what it measured -- a :class:`~helpers.common.stats.Verdict`
(or a list of them), the numbers behind it, a table -- and gets one output:

* first, **one sentence in plain words**, generated from the numbers and the verdict, in the
  model's units ("mean pooling beats [CLS] by about 3.3 points on this model (84.5 % vs 81.2 %)";
  "with 12 words we cannot tell whether layer 5 or layer 6 separates the senses better");
* then a folded **"How we know"** block (HTML ``<details>``, which JupyterLab, Colab and the
  website all render closed until clicked) with the interval, the test, the correction for many
  comparisons, the margin and any table.

The text form (a terminal, nbval, nbconvert's text) prints the sentence first, then the block,
indented under a "How we know:" line. The wording rules of the verdicts hold: "inconclusive" is
never "no effect" (the sentence says "we cannot tell"), "equivalent" needs a margin stated first.
A sentence is never typed by hand: it changes with the model and the data.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field

from helpers.common.stats import Verdict

# The words of the statistics, which the plain sentence never uses (tests/test_lesson_style.py
# checks lessons against the same list).
STATISTICS_TERMS = ("p-value", "p =", "p <=", "Holm", "Bonferroni", "TOST", "bootstrap", "confidence interval",
                    "95 % interval", "95% interval", "McNemar", "Tango", "adjusted p", "significant")


@dataclass
class Claim:
    """One measured claim: ``sentence`` (plain words) and the ``details`` behind it (lines of text,
    and optionally a table with its title), shown as one output."""

    sentence: str
    details: list = field(default_factory=list)
    table: object = None  # a TitledTable or a pandas DataFrame
    summary: str = "How we know"

    def _details_html(self) -> str:
        parts = [f"<p>{html.escape(line)}</p>" for line in self.details]
        if self.table is not None:
            parts.append(self.table._repr_html_() if hasattr(self.table, "_repr_html_") else html.escape(str(self.table)))
        return "".join(parts)

    def _repr_html_(self) -> str:
        body = self._details_html()
        folded = (f'<details class="how-we-know"><summary>{html.escape(self.summary)}</summary>{body}</details>'
                  if body else "")
        return f'<div class="course-claim"><p class="claim-sentence">{html.escape(self.sentence)}</p>{folded}</div>'

    def __repr__(self) -> str:
        lines = [self.sentence]
        if self.details or self.table is not None:
            lines.append(f"  {self.summary}:")
            lines += [f"    {line}" for line in self.details]
            if self.table is not None:
                lines += ["    " + row for row in repr(self.table).splitlines()]
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.sentence


class ShownClaim(Claim):
    """A claim already displayed, as :func:`show_claim` and :func:`show_finding` return it: the
    lesson can read ``.sentence`` again (a summary repeats it) and a cell that ends with the call
    still shows the claim once (IPython's display of this object is a no-op)."""

    def _ipython_display_(self) -> None:
        return None


def amount(value: float, percent: bool, digits: int | None = None) -> str:
    """``3.3 points`` for an accuracy or share difference, else the number (3 significant digits)."""
    value = abs(value)
    if percent:
        return f"{100 * value:.{1 if digits is None else digits}f} points"
    return f"{value:.{3 if digits is None else digits}g}"


def plain_sentence(v: Verdict, *, more: str = "higher", less: str = "lower", measure: str | None = None,
                   values: tuple | None = None, units: str | None = None, where: str = "on this model") -> str:
    """The verdict ``v`` (of ``A - B``) as one plain sentence.

    ``more``/``less``: the verb phrase for A above / below B (``"beats"``, ``"keeps more of its
    direction than"``); ``measure``: what is compared, for the sentences that name it ("separates the
    senses better"); ``values``: A's and B's own numbers as text, put in brackets; ``units``: how
    many independent units the data had ("12 words"), for the "cannot tell" sentence."""
    a, b, d = v.a, v.b, v.difference
    size = amount(d.estimate, v.percent)
    bracket = "" if values is None else f" ({values[0]} vs {values[1]})"
    place = f" {where}" if where else ""
    if v.kind == "higher":
        return f"{a} {more} {b} by about {size}{place}{bracket}."
    if v.kind == "lower":
        return f"{a} {less} {b} by about {size}{place}{bracket}."
    if v.kind == "equivalent":
        margin = amount(v.margin, v.percent)
        return (f"{a} and {b} come out the same within {margin}{place}{bracket}, the margin we set before "
                "measuring.")
    with_what = f"With {units} " if units else "With these data "
    return (f"{with_what}we cannot tell whether {a} or {b} {measure or 'comes out higher'}{place}{bracket}: "
            "the difference could go either way.")


def verdict_details(v: Verdict) -> list[str]:
    """The lines of the "How we know" block for one verdict: its full text (interval, level, test,
    correction, margin, p-value)."""
    return [v.text]


def claim(v: Verdict, *, table=None, extra: list | tuple = (), **sentence_kw) -> Claim:
    """A :class:`Claim` from one verdict: :func:`plain_sentence` (``sentence_kw`` go to it) above
    the verdict's full text, ``extra`` lines and ``table``."""
    return Claim(plain_sentence(v, **sentence_kw), verdict_details(v) + list(extra), table)


def show_claim(item, *, table=None, extra: list | tuple = (), sentence: str | None = None, **sentence_kw) -> ShownClaim:
    """Display one claim: ``item`` is a :class:`~helpers.common.stats.Verdict` (its sentence
    generated by :func:`plain_sentence`), or a :class:`Claim` already built (:func:`claim`).
    ``sentence`` replaces the generated sentence with one the caller generated from the numbers
    (never a hand-typed result). Returns the claim as a :class:`ShownClaim` (a cell that ends
    with the call shows it once)."""
    from IPython.display import display

    if isinstance(item, Claim):
        c = item
    elif isinstance(item, Verdict):
        c = claim(item, table=table, extra=extra, **sentence_kw)
        if sentence is not None:
            c.sentence = sentence
    else:
        raise TypeError(f"show_claim takes a Verdict or a Claim, got {type(item).__name__}.")
    display(c)
    return ShownClaim(c.sentence, c.details, c.table, c.summary)


def show_finding(sentence: str, details: list | tuple = (), table=None) -> ShownClaim:
    """Display a claim whose plain sentence the lesson generated from its numbers (a ranking, a
    count, a share), with the statistics behind it folded beneath (build one without showing
    it: ``Claim(sentence, details, table)``)."""
    from IPython.display import display

    c = Claim(sentence, list(details), table)
    display(c)
    return ShownClaim(c.sentence, c.details, c.table, c.summary)


def claims_frame(rows, model_name: str, paper_label: str):
    """A layer-story lesson's "claims tested" table as a ``DataFrame``: the first three fields of
    each row of its ``claim_rows`` (popular claim, this model's live result, the published finding;
    the evidence field stays out), the result column named after ``model_name`` and the finding's
    heading saying how the loaded model relates to the papers' BERT-base (``paper_label``)."""
    import pandas as pd

    return pd.DataFrame([r[:3] for r in rows], columns=[
        "popular claim", f"this model ({model_name}), live",
        f"published finding (paper, model); against BERT-base: {paper_label}"])


def scorecard_frame(rows, model_name: str, paper_label: str | None = None):
    """The "popular stories" of a Part 3 lesson as a scorecard ``DataFrame``, one row per story
    and no index: the story, this model's verdict on it in this run, and the published finding
    (paper and model; with ``paper_label``, the heading says how the loaded model relates to the
    papers' BERT-base). ``rows`` are ``(story, this model's result, published finding, evidence)``,
    as each lesson's ``claim_rows`` gives them; the evidence is the fold beneath
    (:func:`show_scorecard`)."""
    import pandas as pd

    published = "published finding (paper, model)" + (f"; against BERT-base: {paper_label}" if paper_label else "")
    return pd.DataFrame([r[:3] for r in rows], columns=[
        "popular story", f"this model ({model_name}), this run", published])


class Scorecard:
    """A scorecard (:func:`scorecard_frame`) shown as one table without pandas' 0..n-1 index and
    without truncated cells: HTML for Jupyter and the website (``course-scorecard``: the story
    in bold), aligned text for a terminal."""

    def __init__(self, frame, title: str | None = None):
        self.frame, self.title = frame, title

    def _repr_html_(self) -> str:
        import pandas as pd

        with pd.option_context("display.max_colwidth", None):
            body = self.frame.to_html(index=False, notebook=True, classes="course-scorecard")
        if self.title:
            opening = re.search(r"<table\b[^>]*>", body)
            body = (f'{body[:opening.end()]}<caption class="course-table-title">{html.escape(self.title)}'
                    f"</caption>{body[opening.end():]}")
        return body

    def __repr__(self) -> str:
        import pandas as pd

        with pd.option_context("display.max_colwidth", None, "display.width", 200):
            text = self.frame.to_string(index=False)
        return f"{self.title}\n{text}" if self.title else text


def show_scorecard(rows, model_name: str, paper_label: str | None = None,
                   evidence: str = "The statistics behind the {n}:") -> object:
    """Display a Part 3 lesson's popular stories as a :class:`Scorecard` (story, this model's
    verdict, the published finding), then the evidence of every row folded beneath it (one
    :class:`Claim` whose details read ``"story: evidence"``); returns the scorecard's
    ``DataFrame`` (for a test or an exercise to read). The lesson's cell is this one call."""
    from IPython.display import display

    frame = scorecard_frame(rows, model_name, paper_label)
    stories = f"{len(rows)} popular {'story' if len(rows) == 1 else 'stories'}"
    display(Scorecard(frame, f"{stories}, checked on this model in this run"))
    display(Claim(evidence.format(n=stories), [f"{r[0]}: {r[3]}" for r in rows]))
    return frame
