"""Lesson 05: pre-training a tiny BERT (masked-LM + next-sentence prediction) on the course's corpus.
Its job: the pre-training machinery itself -- corpus, vocabulary, pairs, masking, the trainer, the pools
of pairs and the fill-mask nulls (``nulls``) -- which course-mini (:mod:`helpers.mini`) reuses from above.
"""
