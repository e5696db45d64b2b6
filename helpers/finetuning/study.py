"""Fine-tuning BERT with a classification head (:mod:`helpers.finetuning`, lessons 11 and 14): every strategy over seeded few-shot draws, and the verdicts.

* :func:`few_shot_task` / :func:`lesson_setup` -> :class:`FewShotTask` -- the BANKING77 cut lessons
  11 and 14 share (a new draw of intents and utterances per seed);
* :func:`finetune_study` -> :class:`FinetuneStudy` -- every strategy on every draw, with a disk
  cache (``COURSE_CACHE``; :func:`cache_dir`, :func:`run_key`) that lets lesson 14 reuse lesson
  11's runs;
* :func:`detectable_difference`, :func:`seeds_needed` -- what a study of this size can detect;
* :func:`baseline_verdict`, :func:`baseline_finding` -- each strategy against the frozen probe,
  Holm-adjusted; :func:`moved_accuracies`.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch

from helpers.classify.comparisons import SeededAccuracy
from helpers.common.progress import ProgressBar
from helpers.common.training import TrainingRecord
from helpers.finetuning.strategies import (ENGINE_VERSION, FINETUNE_STRATEGIES, FROM_PROBE, FROZEN, FinetuneConfig,
                                           FinetuneRun, SentenceClassifier, _score, _Tokens, finetune_strategy,
                                           probe_head)


@dataclass(frozen=True)
class FewShotTask:
    """A few-shot intent task cut from BANKING77: ``train`` (``shots`` utterances per intent),
    ``dev`` (more utterances of the same intents from BANKING77's training split, disjoint from
    ``train``, never from the test split) and ``test`` (the intents' test utterances), all with the
    same ``intents``; ``seed`` drew the intents and the utterances. ``language`` says whose
    benchmark it is (a Chinese model's: THUCNews headlines and topics), which :meth:`describe` names."""

    train: object
    dev: object
    test: object
    intents: tuple
    shots: int
    seed: int = 0
    language: str = "en"  # whose benchmark (helpers.common.language.BENCHMARKS): BANKING77 or THUCNews
    total: int = 77  # how many classes the whole benchmark has

    def describe(self) -> str:
        from helpers.common.language import BENCHMARKS

        b = BENCHMARKS[self.language]
        one, items = b["classes"][:-1], b["items"]
        return (f"{len(self.intents)} of {b['name']}'s {self.total} {one}s, {self.shots} training "
                f"{items} per {one} ({len(self.train)}), a dev split of {len(self.dev) // len(self.intents)} more "
                f"per {one} ({len(self.dev)}, from the training split), {len(self.test)} test {items} "
                f"({len(self.test) // len(self.intents)} per {one})")


def few_shot_task(n_intents: int | None = None, shots: int = 10, dev_per_intent: int = 5,
                  test_per_intent: int | None = None, seed: int = 0, language: str = "en",
                  benchmark=None) -> FewShotTask:
    """BANKING77 (:func:`~helpers.common.data.load_banking77`; with ``language="zh"`` THUCNews, its
    Chinese counterpart: :func:`~helpers.common.language.benchmark_for`) cut to a CPU-sized few-shot task:
    ``n_intents`` intents drawn with ``seed`` (``None``: all 77), ``shots`` training utterances per
    intent (Casanueva et al. use 10 and 30) drawn with ``seed``, ``dev_per_intent`` more from the
    rest of the training split as the dev split, and the chosen intents' test utterances (all, or a
    stratified ``test_per_intent`` of them). ``benchmark`` (lesson 12's
    :func:`~helpers.interventions.compute.lesson_benchmark`), when given, sets the language."""
    import random

    from helpers.common.language import benchmark_for

    if benchmark is not None:
        language = benchmark.language
    train_all, test_all = benchmark_for(language, "train"), benchmark_for(language, "test")
    if n_intents is not None and (isinstance(n_intents, bool) or not isinstance(n_intents, int)
                                  or not 2 <= n_intents <= train_all.num_classes):
        raise ValueError(f"n_intents must be None (all) or an int from 2 to {train_all.num_classes}, got {n_intents!r}.")
    if isinstance(dev_per_intent, bool) or not isinstance(dev_per_intent, int) or dev_per_intent < 1:
        raise ValueError(f"dev_per_intent must be a positive int, got {dev_per_intent!r}.")
    names = train_all.names if n_intents is None else tuple(sorted(random.Random(seed).sample(train_all.names, n_intents)))
    pool = train_all.only(names)
    rest, train = pool.split_off(shots, seed=seed, name="train")
    dev = rest.sample(dev_per_intent, seed=seed + 10_000)
    test = test_all.only(names)
    if test_per_intent is not None:
        test = test.sample(test_per_intent, seed=seed)
    return FewShotTask(train, dataclasses.replace(dev, split="dev"), test, names, shots, seed, language,
                       train_all.num_classes)


def lesson_setup(budget, benchmark=None) -> tuple[dict, FinetuneConfig, tuple]:
    """``(tasks, recipe, seeds)`` of lesson 14's probes and fine-tuning runs on the loaded model,
    for a :class:`~helpers.common.budget.Budget` (lesson 11's stored sweep has its own design:
    :mod:`helpers.finetuning.history`): ``tasks`` maps each seed to its own :class:`FewShotTask` -- a new draw of intents and
    utterances per seed, so the spread over seeds carries the data's variance. Full: 10 of the 77
    intents, 10-shot, 4 dev utterances per intent, every test utterance of the intents (40 each),
    5 seeds, learning rates chosen from two on the first seed's dev split, the dev split scored
    every 7 steps (about half an epoch), at most 160 steps, gradual unfreezing open by its third
    epoch. Quick: 4 intents, 4-shot, 2 dev and 5 test
    utterances per intent, 2 seeds, one learning rate, 12 steps (a check that the code runs).
    ``benchmark`` draws from another one (:func:`few_shot_task`; lesson 14 with a Chinese model:
    THUCNews headlines), its test split cut to BANKING77's 40 per intent under the full budget."""
    seeds = budget.pick((0, 1, 2, 3, 4), (0, 1))
    task_kw = budget.pick(dict(n_intents=10, shots=10, dev_per_intent=4,
                               test_per_intent=None if benchmark is None else 40),
                          dict(n_intents=4, shots=4, dev_per_intent=2, test_per_intent=5))
    tasks = {s: few_shot_task(**task_kw, seed=s, benchmark=benchmark) for s in seeds}
    recipe = budget.pick(FinetuneConfig(tune="first seed", max_steps=160, eval_every=7, unfreeze_epochs=2),
                         FinetuneConfig(lrs=(1e-4,), max_steps=12, warmup=0.2, patience=1, unfreeze_epochs=2))
    return tasks, recipe, seeds


# -- a disk cache, so that lesson 14 reuses lesson 11's runs (and a rerun of a lesson is fast) --------
def cache_dir() -> Path | None:
    """Where fine-tuning runs are kept: ``finetune`` in the course cache
    (:func:`~helpers.model.paths.course_cache`); ``COURSE_CACHE=off`` keeps nothing."""
    from helpers.model.paths import course_cache

    root = course_cache()
    return None if root is None else root / "finetune"


def run_key(bert_key: str, train, dev, test, strategy: str, seed: int, config: FinetuneConfig, lrs=None) -> str:
    """A hash of everything a run depends on: the model's weights (``bert_key``, from
    :func:`~helpers.model.fingerprint.model_key`), the three splits, the strategy, the seed, the recipe
    and the learning rates tried (``lrs``, default the recipe's), the engine's version and torch's."""
    lrs = list(config.lrs if lrs is None else lrs)
    blob = json.dumps([ENGINE_VERSION, torch.__version__, bert_key, strategy, seed, asdict(config), lrs,
                       [(list(s.texts), list(s.labels), list(s.names)) for s in (train, dev, test)]])
    return hashlib.sha256(blob.encode()).hexdigest()[:24]


def run_meta(run: FinetuneRun) -> dict:
    """A run's record as plain JSON-ready values (no model, no outcomes): what the disk cache and
    lesson 11's stored sweep keep; :func:`run_from_meta` reads it back."""
    meta = {k: v for k, v in asdict(run).items() if k not in ("model", "correct", "from_cache")}
    meta["grid"] = [[lr, *result] for lr, result in run.grid.items()]
    return meta


def run_from_meta(meta: dict, correct: torch.Tensor, model=None) -> FinetuneRun:
    """The :class:`FinetuneRun` of a :func:`run_meta` record read back from JSON (its tuples
    restored), with its test outcomes ``correct``, marked as read from disk."""
    meta = dict(meta, record=dict(meta["record"]))
    meta["dev_curve"] = [tuple(point) for point in meta["dev_curve"]]
    meta["grid"] = {row[0]: tuple(row[1:]) for row in meta["grid"]}
    for key in ("step0", "kept"):
        meta["record"][key] = tuple(meta["record"][key])
    meta["record"]["curve"] = [tuple(point) for point in meta["record"]["curve"]]
    return FinetuneRun(correct=correct, from_cache=True, model=model, **meta)


def _save(folder: Path, run: FinetuneRun) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    torch.save({"meta": json.dumps(run_meta(run)), "correct": run.correct}, folder / "run.pt")
    if run.model is not None:  # the weights that can differ from the loaded model's
        state = {k: v.cpu() for k, v in run.model.state_dict().items() if k != "bert.embeddings.word_embeddings.weight"}
        torch.save(state, folder / "model.pt")


def _load(folder: Path, bert, num_classes: int, keep_model: bool) -> FinetuneRun | None:
    if not (folder / "run.pt").exists() or (keep_model and not (folder / "model.pt").exists()):
        return None
    saved = torch.load(folder / "run.pt", weights_only=True)
    model = None
    if keep_model:
        model = SentenceClassifier(copy.deepcopy(bert), num_classes)
        missing, unexpected = model.load_state_dict(torch.load(folder / "model.pt", weights_only=True), strict=False)
        if unexpected or missing != ["bert.embeddings.word_embeddings.weight"]:
            return None
        model.eval()
    return run_from_meta(json.loads(saved["meta"]), saved["correct"], model)


@dataclass
class FinetuneStudy:
    """Every strategy run once per seed, each seed on its own few-shot draw (``tasks[seed]``):
    ``runs[strategy]`` is a list over seeds."""

    config: FinetuneConfig
    seeds: tuple
    runs: dict
    tasks: dict = field(default_factory=dict)

    @property
    def strategies(self) -> tuple:
        return tuple(self.runs)

    def accuracy(self, strategy: str) -> SeededAccuracy:
        """Test outcomes ``[seeds, items]``; item ``j`` of one seed is a test utterance of that seed's
        own draw (the items are nested in the seeds, so strategies pair within a seed)."""
        return SeededAccuracy(torch.stack([r.correct for r in self.runs[strategy]]), self.seeds)

    def accuracies(self) -> dict:
        return {s: self.accuracy(s) for s in self.runs}

    def records(self, strategy: str | None = None) -> list[TrainingRecord]:
        """The training records of one strategy's runs (every run's, strategy by strategy, with ``None``)."""
        strategies = self.strategies if strategy is None else (strategy,)
        return [r.training_record() for s in strategies for r in self.runs[s]]

    def seconds(self, strategy: str) -> list[float]:
        return [r.seconds for r in self.runs[strategy]]

    def steps(self, strategy: str) -> list[int]:
        return [r.steps for r in self.runs[strategy]]

    def lrs(self, strategy: str) -> list:
        """The learning rate each seed's dev split chose (``None`` for the frozen probe)."""
        return [r.lr for r in self.runs[strategy]]

    def converged(self, strategy: str) -> int:
        return sum(r.converged for r in self.runs[strategy])

    def from_cache(self) -> int:
        return sum(r.from_cache for runs in self.runs.values() for r in runs)

    def models(self, strategy: str) -> list:
        return [r.model for r in self.runs[strategy]]


def _check_tasks(tasks) -> dict:
    if not isinstance(tasks, dict) or not tasks or not all(isinstance(t, FewShotTask) for t in tasks.values()):
        raise ValueError("tasks must map each seed to its FewShotTask (lesson_setup or few_shot_task).")
    sizes = {len(t.test) for t in tasks.values()}
    if len(sizes) != 1:
        raise ValueError(f"every seed's test set must hold as many utterances (for a [seeds, items] table), got {sizes}.")
    return tasks


def finetune_study(tokenizer, bert, tasks: dict, strategies=FINETUNE_STRATEGIES, *,
                   config: FinetuneConfig = FinetuneConfig(), keep_models=(), progress: bool = True,
                   cache: Path | None = None) -> FinetuneStudy:
    """:func:`finetune_strategy` for every strategy on every seed's task (``tasks`` maps a seed to its
    :class:`FewShotTask`), seed by seed (so a slow spell of a shared machine hits every strategy
    alike), each run read from the disk cache (:func:`cache_dir`) when an identical run was made
    before and written to it otherwise. The strategies that start from the linear probe share one
    probe per seed. With ``config.tune == "first seed"`` the first seed's dev split chooses each
    strategy's learning rate and the other seeds train at that rate only. ``keep_models``: the
    strategies whose trained models are kept (lesson 14 reads the fine-tuned layers); ``cache``: a
    folder to keep the runs in instead of :func:`cache_dir` (the sweep's own, so it resumes)."""
    from helpers.model.fingerprint import model_key

    tasks = _check_tasks(tasks)
    strategies, seeds, keep = tuple(strategies), tuple(tasks), set(keep_models)
    if not strategies:
        raise ValueError("give at least one strategy.")
    unknown = [s for s in strategies + tuple(keep) if s not in FINETUNE_STRATEGIES]
    if unknown:
        raise ValueError(f"unknown strategies {unknown}: choose from {FINETUNE_STRATEGIES}.")
    bert_key, root = model_key(bert), (cache_dir() if cache is None else Path(cache))
    runs = {s: [] for s in strategies}
    chosen: dict = {}
    bar = ProgressBar(len(seeds) * len(strategies), desc="fine-tuning runs", disable=not progress)
    for seed in seeds:
        task, head = tasks[seed], None
        for strategy in strategies:
            lrs = config.lrs if config.tune == "each seed" or strategy not in chosen else (chosen[strategy],)
            splits = (task.train, task.dev, task.test)
            folder = None if root is None else root / run_key(bert_key, *splits, strategy, seed, config, lrs)
            run = None if folder is None else _load(folder, bert, task.train.num_classes, strategy in keep)
            if run is None:
                if strategy in FROM_PROBE and head is None:
                    tokens = _Tokens(tokenizer, task.train, config.max_length)
                    dev_tokens = _Tokens(tokenizer, task.dev, config.max_length)
                    head = probe_head(bert, tokens, dev_tokens, task.train, task.dev, config,
                                      test_tokens=_Tokens(tokenizer, task.test, config.max_length))
                run = finetune_strategy(tokenizer, bert, *splits, strategy, seed=seed, config=config, lrs=lrs,
                                        keep_model=strategy in keep, head=head)
                if strategy == FROZEN:
                    run.record["run"] = f"{FROZEN}, seed {seed}"
                if folder is not None:
                    _save(folder, run)
            chosen.setdefault(strategy, run.lr)
            runs[strategy].append(run)
            bar.update()
    bar.close()
    return FinetuneStudy(config, seeds, runs, tasks)


def detectable_difference(n_items: int, n_seeds: int, *, family: int = 1, discordance: float = 0.10,
                          seed_sd: float = 0.01, power: float = 0.8, alpha: float = 0.05) -> float:
    """The smallest accuracy difference between two strategies that a design of ``n_seeds`` draws x
    ``n_items`` test items per draw detects with probability ``power`` -- computed **before** any
    run, from the design alone and two stated assumptions: the strategies disagree on a share
    ``discordance`` of the test items, and their difference varies from draw to draw with standard
    deviation ``seed_sd``. The comparison is read at the Bonferroni level of ``family`` comparisons
    with the course's small-sample rule (Student t with ``n_seeds - 1`` degrees of freedom):
    ``(t_{1 - alpha / (2 family)} + t_{power}) * sqrt(discordance / (n_items n_seeds) + seed_sd^2 / n_seeds)``."""
    from scipy.stats import t as student_t

    for name, value in (("n_items", n_items), ("n_seeds", n_seeds), ("family", family)):
        if isinstance(value, bool) or not isinstance(value, int) or value < (2 if name == "n_seeds" else 1):
            raise ValueError(f"{name} must be an int >= {2 if name == 'n_seeds' else 1}, got {value!r}.")
    if not 0 < discordance <= 1 or seed_sd < 0 or not 0 < power < 1:
        raise ValueError("discordance must lie in (0, 1], seed_sd be >= 0 and power lie in (0, 1).")
    df = n_seeds - 1
    se = math.sqrt(discordance / (n_items * n_seeds) + seed_sd ** 2 / n_seeds)
    return (student_t.ppf(1 - alpha / (2 * family), df) + student_t.ppf(power, df)) * se


def seeds_needed(difference: float, n_items: int, *, most: int = 1000, **kw) -> int | None:
    """How many draws (with ``n_items`` test items each) :func:`detectable_difference` needs to detect
    ``difference``; ``None`` when more than ``most`` would not do."""
    for n in range(2, most + 1):
        if detectable_difference(n_items, n, **kw) <= difference:
            return n
    return None


@torch.no_grad()
def classifier_correct(tokenizer, clf, split, max_length: int = 64) -> torch.Tensor:
    """``[n]`` booleans on the CPU: which items of ``split`` the classifier gets right."""
    return _score(clf, _Tokens(tokenizer, split, max_length))[1]


def _paired_base(accuracy: dict, strategy: str, baseline: str):
    """The baseline's runs on the draws ``strategy`` has (all of them, or those it moved on)."""
    a, b = accuracy[strategy], accuracy[baseline]
    return b.only(a.seeds) if getattr(a, "seeds", None) and a.seeds != b.seeds else b


def moved_accuracies(study) -> dict:
    """``{strategy: SeededAccuracy}`` for strategy verdicts: the frozen probe on every draw, each
    fine-tuning strategy on the draws where it moved (its kept weights are not its start); a
    strategy that moved on no draw is left out. :func:`baseline_finding` pairs each with the probe
    on the same draws."""
    from helpers.classify.comparisons import SeededAccuracy

    out = {}
    for s, runs in study.runs.items():
        kept = runs if s == FROZEN else [r for r in runs if r.moved]
        if kept:
            out[s] = SeededAccuracy(torch.stack([r.correct for r in kept]), tuple(r.seed for r in kept))
    return out


def baseline_verdict(accuracy: dict, baseline: str = FROZEN, margin: float | None = None) -> str:
    """Each strategy against the baseline that fine-tunes nothing, paired on the same test items and
    seeds (:func:`~helpers.classify.compute.paired_comparison`), one Bonferroni family over the
    strategies: which beat it, which fall below it, which are inconclusive -- and a closing verdict."""
    from helpers.classify.comparisons import join_names, paired_comparison, points

    if baseline not in accuracy or len(accuracy) < 2:
        raise ValueError(f"accuracy must hold {baseline!r} and at least one other strategy.")
    others = [s for s in accuracy if s != baseline]
    comps = {s: paired_comparison(accuracy[s], _paired_base(accuracy, s, baseline)) for s in others}
    family = len(others)
    verdicts = {s: comps[s].verdict(s, baseline, margin=margin, family=family) for s in others}
    above = [s for s in others if verdicts[s].kind == "higher"]
    below = [s for s in others if verdicts[s].kind == "lower"]
    same = [s for s in others if verdicts[s].kind == "equivalent"]
    open_ = [s for s in others if verdicts[s].kind == "inconclusive"]
    lines = [f"each strategy minus '{baseline}', paired on the same test items and seeds "
             f"({comps[others[0]].method}; intervals and p Bonferroni-adjusted over {family}): "
             + "; ".join(f"{s} {points(verdicts[s].difference)} ({verdicts[s].p_text})" for s in others) + "."]
    if above:
        lines.append(f"above the baseline: {join_names(above)}.")
    if below:
        lines.append(f"below the baseline: {join_names(below)}.")
    if same:
        lines.append(f"equivalent within +/-{100 * margin:.1f} points: {join_names(same)}.")
    if open_:
        lines.append(f"inconclusive: {join_names(open_)}.")
    lines.append("verdict: " + (f"{join_names(above)} beat{'s' if len(above) == 1 else ''} not fine-tuning at all here"
                                if above else "no fine-tuning strategy is shown to beat the frozen encoder with a trained "
                                "probe on this data" + (f"; {join_names(below)} fall{'s' if len(below) == 1 else ''} below it"
                                                        if below else "")) + ".")
    return " ".join(lines)


def baseline_finding(accuracy: dict, baseline: str = FROZEN, margin: float | None = None) -> tuple[str, list[str]]:
    """``(sentence, details)``: :func:`baseline_verdict` in plain words first -- "No fine-tuning
    strategy is shown to beat the frozen probe (92.1 %); full fine-tuning falls below it (89.0 %);
    for the others we cannot tell." -- with every comparison's full verdict as the details."""
    from helpers.classify.comparisons import join_names, paired_comparison

    if baseline not in accuracy or len(accuracy) < 2:
        raise ValueError(f"accuracy must hold {baseline!r} and at least one other strategy.")
    others = [s for s in accuracy if s != baseline]
    family = len(others)
    verdicts = {s: paired_comparison(accuracy[s], _paired_base(accuracy, s, baseline)).verdict(
        s, baseline, margin=margin, family=family) for s in others}
    pct = lambda s: f"{100 * accuracy[s.strip(chr(39))].estimate:.1f} %"  # noqa: E731
    # the baseline on the draws each strategy is compared on (all of them, or those it moved on)
    base_pct = lambda s: f"{100 * _paired_base(accuracy, s.strip(chr(39)), baseline).estimate:.1f} %"  # noqa: E731
    paired_apart = any(_paired_base(accuracy, s, baseline) is not accuracy[baseline] for s in others)
    quoted = lambda kind: [f"'{s}'" for s in others if verdicts[s].kind == kind]  # noqa: E731 - names hold commas
    above, below, same, open_ = (quoted(k) for k in ("higher", "lower", "equivalent", "inconclusive"))
    name = "the frozen probe" if baseline == FROZEN else f"'{baseline}'"

    def versus(group):  # "95.0 % vs 50.0 %": each against the baseline on its own draws
        if paired_apart:
            return "; ".join(f"{pct(s)} vs {base_pct(s)}" for s in group) + " on the same draws"
        return f"{', '.join(map(pct, group))} vs {pct(baseline)}"

    if above:
        parts = [f"{join_names(above)} beat{'s' if len(above) == 1 else ''} {name} ({versus(above)})"]
    else:
        parts = [f"no fine-tuning strategy is shown to beat {name} ({pct(baseline)})"]
    if below:
        parts.append(f"{join_names(below)} fall{'s' if len(below) == 1 else ''} below it ({versus(below)})")
    if same:
        parts.append(f"{join_names(same)} come{'s' if len(same) == 1 else ''} out the same within the margin set "
                     "beforehand")
    if open_:
        parts.append(f"for {'the others' if (above or below or same) and len(open_) > 1 else join_names(open_)} we "
                     "cannot tell" + (f" ({join_names(open_)})" if (above or below or same) and len(open_) > 1 else ""))
    sentence = "; ".join(parts) + "."
    return sentence[0].upper() + sentence[1:], [baseline_verdict(accuracy, baseline, margin)] + [
        verdicts[s].text for s in others]
