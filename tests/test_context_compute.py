"""helpers.context.compute on the real bundled model."""

import pytest
import torch
import torch.nn.functional as F

from helpers.common.data import load_polysemy
from helpers.context.compute import (
    centroid_similarity, nearest_neighbours, self_similarity, sense_separation, sense_separation_outcomes,
    within_across_gap, within_across_similarity, word_by_layer,
)
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
    assert torch.allclose(within_across_gap(groups), within - across)
    ss = self_similarity(groups["a"])
    assert ss.shape == (3,) and (ss > 0.9).all() and (ss <= 1 + 1e-6).all()
    with pytest.raises(ValueError, match="two senses"):
        sense_separation({"a": groups["a"]})
    with pytest.raises(ValueError, match="n_contexts"):
        self_similarity(torch.ones(1, 3, 8))


def test_outcomes_are_the_leave_one_out_rule():
    groups = _fake_groups()
    groups["b"][2] = groups["a"][0]  # one sentence of b sits on a's cluster: it must be misclassified
    outcomes = sense_separation_outcomes(groups)
    assert outcomes.shape == (10, 3) and outcomes.dtype == torch.bool
    assert not outcomes[5 + 2].any() and outcomes[:5].all()
    assert torch.allclose(sense_separation(groups), outcomes.float().mean(0))


def test_centroid_similarity():
    groups = _fake_groups()
    near_a = centroid_similarity(groups["a"][0], groups)
    assert set(near_a) == {"a", "b"} and (near_a["a"] > near_a["b"]).all()
    assert torch.allclose(near_a["b"], F.cosine_similarity(groups["a"][0], groups["b"].mean(0), dim=-1))
    with pytest.raises(ValueError, match="layers, hidden"):
        centroid_similarity(torch.ones(2, 8), groups)


def test_separation_on_real_bank(tokenizer, model):
    senses = load_polysemy()["bank"]
    groups = {s: torch.stack([word_by_layer(trace_text(tokenizer, model, x), "bank") for x in xs])
              for s, xs in senses.items()}
    acc = sense_separation(groups)
    assert acc.shape == (model.config.num_hidden_layers + 1,)
    assert acc[-1] > 0.5  # the last layer of a real model separates river bank from money bank


def test_more_polysemy_data_is_well_formed(tokenizer):
    data = load_polysemy("polysemy_more.json")
    assert len(data) >= 6
    for word, senses in data.items():
        assert len(senses) == 2 and len(tokenizer.tokenize(word)) == 1
        for sentences in senses.values():
            assert len(sentences) >= 5
            for s in sentences:
                assert [w.strip(".,;!?").lower() for w in s.split()].count(word) == 1, s


def test_nearest_neighbours(sample_trace):
    near = nearest_neighbours(sample_trace, 2, sample_trace.num_layers, k=3)
    assert len(near) == 3 and all(pos != 2 for pos, _, _ in near)
    assert near[0][2] >= near[1][2] >= near[2][2]
    assert near[0][1] == sample_trace.tokens[near[0][0]]
    with pytest.raises(ValueError, match="k must be"):
        nearest_neighbours(sample_trace, 2, 1, k=sample_trace.seq_len)
