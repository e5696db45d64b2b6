import os

# The test run never touches the network.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("MPLBACKEND", "Agg")

import pytest  # noqa: E402

from helpers import BUNDLED_MODEL, load_model, trace_text  # noqa: E402


@pytest.fixture(scope="session")
def loaded():
    """The real bundled checkpoint (all-MiniLM-L6-v2), loaded once per test session."""
    return load_model(BUNDLED_MODEL, verbose=False)


@pytest.fixture(scope="session")
def tokenizer(loaded):
    return loaded.tokenizer


@pytest.fixture(scope="session")
def model(loaded):
    return loaded.model


@pytest.fixture(scope="session")
def sample_trace(tokenizer, model):
    return trace_text(tokenizer, model, "The bank by the river was unbelievably quiet.")


@pytest.fixture(scope="session")
def other_bert_dir(tmp_path_factory, tokenizer):
    """A BERT of another depth, width and head count, saved as a local checkpoint folder.

    Its weights are randomly initialised (no other pretrained BERT is reachable here); it
    exists to prove that nothing in helpers/ or lessons/ assumes the bundled model's sizes.
    """
    import torch
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=64,
        num_hidden_layers=3,
        num_attention_heads=4,
        intermediate_size=128,
        max_position_embeddings=128,
    )
    folder = tmp_path_factory.mktemp("other_bert")
    BertModel(config).eval().save_pretrained(folder, safe_serialization=True)
    tokenizer.save_pretrained(folder)
    return str(folder)
