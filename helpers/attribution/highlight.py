"""Lesson 13: attribution shown as highlighted text -- the sentence itself, each token's background
coloured by its score, one row per method, as Captum's and Ecco's viewers show it.

* :func:`trace_pieces` -- what each token looks like in the sentence (:class:`Piece`): its own
  characters of the text (a WordPiece ``##ceived`` is ``ceived``, joined to the piece before
  it; a Chinese character needs no space), and whether a space comes before it;
* :func:`highlighted_text` -- the rows as one light HTML output (no script, inline styles only,
  text escaped, long inputs wrap) with a labelled colour key, and a plain-text form that names
  the tokens carrying most weight (:class:`HighlightedText`, an ``IPython.display.HTML``);
* :func:`weight_sentence` -- the caption in plain words, generated from the scores ("Integrated
  Gradients puts most weight on «received»; occlusion agrees; ...").

Colours: the course's diverging map (``common.style.DIVERGING``, ColorBrewer's RdBu, reversed:
safe for the common colour-vision deficiencies), each row divided by the largest absolute score of
its method on the tokens shown, so every row runs from -1 (blue) through 0 (white) to +1 (red).
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass

import numpy as np
from IPython.display import HTML

from helpers.common.data import is_cjk_char
from helpers.common.style import DIVERGING, MASKED_COLOR, to_numpy

# what one unit of each method's score is (the rows' labels say it)
METHOD_UNITS = {
    "raw attention": "attention weight",
    "attention rollout": "rollout share",
    "norm-based attention": "weight x norm",
    "gradient x input": "logit",
    "integrated gradients": "logit",
    "occlusion": "logit",
}
NEVER_NEGATIVE = ("raw attention", "attention rollout", "norm-based attention")
MAX_TOKENS = 256  # past this many tokens the rows show the first MAX_TOKENS (the output says so)
KEY_STEPS = 9  # colour stops of the key's bar
DARK_TEXT, LIGHT_TEXT = "#111111", "#ffffff"


@dataclass(frozen=True)
class Piece:
    """One token as the sentence shows it: ``text`` (its own characters), ``token`` (the
    tokenizer's string, e.g. ``##ceived``) and ``space`` (a space before it in the sentence)."""

    text: str
    token: str
    space: bool


def trace_pieces(trace, positions=None) -> list[Piece]:
    """:class:`Piece` of every position in ``positions`` (default: all but [CLS], [SEP], [PAD]),
    read from where each token sits in the traced text; a token without a place in the text shows
    its tokenizer string, with ``##`` joined to the piece before it."""
    from helpers.model.tokens import content_positions

    positions = content_positions(trace) if positions is None else list(positions)
    pieces, last_end = [], None
    for k, p in enumerate(positions):
        token = trace.tokens[p]
        span = trace.char_span(p)
        source = trace.text if trace.sequence_ids[p] != 1 else trace.text_pair
        if span is None or source is None:
            continued = token.startswith("##")
            text = token[2:] if continued and len(token) > 2 else token
            space = k > 0 and not continued
        else:
            text = source[span[0]:span[1]]
            before = source[last_end:span[0]] if last_end is not None and last_end <= span[0] else ""
            space = k > 0 and (any(ch.isspace() for ch in before) or last_end is None or last_end > span[0])
            last_end = span[1]
        pieces.append(Piece(text, token, space))
    return pieces


def as_pieces(tokens) -> list[Piece]:
    """``tokens`` (strings or :class:`Piece`) as pieces: a ``##`` WordPiece joins the piece before
    it, a CJK character its CJK neighbour, every other token gets a space before it."""
    out = []
    for k, t in enumerate(tokens):
        if isinstance(t, Piece):
            out.append(t)
            continue
        t = str(t)
        continued = t.startswith("##") and len(t) > 2
        text = t[2:] if continued else t
        cjk = k > 0 and _is_cjk(text[:1]) and _is_cjk(out[-1].text[-1:])
        out.append(Piece(text, t, k > 0 and not continued and not cjk))
    return out


def _chinese(ch: str) -> bool:
    """A CJK character, or CJK punctuation and full-width forms (``？``, ``，``), which the website
    sets in its Chinese font too (book/postprocess.py, ``CJK_RUN``)."""
    return is_cjk_char(ch) or 0x3000 <= ord(ch) <= 0x303F or 0xFF00 <= ord(ch) <= 0xFFEF


def _is_cjk(text: str) -> bool:
    return len(text) == 1 and _chinese(text)


def token_colour(value: float) -> tuple[str, str]:
    """``(background, text colour)`` for a score in -1..1 on the course's diverging map; NaN (a token
    the method does not score) is grey. The text is white where the background is dark."""
    if value is None or not math.isfinite(value):
        return MASKED_COLOR, DARK_TEXT
    import matplotlib

    r, g, b, _ = matplotlib.colormaps[DIVERGING]((max(-1.0, min(1.0, value)) + 1) / 2)
    luminance = 0.2126 * r + 0.7152 * g + 0.0722 * b
    hexed = "#{:02x}{:02x}{:02x}".format(*(round(255 * c) for c in (r, g, b)))
    return hexed, (LIGHT_TEXT if luminance < 0.5 else DARK_TEXT)


def _normalised(scores: dict, n: int) -> dict:
    rows = {}
    for name, values in scores.items():
        v = np.asarray(to_numpy(values), dtype=float).reshape(-1)
        if v.shape != (n,):
            raise ValueError(f"every method needs one score per token ({n}); {name!r} has {v.size}.")
        top = np.nanmax(np.abs(v)) if np.isfinite(v).any() else 0.0
        rows[name] = (v, v / top if top > 0 else np.zeros_like(v), float(top))
    return rows


def _quote(text: str) -> str:
    return f"«{text}»"


def _display(p: Piece) -> str:
    return p.text if p.text.strip() else p.token


def _named(pieces: list[Piece], i: int) -> str:
    """Piece ``i`` as a caption names it, in quotes: ``«card»``; a WordPiece of a longer word with
    its word, ``«rre» (in «currencies»)``."""
    start, end = i, i + 1
    while start > 0 and pieces[start].token.startswith("##"):
        start -= 1
    while end < len(pieces) and pieces[end].token.startswith("##"):
        end += 1
    named = _quote(_display(pieces[i]))
    return named if end - start == 1 else f"{named} (in {_quote(''.join(p.text for p in pieces[start:end]))})"


def top_tokens(values: np.ndarray, pieces: list[Piece], k: int = 3, sign: int = 1) -> list[tuple[str, float]]:
    """The ``k`` pieces with the highest positive score (``sign=-1``: the lowest negative ones), as
    ``(name in quotes, score)``."""
    order = [i for i in np.argsort(-sign * np.nan_to_num(values, nan=-sign * np.inf))
             if np.isfinite(values[i]) and sign * values[i] > 0]
    return [(_named(pieces, i), float(values[i])) for i in order[:k]]


def weight_sentence(scores: dict, tokens, reference: str | None = None) -> str:
    """The caption in plain words: which token the ``reference`` method (default Integrated
    Gradients, else the first signed method, else the first) scores highest, which methods agree
    on that token, where the others put their highest score, and the token that pushes most
    against the decision, if any."""
    pieces = as_pieces(tokens)
    rows = _normalised(scores, len(pieces))
    if not rows:
        raise ValueError("give at least one {method: scores} row.")
    signed = [m for m in rows if m not in NEVER_NEGATIVE]
    if reference is None:
        reference = "integrated gradients" if "integrated gradients" in rows else (signed or list(rows))[0]
    firsts = {m: (int(np.nanargmax(v)) if np.nanmax(v, initial=-np.inf) > 0 else None)
              for m, (v, _, _) in rows.items()}
    if firsts[reference] is None:
        return f"{_name(reference)} gives none of these tokens a positive score."
    word = _named(pieces, firsts[reference])
    sentence = f"{_name(reference)} puts most weight on {word}"
    agree = [m for m in rows if m != reference and firsts[m] == firsts[reference]]
    others: dict[int, list[str]] = {}
    for m in rows:
        if m != reference and m not in agree and firsts[m] is not None:
            others.setdefault(firsts[m], []).append(m)
    if agree:
        sentence += f"; {_names(agree)} {'agrees' if len(agree) == 1 else 'agree'}"
    if others:
        sentence += "; " + "; ".join(f"{_names(ms)} on {_named(pieces, i)}" for i, ms in others.items())
    against = top_tokens(rows[reference][0], pieces, 1, sign=-1)
    if against:
        sentence += f". The token that pushes most against it, by {_name(reference)}, is {against[0][0]}"
    return sentence + "."


def _name(method: str) -> str:
    return "Integrated Gradients" if method == "integrated gradients" else method


def _names(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


class HighlightedText(HTML):
    """Attribution rows as highlighted text: HTML for Jupyter, nbconvert and the website, and
    ``text`` for a terminal or a text export (``repr``)."""

    def __init__(self, markup: str, text: str):
        super().__init__(markup)
        self.text = text

    def __repr__(self) -> str:
        return self.text

    def _repr_pretty_(self, printer, cycle) -> None:
        printer.text(self.text)


def _span(piece: Piece, value: float, score: float, unit: str) -> str:
    background, ink = token_colour(value)
    label = f"{piece.token}: {score:+.3g} {unit}" if math.isfinite(score) else f"{piece.token}: not scored"
    text = html.escape(piece.text if piece.text else piece.token)
    if piece.text and all(_chinese(ch) for ch in piece.text):
        text = f'<span lang="zh">{text}</span>'  # the website's Chinese font (book/postprocess.py)
    return (f'{" " if piece.space else ""}<span class="course-hl-token" style="background:{background};'
            f'color:{ink};padding:0.15em 0.06em;border-radius:2px" title="{html.escape(label)}"'
            f' data-score="{score:.6g}">{text}</span>')


def _key(target: str, any_never_negative: bool) -> str:
    stops = ", ".join(token_colour(-1 + 2 * k / (KEY_STEPS - 1))[0] for k in range(KEY_STEPS))
    target_html = html.escape(target)
    attention = (" Attention-based rows are never negative: their red says where the model looks, not a push."
                 if any_never_negative else "")
    return (
        '<div class="course-hl-key" style="margin-top:0.6em;font-size:13px;line-height:1.4">'
        '<div style="display:flex;align-items:center;gap:0.5em;flex-wrap:wrap">'
        '<span style="white-space:nowrap">−1 pushes down</span>'
        f'<span aria-hidden="true" style="display:inline-block;width:9em;height:0.9em;'
        f'border:1px solid #999;background:linear-gradient(to right, {stops})"></span>'
        '<span style="white-space:nowrap">+1 pushes up</span></div>'
        f'<div>Colour key: a token\'s score ÷ the largest |score| of its method on these tokens (−1 to +1, '
        f'0 white). Red: the token pushes the logit of {target_html} up; blue: it pushes it down.'
        f'{attention} Hover a token for its score.</div></div>')


def highlighted_text(scores: dict, tokens, *, target: str, title: str = "", caption: str | None = None,
                     units: dict | None = None, max_tokens: int = MAX_TOKENS) -> HighlightedText:
    """The sentence once per method (``scores``: ``{method: [T]}``, one score per token of
    ``tokens``: strings or :class:`Piece`), each token's background coloured by its score divided
    by the largest |score| of its method, with a colour key that says what the colours mean
    (``target``: what the scores explain, e.g. ``"'card_arrival'"``). ``caption``: a sentence in
    plain words above the rows (default :func:`weight_sentence`). Past ``max_tokens`` tokens the
    first ``max_tokens`` are shown and the output says how many are left out."""
    pieces = as_pieces(tokens)
    if not scores:
        raise ValueError("give at least one {method: scores} row.")
    rows = _normalised(scores, len(pieces))
    units = {**METHOD_UNITS, **(units or {})}
    caption = weight_sentence(scores, pieces) if caption is None else caption
    shown = min(len(pieces), max_tokens)
    cut = (f"the first {shown} of {len(pieces)} tokens are shown; the largest |score| is over all of them"
           if shown < len(pieces) else "")
    blocks = []
    for name, (values, scaled, top) in rows.items():
        unit = units.get(name, "score")
        spans = "".join(_span(p, s, v, unit) for p, s, v in zip(pieces[:shown], scaled, values))
        blocks.append(
            '<div class="course-hl-row" style="margin:0.35em 0">'
            f'<div style="font-size:13px;opacity:0.85">{html.escape(name)}'
            f' <span style="white-space:nowrap">(largest |score| {top:.3g} {html.escape(unit)})</span></div>'
            f'<div class="course-hl-text" style="line-height:1.9;overflow-wrap:anywhere">{spans}</div></div>')
    head = f'<div style="font-weight:600">{html.escape(title)}</div>' if title else ""
    markup = (f'<div class="course-highlighted-text" style="max-width:100%">{head}'
              f'<p style="margin:0.2em 0 0.4em">{html.escape(caption)}</p>{"".join(blocks)}'
              + (f'<div style="font-size:13px">{html.escape(cut)}</div>' if cut else "")
              + _key(target, any(m in NEVER_NEGATIVE for m in rows)) + "</div>")
    return HighlightedText(markup, _plain(rows, pieces, title, caption, target, cut))


def _plain(rows: dict, pieces: list[Piece], title: str, caption: str, target: str, cut: str) -> str:
    sentence = "".join((" " if p.space else "") + p.text for p in pieces)
    lines = [title] if title else []
    lines += [caption, f"sentence: {sentence}",
              f"each method's score / its largest |score| (+: pushes the logit of {target} up, -: down):"]
    width = max(len(m) for m in rows)
    for name, (values, scaled, _) in rows.items():
        up = ", ".join(f"{t} {s:+.2f}" for t, s in top_tokens(scaled, pieces, 3)) or "none"
        down = top_tokens(scaled, pieces, 1, sign=-1)
        lines.append(f"  {name:<{width}}  most weight: {up}"
                     + (f"; most against: {down[0][0]} {down[0][1]:+.2f}" if down else ""))
    if cut:
        lines.append(cut)
    return "\n".join(lines)
