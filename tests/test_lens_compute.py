"""helpers.lens.compute: the masked-LM head check on the real bundled checkpoint, and the lens
code path on a small randomly initialised BertForMaskedLM saved locally (its predictions are
meaningless and only test the mechanics)."""

import json

import pytest
import torch

from helpers.lens.compute import (
    HEAD_KEYS, apply_head, checkpoint_keys, load_masked_lm, mask_one_word, masked_lm_lens,
)
from helpers.model.loading import bundled_model_path


@pytest.fixture(scope="module")
def random_mlm_dir(tmp_path_factory, tokenizer):
    """A 2-layer, 32-wide BertForMaskedLM with random weights, saved with the bundled tokenizer."""
    from transformers import BertConfig, BertForMaskedLM

    torch.manual_seed(0)
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=64)
    folder = tmp_path_factory.mktemp("random_mlm")
    BertForMaskedLM(config).eval().save_pretrained(folder, safe_serialization=True)
    tokenizer.save_pretrained(folder)
    return folder


def test_the_bundled_checkpoint_has_no_head_and_gets_no_lens():
    mlm, check = load_masked_lm(bundled_model_path())
    assert mlm is None and not check.present
    assert set(check.missing) == set(HEAD_KEYS)
    assert check.stored_keys == ()  # its safetensors file stores no cls.predictions tensor at all
    assert "no trained masked-LM head" in check.message
    _, named = load_masked_lm(bundled_model_path(), name="bundled:all-MiniLM-L6-v2")
    assert named.message.startswith("bundled:all-MiniLM-L6-v2 has no trained masked-LM head")
    assert bundled_model_path() not in named.message, "the lesson shows the model's name, not a local folder"


def test_a_checkpoint_with_a_head_is_recognised(random_mlm_dir):
    mlm, check = load_masked_lm(str(random_mlm_dir))
    assert check.present and not check.missing and mlm is not None
    assert set(HEAD_KEYS) <= set(check.stored_keys)
    assert checkpoint_keys("bert-base-uncased") is None  # not a local folder


def test_a_checkpoint_missing_part_of_the_head_is_refused(random_mlm_dir, tmp_path):
    from safetensors.torch import load_file, save_file

    for f in random_mlm_dir.iterdir():
        (tmp_path / f.name).write_bytes(f.read_bytes())
    tensors = load_file(str(random_mlm_dir / "model.safetensors"))
    kept = {k: v for k, v in tensors.items() if not k.startswith("cls.predictions.transform.dense")}
    save_file(kept, str(tmp_path / "model.safetensors"), metadata={"format": "pt"})
    mlm, check = load_masked_lm(str(tmp_path))
    assert mlm is None and set(check.missing) == {"cls.predictions.transform.dense.weight",
                                                  "cls.predictions.transform.dense.bias"}
    assert "2 of the 5" in check.message


def test_the_head_by_hand_equals_the_models_logits_at_the_last_layer(random_mlm_dir, tokenizer):
    mlm, _ = load_masked_lm(str(random_mlm_dir))
    text = f"The cat sat on the {tokenizer.mask_token} all afternoon."
    lens = masked_lm_lens(tokenizer, mlm, text, target="mat", top_k=4)
    L = mlm.config.num_hidden_layers
    assert lens.logits.shape == (L + 1, mlm.config.vocab_size) and lens.top_probs.shape == (L + 1, 4)
    assert lens.tokens[lens.mask_position] == tokenizer.mask_token
    assert torch.allclose(lens.logits[-1], lens.model_logits, atol=1e-4)
    with torch.no_grad():
        h = torch.randn(3, mlm.config.hidden_size)
        assert torch.allclose(apply_head(mlm, h), mlm.cls(h), atol=1e-5)
    assert torch.all(lens.top_probs[:, :-1] >= lens.top_probs[:, 1:])
    probs = lens.logits.softmax(-1)
    t = tokenizer.convert_tokens_to_ids("mat")
    assert torch.allclose(lens.target_probs, probs[:, t])
    assert torch.equal(lens.target_ranks, (probs > probs[:, t:t + 1]).sum(-1) + 1)
    assert lens.top_tokens[0][0] == tokenizer.convert_ids_to_tokens(int(probs[0].argmax()))


def test_mask_one_word_and_inputs_past_the_maximum_length(random_mlm_dir, tokenizer):
    mlm, _ = load_masked_lm(str(random_mlm_dir))
    masked, word = mask_one_word(tokenizer, mlm, "She will book a table at the new place near the river.")
    assert masked.count(tokenizer.mask_token) == 1 and word == "table"  # 4+ letters, one piece, nearest the middle
    assert masked.replace(tokenizer.mask_token, word) == "She will book a table at the new place near the river."
    long = " ".join(["the old river runs past the mill"] * 40)  # far past 64 positions
    masked, word = mask_one_word(tokenizer, mlm, long)
    assert masked.index(tokenizer.mask_token) < len(long) // 4  # the word lies in the part the model reads
    with pytest.warns(UserWarning, match="truncated"):
        lens = masked_lm_lens(tokenizer, mlm, masked, target=word)
    assert len(lens.tokens) == mlm.config.max_position_embeddings


def test_bad_inputs_get_clear_errors(random_mlm_dir, tokenizer):
    mlm, _ = load_masked_lm(str(random_mlm_dir))
    with pytest.raises(ValueError, match="must contain"):
        masked_lm_lens(tokenizer, mlm, "No mask in this sentence.")
    with pytest.raises(ValueError, match="top_k"):
        masked_lm_lens(tokenizer, mlm, f"A {tokenizer.mask_token}.", top_k=0)
    with pytest.raises(ValueError, match="name_or_path"):
        load_masked_lm("")
    with pytest.raises(ValueError, match="non-empty"):
        mask_one_word(tokenizer, mlm, "  ")


def test_a_sharded_checkpoint_lists_its_keys(tmp_path):
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps({"weight_map": {"b": "x", "a": "y"}}))
    assert checkpoint_keys(tmp_path) == ["a", "b"]


def test_course_mini_lens_runs_on_the_shipped_checkpoint_with_a_trained_head():
    """course-mini (data/course_mini/) is always there offline: its lens reads every layer, the last
    layer's row is the model's own prediction, and the message names the model from its files."""
    from helpers.lens.compute import course_mini_lens
    from helpers.model.paths import COURSE_MINI_DIR

    config = json.loads((COURSE_MINI_DIR / "config.json").read_text())
    text = "And God said, Let there be light: and there was light."
    result = course_mini_lens(text)
    assert result.lens is not None and "course-mini" in result.message and result.word in result.message
    assert result.lens.logits.shape == (config["num_hidden_layers"] + 1, config["vocab_size"])
    assert torch.allclose(result.lens.logits[-1], result.lens.model_logits, atol=1e-4)
    assert result.masked.count("[MASK]") == 1 and result.masked.replace("[MASK]", result.word) == text
