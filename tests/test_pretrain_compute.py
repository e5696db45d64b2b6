"""helpers/pretrain/compute.py: a few real training steps on the real corpus, the cache, course-tiny."""

import json
import math

import numpy as np
import pytest
import torch
from transformers import BertForPreTraining

from helpers.lens.compute import load_masked_lm, masked_lm_lens
from helpers.model.loading import ModelLoadError, load_model
from helpers.pretrain.compute import (PretrainConfig, accuracy_vs_baseline, checkpoint_steps, evaluate,
                                      heldout_batch, layers_vs_baseline, lens_correct, losses, new_model, pretrain,
                                      running_mean, unigram_counts)
from helpers.pretrain.data import IGNORE, corpus_hash, encode_documents, load_corpus, split_documents, train_wordpiece

CFG = PretrainConfig(layers=2, hidden=32, heads=2, intermediate=64, vocab_size=600, max_length=48, batch_size=8,
                     steps=12, lr=2e-3, max_documents=40)


@pytest.fixture(scope="module")
def setup():
    train, test = split_documents(load_corpus(max_documents=CFG.max_documents), 0.1, seed=0)
    tok = train_wordpiece(train, CFG.vocab_size, CFG.max_length)
    enc, enc_test = encode_documents(tok, train), encode_documents(tok, test)
    run = pretrain(CFG, tok, enc, corpus_hash(), progress=False)
    return tok, enc, enc_test, run


def test_config_checks_and_fingerprint():
    with pytest.raises(ValueError, match="multiple of heads"):
        PretrainConfig(hidden=30, heads=4)
    with pytest.raises(ValueError, match="steps"):
        PretrainConfig(steps=0)
    assert CFG.fingerprint("a") != CFG.fingerprint("b") != PretrainConfig(seed=1).fingerprint("b")
    assert checkpoint_steps(100) == [0, 25, 50, 100] and checkpoint_steps(2) == [0, 1, 2]


def test_untrained_losses_sit_at_chance(setup):
    tok, _, enc_test, _ = setup
    model = new_model(CFG, tok).eval()
    batch = heldout_batch(tok, enc_test, 64, CFG.max_length)
    with torch.no_grad():
        mlm, nsp = losses(model, batch, batch["inputs"], batch["labels"])
        ref = model(input_ids=batch["inputs"], token_type_ids=batch["token_type_ids"],
                    attention_mask=batch["attention_mask"], labels=batch["labels"],
                    next_sentence_label=batch["next_sentence_label"])
    assert abs(float(mlm) - math.log(len(tok))) < 0.3 and abs(float(nsp) - math.log(2)) < 0.2
    assert torch.allclose(mlm + nsp, ref.loss, atol=1e-5)  # the gathered head = transformers' own loss
    assert (batch["inputs"][batch["labels"] != IGNORE] == tok.mask_token_id).all()


def test_training_lowers_the_loss_saves_checkpoints_and_caches(setup):
    tok, enc, _, run = setup
    assert len(run.mlm_loss) == CFG.steps and sorted(run.checkpoints) == [0, 3, 6, 12]
    assert run.mlm_loss[-4:].mean() < run.mlm_loss[:4].mean()
    m0, m12 = run.load(0), run.load(12)
    assert isinstance(m12, BertForPreTraining) and m12.config.num_hidden_layers == 2
    assert not torch.equal(m0.bert.embeddings.word_embeddings.weight, m12.bert.embeddings.word_embeddings.weight)
    again = pretrain(CFG, tok, enc, corpus_hash(), progress=False)
    assert again.cached and np.array_equal(again.mlm_loss, run.mlm_loss)
    assert json.loads((run.folder / "run.json").read_text())["fingerprint"] == run.fingerprint


def test_evaluation_against_the_unigram_baseline(setup):
    tok, enc, enc_test, run = setup
    counts = unigram_counts(enc, len(tok))
    batch = heldout_batch(tok, enc_test, 64, CFG.max_length)
    ev = evaluate(run.load(12), batch, counts, 12)
    n = int((batch["labels"] != IGNORE).sum())
    assert len(ev.top1) == len(ev.pair) == n and (ev.top1 <= ev.top5).all()
    scored = batch["labels"][batch["labels"] != IGNORE]
    assert ev.base_top1.mean() == pytest.approx(float((scored == counts.argmax()).float().mean()))
    m, b, d = accuracy_vs_baseline(ev, 5)
    assert m.low <= m.estimate <= m.high and d.estimate == pytest.approx(m.estimate - b.estimate)
    lens = lens_correct(run.load(12), batch)
    assert lens.shape == (n, CFG.layers + 1)
    assert np.array_equal(lens[:, -1], ev.top1)  # the lens at the last layer is the model's own prediction
    assert np.array_equal(lens, ev.lens)
    with torch.no_grad():  # evaluate's head on the encoder = BertForPreTraining's own prediction
        full = run.load(12)(input_ids=batch["inputs"], token_type_ids=batch["token_type_ids"],
                            attention_mask=batch["attention_mask"]).prediction_logits
    assert np.array_equal(full[batch["labels"] != IGNORE].argmax(-1).numpy() == scored.numpy(), ev.top1)
    verdicts = layers_vs_baseline(lens, ev.base_top1, ev.pair)
    assert len(verdicts) == CFG.layers + 1
    assert verdicts[-1].difference.estimate == pytest.approx(ev.top1.mean() - ev.base_top1.mean())
    same = layers_vs_baseline(np.stack([ev.base_top1] * 2, 1), ev.base_top1, ev.pair)
    assert all(v.kind == "inconclusive" for v in same)  # the baseline against itself differs nowhere


def test_course_tiny_loads_and_has_a_trained_head(setup):
    tok, _, _, run = setup
    loaded = load_model("course-tiny", verbose=False)
    assert loaded.model.config.num_hidden_layers == CFG.layers and "course-tiny" in loaded.choice.name
    mlm, head = load_masked_lm(loaded.model.name_or_path, name="course-tiny")
    assert head.present and mlm is not None
    lens = masked_lm_lens(loaded.tokenizer, mlm, "and god said, let there be [MASK].", target="light")
    assert lens.logits.shape[0] == CFG.layers + 1
    assert torch.allclose(lens.logits[-1], lens.model_logits, atol=1e-4)


def test_course_tiny_missing_names_the_lesson(monkeypatch, tmp_path):
    monkeypatch.setenv("COURSE_CACHE", str(tmp_path))
    with pytest.raises(ModelLoadError, match="05_pretrain_a_tiny_bert"):
        load_model("course-tiny")


def test_running_mean():
    assert np.allclose(running_mean([1, 2, 3, 4], 2), [1, 1.5, 2.5, 3.5])


def test_course_tiny_lens_for_lessons_01_and_10(setup, monkeypatch, tmp_path):
    from helpers.lens.compute import course_tiny_lens

    tiny = course_tiny_lens("And God said, Let there be light: and there was light.")
    assert tiny.lens is not None and tiny.masked.count("[MASK]") == 1
    assert f"{CFG.steps} pre-training steps" in tiny.message and "not BERT-base" in tiny.message
    assert torch.allclose(tiny.lens.logits[-1], tiny.lens.model_logits, atol=1e-4)
    monkeypatch.setenv("COURSE_CACHE", str(tmp_path))
    empty = course_tiny_lens("And God said, Let there be light.")
    assert empty.lens is None and "05_pretrain_a_tiny_bert" in empty.message


def test_chosen_checkpoints_are_saved_and_checked(setup, tmp_path, monkeypatch):
    tok, enc, _, _ = setup
    monkeypatch.setenv("COURSE_CACHE", str(tmp_path))
    cfg = PretrainConfig(**{**CFG.__dict__, "steps": 5})
    run = pretrain(cfg, tok, enc, corpus_hash(), progress=False, register=False, checkpoints=(0, 2))
    assert sorted(run.checkpoints) == [0, 2, 5]  # the last step is always kept
    with pytest.raises(ValueError, match="checkpoints must lie in 0..5"):
        pretrain(PretrainConfig(**{**CFG.__dict__, "steps": 5, "seed": 9}), tok, enc, corpus_hash(), progress=False,
                 register=False, checkpoints=(7,))


def test_fastest_threads_times_one_thread_and_the_default(setup):
    from helpers.pretrain.compute import fastest_threads

    tok, enc, _, _ = setup
    before = torch.get_num_threads()
    try:
        threads, seconds = fastest_threads(CFG, tok, enc, n=2)
        assert threads in {1, before} and torch.get_num_threads() == threads and 0 < seconds < 5
    finally:
        torch.set_num_threads(before)


def test_compare_plainly_words_the_courses_verdict_without_its_vocabulary():
    from helpers.common.claims import STATISTICS_TERMS
    from helpers.pretrain.compute import compare_plainly

    rng = np.random.default_rng(0)
    docs = np.repeat(np.arange(40), 25)
    good = (rng.random(1000) < 0.6).astype(float)
    bad = (rng.random(1000) < 0.2).astype(float)
    up = compare_plainly(good, bad, docs, a="model", b="guesser", family=3)
    assert up.kind == "higher" and "above guesser" in up.text and "3 comparisons" in up.text
    assert compare_plainly(bad, good, docs, a="model", b="guesser").kind == "lower"
    same = compare_plainly(good, good.copy(), docs, a="model", b="guesser")
    assert same.kind == "not shown" and "+0.0 points" in same.text
    for c in (up, same):
        assert not [t for t in STATISTICS_TERMS if t.lower() in c.text.lower()]


def test_the_lesson_recipe_is_berts_optimiser_on_short_pairs():
    from helpers.pretrain.compute import lesson_recipe

    r = lesson_recipe()
    assert (r.layers, r.hidden, r.heads, r.max_length, r.batch_size, r.steps) == (2, 128, 2, 16, 96, 3000)
    assert (r.warmup, r.dropout, r.weight_decay) == (0.1, 0.1, 0.01)
    assert lesson_recipe(steps=10).steps == 10 and lesson_recipe(seed=3).seed == 3


def test_real_scale_reads_the_real_models_sizes_from_a_config():
    """Lesson 05's "real scale" (issue 48): BERT-base for an English run, bert-base-chinese (BERT-base's
    sizes, a 21,128-entry vocabulary) for a Chinese one, parameters counted from the config's model;
    the Chinese compute line says it assumes BERT-base's schedule."""
    from types import SimpleNamespace

    from transformers import BertConfig

    from helpers.pretrain.compute import BERT_BASE_POSITIONS, real_scale_lines

    cfg = SimpleNamespace(layers=2, hidden=64, vocab_size=2000)
    en, zh = real_scale_lines("en", cfg, 10 ** 6, 10 ** 7), real_scale_lines("zh", cfg, 10 ** 6, 10 ** 7)
    base = BertConfig()
    assert en[0].startswith(f"BERT-base: {base.num_hidden_layers} layers x {base.hidden_size}, "
                            f"{base.num_attention_heads} heads, vocabulary {base.vocab_size:,}, 109 M parameters")
    # the Chinese vocabulary is 30,522 - 21,128 = 9,394 rows of 768 smaller: 7.2 M parameters fewer
    assert zh[0].startswith("bert-base-chinese: 12 layers x 768, 12 heads, vocabulary 21,128, 102 M parameters")
    assert "assumed for bert-base-chinese" in zh[1] and "assumed" not in en[1]
    assert f"{BERT_BASE_POSITIONS / 10 ** 7:,.0f} x fewer" in en[1]
    assert zh[2].startswith("training compute, roughly: ") and zh[2].endswith(" x less than bert-base-chinese")
