"""Exercise checkers: specific feedback (what is wrong, a hint), not just pass/fail.

Each lesson's checkers live in ``helpers/exercises/lessonNN.py`` and return a
:class:`Feedback`. In a notebook a Feedback renders as one short, readable line; in a
test, ``feedback.ok`` and ``feedback.hint`` can be asserted on.
"""

from __future__ import annotations

from dataclasses import dataclass


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

    def _repr_markdown_(self) -> str:
        if self.ok:
            return f"**✅ Correct:** {self.message}"
        hint = f"<br>💡 *Hint:* {self.hint}" if self.hint else ""
        return f"**❌ Not yet:** {self.message}{hint}"

    def __repr__(self) -> str:  # plain-text front ends (terminal, nbval)
        return str(self)


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
    names = expected_type.__name__ if isinstance(expected_type, type) else " or ".join(t.__name__ for t in expected_type)
    given = type(answer).__name__
    return wrong(f"{what} should be {article(names)} {names}, but you gave {article(given)} {given}.",
                 f"Return {article(names)} {names}.")


def article(word: str) -> str:
    """``"an"`` before a vowel sound (``an int``, ``an ndarray``), else ``"a"``."""
    return "an" if word[:1].lower() in "aeiou" else "a"


def as_index(answer, what: str, size: int | None = None):
    """``(index, None)`` for a Python int, a NumPy integer or a 0-d integer tensor; else
    ``(None, feedback)`` saying what was given and what is valid (``0 .. size - 1`` when
    ``size`` is given). Booleans and floats are refused: ``True`` is not a position."""
    import numbers

    if hasattr(answer, "ndim") and getattr(answer, "ndim", None) == 0 and hasattr(answer, "item"):
        value = answer.item()  # a 0-d tensor or NumPy scalar array
    else:
        value = answer
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        given = type(answer).__name__
        return None, wrong(f"{what} should be a whole number (an int), but you gave {article(given)} {given}.",
                           "Give one integer, e.g. int(tensor.argmax()).")
    value = int(value)
    if size is not None and not 0 <= value < size:
        return None, wrong(f"{what} {value} is out of range.", f"Valid values run from 0 to {size - 1}.")
    return value, None


DOTS = 5


def rating(difficulty: int, importance: int, minutes: int) -> str:
    """The line every exercise starts with (as ARENA rates its exercises), e.g.
    ``Difficulty ●●○○○ · Importance ●●●●○ · about 10 min``."""
    for name, value in (("difficulty", difficulty), ("importance", importance)):
        if not 1 <= value <= DOTS:
            raise ValueError(f"{name} must be 1..{DOTS}, got {value!r}.")
    if minutes <= 0:
        raise ValueError(f"minutes must be positive, got {minutes!r}.")

    def dots(n: int) -> str:
        return "●" * n + "○" * (DOTS - n)

    return f"Difficulty {dots(difficulty)} · Importance {dots(importance)} · about {minutes} min"


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
