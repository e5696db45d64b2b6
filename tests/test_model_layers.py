"""helpers/model/layers.py on the real bundled model: running the encoder from a layer on gives the
model's own hidden states, head gates change only what they gate and go away on exit, and bad
layers and heads get the course's messages."""

import pytest
import torch

from helpers.model.layers import (additive_mask, check_head, check_layer, continue_from, gated_heads, model_sizes,
                                  run_layer)

TEXTS = ["The bank raised its rates.", "She sat by the river bank and watched the water for a while."]


@pytest.fixture(scope="module")
def states(tokenizer, model):
    enc = tokenizer(TEXTS, padding=True, return_tensors="pt")
    with torch.no_grad():
        out = model(**enc, output_hidden_states=True)
    return enc, out.hidden_states


def test_sizes_and_checks(model, sample_trace):
    L, A = model_sizes(model)
    assert (L, A) == (model.config.num_hidden_layers, model.config.num_attention_heads)
    assert check_layer(model, L) == L and check_layer(model, 0, allow_embeddings=True) == 0
    with pytest.raises(ValueError) as ours:
        check_layer(model, 0)
    with pytest.raises(ValueError) as traces:
        sample_trace.check_layer(0, allow_embeddings=False)
    assert str(ours.value) == str(traces.value)
    with pytest.raises(ValueError, match=f"valid heads are 0 to {A - 1}"):
        check_head(model, A)
    with pytest.raises(ValueError, match="out of range"):
        check_head(model, True)


def test_continue_from_any_layer_reproduces_the_model(model, states):
    enc, hidden = states
    real = enc["attention_mask"].bool()
    with torch.no_grad():
        for after in (0, 3, model.config.num_hidden_layers):
            again = continue_from(model, hidden[after], enc["attention_mask"], after)
            assert torch.allclose(again[real], hidden[-1][real], atol=1e-4), after
        one = run_layer(model.encoder.layer[0], hidden[0], additive_mask(enc["attention_mask"]))
    assert torch.allclose(one[real], hidden[1][real], atol=1e-4)
    mask = additive_mask(torch.tensor([[1, 1, 0]]))
    assert mask.shape == (1, 1, 1, 3) and mask[0, 0, 0, 0] == 0 and mask[0, 0, 0, 2] == torch.finfo(torch.float32).min


def test_gates_remove_only_what_they_gate_and_go_away(model, states):
    enc, hidden = states
    L, A = model_sizes(model)
    real = enc["attention_mask"].bool()
    gate = torch.ones(A)
    gate[2] = 0.0
    with torch.no_grad():
        with gated_heads(model, {L: torch.ones(A)}):
            kept = continue_from(model, hidden[0], enc["attention_mask"], 0)
        with gated_heads(model, {L: gate}):
            removed = continue_from(model, hidden[0], enc["attention_mask"], 0)
        after = continue_from(model, hidden[0], enc["attention_mask"], 0)
        zero_fill = continue_from(model, hidden[0], enc["attention_mask"], 0, gates={L: gate},
                                  fill={L: torch.zeros(model.config.hidden_size)})
    assert torch.allclose(kept[real], hidden[-1][real], atol=1e-4)
    assert not torch.allclose(removed[real], hidden[-1][real], atol=1e-3)
    assert torch.allclose(zero_fill, removed, atol=1e-6), "a fill of zeros is zero ablation"
    assert torch.allclose(after[real], hidden[-1][real], atol=1e-4), "the hooks go away on exit"
    with pytest.raises(ValueError, match=rf"must be \[{A}\] or \[batch, {A}\]"):
        with gated_heads(model, {1: torch.ones(A + 1)}):
            pass
