"""Lesson 14 end to end with a checkpoint that HAS a masked-LM head, and a SENTENCE past the
model's maximum length: the lens cells run (the bundled model has no head, so the other lesson
runs skip them), the truncation warning is shown, and every check inside the lesson holds.

The head's weights are random: this proves the code path, it is not a finding."""

from pathlib import Path

import jupytext
import pytest
from nbclient import NotebookClient

from lesson_params import quick

LESSON = Path(__file__).resolve().parent.parent / "lessons" / "14_what_layers_know.py"


@pytest.fixture(scope="module")
def random_mlm_bert_dir(tmp_path_factory, tokenizer):
    import torch
    from transformers import BertConfig, BertForMaskedLM

    torch.manual_seed(0)
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=64, num_hidden_layers=3, num_attention_heads=4,
                        intermediate_size=128, max_position_embeddings=128)
    folder = tmp_path_factory.mktemp("random_mlm_bert")
    BertForMaskedLM(config).eval().save_pretrained(folder, safe_serialization=True)
    tokenizer.save_pretrained(folder)
    return str(folder)


@pytest.mark.slow
def test_lesson_14_runs_the_lens_with_a_head_and_a_too_long_sentence(random_mlm_bert_dir, tmp_path):
    long_sentence = " ".join(["The keeper locked the gate of the old lighthouse before the storm."] * 20)
    nb = quick(jupytext.read(LESSON), MODEL=random_mlm_bert_dir, SENTENCE=long_sentence)
    NotebookClient(nb, timeout=900, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.output_type == "error"]
    text = "".join(o.get("text", "") for o in outputs)
    assert "3 layers" in text
    assert "truncated" in text, "the course's truncation warning must be shown"
    assert "has a trained masked-LM head" in text and "masked " in text
    assert "rank of " in text, "the lens cell must run to its end"
