"""The website's tracks (issue 48): the English site and a Chinese one, built from the same lessons.

``python book/build.py --model bundled-zh`` (``bash course.sh book --model bundled-zh``) runs every
lesson with ``MODEL = "bundled-zh"`` (m3e-small, offline) and a Chinese ``SENTENCE`` injected after
its parameters cell (as ``tests/lesson_params.py`` does for the tests) and renders the site into a
folder beside the English one (``build/site-zh`` next to ``build/site``). Each home page and lesson
page links to the same page of the other track (:func:`track_link`).

A lesson whose data are still English stops with the course's one clear line (``LessonStop``,
``helpers/common/language.py``); on the Chinese track that is not a build failure: the page ends at
that line, with a note that the English track runs the lesson in full (:func:`end_at_stop`).

Figures draw Chinese with the course's font subset (``helpers/common/fonts/``) or a CJK font the
machine has (``helpers.common.style.use_cjk_font``); a character neither has is drawn as an empty
box and Matplotlib warns "Glyph ... missing": :func:`missing_glyphs` collects those warnings so the
build says which characters had no font.

Like build.py, this file imports no course code.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

STOP_ERROR = "LessonStop"  # helpers.common.language.LessonStop: a lesson that cannot run with this model


@dataclass(frozen=True)
class Track:
    """One language track of the site: the parameters injected into every lesson (none for the
    English track), the suffix of its output folder and the words of a link that leads to it."""

    key: str
    params: dict = field(default_factory=dict)
    suffix: str = ""
    label: str = ""
    lang: str = "en"
    name: str = "English"
    model_label: str = "the course's English model"  # what its lessons run, in words


ENGLISH = Track("en", {}, "", "English version (English model)", "en", "English")
ZH_SENTENCE = "明天北京会下雨吗？"  # a sentence none of the course's Chinese data holds
CHINESE = Track("zh", {"MODEL": "bundled-zh", "SENTENCE": ZH_SENTENCE, "LANGUAGE": "zh"}, "-zh",
                "中文版 (Chinese model)", "zh", "Chinese", "m3e-small")
MODELS = {"bundled-zh": CHINESE}


def track_for(model: str | None = None, sentence: str | None = None, budget: str | None = None) -> Track:
    """The track a build makes: English without ``model``, the Chinese track for ``"bundled-zh"``
    (``sentence`` replaces its default Chinese sentence; ``budget`` sets every lesson's ``BUDGET``:
    ``"quick"`` builds the track in minutes as a check that every lesson runs, not with its findings)."""
    if model is None:
        if sentence is not None or budget is not None:
            raise ValueError("--sentence and --budget need --model: the English site runs each lesson's own "
                             "SENTENCE at its full budget.")
        return ENGLISH
    if model not in MODELS:
        raise ValueError(f"--model {model!r} is not valid: the site has tracks for {sorted(MODELS)} "
                         "(or leave --model out for the English site).")
    track = MODELS[model]
    if sentence is not None:
        if not sentence.strip():
            raise ValueError("--sentence must not be empty.")
        track = Track(track.key, {**track.params, "SENTENCE": sentence}, track.suffix, track.label, track.lang,
                      track.name)
    if budget is not None:  # "quick": every lesson's few-draws check that the code runs, not its findings
        if budget not in BUDGETS:
            raise ValueError(f"--budget {budget!r} is not valid: choose one of {BUDGETS}.")
        track = Track(track.key, {**track.params, "BUDGET": budget}, track.suffix, track.label, track.lang,
                      track.name)
    return track


BUDGETS = ("quick", "full")


def other_track(track: Track) -> Track:
    return ENGLISH if track.key != "en" else CHINESE


def out_name(english_name: str, track: Track) -> str:
    """The folder name of ``track``'s site beside the English site's (``site`` -> ``site-zh``)."""
    return english_name + track.suffix


def english_name(name: str, track: Track) -> str:
    return name[: -len(track.suffix)] if track.suffix and name.endswith(track.suffix) else name


def inject(nb, track: Track):
    """``nb`` with ``track``'s parameters set in a cell right after the one tagged ``parameters``,
    each name only where that cell defines it (as ``tests/lesson_params.py``), and ``MODEL`` not
    where the cell defines ``SIZES`` (lesson 05 pre-trains its own model of those sizes: the
    track's ``LANGUAGE`` picks its corpus). No parameters: unchanged."""
    if not track.params:
        return nb
    import nbformat

    cells = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    if len(cells) != 1:
        raise ValueError(f"a lesson needs exactly one cell tagged 'parameters' to run on the {track.key} track, "
                         f"found {len(cells)}")
    defined = lambda k: re.search(rf"^{re.escape(k)}\s*=", cells[0].source, re.M)  # noqa: E731
    names = {k: v for k, v in track.params.items() if defined(k)}
    if defined("SIZES"):  # a lesson that trains its own model of SIZES (05): MODEL there would copy the
        names.pop("MODEL", None)  # Chinese model's sizes (hours of training); LANGUAGE sets its corpus
    if names:
        text = "\n".join(f"{k} = {v!r}" for k, v in names.items())
        at = nb.cells.index(cells[0]) + 1
        nb.cells.insert(at, nbformat.v4.new_code_cell(f"# injected parameters ({track.name} track of the website)\n"
                                                      + text))
    return nb


def is_lesson_stop(err) -> bool:
    """True when a cell failed with the course's one-line stop (nbclient's CellExecutionError)."""
    return getattr(err, "ename", None) == STOP_ERROR


def end_at_stop(nb, err, track: Track) -> str:
    """Cut ``nb`` after the cell that stopped (its error output becomes the one line it printed)
    and add a note that the English track runs the lesson in full. Returns that line."""
    import nbformat

    line = f"{err.ename}: {err.evalue}".strip()
    stopped = next(i for i, c in enumerate(nb.cells) if c.cell_type == "code"
                   and any(o.get("output_type") == "error" for o in c.get("outputs", [])))
    cell = nb.cells[stopped]
    cell.outputs = [o for o in cell.outputs if o.get("output_type") != "error"]
    cell.outputs.append(nbformat.v4.new_output("stream", name="stdout", text=line + "\n"))
    del nb.cells[stopped + 1:]
    nb.cells.append(nbformat.v4.new_markdown_cell(
        f"**This lesson stops here on the {track.name} track of the website**: its data are not yet available "
        f"with `MODEL = {track.params.get('MODEL')!r}` (the line above says why). The English version of "
        "this page (link at the top) runs the lesson to the end."))
    return line


def track_link(track: Track, target: str, depth: int, site_name: str) -> str:
    """One line of raw HTML for the top of a page: a link to the same page (``target``, e.g.
    ``lessons/05_x.html``) on the other track's site, which sits beside this one. ``depth``: how
    many folders the page is below its site's root; ``site_name``: this site's folder name."""
    other = other_track(track)
    base = english_name(site_name, track)
    href = "../" * (depth + 1) + out_name(base, other) + "/" + target
    return (f'<p class="track-link"><a href="{href}" hreflang="{other.lang}" lang="{other.lang}">'
            f"{other.label}</a></p>")


def other_site(out, track: Track):
    """The folder of the other track's site, beside ``out`` (this track's site)."""
    from pathlib import Path

    out = Path(out)
    return out.with_name(out_name(english_name(out.name, track), other_track(track)))


def other_site_built(out, track: Track) -> bool:
    """True when the other track's site exists beside ``out``: only then do pages link to it (a
    link to a site nobody built would be dead; :func:`link_pages` adds it later)."""
    return (other_site(out, track) / "index.html").exists()


def link_pages(site, track: Track) -> int:
    """Add the link to the other track (:func:`track_link`) to every page of the finished site
    ``site`` of ``track`` that has none yet, right after its first heading: run on the other site
    when a track is built after it. Returns the number of pages changed."""
    from pathlib import Path

    site, changed = Path(site), 0
    pages = [(site / "index.html", "index.html", 0)]
    pages += [(p, f"lessons/{p.name}", 1) for p in sorted((site / "lessons").glob("*.html"))]
    for path, target, depth in pages:
        if not path.exists():
            continue
        html = path.read_text(encoding="utf-8")
        end = html.find("</h1>")
        if 'class="track-link"' in html or end < 0:
            continue
        at = end + len("</h1>")
        path.write_text(html[:at] + track_link(track, target, depth, site.name) + html[at:], encoding="utf-8")
        changed += 1
    return changed


def add_link(markdown: str, link: str) -> str:
    """``markdown`` with ``link`` right after its first ``# heading`` line (else at the top)."""
    lines = markdown.split("\n")
    at = next((i + 1 for i, l in enumerate(lines) if l.startswith("# ")), 0)
    return "\n".join(lines[:at] + ["", link, ""] + lines[at:])


_GLYPH = re.compile(r"Glyph (\d+) \(.*?\) missing from font")


def missing_glyphs(nb) -> list[str]:
    """The characters Matplotlib warned it had no glyph for while drawing ``nb``'s figures."""
    found = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream":
                found += [chr(int(m[1])) for m in _GLYPH.finditer(out.get("text", ""))]
    return sorted(set(found))
