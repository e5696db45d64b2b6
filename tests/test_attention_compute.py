"""helpers.attention.compute on the real bundled model."""

import pytest
import torch

from helpers.attention.compute import attention_entropy, attention_shares, best_head, cls_attention, mean_attention_shares, offset_head_scores, token_class


def test_token_class():
    assert [token_class(t) for t in ["[CLS]", "[SEP]", ".", ",", "##.", "bank", "un"]] == [
        "[CLS]", "[SEP]", "punctuation", "punctuation", "punctuation", "other", "other"]


def test_attention_shares_sum_to_one_and_match_hand(sample_trace, data_traces):
    shares = attention_shares(sample_trace)
    assert shares.shape == (sample_trace.num_layers, 4)
    assert torch.allclose(shares.sum(-1), torch.ones(sample_trace.num_layers), atol=1e-5)
    cls_share = torch.stack([sample_trace.attention(l)[..., 0].mean() for l in range(1, sample_trace.num_layers + 1)])
    assert torch.allclose(shares[:, 0], cls_share, atol=1e-6)
    mean = mean_attention_shares(data_traces)
    assert torch.allclose(mean, torch.stack([attention_shares(t) for t in data_traces]).mean(0))


def test_cls_attention_and_entropy(sample_trace):
    cls = cls_attention(sample_trace)
    assert cls.shape == (sample_trace.num_layers, sample_trace.num_heads, sample_trace.seq_len)
    assert torch.equal(cls[0, 3], sample_trace.attention(1, 3)[0])
    ent = attention_entropy(sample_trace)
    assert ent.shape == (sample_trace.num_layers, sample_trace.num_heads)
    assert (ent >= -1e-6).all() and (ent <= torch.log(torch.tensor(float(sample_trace.seq_len))) + 1e-5).all()


def test_offset_scores_and_best_head(sample_trace):
    prev = offset_head_scores(sample_trace, -1)
    a = sample_trace.attention(2, 5)
    assert torch.allclose(prev[1, 5], torch.stack([a[i, i - 1] for i in range(1, sample_trace.seq_len)]).mean())
    nxt = offset_head_scores(sample_trace, 1)
    assert torch.allclose(nxt[0, 0], torch.stack([sample_trace.attention(1, 0)[i, i + 1]
                                                  for i in range(sample_trace.seq_len - 1)]).mean())
    layer, head, score = best_head(prev)
    assert score == pytest.approx(float(prev.max())) and prev[layer - 1, head] == prev.max()
    with pytest.raises(ValueError, match="non-zero"):
        offset_head_scores(sample_trace, 0)
    with pytest.raises(ValueError, match="too large"):
        offset_head_scores(sample_trace, sample_trace.seq_len)
    with pytest.raises(ValueError, match="layers, heads"):
        best_head(torch.ones(3))
