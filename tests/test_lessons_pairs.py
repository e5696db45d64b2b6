"""Every lesson's py:percent source and its committed .ipynb agree, and the .ipynb is output-free."""

from pathlib import Path

import jupytext
import nbformat
import pytest

LESSONS = Path(__file__).resolve().parent.parent / "lessons"
SOURCES = sorted(LESSONS.glob("[0-9]*.py"))


def _cells(nb):
    return [(c.cell_type, c.source.strip()) for c in nb.cells]


def test_there_are_lessons():
    assert SOURCES, "no lessons/NN_*.py found"


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_pair_in_sync(source):
    ipynb = source.with_suffix(".ipynb")
    assert ipynb.exists(), f"{ipynb.name} is missing: run `bash course.sh sync`"
    from_py = jupytext.read(source)
    committed = nbformat.read(ipynb, as_version=4)
    assert _cells(committed) == _cells(from_py), f"{ipynb.name} is out of sync with {source.name}: run `bash course.sh sync`"


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_ipynb_has_no_outputs(source):
    nb = nbformat.read(source.with_suffix(".ipynb"), as_version=4)
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            assert not cell.outputs, f"{source.stem}.ipynb cell {i} holds outputs"
            assert cell.execution_count is None, f"{source.stem}.ipynb cell {i} has an execution count"


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_parameters_cell(source):
    nb = jupytext.read(source)
    tagged = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1, f"{source.name} needs exactly one cell tagged 'parameters'"
    assert "MODEL" in tagged[0].source and "SENTENCE" in tagged[0].source


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_first_code_cell_is_the_colab_setup(source):
    nb = jupytext.read(source)
    first = next(c for c in nb.cells if c.cell_type == "code")
    assert '"google.colab" in sys.modules' in first.source
    assert "pip" in first.source and "--upgrade" not in first.source and "-U " not in first.source
