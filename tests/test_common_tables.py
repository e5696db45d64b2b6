"""helpers.common.tables: rows that compare layers or methods become a DataFrame."""

import pandas as pd
import pytest

from helpers.common.tables import results_table, show_table


def test_rows_become_columns_in_order_and_index_labels_rows():
    rows = [{"layer": "emb", "accuracy": "80.0%", "control": "50.0%"},
            {"layer": "1", "accuracy": "90.0%", "control": "55.0%"}]
    table = results_table(rows, index="layer")
    assert list(table.columns) == ["accuracy", "control"]
    assert list(table.index) == ["emb", "1"] and table.index.name == "layer"
    assert table.loc["1", "control"] == "55.0%"
    assert list(results_table(rows).columns) == ["layer", "accuracy", "control"]


def test_bad_rows_say_what_is_wrong():
    with pytest.raises(ValueError, match="at least one row"):
        results_table([])
    with pytest.raises(ValueError, match="row 1 has the columns"):
        results_table([{"a": 1, "b": 2}, {"b": 2, "a": 1}])
    with pytest.raises(ValueError, match="is not a column"):
        results_table([{"a": 1}], index="layer")


def test_show_table_prints_the_title_and_returns_the_table(capsys):
    table = show_table([{"method": "random", "AOPC": "+0.34"}], index="method", title="AOPC per method")
    out = capsys.readouterr().out
    assert out.startswith("AOPC per method\n") and "random" in out and "+0.34" in out
    assert isinstance(table, pd.DataFrame) and table.loc["random", "AOPC"] == "+0.34"


def test_the_title_is_the_caption_of_one_html_output():
    """Title and table are one output, so printed text in the same cell (merged into one block on
    the website) cannot come between them; the title is escaped and keeps its line breaks."""
    from helpers.common.tables import TitledTable

    shown = TitledTable(results_table([{"layer": 1, "share": "4% [3, 5]"}], index="layer"), "a < b\nsecond line")
    page = shown._repr_html_()
    assert page.count("<caption") == 1 and page.index("<caption") > page.index("<table")
    assert '<caption class="course-table-title">a &lt; b<br>second line</caption>' in page
    assert "4% [3, 5]" in page and repr(shown).startswith("a < b\nsecond line\n")
    assert "<caption" not in TitledTable(results_table([{"a": 1}]))._repr_html_()
