"""helpers.stack.compute: parameter counts on the model, from the formulas, on the meta device."""

from transformers import BertConfig

from helpers.stack.compute import (
    meta_model_parameter_count,
    meta_pretraining_parameter_count,
    parameter_breakdown,
    parameter_formula,
    pretraining_heads_formula,
)


def test_parameter_counts(model):
    counts = parameter_breakdown(model)
    assert counts == parameter_formula(model.config)
    assert counts["total"] == sum(p.numel() for p in model.parameters())
    assert counts["total"] == counts["embeddings"] + counts["all layers"] + counts["pooler"]


def test_meta_counts_base_large():
    base = BertConfig()
    large = BertConfig(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096)
    for cfg in (base, large):
        assert meta_model_parameter_count(cfg) == parameter_formula(cfg)["total"]
    assert 105e6 < meta_model_parameter_count(base) < 115e6
    assert 330e6 < meta_model_parameter_count(large) < 345e6


def test_update_ratios_over_traces(model, sample_trace, data_traces):
    import pytest
    import torch

    from helpers.stack.compute import update_ratios
    from helpers.stack.rebuild import sublayer_updates_by_hand

    ratios = update_ratios(model, data_traces)
    n = sum(t.seq_len for t in data_traces)
    assert set(ratios) == {"attention", "ffn"}
    assert ratios["attention"].shape == ratios["ffn"].shape == (model.config.num_hidden_layers, n)
    assert (ratios["attention"] > 0).all() and torch.isfinite(ratios["ffn"]).all()
    one = update_ratios(model, sample_trace)  # a single trace works too
    layer = model.config.num_hidden_layers
    with torch.no_grad():  # an independent check of one entry: the update through the model's own modules
        x = sample_trace.hidden(layer - 1)
        module = model.encoder.layer[layer - 1]
        attended = module.attention(x[None])[0][0]
        ffn_update = module.output.dense(module.intermediate(attended))
    assert torch.allclose(one["ffn"][-1], ffn_update.norm(dim=-1) / attended.norm(dim=-1), atol=1e-5)
    assert sublayer_updates_by_hand  # imported for the reader: update_ratios is built on it
    with pytest.raises(ValueError, match="at least one"):
        update_ratios(model, [])


def test_pretraining_heads_counted_on_meta_and_by_formula():
    import torch
    from transformers import BertForPreTraining

    base = BertConfig()
    with torch.device("meta"):
        full = BertForPreTraining(base)
    # independently: the parameters under cls.*, the decoder weight counted once with the word table
    heads = {id(p): p.numel() for name, p in full.named_parameters() if name.startswith("cls.")}
    assert full.cls.predictions.decoder.weight is full.bert.embeddings.word_embeddings.weight
    assert meta_pretraining_parameter_count(base) - meta_model_parameter_count(base) == sum(heads.values())
    for cfg in (base, BertConfig(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096),
                BertConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128)):
        added = meta_pretraining_parameter_count(cfg) - meta_model_parameter_count(cfg)
        assert added == sum(pretraining_heads_formula(cfg).values())
    import pytest

    with pytest.raises(ValueError, match="tie_word_embeddings"):
        pretraining_heads_formula(BertConfig(tie_word_embeddings=False))


def test_ratio_intervals_are_over_sentences(model, data_traces):
    import pytest
    import torch

    from helpers.stack.compute import ratio_intervals, update_ratios

    ratios = update_ratios(model, data_traces)
    intervals = ratio_intervals(ratios, data_traces)
    L = model.config.num_hidden_layers
    assert set(intervals) == {"attention", "ffn"} and all(len(v) == L for v in intervals.values())
    # independently: one sentence at a time, its median per layer, then the mean over sentences
    medians = torch.stack([update_ratios(model, t)["ffn"].median(dim=1).values for t in data_traces])
    for layer, interval in enumerate(intervals["ffn"]):
        assert interval.estimate == pytest.approx(medians[:, layer].mean().item(), rel=1e-5)
        assert interval.low <= interval.estimate <= interval.high and interval.low < interval.high
    from helpers.stack.compute import per_sentence_medians

    per_sentence = per_sentence_medians(ratios, data_traces)
    assert torch.allclose(per_sentence["ffn"], medians, atol=1e-6)  # the unit lesson 03's comparisons resample
    with pytest.raises(ValueError, match="tokens"):
        ratio_intervals(ratios, data_traces[:-1])
    with pytest.raises(ValueError, match="two traces"):
        ratio_intervals(update_ratios(model, data_traces[0]), data_traces[:1])
