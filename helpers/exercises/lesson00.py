"""Checkers for lesson 00 (the big picture)."""

from __future__ import annotations

import torch

from helpers.exercises import (NO_ANSWER, Feedback, as_number, check_prediction, correct, prediction_note,
                               wrong)
from helpers.model.trace import trace_text


def _close(a: float, b: float) -> bool:
    return abs(a - b) < 1e-6 * max(1.0, abs(b))


def _rounded(a: float, b: float, digits: int = 2) -> bool:
    """``a`` is ``b`` or ``b`` rounded to ``digits`` decimals (a learner may round a ratio)."""
    return _close(a, b) or abs(a - b) <= 0.5 * 10 ** -digits + 1e-12


def check_exercise_1(answer, trace) -> Feedback:
    """Exercise 1: WordPiece tokens per word of the traced input (tokens of [CLS]/[SEP] excluded)."""
    if answer is None:
        return NO_ANSWER
    answer, bad = as_number(answer, "The answer", "Divide the number of word tokens by the number of words "
                            "(rounded to two decimals is fine).")
    if bad is not None:
        return bad
    words = trace.words()
    in_words = sum(wid is not None for wid in trace.word_ids)  # tokens the tokenizer maps back to a word
    ref = in_words / len(words)
    if _rounded(answer, ref):
        return correct(f"{in_words} tokens for {len(words)} words: {ref:.3f} tokens per word.")
    if _close(answer, trace.seq_len / len(words)):
        return wrong("that counts [CLS] and [SEP] as pieces of words.",
                     f"Leave out the special tokens: {trace.seq_len} tokens in all, but not all belong to a word.")
    split = trace.text.split()
    if split and _close(answer, in_words / len(split)):
        return wrong("text.split() glues punctuation to its word, but the tokenizer splits it off as a word of its own.",
                     f"Count trace.words() ({len(words)} words), not text.split() ({len(split)}).")
    if answer and _close(1 / answer, ref):
        return wrong("that is words per token, the inverse.", "Tokens divided by words.")
    return wrong(f"{answer} is not the number of tokens per word.",
                 "len(trace.words()) words; count the tokens other than [CLS] and [SEP]; divide (rounded to two "
                 "decimals is fine).")


def check_exercise_2(count_numbers, prediction, tokenizer, model) -> Feedback:
    """Exercise 2 (build it yourself): ``count_numbers(config, n_tokens)`` returns how many numbers
    the model hands back in ``hidden_states`` and ``attentions`` together for one input of
    ``n_tokens`` tokens; checked against real runs of two lengths. ``prediction`` ("hidden" or
    "attention": which grows faster with the length) is never graded."""
    from helpers.exercises.prediction import prediction_note

    if count_numbers is None:
        return NO_ANSWER
    if not callable(count_numbers):
        return wrong(f"count_numbers should be a function, not {type(count_numbers).__name__}.",
                     "def count_numbers(config, n_tokens): return ...")
    config = model.config
    L, H, A = config.num_hidden_layers, config.hidden_size, config.num_attention_heads
    for text in ("Short one.", "A somewhat longer sentence, with a few more words in it than the first."):
        enc = tokenizer(text, return_tensors="pt").to(model.device)
        with torch.no_grad():
            out = model(**enc, output_hidden_states=True, output_attentions=True)
        n = enc["input_ids"].shape[1]
        truth = sum(h[0].numel() for h in out.hidden_states) + sum(a[0].numel() for a in out.attentions)
        try:
            got = count_numbers(config, n)
        except Exception as err:  # noqa: BLE001 - the learner's code: report what broke
            return wrong(f"count_numbers raised {type(err).__name__}: {err}",
                         "It gets the model's config and a number of tokens; read L, H and A from the config.")
        got, bad = as_number(got, "count_numbers(config, n)")
        if bad is not None:
            return bad
        hidden, attention = (L + 1) * n * H, L * A * n * n
        if got == truth:
            continue
        if got == hidden:
            return wrong("that counts the hidden states only.", "attentions: L maps of A x n x n each.")
        if got == L * n * H + attention:
            return wrong("one hidden state is missing.", "hidden_states has L + 1 entries: the embeddings too.")
        if got == hidden + L * n * n:
            return wrong("that counts one head per layer.", "Each layer hands back all A heads: A x n x n.")
        return wrong(f"for {n} tokens you count {got:,.0f}, the model hands back {truth:,}.",
                     "(L + 1) hidden states of n x H, plus L attention maps of A x n x n.")
    n_cross = next(n for n in range(1, 10_000) if L * A * n * n > (L + 1) * n * H)
    faster = "attention"
    return correct(f"the hidden states grow in proportion to n, the attention maps with n squared: from "
                   f"{n_cross} tokens on the attention weights are the larger part. "
                   + prediction_note(prediction, faster, ("hidden", "attention")))


def check_exercise_3(dropped, prediction, tokenizer, model, text: str) -> Feedback:
    """Exercise 3 (predict, then measure): how many tokens of ``text`` (longer than the maximum)
    the cut at the model's maximum length drops. The prediction (a number, worked out by
    arithmetic from the sentence's token count and the maximum) is never graded."""
    from helpers.exercises import as_index
    from helpers.exercises.prediction import number_note
    from helpers.model.trace import encode, max_input_tokens

    if dropped is None:
        return NO_ANSWER
    dropped, bad = as_index(dropped, "dropped_3")
    if bad is not None:
        return bad
    import warnings

    with warnings.catch_warnings():  # the learner's own call already showed the warning
        warnings.simplefilter("ignore")
        enc, n_dropped = encode(tokenizer, model, text)
    kept = enc["input_ids"].shape[1]
    full = len(tokenizer(text, truncation=False, verbose=False)["input_ids"])
    if dropped == n_dropped:
        return correct(f"the tokenizer makes {full} tokens, the model reads its maximum, "
                       f"{max_input_tokens(tokenizer, model)}: {n_dropped} are cut off the end "
                       "(encode returns that count as its second value, and warns). "
                       + number_note(prediction, n_dropped, ""))
    if dropped == full:
        return wrong("that is how many tokens the tokenizer makes before the cut.",
                     "Subtract the number of ids encode(tokenizer, model, text) hands the model.")
    if dropped == kept:
        return wrong("that is how many tokens the model keeps, not how many it drops.",
                     "Tokens before the cut minus tokens kept.")
    if dropped == n_dropped - 2:
        return wrong("your count before the cut leaves out [CLS] and [SEP]; encode's count has them.",
                     "Count both with the special tokens: len(tokenizer(text)['input_ids']).")
    return wrong(f"{dropped} is not how many tokens the cut drops.",
                 "len(tokenizer(text)['input_ids']) minus encode(tokenizer, model, text)[0]"
                 "['input_ids'].shape[1].")


def _first_token_cosine(tokenizer, model, text_a: str, text_b: str, layer: int) -> float:
    a, b = trace_text(tokenizer, model, text_a), trace_text(tokenizer, model, text_b)
    return torch.nn.functional.cosine_similarity(a.hidden(layer)[1], b.hidden(layer)[1], dim=0).item()


def check_exercise_4(answer, prediction, tokenizer, model, sentence: str, longer: str) -> Feedback:
    """Exercise 4 (predict, then measure): the cosine between token 1's last-layer vectors in
    ``sentence`` and in ``longer`` (``sentence`` with words appended)."""
    if (bad := check_prediction(prediction, ("same", "different"))) is not None:
        return bad
    if answer is None:
        return NO_ANSWER
    answer, bad = as_number(answer, "The answer",
                            "torch.nn.functional.cosine_similarity(u, v, dim=0).item() of the two vectors.")
    if bad is not None:
        return bad
    L = model.config.num_hidden_layers
    ref = _first_token_cosine(tokenizer, model, sentence, longer, L)
    if abs(answer - ref) < 1e-4:
        actual = "same" if ref > 1 - 1e-5 else "different"
        why = ("every layer's attention reads the whole input, the words after token 1 included"
               if actual == "different" else
               "the appended words were cut off (the input is past the maximum length), so both "
               "runs saw the same tokens")
        return correct(f"cosine {ref:.4f}: {why}. {prediction_note(prediction, actual)}")
    if abs(answer - _first_token_cosine(tokenizer, model, sentence, longer, 0)) < 1e-4:
        return wrong("that compares the embeddings, hidden(0), before any attention has run.",
                     "Use the last layer: trace.hidden(L) of each run.")
    cls = trace_text(tokenizer, model, sentence).hidden(L)[0]
    cls_b = trace_text(tokenizer, model, longer).hidden(L)[0]
    if abs(answer - torch.nn.functional.cosine_similarity(cls, cls_b, dim=0).item()) < 1e-4:
        return wrong("that compares token 0, [CLS], not token 1.", "Row 1 of hidden(L), not row 0.")
    return wrong(f"{answer:.4f} is not the cosine of token 1's last-layer vectors.",
                 "Trace both texts with trace_text, take .hidden(L)[1] of each, and compare them "
                 "with torch.nn.functional.cosine_similarity(..., dim=0).")
