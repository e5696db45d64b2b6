"""Lesson 14 numbers: the masked-LM lens -- BERT's own prediction head applied to every layer.

``BertForMaskedLM`` ends in ``cls.predictions``: a transform (``dense`` H -> H, the activation
``transform_act_fn`` (GELU), ``LayerNorm``), then a ``decoder`` whose weight is tied to the word
embeddings, plus a bias per vocabulary entry. Training only ever fed it the **last** layer's
hidden state. :func:`masked_lm_lens` feeds it every layer's hidden state at a ``[MASK]``
position instead (the "logit lens" idea of nostalgebraist, 2020, for GPT-2, applied to BERT).

Many checkpoints have no such head (the bundled all-MiniLM-L6-v2 was saved as a bare
``BertModel``): :func:`load_masked_lm` finds out from the checkpoint itself and never hands
back a randomly initialised head.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import torch

from helpers.model.trace import encode, max_input_tokens

# What a real head needs from the checkpoint; the decoder weight is tied to the word embeddings.
HEAD_KEYS = ("cls.predictions.transform.dense.weight", "cls.predictions.transform.dense.bias",
             "cls.predictions.transform.LayerNorm.weight", "cls.predictions.transform.LayerNorm.bias",
             "cls.predictions.bias")


@dataclass(frozen=True)
class HeadCheck:
    """Whether a checkpoint carries trained masked-LM head weights, and how we know."""

    present: bool
    missing: tuple[str, ...]
    stored_keys: tuple[str, ...] | None  # cls.predictions.* names in the local safetensors file(s), if any
    message: str


def checkpoint_keys(path) -> list[str] | None:
    """Tensor names stored in a local checkpoint folder's safetensors file(s); ``None`` when
    ``path`` is not a local folder with safetensors (e.g. a hub name)."""
    folder = Path(path)
    if not folder.is_dir():
        return None
    index = folder / "model.safetensors.index.json"
    if index.exists():
        return sorted(json.loads(index.read_text())["weight_map"])
    single = folder / "model.safetensors"
    if not single.exists():
        return None
    from safetensors import safe_open

    with safe_open(str(single), "pt") as fh:
        return sorted(fh.keys())


def load_masked_lm(path, name: str | None = None, *, device=None):
    """``(BertForMaskedLM or None, HeadCheck)`` for the checkpoint at ``path`` (a folder or a hub name),
    on ``device`` (default: the course's device, :func:`helpers.model.loading.resolve_device`).

    The model is returned only when every weight of ``cls.predictions`` (:data:`HEAD_KEYS`)
    was in the checkpoint -- not when transformers had to initialise it at random. ``name``
    is how the message calls the checkpoint (e.g. ``load_model``'s choice), so that it names
    the model rather than a folder of this machine; the default is ``path`` itself."""
    from transformers import BertForMaskedLM
    from transformers.utils import logging as hf_logging

    from helpers.model.loading import resolve_device

    if not isinstance(path, (str, os.PathLike)) or not str(path).strip():
        raise ValueError(f"path must name a checkpoint folder or hub id, got {path!r} "
                         "(a loaded model's folder is model.name_or_path).")
    previous = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # the "newly initialized weights" warning is what we check ourselves
    hf_logging.disable_progress_bar()
    try:
        mlm, info = BertForMaskedLM.from_pretrained(str(path), attn_implementation="eager", use_safetensors=True,
                                                    output_loading_info=True)
    finally:
        hf_logging.set_verbosity(previous)
        hf_logging.enable_progress_bar()
    missing = tuple(k for k in HEAD_KEYS if k in set(info["missing_keys"]))
    stored = checkpoint_keys(path)
    stored_head = None if stored is None else tuple(k for k in stored if k.startswith("cls.predictions"))
    if stored_head is not None and not stored_head and not missing:
        missing = HEAD_KEYS  # belt and braces: the file itself has no head tensors
    if missing:
        where = "" if stored_head is None else " (its safetensors file stores no cls.predictions.* tensor)" \
            if not stored_head else f" (its safetensors file stores only {list(stored_head)})"
        message = (f"{name or path} has no trained masked-LM head:\n  {len(missing)} of the {len(HEAD_KEYS)} weights of "
                   f"cls.predictions are missing from the checkpoint{where},\n  so the lens has nothing real to apply.")
        return None, HeadCheck(False, missing, stored_head, message)
    mlm.eval().to(resolve_device(device))
    return mlm, HeadCheck(True, (), stored_head, f"{name or path} has a trained masked-LM head (every cls.predictions weight "
                                                 "was in the checkpoint).")


def apply_head(mlm, hidden: torch.Tensor) -> torch.Tensor:
    """``cls.predictions`` step by step: ``LayerNorm(act(dense(h))) @ E^T + b`` with ``E`` the
    (tied) word-embedding matrix. ``hidden`` is ``[..., H]``; returns ``[..., vocab]`` logits."""
    head = mlm.cls.predictions
    z = head.transform.LayerNorm(head.transform.transform_act_fn(head.transform.dense(hidden)))
    return z @ head.decoder.weight.T + head.decoder.bias


def mask_one_word(tokenizer, model, text: str) -> tuple[str, str]:
    """``(text with one word replaced by the mask token, that word)``. The word is one that the
    tokenizer keeps as a single WordPiece, made of letters (at least four when there is such a
    word, to skip "a", "the", "at"), nearest the middle of the part of ``text`` the model reads
    (inputs past the maximum length are cut there)."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"text must be a non-empty string, got {text!r}.")
    enc = tokenizer(text, truncation=True, max_length=max_input_tokens(tokenizer, model), return_offsets_mapping=True)
    spans: dict[int, list[tuple[int, int]]] = {}
    for wid, span in zip(enc.word_ids(), enc["offset_mapping"]):
        if wid is not None:
            spans.setdefault(wid, []).append(tuple(span))
    if not spans:
        raise ValueError(f"text {text!r} has no word to mask.")
    words = [(pieces[0][0], pieces[-1][1], len(pieces)) for _, pieces in sorted(spans.items())]
    middle = (len(words) - 1) / 2
    single = [k for k, (a, b, n) in enumerate(words) if n == 1 and text[a:b].isalpha()]
    candidates = [k for k in single if words[k][1] - words[k][0] >= 4] or single or list(range(len(words)))
    k = min(candidates, key=lambda i: (abs(i - middle), i))
    a, b, _ = words[k]
    return text[:a] + tokenizer.mask_token + text[b:], text[a:b]


@dataclass
class LensResult:
    """The lens at one ``[MASK]`` position: for every layer ``0..L`` the ``top_k`` tokens and
    their probabilities; ``target_*`` follow one given word (when it is a single token)."""

    tokens: list[str]
    mask_position: int
    logits: torch.Tensor  # [L+1, vocab] the head applied to every layer
    model_logits: torch.Tensor  # [vocab] what BertForMaskedLM itself predicts
    top_tokens: list[list[str]]
    top_probs: torch.Tensor  # [L+1, k]
    target: str | None
    target_probs: torch.Tensor | None  # [L+1]
    target_ranks: torch.Tensor | None  # [L+1], 1 = the top prediction


def masked_lm_lens(tokenizer, mlm, text: str, *, target: str | None = None, top_k: int = 5) -> LensResult:
    """Run ``text`` (holding the mask token) once and apply the head to every layer's hidden
    state at the first mask position."""
    if tokenizer.mask_token is None:
        raise ValueError("this tokenizer has no mask token: the masked-LM lens needs one.")
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
        raise ValueError(f"top_k must be a positive int, got {top_k!r}.")
    enc, _ = encode(tokenizer, mlm, text)  # truncates with the course's warning
    enc.pop("offset_mapping", None)
    ids = enc["input_ids"][0]
    where = (ids == tokenizer.mask_token_id).nonzero().flatten()
    if not len(where):
        raise ValueError(f"text must contain {tokenizer.mask_token} within the model's first "
                         f"{max_input_tokens(tokenizer, mlm)} tokens, e.g. 'The {tokenizer.mask_token} barked.'")
    pos = int(where[0])
    with torch.no_grad():
        out = mlm(**enc, output_hidden_states=True, return_dict=True)
        hidden = torch.stack(out.hidden_states)[:, 0, pos]  # [L+1, H]
        logits = apply_head(mlm, hidden)
    probs = logits.softmax(-1)
    top = probs.topk(min(top_k, probs.shape[-1]), dim=-1)
    tokens = [tokenizer.convert_ids_to_tokens(row.tolist()) for row in top.indices]
    target_probs = target_ranks = None
    if target is not None:
        target_ids = tokenizer(target, add_special_tokens=False)["input_ids"]
        if len(target_ids) == 1:
            t = target_ids[0]
            target_probs = probs[:, t]
            target_ranks = (probs > probs[:, t:t + 1]).sum(-1) + 1
    return LensResult(tokenizer.convert_ids_to_tokens(ids.tolist()), pos, logits, out.logits[0, pos], tokens,
                      top.values, target, target_probs, target_ranks)


@dataclass
class TinyLens:
    """:func:`course_tiny_lens`: the lens on ``MODEL = "course-tiny"`` (lesson 05's tiny BERT), or
    only a message saying that there is none on this machine yet."""

    message: str
    lens: LensResult | None = None
    masked: str | None = None
    word: str | None = None


def _lens_on_folder(folder, name: str, text: str, top_k: int, describe) -> TinyLens:
    """Mask one word of ``text`` and run the masked-LM lens on the checkpoint in ``folder``;
    ``describe(config)`` names the model and its training for the message."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    mlm, head = load_masked_lm(str(folder), name=name)
    if mlm is None:
        return TinyLens(head.message)
    cfg = mlm.config
    masked, word = mask_one_word(tokenizer, mlm, text)
    lens = masked_lm_lens(tokenizer, mlm, masked, target=word.lower(), top_k=top_k)
    rank = "" if lens.target_ranks is None else f"; the hidden word's rank: {int(lens.target_ranks[-1])} of {cfg.vocab_size:,}"
    message = (f"{name}: {describe(cfg)}.\n  hidden {word!r}: its top {top_k} guesses {lens.top_tokens[-1]}{rank}")
    return TinyLens(message, lens, masked, word)


def course_tiny_lens(text: str, top_k: int = 5) -> TinyLens:
    """Mask one word of ``text`` (:func:`mask_one_word`) and run the masked-LM lens on the tiny BERT
    that lesson 05 pre-trained and saved as ``course-tiny``. When lesson 05 has not been run here,
    the result holds only a message saying how to get it; nothing is trained or downloaded."""
    from helpers.model.paths import COURSE_TINY_LESSON, course_tiny_path, course_tiny_pointer

    folder = course_tiny_path()
    if folder is None:
        return TinyLens(f"No course-tiny checkpoint on this machine: run {COURSE_TINY_LESSON} (about 5 minutes on a "
                        "CPU) to pre-train a tiny BERT with a trained masked-LM head, then rerun this cell.")
    info = json.loads(course_tiny_pointer().read_text())
    return _lens_on_folder(folder, "course-tiny", text, top_k, lambda cfg: (
        f"the tiny BERT of lesson 05 ({cfg.num_hidden_layers} layers x {cfg.hidden_size}, vocabulary "
        f"{cfg.vocab_size:,}, {info['steps']} pre-training steps on Shakespeare and the King James Bible: minutes "
        "of training, not BERT-base)"))


def course_mini_lens(text: str, top_k: int = 5) -> TinyLens:
    """:func:`course_tiny_lens` on ``MODEL = "course-mini"``, the course's own BERT-mini shipped in
    ``data/course_mini/`` (:mod:`helpers.mini.compute`): a checkpoint with a trained
    masked-LM head that is always there offline, for a lesson whose own model has none. The
    message names the model and its training from its files (config, ``run.json``)."""
    from helpers.model.loading import course_mini_folder

    folder = course_mini_folder()
    run = json.loads((folder / "run.json").read_text())
    return _lens_on_folder(folder, "course-mini", text, top_k, lambda cfg: (
        f"the course's own BERT ({cfg.num_hidden_layers} layers x {cfg.hidden_size}, vocabulary "
        f"{cfg.vocab_size:,}, {run['steps_done']:,} pre-training steps, {run['tokens_seen'] / 1e9:.2f} B "
        "tokens seen in training, many passes over Shakespeare and the King James Bible: not BERT-base)"))
