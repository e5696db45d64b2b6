"""Lesson 12: testing the stories by intervention -- ablate, skip, patch, prune.

* ``compute`` -- head gates on the output projection's input (zero- and mean-ablation, Michel et
  al.'s gradient importance), every head ablated in batches from cached hidden states, pruning
  against many random orders, layers skipped, word vectors patched between senses, rank
  correlations with bootstrap intervals, the verdicts and the lesson's claims table;
  one module per method, all re-exported by ``compute``: ``runs``, ``ablation``, ``pruning``,
  ``skipping``, ``patching``, ``outcomes``, ``ranking``, ``findings`` (the gates themselves are
  ``helpers/model/layers.py``, shared with lesson 13 and the parity table);
* ``plots`` -- layer x head maps, importance scatter, pruning curves, skipped layers, patching
  curves;
* ``widgets`` -- the remove-a-head / skip-a-layer explorer.

The attributions of lesson 13 live in ``helpers/attribution``.
"""
