"""Lesson 11: using the layers in practice. Its job: what training and running BERT costs and how to
measure it honestly, whatever the strategy (the fine-tuning strategies themselves are
:mod:`helpers.finetuning`'s job; this package sits above it).

* ``compute`` -- keeping only some hidden states, what a training step holds in memory,
  activation checkpointing, int8 quantization, a feature cache, and honest timing
  (warm-up, runs in turns, median and range);
* ``findings`` -- the lesson's tables and printouts from those numbers;
* ``plots`` -- accuracy against training time, the memory of a training step, float32
  against int8.
"""
