"""Lessons 04 and 10: the pooler and a classification head (04), which layer classifies BANKING77 (10).

* ``rebuild`` -- ``BertPooler`` by hand;
* ``compute`` -- features of every layer, linear heads, probes, layer-combination strategies,
  accuracies over seeds with intervals (``SeededAccuracy``) and sentences that compare them;
  ``compute`` holds the features, heads and training contract; ``comparisons``, ``strategies``,
  ``confusions`` and ``findings`` build on it;
* ``plots`` -- confusion matrix, probe curves with interval bands, strategy accuracies,
  learned layer weights, logits;
* ``widgets`` -- the type-a-sentence logits box.
"""
