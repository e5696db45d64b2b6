"""Build the course website: run every lesson, then render a static site (``bash course.sh book``).

Steps (all offline):

1. **Execute.** Every ``lessons/[0-9][0-9]*_*.ipynb`` (new lessons appear by themselves) runs
   with nbclient in ``lessons/`` as its working directory, the way Jupyter runs it, with
   ``HF_HUB_OFFLINE=1`` so ``MODEL = None`` picks the bundled checkpoint, at the lessons' full
   ``BUDGET`` (the only full run of the course's checks), with no widget state saved (as the
   course's nbconvert configuration: an explorer shows its picture). The executed copies go to
   ``build/book/executed/`` and the static-export and site tests read them instead of running the
   lessons again; the committed notebooks stay output-free.
2. **Prepare the pages** in ``build/book/src/``: ``index.md`` is generated from README.md (its
   title, opening paragraph and lesson table), so the home page never drifts from the README.
   Each lesson page is its executed notebook with, in the site's copy only: the Colab badge
   drawn from a local picture, a download link to the output-free notebook next to it,
   ``# NBVAL_CHECK_OUTPUT`` markers and empty progress-bar displays removed, and, for an
   explorer whose display bundle has no ``image/png`` beside its widget view, the picture its
   ``ipywidgets.Image`` held when the notebook was saved (read from the saved widget state).
   Every figure's caption (the lesson cell's ``mystnb: figure`` metadata) is numbered per
   lesson here ("Figure 4.3."), an explorer's with "Static picture - run the notebook to
   explore." after it (:func:`number_captions`), in the order the page shows them: an explorer
   that moves on the site is counted just after the page's first figure, where
   ``postprocess.explorers_to_top`` puts it (issue 49: a page opens on its idea).
   A page opens on its idea (issue 49): the set-up (Parameters, imports, the model's loading
   printout) goes into one closed "Set-up" block (:func:`fold_setup`), and a code cell of more
   than ``CODE_WALL_LINES`` lines, one that only shows results, or an exercise's code folds
   behind "Show code cell source" (its output stays in view).
3. **Render** with Sphinx + MyST-NB + sphinx-book-theme into ``build/site/`` (conf.py beside this
   file). MathJax 3 comes from the ``django-static-mathjax`` wheel (static files only) into
   ``_static/mathjax``; search is Sphinx's own (``searchindex.js``, works from ``file://``).
4. **Lighter pages** (``book/postprocess.py``): formulas typeset to SVG at build time by MathJax
   in Node (without Node the pages load MathJax in the browser), only the icons in use,
   every figure with its alt text and a link to open it full size, the Set-up block folded,
   tables set for reading with their intervals behind a "show the intervals" switch, names in
   tables breakable only after "." or "_"; page weights printed.
5. **Check**: no page may need anything from the network to render (a script, stylesheet,
   font, image or iframe with an http(s) address); the build fails and names them otherwise.

6. **Tracks** (``book/tracks.py``): ``--model bundled-zh`` builds the Chinese track, every lesson
   run with the Chinese model and a Chinese ``SENTENCE``, into ``build/site-zh`` (beside
   ``--out``); a lesson that stops for English data ends its page at its one-line stop. Every
   page links to the same page of the other track.

Usage: python book/build.py [--out build/site] [--no-execute | --execute-only 02,05] [--only 00,03]
                            [--model bundled-zh [--sentence 明天北京会下雨吗？] [--budget quick]]
"""

from __future__ import annotations

import argparse
import base64
import copy
import datetime as dt
import hashlib
import json
import os
import posixpath
import re
import resource
import shutil
import subprocess
import sys
import time
from html.parser import HTMLParser
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BOOK = ROOT / "book"
LESSONS = ROOT / "lessons"
WORK = ROOT / "build" / "book"
LESSON_GLOB = "[0-9][0-9]*_*.ipynb"  # 00_name, ..., and a split lesson such as 09b_name
MARKER = "# NBVAL_CHECK_OUTPUT"
FRAMES_ENV = "COURSE_SITE_FRAMES"  # helpers.common.explorer_frames.FRAMES_ENV (build.py imports no course code)
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
BADGE = re.compile(r"\[!\[Open In Colab\]\((?P<img>[^)\s]+)\)\]\((?P<href>https://colab\.research\.google\.com/github/"
                   r"(?P<org>[\w.-]+)/(?P<repo>[\w.-]+)/blob/(?P<branch>[\w.-]+)/(?P<path>[\w/.-]+\.ipynb))\)")
LOCAL_BADGE = "/colab-badge.svg"  # leading "/": relative to the site's source folder
# The MathJax files a page can load: the component and what it may load on demand.
MATHJAX_PARTS = ["tex-svg.js", "input", "ui", "a11y", "sre", "adaptors"]


def _book_module(name: str):
    """A file of book/ loaded by its path (build.py runs as a script and is loaded by path in tests)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"book_{name}", BOOK / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


tracks = _book_module("tracks")
TRACK = tracks.ENGLISH  # the track this build makes (main sets it; forked workers inherit it)


# ------------------------------------------------------------------------------ lessons
def lesson_number(stem: str) -> str:
    """``"12"`` for ``12_interventions``, ``"09b"`` for a split lesson ``09b_name``: what precedes the first
    underscore."""
    return stem.split("_", 1)[0]


def lessons(folder: Path = LESSONS) -> list[Path]:
    """Every lesson notebook, in course order (``NN_name.ipynb``, ``NNb_name.ipynb``)."""
    return sorted(folder.glob(LESSON_GLOB))


def lesson_title(nb) -> str:
    """The first Markdown heading of a notebook (its page title)."""
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            match = re.search(r"^#\s+(.+)$", cell.source, re.M)
            if match:
                return match[1].strip()
    raise ValueError("the notebook has no '# title' heading in a Markdown cell")


# ------------------------------------------------------------------------------ execution
def execute(source: Path, dest: Path, timeout: int = 1200, frames: Path | None = None) -> tuple[float, float]:
    """Run ``source`` top to bottom in ``lessons/`` and save it, outputs included, to ``dest``.
    ``frames``: a folder where the kernel records each explorer's frames for the website
    (``helpers.common.explorer_frames``; emptied first).

    Returns (wall seconds, CPU seconds of the kernel process). Raises nbclient's
    CellExecutionError, which names the failing cell, when a cell fails.
    """
    import nbformat
    from nbclient import NotebookClient

    if frames is not None:
        shutil.rmtree(frames, ignore_errors=True)
        frames.mkdir(parents=True)
        os.environ[FRAMES_ENV] = str(frames)  # the kernel starts with this process's environment
    else:
        os.environ.pop(FRAMES_ENV, None)
    nb = tracks.inject(nbformat.read(source, as_version=4), TRACK)
    before, start = resource.getrusage(resource.RUSAGE_CHILDREN), time.monotonic()
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3", store_widget_state=False,
                            resources={"metadata": {"path": str(source.parent)}},
                            # the kernel's own log (a TCP-transport notice per start) is noise here;
                            # what the lesson prints or warns goes into its outputs as usual
                            extra_arguments=["--IPKernelApp.log_level=ERROR"])
    try:
        client.execute()
    except Exception as err:  # on a track other than English, a lesson may stop for English data
        if TRACK.key == "en" or not tracks.is_lesson_stop(err):
            raise
        tracks.end_at_stop(nb, err, TRACK)
    finally:
        os.environ.pop(FRAMES_ENV, None)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)  # the kernel has exited and been reaped
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    dest.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, dest)
    return wall, cpu


# Lessons that read what an earlier lesson left in the course cache run after it, also when
# lessons run side by side (--jobs): {"14": ("05",)} would start 14 once 05 has finished. None
# does now: lesson 14 no longer draws lesson 05's tiny BERT, and it fine-tunes the loaded model
# on draws of its own, which no run of lesson 11 shares (stop 54's book: 0 of its 10 runs came
# from the cache), so 14, the longest, starts first, beside 05.
RUNS_AFTER: dict[str, tuple[str, ...]] = {}
# Seconds each lesson took at its full budget with one torch thread (CI's book build, stop 54),
# for the order in which --jobs starts them; a lesson not listed counts as a short one.
EXPECTED_SECONDS = {"05": 411, "10": 276, "11": 250, "12": 274, "13": 101, "14": 545}
SHORT_LESSON_SECONDS = 40


def critical_order(numbers: list[str]) -> list[str]:
    """``numbers`` (lesson numbers) longest chain first: a lesson's priority is its own expected
    time (:data:`EXPECTED_SECONDS`) plus the longest chain of lessons that wait for it
    (:data:`RUNS_AFTER`), so the long lessons start first and the short ones fill the gaps at
    the end (two workers: about 1,100 s instead of 1,300 s in course order). Ties keep course
    order."""
    own = {n: EXPECTED_SECONDS.get(n, SHORT_LESSON_SECONDS) for n in numbers}
    after = {n: [m for m, needs in RUNS_AFTER.items() if n in needs and m in own] for n in numbers}

    def chain(n: str) -> int:
        return own[n] + max((chain(m) for m in after[n]), default=0)

    return sorted(numbers, key=lambda n: -chain(n))


def execute_lessons(todo: list[tuple[Path, Path, Path]], jobs: int = 1):
    """Run every ``(source, dest, frames)`` of ``todo`` with :func:`execute`, at most ``jobs`` at
    a time (each in a worker process of its own, its kernel with one torch thread when ``jobs`` >
    1), a lesson of :data:`RUNS_AFTER` only once those it reads have finished. Yields
    ``(source, (wall, cpu) or the exception)`` as lessons finish."""
    if jobs <= 1:
        for source, dest, frames in todo:
            print(f"book: running {source.name} ...", flush=True)
            try:
                yield source, execute(source, dest, frames=frames)
            except Exception as err:  # nbclient's CellExecutionError names the cell and the traceback
                yield source, err
        return
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

    os.environ["OMP_NUM_THREADS"] = "1"  # the kernels inherit it: one thread each, no oversubscribed cores
    number = lambda path: path.stem[:2]  # noqa: E731
    rank = {n: i for i, n in enumerate(critical_order([number(s) for s, _, _ in todo]))}
    waiting, running, finished = sorted(todo, key=lambda item: rank[number(item[0])]), {}, set()
    scheduled = {number(s) for s, _, _ in todo}
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        while waiting or running:
            for item in list(waiting):
                if len(running) >= jobs:
                    break
                needs = [n for n in RUNS_AFTER.get(number(item[0]), ()) if n in scheduled and n not in finished]
                if needs:
                    continue
                waiting.remove(item)
                print(f"book: running {item[0].name} ...", flush=True)
                running[pool.submit(execute, item[0], item[1], frames=item[2])] = item[0]
            if not running:  # nothing can start: a prerequisite is missing from this build
                raise RuntimeError(f"book: cannot order {[w[0].name for w in waiting]} (RUNS_AFTER)")
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                source = running.pop(future)
                finished.add(number(source))
                try:
                    yield source, future.result()
                except Exception as err:
                    yield source, err


def kernel_environment() -> dict[str, str]:
    """What the kernels see: offline, and the inline backend (an inherited MPLBACKEND=Agg,
    as pytest sets, would make every figure disappear from the outputs)."""
    return {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
            "MPLBACKEND": "module://matplotlib_inline.backend_inline"}


# ------------------------------------------------------------------------------ the pages
def repository_from_badges(texts: list[str]) -> str:
    """``https://github.com/ORG/REPO`` read from the first Colab badge found."""
    for text in texts:
        match = BADGE.search(text)
        if match:
            return f"https://github.com/{match['org']}/{match['repo']}"
    raise ValueError("no Open-in-Colab badge found to tell the repository's address")


def home_page(readme: str, lesson_files: list[Path], titles: dict[str, str], built_on: str,
              repository: str, diagram: str | None = None) -> tuple[str, list[str]]:
    """MyST source of the home page, from README.md: title, opening paragraph(s) and the "Start
    here" section (who the course is for, the map with hours per part), the lesson
    table (class ``lesson-table``: cards on a phone). A lesson the table lacks gets a row (title
    from its notebook) and a warning. ``diagram``: a picture file beside the page (the encoder
    diagram lesson 00 drew), shown as a captioned figure under the introduction.

    Returns (markdown, warnings).
    """
    lines = readme.splitlines()
    title = next((l for l in lines if l.startswith("# ")), None)
    if title is None:
        raise ValueError("README.md has no '# title' line")
    start = lines.index(title) + 1
    # the opening paragraph and the learner's "Start here" (who it is for, the map, the hours)
    end = next((i for i in range(start, len(lines)) if lines[i].startswith("## ") and lines[i] != "## Start here"),
               len(lines))
    intro = "\n".join(lines[start:end]).strip()
    section = _section(lines, "## Lessons")
    if section is None:
        raise ValueError("README.md has no '## Lessons' section")
    table = [l for l in section if l.startswith("|")]
    if len(table) < 2:
        raise ValueError("README.md's '## Lessons' section has no table")
    warnings = []
    width = table[0].count("|") - 1
    numbers = {lesson_number(p.stem) for p in lesson_files}
    rows = []
    for row in table[2:]:
        number = re.match(r"^\|\s*(\d\d[a-z]?)\s", row)
        if number and number[1] not in numbers:
            if not list(LESSONS.glob(f"{number[1]}_*.ipynb")):
                warnings.append(f"README.md's lesson table has a row for lesson {number[1]}, which does not exist; left out")
            continue  # not built this time (--only)
        rows.append(row)
    table = table[:2] + rows
    for path in lesson_files:
        number = lesson_number(path.stem)
        if not any(row.startswith(f"| {number} ") for row in table):
            cells = [number, f"[{titles[path.stem]}](lessons/{path.name})"] + [""] * (width - 2)
            table.append("| " + " | ".join(cells) + " |")
            warnings.append(f"README.md's lesson table has no row for {path.name}; the home page adds one")
    body = "\n".join(table)
    body = body.replace("https://colab.research.google.com/assets/colab-badge.svg", LOCAL_BADGE)
    body = keep_together(body)
    toctree = part_toctrees(lesson_files)
    figure = "" if diagram is None else f"""
```{{figure}} {diagram}
:alt: The BERT encoder of the bundled model, drawn from its configuration: token ids, the three embedding tables, then L encoder layers of self-attention and feed-forward blocks with residual connections and LayerNorm, then the pooler and a classification head.
:width: 100%

The encoder of the bundled model, drawn from its configuration in lesson 00 (every size
read from `model.config`). Click to open it full size.
```
"""
    page = f"""{title}

{repository_links(intro, repository)}
{figure}
Every lesson page below shows the outputs of one run of that lesson, made offline
(`HF_HUB_OFFLINE=1`) on {built_on} when this site was built. With `MODEL = None` and no network
a lesson uses `bert-base-uncased` if it is in the local cache and otherwise the all-MiniLM-L6-v2
checkpoint bundled with the course, and each lesson prints which one it loaded. To change the sentence or the model, run the notebook yourself (the Colab
badge, or `bash course.sh lab`).

## Lessons

```{{table}}
:class: lesson-table

{repository_links(body, repository)}
```

{toctree}
"""
    return page, warnings


# The course map of the README (issue 36): the sidebar groups the lessons by part.
PARTS = (
    ("Part 1 — Inside BERT", ("00", "01", "02", "03", "04")),
    ("Part 2 — How BERT learns", ("05",)),
    ("How we know", ("06",)),
    ("Part 3 — Research-grade", ("07", "08", "09", "10", "11", "12", "13", "14", "15")),
)


def part_toctrees(lesson_files) -> str:
    """One hidden toctree per part of the course, captioned with its name, in lesson order; a lesson
    of no part (a new one) goes into a last toctree without a caption, so no page is left out."""
    blocks, placed = [], set()
    for caption, numbers in PARTS:
        stems = [p.stem for p in lesson_files if lesson_number(p.stem) in numbers]
        placed.update(stems)
        if stems:
            blocks.append((caption, stems))
    rest = [p.stem for p in lesson_files if p.stem not in placed]
    if rest:
        blocks.append((None, rest))
    return "\n".join("```{toctree}\n:hidden:\n:maxdepth: 1\n" + (f":caption: {caption}\n" if caption else "")
                     + "\n" + "\n".join(f"lessons/{s}" for s in stems) + "\n```\n" for caption, stems in blocks)


UNIT = re.compile(r"(~?\d[\d.,]*)[ ](s|ms|min|h|MB|kB|GB|%)(?=[\s|;,.)]|$)")


def keep_together(text: str) -> str:
    """A number and its unit never part at a line end ("~10 s", "4.3 min", "50 %"): a no-break
    space between them."""
    return UNIT.sub(lambda m: f"{m[1]}\u00a0{m[2]}", text)


DIAGRAM_CALL = "architecture_diagram("


def diagram_picture(executed: dict) -> bytes | None:
    """The PNG of the first cell of lesson 00 that draws the architecture diagram, or None."""
    for stem, nb in executed.items():
        if not stem.startswith("00_"):
            continue
        for cell in nb.cells:
            if cell.cell_type == "code" and DIAGRAM_CALL in cell.source:
                for output in cell.get("outputs", []):
                    png = output.get("data", {}).get("image/png")
                    if png:
                        return base64.b64decode(png)
    return None


def first_figures(executed: dict) -> dict[str, bytes]:
    """``{lesson stem: PNG}``: each lesson's first figure about its own subject (the first picture
    a code cell draws, passing over the "you are here" strip), for the home page's thumbnails."""
    pictures = {}
    for stem, nb in executed.items():
        for cell in nb.cells:
            if cell.cell_type != "code" or "you_are_here(" in cell.source:
                continue
            png = next((o.get("data", {}).get("image/png") for o in cell.get("outputs", [])
                        if o.get("data", {}).get("image/png")), None)
            if png:
                pictures[stem] = base64.b64decode(png)
                break
    return pictures


def _section(lines: list[str], heading: str) -> list[str] | None:
    if heading not in lines:
        return None
    start = lines.index(heading) + 1
    # the opening paragraph and the learner's "Start here" (who it is for, the map, the hours)
    end = next((i for i in range(start, len(lines)) if lines[i].startswith("## ") and lines[i] != "## Start here"),
               len(lines))
    return lines[start:end]


def repository_links(markdown: str, repository: str, folder: str = "") -> str:
    """Point relative links (not pictures) that are not lesson notebooks at the repository: the
    site holds only the lessons. ``folder`` is where the Markdown lives in the repository
    (``"lessons"`` for a lesson), so ``../helpers/README.md`` resolves as on GitHub."""
    def fix(match):
        target = match[2]
        if re.match(r"^([a-z][a-z0-9+.-]*:|#|/)", target, re.I):
            return match[0]
        path, _, anchor = target.partition("#")
        resolved = posixpath.normpath(posixpath.join(folder, path)) if path else folder
        if re.match(r"^lessons/\d\d[a-z]?_[\w-]+\.ipynb$", resolved):
            return match[0]  # another lesson: MyST turns it into a link to that page
        return f"{match[1]}({repository}/blob/main/{resolved}{'#' + anchor if anchor else ''})"

    return re.sub(r"(?<!!)(\[[^\]]*\])\(([^)\s]+)\)", fix, markdown)


def site_notebook(nb, stem: str, repository: str, records: dict[str, dict] | None = None) -> tuple[object, list[str]]:
    """The site's copy of an executed lesson (see the module docstring); returns (copy, notes).
    ``records``: the lesson's explorer records (:func:`explorer_records`)."""
    nb = copy.deepcopy(nb)
    notes = []
    state = nb.metadata.pop("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    nb.metadata.pop("jupytext", None)
    _badge_and_download(nb, stem, repository)
    installs = [c for c in nb.cells if is_install_cell(c)]
    nb.cells = [c for c in nb.cells if not is_install_cell(c)]  # the Colab set-up: nothing to read on a page
    if installs:
        notes.append(f"{stem}: the Colab install cell is left off the page")
    exercises = False  # inside the lesson's "## Exercises" section
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            if installs:  # no sentence about a cell the page left off
                cell.source = INSTALL_SENTENCE.sub("", cell.source).rstrip()
            cell.source = repository_links(cell.source, repository, "lessons")
            headings = re.findall(r"^##\s+(.+)$", cell.source, re.M)
            if headings:  # the cell's last section is the one its next cells belong to
                exercises = bool(EXERCISES.match(headings[-1]))
        if cell.cell_type != "code":
            continue
        cell.source = "\n".join(l for l in cell.source.split("\n") if l.strip() != MARKER)
        if is_code_wall(cell) or is_format_only(cell) or exercises:
            tags = cell.metadata.setdefault("tags", [])
            if not {"hide-input", "remove-input", "hide-cell", "remove-cell"} & set(tags):
                tags.append("hide-input")  # folded on the page: a "Show code" toggle opens it
        kept = []
        for output in cell.get("outputs", []):
            data = output.get("data")
            if output.get("output_type") == "display_data" and data is not None and _is_empty_display(data):
                continue  # what a finished helpers.common.progress bar leaves behind
            if data is not None and is_unanswered_feedback(data):
                output = _run_in_notebook(output)
                data = output["data"]
            if data is not None and WIDGET_VIEW in data and "image/png" not in data:
                picture = widget_picture(state, data[WIDGET_VIEW].get("model_id", ""))
                if picture is None:
                    notes.append(f"{stem}: an explorer output has neither image/png nor a saved picture; the page shows its text")
                else:
                    data["image/png"] = picture
                    notes.append(f"{stem}: an explorer output had no image/png beside its widget view; "
                                 "the page shows the picture from the saved widget state")
            kept.append(output)
        cell.outputs = kept
    notes += number_captions(nb, stem, records)
    if fold_setup(nb):
        notes.append(f"{stem}: parameters, imports and loading folded into one Set-up block")
    return nb, notes


# The set-up run of a lesson: its "## Parameters" section and, when it has one, the section that
# loads the model ("## Load the model ...", "## The model ..."): on the site one folded block.
SETUP_START = re.compile(r"^##\s+Parameters\b", re.M)
SETUP_HEADING = re.compile(r"^##\s+(?:Parameters|Load\b|The model\b)", re.I)
SETUP_MARK = '<div class="course-setup-{side}"{attrs}></div>'
LOADED = re.compile(r"^Using (.+?)(?: --|$)", re.M)  # helpers.model.loading's first line


def _shows_picture(cell) -> bool:
    return cell.cell_type == "code" and any("image/png" in o.get("data", {}) for o in cell.get("outputs", []))


def setup_cells(cells) -> range | None:
    """Where a lesson's set-up runs: from its "## Parameters" cell to the last cell before (a) a
    cell that shows a picture or the text just before one (the lesson's first picture, usually
    "where this lesson sits"), or (b) a "##" heading that is not set-up. None when the lesson has
    no Parameters section or the run holds no code."""
    start = next((i for i, c in enumerate(cells) if c.cell_type == "markdown" and SETUP_START.search(c.source)), None)
    if start is None:
        return None
    end = start + 1
    while end < len(cells):
        cell = cells[end]
        if _shows_picture(cell):
            break
        if cell.cell_type == "markdown":
            heading = re.match(r"^(#{1,6})\s", cell.source.lstrip())
            if heading and (len(heading[1]) < 3 and not SETUP_HEADING.match(cell.source.lstrip())):
                break
            if end + 1 < len(cells) and _shows_picture(cells[end + 1]):
                break
        end += 1
    run = range(start, end)
    return run if any(cells[i].cell_type == "code" for i in run) else None


def fold_setup(nb) -> bool:
    """Put the set-up (:func:`setup_cells`) between two markers that book/postprocess.py's
    ``fold_setup`` turns into one closed ``<details>`` ("Set-up"): a page opens on its idea, not
    on parameters, imports and a loading printout. Its headings become bold lines (a section
    must not start inside the block); its cells' own code folds are lifted (the block is the
    fold). The summary names the model the lesson loaded."""
    import html as html_module

    import nbformat

    run = setup_cells(nb.cells)
    if run is None:
        return False
    model = None
    for i in run:
        cell = nb.cells[i]
        if cell.cell_type == "markdown":
            cell.source = re.sub(r"^#{2,6}[ \t]+(.+?)[ \t]*$", r"**\1**", cell.source, flags=re.M)
        else:
            tags = [t for t in cell.metadata.get("tags", []) if t != "hide-input"]
            if tags:
                cell.metadata["tags"] = tags
            else:
                cell.metadata.pop("tags", None)
            for output in cell.get("outputs", []):
                found = LOADED.search(output.get("text", "") if output.get("output_type") == "stream" else "")
                model = model or (found and found[1].strip())
    attrs = f' data-model="{html_module.escape(model, quote=True)}"' if model else ""
    nb.cells.insert(run.stop, nbformat.v4.new_markdown_cell(SETUP_MARK.format(side="end", attrs="")))
    nb.cells.insert(run.start, nbformat.v4.new_markdown_cell(SETUP_MARK.format(side="start", attrs=attrs)))
    return True


INSTALL_CELL = re.compile(r"""["']google\.colab["']\s+in\s+sys\.modules""")
# the lessons' sentence about that cell, in any of its wordings, alone or inside a paragraph
INSTALL_SENTENCE = re.compile(r"\s*The\s+first\s+cell\s+installs\s+the\s+course\b[^.]*\.")  # to its full stop


def is_install_cell(cell) -> bool:
    """The lessons' first code cell: on Colab it clones and installs the course; elsewhere it
    prints that there is nothing to do. A reader of the website has nothing to install."""
    return cell.cell_type == "code" and bool(INSTALL_CELL.search(cell.source)) and "pip" in cell.source


# An exercise's code is the reader's to write in the notebook (a stub, a checker call): on the
# page its task and its "Your turn" box show, its code folds.
EXERCISES = re.compile(r"Exercises?\b", re.I)
CODE_WALL_LINES = 8  # a code cell longer than this is folded on the page (its output stays); issue 49: code
# was 22-38 % of a page's height at 1280 px with 40 here; with 8 (and exercises folded) 1-13 %


def is_code_wall(cell) -> bool:
    """A code cell longer than a glance (more than CODE_WALL_LINES lines that are not blank: it
    builds a table, a plot or a whole experiment): the site folds its input behind "Show code
    cell source" and shows its output; a short cell, the lesson's step by step, stays open."""
    lines = [l for l in cell.source.splitlines() if l.strip()]
    return cell.cell_type == "code" and len(lines) > CODE_WALL_LINES


# Calls that only put results on the page (print, a table, a claim): a cell of nothing else is
# folded on the site, its output shown; the notebook keeps it open.
FORMATTERS = {"print", "display", "show_table", "show_claim", "show_finding", "show_findings", "Markdown", "HTML"}
# ... and what may be called inside them: formatting of numbers already computed, never a model.
FORMAT_HELPERS = {"len", "round", "str", "int", "float", "min", "max", "sum", "sorted", "enumerate", "zip", "range",
                  "join", "format", "percent", "item", "tolist", "upper", "lower", "capitalize", "strip", "items",
                  "keys", "values", "abs", "list", "tuple", "dict", "repr", "caveat"}


def _formats_only(statements) -> bool:
    import ast

    for st in statements:
        if isinstance(st, ast.Expr) and isinstance(st.value, ast.Call):
            func = st.value.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
            if name not in FORMATTERS:
                return False
        elif isinstance(st, (ast.For, ast.If)):
            if not _formats_only(st.body) or not _formats_only(st.orelse):
                return False
        elif not isinstance(st, (ast.Import, ast.ImportFrom)):
            return False
    return True


def is_format_only(cell) -> bool:
    """A code cell that only prints or shows results already computed (``print``, ``show_table``,
    ``show_claim``, ...; imports and loops of those allowed): nothing to learn from its code on a
    page, so the site folds its input. A cell that computes or plots anything is left open."""
    import ast

    if cell.cell_type != "code" or not cell.source.strip():
        return False
    try:
        tree = ast.parse("\n".join(l for l in cell.source.splitlines() if not l.lstrip().startswith(("%", "!"))))
    except SyntaxError:
        return False
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)]
    names = {n.func.id if isinstance(n.func, ast.Name) else getattr(n.func, "attr", "") for n in calls}
    return bool(calls) and names <= FORMATTERS | FORMAT_HELPERS and _formats_only(tree.body)


FEEDBACK_CHECK = ("Run this cell in the notebook to check your answer: the page was built with the "
                  "exercise unanswered.")


def is_unanswered_feedback(data: dict) -> bool:
    """An exercise checker's "Not yet" output (``helpers.exercises.Feedback``), in its HTML form
    (``data-course-feedback="not-yet"``) or the Markdown form of earlier builds."""
    plain = "".join(data.get("text/plain", ""))
    if not plain.startswith("Not yet:"):
        return False
    return ('data-course-feedback="not-yet"' in "".join(data.get("text/html", ""))
            or "Not yet:" in "".join(data.get("text/markdown", "")))


def _run_in_notebook(output: dict) -> dict:
    """The website's stand-in for an unanswered exercise's feedback: what to do, not a failure."""
    import html

    box = (f'<div class="course-feedback" data-course-feedback="check"><strong>Your turn:</strong> '
           f"{html.escape(FEEDBACK_CHECK)}</div>")
    import nbformat

    return nbformat.from_dict({**output, "data": {"text/html": box, "text/plain": FEEDBACK_CHECK}, "metadata": {}})


def figure_options(cell) -> dict | None:
    """A code cell's MyST-NB figure options (``mystnb: figure: caption / name`` in its metadata)."""
    options = cell.get("metadata", {}).get("mystnb", {}).get("figure")
    return options if isinstance(options, dict) else None


def explorer_records(folder: Path) -> dict[str, dict]:
    """``{sha256 of an explorer's picture: what the kernel recorded}`` from a lesson's frames
    folder (``helpers.common.explorer_frames``): ``kind`` "frames" (sliders the site moves) or
    "multiples" (example states side by side, ``note`` says which)."""
    records = {}
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        record = json.loads(path.read_text(encoding="utf-8"))
        records[path.stem] = {k: v for k, v in record.items() if k not in ("prims", "frames", "geometry", "background")}
    return records


def _joined(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def explorer_caption(record: dict | None) -> str:
    """The sentence after an explorer's caption: what the page lets a reader do with it."""
    if record is None:
        return _postprocess().EXPLORER_CAPTION
    if record.get("kind") == "multiples":
        return record.get("note") or "Example states, drawn when this site was built; run the notebook to try your own."
    names = [c["label"] for c in record.get("controls", [])]
    if not names:
        return _postprocess().EXPLORER_CAPTION
    sentence = (f"Move the {_joined(names)} slider{'s' if len(names) > 1 else ''} above the picture: every state "
                "was drawn when this site was built.")
    still = record.get("still", [])
    if still:
        sentence += f" In the notebook you can also change {_joined(still)}."
    return sentence


def number_captions(nb, stem: str, records: dict[str, dict] | None = None) -> list[str]:
    """Number each captioned figure of a lesson page ("Figure 4.3." for lesson 04's third) and
    add the explorer sentence to an explorer's caption; returns notes on figures left uncaptioned.

    The lessons carry the caption text only (``# %% mystnb={"figure": {"caption": ..., "name":
    ...}}``): numbers are counted here, so moving a figure never leaves a stale number. MyST-NB
    wraps every display output of a captioned cell in the figure, so such a cell must display
    the picture alone (printed text, a stream, is fine). An explorer whose recorded frames move
    on the site (``records``) gets the cell tag ``TOP_TAG`` and the number after the first
    figure's: the page shows it there (``postprocess.explorers_to_top``); the first figure's code
    then folds ("hide-input"), so that the page opens on the map and the explorer, no code between.
    A captioned cell that drew nothing (a cell skipped for this model, which prints one line
    saying why) loses its caption: no figure caption stands on the page without its figure."""
    notes, figures = [], []
    number = lesson_number(stem)  # figures of a split lesson NNb are "Figure Nb.k"
    lesson = int(number) if number.isdigit() else number.lstrip("0") or number
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        shown = [o for o in cell.get("outputs", []) if o.get("output_type") in ("display_data", "execute_result")]
        pictures = [o for o in shown if "image/png" in o.get("data", {})]
        options = figure_options(cell)
        if not pictures:
            if options is not None:  # a cell that did not draw (it printed why): no orphan caption
                cell.metadata["mystnb"] = {k: v for k, v in cell.metadata["mystnb"].items() if k != "figure"}
                notes.append(f"{stem}: code cell {i + 1} has a figure caption but shows no picture; "
                             "the caption is left off the page")
            continue
        if options is None or not str(options.get("caption", "")).strip():
            notes.append(f"{stem}: code cell {i + 1} shows a figure without a caption")
            continue
        if len(shown) != 1:
            notes.append(f"{stem}: code cell {i + 1} shows {len(shown)} outputs beside its captioned figure; "
                         "a captioned cell must display the picture alone")
        caption = options["caption"].strip()
        moves = False
        if any(WIDGET_VIEW in o.get("data", {}) for o in shown):
            picture = hashlib.sha256(base64.b64decode(pictures[0]["data"]["image/png"])).hexdigest()
            record = (records or {}).get(picture)
            caption += f" *{explorer_caption(record)}*"
            moves = bool(record and record.get("kind") == "frames" and record.get("controls"))
        figures.append((cell, options, caption, moves))
    # An explorer that moves on the site goes up to just after the page's first figure (the "you
    # are here" strip; postprocess.explorers_to_top moves it): its number is the one it has there.
    top = [f for f in figures[1:] if f[3]]
    if top and not figures[0][3]:
        figures = [figures[0]] + top + [f for f in figures[1:] if not f[3]]
        for cell, *_ in top:
            tags = cell.metadata.setdefault("tags", [])
            if TOP_TAG not in tags:
                tags.append(TOP_TAG)
        tags = figures[0][0].metadata.setdefault("tags", [])  # the strip: its one call folds, the
        if not {"hide-input", "remove-input", "hide-cell", "remove-cell"} & set(tags):  # map stays
            tags.append("hide-input")
    for k, (cell, options, caption, _) in enumerate(figures, 1):
        caption = f"**Figure {lesson}.{k}.** {caption}"
        cell.metadata["mystnb"] = {**cell.metadata["mystnb"], "figure": {**options, "caption": caption}}
    return notes


# the cell tag (a class "tag_..." on the page) of an explorer that postprocess.explorers_to_top
# moves up to the top of its page
TOP_TAG = "course-explorer-top"


def _is_empty_display(data: dict) -> bool:
    return set(data) <= {"text/plain"} and not "".join(data.get("text/plain", ""))


def _badge_and_download(nb, stem: str, repository: str) -> None:
    """Badge picture from the site itself; a download link to the output-free notebook beside it."""
    download = f"{{download}}`Download the notebook (.ipynb, no outputs) </notebooks/{stem}.ipynb>`"
    for cell in nb.cells:
        if cell.cell_type == "markdown" and BADGE.search(cell.source):
            match = BADGE.search(cell.source)
            badge = f"[![Open In Colab]({LOCAL_BADGE})]({match['href']})"
            cell.source = cell.source[:match.start()] + f"{badge} · {download}" + cell.source[match.end():]
            return
    # No badge in the lesson (tests/test_packaging.py requires one): add both under the title.
    import nbformat

    href = f"https://colab.research.google.com/github/{repository.split('github.com/')[1]}/blob/main/lessons/{stem}.ipynb"
    first = next(i for i, c in enumerate(nb.cells) if c.cell_type == "markdown")
    nb.cells.insert(first + 1, nbformat.v4.new_markdown_cell(f"[![Open In Colab]({LOCAL_BADGE})]({href}) · {download}"))


def widget_picture(state: dict, model_id: str) -> str | None:
    """Base64 PNG of the one ``ipywidgets.Image`` inside widget ``model_id``, from a notebook's
    saved widget state; None when there is not exactly one."""
    pictures, seen = [], set()

    def walk(mid: str) -> None:
        model = state.get(mid)
        if model is None or mid in seen:
            return
        seen.add(mid)
        if model.get("model_name") == "ImageModel" and model.get("state", {}).get("format", "png") == "png":
            pictures.extend(b["data"] for b in model.get("buffers", [])
                            if b.get("path") == ["value"] and b.get("encoding") == "base64")
        for value in model.get("state", {}).values():
            for ref in value if isinstance(value, list) else [value]:
                if isinstance(ref, str) and ref.startswith("IPY_MODEL_"):
                    walk(ref[len("IPY_MODEL_"):])

    walk(model_id)
    if len(pictures) != 1:
        return None
    base64.b64decode(pictures[0], validate=True)  # a broken buffer fails here, not in the browser
    return pictures[0]


# ------------------------------------------------------------------------------ offline check
class _Resources(HTMLParser):
    """Addresses an HTML page loads to render: scripts, stylesheets, icons/preloads, images,
    media, frames, objects, inline style url()s. Plain links (<a href>) are not loads."""

    LOADS = {("script", "src"), ("img", "src"), ("iframe", "src"), ("embed", "src"), ("source", "src"),
             ("video", "src"), ("audio", "src"), ("track", "src"), ("object", "data"), ("image", "href"),
             ("use", "href"), ("video", "poster"), ("input", "src")}
    LINK_LOADS = {"stylesheet", "icon", "preload", "modulepreload", "prefetch", "manifest", "apple-touch-icon"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.urls: list[str] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        for (t, a) in self.LOADS:
            if t == tag and attrs.get(a):
                self.urls.append(attrs[a])
        if tag in ("img", "source") and attrs.get("srcset"):
            self.urls += [part.strip().split(" ")[0] for part in attrs["srcset"].split(",")]
        if tag == "link" and set((attrs.get("rel") or "").lower().split()) & self.LINK_LOADS and attrs.get("href"):
            self.urls.append(attrs["href"])
        if attrs.get("style"):
            self.urls += css_urls(attrs["style"])


def css_urls(css: str) -> list[str]:
    return [m.strip("'\" ") for m in re.findall(r"url\(([^)]*)\)", css)] + re.findall(r"@import\s+[\"']([^\"']+)", css)


def _is_external(url: str) -> bool:
    return bool(re.match(r"^\s*(https?:)?//", url, re.I))


def external_resources(site: Path) -> list[tuple[str, str]]:
    """(file, address) of every network address the site needs to render a page: in HTML
    load attributes, in CSS (url(), @import), and fetched by scripts (literal http(s)
    addresses next to loading calls such as fetch/importScripts/src= in .js files)."""
    found = []
    for path in sorted(site.rglob("*")):
        rel = str(path.relative_to(site))
        if path.suffix == ".html":
            parser = _Resources()
            text = path.read_text(encoding="utf-8", errors="replace")
            parser.feed(text)
            found += [(rel, u) for u in parser.urls if _is_external(u)]
            for style in re.findall(r"<style[^>]*>(.*?)</style>", text, re.S | re.I):
                found += [(rel, u) for u in css_urls(style) if _is_external(u)]
        elif path.suffix == ".css":
            found += [(rel, u) for u in css_urls(path.read_text(encoding="utf-8", errors="replace")) if _is_external(u)]
        elif path.suffix == ".js":
            text = path.read_text(encoding="utf-8", errors="replace")
            for m in re.finditer(r"(?:fetch|importScripts|import|loadScript|\.src\s*=|\.href\s*=)\s*\(?\s*[\"'`]((?:https?:)?//[^\"'`]+)", text):
                found.append((rel, m[1]))
    return found


# ------------------------------------------------------------------------------ main
def mathjax_es5() -> Path:
    import mathjax  # the django-static-mathjax wheel: MathJax's own files, nothing else needed

    return Path(mathjax.__file__).parent / "static" / "mathjax" / "es5"


def _postprocess():
    """book/postprocess.py as a module (build.py also runs as a loaded file in the tests)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("book_postprocess", BOOK / "postprocess.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def browser_module():
    """``book/browser_model.py`` as a module (by path: ``book/`` is not a package)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("book_browser_model", BOOK / "browser_model.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def browser_model(out: Path) -> bool:
    """The lessons' model for the reader's browser (book/browser_model.py, issue 50): exported in a
    process of its own (this file imports no course code), then the "try your own sentence" box
    on the pages whose explorer it can redraw. Without it (no npm and no cached package, no onnx)
    the build says why and the explorers keep their precomputed frames."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    result = subprocess.run([sys.executable, str(BOOK / "browser_model.py"), "--site", str(out)], env=env,
                            capture_output=True, text=True)
    lines = [l for l in result.stdout.splitlines() if l.startswith("browser model:")]
    for line in lines:
        print(f"book: {line}")
    if result.returncode != 0:
        if not lines:  # a crash: its last lines say where
            print("book: browser model: failed; the explorers keep their precomputed frames:\n"
                  + "\n".join(result.stderr.strip().splitlines()[-8:]), file=sys.stderr)
        shutil.rmtree(out / "_static" / "browser-model", ignore_errors=True)
        return False
    attached = browser_module().attach(out, WORK / "frames")  # lesson 04's box left its head there
    print(f"book: 'try your own sentence' on {attached['pages']} page(s), {attached['explorers']} explorer(s)")
    return True


def copy_mathjax(dest: Path) -> None:
    es5 = mathjax_es5()
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    for part in MATHJAX_PARTS:
        src = es5 / part
        (shutil.copytree if src.is_dir() else shutil.copy2)(src, dest / part)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=str(ROOT / "build" / "site"), help="where the HTML site goes")
    parser.add_argument("--no-execute", action="store_true",
                        help="reuse build/book/executed/*.ipynb from an earlier build (for work on the site's look)")
    parser.add_argument("--only", default="", help="comma-separated lesson numbers to build (e.g. 00,03); default all")
    parser.add_argument("--execute-only", default="",
                        help="comma-separated lesson numbers to run again (e.g. 02,05); the others reuse "
                             "build/book/executed/ from an earlier build, as with --no-execute")
    parser.add_argument("--jobs", type=int, default=int(os.environ.get("COURSE_BOOK_JOBS", "1")),
                        help="lessons run side by side (default $COURSE_BOOK_JOBS or 1); with more than one, "
                             "each kernel uses one torch thread and lesson times include the sharing")
    parser.add_argument("--no-browser-model", dest="browser_model", action="store_false",
                        help="leave out the model that runs in the reader's browser (book/browser_model.py)")
    parser.add_argument("--model", default=None,
                        help="build a language track: bundled-zh runs every lesson with the Chinese model into "
                             "OUT-zh beside --out (default: the English site)")
    parser.add_argument("--budget", default=None, choices=("quick", "full"),
                        help="with --model: the BUDGET injected into every lesson (quick: a check that the "
                             "code runs, in minutes; default: each lesson's own, its full budget)")
    parser.add_argument("--sentence", default=None, help="with --model: the SENTENCE injected into every lesson "
                                                         f"(default {tracks.ZH_SENTENCE})")
    args = parser.parse_args(argv)
    global TRACK, WORK
    try:
        TRACK = tracks.track_for(args.model, args.sentence, args.budget)
    except ValueError as err:
        parser.error(str(err))
    WORK = ROOT / "build" / ("book" + TRACK.suffix)  # build/book-zh: executed copies, sources, frames

    import nbformat

    t0 = time.monotonic()
    files = lessons()
    if args.only:
        wanted = set(args.only.split(","))
        files = [f for f in files if lesson_number(f.stem) in wanted]
    if not files:
        print(f"book: no lessons matching {LESSONS / LESSON_GLOB}", file=sys.stderr)
        return 1
    executed_dir, src, out = WORK / "executed", WORK / "src", Path(args.out).resolve()
    out = out.with_name(tracks.out_name(out.name, TRACK))  # the Chinese track: beside the English site
    if out.exists():
        shutil.rmtree(out)  # a failed build leaves no stale site behind

    # 1. execute
    os.environ.update(kernel_environment())
    failures = []
    rerun = set(filter(None, args.execute_only.split(",")))
    todo = []
    for path in files:
        dest = executed_dir / path.name
        if args.no_execute or (rerun and path.stem[:2] not in rerun):
            if not dest.exists():
                print(f"book: --no-execute but {dest} does not exist; run without it first", file=sys.stderr)
                return 1
            continue
        todo.append((path, dest, WORK / "frames" / path.stem))
    for path, result in execute_lessons(todo, max(1, args.jobs)):
        if isinstance(result, Exception):
            failures.append(path.name)
            print(f"book: {path.name} FAILED:\n{result}", file=sys.stderr)
            continue
        wall, cpu = result
        print(f"book: {path.name} ran in {wall:.1f} s wall, {cpu:.1f} s kernel CPU", flush=True)
    if failures:
        print(f"book: {len(failures)} lesson(s) failed: {', '.join(failures)}; no site built", file=sys.stderr)
        return 1

    # 2. the pages
    if src.exists():
        shutil.rmtree(src)
    (src / "lessons").mkdir(parents=True)
    (src / "notebooks").mkdir()
    shutil.copy2(BOOK / "static" / "colab-badge.svg", src / "colab-badge.svg")
    executed = {p.stem: nbformat.read(executed_dir / p.name, as_version=4) for p in files}
    repository = repository_from_badges([c.source for nb in executed.values() for c in nb.cells[:3]])
    notes = []
    for path in files:
        page, page_notes = site_notebook(executed[path.stem], path.stem, repository,
                                         explorer_records(WORK / "frames" / path.stem))
        notes += page_notes
        if tracks.other_site_built(out, TRACK):  # else the other track's build adds the link later
            page.cells[0].source = tracks.add_link(page.cells[0].source,
                                                   tracks.track_link(TRACK, f"lessons/{path.stem}.html", 1, out.name))
        missing = tracks.missing_glyphs(executed[path.stem])
        if missing:
            notes.append(f"{path.stem}: no font (the course's CJK subset or the machine's) draws "
                         f"{''.join(missing)}: empty boxes in its figures")
        nbformat.write(page, src / "lessons" / path.name)
        shutil.copy2(path, src / "notebooks" / path.name)  # the download: the committed, output-free file
    built_on = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d")
    titles = {stem: lesson_title(nb) for stem, nb in executed.items()}
    diagram = diagram_picture(executed)
    if diagram is not None:
        (src / "architecture.png").write_bytes(diagram)
    index, warnings = home_page((ROOT / "README.md").read_text(encoding="utf-8"), files, titles, built_on, repository,
                                diagram="architecture.png" if diagram is not None else None)
    if tracks.other_site_built(out, TRACK):
        index = tracks.add_link(index, tracks.track_link(TRACK, "index.html", 0, out.name))
    if TRACK.params:
        index = tracks.add_link(index, f"This is the site's {TRACK.name} track: every lesson below ran with "
                                + ", ".join(f"`{k} = {v!r}`" for k, v in TRACK.params.items())
                                + ". A lesson whose data are still English ends at its one-line stop.")
    (src / "index.md").write_text(index, encoding="utf-8")
    for line in sorted(set(notes)) + warnings:
        print(f"book: note: {line}")

    # 3. render
    copy_mathjax(WORK / "static" / "mathjax")
    env = {**os.environ, "COURSE_BOOK_SITE": json.dumps({"repository": repository, "static": str(WORK / "static")})}
    cmd = [sys.executable, "-m", "sphinx", "-b", "html", "-c", str(BOOK), "-d", str(WORK / "doctrees"),
           "-E", "-q", "-W", "--keep-going", str(src), str(out)]
    if args.only:
        # A partial site links to lessons it did not build (every lesson links lesson 00's
        # conventions): those links cannot resolve here. The full build keeps them errors.
        cmd[-2:-2] = ["-D", "suppress_warnings=myst.xref_missing"]
        print("book: --only: links to lessons left out of this build are not checked", flush=True)
    print("book: rendering with Sphinx ...", flush=True)
    if subprocess.run(cmd, env=env).returncode != 0:
        print("book: Sphinx failed or warned (warnings are errors here); see above", file=sys.stderr)
        return 1

    # 4. lighter pages: formulas typeset now, only the icons in use, pictures described
    post = _postprocess()
    node = post.node_executable()
    if node:
        math = post.prerender_math(out, mathjax_es5(), node)
        if math["errors"]:
            listing = "\n".join(f"  {page}: {tex!r}: {msg}" for page, tex, msg in math["errors"][:20])
            print(f"book: {len(math['errors'])} formula(s) MathJax cannot typeset:\n{listing}", file=sys.stderr)
            return 1
        shutil.rmtree(out / "_static" / "mathjax", ignore_errors=True)  # no page loads it any more
        print(f"book: {math['formulas']} formulas typeset to SVG on {math['pages']} page(s) (MathJax in Node)")
    else:
        print("book: note: no Node.js (`node`), so pages load MathJax in the browser (about 2 MB more per "
              "page); install Node (Debian: apt-get install nodejs) to typeset formulas at build time")
    icons = post.subset_icons(out)
    print("book: " + (f"icons: {icons['icons']} in use, {icons['before'] // 1000} kB -> {icons['after'] // 1000} kB"
                      if icons["replaced"] else f"note: icons kept in full ({icons['reason']})"))
    inline = post.inline_icons(out)
    print(f"book: {inline['icons']} icon(s) drawn as inline SVG"
          + (f"; not found: {', '.join(inline['missing'])}" if inline["missing"] else ""))
    dropped = post.search_index_only_on_the_search_page(out)
    print(f"book: searchindex.js left off {dropped} page(s) (only the search page loads it)")
    packed = post.compress_images(out)
    print(f"book: figures {packed['before'] // 1000} kB -> {packed['after'] // 1000} kB (palette PNG)")
    pictures = post.describe_images(out, post.image_descriptions(executed.values()))
    print(f"book: {pictures['described']} figure(s) described (alt text) and linked full size")
    for line in pictures["undescribed"][:10]:
        print(f"book: note: no description recorded for {line}")
    thumbs = post.lesson_thumbnails(out, first_figures(executed))
    print(f"book: {thumbs['thumbnails']} lesson card thumbnail(s) on the home page ({thumbs['bytes'] // 1000} kB)")
    setup = post.fold_setup(out)
    print(f"book: set-up folded into one block on {setup['pages']} page(s)"
          + (f"; left open (not a whole piece of HTML): {', '.join(setup['left_open'])}" if setup["left_open"] else ""))
    tables = post.style_tables(out)
    print(f"book: {tables['tables']} table(s) set for reading, {tables['folded']} with their intervals folded")
    names = post.breakable_names_in_tables(out)
    print(f"book: {names['names']} name(s) in tables may break only after '.' or '_'")
    moving = post.attach_explorers(out, WORK / "frames")
    print(f"book: {moving['explorers']} explorer(s) move on {moving['pages']} page(s) "
          f"({moving['bytes'] // 1000} kB of frames)")
    if args.browser_model and TRACK.key == "en":
        browser_model(out)
    elif args.browser_model:  # its box would run the English model beside another model's pictures
        noted = browser_module().note_other_model(out, TRACK.model_label)
        print(f"book: browser model: left out of the {TRACK.name} track (its lessons ran {TRACK.model_label}); "
              f"{noted['explorers']} explorer(s) on {noted['pages']} page(s) say so")
    top = post.explorers_to_top(out)
    print(f"book: {top['explorers']} explorer(s) moved up to the top of {top['pages']} page(s)")
    summaries = post.search_summaries(out)
    print(f"book: search snippets for {summaries['pages']} page(s)")
    css = post.trim_stylesheets(out)  # last: it reads which classes the finished pages use
    print(f"book: stylesheets {css['before'] // 1000} kB -> {css['after'] // 1000} kB (rules no page uses left out)")
    fonts = post.subset_css_fonts(out)
    print(f"book: icon fonts cut to the characters the stylesheets use: {fonts['before'] // 1000} kB -> "
          f"{fonts['after'] // 1000} kB" if fonts["fonts"] else f"book: note: icon fonts kept whole ({fonts.get('reason')})")
    chinese = post.chinese_text(out, ROOT / "helpers" / "common" / "fonts" / "NotoSansSC-CourseSubset.ttf")
    if chinese["pages"]:
        print(f"book: Chinese marked lang=zh on {chinese['pages']} page(s); its font cut to the "
              f"{chinese['characters']} characters they use ({chinese['bytes'] // 1000} kB)")
    weights = post.page_weights(out)
    heaviest = max(weights, key=weights.get)
    print(f"book: page weight: heaviest {heaviest} {weights[heaviest] / 1e6:.2f} MB, "
          f"home {weights.get('index.html', 0) / 1e6:.2f} MB")

    # 5. offline check
    external = external_resources(out)
    if external:
        listing = "\n".join(f"  {f}: {u}" for f, u in external[:40])
        print(f"book: {len(external)} network address(es) a page would load; the site must render offline:\n{listing}",
              file=sys.stderr)
        return 1
    if tracks.other_site_built(out, TRACK):  # its pages now link here too
        linked = tracks.link_pages(tracks.other_site(out, TRACK), tracks.other_track(TRACK))
        if linked:
            print(f"book: {linked} page(s) of {tracks.other_site(out, TRACK).name} now link to this track")
    print(f"book: {len(files)} lesson(s) -> {out / 'index.html'} in {time.monotonic() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
