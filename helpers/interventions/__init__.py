"""Lesson 12: testing the stories by intervention -- ablate, skip, patch, prune.

* ``compute`` -- head gates on the output projection's input (zero- and mean-ablation, Michel et
  al.'s gradient importance), every head ablated in batches from cached hidden states, pruning
  against many random orders, layers skipped, word vectors patched between senses, rank
  correlations with bootstrap intervals, the verdicts and the lesson's claims table;
* ``plots`` -- layer x head maps, importance scatter, pruning curves, skipped layers, patching
  curves;
* ``widgets`` -- the remove-a-head / skip-a-layer explorer.

The attributions of lesson 13 live in ``helpers/attribution``.
"""
