"""Lesson 09: from word meaning to meaning in context.

* ``compute`` -- self-similarity, sense separation, nearest neighbours;
* ``plots`` -- per-layer curves and neighbour bars;
* ``widgets`` -- the neighbour explorer.
"""
