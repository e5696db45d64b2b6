"""What book/build.py does to Sphinx's HTML after rendering, so that a lesson page is light,
fits a phone and describes its pictures.

* :func:`prerender_math`: every formula is typeset to SVG **at build time** by MathJax 3 running
  in Node (``render_math.js``, MathJax from the django-static-mathjax wheel), so a page carries
  its formulas and no 2 MB MathJax script. Without Node the pages keep the browser MathJax
  (heavier, same look) and the build says so.
* :func:`subset_icons`: the theme's Font Awesome script (1.5 MB, every icon) is replaced by a
  few kilobytes with only the icons the pages use, drawn the same way (inline SVG).
* :func:`describe_images`: each figure gets its ``alt`` text (the figure's own titles and axis
  labels, recorded by ``helpers.common.style`` when the lesson ran; an explorer's picture says
  that it is a static picture) and a link that opens it full size.
* :func:`fold_setup`: a lesson's set-up (parameters, imports, loading) as one closed block.
* :func:`style_tables`: pandas tables for reading; intervals and the caption's words on how they
  were made folded behind a per-table "show the intervals" switch (a checkbox, CSS only).
* :func:`page_weights`: the bytes a page loads (HTML, scripts, styles, fonts, images).
* :func:`chinese_text`: Chinese runs marked ``lang="zh"`` and set in the course's Noto Sans SC,
  cut to the characters the pages use (a web font linked only where there is Chinese).
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re
import shutil
import subprocess
from pathlib import Path

BOOK = Path(__file__).resolve().parent
MATH = re.compile(r'<(span|div) class="math notranslate nohighlight">(.*?)</\1>', re.S)
MATHJAX_SCRIPTS = re.compile(r'<script[^>]*>\s*window\.MathJax\s*=.*?</script>\s*|'
                             r'<script[^>]*src="[^"]*mathjax/[^"]*"[^>]*>\s*</script>\s*', re.S)
MATH_CSS = "mathjax-svg.css"


# ------------------------------------------------------------------------------ maths
def node_executable() -> str | None:
    return shutil.which("node") or shutil.which("nodejs")


def _tex(source: str) -> str:
    tex = html.unescape(source).strip()
    for left, right in (("\\(", "\\)"), ("\\[", "\\]"), ("$$", "$$")):
        if tex.startswith(left) and tex.endswith(right):
            return tex[len(left):-len(right)].strip()
    return tex


def prerender_math(site: Path, es5: Path, node: str) -> dict:
    """Replace every formula of every page under ``site`` by its SVG; drop the MathJax script.
    Each page carries its glyph shapes once, in a hidden ``<svg><defs>`` after ``<body>``
    (MathJax's global font cache), and its formulas refer to them.

    Returns ``{"formulas": n, "pages": n, "errors": [(page, tex, message)]}``; a formula MathJax
    cannot parse is an error (the build fails on it, naming the page and the TeX)."""
    pages = [p for p in sorted(site.rglob("*.html")) if MATH.search(p.read_text(encoding="utf-8"))]
    texts = {page: page.read_text(encoding="utf-8") for page in pages}
    items = [[[_tex(m[2]), m[1] == "div"] for m in MATH.finditer(texts[page])] for page in pages]
    if not pages:
        return {"formulas": 0, "pages": 0, "errors": []}
    done = subprocess.run([node, str(BOOK / "render_math.js"), str(es5)], input=json.dumps(items),
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"MathJax in Node failed: {done.stderr.strip()[-2000:]}")
    result = json.loads(done.stdout)
    errors = []
    (site / "_static" / MATH_CSS).write_text(result["css"], encoding="utf-8")
    for page, svgs, defs in zip(pages, result["svg"], result["defs"]):
        svgs = iter(svgs)

        def typeset(match, page=page):
            svg = next(svgs)
            tex = _tex(match[2])
            if 'data-mml-node="merror"' in svg:
                message = re.search(r'data-mjx-error="([^"]*)"', svg)
                errors.append((str(page.relative_to(site)), tex, html.unescape(message[1]) if message else "error"))
            label = html.escape(tex, quote=True)
            svg = svg.replace("<mjx-container ", f'<mjx-container aria-label="{label}" ', 1)
            return f'<{match[1]} class="math course-math">{svg}</{match[1]}>'

        text = MATH.sub(typeset, texts[page])
        depth = len(page.relative_to(site).parts) - 1
        link = f'<link rel="stylesheet" type="text/css" href="{"../" * depth}_static/{MATH_CSS}" />'
        text = MATHJAX_SCRIPTS.sub("", text).replace("</head>", f"{link}\n</head>", 1)
        glyphs = ('<svg id="MJX-SVG-global-cache" style="display: none" aria-hidden="true" '
                  f'xmlns="http://www.w3.org/2000/svg">{defs}</svg>')
        text = re.sub(r"(<body[^>]*>)", lambda m: m[1] + glyphs, text, count=1)
        page.write_text(text, encoding="utf-8")
    return {"formulas": sum(map(len, items)), "pages": len(pages), "errors": errors}


# ------------------------------------------------------------------------------ icons
PACKS = {"fa-solid": "fas", "fas": "fas", "fa-brands": "fab", "fab": "fab", "fa-regular": "far", "far": "far"}
MODIFIERS = {"fa-lg", "fa-fw", "fa-xs", "fa-sm", "fa-xl", "fa-2x", "fa-3x", "fa-spin", "fa-pulse"}
ICON_SCRIPT = """/* The icons this site uses, from Font Awesome Free (icons CC BY 4.0, code MIT; see
   fontawesome.js.LICENSE.txt): book/postprocess.py keeps only these, drawn as inline SVG. */
(function () {
  var ICONS = %s;
  function draw(root) {
    root.querySelectorAll('i[class*="fa-"], span[class*="fa-solid"], span[class*="fa-brands"], span[class*="fa-regular"]').forEach(function (el) {
      var cls = el.getAttribute('class').split(/\\s+/), pack = 'fas', name = null;
      cls.forEach(function (c) {
        if (c === 'fa-brands' || c === 'fab') pack = 'fab';
        else if (c === 'fa-regular' || c === 'far') pack = 'far';
        else if (ICONS['fas:' + c.slice(3)] || ICONS['fab:' + c.slice(3)] || ICONS['far:' + c.slice(3)]) name = c.slice(3);
      });
      var icon = name && (ICONS[pack + ':' + name] || ICONS['fas:' + name] || ICONS['fab:' + name]);
      if (!icon) return;
      var svg = document.createElementNS('http://www.w3.org/2000/svg', 'svg');
      // the pack classes (fa-solid, fa-brands, ...) would set Font Awesome's web font on the
      // icon and make the browser download it although the icon is drawn as a path
      var keep = cls.filter(function (c) { return !/^(fa-(solid|brands|regular)|fa[sbr])$/.test(c); });
      svg.setAttribute('class', 'svg-inline--fa ' + keep.join(' '));
      svg.setAttribute('viewBox', '0 0 ' + icon[0] + ' ' + icon[1]);
      svg.setAttribute('aria-hidden', 'true');
      svg.setAttribute('focusable', 'false');
      var path = document.createElementNS('http://www.w3.org/2000/svg', 'path');
      path.setAttribute('fill', 'currentColor');
      path.setAttribute('d', icon[2]);
      svg.appendChild(path);
      el.replaceWith(svg);
    });
  }
  var style = document.createElement('style');
  style.textContent = '.svg-inline--fa{display:inline-block;height:1em;overflow:visible;vertical-align:-.125em}' +
    '.svg-inline--fa.fa-lg{height:1.25em;vertical-align:-.2em}.svg-inline--fa.fa-fw{width:1.25em}';
  document.head.appendChild(style);
  if (document.readyState !== 'loading') draw(document);
  else document.addEventListener('DOMContentLoaded', function () { draw(document); });
})();
"""


def used_icons(site: Path) -> set[tuple[str, str]]:
    """``(pack, name)`` of every ``<i class="fa-...">`` on the site's pages."""
    found = set()
    for page in site.rglob("*.html"):
        for classes in re.findall(r'<(?:i|span) class="([^"]*\bfa-[^"]*)"', page.read_text(encoding="utf-8")):
            tokens = classes.split()
            pack = next((PACKS[t] for t in tokens if t in PACKS), "fas")
            found |= {(pack, t[3:]) for t in tokens if t.startswith("fa-") and t not in PACKS and t not in MODIFIERS}
    return found


def icon_definitions(bundle: str) -> dict[str, dict[str, list]]:
    """``{pack: {name: [width, height, path]}}`` read from Font Awesome's all-in-one script, where
    each pack's icons are defined before the call that registers them, ``("fas", ...)``."""
    packs, start = {}, 0
    entry = re.compile(r'(?:"([\w-]+)"|\b([a-z][\w]*)):\[(\d+),(\d+),\[[^\]]*\],"[0-9a-f]*",("[^"]*"|\[[^\]]*\])\]')
    for call in re.finditer(r'\("(fa[bsr])",\s*\w+\)', bundle):
        icons = packs.setdefault(call[1], {})
        for m in entry.finditer(bundle, start, call.start()):
            paths = json.loads(m[5])
            path = paths if isinstance(paths, str) else " ".join(p for p in paths if p)  # duotone: both layers
            icons.setdefault(m[1] or m[2], [int(m[3]), int(m[4]), path])
        start = call.end()
    return packs


def subset_icons(site: Path) -> dict:
    """Replace ``_static/scripts/fontawesome.js`` by the icons in use. Returns what it did;
    leaves the full script when an icon in use cannot be found (and says which)."""
    script = site / "_static" / "scripts" / "fontawesome.js"
    if not script.exists():
        return {"replaced": False, "reason": "no fontawesome.js"}
    defs = icon_definitions(script.read_text(encoding="utf-8"))
    used = used_icons(site)
    chosen, missing = {}, []
    for pack, name in sorted(used):
        icon = defs.get(pack, {}).get(name) or defs.get("fas", {}).get(name)
        if icon is None:
            missing.append(f"{pack}:{name}")
        else:
            chosen[f"{pack}:{name}"] = icon
    if missing:
        return {"replaced": False, "reason": f"icons not found in the bundle: {', '.join(missing)}"}
    before = script.stat().st_size
    script.write_text(ICON_SCRIPT % json.dumps(chosen, separators=(",", ":")), encoding="utf-8")
    for stale in script.parent.glob("*.map"):
        stale.unlink()  # source maps of the theme's scripts: never loaded by a reader
    return {"replaced": True, "icons": len(chosen), "before": before, "after": script.stat().st_size}


# ------------------------------------------------------------------------------ pictures
def image_descriptions(notebooks) -> dict[str, str]:
    """``{sha256 of the PNG: alt text}`` from executed notebooks' outputs (the file name MyST-NB
    gives each picture is the SHA-256 of its bytes)."""
    alts = {}
    for nb in notebooks:
        for cell in nb.cells:
            for output in cell.get("outputs", []):
                png = output.get("data", {}).get("image/png")
                alt = output.get("metadata", {}).get("image/png", {}).get("alt")
                if png and alt:
                    alts[hashlib.sha256(base64.b64decode(png)).hexdigest()] = alt
    return alts


IMG = re.compile(r"<img\s[^>]*>")
EXPLORER_ALT = "Static picture of the"  # helpers.common.explorer.Explorer's alt text begins so
EXPLORER_CAPTION = "Static picture \u2014 run the notebook to explore."
FIGURE = re.compile(r"<figure\b.*?</figure>", re.S)
IMAGE_REFERENCE = re.compile(r'<a class="reference internal image-reference" href="[^"]*">\s*(<img\s[^>]*>)\s*</a>')
PICTURE = re.compile(r'src="([^"]*_images/([0-9a-f]{64})\.png)"')


def describe_images(site: Path, alts: dict[str, str]) -> dict:
    """Give each figure of a lesson page its alt text and a link to open it full size.
    Returns counts, and the pictures left with a file name as alt text."""
    described, undescribed = 0, []
    for page in sorted((site / "lessons").glob("*.html")):
        text = page.read_text(encoding="utf-8")
        # Pictures inside a <figure> have a caption (book/build.py numbers it and adds the
        # explorer sentence there); only an uncaptioned explorer picture needs the line below it.
        # MyST-NB links a captioned figure's picture to itself; the link added below replaces
        # that one (nested links are invalid HTML).
        text = IMAGE_REFERENCE.sub(r"\1", text)
        figures = [m.span() for m in FIGURE.finditer(text)]

        def fix(match, page=page):
            nonlocal described
            tag = match[0]
            picture = PICTURE.search(tag)
            if picture is None:
                return tag  # the Colab badge, the theme's logos
            alt = alts.get(picture[2])
            if alt is None:
                undescribed.append(f"{page.name}: {picture[1]}")
            else:
                described += 1
                tag = re.sub(r'\salt="[^"]*"', "", tag)
                tag = tag.replace("<img ", f'<img alt="{html.escape(plain_tex(alt), quote=True)}" ', 1)
            link = (f'<a class="course-enlarge" href="{picture[1]}" target="_blank" rel="noopener" '
                    f'title="open the figure full size">{tag}</a>')
            captioned = any(a <= match.start() < b for a, b in figures)
            if alt is not None and alt.startswith(EXPLORER_ALT) and not captioned:
                link += f'<span class="course-caption">{EXPLORER_CAPTION}</span>'
            return link

        page.write_text(IMG.sub(fix, text), encoding="utf-8")
    return {"described": described, "undescribed": undescribed}


TEX_SYMBOLS = {"alpha": "α", "beta": "β", "gamma": "γ", "delta": "δ", "epsilon": "ε", "varepsilon": "ε",
               "theta": "θ", "lambda": "λ", "mu": "μ", "sigma": "σ", "tau": "τ", "phi": "φ", "pi": "π",
               "Delta": "Δ", "Sigma": "Σ", "ell": "ℓ", "top": "T", "cdot": "·", "times": "×", "to": "→",
               "rightarrow": "→", "leq": "≤", "geq": "≥", "le": "≤", "ge": "≥", "neq": "≠", "approx": "≈",
               "pm": "±", "infty": "∞", "sum": "Σ", "in": "∈", "ldots": "…", "dots": "…", "quad": " ", ",": " "}


def plain_tex(text: str) -> str:
    """Text with its ``$...$`` maths read out plainly, for an alt text (a screen reader would
    spell ``\\sqrt{d}`` letter by letter): ``$QK^\\top/\\sqrt{d}$`` -> ``QKᵀ/√d``-like plain text."""
    def maths(match):
        tex = match[1]
        for _ in range(4):  # nested braces, inside out
            tex = re.sub(r"([_^])\{([^{}]*)\}", r"\1\2", tex)
            tex = re.sub(r"\\(?:text|mathrm|mathbf|mathit|operatorname|textrm|mathsf)\{([^{}]*)\}", r"\1", tex)
            tex = re.sub(r"\\frac\{([^{}]*)\}\{([^{}]*)\}", r"(\1)/(\2)", tex)
            tex = re.sub(r"\\sqrt\{([^{}]*)\}", r"√(\1)", tex)
        tex = re.sub(r"\\([A-Za-z]+|,|\|)", lambda m: TEX_SYMBOLS.get(m[1], "‖" if m[1] == "|" else m[1]), tex)
        tex = re.sub(r"(√|^|/)\(([A-Za-z0-9_]+)\)", r"\1\2", tex.replace("{", "").replace("}", ""))
        return tex.replace("\\", "")
    return re.sub(r"\$([^$]+)\$", maths, text)


def compress_images(site: Path) -> dict:
    """Re-encode each figure in ``_images`` as a 256-colour palette PNG (no dithering) when that
    is smaller: plots are flat colours, lines and text, and a colour map has 256 steps anyway.
    The file keeps its name. Returns bytes before and after."""
    before = after = 0
    for path in sorted((site / "_images").glob("*.png")):
        data = path.read_bytes()
        before += len(data)
        packed = palette_png(data)
        if len(packed) < len(data):
            path.write_bytes(packed)
        after += min(len(packed), len(data))
    return {"before": before, "after": after}


def palette_png(data: bytes) -> bytes:
    """``data`` (a PNG) re-encoded as a 256-colour palette PNG, no dithering."""
    from io import BytesIO

    from PIL import Image

    with Image.open(BytesIO(data)) as image:
        image.load()
        rgba = image.convert("RGBA")
    if rgba.getextrema()[3][0] == 255:
        palette = rgba.convert("RGB").quantize(256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    else:
        palette = rgba.quantize(256, method=Image.Quantize.FASTOCTREE, dither=Image.Dither.NONE)
    buffer = BytesIO()
    palette.save(buffer, format="PNG", optimize=True)
    return buffer.getvalue()


# ------------------------------------------------------------------------------ explorers
EXPLORER_SCRIPT = "course-explorer.js"
# a picture as describe_images left it (inside its full-size link), or a bare one
EXPLORER_PICTURE = re.compile(r'<a class="course-enlarge" href="[^"]*"[^>]*>\s*(<img\s[^>]*>)\s*</a>|(<img\s[^>]*>)')


def attach_explorers(site: Path, frames: Path) -> dict:
    """Give each explorer picture whose frames the book build recorded (``frames/<lesson>/<sha256
    of the picture>.json``, written by ``helpers.common.explorer_frames`` in the lesson's kernel)
    its sliders: the picture goes into a ``div.course-explorer`` with the frames (gzip-compressed
    JSON in base64) and the background picture (a file in ``_images``); ``_static/course-explorer.js``
    (only on pages with an explorer) adds the sliders and draws a moved state on a canvas. The
    picture loses its full-size link: it would open the first state whatever the sliders show.

    Returns ``{"explorers": n, "pages": n, "bytes": frames' bytes on the pages}``."""
    import gzip

    done = {"explorers": 0, "pages": 0, "bytes": 0}
    for page in sorted((site / "lessons").glob("*.html")):
        folder = frames / page.stem
        if not folder.is_dir():
            continue
        records = {p.stem: p for p in folder.glob("*.json")}
        text = page.read_text(encoding="utf-8")
        count = 0

        def wrap(match):
            nonlocal count
            tag = match[1] or match[2]
            picture = PICTURE.search(tag)
            path = records.get(picture[2]) if picture else None
            if path is None:
                return match[0]
            record = json.loads(path.read_text(encoding="utf-8"))
            if record.get("kind") != "frames" or not record.get("controls"):
                return match[0]
            background = base64.b64decode(record.pop("background").split(",", 1)[1])
            name = f"{picture[2]}-background.png"
            (site / "_images" / name).write_bytes(min(palette_png(background), background, key=len))
            packed = base64.b64encode(gzip.compress(json.dumps(record, separators=(",", ":")).encode("utf-8"), 9,
                                                    mtime=0)).decode("ascii")
            done["bytes"] += len(packed)
            count += 1
            src = picture[1].rsplit("/", 1)[0] + "/" + name
            return (f'<div class="course-explorer"><div class="course-explorer-stage">{tag}</div>'
                    f'<img class="course-explorer-background" src="{src}" alt="" aria-hidden="true" />'
                    f'<script type="application/octet-stream" class="course-frames" data-encoding="gzip-base64">'
                    f"{packed}</script></div>")

        text = EXPLORER_PICTURE.sub(wrap, text)
        if count:
            depth = len(page.relative_to(site).parts) - 1
            tag = f'<script defer src="{"../" * depth}_static/{EXPLORER_SCRIPT}"></script>'
            text = text.replace("</head>", f"{tag}\n</head>", 1)
            page.write_text(text, encoding="utf-8")
            done["explorers"] += count
            done["pages"] += 1
    return done


# ------------------------------------------------------------------------------ search
SUMMARY_SCRIPT = "search-summaries.js"
MAIN = re.compile(r'<main[^>]*role="main"[^>]*>(.*?)</main>', re.S)


def page_text(page_html: str) -> str:
    """The searchable part of a page as light HTML: its main content's text, with the section
    elements (and their ids, which search results link to) kept and everything else dropped."""
    main = MAIN.search(page_html)
    body = main[1] if main else page_html
    body = re.sub(r"<(svg|script|style|mjx-container)\b.*?</\1>", " ", body, flags=re.S)
    body = re.sub(r'<(/?)section\b([^>]*?)(\sid="[^"]*")?[^>]*>',
                  lambda m: f"<{m[1]}section{m[3] or ''}>", body)
    body = re.sub(r"<(?!/?section\b)[^>]+>", " ", body)
    return re.sub(r"\s+", " ", body).strip()


def search_summaries(site: Path) -> dict:
    """Let the search page show a snippet under each result from ``file://`` too: Sphinx's
    search fetches each result's page for its snippet, which a browser refuses for files on
    disk. ``_static/search-summaries.js`` carries every page's text and answers those fetches;
    only search.html loads it."""
    search = site / "search.html"
    if not search.exists():
        return {"pages": 0}
    texts = {}
    for page in [site / "index.html"] + sorted((site / "lessons").glob("*.html")):
        if page.exists():
            texts[str(page.relative_to(site).with_suffix("")).replace("\\", "/")] = readable_text(
                page.read_text(encoding="utf-8"))
    script = ("/* Page texts for the search page's snippets (book/postprocess.py). */\n(function () {\n"
              f"  var TEXT = {json.dumps(texts, ensure_ascii=False)};\n"
              "  var fetchPage = window.fetch;\n"
              "  window.fetch = function (url) {\n"
              "    var u = String(url).split('#')[0].split('?')[0];\n"
              "    for (var name in TEXT) {\n"
              "      if (u.slice(-(name.length + 5)) === name + '.html')\n"
              "        return Promise.resolve(new Response('<div role=\"main\">' + TEXT[name] + '</div>'));\n"
              "    }\n"
              "    return fetchPage.apply(this, arguments);\n"
              "  };\n})();\n")
    (site / "_static" / SUMMARY_SCRIPT).write_text(script, encoding="utf-8")
    html_text = search.read_text(encoding="utf-8")
    tag = f'<script src="_static/{SUMMARY_SCRIPT}"></script>\n'
    html_text = html_text.replace('<script src="_static/searchtools.js', tag + '<script src="_static/searchtools.js', 1)
    search.write_text(html_text, encoding="utf-8")
    return {"pages": len(texts), "bytes": len(script.encode("utf-8"))}


# ------------------------------------------------------------------------------ weight
LOADS = re.compile(r'<(?:script[^>]*\ssrc|link[^>]*\shref|img[^>]*\ssrc)="([^"#?]+)[^"]*"[^>]*>', re.S)


def page_weight(page: Path) -> dict[str, int]:
    """Bytes ``page`` loads, by kind: its HTML, scripts, stylesheets (and the fonts they name),
    images. Links to other pages are not loads; only what a browser fetches to show the page."""
    text = page.read_text(encoding="utf-8")
    kinds = {"html": len(text.encode("utf-8"))}
    seen = set()
    for tag in LOADS.finditer(text):
        whole, url = tag[0], tag[1]
        if url.startswith(("http:", "https:", "data:", "//")):
            continue
        if whole.startswith("<link") and not re.search(r'rel="(stylesheet|preload)"', whole):
            continue
        path = (page.parent / url).resolve()
        if path in seen or not path.is_file():
            continue
        seen.add(path)
        kind = {".js": "scripts", ".css": "styles"}.get(path.suffix, "images")
        kinds[kind] = kinds.get(kind, 0) + path.stat().st_size
        if path.suffix == ".css":
            for ref in re.findall(r"url\(([^)]+)\)", path.read_text(encoding="utf-8", errors="replace")):
                font = (path.parent / ref.strip("'\" ").split("?")[0].split("#")[0]).resolve()
                if font.suffix in (".woff", ".woff2", ".ttf") and font.is_file() and font not in seen:
                    seen.add(font)
                    kinds["fonts"] = kinds.get("fonts", 0) + font.stat().st_size
    return kinds


def page_weights(site: Path) -> dict[str, int]:
    """``{page (relative): total bytes}`` for the home page and every lesson page."""
    pages = [site / "index.html"] + sorted((site / "lessons").glob("*.html"))
    return {str(p.relative_to(site)): sum(page_weight(p).values()) for p in pages if p.exists()}


# ------------------------------------------------------------------------------ lighter shared assets
def css_blocks(css: str) -> list[tuple[str, str | None]]:
    """Top-level blocks of a stylesheet: ``(prelude, body)`` for ``prelude { body }`` and
    ``(statement, None)`` for ``@charset ...;`` / ``@import ...;``. Strings and comments are
    respected; comments are dropped (a ``/*! licence */`` comment is kept as a statement)."""
    blocks, i, n, start = [], 0, len(css), 0
    depth, body_start, prelude = 0, 0, ""
    while i < n:
        c = css[i]
        if c == "/" and css.startswith("/*", i):
            end = css.find("*/", i + 2)
            end = n if end < 0 else end + 2
            if depth == 0 and css.startswith("/*!", i):
                blocks.append((css[i:end], None))
                start = end
            elif depth == 0:
                start = end if not css[start:i].strip() else start
            i = end
            continue
        if c in "\"'":
            j = i + 1
            while j < n and css[j] != c:
                j += 2 if css[j] == "\\" else 1
            i = j + 1
            continue
        if c == "{":
            if depth == 0:
                prelude, body_start = css[start:i].strip(), i + 1
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                blocks.append((prelude, css[body_start:i]))
                start = i + 1
        elif c == ";" and depth == 0:
            statement = css[start:i + 1].strip()
            if statement:
                blocks.append((statement, None))
            start = i + 1
        i += 1
    return blocks


def _split_selectors(prelude: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for c in prelude:
        if c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
        if c == "," and depth == 0:
            parts.append(current.strip())
            current = ""
        else:
            current += c
    parts.append(current.strip())
    return [p for p in parts if p]


FUNCTIONAL = re.compile(r":(?:not|is|where|has|-webkit-any|-moz-any|host|host-context|nth-child|nth-last-child)\((?:[^()]|\([^()]*\))*\)")


def selector_in_use(selector: str, used: set[str]) -> bool:
    """Whether every class and id a selector needs appears in ``used`` (what :not(), :is() or
    :has() hold is optional here, so such a rule is kept)."""
    plain = FUNCTIONAL.sub("", re.sub(r"\[[^\]]*\]", "", selector))
    names = re.findall(r"[.#]((?:\\.|[\w-])+)", plain)
    return all(name.replace("\\", "") in used for name in names)


def purge_css(css: str, used: set[str]) -> str:
    """``css`` without the rules whose selectors need a class or id no page uses (PurgeCSS's
    idea: bootstrap's utility classes, unused components, Font Awesome's thousands of icons),
    and without ``@font-face`` rules for families nothing left names."""
    out = []
    for prelude, body in css_blocks(css):
        if body is None:
            out.append(prelude)
        elif prelude.startswith(("@media", "@supports", "@layer", "@container")):
            inner = purge_css(body, used)
            if inner.strip():
                out.append(f"{prelude}{{{inner}}}")
        elif prelude.startswith("@font-face"):
            out.append(("font-face", body))
        elif prelude.startswith("@"):
            out.append(f"{prelude}{{{body}}}")  # @keyframes, @page, ...: kept whole
        else:
            kept = [s for s in _split_selectors(prelude) if selector_in_use(s, used)]
            if kept:
                out.append(f"{','.join(kept)}{{{body}}}")
    text = "".join(o for o in out if isinstance(o, str))
    faces = []
    for o in out:
        if isinstance(o, tuple):
            family = re.search(r"font-family:\s*([^;]+)", o[1])
            name = family[1].strip().strip("'\"").replace("\\ ", " ") if family else ""
            if name and _names_family(text, name):
                faces.append(f"@font-face{{{o[1]}}}")
    return "".join(faces) + text


def _names_family(css: str, family: str) -> bool:
    """Whether a ``font``/``font-family`` declaration in ``css`` names ``family``, directly or
    through custom properties (``--fa-family-brands: "Font Awesome 7 Brands"`` used as
    ``font-family: var(--fa-family-brands)``)."""
    names = [re.escape(family).replace(r"\ ", r"(?:\\ |\s)")]
    for _ in range(4):
        either = "|".join(names)
        for prop in re.findall(r"(--[\w-]+)\s*:[^;{}]*(?:" + either + ")", css):
            token = r"var\(\s*" + re.escape(prop) + r"\s*[,)]"
            if token not in names:
                names.append(token)
    either = "|".join(names)
    return bool(re.search(r"(?<![\w-])font(?:-family)?\s*:[^;{}]*(?:" + either + ")", css))


def used_names(site: Path) -> set[str]:
    """Every class and id on the site's pages, and every word in its scripts (a script may add a
    class; a superset is safe). Font Awesome's class names count only where a page uses them:
    an icon a script adds is drawn as inline SVG (``subset_icons``), never with the icon font."""
    used, scripted = set(), set()
    for page in site.rglob("*.html"):
        text = page.read_text(encoding="utf-8", errors="replace")
        for value in re.findall(r'\s(?:class|id)="([^"]*)"', text):
            used.update(value.split())
        for script in re.findall(r"<script\b[^>]*>(.*?)</script>", text, re.S):
            scripted.update(re.findall(r"[\w-]+", script))
    for script in site.rglob("*.js"):
        if "mathjax" in script.parts:
            continue
        scripted.update(re.findall(r"[\w-]+", script.read_text(encoding="utf-8", errors="replace")))
    return used | {w for w in scripted if not (w.startswith("fa-") or w in ("fa", "fas", "fab", "far"))}


def trim_stylesheets(site: Path) -> dict:
    """Purge the theme's stylesheets (:func:`purge_css`) against what the site uses; the
    course's own (``course.css``, the maths) are left as they are. Returns bytes before/after."""
    used = used_names(site)
    before = after = 0
    for sheet in sorted((site / "_static").rglob("*.css")):
        if sheet.name in ("course.css", "course-page.css", MATH_CSS):
            continue
        css = sheet.read_text(encoding="utf-8", errors="replace")
        trimmed = purge_css(css, used)
        before += len(css.encode("utf-8"))
        after += len(trimmed.encode("utf-8"))
        sheet.write_text(trimmed, encoding="utf-8")
    for stale in (site / "_static").rglob("*.css.map"):
        stale.unlink()
    return {"before": before, "after": after}


ICON_TAG = re.compile(r'<(?:i|span) class="((?:[^"]*\s)?fa-(?:solid|brands|regular)\b[^"]*|(?:[^"]*\s)?fa[sbr]\s[^"]*)"([^>]*)>\s*</(?:i|span)>')


def inline_icons(site: Path) -> dict:
    """Draw every Font Awesome icon of the pages as an inline ``<svg>`` in the HTML itself, so no
    icon needs a web font (the theme's CSS would load a 110 kB font for the one GitHub icon
    before any script could replace it). ``_static/scripts/fontawesome.js`` stays for icons a
    script adds later. Returns ``{"icons": n, "missing": [...]}``."""
    script = site / "_static" / "scripts" / "fontawesome.js"
    text = script.read_text(encoding="utf-8") if script.exists() else ""
    match = re.search(r"var ICONS = (\{.*?\});", text, re.S)
    icons = json.loads(match[1]) if match else {}
    done, missing = 0, set()

    def svg(m):
        nonlocal done
        classes = m[1].split()
        pack = next((PACKS[c] for c in classes if c in PACKS), "fas")
        names = [c[3:] for c in classes if c.startswith("fa-") and c not in PACKS and c not in MODIFIERS]
        icon = next((icons.get(f"{p}:{n}") for n in names for p in (pack, "fas", "fab", "far") if icons.get(f"{p}:{n}")), None)
        if icon is None:
            missing.update(names)
            return m[0]
        done += 1
        keep = " ".join(c for c in classes if c not in PACKS)
        width, height, path = icon
        return (f'<svg class="svg-inline--fa {keep}"{m[2]} viewBox="0 0 {width} {height}" aria-hidden="true" '
                f'focusable="false"><path fill="currentColor" d="{path}"/></svg>')

    for page in site.rglob("*.html"):
        html_text = page.read_text(encoding="utf-8")
        new = ICON_TAG.sub(svg, html_text)
        if new != html_text:
            page.write_text(new, encoding="utf-8")
    return {"icons": done, "missing": sorted(missing)}


SEARCH_INDEX = re.compile(r'\s*<script[^>]*src="[^"]*searchindex\.js[^"]*"[^>]*>\s*</script>')


def search_index_only_on_the_search_page(site: Path) -> int:
    """Drop ``searchindex.js`` (the whole site's words) from every page but ``search.html``: with
    search-as-you-type off, only the search page looks anything up. Returns pages changed."""
    changed = 0
    for page in site.rglob("*.html"):
        if page.name == "search.html":
            continue
        text = page.read_text(encoding="utf-8")
        new = SEARCH_INDEX.sub("", text)
        if new != text:
            page.write_text(new, encoding="utf-8")
            changed += 1
    return changed


SKIP_CLASSES = {"cell_input", "highlight", "header-article", "bd-header-article", "header-article-items", "headerlink", "prev-next-area",
                "bd-footer-article", "bd-footer-content", "course-frames", "toggle-details__summary",
                "bd-sidebar-secondary", "bd-toc", "onthispage", "page-toc", "course-scroll-hint"}
SKIP_TAGS = {"script", "style", "button", "nav", "footer", "svg", "noscript", "template"}
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


def readable_text(page_html: str) -> str:
    """The searchable part of a page as light HTML, as a reader would quote it: the main
    content's prose, outputs and captions, with the section elements (and their ids, which
    search results link to) kept; no page chrome (the article header's buttons), no code (a
    code cell would read token by token), maths as its TeX (not an empty gap)."""
    from html.parser import HTMLParser

    main = MAIN.search(page_html)
    body = main[1] if main else page_html

    class Reader(HTMLParser):
        def __init__(self):
            super().__init__(convert_charrefs=True)
            self.out, self.stack, self.skipping = [], [], 0

        def handle_starttag(self, tag, attrs):
            attrs = dict(attrs)
            if tag in VOID:
                return
            classes = set((attrs.get("class") or "").split())
            skip = tag in SKIP_TAGS or bool(classes & SKIP_CLASSES) or tag == "mjx-container"
            if tag == "mjx-container" and not self.skipping and attrs.get("aria-label"):
                self.out.append(f" {html.escape(plain_tex('$' + attrs['aria-label'] + '$'), quote=False)} ")
            self.stack.append((tag, skip))
            self.skipping += skip
            if tag == "section" and not self.skipping:
                self.out.append(f'<section id="{html.escape(attrs["id"])}">' if attrs.get("id") else "<section>")

        def handle_endtag(self, tag):
            if tag in VOID:
                return
            while self.stack:
                open_tag, skip = self.stack.pop()
                self.skipping -= skip
                if open_tag == "section" and not self.skipping:
                    self.out.append("</section>")
                if open_tag == tag:
                    break

        def handle_data(self, data):
            if not self.skipping:
                self.out.append(html.escape(data, quote=False))

    reader = Reader()
    reader.feed(body)
    text = re.sub(r"\s+", " ", " ".join(reader.out)).strip()
    return re.sub(r"\(\s*\)", "", text)


# ------------------------------------------------------------------------------ set-up
SETUP = re.compile(r'<div class="course-setup-start"(?: data-model="([^"]*)")?>\s*</div>(.*?)'
                   r'<div class="course-setup-end">\s*</div>', re.S)


def _balanced(fragment: str) -> bool:
    """Every block element the fragment opens it closes, in order, and it closes none it did not open."""
    stack = []
    for closing, tag in re.findall(r"<(/?)(div|section|details|table|p|main|article|figure)\b", fragment):
        if not closing:
            stack.append(tag)
        elif not stack or stack.pop() != tag:
            return False
    return not stack


def fold_setup(site: Path) -> dict:
    """Each lesson page's set-up (parameters, imports, the model's loading printout), which
    book/build.py put between two markers, becomes one closed ``<details class="course-setup">``:
    the page opens on its idea. Its summary says what is inside and which model the lesson loaded.
    A run that is not a whole piece of HTML (it would cut a section in two) stays open, markers
    removed, and is named."""
    done = {"pages": 0, "left_open": []}
    for page in sorted((site / "lessons").glob("*.html")):
        text = page.read_text(encoding="utf-8")

        def fix(match):
            inner = match[2]
            if not _balanced(inner):
                done["left_open"].append(page.name)
                return inner
            done["pages"] += 1
            model = (f' <span class="course-setup-model">Model: {match[1]}</span>' if match[1] else "")
            return (f'<details class="course-setup"><summary><span class="course-setup-title">Set-up</span> '
                    f'<span class="course-setup-what">parameters, imports and loading; open to read or change '
                    f'them</span>{model}</summary>{inner}</details>')

        new = SETUP.sub(fix, text)
        if new != text:
            page.write_text(new, encoding="utf-8")
    return done


# ------------------------------------------------------------------------------ tables
TABLE = re.compile(r'<table\b[^>]*class="[^"]*\bdataframe\b[^"]*"[^>]*>.*?</table>', re.S)
ROW = re.compile(r"<tr\b[^>]*>.*?</tr>", re.S)
CELL = re.compile(r"<(t[hd])\b([^>]*)>(.*?)</\1>", re.S)
NUMBER = r"[−\-+]?(?:\d[\d,]*(?:\.\d+)?|\.\d+)(?:e[−\-+]?\d+)?"
# a number with its unit, maybe "of N", then any number of bracketed or parenthesised extras
# ("84.1% [82.9, 85.3]", "34.1% [33.5, 34.7] (49.6%)", "12 of 144 (8%)")
NUMERIC = re.compile(rf"^\s*(?:[~≈<>≤≥]\s*)?{NUMBER}\s*(?:%|pp|points?|ms|s|min|x|×)?(?:\s*(?:of|/)\s*{NUMBER})?"
                     rf"(?:\s*[\[(][^\])]*[\])])*\s*$")
# an interval or a range of two numbers: "[82.9, 85.3]", "[−4.1, 2.0]", "[3e-05, 1e-04]", "[1.0 – 2.0]"
CI = re.compile(rf"\[\s*{NUMBER}\s*(?:%|pp)?\s*(?:,|–|—|\bto\b)\s*{NUMBER}\s*(?:%|pp)?\s*\]")
# how an interval was made, in a caption: a bracketed or parenthesised aside that names it
CI_NOTE = re.compile(r"\s*(?:\[[^\[\]]*\b(?:CI|intervals?|uncertainty|resampl\w*|bootstrap\w*|jackknife|permutation|"
                     r"Bonferroni|Holm|in brackets)\b[^\[\]]*\]|\([^()]*\b(?:CI|intervals?|uncertainty|resampl\w*|"
                     r"bootstrap\w*|jackknife|permutation|Bonferroni|Holm|in brackets)\b[^()]*\))", re.I)
IDENTIFIER = re.compile(r"\b([A-Za-z_][\w]*(?:[._][\w]+)+)\b")
TAG = re.compile(r"(<[^>]+>)")


def _cell_text(inner: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", inner)).strip()


def _in_text(inner: str, fix) -> str:
    """``fix`` applied to the text of an HTML fragment, never inside a tag."""
    return "".join(part if TAG.fullmatch(part) else fix(part) for part in TAG.split(inner))


def _breakable(inner: str) -> str:
    """Identifiers (``last_hidden_state``, ``model.config``) may break after ``_`` or ``.`` only,
    never inside a word."""
    return _in_text(inner, lambda text: IDENTIFIER.sub(lambda m: re.sub(r"([._])", r"\1<wbr>", m[1]), text))


def _fold_intervals(inner: str) -> str:
    """Each interval that follows an estimate in a cell goes into ``<span class="course-ci">``:
    folded until the reader asks for the intervals (a cell that is an interval and nothing
    else, a column of intervals, stays as it is)."""
    if CI.fullmatch(_cell_text(inner)) or "course-ci" in inner:
        return inner
    return _in_text(inner, lambda text: CI.sub(lambda m: f'<span class="course-ci">{m[0]}</span>', text))


def _drop_default_index(table: str) -> str:
    """pandas' unnamed 0, 1, 2, ... index (a table built without ``index=``) says nothing to a
    reader: its column goes (header cell and one ``<th>`` per row)."""
    body = re.search(r"<tbody>(.*?)</tbody>", table, re.S)
    head = re.search(r"<thead>(.*?)</thead>", table, re.S)
    if not body or not head:
        return table
    rows = ROW.findall(body[1])
    firsts = [CELL.search(r) for r in rows]
    if not rows or any(m is None or m[1] != "th" or _cell_text(m[3]) != str(i) for i, m in enumerate(firsts)):
        return table
    head_rows = ROW.findall(head[1])
    if len(head_rows) != 1:
        return table
    corner = CELL.search(head_rows[0])
    if corner is None or corner[1] != "th" or _cell_text(corner[3]):
        return table
    new_head = head[1].replace(head_rows[0], head_rows[0][:corner.start()] + head_rows[0][corner.end():], 1)
    new_body = body[1]
    for r, m in zip(rows, firsts):
        new_body = new_body.replace(r, r[:m.start()] + r[m.end():], 1)
    return table.replace(head[1], new_head, 1).replace(body[1], new_body, 1)


def style_table(table: str) -> str:
    """One pandas table, for reading: the index's name moved into the empty top-left header
    cell (no near-empty second header row), pandas' unnamed 0..n-1 index left out, number
    columns marked ``course-num`` (right-aligned, tabular figures; a cell that mixes quantities,
    "34.1% [33.5, 34.7] (49.6%)", is a number too, and a column's cells without any digit,
    "not run here", do not count against it), every interval after an estimate in
    ``<span class="course-ci">`` (folded until the reader opens it; on a line of its own that
    never breaks inside), a caption's aside on how the intervals were made in
    ``<span class="course-ci-note">`` (folded with them), identifiers breakable only at ``_``
    and ``.``."""
    table = _drop_default_index(table)
    head = re.search(r"<thead>(.*?)</thead>", table, re.S)
    if head:
        rows = ROW.findall(head[1])
        if len(rows) == 2:
            first, second = (CELL.findall(r) for r in rows)
            if first and second and not _cell_text(first[0][2]) and _cell_text(second[0][2]) \
                    and not any(_cell_text(c[2]) for c in second[1:]):
                name = second[0][2]
                merged = re.sub(r"<th\b([^>]*)>\s*</th>", lambda m: f"<th{m[1]}>{name}</th>", rows[0], count=1)
                table = table.replace(head[1], head[1].replace(rows[0], merged).replace(rows[1], ""), 1)
    body = re.search(r"<tbody>(.*?)</tbody>", table, re.S)
    if not body:
        return table
    rows = [CELL.findall(r) for r in ROW.findall(body[1])]
    width = max((len(r) for r in rows), default=0)
    numeric = []
    for k in range(width):
        texts = [_cell_text(r[k][2]) for r in rows if len(r) > k and re.search(r"\d", _cell_text(r[k][2]))]
        numeric.append(bool(texts) and sum(bool(NUMERIC.match(t)) for t in texts) >= 0.8 * len(texts))

    def cell(k, match):
        tag, attrs, inner = match[1], match[2], match[3]
        inner = _fold_intervals(inner)
        if k < len(numeric) and numeric[k]:
            attrs = attrs + ' class="course-num"' if "class=" not in attrs else \
                re.sub(r'class="', 'class="course-num ', attrs, count=1)
        else:
            inner = _breakable(inner)
        return f"<{tag}{attrs}>{inner}</{tag}>"

    def row(match):
        cells = list(CELL.finditer(match[0]))
        text = match[0]
        for k, m in reversed(list(enumerate(cells))):
            text = text[:m.start()] + cell(k, m) + text[m.end():]
        return text

    new_body = ROW.sub(row, body[1])
    table = table.replace(body[1], new_body, 1)
    # the header cells of number columns align with their numbers
    head = re.search(r"<thead>(.*?)</thead>", table, re.S)
    if head:
        def header_row(match):
            cells = list(CELL.finditer(match[0]))
            text = match[0]
            offset = width - len(cells)  # a header row may lack the index cell
            for k, m in reversed(list(enumerate(cells))):
                column = k + offset
                if 0 <= column < len(numeric) and numeric[column]:
                    text = text[:m.start()] + f'<{m[1]}{m[2]} class="course-num">{m[3]}</{m[1]}>' + text[m.end():]
            return text
        table = table.replace(head[1], ROW.sub(header_row, head[1]), 1)
    table = re.sub(r'(<thead>\s*<tr)\s+style="text-align: right;"', r"\1", table)
    if 'class="course-ci"' in table:
        table = re.sub(r"(<caption\b[^>]*>)(.*?)(</caption>)",
                       lambda m: m[1] + _in_text(m[2], lambda t: CI_NOTE.sub(
                           lambda n: f'<span class="course-ci-note">{n[0]}</span>', t)) + m[3],
                       table, count=1, flags=re.S)
    return table


TABLE_ANY = re.compile(r"<table\b.*?</table>", re.S)
PRE = re.compile(r'(<span class="pre">)([^<]*)(</span>)')


def breakable_names_in_tables(site: Path) -> dict:
    """In every table of every page (the lesson's own Markdown tables too, such as lesson 00's
    conventions), a name in code may break after "." or "_" and nowhere else: ``<wbr>`` there,
    and course.css keeps ``td code`` from breaking inside a word."""
    names = 0
    for page in sorted(site.rglob("*.html")):
        text = page.read_text(encoding="utf-8")

        def table(match):
            def pre(m):
                nonlocal names
                fixed = re.sub(r"([._])(?=\w)", r"\1<wbr>", m[2])
                names += fixed != m[2]
                return m[1] + fixed + m[3]
            return PRE.sub(pre, match[0])

        new = TABLE_ANY.sub(table, text)
        if new != text:
            page.write_text(new, encoding="utf-8")
    return {"names": names}


CI_SWITCH = ('<input type="checkbox" class="course-ci-toggle" id="{id}">'
             '<label class="course-ci-label" for="{id}">show the intervals</label>')


def style_tables(site: Path) -> dict:
    """:func:`style_table` on every pandas table of the lesson pages, each in a box that scrolls
    sideways when it must (``course-scroll``; course.js marks it so its edge shows a hint). A
    table with folded intervals gets a "show the intervals" switch above it: a checkbox that
    opens them with CSS alone (no script), one per table."""
    tables = folded = 0
    for page in sorted((site / "lessons").glob("*.html")):
        text = page.read_text(encoding="utf-8")
        switches = 0

        def fix(match):
            nonlocal tables, folded, switches
            tables += 1
            styled = style_table(match[0])
            if 'class="course-ci"' not in styled:
                return f'<div class="course-scroll">{styled}</div>'
            folded += 1
            switches += 1
            switch = CI_SWITCH.format(id=f"course-ci-{switches}")
            return f'<div class="course-table">{switch}<div class="course-scroll">{styled}</div></div>'

        new = TABLE.sub(fix, text)
        if new != text:
            page.write_text(new, encoding="utf-8")
    return {"tables": tables, "folded": folded}


CSS_CODEPOINT = re.compile(r"""(?:content|--[\w-]+)\s*:\s*["']((?:\\[0-9a-fA-F]{1,6}\s?|[^"'\\])+)["']""")


def subset_css_fonts(site: Path) -> dict:
    """Cut each web font the stylesheets still name (Font Awesome's, for the icons the theme draws
    in CSS: a download link, an admonition's title) down to the characters the stylesheets use
    (``content: "\\f019"``, ``--pst-icon-download: "\\f019"``): a few kilobytes instead of 245 kB.
    Needs fontTools with brotli (WOFF2); without it the fonts stay whole and it says so."""
    try:
        import brotli  # noqa: F401 - fontTools needs it to read and write WOFF2
        from fontTools import subset as ft
        from fontTools.ttLib import TTFont
    except ImportError as err:
        return {"fonts": 0, "before": 0, "after": 0, "reason": f"{err.name} is not installed"}
    sheets = [p for p in (site / "_static").rglob("*.css")]
    text = "\n".join(p.read_text(encoding="utf-8", errors="replace") for p in sheets)
    codepoints = set()
    for value in CSS_CODEPOINT.findall(text):
        for escape, char in re.findall(r"\\([0-9a-fA-F]{1,6})\s?|([^\\])", value):
            codepoints.add(int(escape, 16) if escape else ord(char))
    done = {"fonts": 0, "before": 0, "after": 0}
    for sheet in sheets:
        for ref in set(re.findall(r"url\(([^)]+\.woff2?)\)", sheet.read_text(encoding="utf-8", errors="replace"))):
            font_path = (sheet.parent / ref.strip("'\"")).resolve()
            if not font_path.is_file():
                continue
            font = TTFont(str(font_path))
            keep = [c for c in codepoints if c in font.getBestCmap()]
            before = font_path.stat().st_size
            options = ft.Options()
            options.flavor = "woff2" if font_path.suffix == ".woff2" else "woff"
            options.layout_features = ["*"]
            subsetter = ft.Subsetter(options)
            subsetter.populate(unicodes=keep or [0x20])
            subsetter.subset(font)
            font.flavor = options.flavor
            font.save(str(font_path))
            done["fonts"] += 1
            done["before"] += before
            done["after"] += font_path.stat().st_size
    return done


# ------------------------------------------------------------------------------ Chinese text
CJK_RUN = re.compile("[\u2e80-\u2fdf\u3000-\u303f\u3040-\u30ff\u3100-\u312f\u3400-\u4dbf\u4e00-\u9fff"
                     "\uf900-\ufaff\ufe30-\ufe4f\uff00-\uffef]+")
# what is not page text: scripts, styles, the tab's title, typeset formulas, comments, tags
NOT_TEXT = re.compile(r"(<script\b.*?</script>|<style\b.*?</style>|<title\b.*?</title>|<svg\b.*?</svg>"
                      r"|<textarea\b.*?</textarea>|<!--.*?-->|<[^>]*>)", re.S)
ZH_OPEN = '<span lang="zh">'
ZH_FONT = "course-zh.woff2"
ZH_CSS = "course-zh.css"
ZH_FAMILY = "Noto Sans SC Course"


def mark_chinese(page_html: str) -> tuple[str, set[str]]:
    """``page_html`` with every run of Chinese in its text (not in tags, scripts, styles, the
    title or formulas) wrapped in ``<span lang="zh">`` -- so a browser picks Chinese glyph forms,
    not Japanese ones, and the page's Chinese font -- and the set of characters wrapped. A run
    already so wrapped stays as it is (running it twice changes nothing)."""
    parts = NOT_TEXT.split(page_html)
    used: set[str] = set()
    for k in range(0, len(parts), 2):  # even parts are text, odd ones the split-off pieces
        text = parts[k]
        if not CJK_RUN.search(text):
            continue
        if k and parts[k - 1] == ZH_OPEN and k + 1 < len(parts) and parts[k + 1] == "</span>" \
                and CJK_RUN.fullmatch(text):
            used |= set(text)
            continue

        def wrap(m):
            used.update(m[0])
            return f"{ZH_OPEN}{m[0]}</span>"
        parts[k] = CJK_RUN.sub(wrap, text)
    return "".join(parts), used


def chinese_text(site: Path, font: Path) -> dict:
    """Mark the Chinese on every page (:func:`mark_chinese`) and ship a font for it: ``font`` (the
    course's Noto Sans SC subset, ``helpers/common/fonts``) cut to the characters the pages use,
    as ``_static/course-zh.woff2`` (WOFF2 needs fontTools with brotli; else TTF), named by
    ``_static/course-zh.css`` (an ``@font-face`` limited to the CJK ranges, and ``:lang(zh)``
    text set in it), which only the pages with Chinese link. Nothing is loaded from a network.
    Run after :func:`subset_css_fonts`, which would cut this font down to the stylesheets'
    icon characters."""
    pages, used = [], set()
    for page in sorted(site.rglob("*.html")):
        text = page.read_text(encoding="utf-8")
        marked, chars = mark_chinese(text)
        if chars:
            pages.append((page, marked))
            used |= chars
    if not pages:
        return {"pages": 0, "characters": 0, "bytes": 0}
    from fontTools import subset as ft
    from fontTools.ttLib import TTFont

    options = ft.Options()
    options.layout_features = ["*"]
    options.hinting = False
    try:
        import brotli  # noqa: F401 - fontTools needs it to write WOFF2
        options.flavor, name, fmt = "woff2", ZH_FONT, "woff2"
    except ImportError:
        options.flavor, name, fmt = None, ZH_FONT.replace(".woff2", ".ttf"), "truetype"
    tt = TTFont(str(font))
    subsetter = ft.Subsetter(options)
    subsetter.populate(unicodes=sorted(ord(c) for c in used if ord(c) in tt.getBestCmap()) or [0x3000])
    subsetter.subset(tt)
    tt.flavor = options.flavor
    static = site / "_static"
    tt.save(str(static / name))
    ranges = "U+2E80-2FDF, U+3000-312F, U+3400-4DBF, U+4E00-9FFF, U+F900-FAFF, U+FE30-FE4F, U+FF00-FFEF"
    (static / ZH_CSS).write_text(
        "/* Chinese text on the course's pages (book/postprocess.py chinese_text): a subset of the\n"
        "   course's Noto Sans SC (SIL OFL 1.1, helpers/common/fonts/) with the characters the pages use */\n"
        f'@font-face {{ font-family: "{ZH_FAMILY}"; src: url("{name}") format("{fmt}");\n'
        f"  font-weight: 100 900; unicode-range: {ranges}; font-display: swap; }}\n"
        f':lang(zh) {{ font-family: "{ZH_FAMILY}", var(--pst-font-family-base, sans-serif), sans-serif; }}\n',
        encoding="utf-8")
    for page, marked in pages:
        prefix = "../" * (len(page.relative_to(site).parts) - 1)
        link = f'<link rel="stylesheet" type="text/css" href="{prefix}_static/{ZH_CSS}" />'
        if ZH_CSS not in marked:
            marked = marked.replace("</head>", f"{link}\n</head>", 1)
        page.write_text(marked, encoding="utf-8")
    return {"pages": len(pages), "characters": len(used), "bytes": (static / name).stat().st_size}


# ------------------------------------------------------------------------------ thumbnails
THUMB_SIZE = (96, 64)  # CSS px on the home page's lesson cards; stored at 2x


def thumbnail_png(data: bytes) -> tuple[bytes, tuple[int, int]]:
    """A small picture of a figure (``data``, a PNG) for a lesson card: scaled to
    :data:`THUMB_SIZE` at 2x (its top kept when it is taller), on white, as a 64-colour palette
    PNG; returns the bytes and the size to show it at (CSS px)."""
    from io import BytesIO

    from PIL import Image

    width, height = (2 * s for s in THUMB_SIZE)
    with Image.open(BytesIO(data)) as image:
        image.load()
        rgba = image.convert("RGBA")
    flat = Image.new("RGB", rgba.size, "white")
    flat.paste(rgba, mask=rgba.getchannel("A"))
    scale = width / flat.width
    flat = flat.resize((width, max(1, round(flat.height * scale))), Image.Resampling.LANCZOS)
    flat = flat.crop((0, 0, width, min(height, flat.height)))
    small = flat.quantize(64, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    buffer = BytesIO()
    small.save(buffer, format="PNG", optimize=True)
    return buffer.getvalue(), (flat.width // 2, flat.height // 2)


def lesson_thumbnails(site: Path, pictures: dict[str, bytes]) -> dict:
    """On the home page's lesson table (not the sidebar), each lesson's title gets a small picture of its first
    figure (``pictures``: ``{lesson stem: PNG}``, from book/build.py's ``first_figures``), made here
    (:func:`thumbnail_png`) as ``_images/thumb-<lesson>.png``; a decorative picture (empty alt:
    the title beside it says where it leads). Returns ``{"thumbnails": n, "bytes": n}``."""
    index = site / "index.html"
    if not index.is_file():
        return {"thumbnails": 0, "bytes": 0}
    text = index.read_text(encoding="utf-8")
    done = {"thumbnails": 0, "bytes": 0}
    table = re.search(r'<table\b[^>]*\blesson-table\b.*?</table>', text, re.S)  # the cards, not the sidebar
    if table is None:
        return done
    for stem, png in sorted(pictures.items()):
        table = re.search(r'<table\b[^>]*\blesson-table\b.*?</table>', text, re.S)
        link = re.compile(rf'<a class="reference internal" href="lessons/{re.escape(stem)}\.html"').search(
            text, table.start(), table.end())
        if link is None or f"thumb-{stem}.png" in text:
            continue
        data, (w, h) = thumbnail_png(png)
        (site / "_images").mkdir(exist_ok=True)
        (site / "_images" / f"thumb-{stem}.png").write_bytes(data)
        img = f'<img class="course-thumb" src="_images/thumb-{stem}.png" width="{w}" height="{h}" alt="" />'
        text = text[:link.start()] + img + text[link.start():]
        done["thumbnails"] += 1
        done["bytes"] += len(data)
    index.write_text(text, encoding="utf-8")
    return done


# ------------------------------------------------------------------------------ explorers near the top
TOP_CELL = re.compile(r'<div class="cell\b[^"]*\btag_course-explorer-top\b[^"]*">')  # build.TOP_TAG
CELL_START = re.compile(r'<div class="cell[ "]')
TOP_LEAD = ('<p class="course-explorer-lead"><strong>Try it first: this lesson\u2019s {what}.</strong> '
            "Move {its} sliders now; the sections below build up what {it} shows, and the cell that "
            "computes {it} comes further down the page (a link there leads back here).</p>")


def _div_end(text: str, start: int) -> int:
    """The index just after the ``</div>`` that closes the ``<div`` at ``start`` (-1: none)."""
    depth = 0
    for tag in re.finditer(r"<div\b|</div>", text[start:]):
        depth += 1 if tag[0] == "<div" else -1
        if depth == 0:
            return start + tag.end()
    return -1


def _setup_end(text: str) -> int:
    """Where a page's Set-up block ends (it may hold folded cells, ``<details>`` of their own), or
    its article begins when it has none."""
    opened, depth = text.find('<details class="course-setup"'), 0
    if opened < 0:
        return text.find("<article")
    for tag in re.finditer(r"<details\b|</details>", text[opened:]):
        depth += 1 if tag[0] == "<details" else -1
        if depth == 0:
            return opened + tag.end()
    return text.find("<article")


def explorers_to_top(site: Path) -> dict:
    """Issue 49: a page opens on its idea. Each explorer that moves on the site (its cell tagged
    ``course-explorer-top`` by ``build.number_captions``, which numbered its figure for this place)
    goes up, whole (its figure: picture, sliders, caption and number; a printout of the cell
    stays), to just
    after the page's first figure below the Set-up block (the "you are here" strip), under one
    generic lead line. Where it was, after the code that computes it, a one-line link leads back
    up. Its caption must read true in both places (the lessons word it so). Pages without a
    tagged cell, or whose tagged cell comes before any other figure, are left as they are.
    Returns ``{"pages": n, "explorers": n}``."""
    done = {"pages": 0, "explorers": 0}
    for page in sorted((site / "lessons").glob("*.html")):
        text = page.read_text(encoding="utf-8")
        if "course-explorer-lead" in text:
            continue
        cells = list(TOP_CELL.finditer(text))
        if not cells:
            continue
        start = _setup_end(text)
        first = text.find("</figure>", max(start, 0))
        if first < 0 or first >= cells[0].start():
            continue
        at = first + len("</figure>")
        holder = [m for m in CELL_START.finditer(text, 0, first)]
        if holder and _div_end(text, holder[-1].start()) > first:
            at = _div_end(text, holder[-1].start())  # after the strip's cell, not inside it
        moved, pieces, end = [], [], 0
        for cell in cells:
            close = _div_end(text, cell.start())
            output = text.find("<figure", cell.start(), close)  # printouts of the cell stay in place
            if output < 0 or "</figure>" not in text[output:close]:
                continue
            out_end = text.index("</figure>", output) + len("</figure>")
            block = text[output:out_end]
            figure = re.search(r'<figure\b[^>]*\bid="([^"]+)"', block)
            number = re.search(r"<strong>(Figure [^<]*?)\.?</strong>", block)
            what = re.search(r'<img\b[^>]*\balt="Explorer \(([^)]*?) on sliders\)', block)
            label = f" ({number[1]})" if number else ""
            sliders = f" ({what[1]})" if what else ""
            target = f'#{figure[1]}' if figure else "#course-explorer-top"
            back = (f'<p class="course-explorer-back"><a href="{target}">\u2191 The explorer at the top of this '
                    f"page{label} shows what this cell computes: move its sliders{sliders} there</a></p>")
            pieces += [text[end:output], back]
            end = out_end
            moved.append(f'<div class="cell_output docutils container">{block}</div>')
        if not moved:
            continue
        pieces.append(text[end:])
        rest = "".join(pieces)
        plural = len(moved) > 1
        lead = TOP_LEAD.format(what="explorers" if plural else "explorer", its="their" if plural else "its",
                               it="they" if plural else "it")
        top = f'<div class="course-explorer-top" id="course-explorer-top">{lead}{"".join(moved)}</div>'
        page.write_text(rest[:at] + top + rest[at:], encoding="utf-8")
        done["pages"] += 1
        done["explorers"] += len(moved)
    return done
