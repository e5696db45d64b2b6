"""Lesson 05: pre-training a tiny BERT (masked-LM + next-sentence prediction) on the course's corpus."""
