"""course-mini's model card (:mod:`helpers.mini`): :func:`card_text` reads every number from
``run.json``, ``train_log.jsonl`` and ``evaluation.json`` (:func:`read_log`) and
:func:`write_card` writes ``data/course_mini/README.md`` with the loss curve
(:func:`helpers.mini.plots.plot_loss_curve`).
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import numpy as np

from helpers.mini.config import CURVE, EVALUATION, LOG, NULLS, RUN, WEIGHTS
from helpers.model.paths import COURSE_MINI, COURSE_MINI_DIR, DATA_DIR


# ----------------------------------------------------------------------------- the model card


def read_log(folder: Path) -> tuple[list[dict], list[dict]]:
    """``(training lines, dev lines)`` of ``train_log.jsonl``."""
    lines = [json.loads(x) for x in (Path(folder) / LOG).read_text().splitlines() if x.strip()]
    return [x for x in lines if "mlm_loss" in x], [x for x in lines if "dev_mlm_loss" in x]


def _pct(iv: dict) -> str:
    return f"{100 * iv['estimate']:.1f} % [{100 * iv['low']:.1f}, {100 * iv['high']:.1f}]"


def _share_of(iv: dict, n: int) -> str:
    """A rate over ``n`` items: its interval, or -- when every resample gives the same value, as for
    a null that never once gets an item right -- the count itself (a zero-width interval would claim
    a certainty a resampling cannot give)."""
    if iv["low"] == iv["high"]:
        right = round(iv["estimate"] * n)
        return f"{100 * iv['estimate']:.1f} % ({right:,} of the {n:,} right, in every resample)"
    return _pct(iv)


def _pp(iv: dict) -> str:
    return f"{100 * iv['estimate']:+.1f} pp [{100 * iv['low']:+.1f}, {100 * iv['high']:+.1f}]"


def _verdict(iv: dict, null: str) -> str:
    if iv["low"] > 0:
        return f"better than the {null}"
    if iv["high"] < 0:
        return f"worse than the {null}"
    return f"not shown different from the {null} (the interval includes 0: inconclusive)"


def card_text(folder: Path = COURSE_MINI_DIR) -> str:
    """The model card, as Markdown, from the folder's files."""
    folder = Path(folder)
    run = json.loads((folder / RUN).read_text())
    ev = json.loads((folder / EVALUATION).read_text())

    def rare(guesser: str) -> str:  # top-1 on the non-frequent answers, as an interval or a count
        return _share_of(ev["rare_top1"][guesser], ev["rare_positions"])

    config = json.loads((folder / "config.json").read_text())
    sources = json.loads((DATA_DIR / "pretrain" / "SOURCES.json").read_text())
    sha = hashlib.sha256((folder / WEIGHTS).read_bytes()).hexdigest()
    if sha != ev["weights_sha256"] or sha != run["best"]["weights_sha256"]:
        raise ValueError(f"{folder / WEIGHTS} (sha256 {sha[:12]}...) is not the file that was evaluated "
                         f"({ev['weights_sha256'][:12]}...) or trained ({run['best']['weights_sha256'][:12]}...): "
                         "run `python -m helpers.mini.compute evaluate` again.")
    train, dev = read_log(folder)
    c = config
    acc, diff = ev["accuracy"], ev["difference"]
    best_dev = min(dev, key=lambda x: x["dev_mlm_loss"])
    last_dev = dev[-1]
    best_nsp = min(dev, key=lambda x: x["dev_nsp_loss"])
    passes = run["tokens_seen"] / ev["train_tokens"]
    reuse = run["steps_done"] * run["config"]["batch_size"] / run["pool_pairs"]  # draws per pair of the pool
    size_mib = (folder / WEIGHTS).stat().st_size / 2 ** 20
    n_params = _parameters(folder)
    quarter = min(dev, key=lambda x: abs(x["step"] - 0.75 * run["steps_done"]))  # the dev score nearest 3/4 in
    change = (last_dev["dev_mlm_loss"] - quarter["dev_mlm_loss"]) / quarter["dev_mlm_loss"]
    converged = (f"the dev masked-LM loss was lowest at the last dev score (step {best_dev['step']:,} of "
                 f"{run['steps_done']:,}); over the last quarter of the run it went from {quarter['dev_mlm_loss']:.3f} "
                 f"(step {quarter['step']:,}) to {last_dev['dev_mlm_loss']:.3f} ({100 * change:+.1f} %): flattening "
                 "but still falling, so it is **not shown to have converged**, and a longer run might lower it a "
                 "little further"
                 if best_dev["step"] == last_dev["step"] else
                 f"the dev masked-LM loss was lowest at step {best_dev['step']:,} and did not improve over the "
                 f"remaining {run['steps_done'] - best_dev['step']:,} steps (those weights are the ones shipped)")
    nsp_note = (f"The dev next-sentence loss was lowest at step {best_nsp['step']:,} ({best_nsp['dev_nsp_loss']:.3f}) "
                f"and ended at {last_dev['dev_nsp_loss']:.3f} while the training next-sentence loss kept falling "
                f"(last logged {train[-1]['nsp_loss']:.3f}): that head over-fits the training documents."
                if best_nsp["step"] != last_dev["step"] else
                f"The dev next-sentence loss was lowest at the end ({last_dev['dev_nsp_loss']:.3f}).")
    m1, m5 = acc["model"]["top1"], acc["model"]["top5"]
    lines = [
        f"# `{COURSE_MINI}` -- a BERT-mini pre-trained for this course",
        "",
        "<!-- Generated by `python -m helpers.mini.compute card` from run.json, train_log.jsonl and "
        "evaluation.json: edit the generator (helpers/mini/compute.py, card_text), not this file. -->",
        "",
        f"A small English BERT with **trained masked-LM and next-sentence heads**, pre-trained once with "
        f"BERT's two objectives (Devlin et al., 2019) on the public-domain corpus of `data/pretrain/` "
        f"(Shakespeare's plays and the King James Bible). It exists because no English BERT with a trained "
        f"masked-LM head can be loaded offline here (the bundled all-MiniLM-L6-v2 has none). "
        f"Load it with `load_model(\"{COURSE_MINI}\")` (a `BertModel`) or as `BertForPreTraining` / "
        f"`BertForMaskedLM` from this folder, always with `attn_implementation=\"eager\"`.",
        "",
        f"On masked words of held-out documents it puts the right WordPiece first {_pct(m1)} of the time "
        f"(top 5: {_pct(m5)}); "
        f"that is {_verdict(diff['position_segment']['top1'], 'position-and-segment unigram null')} "
        f"({_pct(acc['position_segment']['top1'])}) and "
        f"{_verdict(diff['bigram']['top1'], 'neighbour-bigram null')} ({_pct(acc['bigram']['top1'])}).",
        "",
        "## The model",
        "",
        "| | |",
        "| --- | --- |",
        f"| architecture | `BertForPreTraining`: {c['num_hidden_layers']} layers, hidden {c['hidden_size']}, "
        f"{c['num_attention_heads']} heads, feed-forward {c['intermediate_size']} (the sizes Turc et al., 2019, "
        f"\"Well-Read Students Learn Better\", call BERT-mini), post-LayerNorm, GELU |",
        f"| vocabulary | {c['vocab_size']:,} lower-cased WordPieces learnt on the training documents "
        f"(`vocab.txt`, `tokenizer.json`; uncased, like `bert-base-uncased`) |",
        f"| inputs | at most {c['max_position_embeddings']} tokens (`[CLS] A [SEP] B [SEP]`); segment ids 0/1 |",
        f"| parameters | {n_params:,} (the decoder shares the word-embedding matrix) |",
        f"| weights | `{WEIGHTS}`, fp16, {size_mib:.1f} MiB; `config.json` says `dtype: float32`, so "
        f"`from_pretrained` returns a float32 model |",
        f"| sha256 of `{WEIGHTS}` | `{sha}` |",
        "",
        f"**Why this size.** BERT-mini's sizes keep the fp16 file small enough to commit ({size_mib:.1f} MiB). "
        f"The vocabulary is smaller than BERT's 30,522 because the corpus is small: the training documents hold "
        f"{ev['train_tokens']:,} WordPieces, and even at {c['vocab_size']:,} entries the median entry occurs "
        f"{ev['vocabulary_counts']['median']:.0f} times in them and {ev['vocabulary_counts']['under_20']:,} entries "
        f"occur fewer than 20 times; a larger vocabulary would add entries seen even more rarely, whose embeddings "
        f"(and tied output rows) could hardly be learnt.",
        "",
        "## Data",
        "",
        "| source | documents | licence |",
        "| --- | --- | --- |",
        *[f"| `{s['output']}` ({s['package']} {s['version']}) | {s['documents']:,} | {s['text_licence']} |"
          for s in sources.values()],
        "",
        f"Whole documents (a scene, a chapter) are split once, seeded: {ev['train_documents']:,} for training, "
        f"{ev['dev_documents']:,} for the dev split (choosing the checkpoint and the bigram null's smoothing) and "
        f"{ev['test_documents']:,} for the test split (this card's numbers only). Next-sentence pairs follow "
        f"Google's recipe (`helpers.pretrain.data.PairSampler`: B is the real continuation half of the time, else "
        f"text from another document), {run['pool_pairs']:,} of them drawn once into a pool "
        f"(`helpers.mini.data.make_pool`) from which every batch takes its rows; 15 % of the non-special positions "
        f"are scored, 80 % of them shown as `[MASK]`, 10 % as a random WordPiece, 10 % unchanged (`mask_tokens`), "
        f"drawn afresh for every batch.",
        "",
        "## Training",
        "",
        "| | |",
        "| --- | --- |",
        f"| hardware | {run['device']}, {run['precision']}; PyTorch {run['torch']} |",
        f"| time | {run['train_seconds'] / 60:.1f} min of training (a fixed wall-clock budget), "
        f"{run['setup_seconds']:.0f} s of data setup |",
        f"| steps | {run['steps_done']:,} of {run['planned_steps']:,} planned, batches of "
        f"{run['config']['batch_size']:,} pairs |",
        f"| tokens seen | {run['tokens_seen']:,} (non-padding positions), about {passes:,.0f} passes over the "
        f"training WordPieces; the batches are drawn from a fixed pool of {run['pool_pairs']:,} pairs made once, "
        f"so each pair was seen about {reuse:.1f} times, each time with a fresh mask |",
        f"| optimiser | AdamW, peak lr {run['config']['lr']:g}, {run['warmup_steps']:,} warm-up steps then linear "
        f"decay to 0, weight decay {run['config']['weight_decay']:g} (not on biases and LayerNorm), gradient clip "
        f"1.0, dropout {run['config']['dropout']:g}, seed {run['config']['seed']} |",
        f"| final training loss | masked-LM {train[-1]['mlm_loss']:.3f}, next-sentence {train[-1]['nsp_loss']:.3f} "
        f"(mean of the last {_last_stretch(train)} steps) |",
        f"| dev loss (shipped weights) | masked-LM {run['best']['dev_mlm_loss']:.3f}, next-sentence "
        f"{run['best']['dev_nsp_loss']:.3f}; masked-LM top-1 {100 * run['best']['dev_top1']:.1f} % (80/10/10 "
        f"masking) at step {run['best']['step']:,} |",
        f"| step 0 (untrained) | dev masked-LM {dev[0]['dev_mlm_loss']:.3f} (ln V = {math.log(c['vocab_size']):.3f}), "
        f"next-sentence {dev[0]['dev_nsp_loss']:.3f} (ln 2 = {math.log(2):.3f}) |",
        "",
        f"Convergence: {converged}. {nsp_note} After about {passes:,.0f} passes the model fits its training "
        f"documents better than unseen ones (masked-LM loss {train[-1]['mlm_loss']:.2f} in training, "
        f"{last_dev['dev_mlm_loss']:.2f} on dev documents at the end).",
        "",
        f"![Masked-LM and next-sentence loss against tokens seen, training and dev]({CURVE})",
        "",
        "## Held-out fill-mask",
        "",
        f"{ev['test_pairs']:,} seeded next-sentence pairs from the **test documents**; 15 % of their non-special "
        f"positions replaced by `[MASK]` (all of them: every scored position is a real blank), "
        f"{ev['positions']:,} positions in {ev['documents_scored']:,} documents. Intervals: 95 % percentile "
        f"bootstrap that resamples **documents** (`cluster_bootstrap_ci`), seed {ev['seed']}; differences are "
        f"paired on the same positions.",
        "",
        "| predictor | top-1 | top-5 | top-1 minus null | top-5 minus null |",
        "| --- | --- | --- | --- | --- |",
        f"| {COURSE_MINI} | {_pct(m1)} | {_pct(m5)} | | |",
        *[f"| {NULLS[k]} | {_pct(acc[k]['top1'])} | {_pct(acc[k]['top5'])} | {_pp(diff[k]['top1'])} | "
          f"{_pp(diff[k]['top5'])} |" for k in NULLS],
        "",
        f"* **Null (a), position and segment**: the most frequent training WordPiece at that position "
        f"(buckets of {ev['position_bucket']} positions) in that segment. At a `[MASK]` the input vector is the "
        f"`[MASK]` embedding plus the position and segment embeddings, so this is what the embeddings alone can "
        f"know. Fitted on {ev['baseline_pairs']:,} training pairs.",
        f"* **Null (b), neighbour bigrams**: each candidate w scored by log P(w | left neighbour) + log P(right "
        f"neighbour | w) from training bigram counts (a neighbour that is itself masked is left out; `[CLS]` and "
        f"`[SEP]` count), interpolated with unigram frequencies; weight {ev['bigram_lambda']:g} chosen on the dev "
        f"documents. It sees one token either side; the model sees the whole pair.",
        "",
        f"**Non-frequent answers.** On the {ev['rare_positions']:,} positions ({ev['rare_documents']:,} documents) "
        f"whose answer is not among the {ev['frequent_k']} most frequent training WordPieces, top-1 is "
        f"{rare('model')} for {COURSE_MINI}, {rare('position_segment')} for null (a) and {rare('bigram')} for "
        f"null (b); the model minus null (b): {_pp(ev['rare_difference']['bigram'])}.",
        "",
        f"**Next sentence.** On the same test pairs ({100 * ev['nsp_is_next_share']:.0f} % real continuations) "
        f"the next-sentence head is right {_pct(ev['nsp_accuracy'])} of the time (documents resampled). A guesser "
        f"without a model, \"B follows A whenever B comes from the same book as A\", is right "
        f"{_pct(ev['nsp_same_book'])} of the time, because a random B usually comes from the other book; the head "
        f"minus that guesser: {_pp(ev['nsp_minus_same_book'])}, so the head is "
        f"{_verdict(ev['nsp_minus_same_book'], 'same-book guesser')}.",
        "",
        "## What it is not",
        "",
        f"* **Tiny**: {n_params / 1e6:.1f} M parameters against BERT-base's 110 M, trained for "
        f"{run['train_seconds'] / 60:.1f} minutes on {ev['train_tokens'] / 1e6:.1f} M WordPieces; BERT-base saw "
        f"3.3 B words for a million steps (Devlin et al., 2019). Its numbers are not comparable to BERT-base's, and "
        f"findings about BERT-base (which layer holds what) need not hold for it.",
        "* **Early Modern English only**: Shakespeare (around 1600) and the King James Bible (1611). It has never seen "
        "modern prose: no modern public-domain English text was found in a PyPI package to add (see "
        "`data/pretrain/README.md`), so modern words are split into unusual pieces and modern sentences are "
        "out of its domain.",
        "* **Not fine-tuned** for any task, not a sentence encoder, and not distilled from a larger model.",
        f"* **Short inputs**: {c['max_position_embeddings']} positions; longer inputs must be truncated.",
        "",
        "## Reproduce",
        "",
        "```bash",
        "python -m helpers.mini.compute vocab      # the vocabulary (committed; the trainer's tie order can vary)",
        "bash data/course_mini/train_on_gpu.sh             # the training run above (on a GPU; writes into $OUT)",
        "python -m helpers.mini.compute train --device cpu --steps 300 --batch-size 32 --max-seconds 600",
        "python -m helpers.mini.compute train --device cpu --resume --max-seconds 600   # the next chunk",
        "python -m helpers.mini.compute evaluate   # evaluation.json (seeded: the numbers above)",
        "python -m helpers.mini.compute card       # this file and the loss curve",
        "```",
        "",
        "Training is seeded (model initialisation, the pair pool, the batches and masks from torch's generator on "
        "the training device); a rerun on the same kind of device follows the same data, up to the GPU's "
        "non-deterministic reductions. `tests/test_model_course_mini.py` checks the weights' sha256 and sizes "
        "against this card, the masked-LM head by hand, and the model against null (a) on a held-out slice.",
        "",
    ]
    return "\n".join(lines)


def _last_stretch(train: list[dict]) -> int:
    return train[-1]["step"] - train[-2]["step"] if len(train) > 1 else train[-1]["step"]


def _parameters(folder: Path) -> int:
    from safetensors import safe_open

    with safe_open(str(folder / WEIGHTS), "pt") as fh:
        return int(sum(np.prod(fh.get_slice(k).get_shape()) for k in fh.keys()))


def write_card(folder: Path = COURSE_MINI_DIR) -> Path:
    """Write ``README.md`` and the loss curve into ``folder``; return the README's path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    folder = Path(folder)
    text = card_text(folder)
    config = json.loads((folder / "config.json").read_text())
    from helpers.mini.plots import plot_loss_curve  # the one figure; compute itself never draws

    train, dev = read_log(folder)
    axes = plot_loss_curve(train, dev, config["vocab_size"])
    axes[0].figure.savefig(folder / CURVE, dpi=110, bbox_inches="tight", metadata={"Software": None})
    plt.close(axes[0].figure)
    (folder / "README.md").write_text(text, encoding="utf-8")
    return folder / "README.md"
