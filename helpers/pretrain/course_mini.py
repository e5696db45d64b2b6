"""``MODEL = "course-mini"``: the course's own BERT-mini, pre-trained once with BERT's two objectives
on the public-domain corpus of ``data/pretrain/`` and shipped in ``data/course_mini/``.

    python -m helpers.pretrain.course_mini vocab      # learn the WordPiece vocabulary (training split)
    python -m helpers.pretrain.course_mini train      # pre-train (GPU if present; resumable on a CPU)
    python -m helpers.pretrain.course_mini evaluate   # held-out fill-mask against two nulls (seeded)
    python -m helpers.pretrain.course_mini card       # data/course_mini/README.md from the files above

Everything reuses lesson 12's machinery (:mod:`helpers.pretrain.data` and
:mod:`helpers.pretrain.compute`): the corpus split by document, the WordPiece trainer, the
next-sentence pairs of :class:`~helpers.pretrain.data.PairSampler`, BERT's 15 % / 80-10-10
masking (:func:`~helpers.pretrain.data.mask_tokens`), :class:`~helpers.pretrain.compute.PretrainConfig`,
the seeded model, the loss and the AdamW recipe. What is new here is the scale:

* **Size**: Turc et al. (2019, "Well-Read Students Learn Better") call 4 layers x 256 wide, 4 heads,
  feed-forward 1024 "BERT-mini". :data:`MINI` keeps those sizes and a vocabulary of 8,192 WordPieces
  learnt on the training split (see ``data/course_mini/README.md`` for why not more: this corpus
  has about 2 M tokens); :func:`weights_mib` checks the fp16 file against :data:`WEIGHT_BUDGET_MIB`.
* **Data pipeline**: a *pool* of next-sentence pairs (:func:`make_pool`, drawn once from
  ``PairSampler`` in seeded chunks, several processes at once), packed into fixed-width arrays that
  live on the training device; every step draws rows from the pool and masks them afresh on that
  device (:func:`pool_batch`, :func:`mask_tokens` without a generator): no Python loop per example.
* **Training** (:func:`train`): on the GPU when there is one (bf16 autocast), else on the CPU in
  resumable chunks (``--resume``: model, optimizer, schedule, random states and step are saved);
  a fixed wall-clock budget (``--minutes``) sets the number of steps from a short timing run;
  the dev split (never the test split) is scored at step 0 and on a timer, and the weights with the
  lowest dev masked-LM loss are the ones written.
* **Evaluation** (:func:`evaluate`): held-out *test documents*, every scored position a real
  ``[MASK]``; top-1 / top-5 of the model against (a) :class:`PositionSegmentUnigram` -- the most
  frequent training token at that position bucket and segment, all that the embeddings can know
  at a ``[MASK]`` -- and (b) :class:`BigramContext` -- the bigram statistics of the unmasked
  neighbours, smoothing chosen on the dev split; 95 % intervals from a bootstrap that resamples
  documents (:func:`helpers.common.stats.cluster_bootstrap_ci`).
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import math
import os
import platform
import sys
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np
import torch

from helpers.model.paths import COURSE_MINI, COURSE_MINI_DIR, course_cache
from helpers.pretrain.compute import PretrainConfig, _optimizer, bert_config, losses, new_model
from helpers.pretrain.data import (IGNORE, IS_NEXT, PairSampler, corpus_hash, encode_documents, load_corpus,
                                   mask_tokens, split_documents, vocabulary_hash)

MINI = PretrainConfig(layers=4, hidden=256, heads=4, intermediate=1024, vocab_size=8192, max_length=128,
                      batch_size=1024, steps=1, lr=1e-3, warmup=0.05, weight_decay=0.01, dropout=0.1, seed=0)
WEIGHT_BUDGET_MIB = 15.0  # the fp16 safetensors file must fit this (the repository stays small)
TEST_SHARE, DEV_SHARE, SPLIT_SEED = 0.10, 0.05, 0  # shares of all documents; whole documents
EVAL_SEED = 2024
POSITION_BUCKET = 4  # the position/segment null groups positions 0-3, 4-7, ...
FREQUENT_K = 100  # "non-frequent targets": answers outside the K most frequent training tokens
WEIGHTS, LOG, RUN, EVALUATION, CURVE = "model.safetensors", "train_log.jsonl", "run.json", "evaluation.json", \
    "loss_curve.png"


# ----------------------------------------------------------------------------- data
def splits(seed: int = SPLIT_SEED):
    """``(train, dev, test)`` documents of the whole corpus: :data:`TEST_SHARE` of the documents
    held out for the model card, :data:`DEV_SHARE` for choosing (the checkpoint, the null's
    smoothing), the rest for training. Whole documents, so no held-out sentence's scene or
    chapter was seen in training."""
    rest, test = split_documents(load_corpus(), TEST_SHARE, seed=seed)
    train, dev = split_documents(rest, DEV_SHARE / (1 - TEST_SHARE), seed=seed + 1)
    return train, dev, test


def load_tokenizer(folder: Path | str = COURSE_MINI_DIR):
    """The committed lower-casing WordPiece tokenizer of course-mini."""
    from transformers import BertTokenizerFast

    folder = Path(folder)
    if not (folder / "tokenizer.json").exists():
        raise FileNotFoundError(f"no tokenizer in {folder}: run `python -m helpers.pretrain.course_mini vocab` "
                                "(it learns the vocabulary on the training split and saves it there).")
    return BertTokenizerFast.from_pretrained(str(folder))


def build_vocabulary(folder: Path | str = COURSE_MINI_DIR, cfg: PretrainConfig = MINI):
    """Learn the WordPiece vocabulary on the **training** documents only and save it to ``folder``.
    Run once: the trainer may break ties differently in another process, so the committed files,
    not a rerun, define course-mini's tokens."""
    from helpers.pretrain.data import _learn_wordpiece

    train, _, _ = splits()
    tok = _learn_wordpiece(train, cfg.vocab_size, cfg.max_length)
    Path(folder).mkdir(parents=True, exist_ok=True)
    tok.save_pretrained(str(folder))
    vocab = tok.get_vocab()  # vocab.txt too (one WordPiece a line, in id order): BERT's classic format
    (Path(folder) / "vocab.txt").write_text("".join(t + "\n" for t in sorted(vocab, key=vocab.get)), encoding="utf-8")
    return tok


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


@dataclass
class PairPool:
    """Next-sentence pairs packed into fixed-width arrays: ``ids`` ``[N, width]`` ([CLS] A [SEP] B
    [SEP], then padding), the lengths of A and of the whole pair, the label, and the documents
    (indices into the sampler's documents) that A and B come from."""

    ids: np.ndarray
    len_a: np.ndarray
    length: np.ndarray
    label: np.ndarray
    doc_a: np.ndarray
    doc_b: np.ndarray

    def __len__(self) -> int:
        return len(self.ids)

    def tensors(self, device) -> dict[str, torch.Tensor]:
        """The pool on ``device`` (ids as int32: half the memory of int64)."""
        return {k: torch.from_numpy(getattr(self, k)).to(device)  # cpu: numpy arrays, then moved
                for k in ("ids", "len_a", "length", "label")}


_POOL_ARGS: dict = {}  # what forked pool workers read (set before the processes start)


def _pool_chunk(index: int, size: int) -> PairPool:
    a = _POOL_ARGS
    sampler = PairSampler(a["encoded"], a["tokenizer"], a["max_length"], seed=a["seed"] * 1_000_003 + index)
    rows = [sampler.pair_with_documents() for _ in range(size)]
    ids = np.full((size, a["max_length"]), a["pad"], dtype=np.int32)
    for i, (sa, sb, *_r) in enumerate(rows):
        seq = [a["cls"], *sa, a["sep"], *sb, a["sep"]]
        ids[i, :len(seq)] = seq
    len_a = np.array([len(r[0]) for r in rows], dtype=np.int32)
    length = len_a + np.array([len(r[1]) for r in rows], dtype=np.int32) + 3
    label, doc_a, doc_b = (np.array([r[k] for r in rows], dtype=np.int32) for k in (2, 3, 4))
    return PairPool(ids, len_a, length, label, doc_a, doc_b)


def make_pool(encoded, tokenizer, n: int, max_length: int, seed: int, *, workers: int = 1,
              chunk: int = 32768) -> PairPool:
    """``n`` next-sentence pairs from ``encoded`` documents, drawn by :class:`PairSampler` in chunks
    of ``chunk`` pairs, chunk ``c`` seeded by ``(seed, c)``: the same pool for any ``workers``."""
    from concurrent.futures import ProcessPoolExecutor
    import multiprocessing

    for name, value in (("n", n), ("workers", workers), ("chunk", chunk)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive int, got {value!r}.")
    _POOL_ARGS.update(encoded=encoded, tokenizer=tokenizer, max_length=max_length, seed=seed,
                      pad=tokenizer.pad_token_id, cls=tokenizer.cls_token_id, sep=tokenizer.sep_token_id)
    sizes = [min(chunk, n - start) for start in range(0, n, chunk)]
    if workers > 1 and len(sizes) > 1:
        ctx = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(min(workers, len(sizes)), mp_context=ctx) as ex:
            parts = list(ex.map(_pool_chunk, range(len(sizes)), sizes))
    else:
        parts = [_pool_chunk(i, s) for i, s in enumerate(sizes)]
    return PairPool(*(np.concatenate([getattr(p, k) for p in parts]) for k in
                      ("ids", "len_a", "length", "label", "doc_a", "doc_b")))


def pool_batch(pool: dict[str, torch.Tensor], rows: torch.Tensor, pad_id: int) -> dict[str, torch.Tensor]:
    """The pairs ``rows`` of a pool on the device (:meth:`PairPool.tensors`) as a BERT batch:
    input_ids, token_type_ids (1 from B's first token to its [SEP]), attention_mask,
    special_tokens_mask ([CLS], both [SEP] and padding) and next_sentence_label."""
    ids = pool["ids"][rows].long()
    len_a, length = pool["len_a"][rows, None].long(), pool["length"][rows, None].long()
    pos = torch.arange(ids.shape[1], device=ids.device)[None]
    real = pos < length
    in_a = (pos >= 1) & (pos <= len_a)
    in_b = (pos >= len_a + 2) & (pos < length - 1)
    return {"input_ids": ids, "token_type_ids": ((pos >= len_a + 2) & real).long(), "attention_mask": real.long(),
            "special_tokens_mask": ~(in_a | in_b), "next_sentence_label": pool["label"][rows].long()}


# ----------------------------------------------------------------------------- training
def pick_device(name: str | None = None) -> torch.device:
    """``name`` checked by :func:`helpers.model.loading.resolve_device`, else a GPU when there is
    one, else the CPU."""
    from helpers.model.loading import resolve_device

    if name:
        return resolve_device(name)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def _lr(group_lr: float, step: int, total: int, warmup: int) -> float:
    if step < warmup:
        return group_lr * (step + 1) / warmup
    return group_lr * max(0.0, (total - step) / max(1, total - warmup))


@torch.no_grad()
def dev_losses(model, dev: dict, autocast) -> dict[str, float]:
    """Masked-LM and next-sentence loss, and masked-LM top-1, on the fixed dev batch (masked once,
    80/10/10, seeded), in slices of 512 pairs."""
    model.eval()
    tot = {"mlm": 0.0, "nsp": 0.0, "top1": 0.0}
    n_pos = n_pairs = 0
    for start in range(0, len(dev["input_ids"]), 512):
        part = {k: v[start:start + 512] for k, v in dev.items()}
        with autocast():
            out = model.bert(input_ids=part["inputs"], token_type_ids=part["token_type_ids"],
                             attention_mask=part["attention_mask"])
            where = part["labels"] != IGNORE
            logits = model.cls.predictions(out.last_hidden_state[where]).float()
            nsp = model.cls.seq_relationship(out.pooler_output).float()
        answers = part["labels"][where]
        tot["mlm"] += float(torch.nn.functional.cross_entropy(logits, answers, reduction="sum"))
        tot["top1"] += float((logits.argmax(-1) == answers).sum())
        tot["nsp"] += float(torch.nn.functional.cross_entropy(nsp, part["next_sentence_label"], reduction="sum"))
        n_pos += int(where.sum())
        n_pairs += len(part["input_ids"])
    model.train()
    return {"dev_mlm_loss": tot["mlm"] / n_pos, "dev_nsp_loss": tot["nsp"] / n_pairs, "dev_top1": tot["top1"] / n_pos}


def dev_batch(tokenizer, encoded_dev, n_pairs: int, max_length: int, device, seed: int = EVAL_SEED) -> dict:
    """A fixed dev batch: ``n_pairs`` pairs from dev documents, masked once like training (15 %,
    80/10/10) with a seeded CPU generator."""
    pool = make_pool(encoded_dev, tokenizer, n_pairs, max_length, seed)
    batch = pool_batch(pool.tensors("cpu"), torch.arange(len(pool)), tokenizer.pad_token_id)  # cpu: built once
    inputs, labels = mask_tokens(batch["input_ids"], batch["special_tokens_mask"], mask_token_id=tokenizer.mask_token_id,
                                 vocab_size=len(tokenizer), generator=torch.Generator().manual_seed(seed))
    return {k: v.to(device) for k, v in {**batch, "inputs": inputs, "labels": labels}.items()}


def save_weights(model, template, folder: Path) -> str:
    """Write ``model``'s weights as fp16 safetensors + config.json into ``folder`` (through a CPU
    ``template`` of the same architecture) and return the weights' sha256. The config keeps
    ``dtype: float32``, so ``from_pretrained`` hands back a float32 model."""
    from transformers.utils import logging as hf_logging

    template.load_state_dict({k: v.detach().to("cpu", torch.float32) for k, v in model.state_dict().items()})
    half = copy.deepcopy(template).half()
    folder.mkdir(parents=True, exist_ok=True)
    hf_logging.disable_progress_bar()
    try:
        half.save_pretrained(str(folder), safe_serialization=True)
    finally:
        hf_logging.enable_progress_bar()
    config = json.loads((folder / "config.json").read_text())
    config.pop("torch_dtype", None)
    config["dtype"] = "float32"
    (folder / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
    return hashlib.sha256((folder / WEIGHTS).read_bytes()).hexdigest()


def _state_path(state_dir: Path) -> Path:
    return state_dir / "state.pt"


def _save_state(state_dir: Path, **state) -> None:
    state_dir.mkdir(parents=True, exist_ok=True)
    tmp = state_dir / f"state.pt.{os.getpid()}.part"
    torch.save(state, tmp)
    tmp.replace(_state_path(state_dir))  # atomic: a chunk stopped mid-save leaves the last good state


def _autocast(device: torch.device):
    if device.type == "cuda":
        return lambda: torch.autocast("cuda", dtype=torch.bfloat16)
    import contextlib

    return contextlib.nullcontext


def train(*, out: Path, state_dir: Path, steps: int | None = None, minutes: float | None = None,
          max_seconds: float | None = None, resume: bool = False, device: str | None = None,
          batch_size: int = MINI.batch_size, lr: float = MINI.lr, seed: int = MINI.seed, pool_pairs: int = 1 << 20,
          dev_pairs: int = 2048, workers: int = 1, log_every: int = 50, eval_seconds: float = 30.0,
          save_seconds: float = 120.0, tokenizer_dir: Path = COURSE_MINI_DIR) -> dict:
    """Pre-train course-mini (masked-LM + next-sentence, BERT's recipe at this scale) and write the
    dev-best fp16 weights, config.json, the log (JSON lines) and run.json into ``out``.

    ``steps`` fixes the number of steps of the schedule (warm-up, then linear decay to 0);
    ``minutes`` instead sets it from a short timing run so that training ends after about that
    many minutes. ``max_seconds`` stops this call early (a chunk on a CPU): the full state is
    saved in ``state_dir`` and ``resume=True`` carries on from it with the same schedule."""
    if (steps is None) == (minutes is None) and not resume:
        raise ValueError("give exactly one of steps (a fixed schedule) or minutes (a wall-clock budget).")
    dev = pick_device(device)
    autocast = _autocast(dev)
    tok = load_tokenizer(tokenizer_dir)
    cfg = replace(MINI, batch_size=batch_size, lr=lr, seed=seed, vocab_size=len(tok))
    check_budget(cfg)
    t_setup = time.perf_counter()
    train_docs, dev_docs, _ = splits()
    enc_train, enc_dev = encode_documents(tok, train_docs), encode_documents(tok, dev_docs)
    state_file = _state_path(state_dir)
    saved = None
    if resume:
        if not state_file.exists():
            raise FileNotFoundError(f"--resume: no saved state in {state_dir} (start without --resume).")
        saved = torch.load(state_file, map_location="cpu", weights_only=False)
        for key in ("batch_size", "lr", "seed", "pool_pairs"):
            if saved["settings"][key] != {"batch_size": batch_size, "lr": lr, "seed": seed,
                                          "pool_pairs": pool_pairs}[key]:
                raise ValueError(f"--resume with {key}={locals()[key]!r}, but the saved run used "
                                 f"{saved['settings'][key]!r}: use the same settings to resume.")
    pool = make_pool(enc_train, tok, pool_pairs, cfg.max_length, seed, workers=workers)
    pool_t = pool.tensors(dev)
    devb = dev_batch(tok, enc_dev, dev_pairs, cfg.max_length, dev)
    setup_seconds = time.perf_counter() - t_setup
    model = new_model(cfg, tok).to(dev).train()
    attn = os.environ.get("COURSE_MINI_TRAIN_ATTN", "sdpa")  # training needs no attention weights
    if attn != "eager":
        try:
            model.set_attn_implementation(attn)  # the saved config names none: loaders ask for eager
        except (AttributeError, ValueError, ImportError) as err:
            print(f"training with eager attention ({attn!r} not available: {err})", flush=True)
    template = new_model(cfg, tok)

    def one_step(m, o, step, total, warmup):
        for g in o.param_groups:
            g["lr"] = _lr(cfg.lr, step, total, warmup)
        rows = torch.randint(len(pool), (cfg.batch_size,), device=dev)
        batch = pool_batch(pool_t, rows, tok.pad_token_id)
        inputs, labels = mask_tokens(batch["input_ids"], batch["special_tokens_mask"],
                                     mask_token_id=tok.mask_token_id, vocab_size=len(tok))
        with autocast():
            mlm, nsp = losses(m, batch, inputs, labels)
        o.zero_grad(set_to_none=True)
        (mlm + nsp).backward()
        torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
        o.step()
        return mlm.detach(), nsp.detach(), batch["attention_mask"].sum()

    if saved is None:
        if minutes is not None:  # time a throw-away copy: steps per second on this device and pipeline
            probe = copy.deepcopy(model)
            popt, _ = _optimizer(probe, cfg, 10)
            for i in range(25):
                if i == 5:
                    if dev.type == "cuda":
                        torch.cuda.synchronize()
                    t0 = time.perf_counter()
                one_step(probe, popt, 1, 100, 1)
            if dev.type == "cuda":
                torch.cuda.synchronize()
            per_step = (time.perf_counter() - t0) / 20
            del probe, popt
            steps = max(10, int(minutes * 60 / per_step * 0.92))  # the rest: dev scoring and saving
        torch.manual_seed(seed)  # the training draws start from the seed, whatever the timing run drew
        step, tokens, elapsed, best = 0, 0, 0.0, None
        total = int(steps)
        opt, _ = _optimizer(model, replace(cfg, steps=total), total)
        log_lines = []
    else:
        model.load_state_dict(saved["model"])
        opt, _ = _optimizer(model, cfg, saved["total"])
        opt.load_state_dict(saved["optimizer"])
        torch.set_rng_state(saved["cpu_rng"])
        if dev.type == "cuda" and saved.get("cuda_rng") is not None:
            torch.cuda.set_rng_state(saved["cuda_rng"])
        step, tokens, elapsed, best, total = (saved[k] for k in ("step", "tokens", "elapsed", "best", "total"))
        log_lines = list(saved["log"])
    warmup = max(1, int(cfg.warmup * total))
    out.mkdir(parents=True, exist_ok=True)
    log_path = out / LOG
    log_path.write_text("".join(json.dumps(x) + "\n" for x in log_lines))

    def log(entry):
        log_lines.append(entry)
        with log_path.open("a") as fh:
            fh.write(json.dumps(entry) + "\n")
        print(json.dumps(entry), flush=True)

    def score_dev():
        nonlocal best
        scores = dev_losses(model, devb, autocast)
        log({"step": step, "tokens": tokens, "seconds": round(elapsed, 1), **{k: round(v, 4) for k, v in scores.items()}})
        if best is None or scores["dev_mlm_loss"] < best["dev_mlm_loss"]:
            best = {"step": step, **scores}
            sha = save_weights(model, template, out)
            best["weights_sha256"] = sha
        write_run()

    def write_run():
        info = {"name": COURSE_MINI, "config": asdict(replace(cfg, steps=total)), "planned_steps": total,
                "steps_done": step, "tokens_seen": tokens, "train_seconds": round(elapsed, 1),
                "setup_seconds": round(setup_seconds, 1), "warmup_steps": warmup, "best": best,
                "device": torch.cuda.get_device_name(dev) if dev.type == "cuda" else f"CPU ({platform.processor() or platform.machine()}, {torch.get_num_threads()} threads)",
                "precision": "bf16 autocast, fp32 weights and AdamW" if dev.type == "cuda" else "fp32",
                "torch": torch.__version__, "python": platform.python_version(),
                "pool_pairs": pool_pairs, "dev_pairs": dev_pairs, "train_documents": len(train_docs),
                "dev_documents": len(dev_docs), "corpus_sha256": corpus_hash(), "vocabulary_hash": vocabulary_hash(tok),
                "weights_file": WEIGHTS, "weights_fp16_mib": round(weights_mib(cfg), 2)}
        (out / RUN).write_text(json.dumps(info, indent=1) + "\n")

    if step == 0:
        score_dev()  # step 0: the untrained model on the dev batch
    mlm_sum = torch.zeros((), device=dev)
    nsp_sum = torch.zeros((), device=dev)
    tok_sum = torch.zeros((), device=dev, dtype=torch.long)
    n_sum, before = 0, elapsed
    t_call = time.perf_counter()
    last_eval = last_save = t_call
    stopped = "schedule done"
    while step < total:
        m, n, t = one_step(model, opt, step, total, warmup)
        mlm_sum += m
        nsp_sum += n
        tok_sum += t
        n_sum += 1
        step += 1
        now = time.perf_counter()
        elapsed = before + (now - t_call)
        if step % log_every == 0 or step == total:
            mlm_mean, nsp_mean = float(mlm_sum) / n_sum, float(nsp_sum) / n_sum  # one sync per log line
            tokens += int(tok_sum)
            log({"step": step, "tokens": tokens, "seconds": round(elapsed, 1), "mlm_loss": round(mlm_mean, 4),
                 "nsp_loss": round(nsp_mean, 4), "lr": float(f"{opt.param_groups[0]['lr']:.3e}")})
            mlm_sum.zero_(), nsp_sum.zero_(), tok_sum.zero_()
            n_sum = 0
            if not (math.isfinite(mlm_mean) and math.isfinite(nsp_mean)):
                stopped = f"the loss became {mlm_mean}, {nsp_mean} at step {step}: stopped (lower the lr)"
                break
        if now - last_eval >= eval_seconds and step < total:
            score_dev()
            last_eval = time.perf_counter()
        if now - last_save >= save_seconds:
            _save_state(state_dir, **_state(model, opt, dev, step, tokens, elapsed, best, total, log_lines,
                                            batch_size, lr, seed, pool_pairs))
            last_save = time.perf_counter()
        if max_seconds is not None and now - t_call >= max_seconds and step < total:
            stopped = f"stopped after {max_seconds:g} s of this call (resume with --resume)"
            break
    if n_sum:  # steps since the last log line
        tokens += int(tok_sum)
    elapsed = before + (time.perf_counter() - t_call)
    score_dev()
    _save_state(state_dir, **_state(model, opt, dev, step, tokens, elapsed, best, total, log_lines,
                                    batch_size, lr, seed, pool_pairs))
    print(f"{stopped}: step {step} of {total}, {tokens:,} tokens, {elapsed:.0f} s; best dev masked-LM loss "
          f"{best['dev_mlm_loss']:.3f} at step {best['step']}; weights in {out}", flush=True)
    return json.loads((out / RUN).read_text())


def _state(model, opt, dev, step, tokens, elapsed, best, total, log_lines, batch_size, lr, seed, pool_pairs) -> dict:
    return {"model": {k: v.detach().cpu() for k, v in model.state_dict().items()}, "optimizer": opt.state_dict(),
            "cpu_rng": torch.get_rng_state(), "cuda_rng": torch.cuda.get_rng_state(dev) if dev.type == "cuda" else None,
            "step": step, "tokens": tokens, "elapsed": elapsed, "best": best, "total": total, "log": log_lines,
            "settings": {"batch_size": batch_size, "lr": lr, "seed": seed, "pool_pairs": pool_pairs}}


# ----------------------------------------------------------------------------- evaluation
@dataclass
class HeldOut:
    """Every scored position of a held-out batch (all of them real ``[MASK]`` s): its answer, the
    document it belongs to (the unit to resample), its position and segment, its neighbours in the
    input (``-1`` where a neighbour is itself masked), and the pair it sits in."""

    inputs: torch.Tensor
    batch: dict
    answer: np.ndarray
    document: np.ndarray
    position: np.ndarray
    segment: np.ndarray
    left: np.ndarray
    right: np.ndarray
    pair: np.ndarray
    pair_document: np.ndarray  # per pair: segment A's document (next-sentence outcomes resample it)

    def __len__(self) -> int:
        return len(self.answer)


def held_out(tokenizer, encoded, n_pairs: int, max_length: int = MINI.max_length, seed: int = EVAL_SEED) -> HeldOut:
    """``n_pairs`` seeded pairs from ``encoded`` (held-out) documents with 15 % of their non-special
    positions replaced by ``[MASK]`` -- all of them, no random or kept tokens, so each scored
    position is a real fill-in-the-blank (as :func:`helpers.pretrain.compute.heldout_batch`)."""
    if isinstance(n_pairs, bool) or not isinstance(n_pairs, int) or n_pairs < 2:
        raise ValueError(f"n_pairs must be an int >= 2, got {n_pairs!r}.")
    pool = make_pool(encoded, tokenizer, n_pairs, max_length, seed)
    batch = pool_batch(pool.tensors("cpu"), torch.arange(len(pool)), tokenizer.pad_token_id)  # cpu: evaluation batch
    inputs, labels = mask_tokens(batch["input_ids"], batch["special_tokens_mask"], mask_token_id=tokenizer.mask_token_id,
                                 vocab_size=len(tokenizer), generator=torch.Generator().manual_seed(seed),
                                 mask_share=1.0, random_share=0.0)
    where = (labels != IGNORE).nonzero().cpu().numpy()
    rows, cols = where[:, 0], where[:, 1]
    ids = inputs.cpu().numpy()
    segment = batch["token_type_ids"].cpu().numpy()[rows, cols]
    left = ids[rows, cols - 1]
    right = ids[rows, np.minimum(cols + 1, ids.shape[1] - 1)]
    masked = tokenizer.mask_token_id
    left = np.where(left == masked, -1, left)
    right = np.where(right == masked, -1, right)
    document = np.where(segment == 0, pool.doc_a[rows], pool.doc_b[rows])
    return HeldOut(inputs, {**batch, "labels": labels}, labels.cpu().numpy()[rows, cols], document, cols, segment,
                   left, right, rows, pool.doc_a)


@torch.no_grad()
def model_topk(model, ho: HeldOut, k: int = 5, slice_pairs: int = 128) -> tuple[np.ndarray, np.ndarray]:
    """``(top-k ids [positions, k], next-sentence prediction [pairs])`` of a ``BertForPreTraining``
    at every masked position of ``ho``, in the order of ``ho``'s positions."""
    model.eval()
    device = next(model.parameters()).device
    tops, nsp = [], []
    n = len(ho.inputs)
    for start in range(0, n, slice_pairs):
        sl = slice(start, start + slice_pairs)
        out = model.bert(input_ids=ho.inputs[sl].to(device), token_type_ids=ho.batch["token_type_ids"][sl].to(device),
                         attention_mask=ho.batch["attention_mask"][sl].to(device))
        where = (ho.batch["labels"][sl] != IGNORE).to(device)
        logits = model.cls.predictions(out.last_hidden_state[where])
        tops.append(logits.topk(k, dim=-1).indices.cpu().numpy())
        nsp.append(model.cls.seq_relationship(out.pooler_output).argmax(-1).cpu().numpy())
    return np.concatenate(tops), np.concatenate(nsp)


def _candidates(pool: PairPool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Non-special positions of a pool: ``(ids, positions, segments)``, flattened."""
    width = pool.ids.shape[1]
    pos = np.arange(width)[None]
    la, ln = pool.len_a[:, None], pool.length[:, None]
    in_a = (pos >= 1) & (pos <= la)
    in_b = (pos >= la + 2) & (pos < ln - 1)
    keep = in_a | in_b
    rows, cols = np.nonzero(keep)
    return pool.ids[rows, cols], cols, in_b[rows, cols].astype(np.int64)


@dataclass
class PositionSegmentUnigram:
    """Null (a): the most frequent training token at each position bucket (``bucket`` positions
    wide) and segment. A ``[MASK]``'s input vector is the [MASK] embedding plus its position and
    segment embeddings, so this is what a model could know from the embeddings alone."""

    top: np.ndarray  # [buckets, 2, k] token ids, most frequent first
    bucket: int

    @classmethod
    def fit(cls, pool: PairPool, vocab_size: int, bucket: int = POSITION_BUCKET, k: int = 5):
        ids, pos, seg = _candidates(pool)
        n_buckets = -(-pool.ids.shape[1] // bucket)
        counts = np.zeros((n_buckets, 2, vocab_size), dtype=np.int64)
        np.add.at(counts, (pos // bucket, seg, ids), 1)
        return cls(np.argsort(-counts, axis=-1, kind="stable")[..., :k], bucket)

    def topk(self, position: np.ndarray, segment: np.ndarray) -> np.ndarray:
        return self.top[np.asarray(position) // self.bucket, np.asarray(segment)]


@dataclass
class BigramContext:
    """Null (b): the masked token from its unmasked neighbours' bigram statistics on the training
    split. Score of a candidate ``w`` between ``l`` and ``r``: ``log P(w | l) + log P(r | w)`` (a
    factor dropped where that neighbour is masked too), each bigram probability interpolated with
    the unigram one (Jelinek-Mercer, weight ``lam`` chosen on the dev split). ``[CLS]`` and
    ``[SEP]`` count as neighbours: they mark segment starts and ends."""

    counts: object  # scipy CSR [V, V]: counts[a, b] = how often b follows a
    unigram: np.ndarray  # [V] probabilities
    lam: float = 0.9

    @classmethod
    def fit(cls, pool: PairPool, vocab_size: int, lam: float = 0.9):
        from scipy.sparse import csr_matrix

        real = np.arange(pool.ids.shape[1])[None] < pool.length[:, None]
        pairs = real[:, :-1] & real[:, 1:]
        a, b = pool.ids[:, :-1][pairs].astype(np.int64), pool.ids[:, 1:][pairs].astype(np.int64)
        counts = csr_matrix((np.ones_like(a, dtype=np.float32), (a, b)), shape=(vocab_size, vocab_size))
        counts.sum_duplicates()
        uni = np.bincount(pool.ids[real].astype(np.int64), minlength=vocab_size).astype(np.float64) + 1.0
        return cls(counts, (uni / uni.sum()).astype(np.float32), lam)

    def topk(self, left: np.ndarray, right: np.ndarray, k: int = 5, chunk: int = 1024) -> np.ndarray:
        rows_out = self.counts.sum(1).A1.astype(np.float32)  # how often each token has a successor
        cols = self.counts.T.tocsr()
        lam, uni = self.lam, self.unigram
        log_uni = np.log(uni)
        out = []
        for start in range(0, len(left), chunk):
            l, r = left[start:start + chunk], right[start:start + chunk]
            score = np.zeros((len(l), len(uni)), dtype=np.float32)
            has_l, has_r = l >= 0, r >= 0
            if has_l.any():  # log P(w | l)
                c = self.counts[l[has_l]].toarray()
                tot = np.maximum(rows_out[l[has_l]], 1.0)[:, None]
                score[has_l] += np.log(lam * c / tot + (1 - lam) * uni)
            if has_r.any():  # log P(r | w)
                c = cols[r[has_r]].toarray()
                p = lam * c / np.maximum(rows_out, 1.0)[None] + (1 - lam) * uni[r[has_r]][:, None]
                score[has_r] += np.log(p)
            score[~has_l & ~has_r] += log_uni
            out.append(_top_k(score, k))
        return np.concatenate(out)


def _top_k(score: np.ndarray, k: int) -> np.ndarray:
    """The ``k`` highest-scoring ids of each row, best first (ties: the lower id first)."""
    part = np.argpartition(-score, k, axis=1)[:, :k]
    vals = np.take_along_axis(score, part, 1)
    order = np.lexsort((part, -vals), axis=1)
    return np.take_along_axis(part, order, 1)


def _hits(top: np.ndarray, answer: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return (top[:, 0] == answer).astype(float), (top == answer[:, None]).any(1).astype(float)


def _interval(values: np.ndarray, clusters: np.ndarray) -> dict:
    from helpers.common.stats import cluster_bootstrap_ci

    iv = cluster_bootstrap_ci(values, clusters, seed=EVAL_SEED)
    return {"estimate": float(iv.estimate), "low": float(iv.low), "high": float(iv.high)}


def load_pretraining_model(folder: Path | str = COURSE_MINI_DIR, device="cpu"):
    """course-mini as ``BertForPreTraining`` (both heads), float32, eager attention, eval mode."""
    from transformers import BertForPreTraining
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    try:
        model = BertForPreTraining.from_pretrained(str(folder), attn_implementation="eager", dtype=torch.float32)
    finally:
        hf_logging.enable_progress_bar()
    return model.to(device).eval()


def baselines(tokenizer, encoded_train, n_pairs: int = 60000, seed: int = EVAL_SEED + 1):
    """Both nulls fitted on ``n_pairs`` training pairs, and the training token counts."""
    pool = make_pool(encoded_train, tokenizer, n_pairs, MINI.max_length, seed)
    v = len(tokenizer)
    counts = np.bincount(_candidates(pool)[0].astype(np.int64), minlength=v)
    return PositionSegmentUnigram.fit(pool, v), BigramContext.fit(pool, v), counts


def evaluate(folder: Path | str = COURSE_MINI_DIR, *, test_pairs: int = 2000, dev_pairs: int = 1000,
             baseline_pairs: int = 60000, lams=(0.5, 0.7, 0.8, 0.9, 0.95, 0.99)) -> dict:
    """The model card's numbers, seeded: held-out fill-mask top-1 / top-5 of course-mini and of both
    nulls on ``test_pairs`` pairs of the **test** documents, with 95 % intervals that resample
    documents; the paired differences model - null; top-1 on non-frequent answers (outside the
    :data:`FREQUENT_K` most frequent training tokens); next-sentence accuracy. The bigram null's
    smoothing is the best of ``lams`` on the **dev** documents."""
    tok = load_tokenizer(folder)
    model = load_pretraining_model(folder)
    train_docs, dev_docs, test_docs = splits()
    enc_train, enc_dev, enc_test = (encode_documents(tok, d) for d in (train_docs, dev_docs, test_docs))
    unigram, bigram, counts = baselines(tok, enc_train, baseline_pairs)
    corpus_counts = np.bincount(np.concatenate([np.asarray(x, dtype=np.int64) for d in enc_train for x in d if x]),
                                minlength=len(tok))
    ordinary = np.array([i for i in range(len(tok)) if i not in set(tok.all_special_ids)])
    special = set(tok.all_special_ids)
    frequent = [int(i) for i in np.argsort(-counts, kind="stable") if int(i) not in special][:FREQUENT_K]
    dev = held_out(tok, enc_dev, dev_pairs)
    dev_top1 = {}
    for lam in lams:
        bigram.lam = lam
        dev_top1[lam] = float(_hits(bigram.topk(dev.left, dev.right), dev.answer)[0].mean())
    bigram.lam = max(lams, key=lambda x: (dev_top1[x], -x))
    test = held_out(tok, enc_test, test_pairs)
    top_model, nsp = model_topk(model, test)
    tops = {"model": top_model, "position_segment": unigram.topk(test.position, test.segment),
            "bigram": bigram.topk(test.left, test.right)}
    hits = {name: _hits(t, test.answer) for name, t in tops.items()}
    rare = ~np.isin(test.answer, frequent)
    result = {"name": COURSE_MINI, "weights_sha256": hashlib.sha256((Path(folder) / WEIGHTS).read_bytes()).hexdigest(),
              "config": {k: v for k, v in json.loads((Path(folder) / "config.json").read_text()).items()
                         if k in ("num_hidden_layers", "hidden_size", "num_attention_heads", "intermediate_size",
                                  "vocab_size", "max_position_embeddings")},
              "test_documents": len(test_docs), "dev_documents": len(dev_docs), "train_documents": len(train_docs),
              "test_pairs": test_pairs, "positions": len(test), "documents_scored": int(len(np.unique(test.document))),
              "baseline_pairs": baseline_pairs, "position_bucket": unigram.bucket, "bigram_lambda": bigram.lam,
              "bigram_dev_top1": {str(k): v for k, v in dev_top1.items()}, "frequent_k": FREQUENT_K,
              "rare_positions": int(rare.sum()), "rare_documents": int(len(np.unique(test.document[rare]))),
              "train_tokens": int(corpus_counts.sum()),
              "vocabulary_counts": {"median": float(np.median(corpus_counts[ordinary])),
                                    "under_20": int((corpus_counts[ordinary] < 20).sum()),
                                    "never": int((corpus_counts[ordinary] == 0).sum())},
              "seed": EVAL_SEED, "accuracy": {}, "difference": {}, "rare_top1": {}, "rare_difference": {},
              "position_segment_top": unigram.top.tolist(), "frequent_ids": frequent}
    for name, (t1, t5) in hits.items():
        result["accuracy"][name] = {"top1": _interval(t1, test.document), "top5": _interval(t5, test.document)}
        result["rare_top1"][name] = _interval(t1[rare], test.document[rare])
    for name in ("position_segment", "bigram"):
        result["difference"][name] = {f"top{k}": _interval(hits["model"][i] - hits[name][i], test.document)
                                      for i, k in ((0, 1), (1, 5))}
        result["rare_difference"][name] = _interval(hits["model"][0][rare] - hits[name][0][rare], test.document[rare])
    nsp_ok = (nsp == test.batch["next_sentence_label"].cpu().numpy()).astype(float)
    result["nsp_accuracy"] = _interval(nsp_ok, test.pair_document)
    result["nsp_is_next_share"] = float((test.batch["next_sentence_label"] == IS_NEXT).float().mean())
    return result


# ----------------------------------------------------------------------------- command line
def _default_state() -> Path:
    root = course_cache()
    if root is None:
        raise ValueError("COURSE_CACHE is off: give --state FOLDER for the resumable training state.")
    return root / "course_mini" / "state"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m helpers.pretrain.course_mini", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("vocab", help="learn the WordPiece vocabulary on the training split into data/course_mini/")
    tr = sub.add_parser("train", help="pre-train (masked-LM + next-sentence); resumable")
    tr.add_argument("--out", type=Path, default=COURSE_MINI_DIR, help="where the weights, log and run.json go")
    tr.add_argument("--state", type=Path, default=None, help="resumable state (default $COURSE_CACHE/course_mini/state)")
    when = tr.add_mutually_exclusive_group()
    when.add_argument("--steps", type=int, help="a fixed schedule of this many steps")
    when.add_argument("--minutes", type=float, help="set the steps so that training takes about this long")
    tr.add_argument("--max-seconds", type=float, default=None, help="stop this call after so many seconds")
    tr.add_argument("--resume", action="store_true", help="carry on from the saved state")
    tr.add_argument("--device", default=None, help="cpu, cuda, cuda:N or mps (default: a GPU when present)")
    tr.add_argument("--batch-size", type=int, default=MINI.batch_size)
    tr.add_argument("--lr", type=float, default=MINI.lr)
    tr.add_argument("--seed", type=int, default=MINI.seed)
    tr.add_argument("--pool", type=int, default=1 << 20, help="next-sentence pairs drawn once to sample batches from")
    tr.add_argument("--dev-pairs", type=int, default=2048)
    tr.add_argument("--workers", type=int, default=1, help="processes that draw the pool")
    tr.add_argument("--log-every", type=int, default=50)
    tr.add_argument("--eval-seconds", type=float, default=30.0)
    tr.add_argument("--save-seconds", type=float, default=120.0)
    ev = sub.add_parser("evaluate", help="held-out fill-mask against both nulls -> data/course_mini/evaluation.json")
    ev.add_argument("--test-pairs", type=int, default=2000)
    sub.add_parser("card", help="data/course_mini/README.md and loss_curve.png from the files above")
    args = parser.parse_args(argv)
    if args.command == "vocab":
        tok = build_vocabulary()
        print(f"{len(tok):,} WordPieces saved in {COURSE_MINI_DIR}; fp16 weights at this size: "
              f"{check_budget(MINI, len(tok)):.1f} MiB")
    elif args.command == "train":
        train(out=args.out, state_dir=args.state or _default_state(), steps=args.steps, minutes=args.minutes,
              max_seconds=args.max_seconds, resume=args.resume, device=args.device, batch_size=args.batch_size,
              lr=args.lr, seed=args.seed, pool_pairs=args.pool, dev_pairs=args.dev_pairs, workers=args.workers,
              log_every=args.log_every, eval_seconds=args.eval_seconds, save_seconds=args.save_seconds)
    elif args.command == "evaluate":
        result = evaluate(test_pairs=args.test_pairs)
        (COURSE_MINI_DIR / EVALUATION).write_text(json.dumps(result, indent=1) + "\n")
        print(json.dumps({k: result[k] for k in ("accuracy", "difference", "rare_top1", "nsp_accuracy")}, indent=1))
    elif args.command == "card":
        from helpers.pretrain.course_mini_card import write_card

        print(f"wrote {write_card(COURSE_MINI_DIR)}")


if __name__ == "__main__":
    main(sys.argv[1:])
