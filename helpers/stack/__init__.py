"""Lesson 03: feed-forward, residuals, LayerNorm, the whole encoder.

* ``rebuild`` -- attention output, feed-forward, one ``BertLayer`` and the encoder by hand;
* ``compute`` -- parameter counts (on the model and from the config);
* ``plots`` -- the parameter chart.
"""
