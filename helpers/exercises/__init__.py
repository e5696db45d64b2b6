"""Exercise checkers: specific feedback (what is wrong, a hint), not just pass/fail.

Each lesson's checkers live in ``helpers/exercises/lessonNN.py`` and return a
:class:`Feedback`. In a notebook a Feedback renders as one short, readable box (words, no
emoji); in a test, ``feedback.ok`` and ``feedback.hint`` can be asserted on.

Shared by every lesson's checkers:

* :func:`as_index` turns an answer that should be a whole number (a position, a layer,
  a head, a count) into a Python ``int``: it accepts a Python int, a NumPy integer or a
  0-d integer tensor (what ``int(...)``, ``np.argmax`` and ``tensor.argmax()`` give) and
  otherwise returns the feedback that says what to give instead;
* :func:`as_number` does the same for an answer that should be a number (a share, a cosine, a
  difference): a Python int or float, a NumPy number or a one-element tensor or array, returned
  as a finite Python ``float``; a bool, a string, a many-element tensor or NaN gets feedback;
* :func:`rating` writes the line every exercise opens with
  (``Difficulty ●●○○○ · Importance ●●●●○ · ~10 min``) and :data:`RATING_PATTERN`
  recognises it (``tests/test_lesson_style.py`` checks every exercise has one).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np
import torch


@dataclass(frozen=True)
class Feedback:
    ok: bool
    message: str
    hint: str | None = None

    def __str__(self) -> str:
        if self.ok:
            return f"Correct: {self.message}"
        text = f"Not yet: {self.message}"
        return f"{text}\nHint: {self.hint}" if self.hint else text

    def __bool__(self) -> bool:
        return self.ok

    def _repr_html_(self) -> str:
        """A coloured box with words, no emoji (a missing emoji font would show empty boxes):
        green "Correct", or amber "Not yet" and the hint. Inline styles, so it looks the same in
        JupyterLab, Colab and the website; ``data-course-feedback`` lets the website's build
        tell an unanswered exercise apart (it shows "run this in the notebook" instead)."""
        state, colour, label = ("correct", "#2e7d32", "Correct") if self.ok else ("not-yet", "#b26a00", "Not yet")
        box = (f'border-left:4px solid {colour};background:{colour}14;padding:0.35em 0.75em;'
               'margin:0.2em 0;line-height:1.5')
        hint = f'<br><em style="font-style:normal;font-weight:600">Hint:</em> {_inline(self.hint)}' if self.hint else ""
        return (f'<div class="course-feedback" data-course-feedback="{state}" style="{box}">'
                f'<strong style="color:{colour}">{label}:</strong> {_inline(self.message)}{hint}</div>')

    def __repr__(self) -> str:  # plain-text front ends (terminal, nbval)
        return str(self)


def _inline(text: str) -> str:
    """A checker's message as HTML: escaped, with its Markdown-style `code`, **bold** and
    *emphasis* kept."""
    import html

    text = html.escape(text, quote=False)
    text = re.sub(r"`([^`]+)`", r"<code>\1</code>", text)
    text = re.sub(r"\*\*([^*]+)\*\*", r"<strong>\1</strong>", text)
    return re.sub(r"(?<![\w*])\*([^*\s][^*]*)\*(?![\w*])", r"<em>\1</em>", text)


def correct(message: str) -> Feedback:
    return Feedback(True, message)


def wrong(message: str, hint: str) -> Feedback:
    return Feedback(False, message, hint)


NO_ANSWER = wrong("no answer given.", "Replace `None` with your answer, then run the cell again.")


def no_answer(hint: str) -> Feedback:
    """:data:`NO_ANSWER` with a hint that says what this exercise's answer should be."""
    return wrong(NO_ANSWER.message, hint)


def check_type(answer, expected_type, what: str) -> Feedback | None:
    """``None`` when ``answer`` has the expected type, else the feedback that says so.

    Test the result with ``is not None``: a Feedback for a wrong answer is falsy.
    """
    if isinstance(answer, expected_type):
        return None
    if isinstance(expected_type, type):
        names = expected_type.__name__
    else:
        names = " or ".join(t.__name__ for t in expected_type)
    given = type(answer).__name__
    return wrong(f"{what} should be {article(names)}, but you gave {article(given)}.",
                 f"Return {article(names)}.")


def article(name: str) -> str:
    """``name`` with "a" or "an" in front: "an int", "a float", "an Interval"."""
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"


def as_index(value, what: str = "The answer", size: int | None = None):
    """``(int, None)`` for a whole-number answer, ``(None, feedback)`` otherwise.

    Accepted: a Python ``int``, a NumPy integer (``np.argmax``) or a 0-d (or one-element) integer tensor
    (``tensor.argmax()``), all returned as a Python int. ``None`` gives the "no answer"
    feedback; a bool, a float, a string or a tensor with more than one element gives
    feedback saying what was given and how to turn it into an int; with ``size``, a number
    outside ``0 .. size - 1`` gets feedback naming the valid range. Use it as::

        index, bad = as_index(answer, "The position")
        if bad is not None:
            return bad
    """
    if value is None:
        return None, NO_ANSWER
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]  # a 0-d NumPy array: its scalar
    if size is not None:
        index, bad = as_index(value, what)
        if bad is None and not 0 <= index < size:
            return None, wrong(f"{what} {index} is out of range.",
                               f"Valid values run from 0 to {size - 1}.")
        return index, bad
    if isinstance(value, (bool, np.bool_)):
        return None, wrong(f"{what} should be an int, but you gave a bool.",
                           "Give the number itself, not a comparison.")
    if isinstance(value, (int, np.integer)):
        return int(value), None
    if isinstance(value, torch.Tensor):
        if value.numel() != 1:
            return None, wrong(
                f"{what} should be an int, but you gave a tensor of shape "
                f"{tuple(value.shape)}.",
                "Reduce it to one number first (e.g. .argmax()), then int(...).")
        if value.dtype.is_floating_point or value.dtype == torch.bool:
            return None, wrong(
                f"{what} should be an int, but you gave a {value.dtype} tensor.",
                "An index is a whole number: int(...) of an integer result.")
        return int(value.item()), None
    return None, wrong(f"{what} should be an int, but you gave "
                       f"{article(type(value).__name__)}.",
                       "Turn your result into a whole number with int(...).")


NUMBER_HINT = "Turn your result into one number: float(...), or .item() on a one-element tensor."


def as_number(value, what: str = "The answer", hint: str = NUMBER_HINT):
    """``(float, None)`` for an answer that is one finite number, ``(None, feedback)`` otherwise.

    Accepted: a Python ``int`` or ``float``, a NumPy number, a one-element NumPy array or tensor
    (what ``.mean()``, ``np.mean`` and ``F.cosine_similarity`` give), all returned as a Python
    float. ``None`` gives the "no answer" feedback; a bool, a string (``"0.5"`` is text, not a
    number), a tensor or array of several numbers, NaN or infinity gives feedback saying what was
    given; ``hint`` says how this exercise's number is made. Use it as::

        value, bad = as_number(answer, "answer_3")
        if bad is not None:
            return bad
    """
    if value is None:
        return None, NO_ANSWER
    if isinstance(value, (torch.Tensor, np.ndarray)):
        shape = tuple(value.shape)
        if math.prod(shape) != 1:
            return None, wrong(f"{what} should be one number, but you gave "
                               f"{'a tensor' if isinstance(value, torch.Tensor) else 'an array'} of shape {shape}.",
                               "Reduce it to one number first (e.g. .mean() or indexing), then .item().")
        value = value.item() if isinstance(value, torch.Tensor) else value.reshape(())[()]  # a bool stays a bool
    if isinstance(value, (bool, np.bool_)):
        return None, wrong(f"{what} should be a number, but you gave a bool.",
                           "Give the number itself, not a comparison.")
    if isinstance(value, str):
        return None, wrong(f"{what} should be a number, but you gave a str ({value[:20]!r}).",
                           "Give the number itself, not text (no quotes).")
    if not isinstance(value, (int, float, np.integer, np.floating)):
        return None, wrong(f"{what} should be a number, but you gave {article(type(value).__name__)}.", hint)
    number = float(value)
    if not math.isfinite(number):
        return None, wrong(f"{what} is {number}, not a finite number.",
                           "Look for a division by zero or the log of 0 in your computation.")
    return number, None


DOTS = 5
RATING_PATTERN = re.compile(
    r"Difficulty (?P<difficulty>[●○]{5}) · Importance (?P<importance>[●○]{5})"
    r" · ~(?P<minutes>\d+) min")


def rating(difficulty: int, importance: int, minutes: int) -> str:
    """The line an exercise opens with, e.g. ``rating(2, 4, 10)`` ->
    ``"Difficulty ●●○○○ · Importance ●●●●○ · ~10 min"`` (ARENA's convention: difficulty
    and importance from 1 to 5, a time estimate in minutes)."""
    for name, value in (("difficulty", difficulty), ("importance", importance)):
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= DOTS:
            raise ValueError(f"{name} must be an int from 1 to {DOTS}, got {value!r}.")
    if isinstance(minutes, bool) or not isinstance(minutes, int) or minutes < 1:
        raise ValueError(f"minutes must be a positive int, got {minutes!r}.")

    def dots(k):
        return "●" * k + "○" * (DOTS - k)

    return f"Difficulty {dots(difficulty)} · Importance {dots(importance)} · ~{minutes} min"


def check_shape(tensor, expected: tuple, what: str) -> Feedback | None:
    """``None`` when ``tensor.shape == expected``, else feedback naming both shapes.

    Test the result with ``is not None``: a Feedback for a wrong answer is falsy.
    """
    shape = tuple(getattr(tensor, "shape", ()))
    if shape == tuple(expected):
        return None
    return wrong(
        f"{what} has shape {shape}, expected {tuple(expected)}.",
        "Check which dimensions you kept, summed over, or transposed; the sizes come from model.config.",
    )


def check_prediction(prediction, choices: tuple[str, ...]) -> Feedback | None:
    """``None`` when ``prediction`` is one of ``choices`` (any case), else the feedback
    that asks for a prediction first: a "predict, then measure" exercise checks the
    measurement only once the learner has committed to a guess."""
    options = " or ".join(repr(c) for c in choices)
    if prediction is None:
        return wrong("write your prediction before you measure.",
                     f"Set the prediction to {options}, then run the cell again.")
    if not isinstance(prediction, str) or prediction.strip().lower() not in choices:
        return wrong(f"the prediction should be {options}, not {prediction!r}.",
                     f"Set it to {options}.")
    return None


# The comments on a prediction (a word, a number, an index) live in prediction.py; lessons
# import them from here or from there.
from helpers.exercises.prediction import index_note, number_note, prediction_note  # noqa: E402
