"""Lesson 05 numbers: pre-train a tiny ``BertForPreTraining`` with BERT's two objectives, keep its
checkpoints in the course cache, and measure what it learnt.

* :class:`PretrainConfig` -- sizes, steps, batch, learning rate, seed; its :meth:`fingerprint`
  (with the corpus hash) names the run's folder in ``$COURSE_CACHE/pretrain``, so a run with the
  same settings is loaded instead of repeated;
* :func:`pretrain` -- the training loop: masked-LM + next-sentence losses, AdamW with warm-up and
  linear decay (Devlin et al., 2019, appendix A.2, at a small scale), checkpoints at chosen steps;
  the last one becomes ``MODEL = "course-tiny"`` (:func:`helpers.model.paths.course_tiny_path`);
* :func:`evaluate` -- held-out masked positions: top-1 / top-5 accuracy of the model and of the
  unigram-frequency baseline (always guess the corpus's most frequent tokens), and next-sentence
  accuracy; :func:`lens_correct` -- the masked-LM lens (``helpers/lens``) of every layer.
"""

from __future__ import annotations

import json
import math
import shutil
import tempfile
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from helpers.model.paths import COURSE_TINY, course_cache, course_tiny_pointer
from helpers.pretrain.data import IGNORE, PairSampler, mask_tokens

def lesson_recipe(**overrides) -> "PretrainConfig":
    """Lesson 05's default run (also the stored runs of :mod:`helpers.pretrain.history`): BERT-tiny's
    sizes (Turc et al., 2019: 2 layers x 128, 2 heads), a 4,000-entry vocabulary, BERT's optimiser
    recipe (AdamW, warm-up then linear decay, dropout 0.1), on **16-token pairs** in batches of 96.
    The short pairs are what lets a 2-core laptop leave the frequent-token plateau in minutes: at
    64 tokens the same number of steps stays on it (the stored 64-token run shows it)."""
    return replace(PretrainConfig(layers=2, hidden=128, heads=2, intermediate=512, vocab_size=4000, max_length=16,
                                  batch_size=96, steps=3000, lr=2e-3, warmup=0.1, weight_decay=0.01, dropout=0.1,
                                  seed=0), **overrides)


@dataclass(frozen=True)
class PretrainConfig:
    """Everything that decides a pre-training run (and so its fingerprint)."""

    layers: int = 4
    hidden: int = 256
    heads: int = 4
    intermediate: int = 1024
    vocab_size: int = 8000
    max_length: int = 64
    batch_size: int = 32
    steps: int = 1000
    lr: float = 1e-3
    warmup: float = 0.1
    weight_decay: float = 0.01
    dropout: float = 0.1
    seed: int = 0
    max_documents: int | None = None

    def __post_init__(self):
        for name in ("layers", "hidden", "heads", "intermediate", "vocab_size", "max_length", "batch_size", "steps"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}.")
        if self.hidden % self.heads:
            raise ValueError(f"hidden ({self.hidden}) must be a multiple of heads ({self.heads}): each head gets "
                             "hidden / heads dimensions.")

    @classmethod
    def like(cls, model_config, **overrides) -> "PretrainConfig":
        """The sizes of an existing BERT config (its weights are not used), plus ``overrides``."""
        sizes = dict(layers=model_config.num_hidden_layers, hidden=model_config.hidden_size,
                     heads=model_config.num_attention_heads, intermediate=model_config.intermediate_size)
        return cls(**{**sizes, **overrides})

    def fingerprint(self, corpus_hash: str) -> str:
        text = json.dumps({**asdict(self), "corpus": corpus_hash}, sort_keys=True)
        import hashlib

        return hashlib.sha256(text.encode()).hexdigest()[:12]

    def describe(self) -> str:
        return (f"{self.layers} layers x hidden {self.hidden}, {self.heads} heads, feed-forward {self.intermediate}, "
                f"vocabulary {self.vocab_size}; {self.steps} steps of {self.batch_size} pairs x <= {self.max_length} "
                f"tokens, lr {self.lr:g}, seed {self.seed}")


def bert_config(cfg: PretrainConfig, tokenizer):
    from transformers import BertConfig

    return BertConfig(vocab_size=len(tokenizer), hidden_size=cfg.hidden, num_hidden_layers=cfg.layers,
                      num_attention_heads=cfg.heads, intermediate_size=cfg.intermediate,
                      max_position_embeddings=cfg.max_length, pad_token_id=tokenizer.pad_token_id,
                      hidden_dropout_prob=cfg.dropout, attention_probs_dropout_prob=cfg.dropout,
                      attn_implementation="eager")


def new_model(cfg: PretrainConfig, tokenizer):
    """A randomly initialised ``BertForPreTraining`` (seeded by ``cfg.seed``), eager attention."""
    from transformers import BertForPreTraining

    torch.manual_seed(cfg.seed)
    return BertForPreTraining(bert_config(cfg, tokenizer))


def losses(model, batch, inputs, labels) -> tuple[torch.Tensor, torch.Tensor]:
    """``(masked-LM loss, next-sentence loss)``: cross-entropy over the scored positions (labels
    != -100) and over the pairs. The word head runs on the scored positions only, as Google's
    ``run_pretraining.py`` does (``gather_indexes``): the same loss as
    ``BertForPreTraining(..., labels=...)`` for a fraction of the vocabulary-sized products."""
    out = model.bert(input_ids=inputs, token_type_ids=batch["token_type_ids"], attention_mask=batch["attention_mask"])
    where = labels != IGNORE
    mlm = F.cross_entropy(model.cls.predictions(out.last_hidden_state[where]), labels[where])
    nsp = F.cross_entropy(model.cls.seq_relationship(out.pooler_output), batch["next_sentence_label"])
    return mlm, nsp


def make_optimizer(model, cfg: PretrainConfig, total: int):
    from transformers import get_linear_schedule_with_warmup

    decay = [p for n, p in model.named_parameters() if p.ndim > 1]
    rest = [p for n, p in model.named_parameters() if p.ndim <= 1]  # biases and LayerNorm: no weight decay
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": cfg.weight_decay}, {"params": rest, "weight_decay": 0.0}],
                            lr=cfg.lr, betas=(0.9, 0.999), eps=1e-6)
    return opt, get_linear_schedule_with_warmup(opt, max(1, int(cfg.warmup * total)), total)


def _step(model, opt, sched, sampler, cfg, tokenizer, gen) -> tuple[float, float]:
    batch = sampler.batch(cfg.batch_size)
    inputs, labels = mask_tokens(batch["input_ids"], batch["special_tokens_mask"], mask_token_id=tokenizer.mask_token_id,
                                 vocab_size=len(tokenizer), generator=gen)
    mlm, nsp = losses(model, batch, inputs, labels)
    opt.zero_grad(set_to_none=True)
    (mlm + nsp).backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    sched.step()
    return mlm.item(), nsp.item()


def seconds_per_step(cfg: PretrainConfig, tokenizer, encoded, n: int = 4) -> float:
    """Median time of a training step at ``cfg``'s sizes, on a throw-away model (the first step is
    a warm-up and not counted)."""
    model = new_model(cfg, tokenizer).train()
    opt, sched = make_optimizer(model, cfg, n + 1)
    sampler, gen = PairSampler(encoded, tokenizer, cfg.max_length, seed=cfg.seed + 1), torch.Generator().manual_seed(1)
    times = []
    for _ in range(n + 1):
        t0 = time.perf_counter()
        _step(model, opt, sched, sampler, cfg, tokenizer, gen)
        times.append(time.perf_counter() - t0)
    return float(np.median(times[1:]))


def fastest_threads(cfg: PretrainConfig, tokenizer, encoded, n: int = 8) -> tuple[int, float]:
    """``(threads, seconds per step)``: the faster of one thread and torch's default on this machine,
    timed on a throw-away model, left set. On a 2-core machine with another program busy on one
    core, two threads wait for each other and one thread is about twice as fast; on an idle
    machine two are faster."""
    default = torch.get_num_threads()
    timed = {}
    for threads in sorted({1, default}):
        torch.set_num_threads(threads)
        timed[threads] = seconds_per_step(cfg, tokenizer, encoded, n)
    best = min(timed, key=timed.get)
    torch.set_num_threads(best)
    return best, timed[best]


def checkpoint_steps(steps: int) -> list[int]:
    """Steps 0, 1/4, 1/2 and the end (distinct)."""
    return sorted({0, steps // 4, steps // 2, steps})


@dataclass
class PretrainRun:
    """A finished run: its folder, the per-step losses and the checkpoint folders by step."""

    config: PretrainConfig
    folder: Path
    fingerprint: str
    mlm_loss: np.ndarray
    nsp_loss: np.ndarray
    checkpoints: dict[int, Path]
    seconds: float
    cached: bool = False
    kept: bool = True
    _models: dict = field(default_factory=dict, repr=False)

    @property
    def final(self) -> Path:
        return self.checkpoints[max(self.checkpoints)]

    def load(self, step: int):
        """The ``BertForPreTraining`` saved at ``step`` (eval mode, eager attention), loaded once."""
        from transformers import BertForPreTraining
        from transformers.utils import logging as hf_logging

        if step not in self.checkpoints:
            raise ValueError(f"no checkpoint at step {step!r}; saved steps: {sorted(self.checkpoints)}.")
        if step not in self._models:
            hf_logging.disable_progress_bar()  # no "Loading weights" bar in the lesson's output
            try:
                self._models[step] = BertForPreTraining.from_pretrained(self.checkpoints[step],
                                                                        attn_implementation="eager").eval()
            finally:
                hf_logging.enable_progress_bar()
        return self._models[step]


def _save(model, tokenizer, folder: Path) -> None:
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # no "Writing model shards" bar in the lesson's output
    try:
        model.save_pretrained(folder, safe_serialization=True)
        tokenizer.save_pretrained(folder)
    finally:
        hf_logging.enable_progress_bar()


def run_folder(cfg: PretrainConfig, corpus_hash: str) -> tuple[Path, bool]:
    """``(folder, kept)``: ``$COURSE_CACHE/pretrain/<fingerprint>``, or a temporary folder (not kept)
    when ``COURSE_CACHE=off``."""
    root = course_cache()
    if root is None:
        return Path(tempfile.mkdtemp(prefix="pretrain-")), False
    return root / "pretrain" / cfg.fingerprint(corpus_hash), True


def _load_run(cfg, folder, fp) -> PretrainRun:
    info = json.loads((folder / "run.json").read_text())
    cps = {int(s): folder / f"step_{int(s):06d}" for s in info["checkpoints"]}
    return PretrainRun(cfg, folder, fp, np.array(info["mlm_loss"]), np.array(info["nsp_loss"]), cps, info["seconds"],
                       cached=True)


def pretrain(cfg: PretrainConfig, tokenizer, encoded, corpus_hash: str, *, progress: bool = True,
             register: bool = True, checkpoints=None) -> PretrainRun:
    """Pre-train (or load the cached run of the same fingerprint): ``cfg.steps`` AdamW steps on
    masked-LM + next-sentence loss, checkpoints saved (model + tokenizer) at ``checkpoints``
    (default :func:`checkpoint_steps`). ``register`` makes the last checkpoint
    ``MODEL = "course-tiny"``."""
    from helpers.common.progress import ProgressBar

    from helpers.pretrain.data import vocabulary_hash

    corpus_hash = f"{corpus_hash}-{vocabulary_hash(tokenizer)}"  # a run is only reused with its vocabulary
    fp = cfg.fingerprint(corpus_hash)
    folder, kept = run_folder(cfg, corpus_hash)
    if kept and (folder / "run.json").exists():
        run = _load_run(cfg, folder, fp)
    else:
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        model = new_model(cfg, tokenizer).train()
        opt, sched = make_optimizer(model, cfg, cfg.steps)
        sampler = PairSampler(encoded, tokenizer, cfg.max_length, seed=cfg.seed)
        gen = torch.Generator().manual_seed(cfg.seed)
        wanted = sorted({int(x) for x in checkpoints} | {cfg.steps}) if checkpoints else checkpoint_steps(cfg.steps)
        if wanted[0] < 0 or wanted[-1] > cfg.steps:
            raise ValueError(f"checkpoints must lie in 0..{cfg.steps}, got {sorted(checkpoints)}.")
        mlm_l, nsp_l, cps = [], [], {}
        bar = ProgressBar(cfg.steps, desc="pre-training", disable=not progress)
        t0 = time.perf_counter()
        for step in range(cfg.steps + 1):
            if step in wanted:
                cps[step] = folder / f"step_{step:06d}"
                _save(model, tokenizer, cps[step])
            if step == cfg.steps:
                break
            m, n = _step(model, opt, sched, sampler, cfg, tokenizer, gen)
            if not (math.isfinite(m) and math.isfinite(n)):
                raise RuntimeError(f"the loss became {m}, {n} at step {step + 1}: lower lr (now {cfg.lr:g}).")
            mlm_l.append(m)
            nsp_l.append(n)
            bar.update()
        bar.close()
        seconds = time.perf_counter() - t0
        (folder / "run.json").write_text(json.dumps({"config": asdict(cfg), "corpus_sha256": corpus_hash,
                                                     "fingerprint": fp, "checkpoints": sorted(cps), "seconds": seconds,
                                                     "mlm_loss": mlm_l, "nsp_loss": nsp_l}))
        run = PretrainRun(cfg, folder, fp, np.array(mlm_l), np.array(nsp_l), cps, seconds, kept=kept)
    if register and kept:
        pointer = course_tiny_pointer()
        pointer.parent.mkdir(parents=True, exist_ok=True)
        pointer.write_text(json.dumps({"name": COURSE_TINY, "path": str(run.final), "fingerprint": fp,
                                       "steps": cfg.steps, "config": asdict(cfg)}, indent=1))
    return run


def running_mean(values, window: int) -> np.ndarray:
    """Mean of the last ``window`` values at every step (fewer at the start)."""
    v = np.asarray(values, dtype=float)
    c = np.cumsum(np.insert(v, 0, 0.0))
    idx = np.arange(1, len(v) + 1)
    lo = np.maximum(0, idx - window)
    return (c[idx] - c[lo]) / (idx - lo)


# ----------------------------------------------------------------------------- evaluation
def unigram_counts(encoded, vocab_size: int) -> torch.Tensor:
    """How often each id occurs in the (training) corpus: the unigram-frequency baseline."""
    ids = np.concatenate([np.asarray(s, dtype=np.int64) for d in encoded for s in d if s])
    return torch.from_numpy(np.bincount(ids, minlength=vocab_size))  # cpu: counts for statistics


def heldout_batch(tokenizer, encoded_test, n_pairs: int, max_length: int, seed: int = 1234) -> dict:
    """A fixed held-out batch: ``n_pairs`` next-sentence pairs from held-out documents with 15 % of
    their positions replaced by [MASK] (all of them: no random or kept ones, so every scored
    position is a real fill-in-the-blank). ``labels`` hold the answers, ``pair`` each position's
    pair (the unit to resample)."""
    batch = PairSampler(encoded_test, tokenizer, max_length, seed=seed).batch(n_pairs)
    inputs, labels = mask_tokens(batch["input_ids"], batch["special_tokens_mask"], mask_token_id=tokenizer.mask_token_id,
                                 vocab_size=len(tokenizer), generator=torch.Generator().manual_seed(seed),
                                 mask_share=1.0, random_share=0.0)
    return {**batch, "inputs": inputs, "labels": labels}


@dataclass
class Evaluation:
    """Held-out results of one checkpoint: per masked position whether the model's / the baseline's
    top-1 and top-5 contain the answer, the pair of each position, per-pair next-sentence outcomes."""

    step: int
    mlm_loss: float
    top1: np.ndarray
    top5: np.ndarray
    base_top1: np.ndarray
    base_top5: np.ndarray
    pair: np.ndarray
    nsp_correct: np.ndarray
    lens: np.ndarray  # [positions, L + 1]: top-1 correct when the head reads layer l (the masked-LM lens)


@torch.no_grad()
def evaluate(model, batch: dict, counts: torch.Tensor, step: int = -1) -> Evaluation:
    """One forward pass over the held-out ``batch``: the word head on every layer (the lens,
    :func:`lens_correct`) and on the last (the model's own prediction), and next-sentence."""
    from helpers.lens.compute import apply_head

    model.eval()
    out = model.bert(input_ids=batch["inputs"], token_type_ids=batch["token_type_ids"],
                     attention_mask=batch["attention_mask"], output_hidden_states=True)
    where = batch["labels"] != IGNORE
    answers = batch["labels"][where]
    lens = np.stack([(apply_head(model, h[where]).argmax(-1) == answers).cpu().numpy()
                     for h in out.hidden_states], 1)
    logits = model.cls.predictions(out.last_hidden_state[where])
    top5 = logits.topk(5, dim=-1).indices
    base5 = counts.topk(5).indices
    nsp = model.cls.seq_relationship(out.pooler_output).argmax(-1) == batch["next_sentence_label"]
    return Evaluation(step, float(F.cross_entropy(logits, answers)),
                      (top5[:, 0] == answers).cpu().numpy(), (top5 == answers[:, None]).any(-1).cpu().numpy(),
                      (answers == base5[0]).cpu().numpy(), (answers[:, None] == base5[None]).any(-1).cpu().numpy(),
                      where.nonzero()[:, 0].cpu().numpy(), nsp.cpu().numpy(), lens)


def accuracy_vs_baseline(ev: Evaluation, k: int = 1):
    """``(model accuracy, baseline accuracy, model - baseline)`` at top-``k``, each an Interval from a
    bootstrap that resamples pairs (positions of one pair share a context)."""
    from helpers.common.stats import cluster_bootstrap_ci

    m, b = (ev.top1, ev.base_top1) if k == 1 else (ev.top5, ev.base_top5)
    m, b = m.astype(float), b.astype(float)
    acc = cluster_bootstrap_ci(np.stack([m, b, m - b], 1), ev.pair)
    return acc[0], acc[1], acc[2]


@torch.no_grad()
def lens_correct(model, batch: dict) -> np.ndarray:
    """``[positions, L + 1]``: is the answer the top-1 token when the model's own masked-LM head
    (``helpers.lens.compute.apply_head``) reads layer ``l``'s vector at each [MASK]?"""
    from helpers.lens.compute import apply_head

    model.eval()
    bert = model.bert
    out = bert(input_ids=batch["inputs"], token_type_ids=batch["token_type_ids"],
               attention_mask=batch["attention_mask"], output_hidden_states=True)
    where = batch["labels"] != IGNORE
    answers = batch["labels"][where]
    rows = [(apply_head(model, h[where]).argmax(-1) == answers).cpu().numpy() for h in out.hidden_states]
    return np.stack(rows, 1)


def layers_vs_baseline(correct: np.ndarray, baseline: np.ndarray, pair: np.ndarray) -> list:
    """Per layer, the lens accuracy minus the unigram baseline's on the same positions
    (``correct``: ``[positions, L + 1]``, ``baseline``: ``[positions]``): a list of
    :class:`~helpers.common.stats.Verdict`, pairs resampled, Bonferroni over the layers."""
    from helpers.common.stats import bootstrap_size, cluster_replicates, replicate_verdicts

    diff = correct.astype(float) - baseline.astype(float)[:, None]
    reps = cluster_replicates(diff, pair, n_boot=bootstrap_size(diff.shape[1]), unit="pairs")
    names = ["embeddings" if l == 0 else f"layer {l}" for l in range(diff.shape[1])]
    return replicate_verdicts(reps, names, b="baseline", percent=True)


# ----------------------------------------------------------------------------- held-out text against three nulls
# A model that guesses hidden words well could be using context -- or only what a guesser without
# context can know. Three such guessers, each fitted on the *training* pairs:
#   unigram            the most frequent tokens of the corpus, everywhere;
#   position_segment   the most frequent token at that position bucket and segment: all that the
#                      embeddings can know at a [MASK] (the [MASK] vector plus position and segment);
#   bigram             the tokens the two unmasked neighbours make likely (a context window of one).
# The classes live in helpers/pretrain/nulls.py (course-mini's model card uses the same nulls).
NULL_NAMES = {"unigram": "most frequent tokens", "position_segment": "most frequent at that position",
              "bigram": "from the two neighbours"}


@dataclass
class FillMaskNulls:
    """The three guessers without a model, fitted on training pairs, and the ``frequent`` ids
    (the most frequent training tokens, left out of the "non-frequent answers")."""

    counts: np.ndarray
    position_segment: object
    bigram: object
    frequent: np.ndarray


def fit_nulls(tokenizer, encoded_train, max_length: int, *, n_pairs: int = 20000, frequent_k: int = 100,
              seed: int = 4321, bigram_lambda: float = 0.9) -> FillMaskNulls:
    """Fit the three nulls on ``n_pairs`` seeded training pairs (``bigram_lambda``: the smoothing
    course-mini's card chose on its dev documents)."""
    from helpers.pretrain.nulls import BigramContext, PositionSegmentUnigram
    from helpers.pretrain.data import make_pool, pool_positions

    pool = make_pool(encoded_train, tokenizer, n_pairs, max_length, seed)
    v = len(tokenizer)
    counts = np.bincount(pool_positions(pool)[0].astype(np.int64), minlength=v)
    special = set(tokenizer.all_special_ids)
    frequent = np.array([i for i in np.argsort(-counts, kind="stable") if int(i) not in special][:frequent_k])
    return FillMaskNulls(counts, PositionSegmentUnigram.fit(pool, v), BigramContext.fit(pool, v, bigram_lambda),
                         frequent)


def null_hits(nulls: FillMaskNulls, ho) -> dict:
    """``{null: (top-1 hits, top-5 hits)}`` over the scored positions of ``ho``
    (:func:`helpers.pretrain.data.held_out`), each a 0/1 array."""
    top5 = np.argsort(-nulls.counts, kind="stable")[:5]
    tops = {"unigram": np.broadcast_to(top5, (len(ho), 5)),
            "position_segment": nulls.position_segment.topk(ho.position, ho.segment),
            "bigram": nulls.bigram.topk(ho.left, ho.right)}
    return {name: ((t[:, 0] == ho.answer).astype(float), (t == ho.answer[:, None]).any(1).astype(float))
            for name, t in tops.items()}


@dataclass
class HeldOutScores:
    """One checkpoint on held-out text: per scored position, is the answer the model's top guess
    (``top1``) or among its five (``top5``), and the top guess of its own head reading each
    layer (``lens [positions, L + 1]``: the masked-LM lens); per pair, next-sentence right or wrong."""

    step: int
    mlm_loss: float
    top1: np.ndarray
    top5: np.ndarray
    lens: np.ndarray
    nsp_correct: np.ndarray


@torch.no_grad()
def score_checkpoint(model, ho, step: int = -1, slice_pairs: int = 64) -> HeldOutScores:
    """Run ``model`` (a ``BertForPreTraining``) over the held-out pairs of ``ho`` once, the head on
    every layer's vector at the scored positions (:func:`helpers.lens.compute.apply_head`)."""
    from helpers.lens.compute import apply_head

    model.eval()
    device = next(model.parameters()).device
    top1, top5, lens, nsp, loss_sum = [], [], [], [], 0.0
    for start in range(0, len(ho.inputs), slice_pairs):
        sl = slice(start, start + slice_pairs)
        out = model.bert(input_ids=ho.inputs[sl].to(device), token_type_ids=ho.batch["token_type_ids"][sl].to(device),
                         attention_mask=ho.batch["attention_mask"][sl].to(device), output_hidden_states=True)
        labels = ho.batch["labels"][sl].to(device)
        where = labels != IGNORE
        answers = labels[where]
        logits = model.cls.predictions(out.last_hidden_state[where])
        loss_sum += float(F.cross_entropy(logits, answers, reduction="sum"))
        best = logits.topk(5, dim=-1).indices
        top1.append((best[:, 0] == answers).cpu().numpy())
        top5.append((best == answers[:, None]).any(-1).cpu().numpy())
        lens.append(np.stack([(apply_head(model, h[where]).argmax(-1) == answers).cpu().numpy()
                              for h in out.hidden_states], 1))
        nsp.append((model.cls.seq_relationship(out.pooler_output).argmax(-1)
                    == ho.batch["next_sentence_label"][sl].to(device)).cpu().numpy())
    return HeldOutScores(step, loss_sum / len(ho), np.concatenate(top1).astype(float),
                         np.concatenate(top5).astype(float), np.concatenate(lens).astype(float),
                         np.concatenate(nsp).astype(float))


# ----------------------------------------------------------------------------- plain words for lesson 05
# Lesson 05 comes before the statistics lesson (06): its comparisons are stated in plain words. The
# rule is the course's one (helpers.common.stats.verdict): a difference counts when its interval,
# widened for the number of comparisons read together, lies entirely on one side of 0.
@dataclass
class PlainComparison:
    """A's top-1 minus B's on the same blanks: ``kind`` is "higher", "lower" or "not shown"
    (the verdict's kind, worded for a reader before lesson 06) and ``text`` the numbers."""

    kind: str
    text: str


def compare_plainly(a_hits, b_hits, documents, *, a: str, b: str, family: int = 1) -> PlainComparison:
    """A's share of blanks guessed minus B's, on the same blanks, with the range a redraw of the
    held-out documents gives (the interval of :func:`helpers.common.stats.paired_binary_interval`
    at :func:`~helpers.common.stats.family_level`), in words a Part 1 reader can read."""
    from helpers.common.stats import family_level, paired_binary_interval, verdict

    iv = paired_binary_interval(a_hits, b_hits, clusters=documents, level=family_level(family))
    v = verdict(iv, a=a, b=b, family=family, percent=True)
    kind = {"higher": "higher", "lower": "lower"}.get(v.kind, "not shown")
    together = "" if family == 1 else f"; widened because {family} comparisons are read together"
    word = {"higher": "above", "lower": "below", "not shown": "not shown above or below"}[kind]
    return PlainComparison(kind, f"{a} minus {b}: {100 * iv.estimate:+.1f} points; redrawing the held-out documents "
                                 f"gives {100 * iv.low:+.1f} to {100 * iv.high:+.1f} points{together}: {word} {b}.")


# -- lesson 05's "real scale": the real BERT of the run's language, its sizes read from a config ------
# BertConfig's defaults are BERT-base's; Google's bert-base-chinese has the same sizes with a
# 21,128-entry vocabulary (mostly single characters).
REAL_MODELS = {"en": ("BERT-base", {}), "zh": ("bert-base-chinese", {"vocab_size": 21128})}
# Devlin et al. (2019): 900,000 steps of 256 x 128 tokens, then 100,000 steps of 256 x 512
BERT_BASE_POSITIONS = 900_000 * 256 * 128 + 100_000 * 256 * 512


def real_scale_lines(language: str, cfg, n_params: int, seen: int) -> list[str]:
    """Lesson 05's comparison with the real model of ``language`` (:data:`REAL_MODELS`): its sizes
    and parameter count read from a ``BertConfig`` (the model built on PyTorch's ``meta`` device:
    shapes, no weights), then token positions and training compute (about 6 x parameters per token
    position) against this run's ``cfg``, ``n_params`` and ``seen`` positions. bert-base-chinese's
    own schedule is not published apart from BERT-base's: a Chinese line says it assumes it."""
    import torch
    from transformers import BertConfig, BertModel

    name, sizes = REAL_MODELS[language]
    real = BertConfig(**sizes)
    with torch.device("meta"):  # shapes only
        real_params = sum(p.numel() for p in BertModel(real).parameters())
    assumed = "" if language == "en" else f" (BERT-base's published schedule, assumed for {name})"
    compute = 6 * real_params * BERT_BASE_POSITIONS / (6 * n_params * seen)
    return [f"{name}: {real.num_hidden_layers} layers x {real.hidden_size}, {real.num_attention_heads} heads, "
            f"vocabulary {real.vocab_size:,}, {real_params / 1e6:.0f} M parameters; this run: {cfg.layers} x "
            f"{cfg.hidden}, vocabulary {cfg.vocab_size:,}, {n_params / 1e6:.2f} M ({real_params / n_params:,.0f} x "
            "fewer)",
            f"token positions: {name} {BERT_BASE_POSITIONS:.2e}{assumed}, this run {seen:.2e} "
            f"({BERT_BASE_POSITIONS / seen:,.0f} x fewer)",
            f"training compute, roughly: {compute:,.0f} x less than {name}"]
