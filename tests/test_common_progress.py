"""helpers.common.progress: a bar while the loop runs, nothing left in the saved notebook."""

import nbformat
from nbclient import NotebookClient

from helpers.common.progress import ProgressBar, progress


def test_outside_a_notebook_every_item_comes_through():
    assert list(progress(range(5), desc="x")) == [0, 1, 2, 3, 4]
    assert list(progress(iter("abc"), desc="no len")) == ["a", "b", "c"]
    bar = ProgressBar(3, desc="manual")
    for _ in range(3):
        bar.update()
    bar.close()
    assert bar.done == 3


def test_a_notebook_keeps_no_progress_residue(tmp_path):
    code = ("import time\nfrom helpers.common.progress import ProgressBar, progress\n"
            "total = sum(x for x in progress(range(6), desc='tracing') if time.sleep(0.1) is None)\n"
            "bar = ProgressBar(4, desc='training')\nfor _ in range(4):\n    time.sleep(0.1); bar.update()\nbar.close()\n"
            "print('total', total)")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code)])
    NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = nb.cells[0].outputs
    saved = "".join(str(o.get("data", {}).get("text/plain", "")) + str(o.get("data", {}).get("text/html", ""))
                    + o.get("text", "") for o in outputs)
    assert "total 15" in saved
    assert "tracing" not in saved and "training" not in saved and "/6" not in saved, saved
