"""helpers/attribution/highlight.py on the real models: the attributions of a real head's decision
shown as highlighted text -- one span per token in input order, its text escaped, its colour's
side and strength following its score, the colour key, the plain-text form; English (the bundled
model, WordPieces, ``<`` and ``&``) and Chinese (m3e-small, one character per token)."""

import html
import importlib.util
import re
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

from helpers.attribution import compute as A
from helpers.attribution import highlight as H
from helpers.classify.compute import train_head
from helpers.common.data import load_banking77, load_intents_zh
from helpers.interventions import compute as C
from helpers.model.tokens import content_positions
from helpers.model.trace import trace_text
from zh_support import zh_loaded, zh_model, zh_tokenizer  # noqa: F401

ROOT = Path(__file__).resolve().parent.parent


class Rows(HTMLParser):
    """The token spans of every row: ``(text, background, text colour)``, in document order."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.rows, self.depth, self.style = [], None, None
        self.open_spans = 0

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "div" and attrs.get("class") == "course-hl-text":
            self.rows.append([])
        if tag == "span" and attrs.get("class") == "course-hl-token":
            style = dict(part.split(":", 1) for part in attrs["style"].split(";"))
            self.rows[-1].append(["", style["background"], style["color"]])
            self.depth = 0
        elif tag == "span" and self.depth is not None:
            self.depth += 1

    def handle_endtag(self, tag):
        if tag == "span" and self.depth is not None:
            if self.depth == 0:
                self.depth = None
            else:
                self.depth -= 1

    def handle_data(self, data):
        if self.depth is not None:
            self.rows[-1][-1][0] += data


def rgb(hex_colour: str) -> np.ndarray:
    return np.array([int(hex_colour[k:k + 2], 16) for k in (1, 3, 5)], dtype=float)


def head_for(tokenizer, model, split):
    head = train_head(C.pooled_features(tokenizer, model, split.texts, max_length=64, progress=False),
                      split.labels, split.num_classes, progress=False)
    return C.SentenceHead(head, "mean")


def real_scores(tokenizer, model, classifier, text):
    """The lesson's cheap methods (raw attention, rollout, gradient x input, occlusion) and
    Integrated Gradients at few steps, of the predicted class's logit, on the word tokens."""
    trace = trace_text(tokenizer, model, text)
    pred = int(A.sentence_logits(classifier, trace).argmax())
    scores = A.attribution_scores(model, classifier, trace, pred)
    scores["integrated gradients"] = A.integrated_gradients(tokenizer, model, classifier, trace, pred,
                                                            steps=(16,)).scores
    words = content_positions(trace)
    return trace, words, {m: np.asarray(s.detach().cpu(), dtype=float)[words] for m, s in scores.items()}


def check_rows(out, scores, pieces):
    """Every promise of the highlighted text, read back from its HTML."""
    parser = Rows()
    parser.feed(out.data)
    assert len(parser.rows) == len(scores), "one row per method"
    for (name, values), row in zip(scores.items(), parser.rows):
        assert [t for t, _, _ in row] == [p.text for p in pieces], f"{name}: one span per token, in order"
        scaled = values / np.nanmax(np.abs(values))
        colours = np.stack([rgb(bg) for _, bg, _ in row])
        red, blue = colours[:, 0], colours[:, 2]
        for v, r, b in zip(scaled, red, blue):
            if v > 0.05:
                assert r > b, f"{name}: a positive score is red"
            elif v < -0.05:
                assert b > r, f"{name}: a negative score is blue"
        distance = np.linalg.norm(255 - colours, axis=1)  # how far from white
        strongest = int(np.nanargmax(np.abs(values)))
        assert distance[strongest] == distance.max(), f"{name}: the strongest token has the strongest colour"
        for side in (scaled > 0, scaled < 0):  # on each side, a larger |score| is a stronger colour
            order = np.argsort(np.abs(scaled[side]))
            assert (np.diff(distance[side][order]) >= -1.0).all(), f"{name}: colours follow |score|"
        for _, bg, ink in row:  # dark backgrounds carry white text
            luminance = rgb(bg) @ [0.2126, 0.7152, 0.0722]
            assert (ink == H.LIGHT_TEXT) == (luminance < 0.5 * 255)
    assert "Colour key" in out.data and "linear-gradient" in out.data
    stops = re.search(r"linear-gradient\(to right, ([^)]*)\)", out.data)[1].split(", ")
    assert rgb(stops[0])[2] > rgb(stops[0])[0] and rgb(stops[-1])[0] > rgb(stops[-1])[2], "key: blue to red"
    assert "<script" not in out.data


@pytest.fixture(scope="module")
def english(tokenizer, model):
    train = load_banking77("train")
    classifier = head_for(tokenizer, model, train.only(train.names[:6]).sample(8, seed=0))
    text = "Is my card <blocked> & unreceived? 5 < 7"
    return text, real_scores(tokenizer, model, classifier, text)


def test_english_rows_escape_join_pieces_and_colour_by_sign(english):
    text, (trace, words, scores) = english
    pieces = H.trace_pieces(trace, words)
    assert any(t.startswith("##") for t in trace.tokens), "the sentence has a WordPiece split"
    assert "".join((" " if p.space else "") + p.text for p in pieces) == text, "the sentence as written"
    out = H.highlighted_text(scores, pieces, target="'x'", title="a <title>")
    raw = re.findall(r'<span class="course-hl-token"[^>]*>(.*?)</span>', out.data)
    assert raw == [html.escape(p.text) for p in pieces] * len(scores), "each token's text escaped, as written"
    assert {"&lt;", "&amp;"} <= set(raw)
    assert "a &lt;title&gt;" in out.data
    check_rows(out, scores, pieces)
    signed = [m for m in scores if m not in H.NEVER_NEGATIVE]
    assert any((v < 0).any() for m, v in scores.items() if m in signed), "a real decision has tokens against it"
    # the plain-text form names the tokens that carry most weight, method by method
    plain = repr(out)
    assert plain.splitlines()[0] == "a <title>" and f"sentence: {text}" in plain
    for m, v in scores.items():
        best = pieces[int(np.nanargmax(v))].text
        line = next(line for line in plain.splitlines() if line.strip().startswith(m))
        assert f"most weight: «{best}»" in line
        assert f"«{best}» +1.00" in line or f"«{best}» (in «" in line or v.max() < np.abs(v).max()
    # the caption is generated from the scores
    ig_top = pieces[int(np.argmax(scores["integrated gradients"]))].text
    assert out.data.count(html.escape(f"Integrated Gradients puts most weight on «{ig_top}»")) == 1


def test_long_inputs_are_cut_and_say_so(english):
    _, (trace, words, scores) = english
    pieces = H.trace_pieces(trace, words)
    out = H.highlighted_text(scores, pieces, target="'x'", max_tokens=3)
    parser = Rows()
    parser.feed(out.data)
    assert all(len(row) == 3 for row in parser.rows)
    assert f"the first 3 of {len(pieces)} tokens are shown" in out.data
    with pytest.raises(ValueError, match="one score per token"):
        H.highlighted_text({"occlusion": [1.0]}, pieces, target="'x'")


def test_tokens_without_a_trace_join_wordpieces_and_chinese_characters():
    pieces = H.as_pieces(["un", "##re", "##ceived", "card", "北", "京", "!"])
    assert "".join((" " if p.space else "") + p.text for p in pieces) == "unreceived card 北京 !"
    # a caption names a piece of a longer word with its word
    caption = H.weight_sentence({"integrated gradients": [0.1, 0.9, -0.2, 0.3, 0.0, 0.1, 0.0]}, pieces)
    assert caption.startswith("Integrated Gradients puts most weight on «re» (in «unreceived»)")
    assert caption.endswith("pushes most against it, by Integrated Gradients, is «ceived» (in «unreceived»).")
    assert H.token_colour(float("nan"))[0] == H.MASKED_COLOR


def test_chinese_rows_one_character_each_marked_zh(zh_tokenizer, zh_model):  # noqa: F811
    train = load_intents_zh("train")
    classifier = head_for(zh_tokenizer, zh_model, train.sample(4, seed=0))
    text = "明天北京会下雨吗？"
    trace, words, scores = real_scores(zh_tokenizer, zh_model, classifier, text)
    pieces = H.trace_pieces(trace, words)
    assert "".join((" " if p.space else "") + p.text for p in pieces) == text  # no spaces between characters
    out = H.highlighted_text(scores, pieces, target="'天气'")
    check_rows(out, scores, pieces)
    assert out.data.count('<span lang="zh">') == len(scores) * len(pieces)
    assert repr(out).count(f"sentence: {text}") == 1
    # the website's Chinese pass (book/postprocess.py) finds every character, already marked
    spec = importlib.util.spec_from_file_location("book_postprocess_hl", ROOT / "book" / "postprocess.py")
    post = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(post)
    marked, used = post.mark_chinese(out.data)
    assert set(text) <= used and '<span lang="zh"><span lang="zh">' not in marked  # tokens not wrapped twice
    before, after = Rows(), Rows()
    before.feed(out.data)
    after.feed(marked)
    assert after.rows == before.rows
