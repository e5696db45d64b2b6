"""Every lesson runs top to bottom with another BERT size and another sentence, and with a
sentence past the model's maximum input length.

The lessons' ``parameters`` cell is overridden (papermill convention, ``lesson_params``):

* the **other-model run** points ``MODEL`` at a 3-layer, 64-wide, 4-head BERT folder and
  ``SENTENCE`` at a text none of the lessons uses. All equality checks inside the lessons must
  still hold;
* the **long-input run** keeps the lesson's model (the bundled one) and sets ``SENTENCE`` to real
  sentences repeated past the model's maximum length: every lesson must run to the end, with the
  course's truncation warning ("... truncated, N token(s) dropped ...") and no error.

Both runs use ``BUDGET = "quick"`` (they change the inputs, not the amount of work; the full
budget runs once, in the book build) and share **one kernel per lesson**: the notebook executed is
the other-model run, a ``%reset -f`` (a clean namespace, imports and the loaded bundled model kept
in the kernel), then the long-input run. The two tests read their own half of that one execution.
"""

from pathlib import Path

import jupytext
import nbformat
import pytest
from nbclient import NotebookClient

from lesson_params import quick
from nbval_prepare import checked_cells, expected_for

LESSONS = Path(__file__).resolve().parent.parent / "lessons"
SOURCES = sorted(LESSONS.glob("[0-9]*.py"))
OTHER_SENTENCE = "Yesterday, my grandmother's neighbour repainted the lighthouse near Reykjavik."
TRUNCATION_WARNING = "truncated"  # helpers.model.trace.encode: "... accepts at most N: truncated, K token(s) dropped ..."
SEPARATOR = "# --- the long-input run starts here\n%reset -f"


def long_sentence(tokenizer, model) -> str:
    """Real sentences (data/attention_sentences.txt) repeated until the text is longer than the
    model's maximum input length."""
    from helpers.common.data import load_sentences
    from helpers.model.trace import max_input_tokens

    limit, text, sentences = max_input_tokens(tokenizer, model), "", load_sentences()
    while len(tokenizer(text, truncation=False, verbose=False)["input_ids"]) <= limit + 20:
        text = (text + " " + " ".join(sentences)).strip()
    return text


def _outputs(cells):
    return [o for c in cells if c.cell_type == "code" for o in c.get("outputs", [])]


@pytest.fixture(scope="module")
def long_text(tokenizer, model):
    return long_sentence(tokenizer, model)


_RUNS: dict[str, tuple[list, list]] = {}


@pytest.fixture
def both_runs(request, other_bert_dir, long_text, tmp_path_factory):
    """``(other-model cells, long-input cells)`` of one execution of the lesson (cached per lesson)."""
    source = request.param
    if source.stem not in _RUNS:
        first = quick(jupytext.read(source), MODEL=other_bert_dir, SENTENCE=OTHER_SENTENCE)
        second = quick(jupytext.read(source), SENTENCE=long_text)
        nb = first
        split = len(nb.cells)
        nb.cells = nb.cells + [nbformat.v4.new_code_cell(SEPARATOR)] + second.cells
        client = NotebookClient(nb, timeout=900, kernel_name="python3", allow_errors=True,
                                resources={"metadata": {"path": str(tmp_path_factory.mktemp(source.stem))}})
        client.execute()
        _RUNS[source.stem] = (nb.cells[:split], nb.cells[split + 1:])
    return _RUNS[source.stem]


def _errors(cells) -> list[str]:
    """Errors of the cells; a lesson that stops on purpose (``LessonStop``: its data are in a language
    the model's tokenizer cannot read, ``helpers/common/language.py``) ends there, with one clear line."""
    errors = []
    for o in _outputs(cells):
        if o.output_type == "error":
            if o.ename == "LessonStop":
                break
            errors.append(f"{o.ename}: {o.evalue}")
    return errors


@pytest.mark.slow
@pytest.mark.parametrize("both_runs", SOURCES, ids=lambda p: p.stem, indirect=True)
def test_lesson_runs_with_other_model_and_sentence(both_runs, other_bert_dir):
    cells, _ = both_runs
    errors = _errors(cells)
    assert not errors, errors[:1]
    text = "".join(o.get("text", "") for o in _outputs(cells))
    assert f"{other_bert_dir}" in text or "3 layers" in text, "the lesson did not use the injected MODEL"


@pytest.mark.slow
@pytest.mark.parametrize("both_runs", SOURCES, ids=lambda p: p.stem, indirect=True)
def test_lesson_runs_with_a_sentence_past_the_maximum_length(both_runs):
    _, cells = both_runs
    errors = _errors(cells)
    assert not errors, errors[:1]
    stderr = "".join(o.get("text", "") for o in _outputs(cells) if o.get("name") == "stderr")
    assert TRUNCATION_WARNING in stderr, "the long SENTENCE was not truncated with the course's warning"


@pytest.mark.slow
@pytest.mark.parametrize("both_runs", SOURCES, ids=lambda p: p.stem, indirect=True)
def test_checked_cells_print_their_expected_output(both_runs, request):
    """The cells marked ``# NBVAL_CHECK_OUTPUT`` (the set-up cell: what it installs where) print
    what tests/expected_outputs/ holds, as the nbval run of ``bash course.sh test`` checks: here
    in the long-input half, with the course's own model."""
    _, cells = both_runs
    stem = request.node.callspec.params["both_runs"].stem
    checked = checked_cells(cells)
    expected = expected_for(stem)
    assert len(checked) == len(expected), f"{len(checked)} checked cell(s), {len(expected)} expected output(s)"
    for cell, text in zip(checked, expected):
        printed = "".join(o.get("text", "") for o in cell.get("outputs", []) if o.get("name") == "stdout")
        assert printed == text, f"{stem}: a checked cell printed {printed!r}, expected {text!r}"
