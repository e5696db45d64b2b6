"""The masked-LM lens on course-mini over many held-out blanks (lesson 14): its own head on every
layer's vector, beside its model card's two guessers without a model.

* :func:`course_mini_lens_by_layer` -> :class:`LensByLayer` -- top-1 per layer with intervals
  (documents resampled), the guessers on the same blanks, and each layer against the
  neighbour-bigram guesser (one family over the layers);
* :func:`held_out_line` -- a line from course-mini's test documents where the lens succeeds, an
  example chosen by a stated rule.

The lens itself (:func:`~helpers.lens.compute.course_mini_lens`, the head by hand) is in
``helpers/lens/compute.py``; this module sits above it and above lesson 05's machinery
(:mod:`helpers.pretrain`), which it reuses.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from helpers.lens.compute import course_mini_lens

# the language course-mini was pre-trained on (Shakespeare and the King James Bible): its lens
# means something for a model of that language only
LANGUAGE = "en"


@dataclass
class LensByLayer:
    """The masked-LM lens of course-mini over held-out blanks (test documents, every scored position
    a real ``[MASK]``): top-1 per layer (``top1``: one Interval per layer, documents resampled),
    the guessers without a model on the same blanks (``nulls``: display name -> top-1), and per
    layer the verdict of layer minus the neighbour-bigram guesser (``versus_bigram``; the layers
    read as one family)."""

    top1: list
    nulls: dict
    versus_bigram: list
    blanks: int
    documents: int


def course_mini_lens_by_layer(n_pairs: int = 400, baseline_pairs: int = 20000) -> LensByLayer:
    """course-mini's own head on every layer's vector at ``n_pairs`` held-out pairs' blanks, with its
    model card's two guessers (position-and-segment unigram; neighbour bigrams at the smoothing the
    card chose on dev documents), fitted on ``baseline_pairs`` training pairs."""
    import numpy as np

    from helpers.common.stats import cluster_bootstrap_ci, family_level, paired_binary_interval, verdict
    from helpers.mini.compute import EVALUATION, baselines, load_pretraining_model
    from helpers.mini.data import held_out, load_tokenizer, splits
    from helpers.model.loading import course_mini_folder
    from helpers.pretrain.compute import score_checkpoint
    from helpers.pretrain.data import encode_documents

    folder = course_mini_folder()
    tok, model = load_tokenizer(folder), load_pretraining_model(folder)
    card = json.loads((Path(folder) / EVALUATION).read_text())
    train, _, test = splits()
    position, bigram, _ = baselines(tok, encode_documents(tok, train), baseline_pairs)
    bigram.lam = card["bigram_lambda"]
    ho = held_out(tok, encode_documents(tok, test), n_pairs)
    lens = score_checkpoint(model, ho).lens  # [blanks, L + 1]
    hits = {"position and segment": (position.topk(ho.position, ho.segment)[:, 0] == ho.answer).astype(float),
            "neighbour bigrams": (bigram.topk(ho.left, ho.right)[:, 0] == ho.answer).astype(float)}
    k = lens.shape[1]
    names = ["embeddings"] + [f"layer {layer}" for layer in range(1, k)]
    versus = [verdict(paired_binary_interval(lens[:, layer], hits["neighbour bigrams"], clusters=ho.document,
                                             level=family_level(k)),
                      a=names[layer], b="neighbour bigrams", family=k, percent=True) for layer in range(k)]
    return LensByLayer(cluster_bootstrap_ci(lens, ho.document), {n: float(h.mean()) for n, h in hits.items()},
                       versus, len(ho), int(len(np.unique(ho.document))))


def held_out_line(seed: int = 0, min_words: int = 8, max_words: int = 20, tries: int = 100) -> str:
    """A line from course-mini's **test** documents (never trained on) of ``min_words`` to
    ``max_words`` words, taken in a seeded order: the first whose hidden word (:func:`mask_one_word`)
    course-mini's head puts first when it reads the last layer. An example of the lens where the
    model succeeds, chosen by that rule; how often it succeeds is :func:`course_mini_lens_by_layer`'s
    number, not this line's."""
    import numpy as np

    from helpers.mini.data import splits

    _, _, test = splits()
    lines = [s for d in test for s in d.sentences if min_words <= len(s.split()) <= max_words]
    order = np.random.default_rng(seed).permutation(len(lines))[:tries]
    for i in order:
        found = course_mini_lens(lines[i])
        if found.lens is not None and found.lens.target_ranks is not None and int(found.lens.target_ranks[-1]) == 1:
            return lines[i]
    raise ValueError(f"none of {len(order)} held-out lines has its hidden word as course-mini's top guess.")
