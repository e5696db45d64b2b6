"""Model access, used by every lesson.

* ``loading`` -- pick and load a BERT checkpoint (eager attention, eval mode): ``load_model``;
* ``trace`` -- one traced forward pass with validated accessors: ``trace_text``, ``Trace``;
* ``tokens`` -- which positions are words, which word splits most, unknown words;
* ``offline`` -- ``python -m helpers download NAME FOLDER`` for offline workshops;
* ``paths`` -- where the repository, ``data/`` and ``lessons/`` are.
"""
