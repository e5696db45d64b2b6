"""`python -m helpers download` makes a folder the course can load offline."""

import subprocess
import sys

import pytest
import torch

from helpers.model.loading import BUNDLED_MODEL, load_model
from helpers.model.trace import trace_text


@pytest.mark.slow  # the heaviest of its kind; the --all tier (CI) runs it
def test_download_command_saves_a_loadable_checkpoint(tmp_path, loaded):
    folder = tmp_path / "offline-bert"
    result = subprocess.run(
        [sys.executable, "-m", "helpers", "download", BUNDLED_MODEL, str(folder)],
        capture_output=True, text=True, check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "BERT_COURSE_MODEL=" in result.stdout
    assert (folder / "model.safetensors").exists() and (folder / "config.json").exists()
    tok, model = load_model(str(folder), verbose=False)
    a = trace_text(tok, model, "offline copy")
    b = trace_text(loaded.tokenizer, loaded.model, "offline copy")
    assert torch.allclose(a.pooler_output, b.pooler_output, atol=1e-6)


def test_download_refuses_a_non_empty_folder(tmp_path):
    (tmp_path / "keep.txt").write_text("mine")
    result = subprocess.run(
        [sys.executable, "-m", "helpers", "download", BUNDLED_MODEL, str(tmp_path)],
        capture_output=True, text=True, check=False,
    )
    assert result.returncode == 1
    assert "not empty" in result.stderr and "Traceback" not in result.stderr


def test_download_of_an_unreachable_name_is_a_clear_error(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "helpers", "download", "no-such-org/no-such-bert", str(tmp_path / "x")],
        capture_output=True, text=True, check=False,
    )
    assert result.returncode == 1
    assert "Could not load model 'no-such-org/no-such-bert'" in result.stderr
