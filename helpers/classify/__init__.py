"""Lesson 07: the pooler and a classification head.

* ``rebuild`` -- ``BertPooler`` by hand;
* ``compute`` -- features of every layer, linear heads, probes, layer-combination strategies;
* ``plots`` -- confusion matrix, probe curves, logits;
* ``widgets`` -- the type-a-sentence logits box.
"""
