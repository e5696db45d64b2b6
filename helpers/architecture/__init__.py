"""The map of the course: a BERT encoder drawn from the loaded model's config.

* ``plots`` -- :func:`~helpers.architecture.plots.architecture_diagram`: tokens -> embeddings ->
  L x (self-attention, add & LayerNorm, feed-forward, add & LayerNorm) -> pooler -> head, with
  tensor shapes and the course's names, and a "you are here" highlight for each lesson.
"""
