"""helpers.context.compute on the real bundled model."""

import pytest
import torch

from helpers.common.data import load_polysemy
from helpers.context.compute import nearest_neighbours, self_similarity, sense_separation, within_across_similarity, word_by_layer
from helpers.model.trace import trace_text


def test_word_by_layer_means_pieces(sample_trace):
    span = sample_trace.find_word("unbelievably")
    assert len(span.positions) > 1
    vec = word_by_layer(sample_trace, "unbelievably")
    assert torch.allclose(vec[3], sample_trace.hidden(3)[span.positions].mean(0))
    with pytest.raises(ValueError, match="not in the input"):
        word_by_layer(sample_trace, "zebra")


def _fake_groups():
    gen = torch.Generator().manual_seed(0)
    a = torch.randn(1, 3, 8, generator=gen)
    b = torch.randn(1, 3, 8, generator=gen)
    noise = lambda: 0.05 * torch.randn(5, 3, 8, generator=gen)  # noqa: E731
    return {"a": a + noise(), "b": b + noise()}


def test_separation_and_similarity_on_clear_groups():
    groups = _fake_groups()
    assert torch.equal(sense_separation(groups), torch.ones(3))
    within, across = within_across_similarity(groups)
    assert (within > across).all() and (within > 0.9).all()
    ss = self_similarity(groups["a"])
    assert ss.shape == (3,) and (ss > 0.9).all() and (ss <= 1 + 1e-6).all()
    with pytest.raises(ValueError, match="two senses"):
        sense_separation({"a": groups["a"]})
    with pytest.raises(ValueError, match="n_contexts"):
        self_similarity(torch.ones(1, 3, 8))


def test_separation_on_real_bank(tokenizer, model):
    senses = load_polysemy()["bank"]
    groups = {s: torch.stack([word_by_layer(trace_text(tokenizer, model, x), "bank") for x in xs])
              for s, xs in senses.items()}
    acc = sense_separation(groups)
    assert acc.shape == (model.config.num_hidden_layers + 1,)
    assert acc[-1] > 0.5  # the last layer of a real model separates river bank from money bank


def test_nearest_neighbours(sample_trace):
    near = nearest_neighbours(sample_trace, 2, sample_trace.num_layers, k=3)
    assert len(near) == 3 and all(pos != 2 for pos, _, _ in near)
    assert near[0][2] >= near[1][2] >= near[2][2]
    assert near[0][1] == sample_trace.tokens[near[0][0]]
    with pytest.raises(ValueError, match="k must be"):
        nearest_neighbours(sample_trace, 2, 1, k=sample_trace.seq_len)
