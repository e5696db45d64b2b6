"""helpers.layerwalk.compute on the real bundled model."""

import pytest
import torch
import torch.nn.functional as F

from helpers.layerwalk.compute import baseline_adjusted, consecutive_cosines, interlayer_similarity, layer_norms, pca_trajectory, random_pair_baseline, token_by_layer


def test_token_by_layer_and_norms(sample_trace):
    L = sample_trace.num_layers
    vecs = token_by_layer(sample_trace, 2)
    assert vecs.shape == (L + 1, sample_trace.hidden_size)
    assert torch.equal(vecs[L], sample_trace.last_hidden_state[2])
    assert torch.allclose(layer_norms(sample_trace, 2), vecs.norm(dim=-1))
    mean = layer_norms(sample_trace)
    assert torch.allclose(mean[0], sample_trace.hidden(0).norm(dim=-1).mean())


def test_consecutive_and_interlayer_agree(sample_trace):
    cons = consecutive_cosines(sample_trace, 1)
    sim = interlayer_similarity(sample_trace, 1)
    L = sample_trace.num_layers
    assert cons.shape == (L,) and sim.shape == (L + 1, L + 1)
    assert torch.allclose(torch.diagonal(sim, 1), cons, atol=1e-5)
    assert torch.allclose(torch.diagonal(sim), torch.ones(L + 1), atol=1e-5)
    expected = F.cosine_similarity(sample_trace.hidden(0)[1], sample_trace.hidden(L)[1], dim=0)
    assert torch.allclose(sim[0, L], expected, atol=1e-5)
    # averaged over tokens: still symmetric
    avg = interlayer_similarity(sample_trace)
    assert torch.allclose(avg, avg.T, atol=1e-6)


def test_random_pair_baseline(data_traces):
    base = random_pair_baseline(data_traces, n_pairs=200, seed=0)
    assert base.shape == (data_traces[0].num_layers + 1,)
    assert torch.equal(base, random_pair_baseline(data_traces, n_pairs=200, seed=0))
    assert not torch.equal(base, random_pair_baseline(data_traces, n_pairs=200, seed=1))
    assert (base.abs() < 1).all()
    with pytest.raises(ValueError, match="at least 2"):
        random_pair_baseline(data_traces[:1])
    with pytest.raises(ValueError, match="n_pairs"):
        random_pair_baseline(data_traces, n_pairs=0)


def test_baseline_adjusted_checks_length():
    assert torch.allclose(baseline_adjusted(torch.ones(3), torch.tensor([0.1, 0.2, 0.3])),
                          torch.tensor([0.9, 0.8, 0.7]))
    with pytest.raises(ValueError, match="layers"):
        baseline_adjusted(torch.ones(3), torch.ones(4))


def test_pca_trajectory(sample_trace):
    coords = pca_trajectory(sample_trace, [0, 2])
    assert coords.shape == (2, sample_trace.num_layers + 1, 2)
    assert coords.std() > 0
    with pytest.raises(ValueError, match="token position"):
        pca_trajectory(sample_trace, [999])
    with pytest.raises(ValueError, match="at least one"):
        pca_trajectory(sample_trace, [])


def test_type_errors():
    with pytest.raises(TypeError, match="Trace"):
        layer_norms("not a trace")
