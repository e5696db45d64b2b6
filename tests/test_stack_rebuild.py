"""helpers.stack.rebuild against the real bundled model (and a model of another size)."""

import pytest
import torch
from transformers import BertConfig, BertModel

from helpers.attention.rebuild import self_attention_by_hand
from helpers.embeddings.rebuild import embeddings_by_hand
from helpers.model.trace import trace_text
from helpers.stack.compute import parameter_breakdown, parameter_formula
from helpers.stack.rebuild import activation_by_hand, encoder_by_hand, gelu_by_hand, layer_by_hand


def test_layer_and_encoder_by_hand(model, sample_trace):
    with torch.no_grad():
        for l in range(1, sample_trace.num_layers + 1):
            out, _ = layer_by_hand(model.encoder.layer[l - 1], sample_trace.hidden(l - 1))
            assert torch.allclose(out, sample_trace.hidden(l), atol=1e-5)
        states = encoder_by_hand(model, embeddings_by_hand(model, sample_trace.input_ids))
    assert len(states) == sample_trace.num_layers + 1
    assert torch.allclose(states[-1], sample_trace.last_hidden_state, atol=1e-4)


def test_other_size_model(other_bert_dir, tokenizer):
    model = BertModel.from_pretrained(other_bert_dir, attn_implementation="eager").eval()
    trace = trace_text(tokenizer, model, "A lighthouse near Reykjavik.")
    with torch.no_grad():
        states = encoder_by_hand(model, embeddings_by_hand(model, trace.input_ids))
    assert torch.allclose(states[-1], trace.last_hidden_state, atol=1e-4)
    assert parameter_breakdown(model) == parameter_formula(model.config)


def test_layer_module_type_checked(model, sample_trace):
    with pytest.raises(TypeError, match="BertLayer"):
        self_attention_by_hand(model.encoder, sample_trace.hidden(0))
    with pytest.raises(ValueError, match="shape"):
        self_attention_by_hand(model.encoder.layer[0], torch.zeros(3, 7))


def test_gelu_and_activation():
    x = torch.linspace(-4, 4, 101)
    assert torch.allclose(gelu_by_hand(x), torch.nn.functional.gelu(x), atol=1e-6)
    assert activation_by_hand(BertConfig()) is gelu_by_hand
    with pytest.raises(ValueError, match="hidden_act"):
        activation_by_hand(BertConfig(hidden_act="swish"))


def test_sublayer_updates_rebuild_the_layer(model, sample_trace):
    from helpers.stack.rebuild import sublayer_updates_by_hand

    layer = model.encoder.layer[0]
    x = sample_trace.hidden(0)
    with torch.no_grad():
        parts = sublayer_updates_by_hand(layer, x)
        attended = layer.attention(x[None])[0][0]  # the model's own BertAttention (self-attention + output)
    assert torch.allclose(parts["attended"], attended, atol=1e-5)
    assert torch.allclose(parts["output"], sample_trace.hidden(1), atol=1e-5)
    assert torch.allclose(layer.attention.output.LayerNorm(x + parts["attention_update"]), attended, atol=1e-5)
