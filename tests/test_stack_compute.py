"""helpers.stack.compute: parameter counts on the model, from the formulas, on the meta device."""

from transformers import BertConfig

from helpers.stack.compute import meta_model_parameter_count, parameter_breakdown, parameter_formula


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
