"""Lesson 08: using the layers in practice.

* ``compute`` -- keeping only some hidden states, activation checkpointing, int8
  quantization, a feature cache.
"""
