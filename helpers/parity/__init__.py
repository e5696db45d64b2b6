"""Lesson 12: the course's hand-written interventions beside the libraries researchers use.

* ``compute`` -- one head ablation and one activation patch done with the course's hooks
  (``helpers/interventions/compute.py``), with nnsight and with TransformerLens's
  ``TransformerBridge``, and the course's gradient x input and Integrated Gradients
  (``helpers/attribution/compute.py``, lesson 13) beside Captum's; each pair checked equal with ``torch.allclose`` at a stated tolerance
  (:func:`~helpers.parity.compute.parity_checks`), every gap a library has with BERT printed as
  one line. nnsight and TransformerLens are optional: ``pip install
  "bert-layer-by-layer[research]"``.
"""
