"""helpers.analysis on the real bundled model."""

import pytest
import torch
import torch.nn.functional as F

from helpers import analysis
from helpers.trace import trace_text


@pytest.fixture(scope="module")
def data_traces(tokenizer, model):
    return [trace_text(tokenizer, model, s) for s in analysis.load_sentences()[:4]]


def test_token_by_layer_and_norms(sample_trace):
    L = sample_trace.num_layers
    vecs = analysis.token_by_layer(sample_trace, 2)
    assert vecs.shape == (L + 1, sample_trace.hidden_size)
    assert torch.equal(vecs[L], sample_trace.last_hidden_state[2])
    assert torch.allclose(analysis.layer_norms(sample_trace, 2), vecs.norm(dim=-1))
    mean = analysis.layer_norms(sample_trace)
    assert torch.allclose(mean[0], sample_trace.hidden(0).norm(dim=-1).mean())


def test_consecutive_and_interlayer_agree(sample_trace):
    cons = analysis.consecutive_cosines(sample_trace, 1)
    sim = analysis.interlayer_similarity(sample_trace, 1)
    L = sample_trace.num_layers
    assert cons.shape == (L,) and sim.shape == (L + 1, L + 1)
    assert torch.allclose(torch.diagonal(sim, 1), cons, atol=1e-5)
    assert torch.allclose(torch.diagonal(sim), torch.ones(L + 1), atol=1e-5)
    expected = F.cosine_similarity(sample_trace.hidden(0)[1], sample_trace.hidden(L)[1], dim=0)
    assert torch.allclose(sim[0, L], expected, atol=1e-5)
    # averaged over tokens: still symmetric
    avg = analysis.interlayer_similarity(sample_trace)
    assert torch.allclose(avg, avg.T, atol=1e-6)


def test_random_pair_baseline(data_traces):
    base = analysis.random_pair_baseline(data_traces, n_pairs=200, seed=0)
    assert base.shape == (data_traces[0].num_layers + 1,)
    assert torch.equal(base, analysis.random_pair_baseline(data_traces, n_pairs=200, seed=0))
    assert not torch.equal(base, analysis.random_pair_baseline(data_traces, n_pairs=200, seed=1))
    assert (base.abs() < 1).all()
    with pytest.raises(ValueError, match="at least 2"):
        analysis.random_pair_baseline(data_traces[:1])
    with pytest.raises(ValueError, match="n_pairs"):
        analysis.random_pair_baseline(data_traces, n_pairs=0)


def test_baseline_adjusted_checks_length():
    assert torch.allclose(analysis.baseline_adjusted(torch.ones(3), torch.tensor([0.1, 0.2, 0.3])),
                          torch.tensor([0.9, 0.8, 0.7]))
    with pytest.raises(ValueError, match="layers"):
        analysis.baseline_adjusted(torch.ones(3), torch.ones(4))


def test_pca_trajectory(sample_trace):
    coords = analysis.pca_trajectory(sample_trace, [0, 2])
    assert coords.shape == (2, sample_trace.num_layers + 1, 2)
    assert coords.std() > 0
    with pytest.raises(ValueError, match="token position"):
        analysis.pca_trajectory(sample_trace, [999])
    with pytest.raises(ValueError, match="at least one"):
        analysis.pca_trajectory(sample_trace, [])


def test_token_class():
    assert [analysis.token_class(t) for t in ["[CLS]", "[SEP]", ".", ",", "##.", "bank", "un"]] == [
        "[CLS]", "[SEP]", "punctuation", "punctuation", "punctuation", "other", "other"]


def test_attention_shares_sum_to_one_and_match_hand(sample_trace, data_traces):
    shares = analysis.attention_shares(sample_trace)
    assert shares.shape == (sample_trace.num_layers, 4)
    assert torch.allclose(shares.sum(-1), torch.ones(sample_trace.num_layers), atol=1e-5)
    cls_share = torch.stack([sample_trace.attention(l)[..., 0].mean() for l in range(1, sample_trace.num_layers + 1)])
    assert torch.allclose(shares[:, 0], cls_share, atol=1e-6)
    mean = analysis.mean_attention_shares(data_traces)
    assert torch.allclose(mean, torch.stack([analysis.attention_shares(t) for t in data_traces]).mean(0))


def test_cls_attention_and_entropy(sample_trace):
    cls = analysis.cls_attention(sample_trace)
    assert cls.shape == (sample_trace.num_layers, sample_trace.num_heads, sample_trace.seq_len)
    assert torch.equal(cls[0, 3], sample_trace.attention(1, 3)[0])
    ent = analysis.attention_entropy(sample_trace)
    assert ent.shape == (sample_trace.num_layers, sample_trace.num_heads)
    assert (ent >= -1e-6).all() and (ent <= torch.log(torch.tensor(float(sample_trace.seq_len))) + 1e-5).all()


def test_offset_scores_and_best_head(sample_trace):
    prev = analysis.offset_head_scores(sample_trace, -1)
    a = sample_trace.attention(2, 5)
    assert torch.allclose(prev[1, 5], torch.stack([a[i, i - 1] for i in range(1, sample_trace.seq_len)]).mean())
    nxt = analysis.offset_head_scores(sample_trace, 1)
    assert torch.allclose(nxt[0, 0], torch.stack([sample_trace.attention(1, 0)[i, i + 1]
                                                  for i in range(sample_trace.seq_len - 1)]).mean())
    layer, head, score = analysis.best_head(prev)
    assert score == pytest.approx(float(prev.max())) and prev[layer - 1, head] == prev.max()
    with pytest.raises(ValueError, match="non-zero"):
        analysis.offset_head_scores(sample_trace, 0)
    with pytest.raises(ValueError, match="too large"):
        analysis.offset_head_scores(sample_trace, sample_trace.seq_len)
    with pytest.raises(ValueError, match="layers, heads"):
        analysis.best_head(torch.ones(3))


def test_word_by_layer_means_pieces(sample_trace):
    span = sample_trace.find_word("unbelievably")
    assert len(span.positions) > 1
    vec = analysis.word_by_layer(sample_trace, "unbelievably")
    assert torch.allclose(vec[3], sample_trace.hidden(3)[span.positions].mean(0))
    with pytest.raises(ValueError, match="not in the input"):
        analysis.word_by_layer(sample_trace, "zebra")


def test_is_unknown(tokenizer):
    assert not analysis.is_unknown(tokenizer, "bank")
    assert analysis.is_unknown(tokenizer, "\U0001F600")  # an emoji is not in the uncased WordPiece vocab


def test_polysemy_data_shape():
    data = analysis.load_polysemy()
    assert len(data) >= 3
    for word, senses in data.items():
        assert len(senses) >= 2
        for sense, sentences in senses.items():
            assert len(sentences) >= 5, (word, sense)
            for s in sentences:
                assert word in s.lower().replace(".", " ").split(), (word, s)


def _fake_groups():
    gen = torch.Generator().manual_seed(0)
    a = torch.randn(1, 3, 8, generator=gen)
    b = torch.randn(1, 3, 8, generator=gen)
    noise = lambda: 0.05 * torch.randn(5, 3, 8, generator=gen)  # noqa: E731
    return {"a": a + noise(), "b": b + noise()}


def test_separation_and_similarity_on_clear_groups():
    groups = _fake_groups()
    assert torch.equal(analysis.sense_separation(groups), torch.ones(3))
    within, across = analysis.within_across_similarity(groups)
    assert (within > across).all() and (within > 0.9).all()
    ss = analysis.self_similarity(groups["a"])
    assert ss.shape == (3,) and (ss > 0.9).all() and (ss <= 1 + 1e-6).all()
    with pytest.raises(ValueError, match="two senses"):
        analysis.sense_separation({"a": groups["a"]})
    with pytest.raises(ValueError, match="n_contexts"):
        analysis.self_similarity(torch.ones(1, 3, 8))


def test_separation_on_real_bank(tokenizer, model):
    senses = analysis.load_polysemy()["bank"]
    groups = {s: torch.stack([analysis.word_by_layer(trace_text(tokenizer, model, x), "bank") for x in xs])
              for s, xs in senses.items()}
    acc = analysis.sense_separation(groups)
    assert acc.shape == (model.config.num_hidden_layers + 1,)
    assert acc[-1] > 0.5  # the last layer of a real model separates river bank from money bank


def test_nearest_neighbours(sample_trace):
    near = analysis.nearest_neighbours(sample_trace, 2, sample_trace.num_layers, k=3)
    assert len(near) == 3 and all(pos != 2 for pos, _, _ in near)
    assert near[0][2] >= near[1][2] >= near[2][2]
    assert near[0][1] == sample_trace.tokens[near[0][0]]
    with pytest.raises(ValueError, match="k must be"):
        analysis.nearest_neighbours(sample_trace, 2, 1, k=sample_trace.seq_len)


def test_type_errors():
    with pytest.raises(TypeError, match="Trace"):
        analysis.layer_norms("not a trace")


def test_longest_word(sample_trace, tokenizer):
    assert analysis.longest_word(sample_trace, tokenizer) == "unbelievably"
