"""Checkers for lesson 01 (tokens and the embedding lookup)."""

from __future__ import annotations

import torch

from helpers.exercises import (NO_ANSWER, Feedback, as_index, as_number, check_prediction, check_shape,
                               check_type, correct, prediction_note, wrong)
from helpers.embeddings.rebuild import embeddings_by_hand, layer_norm_by_hand, static_word_vector


def check_exercise_1(answer, trace, word: str) -> Feedback:
    """Exercise 1: the position of the first WordPiece token of ``word`` in ``trace``."""
    answer, bad = as_index(answer, "The position")
    if bad is not None:
        return bad
    span = trace.find_word(word)
    if answer == span.first:
        return correct(f"{word!r} starts at token {span.first} ({trace.tokens[span.first]!r}).")
    if answer == span.first - 1:
        return wrong(
            f"{answer} is one too small: it would be the position if there were no [CLS] token.",
            "Position 0 holds [CLS]; let trace.find_word count for you.",
        )
    words = trace.text.split()
    naive = [i + 1 for i, w in enumerate(words) if w.lower() == word.lower()]
    if naive and answer == naive[0]:
        return wrong(
            f"{answer} is the `text.split().index(word) + 1` position, which counts words, not WordPiece tokens.",
            "Words before it may have been split into several tokens (##pieces) or punctuation tokens; use trace.find_word(word).first.",
        )
    return wrong(
        f"token {answer} is {trace.tokens[answer]!r}" if 0 <= answer < trace.seq_len else f"{answer} is not a valid position",
        f"Print list(enumerate(trace.tokens)) and look for the pieces {span.pieces}.",
    )


def check_exercise_2(answer, model, tokenizer, word_a: str, word_b: str) -> Feedback:
    """Exercise 2: cosine similarity of the static (input) embeddings of two words."""
    va, pieces_a = static_word_vector(model, tokenizer, word_a)
    vb, pieces_b = static_word_vector(model, tokenizer, word_b)
    if va is None or vb is None:
        if answer is None:
            return correct("one of the words is [UNK] in this vocabulary, so there is no similarity to compute.")
        return wrong("one of the words is [UNK] in this vocabulary.", f"The pieces are {pieces_a} and {pieces_b}; return None.")
    if answer is None:
        return NO_ANSWER
    value, bad = as_number(answer, "The similarity")
    if bad is not None:
        return bad
    ref = torch.nn.functional.cosine_similarity(va, vb, dim=0).item()
    if abs(value - ref) < 1e-4:
        return correct(f"cosine({word_a!r}, {word_b!r}) = {ref:.3f} in the input embedding matrix.")
    dot = float(va @ vb)
    if abs(value - dot) < 1e-3 * max(1.0, abs(dot)):
        return wrong("that is the plain dot product.", "Divide by both vectors' lengths (or use torch.nn.functional.cosine_similarity).")
    return wrong(
        f"{value:.4f} is not the cosine similarity of the two rows of word_embeddings.weight.",
        f"Look the rows up with tokenizer.convert_tokens_to_ids; {word_a!r} is {pieces_a}, {word_b!r} is {pieces_b}: average the rows of a split word.",
    )


def unbiased_layer_norm(x: torch.Tensor, layer_norm) -> torch.Tensor:
    """The common slip in a LayerNorm rebuild: ``x.var()`` divides by H - 1, LayerNorm by H."""
    mu = x.mean(dim=-1, keepdim=True)
    var = x.var(dim=-1, keepdim=True)  # unbiased: the slip
    return layer_norm.weight * (x - mu) / torch.sqrt(var + layer_norm.eps) + layer_norm.bias


def check_exercise_3(answer, model, trace) -> Feedback:
    """Exercise 3: hidden_states[0] of a sentence pair rebuilt from the three embedding tables."""
    if answer is None:
        return NO_ANSWER
    if (bad := check_type(answer, torch.Tensor, "Your embeddings")) is not None:
        return bad
    if (bad := check_shape(answer, tuple(trace.hidden(0).shape), "Your embeddings")) is not None:
        return bad
    answer = answer.detach()
    if torch.allclose(answer, trace.hidden(0), atol=1e-5):
        return correct("your sum + LayerNorm equals the model's hidden_states[0].")
    with torch.no_grad():
        if torch.allclose(answer, embeddings_by_hand(model, trace.input_ids), atol=1e-5):
            return wrong(
                "that is the embedding of the pair with every token typed as sentence A.",
                "Use trace.token_type_ids: the second sentence's tokens have type 1.",
            )
        emb = model.embeddings
        raw = (emb.word_embeddings.weight[trace.input_ids] + emb.position_embeddings.weight[: trace.seq_len]
               + emb.token_type_embeddings.weight[trace.token_type_ids])
        if torch.allclose(answer, raw, atol=1e-5):
            return wrong("that is the sum before normalisation.", "Apply model.embeddings.LayerNorm (or layer_norm_by_hand) to the sum.")
        if torch.allclose(answer, layer_norm_by_hand(raw - emb.position_embeddings.weight[: trace.seq_len], emb.LayerNorm), atol=1e-5):
            return wrong("the position embeddings are missing.", "Add position_embeddings.weight[:seq_len] to the sum.")
        if torch.allclose(answer, unbiased_layer_norm(raw, emb.LayerNorm), atol=1e-5):
            return wrong("your LayerNorm divides the variance by H - 1 (torch's default unbiased variance).",
                         "LayerNorm's variance divides by H: var(dim=-1, unbiased=False).")
    return wrong("your tensor differs from hidden_states[0].", "word + position + token-type rows, then LayerNorm; dropout does nothing in eval mode.")


def check_exercise_4(answer, prediction, trace, first: int, second: int) -> Feedback:
    """Exercise 4 (predict, then measure): the cosine between the ``hidden(0)`` rows at
    positions ``first`` and ``second``, two occurrences of one word."""
    if (bad := check_prediction(prediction, ("same", "different"))) is not None:
        return bad
    if answer is None:
        return NO_ANSWER
    answer, bad = as_number(answer, "The answer", "torch.nn.functional.cosine_similarity(u, v, dim=0).item().")
    if bad is not None:
        return bad
    first, _ = as_index(first)
    second, _ = as_index(second)

    def cosine(layer):
        rows = trace.hidden(layer)
        return torch.nn.functional.cosine_similarity(rows[first], rows[second], dim=0).item()

    ref = cosine(0)
    if abs(answer - ref) < 1e-4:
        actual = "same" if ref > 1 - 1e-5 else "different"
        return correct(f"cosine {ref:.4f}: the word rows are identical, but each occurrence adds the "
                       f"position row of its own position before the LayerNorm. "
                       f"{prediction_note(prediction, actual)}")
    if abs(answer - 1.0) < 1e-4:
        return wrong("1.0 is what the two word-table rows give: they are one row.",
                     "Compare trace.hidden(0) rows, which add position (and token-type) rows.")
    if any(abs(answer - cosine(layer)) < 1e-4 for layer in range(1, trace.num_layers + 1)):
        return wrong("that compares the rows after an encoder layer.",
                     "The question is about hidden(0), the embedding output.")
    return wrong(f"{answer:.4f} is not the cosine of the two hidden(0) rows.",
                 "Rows first.first and second.first of trace.hidden(0), then cosine_similarity(..., dim=0).")
