"""Helper package for the "BERT, layer by layer" course.

Modules, split by concern so each can be read and tested alone:

* :mod:`helpers.loading` -- pick and load a BERT checkpoint (tokenizer + model).
* :mod:`helpers.trace`   -- one traced forward pass with validated accessors.
"""

from helpers.loading import BUNDLED_MODEL, DEFAULT_HUB_MODEL, ModelLoadError, load_model, resolve_model_name
from helpers.trace import Trace, WordSpan, trace_text

__all__ = [
    "BUNDLED_MODEL",
    "DEFAULT_HUB_MODEL",
    "ModelLoadError",
    "Trace",
    "WordSpan",
    "load_model",
    "resolve_model_name",
    "trace_text",
]
