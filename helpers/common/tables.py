"""Results as tables: rows that compare layers, heads, methods or strategies, shown as a pandas
``DataFrame``. Jupyter and the website draw it as an HTML table that fits the page's column
(its cells wrap; a wide one scrolls inside its own box); a terminal prints it as aligned text.

A lesson builds one ``dict`` per row (the keys are the column names, in order), formats each
number as it wants it read (``"84.5% [83.4, 85.6]"``), and calls :func:`show_table`, which shows
the title and the table as one output (the title is the HTML table's caption).
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Mapping

import pandas as pd


def results_table(rows: Iterable[Mapping[str, object]], index: str | None = None) -> pd.DataFrame:
    """A ``DataFrame`` with one row per mapping in ``rows`` and its keys as the columns, in the
    order the first row gives them. ``index`` names the column that labels the rows (e.g.
    ``"layer"`` or ``"method"``): it becomes the index, so the table reads row by row."""
    rows = [dict(r) for r in rows]
    if not rows:
        raise ValueError("results_table needs at least one row (a mapping from column name to value).")
    columns = list(rows[0])
    for i, row in enumerate(rows[1:], 1):
        if list(row) != columns:
            raise ValueError(f"row {i} has the columns {list(row)}, row 0 has {columns}: every row "
                             "needs the same columns in the same order.")
    table = pd.DataFrame(rows, columns=columns)
    if index is not None:
        if index not in columns:
            raise ValueError(f"index={index!r} is not a column; the columns are {columns}.")
        table = table.set_index(index)
    return table


class TitledTable:
    """A table with its title, shown as one output: HTML with the title as the table's
    ``<caption>`` (Jupyter, Colab, the website), text with the title on the first line (a
    terminal, nbconvert's text). One output, so nothing printed in the same cell can come
    between the title and its table (the website merges a cell's printed text into one block)."""

    def __init__(self, table: pd.DataFrame, title: str | None = None):
        self.table, self.title = table, title

    def _options(self):
        return pd.option_context("display.max_colwidth", None, "display.width", 200,
                                 "display.max_columns", None, "display.max_rows", 500)

    def _repr_html_(self) -> str:
        with self._options():
            body = self.table.to_html(notebook=True)
        if not self.title:
            return body
        caption = "<br>".join(html.escape(line) for line in self.title.splitlines())
        opening = re.search(r"<table\b[^>]*>", body)  # the caption is the table's first child
        return (f'{body[:opening.end()]}<caption class="course-table-title">{caption}</caption>'
                f"{body[opening.end():]}")

    def __repr__(self) -> str:
        with self._options():
            text = self.table.to_string()
        return f"{self.title}\n{text}" if self.title else text


def show_table(rows: Iterable[Mapping[str, object]], index: str | None = None,
               title: str | None = None) -> pd.DataFrame:
    """Display :func:`results_table` of ``rows`` under ``title`` (what the table measures, units,
    what the intervals are) as one :class:`TitledTable` output; returns the table (for a test or
    an exercise to read)."""
    from IPython.display import display

    table = results_table(rows, index)
    display(TitledTable(table, title))
    return table
