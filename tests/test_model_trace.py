"""helpers.model.trace on the real bundled checkpoint, bad inputs included."""

import pytest
import torch

from helpers.model.trace import trace_text
from zh_support import zh_loaded, zh_model, zh_tokenizer  # noqa: F401 - fixtures


def test_trace_keeps_everything(sample_trace, model):
    t, cfg = sample_trace, model.config
    assert len(t.hidden_states) == cfg.num_hidden_layers + 1
    assert len(t.attentions) == cfg.num_hidden_layers
    assert t.hidden(0).shape == (t.seq_len, cfg.hidden_size)
    assert t.attention(1).shape == (cfg.num_attention_heads, t.seq_len, t.seq_len)
    assert t.pooler_output.shape == (cfg.hidden_size,)
    assert t.tokens[0] == "[CLS]" and t.tokens[-1] == "[SEP]"
    assert len(t.word_ids) == len(t.tokens) == len(t.input_ids) == len(t.token_type_ids)


def test_trace_matches_a_plain_forward_pass(sample_trace, tokenizer, model):
    enc = tokenizer(sample_trace.text, return_tensors="pt")
    with torch.no_grad():
        out = model(**enc)
    assert torch.allclose(sample_trace.last_hidden_state, out.last_hidden_state[0], atol=1e-5)
    assert torch.allclose(sample_trace.pooler_output, out.pooler_output[0], atol=1e-5)


def test_attention_rows_sum_to_one(sample_trace):
    for layer in range(1, sample_trace.num_layers + 1):
        rows = sample_trace.attention(layer).sum(-1)
        assert torch.allclose(rows, torch.ones_like(rows), atol=1e-5)


@pytest.mark.parametrize("layer", [-1, "last", 1.0, True])
def test_bad_layer_type_or_range(sample_trace, layer):
    with pytest.raises(ValueError, match="valid layers are 0 \\(embeddings\\) to"):
        sample_trace.hidden(layer)


def test_layer_beyond_depth_names_the_range(sample_trace):
    L = sample_trace.num_layers
    with pytest.raises(ValueError, match=f"valid layers are 0 \\(embeddings\\) to {L}"):
        sample_trace.hidden(L + 1)


def test_attention_has_no_layer_zero(sample_trace):
    with pytest.raises(ValueError, match="valid layers are 1 to"):
        sample_trace.attention(0)


def test_head_out_of_range(sample_trace):
    A = sample_trace.num_heads
    with pytest.raises(ValueError, match=f"valid heads are 0 to {A - 1}"):
        sample_trace.attention(1, A)


def test_token_out_of_range_lists_tokens(sample_trace):
    with pytest.raises(ValueError, match=r"0:\[CLS\]"):
        sample_trace.vector(0, sample_trace.seq_len)


def test_unknown_word_lists_the_words(sample_trace):
    with pytest.raises(ValueError, match="not in the input.*'river'"):
        sample_trace.find_word("giraffe")


def test_multi_piece_word_is_found(sample_trace, tokenizer):
    span = sample_trace.find_word("Unbelievably")
    assert span.pieces == tokenizer.tokenize("unbelievably")
    assert len(span.pieces) > 1
    assert [sample_trace.tokens[p] for p in span.positions] == span.pieces
    assert span.pieces[1].startswith("##")


def test_word_positions_differ_from_split_index(tokenizer, model):
    # "text.split().index(word) + 1" ignores subwords and punctuation.
    text = "Unbelievably, the bank was quiet."
    t = trace_text(tokenizer, model, text)
    naive = text.split().index("bank") + 1
    assert t.find_word("bank").first != naive
    assert t.tokens[t.find_word("bank").first] == "bank"


def test_repeated_word_occurrences(tokenizer, model):
    t = trace_text(tokenizer, model, "the cat saw the dog")
    assert t.find_word("the", 1).first > t.find_word("the", 0).first
    with pytest.raises(ValueError, match="occurs 2 time"):
        t.find_word("the", 2)


def test_sentence_pair_has_token_types_and_words(tokenizer, model):
    t = trace_text(tokenizer, model, "Where is the bank?", "It is by the river.")
    assert set(t.token_type_ids.tolist()) == {0, 1}
    assert t.tokens.count("[SEP]") == 2
    assert t.token_type_ids[t.find_word("river").first] == 1
    assert "river" in t.words() and "Where" in t.words()


@pytest.mark.parametrize("text", ["", "   ", "\n"])
def test_empty_text_is_a_clear_error(tokenizer, model, text):
    with pytest.raises(ValueError, match="text is empty"):
        trace_text(tokenizer, model, text)


@pytest.mark.parametrize("text", [None, 42, ["a", "list"]])
def test_non_string_text_is_a_clear_error(tokenizer, model, text):
    with pytest.raises(TypeError, match="text must be a string"):
        trace_text(tokenizer, model, text)


def test_long_text_is_truncated_with_a_warning(tokenizer, model):
    limit = model.config.max_position_embeddings
    text = "word " * (limit + 50)
    with pytest.warns(UserWarning, match=r"truncated, \d+ token\(s\) dropped"):
        t = trace_text(tokenizer, model, text)
    assert t.seq_len == limit
    assert t.n_truncated == (limit + 50 + 2) - limit


def test_a_chinese_word_of_several_characters_is_found_as_its_character_span(zh_tokenizer, zh_model):
    """m3e-small (like bert-base-chinese) cuts every CJK character out as a word and a token, so a
    two-character word (意思) is found as the run of characters that spells it, in either segment
    and at every occurrence; a run across the two segments, or not in the text, is not found."""
    t = trace_text(zh_tokenizer, zh_model, "这句话是什么意思？", "我不明白他的意思。")
    first, second = t.find_word("意思"), t.find_word("意思", 1)
    assert first.pieces == second.pieces == ["意", "思"] and len(first.positions) == 2
    assert first.positions[1] == first.positions[0] + 1 and second.first > first.first
    assert t.token_type_ids[first.first] == 0 and t.token_type_ids[second.first] == 1
    assert t.tokens[t.find_word("明白").first] == "明"
    for absent in ("思我", "明天"):
        with pytest.raises(ValueError, match="not in the input"):
            t.find_word(absent)
    with pytest.raises(ValueError, match="occurs 2 time"):
        t.find_word("意思", 2)


def test_english_words_are_never_found_as_runs_of_pieces(tokenizer, model):
    """The character-span search is for one-character words only: a part of an English word, two
    words, or a word with its comma stay unknown, as before."""
    t = trace_text(tokenizer, model, "The banker went to the bank, unbelievably.")
    for absent in ("ban", "banker went", "bank,", "unbeliev"):
        with pytest.raises(ValueError, match="not in the input"):
            t.find_word(absent)


def test_char_span_is_where_each_token_sits_in_its_text(tokenizer, model):
    trace = trace_text(tokenizer, model, "Unreceived card?", "Yes & no")
    assert trace.char_span(0) is None and trace.char_span(trace.seq_len - 1) is None  # [CLS], [SEP]
    for p, token in enumerate(trace.tokens):
        if token in ("[CLS]", "[SEP]"):
            continue
        source = trace.text if trace.sequence_ids[p] == 0 else trace.text_pair
        start, end = trace.char_span(p)
        assert source[start:end].lower() == token.removeprefix("##")
    with pytest.raises(ValueError, match="out of range"):
        trace.char_span(trace.seq_len)
