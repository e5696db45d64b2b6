"""MODEL = "course-mini": the course's own BERT-mini, pre-trained once and shipped in ``data/course_mini/``.
Its job: build, judge and describe that one checkpoint, on lesson 05's machinery (:mod:`helpers.pretrain`,
which never imports this package).

* ``data`` -- its corpus split, committed tokenizer, dev batch and held-out batch;
* ``config`` -- its sizes, files and fp16 size budget;
* ``compute`` -- training and evaluation (and the command line); ``card`` -- the model card;
* ``lens`` -- the masked-LM lens of course-mini over held-out blanks (lesson 14);
* ``plots`` -- the loss curves.
"""
