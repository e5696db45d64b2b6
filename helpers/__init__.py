"""Helper package for the "BERT, layer by layer" course.

One package per topic; inside a topic, modules always split the same way, so a concept's
numbers, its figure and its widget are one hop from the topic's name:

* ``rebuild``  -- the maths by hand, mirroring ``modeling_bert.py``, checked against the model;
* ``compute``  -- measurements over cached traces or features (nothing here draws);
* ``plots``    -- figures: each function takes data and returns its axes (or artists);
* ``widgets``  -- explorers (:class:`helpers.common.explorer.Explorer` subclasses).

A topic has only the modules it needs; a big ``compute`` is split into modules named after the
methods a lesson teaches (each under 600 lines). Packages sit in layers and import only from
lower ones, without circles (the order: ``helpers/README.md``, "The layers"). Two packages serve
every topic:
:mod:`helpers.model` (loading, the traced forward pass, tokens, offline download, paths) and
:mod:`helpers.common` (explorer base, figure style, statistics, data loaders, argument checks).
Exercise checkers are in :mod:`helpers.exercises` (``lessonNN.py``).

The map -- topic, lessons, modules, tests -- is in ``helpers/README.md``. Lessons import from
the modules themselves, e.g. ``from helpers.model.loading import load_model`` and
``from helpers.attention.plots import attention_heatmap``.
"""
