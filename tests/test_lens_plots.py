"""helpers.lens.plots: the lens table, drawn from a random BertForMaskedLM (mechanics only)."""

import pytest
import torch

from helpers.common.style import small_text
from helpers.lens.compute import masked_lm_lens
from helpers.lens.plots import plot_lens


def test_lens_table(tokenizer):
    from transformers import BertConfig, BertForMaskedLM

    torch.manual_seed(0)
    mlm = BertForMaskedLM(BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=3,
                                     num_attention_heads=2, intermediate_size=64)).eval()
    lens = masked_lm_lens(tokenizer, mlm, f"The {tokenizer.mask_token} barked at the postman.", top_k=4)
    ax = plot_lens(lens)
    assert "lens" in ax.get_title()
    assert [t.get_text() for t in ax.get_yticklabels()] == ["emb", "1", "2", "3"]
    assert len(ax.texts) == 4 * 4
    assert ax.texts[0].get_text() == f"{lens.top_tokens[0][0]}\n{float(lens.top_probs[0, 0]):.2f}"
    assert ax.figure.axes[-1].get_ylabel() == "probability under the lens"
    assert not small_text(ax.figure)
    wide = plot_lens(masked_lm_lens(tokenizer, mlm, f"The {tokenizer.mask_token} barked.", top_k=8))
    assert wide.figure.get_figwidth() <= 9.0
    with pytest.raises(ValueError, match="LensResult"):
        plot_lens(type("Fake", (), {"top_probs": torch.zeros(3), "top_tokens": []})())
