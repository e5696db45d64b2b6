"""The pieces every lesson's checkers share (helpers/exercises/__init__.py)."""

import numpy as np
import pytest
import torch

from helpers.exercises import (NO_ANSWER, RATING_PATTERN, article, as_index, as_number, check_prediction,
                               check_type, prediction_note, rating)


@pytest.mark.parametrize("value", [3, np.int64(3), np.int32(3), torch.tensor(3), torch.tensor([3])])
def test_as_index_accepts_ints_numpy_integers_and_integer_tensors(value):
    index, bad = as_index(value, "The position")
    assert bad is None and index == 3 and type(index) is int


@pytest.mark.parametrize("value, says", [
    (3.0, "a float"), (True, "a bool"), ("3", "a str"), (torch.tensor(3.0), "float32 tensor"),
    (torch.tensor([1, 2]), "shape (2,)"), (np.float64(3.0), "float64")])
def test_as_index_refuses_other_values_and_says_what_was_given(value, says):
    index, bad = as_index(value, "The position")
    assert index is None and not bad.ok
    assert says in bad.message and "an int" in bad.message and "a int" not in bad.message


def test_as_index_none_is_no_answer():
    assert as_index(None) == (None, NO_ANSWER)


@pytest.mark.parametrize("value", [0.25, np.float32(0.25), np.float64(0.25), np.array(0.25), np.array([0.25]),
                                   torch.tensor(0.25), torch.tensor([[0.25]]), torch.tensor(0.25, dtype=torch.float16)])
def test_as_number_accepts_one_number_in_any_of_its_usual_types(value):
    number, bad = as_number(value, "answer_3")
    assert bad is None and number == 0.25 and type(number) is float


def test_as_number_accepts_a_whole_number():
    assert as_number(2) == (2.0, None) and as_number(np.int64(2)) == (2.0, None)


@pytest.mark.parametrize("value, says", [
    (True, "a bool"), (np.bool_(False), "a bool"), (torch.tensor(True), "a bool"), ("0.5", "a str ('0.5')"),
    (torch.tensor([0.1, 0.2]), "a tensor of shape (2,)"), (np.zeros((2, 3)), "an array of shape (2, 3)"),
    (float("nan"), "nan, not a finite number"), (torch.tensor(float("inf")), "inf, not a finite number"),
    ([0.5], "a list")])
def test_as_number_refuses_other_values_and_says_what_was_given(value, says):
    number, bad = as_number(value, "answer_3")
    assert number is None and not bad.ok
    assert says in bad.message and bad.message.startswith("answer_3"), bad.message


def test_as_number_none_is_no_answer():
    assert as_number(None) == (None, NO_ANSWER)


def test_article_and_check_type_say_an_int():
    assert article("int") == "an int" and article("float") == "a float"
    fb = check_type(1.5, int, "The position")
    assert "an int" in fb.message and "a float" in fb.message and "a int" not in str(fb)


def test_rating_line_and_its_pattern():
    line = rating(2, 4, 10)
    assert line == "Difficulty ●●○○○ · Importance ●●●●○ · ~10 min"
    assert RATING_PATTERN.fullmatch(line)["minutes"] == "10"
    for bad in [(0, 3, 5), (2, 6, 5), (2, 3, 0), (2.0, 3, 5)]:
        with pytest.raises(ValueError):
            rating(*bad)


def test_predictions_come_before_the_measurement():
    assert not check_prediction(None, ("same", "different")).ok
    fb = check_prediction("maybe", ("same", "different"))
    assert not fb.ok and "'same' or 'different'" in fb.message
    assert check_prediction(" Same ", ("same", "different")) is None
    assert "agrees" in prediction_note("same", "same")
    assert "'different'" in prediction_note("same", "different")


def test_as_index_takes_a_0d_numpy_array_and_checks_the_range():
    assert as_index(np.array(3), "The position", size=5) == (3, None)
    index, bad = as_index(7, "The position", size=5)
    assert index is None and "0 to 4" in bad.hint and "7" in bad.message
    index, bad = as_index(2.5, "The position", size=5)  # a type problem comes before the range
    assert index is None and "a float" in bad.message


def test_no_checker_writes_the_type_name_twice():
    """``article(name)`` already returns "an int"; writing the name after it gives "an int int"."""
    import re
    from pathlib import Path

    folder = Path(__file__).resolve().parent.parent / "helpers" / "exercises"
    doubled = [f"{p.name}:{n}" for p in sorted(folder.glob("*.py"))
               for n, line in enumerate(p.read_text().splitlines(), 1)
               if re.search(r"\{article\((\w+)\)\} \{\1\}", line)]
    assert not doubled, f"type name written twice after article(): {doubled}"
    assert str(check_type(2.5, int, "x").message).count("float") == 1
