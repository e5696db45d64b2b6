"""Lesson 07: walking through the layers.

* ``compute`` -- a token's vector per layer, norms, cosines, the anisotropy baseline, PCA;
  split into ``measures``, ``baselines``, ``norms``, ``variance`` and ``findings`` (re-exported by
  ``compute``);
* ``plots`` -- norms, layer-to-layer cosines, the PCA trajectory;
* ``widgets`` -- the token/layer explorer.
"""
