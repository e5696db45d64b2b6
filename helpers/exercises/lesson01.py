"""Checkers for lesson 01 (tokens and the embedding lookup)."""

from __future__ import annotations

import torch

from helpers.exercises import (NO_ANSWER, Feedback, as_index, as_number, check_prediction, check_shape,
                               check_type, correct, prediction_note, wrong)
from helpers.embeddings.rebuild import static_word_vector


def nearest_rows(model, tokenizer, word: str, k: int = 5) -> list[str]:
    """The ``k`` vocabulary entries whose rows of the word-embedding table are closest (cosine) to
    ``word``'s own row, the word itself and the special tokens left out."""
    table = model.embeddings.word_embeddings.weight.detach()
    wid = tokenizer.convert_tokens_to_ids(word)
    sims = torch.nn.functional.cosine_similarity(table, table[wid][None], dim=-1)
    sims[[wid, *tokenizer.all_special_ids]] = -2.0
    return tokenizer.convert_ids_to_tokens(sims.topk(k).indices.tolist())


def check_exercise_1(answer, model, tokenizer, word: str = "bank") -> Feedback:
    """Exercise 1 (build it yourself): the five vocabulary entries whose static rows are closest to
    ``word``'s, by cosine, most similar first, the word itself and special tokens left out."""
    if answer is None:
        return NO_ANSWER
    if tokenizer.convert_tokens_to_ids(word) == tokenizer.unk_token_id:
        return correct(f"{word!r} is [UNK] in this vocabulary: it has no row of its own.")
    if not isinstance(answer, (list, tuple)) or not all(isinstance(t, str) for t in answer):
        return wrong(f"give a list of 5 tokens (strings), got {type(answer).__name__}.",
                     "tokenizer.convert_ids_to_tokens(ids) turns ids into tokens.")
    truth = nearest_rows(model, tokenizer, word)
    answer = list(answer)
    if answer == truth:
        return correct(f"the rows nearest {word!r}: {truth}. Before any context, similar words already sit near each "
                       "other; the senses of 'bank' cannot be told apart here, lesson 09 shows where they are.")
    if word in answer:
        return wrong(f"{word!r} itself is in your list: its own row is always the nearest.",
                     "Leave the word out (and [CLS], [SEP], [PAD], [MASK], [UNK]) before taking the top 5.")
    if sorted(answer) == sorted(truth):
        return wrong("the right five, in the wrong order.", "Most similar first: sort by cosine, descending.")
    table = model.embeddings.word_embeddings.weight.detach()
    wid = tokenizer.convert_tokens_to_ids(word)
    dots = table @ table[wid]
    dots[[wid, *tokenizer.all_special_ids]] = -float("inf")
    if answer == tokenizer.convert_ids_to_tokens(dots.topk(5).indices.tolist()):
        return wrong("that ranks by the plain dot product, which favours long rows.",
                     "Cosine: divide by both lengths (torch.nn.functional.cosine_similarity).")
    return wrong("not the five nearest rows.", "cosine_similarity of the whole table with the word's row, leave "
                 "out the word and the special tokens, topk(5).")


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


def part_shares(model, trace) -> dict:
    """How much each looked-up part contributes to the embedding sum, token by token, averaged:
    ``part . sum / ||sum||^2`` (the shares of one token add up to 1)."""
    emb = model.embeddings
    with torch.no_grad():
        parts = {"word": emb.word_embeddings.weight[trace.input_ids],
                 "position": emb.position_embeddings.weight[: trace.seq_len],
                 "segment": emb.token_type_embeddings.weight[trace.token_type_ids]}
        total = sum(parts.values())
        norm2 = (total * total).sum(-1)
        return {k: float(((v * total).sum(-1) / norm2).mean()) for k, v in parts.items()}


def check_exercise_3(answer, prediction, model, trace) -> Feedback:
    """Exercise 3 (predict, then measure): the mean share of the word, position and segment rows in
    the embedding sum, ``{"word": ..., "position": ..., "segment": ...}``; the prediction (which
    part is largest) is recorded, never graded."""
    if answer is None:
        return NO_ANSWER
    if not isinstance(answer, dict) or set(answer) != {"word", "position", "segment"}:
        return wrong("give a dict with the keys 'word', 'position' and 'segment'.",
                     "e.g. {'word': 0.7, 'position': 0.2, 'segment': 0.1}.")
    truth = part_shares(model, trace)
    values = {}
    for k in truth:
        v, bad = as_number(answer[k], f"answer_3[{k!r}]")
        if bad is not None:
            return bad
        values[k] = v
    if all(abs(values[k] - truth[k]) < 2e-3 for k in truth):
        largest = max(truth, key=truth.get)
        return correct("shares of the sum: " + ", ".join(f"{k} {v:.2f}" for k, v in truth.items())
                       + f" (they add up to 1 for every token). The {largest} rows carry most of it. "
                       + prediction_note(prediction, largest, ("word", "position", "segment")))
    with torch.no_grad():  # the checker's arithmetic must not warn the learner about gradients
        lengths = {k: float(v) for k, v in zip(truth, (
            model.embeddings.word_embeddings.weight[trace.input_ids].norm(dim=-1).mean(),
            model.embeddings.position_embeddings.weight[: trace.seq_len].norm(dim=-1).mean(),
            model.embeddings.token_type_embeddings.weight[trace.token_type_ids].norm(dim=-1).mean()))}
    if all(abs(values[k] - lengths[k]) < 2e-3 for k in truth):
        return wrong("those are the parts' lengths, not their shares of the sum.",
                     "Share of a part = (part . sum) / ||sum||^2, per token, then the mean over tokens.")
    if abs(sum(values.values()) - 1) > 0.02:
        return wrong("your three shares do not add up to 1.", "For each token the three dot products with the sum "
                     "add up to ||sum||^2; divide each by it.")
    return wrong("the shares differ from the sum's own.", "Which rows of each of the three tables does a token of "
                 "trace actually add? Its token id, its position and its segment each pick one.")


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
