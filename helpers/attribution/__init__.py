"""Lesson 13: which input tokens drove one decision, and is the answer faithful?

* ``compute`` -- raw attention, attention rollout, norm-based attention, gradient x input,
  Integrated Gradients (Captum, with its completeness check and a by-hand version), occlusion and
  value zeroing; ERASER's comprehensiveness and sufficiency against random rankings, read as one
  Bonferroni family over the methods; the lesson's claims table;
  ``compute`` holds the scores of one decision and re-exports ``gradients`` (Integrated
  Gradients); ``erasure`` (ERASER) and ``findings`` build on it;
* ``plots`` -- attributions side by side, deletion curves, token-mixing maps;
* ``highlight`` -- attribution shown as highlighted text, one row per method, with its colour key.
"""
