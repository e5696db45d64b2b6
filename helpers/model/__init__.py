"""Model access, used by every lesson.

* ``loading`` -- pick and load a BERT checkpoint (eager attention, eval mode) onto one device
  (``$COURSE_DEVICE``, default the CPU): ``load_model``;
* ``trace`` -- one traced forward pass with validated accessors: ``trace_text``, ``Trace``;
  ``model_device`` (where a model's inputs must go);
* ``tokens`` -- which positions are words, which word splits most, unknown words;
* ``offline`` -- ``python -m helpers download NAME FOLDER`` for offline workshops;
* ``paths`` -- where the repository, ``data/`` and ``lessons/`` are.
"""
