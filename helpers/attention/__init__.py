"""Lessons 02 and 08: self-attention, by hand and across layers.

* ``rebuild`` -- ``BertSelfAttention`` by hand (Q/K/V, heads, mask, softmax);
* ``compute`` -- attention shares, entropy, previous/next-token heads over cached traces;
  split into ``shares``, ``norms``, ``comparisons`` and ``findings`` (re-exported by ``compute``);
* ``plots`` -- attention heatmaps, shares, layer x head tables, token-to-token lines;
* ``model_view`` -- every layer's and head's attention in one grid (re-exported by ``plots``);
* ``widgets`` -- the head, head-grid and head-lines explorers.
"""
