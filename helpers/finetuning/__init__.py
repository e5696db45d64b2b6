"""Fine-tuning (lessons 11 and 14). Its job: the fine-tuning strategies, trained by the course's
contract and compared over seeded draws, and what fine-tuning changes per layer.

* ``strategies`` -- ``SentenceClassifier`` and the strategies (frozen probe, full, LP-FT, frozen
  lower half, layer-wise learning-rate decay, gradual unfreezing), one run of each;
* ``study`` -- every strategy over seeded few-shot draws, with a disk cache, and the verdicts;
* ``changes`` -- for lesson 14, linear CKA (Kornblith et al. 2019), the relative weight change and
  the swap-in test;
* ``compute`` -- re-exports all three; ``history`` -- lesson 11's stored sweep;
* ``plots`` -- CKA and relative weight change per layer (lesson 14).
"""
