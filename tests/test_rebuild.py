"""helpers.rebuild against the real bundled model (and a model of another size)."""

import pytest
import torch
from transformers import BertConfig, BertModel

from helpers import rebuild as R
from helpers.trace import trace_text


def test_embeddings_by_hand_matches(model, sample_trace):
    with torch.no_grad():
        out = R.embeddings_by_hand(model, sample_trace.input_ids, sample_trace.token_type_ids)
    assert torch.allclose(out, sample_trace.hidden(0), atol=1e-5)


def test_embeddings_pair_and_batch(model, tokenizer):
    pair = trace_text(tokenizer, model, "The bank was quiet.", "It rained.")
    with torch.no_grad():
        batched = R.embeddings_by_hand(model, pair.input_ids[None], pair.token_type_ids[None])
        typeless = R.embeddings_by_hand(model, pair.input_ids)
    assert batched.shape == (1, pair.seq_len, model.config.hidden_size)
    assert torch.allclose(batched[0], pair.hidden(0), atol=1e-5)
    assert not torch.allclose(typeless, pair.hidden(0), atol=1e-3)  # token types matter


def test_embeddings_bad_input(model):
    with pytest.raises(TypeError, match="input_ids"):
        R.embeddings_by_hand(model, [1, 2, 3])
    with pytest.raises(ValueError, match="outside"):
        R.embeddings_by_hand(model, torch.tensor([model.config.vocab_size]))
    with pytest.raises(TypeError, match="BertModel"):
        R.embeddings_by_hand(torch.nn.Linear(2, 2), torch.tensor([1]))


def test_layer_norm_by_hand(model):
    x = torch.randn(3, model.config.hidden_size)
    ln = model.embeddings.LayerNorm
    with torch.no_grad():
        assert torch.allclose(R.layer_norm_by_hand(x, ln), ln(x), atol=1e-5)


def test_self_attention_every_layer(model, sample_trace):
    with torch.no_grad():
        for l in range(1, sample_trace.num_layers + 1):
            _, probs = R.self_attention_by_hand(model.encoder.layer[l - 1], sample_trace.hidden(l - 1))
            assert torch.allclose(probs, sample_trace.attention(l), atol=1e-5)
            assert torch.allclose(probs.sum(-1), torch.ones_like(probs.sum(-1)), atol=1e-5)


def test_mask_on_padded_batch(model, tokenizer):
    batch = tokenizer(["The bank by the river was quiet.", "Hi."], padding=True, return_tensors="pt")
    with torch.no_grad():
        out = model(**batch, output_attentions=True, output_hidden_states=True)
        _, probs = R.self_attention_by_hand(model.encoder.layer[0], out.hidden_states[0], batch["attention_mask"])
        states = R.encoder_by_hand(model, out.hidden_states[0], batch["attention_mask"])
    assert torch.allclose(probs, out.attentions[0], atol=1e-5)
    pads = batch["attention_mask"][1] == 0
    assert pads.any() and probs[1][..., pads].max() < 1e-6
    real = batch["attention_mask"].bool()
    assert torch.allclose(states[-1][real], out.last_hidden_state[real], atol=1e-4)


def test_extended_mask_values():
    m = R.extended_attention_mask(torch.tensor([[1, 1, 0]]))
    assert m.shape == (1, 1, 1, 3)
    assert m[0, 0, 0, 0] == 0 and m[0, 0, 0, 2] == torch.finfo(torch.float32).min
    with pytest.raises(ValueError, match="only 0"):
        R.extended_attention_mask(torch.tensor([[1, 2]]))


def test_split_merge_roundtrip():
    x = torch.randn(2, 5, 12)
    assert R.split_heads(x, 3).shape == (2, 3, 5, 4)
    assert torch.equal(R.merge_heads(R.split_heads(x, 3)), x)
    with pytest.raises(ValueError, match="divisible"):
        R.split_heads(x, 5)


def test_layer_and_encoder_by_hand(model, sample_trace):
    with torch.no_grad():
        for l in range(1, sample_trace.num_layers + 1):
            out, _ = R.layer_by_hand(model.encoder.layer[l - 1], sample_trace.hidden(l - 1))
            assert torch.allclose(out, sample_trace.hidden(l), atol=1e-5)
        states = R.encoder_by_hand(model, R.embeddings_by_hand(model, sample_trace.input_ids))
    assert len(states) == sample_trace.num_layers + 1
    assert torch.allclose(states[-1], sample_trace.last_hidden_state, atol=1e-4)


def test_other_size_model(other_bert_dir, tokenizer):
    model = BertModel.from_pretrained(other_bert_dir, attn_implementation="eager").eval()
    trace = trace_text(tokenizer, model, "A lighthouse near Reykjavik.")
    with torch.no_grad():
        states = R.encoder_by_hand(model, R.embeddings_by_hand(model, trace.input_ids))
    assert torch.allclose(states[-1], trace.last_hidden_state, atol=1e-4)
    assert R.parameter_breakdown(model) == R.parameter_formula(model.config)


def test_layer_module_type_checked(model, sample_trace):
    with pytest.raises(TypeError, match="BertLayer"):
        R.self_attention_by_hand(model.encoder, sample_trace.hidden(0))
    with pytest.raises(ValueError, match="shape"):
        R.self_attention_by_hand(model.encoder.layer[0], torch.zeros(3, 7))


def test_gelu_and_activation():
    x = torch.linspace(-4, 4, 101)
    assert torch.allclose(R.gelu_by_hand(x), torch.nn.functional.gelu(x), atol=1e-6)
    assert R.activation_by_hand(BertConfig()) is R.gelu_by_hand
    with pytest.raises(ValueError, match="hidden_act"):
        R.activation_by_hand(BertConfig(hidden_act="swish"))


def test_parameter_counts(model):
    counts = R.parameter_breakdown(model)
    assert counts == R.parameter_formula(model.config)
    assert counts["total"] == sum(p.numel() for p in model.parameters())
    assert counts["total"] == counts["embeddings"] + counts["all layers"] + counts["pooler"]


def test_meta_counts_base_large():
    base = BertConfig()
    large = BertConfig(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096)
    for cfg in (base, large):
        assert R.meta_model_parameter_count(cfg) == R.parameter_formula(cfg)["total"]
    assert 105e6 < R.meta_model_parameter_count(base) < 115e6
    assert 330e6 < R.meta_model_parameter_count(large) < 345e6


def test_static_word_vector(model, tokenizer):
    vec, pieces = R.static_word_vector(model, tokenizer, "bank")
    assert pieces == ["bank"]
    assert torch.equal(vec, model.embeddings.word_embeddings.weight[tokenizer.convert_tokens_to_ids("bank")].detach())
    vec, pieces = R.static_word_vector(model, tokenizer, "unbelievably")
    assert len(pieces) > 1 and vec.shape == (model.config.hidden_size,)
    vec, pieces = R.static_word_vector(model, tokenizer, "🦜")
    assert vec is None and tokenizer.unk_token in pieces
    with pytest.raises(ValueError):
        R.static_word_vector(model, tokenizer, "  ")
