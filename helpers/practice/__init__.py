"""Lesson 11: using the layers in practice.

* ``compute`` -- keeping only some hidden states, what a training step holds in memory,
  activation checkpointing, int8 quantization, a feature cache, and honest timing
  (warm-up, runs in turns, median and range);
* ``plots`` -- accuracy against training time, the memory of a training step, float32
  against int8.
"""
