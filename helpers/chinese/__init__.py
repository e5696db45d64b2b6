"""Lesson 15: a Chinese BERT layer by layer.

* ``compute`` -- the Chinese intent set, CJK pre-tokenisation by hand, [CLS] across layers over many
  sentences, word-boundary features and probes (reusing lesson 14's probes and control tasks);
* ``plots`` -- [CLS] across layers with spreads, [CLS] attention per layer.
"""
