"""helpers.embeddings.rebuild against the real bundled model."""

import pytest
import torch

from helpers.embeddings.rebuild import embedding_parts, embeddings_by_hand, layer_norm_by_hand, static_word_vector
from helpers.model.trace import trace_text


def test_embeddings_by_hand_matches(model, sample_trace):
    with torch.no_grad():
        out = embeddings_by_hand(model, sample_trace.input_ids, sample_trace.token_type_ids)
    assert torch.allclose(out, sample_trace.hidden(0), atol=1e-5)


def test_embeddings_pair_and_batch(model, tokenizer):
    pair = trace_text(tokenizer, model, "The bank was quiet.", "It rained.")
    with torch.no_grad():
        batched = embeddings_by_hand(model, pair.input_ids[None], pair.token_type_ids[None])
        typeless = embeddings_by_hand(model, pair.input_ids)
    assert batched.shape == (1, pair.seq_len, model.config.hidden_size)
    assert torch.allclose(batched[0], pair.hidden(0), atol=1e-5)
    assert not torch.allclose(typeless, pair.hidden(0), atol=1e-3)  # token types matter


def test_embeddings_bad_input(model):
    with pytest.raises(TypeError, match="input_ids"):
        embeddings_by_hand(model, [1, 2, 3])
    with pytest.raises(ValueError, match="outside"):
        embeddings_by_hand(model, torch.tensor([model.config.vocab_size]))
    with pytest.raises(TypeError, match="BertModel"):
        embeddings_by_hand(torch.nn.Linear(2, 2), torch.tensor([1]))


def test_layer_norm_by_hand(model):
    x = torch.randn(3, model.config.hidden_size)
    ln = model.embeddings.LayerNorm
    with torch.no_grad():
        assert torch.allclose(layer_norm_by_hand(x, ln), ln(x), atol=1e-5)


def test_static_word_vector(model, tokenizer):
    vec, pieces = static_word_vector(model, tokenizer, "bank")
    assert pieces == ["bank"]
    assert torch.equal(vec, model.embeddings.word_embeddings.weight[tokenizer.convert_tokens_to_ids("bank")].detach())
    vec, pieces = static_word_vector(model, tokenizer, "unbelievably")
    assert len(pieces) > 1 and vec.shape == (model.config.hidden_size,)
    vec, pieces = static_word_vector(model, tokenizer, "🦜")
    assert vec is None and tokenizer.unk_token in pieces
    with pytest.raises(ValueError):
        static_word_vector(model, tokenizer, "  ")


def test_embedding_parts_add_up_to_the_model(model, tokenizer):
    pair = trace_text(tokenizer, model, "The bank was quiet.", "It rained.")
    parts = embedding_parts(model, pair.input_ids, pair.token_type_ids)
    emb = model.embeddings
    assert torch.equal(parts["word"], emb.word_embeddings.weight[pair.input_ids].detach())
    assert torch.equal(parts["token_type"][-1], emb.token_type_embeddings.weight[1].detach())  # segment B
    assert torch.allclose(parts["sum"], parts["word"] + parts["position"] + parts["token_type"])
    assert torch.allclose(parts["layernorm"], pair.hidden(0), atol=1e-5)
    with pytest.raises(ValueError, match="one input"):
        embedding_parts(model, pair.input_ids[None])
