"""course-mini's numbers (:mod:`helpers.mini`): pre-train it, measure it, and write its model card.

    python -m helpers.mini.compute vocab      # learn the WordPiece vocabulary (training documents)
    python -m helpers.mini.compute train      # pre-train (GPU if present; resumable on a CPU)
    python -m helpers.mini.compute evaluate   # held-out fill-mask against two nulls (seeded)
    python -m helpers.mini.compute card       # data/course_mini/README.md from the files above

Everything reuses lesson 05's machinery (:mod:`helpers.pretrain.data` and
:mod:`helpers.pretrain.compute`): the corpus split by document, the WordPiece trainer, the
next-sentence pairs of :class:`~helpers.pretrain.data.PairSampler`, BERT's 15 % / 80-10-10
masking (:func:`~helpers.pretrain.data.mask_tokens`), :class:`~helpers.pretrain.compute.PretrainConfig`,
the seeded model, the loss and the AdamW recipe. What is new here is the scale:

* **Size** (:data:`MINI`): Turc et al. (2019, "Well-Read Students Learn Better") call 4 layers x 256
  wide, 4 heads, feed-forward 1024 "BERT-mini"; the vocabulary has 8,192 WordPieces learnt on the
  training documents (the corpus has about 2 M tokens: the card says why not more);
  :func:`check_budget` holds the fp16 file to :data:`WEIGHT_BUDGET_MIB`.
* **Training** (:func:`train`): batches drawn from a pool of pairs on the training device
  (:mod:`helpers.mini.data`); on the GPU when there is one (bf16 autocast), else on the CPU in
  resumable chunks (``--resume``: model, optimizer, random states and step are saved); a
  wall-clock budget (``--minutes``) sets the number of steps from a short timing run; the dev
  documents (never the test documents) are scored at step 0 and on a timer, and the weights with
  the lowest dev masked-LM loss are the ones written.
* **Evaluation** (:func:`evaluate`): held-out *test documents*, every scored position a real
  ``[MASK]``; top-1 / top-5 of the model against (a) :class:`PositionSegmentUnigram` -- the most
  frequent training token at that position bucket and segment, all that the embeddings can know
  at a ``[MASK]`` -- and (b) :class:`BigramContext` -- the bigram statistics of the unmasked
  neighbours, smoothing chosen on the dev documents; 95 % intervals from a bootstrap that
  resamples documents (:func:`helpers.common.stats.cluster_bootstrap_ci`).
* **Model card** (:func:`card_text`): every number read from ``run.json``, ``train_log.jsonl`` and
  ``evaluation.json``; the loss curve is :func:`helpers.mini.plots.plot_loss_curve`.

Its sizes, files and budget are in ``helpers/mini/config.py`` and the model card in
``helpers/mini/card.py`` (both re-exported here); this module trains and evaluates, and runs the
command line.
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
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np
import torch

from helpers.mini.data import (EVAL_SEED, MAX_LENGTH, VOCAB_SIZE, HeldOut, PairPool, build_vocabulary, dev_batch,
                               held_out, load_tokenizer, make_pool, pool_batch, pool_positions, splits)
from helpers.model.paths import COURSE_MINI, COURSE_MINI_DIR, DATA_DIR, course_cache
from helpers.pretrain.compute import PretrainConfig, make_optimizer, bert_config, losses, new_model
from helpers.pretrain.data import (IGNORE, IS_NEXT, PairSampler, corpus_hash, encode_documents, mask_tokens,
                                   vocabulary_hash)
from helpers.pretrain.history import save_weights  # noqa: F401 - course-mini's trainer writes with it
from helpers.pretrain.nulls import POSITION_BUCKET, BigramContext, PositionSegmentUnigram  # noqa: F401
from helpers.mini.config import (CURVE, EVALUATION, FREQUENT_K, LOG, MINI, NULLS, RUN, WEIGHT_BUDGET_MIB, WEIGHTS,  # noqa: F401
                                 check_budget, parameter_count, weights_mib)
from helpers.mini.card import card_text, read_log, write_card  # noqa: F401


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
    if resume and (steps is not None or minutes is not None):
        raise ValueError("resume carries on with the saved schedule: leave out steps / minutes.")
    if (steps is None) == (minutes is None) and not resume:
        raise ValueError("give exactly one of steps (a fixed schedule) or minutes (a wall-clock budget).")
    if not (isinstance(lr, (int, float)) and lr > 0) or (minutes is not None and not minutes > 0):
        raise ValueError(f"lr and minutes must be > 0, got lr={lr!r}, minutes={minutes!r}.")
    dev = pick_device(device)
    autocast = _autocast(dev)
    tok = load_tokenizer(tokenizer_dir)
    cfg = replace(MINI, batch_size=batch_size, lr=lr, seed=seed, vocab_size=len(tok))
    check_budget(cfg)
    state_file = _state_path(state_dir)
    saved = None
    if resume:
        if not state_file.exists():
            raise FileNotFoundError(f"--resume: no saved state in {state_dir} (start without --resume).")
        saved = torch.load(state_file, map_location="cpu", weights_only=False)
        asked = {"batch_size": batch_size, "lr": lr, "seed": seed, "pool_pairs": pool_pairs}
        for key, value in asked.items():
            if saved["settings"][key] != value:
                raise ValueError(f"--resume with {key}={value!r}, but the saved run used "
                                 f"{saved['settings'][key]!r}: use the same settings to resume.")
    t_setup = time.perf_counter()
    train_docs, dev_docs, _ = splits()
    enc_train, enc_dev = encode_documents(tok, train_docs), encode_documents(tok, dev_docs)
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
            popt, _ = make_optimizer(probe, cfg, 10)
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
        opt, _ = make_optimizer(model, replace(cfg, steps=total), total)
        log_lines = []
    else:
        model.load_state_dict(saved["model"])
        opt, _ = make_optimizer(model, cfg, saved["total"])
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


def same_book_guess(docs, encoded, doc_a: np.ndarray, doc_b: np.ndarray) -> np.ndarray:
    """The next-sentence null: per pair, ``IS_NEXT`` when segment B's document comes from the same
    book (source) as segment A's, else ``NOT_NEXT``. ``doc_a`` / ``doc_b`` index the documents that
    :class:`~helpers.pretrain.data.PairSampler` keeps (those with two non-empty first sentences)."""
    from helpers.pretrain.data import NOT_NEXT

    kept = PairSampler.kept_documents(encoded)
    source = np.array([docs[i].source for i in kept])
    return np.where(source[doc_a] == source[doc_b], IS_NEXT, NOT_NEXT)


def baselines(tokenizer, encoded_train, n_pairs: int = 60000, seed: int = EVAL_SEED + 1):
    """Both nulls fitted on ``n_pairs`` training pairs, and the training token counts."""
    pool = make_pool(encoded_train, tokenizer, n_pairs, MINI.max_length, seed)
    v = len(tokenizer)
    counts = np.bincount(pool_positions(pool)[0].astype(np.int64), minlength=v)
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
    truth = test.batch["next_sentence_label"].cpu().numpy()
    nsp_ok = (nsp == truth).astype(float)
    result["nsp_accuracy"] = _interval(nsp_ok, test.pair_document)
    # the next-sentence null: "B follows A whenever B comes from the same book as A" (in this corpus a
    # random B usually comes from the other book, so style alone gets many pairs right)
    same_book = same_book_guess(test_docs, enc_test, test.pair_document, test.pair_document_b)
    book_ok = (same_book == truth).astype(float)
    result["nsp_same_book"] = _interval(book_ok, test.pair_document)
    result["nsp_minus_same_book"] = _interval(nsp_ok - book_ok, test.pair_document)
    result["nsp_is_next_share"] = float((test.batch["next_sentence_label"] == IS_NEXT).float().mean())
    return result


# ----------------------------------------------------------------------------- command line


def _default_state() -> Path:
    root = course_cache()
    if root is None:
        raise ValueError("COURSE_CACHE is off: give --state FOLDER for the resumable training state.")
    return root / "course_mini" / "state"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m helpers.mini.compute", description=__doc__.split("\n\n")[0])
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
        print(f"wrote {write_card(COURSE_MINI_DIR)}")


if __name__ == "__main__":
    main(sys.argv[1:])
