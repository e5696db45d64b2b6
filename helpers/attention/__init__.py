"""Lessons 02 and 08: self-attention, by hand and across layers.

* ``rebuild`` -- ``BertSelfAttention`` by hand (Q/K/V, heads, mask, softmax);
* ``compute`` -- attention shares, entropy, previous/next-token heads over cached traces;
* ``plots`` -- attention heatmaps, shares, layer x head tables, token-to-token lines;
* ``widgets`` -- the head, head-grid and head-lines explorers.
"""
