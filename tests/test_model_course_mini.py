"""MODEL = "course-mini": the committed BERT-mini of data/course_mini/ (helpers/mini/),
loaded for real: its fingerprint against the model card, its masked-LM head by hand, and its
fill-mask accuracy on a held-out slice against the position-and-segment null."""

import hashlib
import json
import re

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from helpers.model.loading import ModelLoadError, load_model
from helpers.model.paths import COURSE_MINI, COURSE_MINI_DIR
from helpers.mini.compute import (EVALUATION, WEIGHT_BUDGET_MIB, WEIGHTS, PositionSegmentUnigram,
                                  load_pretraining_model, model_topk)
from helpers.mini.data import held_out, load_tokenizer, splits
from helpers.pretrain.data import encode_documents


@pytest.fixture(scope="module")
def card():
    return json.loads((COURSE_MINI_DIR / EVALUATION).read_text()), (COURSE_MINI_DIR / "README.md").read_text()


@pytest.fixture(scope="module")
def mini():
    return load_tokenizer(), load_pretraining_model()


def test_load_model_names_course_mini_and_matches_the_cards_fingerprint(card, capsys):
    evaluation, readme = card
    loaded = load_model(COURSE_MINI)
    line = capsys.readouterr().out
    assert line.startswith(f"Using {COURSE_MINI} (") and "asked for by argument" in line and line.count("\n") == 1
    cfg = loaded.model.config
    assert type(loaded.model).__name__ == "BertModel" and cfg._attn_implementation == "eager"
    assert next(loaded.model.parameters()).dtype == torch.float32  # fp16 on disk, float32 in memory
    sizes = {k: getattr(cfg, k) for k in evaluation["config"]}
    assert sizes == evaluation["config"]
    sha = hashlib.sha256((COURSE_MINI_DIR / WEIGHTS).read_bytes()).hexdigest()
    assert sha == evaluation["weights_sha256"]
    assert re.search(rf"`{sha}`", readme), "the model card does not quote the weights' sha256"
    sizes_line = (f"{cfg.num_hidden_layers} layers, hidden {cfg.hidden_size}, {cfg.num_attention_heads} heads, "
                  f"feed-forward {cfg.intermediate_size}")
    assert sizes_line in readme, f"the card does not state the config's sizes ({sizes_line})"
    assert f"{cfg.vocab_size:,} lower-cased WordPieces" in readme
    # no zero-width interval: a rate every resample gives the same is printed as its count
    assert not re.search(r"\[([+-]?[\d.]+), \1\]", readme), "the card prints a zero-width interval"
    assert loaded.tokenizer("The KING")["input_ids"] == loaded.tokenizer("the king")["input_ids"]  # uncased
    assert (COURSE_MINI_DIR / WEIGHTS).stat().st_size / 2 ** 20 <= WEIGHT_BUDGET_MIB  # the card's budget


def test_masked_lm_head_by_hand_equals_the_model(mini):
    tok, model = mini
    cfg = model.config
    enc = tok(f"And God said, Let there be {tok.mask_token}: and there was light.", return_tensors="pt")  # cpu: the model is on the CPU
    with torch.no_grad():
        out = model(**enc, output_hidden_states=True)
        h = out.hidden_states[-1]  # [1, T, H]: the last layer
        head = model.cls.predictions
        z = F.linear(h, head.transform.dense.weight, head.transform.dense.bias)
        z = F.gelu(z)  # BERT's "gelu": the exact (erf) form
        z = F.layer_norm(z, (cfg.hidden_size,), head.transform.LayerNorm.weight, head.transform.LayerNorm.bias,
                         cfg.layer_norm_eps)
        embeddings = model.bert.embeddings.word_embeddings.weight
        logits = z @ embeddings.T + head.bias
    assert out.prediction_logits.shape == (1, enc["input_ids"].shape[1], cfg.vocab_size)
    assert head.decoder.weight.data_ptr() == embeddings.data_ptr()  # the decoder is tied to the embeddings
    assert torch.allclose(logits, out.prediction_logits, atol=1e-4, rtol=1e-4)
    where = int((enc["input_ids"][0] == tok.mask_token_id).nonzero()[0])
    assert tok.convert_ids_to_tokens(int(logits[0, where].argmax())) != tok.mask_token


def test_held_out_slice_beats_the_position_and_segment_null(mini, card):
    """32 seeded pairs of the test documents: the model's top-1 beats null (a) of the card (its table
    was fitted on training pairs by `evaluate`) on the same positions."""
    tok, model = mini
    evaluation, _ = card
    _, _, test = splits()
    ho = held_out(tok, encode_documents(tok, test), 32, seed=7)
    top, _ = model_topk(model, ho)
    null = PositionSegmentUnigram(np.array(evaluation["position_segment_top"]), evaluation["position_bucket"])
    model_top1 = (top[:, 0] == ho.answer).mean()
    null_top1 = (null.topk(ho.position, ho.segment)[:, 0] == ho.answer).mean()
    assert len(ho) > 200 and model_top1 > null_top1 + 0.1, (model_top1, null_top1)


def test_a_missing_file_is_a_clear_error(monkeypatch, tmp_path):
    from helpers.model import loading, paths

    monkeypatch.setattr(paths, "COURSE_MINI_DIR", tmp_path)
    monkeypatch.setattr(loading, "COURSE_MINI_DIR", tmp_path)
    monkeypatch.setattr(loading, "course_mini_path", lambda: None)
    with pytest.raises(ModelLoadError, match="course_mini"):
        load_model(COURSE_MINI)
    with pytest.raises(ValueError, match="n_pairs"):
        held_out(None, [], 1)


def test_the_card_is_honest_about_pairs_next_sentence_and_period(card):
    """Issue 42: the card names the pair pool and how often each pair was reused, judges the
    next-sentence head against the same-book guesser (on the same test pairs), and calls the text
    Early Modern English."""
    evaluation, readme = card
    run = json.loads((COURSE_MINI_DIR / "run.json").read_text())
    reuse = run["steps_done"] * run["config"]["batch_size"] / run["pool_pairs"]
    assert f"fixed pool of {run['pool_pairs']:,} pairs" in readme and f"about {reuse:.1f} times" in readme
    assert "different pairs and masks each time" not in readme
    same_book = evaluation["nsp_same_book"]
    assert 0.5 < same_book["estimate"] < evaluation["nsp_accuracy"]["estimate"]
    assert f"{100 * same_book['estimate']:.1f} %" in readme and "same book" in readme
    diff = evaluation["nsp_minus_same_book"]
    assert abs(diff["estimate"] - (evaluation["nsp_accuracy"]["estimate"] - same_book["estimate"])) < 1e-9
    assert "Early Modern English" in readme and "Old English" not in readme


def test_the_same_book_guesser_reads_the_sources_of_both_segments():
    """By hand on a few documents: IS_NEXT exactly when both segments' documents share a book."""
    from helpers.mini.compute import same_book_guess
    from helpers.pretrain.data import IS_NEXT, NOT_NEXT, Document

    docs = [Document("kjv", ("a b", "c")), Document("shakespeare", ("d", "e")), Document("kjv", ("f",)),
            Document("kjv", ("g h", "i"))]
    encoded = [[[1, 2], [3]], [[4], [5]], [[6]], [[7, 8], [9]]]  # document 2 has one sentence: not drawn from
    guess = same_book_guess(docs, encoded, np.array([0, 0, 1, 2]), np.array([2, 1, 0, 2]))
    # kept documents: 0 (kjv), 1 (shakespeare), 3 (kjv) -> indices 0, 1, 2
    assert guess.tolist() == [IS_NEXT, NOT_NEXT, NOT_NEXT, IS_NEXT]
