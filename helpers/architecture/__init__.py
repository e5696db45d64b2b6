"""The map of the course: a BERT encoder drawn from the loaded model's config.

* ``plots`` -- :func:`~helpers.architecture.plots.architecture_diagram`: the encoder as token
  lanes, bottom to top (word + position + segment embeddings summed per lane, a residual stream
  per lane, self-attention the only place lanes exchange information, the multi-head fan-out,
  the feed-forward per lane, "× L", pooler and head on [CLS]), with tensor shapes and code names
  in columns and a "you are here" highlight; :func:`~helpers.architecture.plots.you_are_here`:
  the one-row strip each lesson shows at its top.
"""
