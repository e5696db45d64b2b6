"""MODEL = "course-mini": the course's own BERT-mini, pre-trained once and shipped in ``data/course_mini/``
(``data``: its corpus split, tokenizer and pair pool; ``compute``: training, evaluation, model card;
``plots``: the loss curves)."""
