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
    return wrong(f"{what} should be a {names}, but you gave a {type(answer).__name__}.", f"Return a {names}.")


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
