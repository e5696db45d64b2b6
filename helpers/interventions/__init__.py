"""Lesson 09: testing the stories by intervention -- ablate, skip, patch, attribute.

* ``compute`` -- head gates on the output projection's input (ablation, Michel et al.'s
  gradient importance), every head ablated in batches from cached hidden states, layers
  skipped, word vectors patched between senses, attributions (raw attention, rollout,
  gradient x input, occlusion), rank correlations with bootstrap intervals;
* ``plots`` -- layer x head maps, importance scatter, skipped layers, patching curves,
  attributions side by side;
* ``widgets`` -- the remove-a-head / skip-a-layer explorer.
"""
