"""Fine-tuning (lessons 08 and 10).

* ``compute`` -- ``SentenceClassifier`` and fine-tuning strategies (full, frozen lower half,
  layer-wise learning-rate decay, gradual unfreezing).
"""
