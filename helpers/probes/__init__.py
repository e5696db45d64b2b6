"""Lesson 14: what each layer knows -- word-level probes with control tasks.

* ``compute`` -- first-WordPiece word features of every layer, the control task of Hewitt &
  Liang (2019), batched linear probes per layer, accuracy / control / selectivity with
  bootstrap intervals over test sentences, the popular layer table scaled to any depth;
  split into ``features``, ``probing`` and ``findings`` (re-exported by ``compute``);
* ``plots`` -- accuracy, control and selectivity per layer with interval bands.
"""
