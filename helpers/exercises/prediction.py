"""Predict, then measure: a comment on the learner's prediction, never a grade.

A "predict, then measure" exercise asks for a prediction first (``prediction = None``)
and then a measurement. The checker grades the measurement only; once the measurement is
right, :func:`prediction_note` adds one sentence that sets the prediction beside it. A
missing or odd prediction never makes an answer wrong.
"""

from __future__ import annotations

import numbers


def _word(prediction) -> str | None:
    if isinstance(prediction, str) and prediction.strip():
        return prediction.strip().lower()
    return None


def prediction_note(prediction, outcome: str, choices: tuple[str, ...] | None = None) -> str:
    """One sentence on a word prediction (e.g. ``"higher"``) against the measured
    ``outcome`` (one of ``choices``, when given). Exercises that insist on a prediction
    first check it with :func:`helpers.exercises.check_prediction` before measuring."""
    if prediction is None:
        return ("You wrote no prediction: next time, write one down before you "
                "measure; a guess you can check teaches more.")
    word = _word(prediction)
    if choices is not None and word not in choices:
        return (f"Your prediction was {prediction!r} (not one of "
                f"{', '.join(map(repr, choices))}); set it beside the result.")
    if word == outcome:
        return f"You predicted {word!r}: the measurement agrees."
    return (f"You predicted {word!r}, the measurement says {outcome!r}: worth a "
            "minute on what your reasoning left out.")


def number_note(prediction, measured: float, unit: str = "") -> str:
    """One sentence on a numeric prediction against the ``measured`` value."""
    if prediction is None:
        return ("You wrote no prediction: next time, write one down before you "
                "measure; a guess you can check teaches more.")
    if isinstance(prediction, bool) or not isinstance(prediction, numbers.Real):
        try:
            prediction = float(prediction)
        except (TypeError, ValueError):
            return (f"Your prediction was {prediction!r}, not a number; set it "
                    "beside the result.")
    guess, value = float(prediction), float(measured)

    def show(x: float) -> str:  # a count stays a whole number; a share keeps three digits
        return f"{x:,.0f}" if x == round(x) and abs(x) >= 10 else f"{x:.3g}"

    if value == guess:
        return f"You predicted {show(guess)}{unit}: exactly what was measured."
    side = "above" if value > guess else "below"
    return (f"You predicted {show(guess)}{unit}; the measurement, {show(value)}{unit}, is "
            f"{show(abs(value - guess))}{unit} {side} it.")


def index_note(prediction, measured: int, what: str = "layer") -> str:
    """One sentence on a predicted index (a layer, a head) against the ``measured`` one."""
    if prediction is None:
        return ("You wrote no prediction: next time, write one down before you "
                "measure; a guess you can check teaches more.")
    if hasattr(prediction, "ndim") and getattr(prediction, "ndim", None) == 0 and hasattr(prediction, "item"):
        prediction = prediction.item()
    if isinstance(prediction, bool) or not isinstance(prediction, numbers.Integral):
        return f"Your prediction was {prediction!r}, not a {what} number; set it beside the result."
    if int(prediction) == int(measured):
        return f"You predicted {what} {int(prediction)}: the measurement agrees."
    return (f"You predicted {what} {int(prediction)}, the measurement says {what} "
            f"{int(measured)}: worth a minute on what your reasoning left out.")
