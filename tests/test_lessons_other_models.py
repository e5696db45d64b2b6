"""Every lesson runs top to bottom with another BERT size and another sentence, and with a
sentence past the model's maximum input length.

The lessons' ``parameters`` cell is overridden (papermill convention): ``MODEL`` points at a
3-layer, 64-wide, 4-head BERT folder and ``SENTENCE`` at a text none of the lessons uses.
All equality checks inside the lessons must still hold.

The long-input run keeps the lesson's model (the bundled one) and sets ``SENTENCE`` to real
sentences repeated past the model's maximum length: every lesson must run to the end, with the
course's truncation warning ("... truncated, N token(s) dropped ...") and no error.
"""

from pathlib import Path

import jupytext
import nbformat
import pytest
from nbclient import NotebookClient

LESSONS = Path(__file__).resolve().parent.parent / "lessons"
SOURCES = sorted(LESSONS.glob("[0-9]*.py"))
OTHER_SENTENCE = "Yesterday, my grandmother's neighbour repainted the lighthouse near Reykjavik."
TRUNCATION_WARNING = "truncated"  # helpers.model.trace.encode: "... accepts at most N: truncated, K token(s) dropped ..."


def with_parameters(nb, **params):
    cell = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    overrides = "\n".join(f"{k} = {v!r}" for k, v in params.items())
    index = nb.cells.index(cell)
    nb.cells.insert(index + 1, nbformat.v4.new_code_cell("# injected parameters\n" + overrides))
    return nb


@pytest.mark.slow
@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_lesson_runs_with_other_model_and_sentence(source, other_bert_dir, tmp_path):
    nb = with_parameters(jupytext.read(source), MODEL=other_bert_dir, SENTENCE=OTHER_SENTENCE)
    client = NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.output_type == "error"]
    assert not errors
    text = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
    assert f"{other_bert_dir}" in text or "3 layers" in text, "the lesson did not use the injected MODEL"


def long_sentence(tokenizer, model) -> str:
    """Real sentences (data/attention_sentences.txt) repeated until the text is longer than the
    model's maximum input length."""
    from helpers.common.data import load_sentences
    from helpers.model.trace import max_input_tokens

    limit, text, sentences = max_input_tokens(tokenizer, model), "", load_sentences()
    while len(tokenizer(text, truncation=False, verbose=False)["input_ids"]) <= limit + 20:
        text = (text + " " + " ".join(sentences)).strip()
    return text


@pytest.mark.slow
@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_lesson_runs_with_a_sentence_past_the_maximum_length(source, tokenizer, model, tmp_path):
    nb = with_parameters(jupytext.read(source), SENTENCE=long_sentence(tokenizer, model))
    client = NotebookClient(nb, timeout=900, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    errors = [f"{o.ename}: {o.evalue}" for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if o.output_type == "error"]
    assert not errors, errors
    stderr = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
                     if o.get("name") == "stderr")
    assert TRUNCATION_WARNING in stderr, "the long SENTENCE was not truncated with the course's warning"
