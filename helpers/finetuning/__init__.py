"""Fine-tuning (lessons 11 and 14).

* ``compute`` -- ``SentenceClassifier`` and fine-tuning strategies (full, frozen lower half,
  layer-wise learning-rate decay, gradual unfreezing); for lesson 14, what fine-tuning changes
  per layer: linear CKA (Kornblith et al. 2019) and the relative weight change;
* ``plots`` -- CKA and relative weight change per layer (lesson 14).
"""
