"""Stored runs of lesson 05's recipe (``data/pretrain_history/``): what a learner should see after
1,000, 3,000 and 10,000 steps, how much one run differs from the next, and checkpoints across a
longer run for the lesson's "layers forming" figure.

    python -m helpers.pretrain.history            # train and score every run not yet stored
    python -m helpers.pretrain.history --only 10k # one run (the others stay as they are)
    python -m helpers.pretrain.history card       # data/pretrain_history/README.md from history.json

Resumable run by run: each finished run is written to ``history.json`` at once, and a second
call trains only the runs that are missing. Every run is :func:`helpers.pretrain.compute.lesson_recipe`
with a few settings changed (:data:`RUNS`), on the lesson's document split (seed 0), trained with
:func:`~helpers.pretrain.compute.pretrain` (a scratch course cache, so nothing of the learner's is
touched) and scored on the same held-out blanks as the lesson (:func:`score`: every scored position
a real ``[MASK]``, 95 % intervals resampling documents) against the three guessers without a model
(:func:`~helpers.pretrain.compute.fit_nulls`). Only the ``10k`` run's checkpoints keep their
weights (fp16, about 2 MB each); the vocabulary all runs share is saved once.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import os
import platform
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from helpers.model.paths import DATA_DIR
from helpers.pretrain.compute import (NULL_NAMES, fit_nulls, lesson_recipe, null_hits, pretrain,
                                      score_checkpoint)
from helpers.pretrain.data import corpus_hash, encode_documents, held_out, load_corpus, split_documents, train_wordpiece

HISTORY_DIR = DATA_DIR / "pretrain_history"
HISTORY = "history.json"
SPLIT_SEED = 0  # the lesson's default SEED: the same held-out documents
HELD_OUT_PAIRS = 1500  # held-out pairs scored per checkpoint (the lesson scores as many)
NULL_PAIRS = 20000  # training pairs the guessers without a model are fitted on (as in the lesson)
# name -> (what it shows, settings changed from the lesson's recipe, checkpoints whose weights ship)
RUNS = {
    "1k": ("1,000 steps (about 1½ minutes on 2 cores)", dict(steps=1000), ()),
    "3k": ("the lesson's default: 3,000 steps (seed 0)", dict(steps=3000, seed=0), ()),
    "3k-seed1": ("the default with seed 1", dict(steps=3000, seed=1), ()),
    "3k-seed2": ("the default with seed 2", dict(steps=3000, seed=2), ()),
    "10k": ("10,000 steps (about 15 minutes on 2 cores), checkpoints kept", dict(steps=10000),
            (0, 100, 300, 1000, 3000, 10000)),
    "3k-64tokens": ("the default at 64-token pairs (batches of 24: the same tokens per step)",
                    dict(steps=3000, max_length=64, batch_size=24), ()),
}


WEIGHTS_FILE = "model.safetensors"  # what save_weights writes (course-mini's WEIGHTS too)


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
    return hashlib.sha256((folder / WEIGHTS_FILE).read_bytes()).hexdigest()


def lesson_data(max_length: int, vocab_size: int, seed: int = SPLIT_SEED):
    """``(tokenizer, encoded train, encoded held-out)`` exactly as lesson 05 builds them."""
    docs = load_corpus()
    train_docs, test_docs = split_documents(docs, held_out=0.1, seed=seed)
    tok = train_wordpiece(train_docs, vocab_size, max_length)
    return tok, encode_documents(tok, train_docs), encode_documents(tok, test_docs)


def _interval(values: np.ndarray, clusters: np.ndarray) -> dict:
    from helpers.common.stats import cluster_bootstrap_ci

    iv = cluster_bootstrap_ci(values, clusters)
    return {"estimate": float(iv.estimate), "low": float(iv.low), "high": float(iv.high)}


def score(model, ho, nulls_hits: dict) -> dict:
    """One checkpoint on the held-out blanks ``ho``: top-1 / top-5, the lens's top-1 per layer,
    next-sentence accuracy, and the model's top-1 minus each guesser's (paired on the same blanks),
    each with a 95 % interval that resamples documents."""
    sc = score_checkpoint(model, ho)
    out = {"mlm_loss": sc.mlm_loss, "top1": _interval(sc.top1, ho.document), "top5": _interval(sc.top5, ho.document),
           "lens_top1": [_interval(sc.lens[:, layer], ho.document) for layer in range(sc.lens.shape[1])],
           "nsp": _interval(sc.nsp_correct, ho.pair_document), "minus_null": {}}
    for name, (t1, _) in nulls_hits.items():
        out["minus_null"][name] = _interval(sc.top1 - t1, ho.document)
    return out


def read_history(folder: Path = HISTORY_DIR) -> dict:
    """``history.json`` (an empty record when no run is stored yet)."""
    path = Path(folder) / HISTORY
    return json.loads(path.read_text()) if path.exists() else {"runs": {}}


def train_run(name: str, folder: Path = HISTORY_DIR) -> dict:
    """Train and score one run of :data:`RUNS` and add it to ``history.json``."""
    if name not in RUNS:
        raise ValueError(f"no run named {name!r}; the runs are {list(RUNS)}.")
    what, settings, keep = RUNS[name]
    cfg = lesson_recipe(**settings)
    tok, enc_train, enc_test = lesson_data(cfg.max_length, cfg.vocab_size)

    nulls = fit_nulls(tok, enc_train, cfg.max_length, n_pairs=NULL_PAIRS, seed=SPLIT_SEED)
    ho = held_out(tok, enc_test, HELD_OUT_PAIRS, cfg.max_length, seed=SPLIT_SEED)
    hits = null_hits(nulls, ho)
    with tempfile.TemporaryDirectory() as scratch:
        os.environ["COURSE_CACHE"] = scratch  # the run's own cache: the learner's course-tiny stays
        run = pretrain(cfg, tok, enc_train, corpus_hash(), register=False, checkpoints=keep or None)
        checkpoints = {}
        for step in sorted(run.checkpoints):
            model = run.load(step)
            checkpoints[str(step)] = score(model, ho, hits)
            if step in keep:  # fp16 on disk, config dtype float32: course-mini's saver
                save_weights(model, model, Path(folder) / name / f"step_{step:06d}")
    Path(folder).mkdir(parents=True, exist_ok=True)
    if cfg.max_length == lesson_recipe().max_length and not (Path(folder) / "tokenizer" / "tokenizer.json").exists():
        tok.save_pretrained(str(Path(folder) / "tokenizer"))
    from helpers.pretrain.data import vocabulary_hash

    entry = {"what": what, "config": {k: getattr(cfg, k) for k in cfg.__dataclass_fields__},
             "tokens_per_step": cfg.batch_size * cfg.max_length, "seconds": round(run.seconds, 1),
             "threads": torch.get_num_threads(), "machine": f"{platform.processor() or platform.machine()}, "
             f"{os.cpu_count()} cores", "torch": torch.__version__, "python": platform.python_version(),
             "vocabulary_hash": vocabulary_hash(tok), "held_out_pairs": HELD_OUT_PAIRS,
             "blanks": len(ho), "documents": int(len(np.unique(ho.document))),
             "nulls": {n: _interval(hits[n][0], ho.document) for n in NULL_NAMES},
             "kept_weights": [int(s) for s in keep], "checkpoints": checkpoints,
             "finished": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    history = read_history(folder)  # read again: another run may have finished meanwhile
    history["runs"][name] = entry
    history["corpus_sha256"] = corpus_hash()
    (Path(folder) / HISTORY).write_text(json.dumps(history, indent=1) + "\n")
    return entry


def final(entry: dict) -> dict:
    """The scores of a stored run's last checkpoint."""
    return entry["checkpoints"][str(entry["config"]["steps"])]


def beats(entry: dict, null: str, step: int | None = None) -> bool:
    """Whether a stored checkpoint's top-1 is above a guesser's: the interval of the paired
    difference lies above 0."""
    scores = final(entry) if step is None else entry["checkpoints"][str(step)]
    return scores["minus_null"][null]["low"] > 0


def _pct(iv: dict) -> str:
    return f"{100 * iv['estimate']:.1f} % [{100 * iv['low']:.1f}, {100 * iv['high']:.1f}]"


def _pp(iv: dict) -> str:
    return f"{100 * iv['estimate']:+.1f} [{100 * iv['low']:+.1f}, {100 * iv['high']:+.1f}]"


def card_text(folder: Path = HISTORY_DIR) -> str:
    """``README.md`` of the stored runs, every number read from ``history.json``."""
    history = read_history(folder)
    runs = history["runs"]
    lines = [
        "# Stored runs of lesson 05's recipe",
        "",
        "<!-- Generated by `python -m helpers.pretrain.history card` from history.json: edit the generator "
        "(helpers/pretrain/history.py), not this file. -->",
        "",
        "Lesson 05 pre-trains a tiny BERT live. These runs of the same recipe (`lesson_recipe` in "
        "`helpers/pretrain/compute.py`), trained once by `python -m helpers.pretrain.history`, tell the learner "
        "what to expect after 1,000, 3,000 and 10,000 steps, how much a run differs from the next (three seeds of "
        "the default), what the same steps give on 64-token pairs, and, through the kept checkpoints of the "
        "10,000-step run, how the layers form as training goes on. Same corpus and document split as the "
        "lesson (`data/pretrain/`, held-out share 0.1, seed 0).",
        "",
        "Held-out blanks: every scored position a real `[MASK]`; 95 % intervals resample documents. "
        "\"minus\" columns: the model's top-1 minus a guesser's on the same blanks, in points.",
        "",
        "| run | steps | pair length | training time | top-1 | minus 'most frequent at that position' "
        "| minus 'from the two neighbours' | next sentence |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, e in runs.items():
        f = final(e)
        lines.append(f"| `{name}` | {e['config']['steps']:,} | {e['config']['max_length']} | "
                     f"{e['seconds'] / 60:.1f} min ({e['threads']} thread{'s' * (e['threads'] > 1)}) | "
                     f"{_pct(f['top1'])} | {_pp(f['minus_null']['position_segment'])} | "
                     f"{_pp(f['minus_null']['bigram'])} | {_pct(f['nsp'])} |")
    lines += ["", "The guessers without a model on the same blanks (top-1):", ""]
    for name, e in runs.items():
        lines.append(f"* `{name}`: " + "; ".join(f"{NULL_NAMES[n]} {_pct(iv)}" for n, iv in e["nulls"].items()))
    if "10k" in runs:
        e = runs["10k"]
        lines += ["", "## The 10,000-step run's checkpoints (weights in `10k/step_NNNNNN/`)", "",
                  "| step | tokens seen | top-1 | lens top-1 per layer (emb, 1, ..., L) |", "| --- | --- | --- | --- |"]
        for step, sc in e["checkpoints"].items():
            lens = ", ".join(f"{100 * iv['estimate']:.1f}" for iv in sc["lens_top1"])
            lines.append(f"| {int(step):,} | {int(step) * e['tokens_per_step']:,} | {_pct(sc['top1'])} | {lens} |")
    e0 = next(iter(runs.values()), None)
    if e0 is not None:
        lines += ["", "## Provenance", "",
                  f"Machine: {e0['machine']}; PyTorch {e0['torch']}, Python {e0['python']}; the runs were trained "
                  "one after another in the background of a shared 2-core machine, so their times are what such a "
                  "machine gives, not a benchmark. The vocabulary (`tokenizer/`, hash "
                  f"`{e0['vocabulary_hash']}`) is the one lesson 05 learns for these settings; the trainer can break "
                  "ties differently in another process, so a learner's vocabulary may differ in a few entries. "
                  f"Corpus sha256 `{history.get('corpus_sha256', '')}`. Licence of the weights: MIT, like the "
                  "repository (trained on public-domain text)."]
    return "\n".join(lines) + "\n"


def write_card(folder: Path = HISTORY_DIR) -> Path:
    path = Path(folder) / "README.md"
    path.write_text(card_text(folder), encoding="utf-8")
    return path


def expectation_rows(step_seconds: float, folder: Path = HISTORY_DIR) -> list[dict]:
    """Lesson 05's "what to expect" table: per stored run, its steps and pair length, how long that
    many steps take at ``step_seconds`` (the learner's measured time per step; a run at another
    length is shown at the time it took when stored), its top-1 on held-out blanks and whether it
    beats the guessers "most frequent at that position" and "from the two neighbours". The three
    seeds of the default are one row: their range."""
    runs = read_history(folder)["runs"]
    if not runs:
        raise FileNotFoundError(f"no stored runs in {Path(folder) / HISTORY}: run `python -m helpers.pretrain.history`.")
    default = lesson_recipe()
    groups: dict[str, list[dict]] = {}
    for name, e in runs.items():
        groups.setdefault(name.split("-seed")[0], []).append(e)
    rows = []
    for name, entries in groups.items():
        e = entries[0]
        cfg = e["config"]
        same = cfg["max_length"] == default.max_length and cfg["batch_size"] == default.batch_size
        minutes = cfg["steps"] * step_seconds / 60 if same else None
        tops = [final(x)["top1"]["estimate"] for x in entries]
        top = (f"{100 * tops[0]:.1f} %" if len(tops) == 1 else
               f"{100 * min(tops):.1f} to {100 * max(tops):.1f} % ({len(tops)} seeds)")

        def verdict_words(null: str) -> str:
            won = sum(beats(x, null) for x in entries)
            if won == len(entries):
                return "above" if len(entries) == 1 else f"above (all {len(entries)} seeds)"
            return "not above" if won == 0 else f"above in {won} of {len(entries)} seeds"

        rows.append({"stored run": f"{cfg['steps']:,} steps, {cfg['max_length']}-token pairs",
                     "about (minutes here)": f"{minutes:.1f}" if minutes is not None else
                     f"({e['seconds'] / 60:.1f} when stored)",
                     "top-1": top, "vs 'most frequent at that position'": verdict_words("position_segment"),
                     "vs 'from the two neighbours'": verdict_words("bigram")})
    return rows


def stored_spread(folder: Path = HISTORY_DIR) -> tuple[float, float, int]:
    """``(low, high, seeds)``: the range of top-1 that the stored runs of the default recipe (every
    seed) make plausible: from the lowest seed's interval low end to the highest seed's high end."""
    runs = read_history(folder)["runs"]
    entries = [e for n, e in runs.items() if n.split("-seed")[0] == "3k"]
    if not entries:
        raise FileNotFoundError(f"no stored default runs in {Path(folder) / HISTORY}.")
    return (min(final(e)["top1"]["low"] for e in entries), max(final(e)["top1"]["high"] for e in entries),
            len(entries))


@dataclass
class StoredLens:
    """The masked-LM lens of the stored run's kept checkpoints on held-out blanks: per step one
    Interval per layer (``lens``), the guessers' top-1 (``null_lines``, by display name), the
    held-out masked-LM loss as a share of ln V against tokens seen (``loss_share``), and the
    plain-word comparisons of the deepest layer with each guesser (``details``)."""

    lens: dict
    null_lines: dict
    loss_share: dict
    comparisons: dict
    details: list

    def deepest_beats(self, step: int, null: str) -> bool:
        return self.comparisons[(step, null)].kind == "higher"


def stored_lens(run: str = "10k", n_pairs: int = HELD_OUT_PAIRS, folder: Path = HISTORY_DIR,
                null_pairs: int = NULL_PAIRS) -> StoredLens:
    """Load every kept checkpoint of a stored run (fp16 on disk, float32 in memory, eager attention)
    and score it on ``n_pairs`` held-out pairs tokenized with the stored vocabulary."""
    import math

    from transformers import BertForPreTraining, BertTokenizerFast
    from transformers.utils import logging as hf_logging

    from helpers.common.stats import cluster_bootstrap_ci
    from helpers.pretrain.compute import compare_plainly

    entry = read_history(folder)["runs"].get(run)
    if entry is None or not entry["kept_weights"]:
        raise FileNotFoundError(f"no kept checkpoints of run {run!r} in {folder}: run "
                                f"`python -m helpers.pretrain.history --only {run}`.")
    cfg = lesson_recipe(**{k: v for k, v in entry["config"].items() if k != "max_documents"})
    tok = BertTokenizerFast.from_pretrained(str(Path(folder) / "tokenizer"))
    train_docs, test_docs = split_documents(load_corpus(), held_out=0.1, seed=SPLIT_SEED)
    enc_train, enc_test = encode_documents(tok, train_docs), encode_documents(tok, test_docs)
    nulls = fit_nulls(tok, enc_train, cfg.max_length, n_pairs=null_pairs, seed=SPLIT_SEED)
    ho = held_out(tok, enc_test, n_pairs, cfg.max_length, seed=SPLIT_SEED)
    hits = null_hits(nulls, ho)
    lens, loss, comparisons, details = {}, {}, {}, []
    hf_logging.disable_progress_bar()
    try:
        for step in entry["kept_weights"]:
            model = BertForPreTraining.from_pretrained(str(Path(folder) / run / f"step_{step:06d}"),
                                                       attn_implementation="eager").eval()
            sc = score_checkpoint(model, ho, step)
            lens[step] = cluster_bootstrap_ci(sc.lens, ho.document)
            loss[step * entry["tokens_per_step"]] = sc.mlm_loss / math.log(len(tok))
            deepest = sc.lens[:, -1]
            for null in ("position_segment", "bigram"):
                c = compare_plainly(deepest, hits[null][0], ho.document, a=f"step {step:,}, deepest layer",
                                    b=f"'{NULL_NAMES[null]}'", family=len(entry["kept_weights"]))
                comparisons[(step, null)] = c
                details.append(c.text)
    finally:
        hf_logging.enable_progress_bar()
    null_lines = {NULL_NAMES[n]: float(hits[n][0].mean()) for n in ("position_segment", "bigram")}
    return StoredLens(lens, null_lines, loss, comparisons, details)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m helpers.pretrain.history", description=__doc__.split("\n\n")[0])
    parser.add_argument("command", nargs="?", default="train", choices=("train", "card"))
    parser.add_argument("--only", nargs="*", default=None, help=f"runs to (re)train, of {list(RUNS)}")
    args = parser.parse_args(argv)
    if args.command == "card":
        print(f"wrote {write_card()}")
        return
    done = read_history()["runs"]
    todo = args.only if args.only else [n for n in RUNS if n not in done]
    for name in todo:
        t0 = time.perf_counter()
        entry = train_run(name)
        top = final(entry)["top1"]["estimate"]
        print(f"{name}: top-1 {100 * top:.1f} % after {entry['config']['steps']} steps "
              f"({entry['seconds']:.0f} s of training, {time.perf_counter() - t0:.0f} s in all)", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
