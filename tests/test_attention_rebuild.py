"""helpers.attention.rebuild against the real bundled model."""

import pytest
import torch

from helpers.attention.rebuild import extended_attention_mask, merge_heads, self_attention_by_hand, split_heads
from helpers.stack.rebuild import encoder_by_hand


def test_self_attention_every_layer(model, sample_trace):
    with torch.no_grad():
        for l in range(1, sample_trace.num_layers + 1):
            _, probs = self_attention_by_hand(model.encoder.layer[l - 1], sample_trace.hidden(l - 1))
            assert torch.allclose(probs, sample_trace.attention(l), atol=1e-5)
            assert torch.allclose(probs.sum(-1), torch.ones_like(probs.sum(-1)), atol=1e-5)


def test_mask_on_padded_batch(model, tokenizer):
    batch = tokenizer(["The bank by the river was quiet.", "Hi."], padding=True, return_tensors="pt")
    with torch.no_grad():
        out = model(**batch, output_attentions=True, output_hidden_states=True)
        _, probs = self_attention_by_hand(model.encoder.layer[0], out.hidden_states[0], batch["attention_mask"])
        states = encoder_by_hand(model, out.hidden_states[0], batch["attention_mask"])
    assert torch.allclose(probs, out.attentions[0], atol=1e-5)
    pads = batch["attention_mask"][1] == 0
    assert pads.any() and probs[1][..., pads].max() < 1e-6
    real = batch["attention_mask"].bool()
    assert torch.allclose(states[-1][real], out.last_hidden_state[real], atol=1e-4)


def test_extended_mask_values():
    m = extended_attention_mask(torch.tensor([[1, 1, 0]]))
    assert m.shape == (1, 1, 1, 3)
    assert m[0, 0, 0, 0] == 0 and m[0, 0, 0, 2] == torch.finfo(torch.float32).min
    with pytest.raises(ValueError, match="only 0"):
        extended_attention_mask(torch.tensor([[1, 2]]))


def test_split_merge_roundtrip():
    x = torch.randn(2, 5, 12)
    assert split_heads(x, 3).shape == (2, 3, 5, 4)
    assert torch.equal(merge_heads(split_heads(x, 3)), x)
    with pytest.raises(ValueError, match="divisible"):
        split_heads(x, 5)
