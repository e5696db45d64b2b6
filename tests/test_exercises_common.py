"""The shared pieces of the exercise checkers: index answers in any integer form, the rating
line, and grammar in the feedback."""

import numpy as np
import pytest
import torch

from helpers.exercises import as_index, check_type, rating


@pytest.mark.parametrize("value", [3, np.int64(3), np.int32(3), torch.tensor(3), np.array(3)])
def test_as_index_accepts_every_integer_form(value):
    index, feedback = as_index(value, "The position", size=5)
    assert index == 3 and type(index) is int and feedback is None


@pytest.mark.parametrize("value", [3.0, True, "3", torch.tensor([3]), torch.tensor(3.0)])
def test_as_index_refuses_non_integers_and_says_what_was_given(value):
    index, feedback = as_index(value, "The position", size=5)
    assert index is None and not feedback.ok
    assert type(value).__name__ in feedback.message and "an int" in feedback.message


def test_as_index_range_names_the_valid_values():
    index, feedback = as_index(7, "The position", size=5)
    assert index is None and "0 to 4" in feedback.hint


def test_rating_line_and_its_errors():
    assert rating(2, 4, 10) == "Difficulty ●●○○○ · Importance ●●●●○ · about 10 min"
    with pytest.raises(ValueError, match="difficulty"):
        rating(0, 3, 5)
    with pytest.raises(ValueError, match="minutes"):
        rating(2, 3, 0)


def test_check_type_says_an_int():
    feedback = check_type(2.5, int, "The position")
    assert "should be an int" in feedback.message and "a float" in feedback.message
