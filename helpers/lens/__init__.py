"""Lesson 14: the masked-LM lens -- BERT's prediction head applied to every layer.

* ``compute`` -- whether a checkpoint carries a trained masked-LM head, the head applied by
  hand (dense, GELU, LayerNorm, tied decoder), the top predictions of every layer at [MASK];
* ``plots`` -- the lens as a layer x rank table of predicted tokens.
"""
