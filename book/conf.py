"""Sphinx configuration of the course website (built by ``book/build.py``; see its docstring).

The source folder is ``build/book/src`` (written by build.py: the home page generated from
README.md and the executed lessons); this file only says how to render it.
"""

import json
import os
from pathlib import Path

BOOK = Path(__file__).resolve().parent
# build.py passes what it read from README.md (the repository of the Colab badges).
SITE = json.loads(os.environ.get("COURSE_BOOK_SITE", "{}"))
REPOSITORY = SITE.get("repository", "https://github.com/bert-layer-by-layer/bert-layer-by-layer")

project = "BERT, layer by layer"
author = "the course authors"
copyright = "the course authors (MIT licence)"

extensions = ["myst_nb", "sphinx.ext.mathjax", "sphinx.ext.githubpages"]
exclude_patterns = ["notebooks/**", "**.ipynb_checkpoints"]

# --- notebooks: already executed by build.py, in lessons/ as the working directory ----------
nb_execution_mode = "off"
nb_merge_streams = True
# Markdown outputs go through the same parser as the lessons' text, so their maths renders too.
nb_render_markdown_format = "myst"
# A static page has no kernel, so a live widget cannot work there; its ipywidgets scripts would
# also come from a CDN. Drop the widget view from the HTML priority list: an explorer's output
# then shows the image/png picture that sits beside the view in the same display bundle.
nb_mime_priority_overrides = [("html", "application/vnd.jupyter.widget-view+json", None)]
nb_ipywidgets_js = {}

myst_enable_extensions = ["dollarmath", "amsmath"]
myst_heading_anchors = 3

# --- maths with no network: MathJax 3 from the local _static/mathjax (copied by build.py) ---
# The SVG output draws every glyph as a path, so no web font has to load (file:// included).
mathjax_path = "mathjax/tex-svg.js"
# textmacros: `\text{token\_type}` reads "token_type", as in LaTeX (without it MathJax prints the
# backslash). The extension loads from _static/mathjax/input/tex/extensions like the rest.
mathjax3_config = {
    "loader": {"load": ["[tex]/textmacros"]},
    "tex": {"packages": {"[+]": ["textmacros"]}},
}

# --- HTML ---------------------------------------------------------------------------------
html_theme = "sphinx_book_theme"
html_title = project
# build.py's own static folder holds _static/mathjax; a bare `sphinx-build` (a test) has none.
html_static_path = [str(BOOK / "static")] + ([SITE["static"]] if SITE.get("static") else [])
html_css_files = ["course.css", "course-page.css"]
html_js_files = ["course-page.js"]  # scroll hints on boxes wider than the column
html_favicon = str(BOOK / "static" / "favicon.svg")
html_last_updated_fmt = "%Y-%m-%d"
html_show_sphinx = False
html_theme_options = {
    "repository_url": REPOSITORY,
    "repository_branch": "main",
    "path_to_docs": "",  # the site's lessons/NN_*.ipynb are the repository's lessons/NN_*.ipynb
    "use_repository_button": True,
    "use_download_button": True,
    "launch_buttons": {"colab_url": "https://colab.research.google.com"},
    "home_page_in_toc": True,
    "show_toc_level": 2,
    "navigation_with_keys": False,
}
# An explicit colour mode: without one the theme's script logs "Got invalid theme mode" on a
# first visit (pydata-sphinx-theme reads it from the context). Light: the figures are drawn on white.
html_context = {"default_mode": "light"}
# One search box: the header's search button (on every screen size); the theme's default also
# puts a search field at the top of the left sidebar.
html_sidebars = {"**": ["navbar-logo.html", "icon-links.html", "sbt-sidebar-nav.html"]}
