"""Helper package for the "BERT, layer by layer" course.

Modules, split by concern so each can be read and tested alone:

* :mod:`helpers.loading` -- pick and load a BERT checkpoint (tokenizer + model).
* :mod:`helpers.trace`   -- one traced forward pass with validated accessors.
* :mod:`helpers.rebuild` -- embeddings, self-attention, feed-forward and the encoder by hand.
* :mod:`helpers.analysis` -- layer-to-layer numbers (lessons 04-06).
* :mod:`helpers.classify`, :mod:`helpers.practice`, :mod:`helpers.intents` -- lessons 07-08.
* :mod:`helpers.plots`, :mod:`helpers.analysis_plots`, :mod:`helpers.classify_plots` -- figures.
* :mod:`helpers.widgets` (the :class:`~helpers.widgets.Explorer` base), :mod:`helpers.explorers`,
  :mod:`helpers.analysis_explorers`, :mod:`helpers.classify_widgets` -- interactive explorers.
* :mod:`helpers.exercises` -- exercise checkers with specific feedback.
* :mod:`helpers.offline` -- ``python -m helpers download NAME FOLDER`` for offline workshops.
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
