"""helpers.model.loading on the real bundled checkpoint."""

import pytest
import torch

from helpers.model import loading
from helpers.model.loading import BUNDLED_MODEL, ModelLoadError, load_model, resolve_model_name


def test_bundled_model_is_a_pretrained_bert(loaded):
    model = loaded.model
    cfg = model.config
    assert type(model).__name__ == "BertModel"
    assert cfg._attn_implementation == "eager"
    assert not model.training
    assert len(model.encoder.layer) == cfg.num_hidden_layers
    # Pretrained, not freshly initialised: LayerNorm weights move away from 1.
    gamma = model.embeddings.LayerNorm.weight
    assert not torch.allclose(gamma, torch.ones_like(gamma))


def test_eager_attention_returns_weights(tokenizer, model):
    enc = tokenizer("hello world", return_tensors="pt")
    with torch.no_grad():
        out = model(**enc, output_attentions=True)
    assert len(out.attentions) == model.config.num_hidden_layers


def test_no_name_falls_back_to_bundled_offline(monkeypatch, capsys):
    monkeypatch.delenv(loading.ENV_VAR, raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(loading, "_in_local_cache", lambda repo: False)
    choice = resolve_model_name(None)
    assert choice.name == BUNDLED_MODEL
    assert "HF_HUB_OFFLINE" in choice.reason
    assert load_model(None).choice.name == BUNDLED_MODEL
    assert "Using bundled:all-MiniLM-L6-v2" in capsys.readouterr().out


def test_cached_default_is_preferred(monkeypatch):
    monkeypatch.delenv(loading.ENV_VAR, raising=False)
    monkeypatch.setattr(loading, "_in_local_cache", lambda repo: repo == "bert-base-uncased")
    assert resolve_model_name(None).name == "bert-base-uncased"


def test_hub_probe_respects_offline_and_never_hangs(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert loading._hub_reachable() is False
    monkeypatch.delenv("HF_HUB_OFFLINE")
    # A closed loopback port: refused at once, so the probe answers quickly and says no.
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
    assert loading._hub_reachable(timeout=1.0) is False


def test_env_var_names_the_model(monkeypatch):
    monkeypatch.setenv(loading.ENV_VAR, BUNDLED_MODEL)
    assert resolve_model_name(None).reason.endswith(loading.ENV_VAR)


def test_argument_beats_env_var(monkeypatch):
    monkeypatch.setenv(loading.ENV_VAR, "some/other-model")
    assert resolve_model_name(BUNDLED_MODEL).name == BUNDLED_MODEL


def test_local_folder_loads(loaded):
    folder = loading.bundled_model_path()
    tok, model = load_model(folder, verbose=False)
    assert model.config.hidden_size == loaded.model.config.hidden_size


def test_explicit_unloadable_name_is_a_clear_error_not_a_swap(monkeypatch):
    with pytest.raises(ModelLoadError) as info:
        load_model("no-such-org/no-such-bert-model", verbose=False)
    msg = str(info.value)
    assert "no-such-org/no-such-bert-model" in msg
    assert "Valid names" in msg and "BERT_COURSE_MODEL" in msg


def test_missing_folder_is_a_clear_error(tmp_path):
    with pytest.raises(ModelLoadError, match="does not exist"):
        load_model(str(tmp_path / "nothing-here"), verbose=False)


def test_folder_without_checkpoint_is_a_clear_error(tmp_path):
    (tmp_path / "README.md").write_text("not a model")
    with pytest.raises(ModelLoadError, match="not a loadable checkpoint"):
        load_model(str(tmp_path), verbose=False)


def test_checkpoint_facts_read_the_bundled_files(loaded):
    from helpers.model.loading import checkpoint_facts

    facts = checkpoint_facts(loaded)
    assert facts.weight_file is not None
    assert set(loaded.model.state_dict()) <= set(facts.weight_names)  # the file holds what the model loaded
    assert not facts.has_mlm_head  # all-MiniLM-L6-v2 ships the encoder and pooler only
    assert facts.pooling == ("mean_tokens",)  # sentence-transformers' 1_Pooling/config.json
    assert facts.sentence_max_tokens == 256
    text = "\n".join(facts.lines())
    assert "masked-LM head (cls.predictions.*): no" in text and "mean_tokens" in text


def test_checkpoint_facts_of_a_plain_folder(other_bert_dir):
    from helpers.model.loading import checkpoint_facts, load_model

    facts = checkpoint_facts(load_model(other_bert_dir, verbose=False))
    assert facts.pooling is None and not facts.has_mlm_head
    assert "no sentence-transformers pooling" in "\n".join(facts.lines())


# -- the device, chosen once (COURSE_DEVICE) --------------------------------------------------------


def test_course_device_cpu_loads_there_and_the_message_names_it(monkeypatch, capsys):
    from helpers.model.trace import model_device, trace_text

    monkeypatch.setenv(loading.DEVICE_ENV_VAR, "cpu")
    tok, model = load_model(BUNDLED_MODEL)
    out = capsys.readouterr().out
    assert out.startswith("Using bundled:all-MiniLM-L6-v2 (") and " on cpu -- " in out
    assert model_device(model) == torch.device("cpu")
    trace = trace_text(tok, model, "The bank by the river.")
    assert trace.device == model_device(model) and trace.input_ids.device == model_device(model)


def test_default_device_is_the_cpu(monkeypatch):
    monkeypatch.delenv(loading.DEVICE_ENV_VAR, raising=False)
    assert loading.resolve_device() == torch.device("cpu")
    monkeypatch.setenv(loading.DEVICE_ENV_VAR, "  ")  # set but empty: the default too
    assert loading.resolve_device() == torch.device("cpu")


def test_cache_is_per_checkpoint_and_device(monkeypatch, loaded):
    monkeypatch.delenv(loading.DEVICE_ENV_VAR, raising=False)
    assert load_model(BUNDLED_MODEL, verbose=False) is loaded
    assert load_model(BUNDLED_MODEL, device="cpu", verbose=False) is loaded
    assert (loaded.choice.path, "cpu") in loading._CACHE


@pytest.mark.parametrize("value", ["gpu", "cuda0", "cuda:x", "tpu", "cpu:1"])
def test_invalid_device_is_a_clear_error(monkeypatch, value):
    monkeypatch.setenv(loading.DEVICE_ENV_VAR, value)
    with pytest.raises(ModelLoadError) as info:
        load_model(BUNDLED_MODEL, verbose=False)
    msg = str(info.value)
    assert repr(value) in msg and "$COURSE_DEVICE" in msg and "is not valid" in msg
    assert "'cpu', 'cuda', 'cuda:N'" in msg and "'mps'" in msg


@pytest.mark.parametrize("value", ["cuda", "cuda:0", "CUDA"])
def test_cuda_without_a_gpu_is_a_clear_error_not_a_fallback(monkeypatch, value):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)  # as on this CPU-only machine
    monkeypatch.setenv(loading.DEVICE_ENV_VAR, value)
    with pytest.raises(ModelLoadError) as info:
        load_model(BUNDLED_MODEL, verbose=False)
    msg = str(info.value)
    assert repr(value) in msg and "not available" in msg and "torch.cuda.is_available() is False" in msg
    assert "'cpu'" in msg


def test_cuda_on_this_machine_is_not_available_unless_it_has_a_gpu(monkeypatch):
    monkeypatch.setenv(loading.DEVICE_ENV_VAR, "cuda")
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    with pytest.raises(ModelLoadError, match="not available"):
        load_model(BUNDLED_MODEL, verbose=False)


def test_mps_without_apple_silicon_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    with pytest.raises(ModelLoadError, match=r"'mps' \(from argument device=\) is not available"):
        load_model(BUNDLED_MODEL, device="mps", verbose=False)


def test_device_argument_wins_over_the_env_var(monkeypatch, loaded):
    monkeypatch.setenv(loading.DEVICE_ENV_VAR, "not-a-device")
    assert load_model(BUNDLED_MODEL, device="cpu", verbose=False) is loaded
    with pytest.raises(ModelLoadError, match="from argument device="):
        load_model(BUNDLED_MODEL, device="gpu", verbose=False)


def test_paper_comparison_labels_the_bundled_model_a_different_model(loaded, other_bert_dir):
    from helpers.model.loading import load_model, paper_comparison

    cmp = paper_comparison(loaded)
    cfg = loaded.model.config
    assert not cmp.same and cmp.label == "different model and training objective"
    assert f"{cfg.num_hidden_layers} layers, {cfg.hidden_size} wide" in cmp.about and "mean_tokens" in cmp.about
    line = cmp.caveat("the [CLS] sink")
    assert "different model and training objective" in line and 'MODEL = "bert-base-uncased"' in line
    other = paper_comparison(load_model(other_bert_dir, verbose=False))  # random weights, no sentence pooling
    assert not other.same and "sentence encoder" not in other.about


def test_is_bert_base_reads_the_name_and_the_sizes():
    from transformers import BertConfig

    from helpers.model.loading import PaperComparison, is_bert_base

    base = BertConfig()  # BERT-base's published sizes: 12 layers, 768 wide, 12 heads
    for name in ("bert-base-uncased", "google-bert/bert-base-cased", "/data/models/bert-base-uncased/"):
        assert is_bert_base(name, base), name
    for name in ("textattack/bert-base-uncased-SST-2", "bert-large-uncased", "bundled:all-MiniLM-L6-v2"):
        assert not is_bert_base(name, base), name
    assert not is_bert_base("bert-base-uncased", BertConfig(num_hidden_layers=6))
    same = PaperComparison("bert-base-uncased", True, "")
    assert same.label.startswith("same model family") and "different model" not in same.caveat("x")
