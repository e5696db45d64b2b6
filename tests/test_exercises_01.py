"""Lesson 01 solutions pass their checkers; typical wrong answers get the right hint."""

import warnings

import torch

from helpers.exercises.lesson01 import check_exercise_1, check_exercise_2, check_exercise_3, check_exercise_4
from helpers.model.trace import trace_text
from lessons.solutions import solutions_01 as S

SENTENCE = "The bank by the river was unbelievably quiet this morning."


def test_exercise_1_nearest_rows(tokenizer, model):
    right = S.solution_1(model, tokenizer, "bank")
    assert len(right) == 5 and "bank" not in right
    # independently: a loop over the whole table in float64
    table = model.embeddings.word_embeddings.weight.detach().double()
    wid = tokenizer.convert_tokens_to_ids("bank")
    unit = table / table.norm(dim=1, keepdim=True)
    sims = (unit @ unit[wid]).tolist()
    banned = {wid, *tokenizer.all_special_ids}
    by_hand = sorted((i for i in range(len(sims)) if i not in banned), key=lambda i: -sims[i])[:5]
    assert right == tokenizer.convert_ids_to_tokens(by_hand)
    assert check_exercise_1(right, model, tokenizer, "bank").ok
    fb = check_exercise_1(["bank"] + right[:4], model, tokenizer, "bank")
    assert not fb.ok and "itself" in fb.message
    fb = check_exercise_1(right[::-1], model, tokenizer, "bank")
    assert not fb.ok and "order" in fb.message
    assert not check_exercise_1("bank", model, tokenizer, "bank").ok
    assert not check_exercise_1(None, model, tokenizer, "bank").ok


def test_exercise_2(tokenizer, model):
    assert check_exercise_2(S.solution_2(model, tokenizer, "bank", "river"), model, tokenizer, "bank", "river").ok
    table = model.embeddings.word_embeddings.weight.detach()
    a, b = (table[tokenizer.convert_tokens_to_ids(w)] for w in ("bank", "river"))
    fb = check_exercise_2(float(a @ b), model, tokenizer, "bank", "river")
    assert not fb.ok and "length" in fb.hint
    assert check_exercise_2(S.solution_2(model, tokenizer, "bank", "🦜"), model, tokenizer, "bank", "🦜").ok
    # the pair the lesson asks for, against an independent cosine of the two rows
    a, b = (table[tokenizer.convert_tokens_to_ids(w)] for w in ("loan", "mortgage"))
    by_hand = float(a @ b / (a.norm() * b.norm()))
    assert check_exercise_2(by_hand, model, tokenizer, "loan", "mortgage").ok
    assert not check_exercise_2(by_hand + 0.01, model, tokenizer, "loan", "mortgage").ok


def test_exercise_3_shares_of_the_sum(tokenizer, model):
    pair = trace_text(tokenizer, model, SENTENCE, "It had rained all night.")
    shares = S.solution_3(model, pair)
    assert abs(sum(shares.values()) - 1) < 1e-5  # the three shares of every token add up to 1
    fb = check_exercise_3(shares, "word", model, pair)
    assert fb.ok and "You predicted 'word'" in fb.message
    assert check_exercise_3(shares, None, model, pair).ok  # no prediction: never an error
    emb = model.embeddings
    with torch.no_grad():
        lengths = {"word": float(emb.word_embeddings.weight[pair.input_ids].norm(dim=-1).mean()),
                   "position": float(emb.position_embeddings.weight[: pair.seq_len].norm(dim=-1).mean()),
                   "segment": float(emb.token_type_embeddings.weight[pair.token_type_ids].norm(dim=-1).mean())}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no PyTorch warning may reach the learner
        fb = check_exercise_3(lengths, None, model, pair)
        assert not fb.ok and "lengths" in fb.message
        assert not check_exercise_3({"word": 0.2, "position": 0.3, "segment": 0.5}, None, model, pair).ok
    fb = check_exercise_3({"word": 0.5, "position": 0.5, "segment": 0.5}, None, model, pair)
    assert not fb.ok and "add up to 1" in fb.message
    assert not check_exercise_3([0.5, 0.3, 0.2], None, model, pair).ok
    assert not check_exercise_3(None, None, model, pair).ok


def test_exercise_4(tokenizer, model):
    repeat = trace_text(tokenizer, model, "unbelievably and unbelievably again")
    a, b = (repeat.find_word("unbelievably", occurrence=k).first for k in (0, 1))
    answer = S.solution_4(repeat, a, b)
    assert answer < 1 - 1e-4  # the position rows differ
    assert not check_exercise_4(answer, None, repeat, a, b).ok
    fb = check_exercise_4(answer, "different", repeat, a, b)
    assert fb.ok and "agrees" in fb.message
    fb = check_exercise_4(torch.tensor(answer), "same", repeat, a, b)
    assert fb.ok and "You predicted 'same'" in fb.message
    fb = check_exercise_4(1.0, "same", repeat, a, b)  # the word-table rows: one row
    assert not fb.ok and "word-table" in fb.message
    last = repeat.hidden(repeat.num_layers)
    after = torch.nn.functional.cosine_similarity(last[a], last[b], dim=0).item()
    fb = check_exercise_4(after, "different", repeat, a, b)
    assert not fb.ok and "hidden(0)" in fb.hint
    fb = check_exercise_4(0.1, "different", repeat, a, b)
    assert not fb.ok and f"{answer:.4f}" not in str(fb)
