"""Lesson 01: tokens and the embedding lookup.

* ``rebuild`` -- ``BertEmbeddings`` and LayerNorm by hand, static word vectors;
* ``plots`` -- similarities between static word vectors.
"""
