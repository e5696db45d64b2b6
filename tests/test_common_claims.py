"""helpers.common.claims: the plain sentence comes from the verdict's numbers, the statistics sit folded beneath."""

import pytest

from helpers.common.claims import STATISTICS_TERMS, Claim, claim, plain_sentence, show_claim
from helpers.common.stats import Interval, mcnemar, verdict


def _mcnemar_verdict(a_right: int, b_right: int, n: int = 400, margin=None):
    a = [1] * a_right + [0] * (n - a_right)
    b = [1] * b_right + [0] * (n - b_right)
    return mcnemar(a, b).verdict("mean pooling", "[CLS]", margin=margin)


def test_a_difference_reads_as_one_plain_sentence_with_its_size():
    v = _mcnemar_verdict(360, 320)  # 40 items only mean pooling gets right
    assert v.kind == "higher"
    s = plain_sentence(v, more="beats", values=("90.0 %", "80.0 %"))
    assert s == "mean pooling beats [CLS] by about 10.0 points on this model (90.0 % vs 80.0 %)."
    assert not any(term.lower() in s.lower() for term in STATISTICS_TERMS)


def test_inconclusive_says_we_cannot_tell_never_no_effect():
    v = _mcnemar_verdict(322, 320)
    assert v.kind == "inconclusive"
    s = plain_sentence(v, units="400 test utterances", measure="classifies better")
    assert s.startswith("With 400 test utterances we cannot tell whether mean pooling or [CLS] classifies better")
    assert "no effect" not in s and "same" not in s


def test_equivalence_names_the_margin_set_beforehand():
    v = verdict(Interval(0.001, -0.004, 0.006), a="x", b="y", margin=0.02, percent=True,
                equivalence_interval=Interval(0.001, -0.003, 0.005, 0.90))
    assert v.kind == "equivalent"
    assert "within 2.0 points" in plain_sentence(v) and "before measuring" in plain_sentence(v)


def test_the_statistics_are_folded_in_html_and_follow_in_text():
    v = _mcnemar_verdict(360, 320)
    c = claim(v, more="beats", extra=["400 test utterances, one run each"])
    html = c._repr_html_()
    assert html.index("claim-sentence") < html.index("<details") and "<summary>How we know</summary>" in html
    assert v.text.split(":")[0] in html  # the verdict's own text is inside the fold
    assert html.index(c.sentence[:20]) < html.index("<details")
    text = repr(c)
    assert text.splitlines()[0] == c.sentence and "How we know:" in text.splitlines()[1]
    assert "Tango" in text  # the method is named, in the block


def test_show_claim_refuses_what_it_cannot_read():
    with pytest.raises(TypeError, match="Verdict or a Claim"):
        show_claim(0.5)
    shown = show_claim(Claim("a sentence", ["a detail"]))
    assert shown.sentence == "a sentence"  # the lesson can repeat it in its summary


def test_a_cell_that_ends_with_a_claim_shows_it_once():
    """IPython displays a cell's last value; the returned claim must not appear a second time."""
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output

    shell = InteractiveShell.instance()
    shell.run_cell("from helpers.common.claims import show_finding")
    with capture_output() as captured:
        shell.run_cell("show_finding('Layer 2 is the odd one out.', ['a detail'])")
    texts = [o.data.get("text/plain", "") for o in captured.outputs] + [captured.stdout]
    assert sum(t.count("Layer 2 is the odd one out.") for t in texts) == 1


def test_show_scorecard_is_one_call_with_the_statistics_folded(monkeypatch):
    """Part 3's popular stories (issue 49): a scorecard without pandas' index, every cell whole
    (no '...'), the published heading says how the model relates to BERT-base when told, and
    every row's evidence sits in the fold beneath, in the rows' order."""
    import re

    import IPython.display

    from helpers.common.claims import Claim, Scorecard, scorecard_frame, show_scorecard

    shown = []
    monkeypatch.setattr(IPython.display, "display", shown.append)

    long_result = "the random-pair cosine rises " + "and rises " * 30 + "to its peak"
    rows = [("Norms grow", long_result, "Ethayarajh 2019 (BERT-base)", "split 45% [44, 47]"),
            ("A few dimensions dominate", "no dimension is an outlier", "Kovaleva 2021 (BERT-base)", "flags")]
    frame = show_scorecard(rows, "m", "same model")
    assert list(frame.columns) == ["popular story", "this model (m), this run",
                                   "published finding (paper, model); against BERT-base: same model"]
    assert list(frame["popular story"]) == ["Norms grow", "A few dimensions dominate"]
    page = Scorecard(frame, "t")._repr_html_()
    assert "course-scorecard" in page and "dataframe" in page  # the site styles it as a table
    assert not re.search(r"<th>\s*0\s*</th>", page), "pandas' 0..n-1 index is shown"
    assert long_result in page and long_result in repr(Scorecard(frame)), "a cell was cut short"
    assert "against BERT-base" not in scorecard_frame(rows, "m").columns[2]
    card, fold = shown
    assert isinstance(card, Scorecard) and card.title.startswith("2 popular stories")
    assert isinstance(fold, Claim) and fold.sentence == "The statistics behind the 2 popular stories:"
    assert fold.details == ["Norms grow: split 45% [44, 47]", "A few dimensions dominate: flags"]
    assert '<details class="how-we-know">' in fold._repr_html_()
