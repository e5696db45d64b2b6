"""course-mini's sizes, files and budget (:mod:`helpers.mini`): :data:`MINI` (Turc et al.'s
"BERT-mini": 4 layers x 256 wide, 4 heads, feed-forward 1024), the files of ``data/course_mini/``
(:data:`WEIGHTS`, :data:`RUN`, :data:`EVALUATION`, ...), the fp16 size budget
(:func:`check_budget`, :data:`WEIGHT_BUDGET_MIB`) and the nulls' names (:data:`NULLS`).
"""

from __future__ import annotations

import torch

from helpers.mini.data import MAX_LENGTH, VOCAB_SIZE
from helpers.pretrain.compute import PretrainConfig, bert_config


MINI = PretrainConfig(layers=4, hidden=256, heads=4, intermediate=1024, vocab_size=VOCAB_SIZE, max_length=MAX_LENGTH,
                      batch_size=1024, steps=1, lr=1e-3, warmup=0.05, weight_decay=0.01, dropout=0.1, seed=0)


WEIGHT_BUDGET_MIB = 15.0  # the fp16 safetensors file must fit this (the repository stays small)


FREQUENT_K = 100  # "non-frequent targets": answers outside the K most frequent training tokens


WEIGHTS, LOG, RUN, EVALUATION, CURVE = "model.safetensors", "train_log.jsonl", "run.json", "evaluation.json", \
    "loss_curve.png"


NULLS = {"position_segment": "position-and-segment unigram (null a)", "bigram": "neighbour bigrams (null b)"}


def parameter_count(cfg: PretrainConfig, vocab_size: int | None = None) -> int:
    """Parameters of ``BertForPreTraining`` at ``cfg``'s sizes, the decoder tied to the word
    embeddings (stored once), counted on a model built on the meta device (no memory)."""
    from transformers import BertForPreTraining

    class _Tok:  # bert_config reads only these two
        pad_token_id = 0

        def __len__(self):
            return vocab_size or cfg.vocab_size

    with torch.device("meta"):
        model = BertForPreTraining(bert_config(cfg, _Tok()))
    return sum(p.numel() for p in model.parameters())  # parameters() lists a tied tensor once


def weights_mib(cfg: PretrainConfig = MINI, vocab_size: int | None = None) -> float:
    """Size of the fp16 weights in MiB (2 bytes per parameter, before the small file header)."""
    return parameter_count(cfg, vocab_size) * 2 / 2 ** 20


def check_budget(cfg: PretrainConfig = MINI, vocab_size: int | None = None) -> float:
    size = weights_mib(cfg, vocab_size)
    if size > WEIGHT_BUDGET_MIB:
        raise ValueError(f"{cfg.describe()}: the fp16 weights would take {size:.1f} MiB, over the "
                         f"{WEIGHT_BUDGET_MIB:g} MiB budget; use a smaller vocabulary or width.")
    return size
