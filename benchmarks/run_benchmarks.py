"""Benchmark the course on this machine and write benchmarks/results.md.

1. Every explorer (every subclass of helpers.common.explorer.Explorer found by importing all
   helpers.* modules): median / p95 latency of ``explorer.update(**values)`` cycling
   through the values its ``for_benchmark`` returns, and of ``redraw_naive`` (a new
   figure each time) on the same values, in the same run, as a speed-up ratio.
2. Long inputs (issue 12): every explorer built by ``for_benchmark(tokenizer, model,
   text=long_text)`` on a text at the model's maximum input length, and on its own default
   text: build time (the constructor, wall and CPU; the model's own forward time inside the
   build is given apart, since a box that classifies a new sentence must run the model once),
   and update median / p95 (wall and CPU). With ``--bert-base`` the same rows again for a
   bert-base-sized model (``BertModel(BertConfig())``: 12 layers, 768 wide, random weights,
   saved under build/ with the bundled tokenizer; for timing only). An explorer whose
   ``for_benchmark`` has no ``text`` parameter gets a "does not support text=" row.
3. Every lesson executed headless (nbclient, bundled model): wall time, peak RSS of the
   kernel process tree, and the whole course.

Usage (from the repo root):
    .venv/bin/python benchmarks/run_benchmarks.py [--updates 40] [--naive 10] [--skip-lessons] [--bert-base]

Targets (issues 6 and 12): p95 update <= 50 ms and >= 5x faster than the naive redraw; at the
maximum input length a build <= 2 s (model time excluded) and p95 update <= 50 ms; whole
course: per-lesson targets (LESSON_TARGETS_S; bert-base-sized: BERT_BASE_TARGET_S). A missed target is marked in the table and makes the
script exit with status 1 (``--no-fail`` to only report).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import platform
import statistics
import sys
import threading
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("MPLBACKEND", "Agg")

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

P95_TARGET_MS = 50.0
BUILD_TARGET_S = 2.0
SPEEDUP_TARGET = 5.0
DEFAULT_OUT = ROOT / "benchmarks" / "results.md"


def p95(xs: list[float]) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, round(0.95 * (len(xs) - 1))))]


def time_calls(fn, values: list[dict], n: int) -> list[float]:
    """Milliseconds per call, cycling through ``values``."""
    out = []
    for i in range(n):
        v = values[i % len(values)]
        t0 = time.perf_counter()
        fn(**v)
        out.append((time.perf_counter() - t0) * 1000)
    return out


def bench_explorers(n_updates: int, n_naive: int) -> tuple[list[dict], list[str]]:
    import matplotlib.pyplot as plt
    from tqdm.auto import tqdm

    from helpers.model.loading import BUNDLED_MODEL, load_model
    from helpers.common.explorer import explorer_classes

    failures: list[str] = []
    classes = explorer_classes(failures)
    notes = [f"import failed: {f}" for f in failures]
    tokenizer, model = load_model(BUNDLED_MODEL, verbose=False)
    rows = []
    for cls in tqdm(classes, desc="explorers"):
        name = f"{cls.__module__}.{cls.__qualname__}"
        try:
            explorer, values = cls.for_benchmark(tokenizer, model)
        except NotImplementedError as err:
            notes.append(f"skipped {name}: for_benchmark raises NotImplementedError ({err})")
            continue
        except Exception as err:  # noqa: BLE001
            notes.append(f"skipped {name}: for_benchmark failed: {type(err).__name__}: {err}")
            continue
        if not values:
            notes.append(f"skipped {name}: for_benchmark returned no values")
            continue
        # Count forward passes: a timed update must never run the model. The warm-up shows
        # each value once (first draws cache glyphs; a text box runs the model once per new
        # sentence, which is its job) and is counted apart.
        calls, warmup_calls = [], 0
        hook = model.register_forward_hook(lambda *a: calls.append(1))
        try:
            with contextlib.redirect_stdout(io.StringIO()):  # an explorer's own prints are not the table
                for v in values:
                    explorer.update(**v)
                warmup_calls, calls[:] = len(calls), []
                upd = time_calls(explorer.update, values, n_updates)
                naive = time_calls(explorer.redraw_naive, values, n_naive)
        finally:
            hook.remove()
        if warmup_calls:
            notes.append(f"{name}: the warm-up (each of its {len(values)} values shown once) ran the model "
                         f"{warmup_calls} time(s): a new input, not a cached control value.")
        plt.close("all")
        rows.append({
            "name": name, "n": n_updates, "median": statistics.median(upd), "p95": p95(upd),
            "naive_median": statistics.median(naive), "naive_p95": p95(naive),
            "ratio": statistics.median(naive) / statistics.median(upd), "forward_calls": len(calls),
        })
    return rows, notes


def long_text(tokenizer, model) -> tuple[str, int]:
    """A text of real sentences (data/attention_sentences.txt, repeated) longer than the model's
    maximum input length, and that maximum: explorers must truncate it to exactly that length."""
    from helpers.common.data import load_sentences
    from helpers.model.trace import max_input_tokens

    limit = max_input_tokens(tokenizer, model)
    sentences, text, k = load_sentences(), "", 0
    while len(tokenizer(text, truncation=False, verbose=False)["input_ids"]) <= limit + 8:
        text = (text + " " + sentences[k % len(sentences)]).strip()
        k += 1
    return text, limit


def bert_base_random(folder: Path):
    """A bert-base-sized BertModel with random weights (12 layers, 768 wide, 12 heads), saved
    once under ``folder`` with the bundled tokenizer, then loaded like any checkpoint. For
    timing only: its outputs mean nothing."""
    from transformers import BertConfig, BertModel

    from helpers.model.loading import BUNDLED_MODEL, load_model

    if not (folder / "config.json").exists():
        import torch

        tokenizer, _ = load_model(BUNDLED_MODEL, verbose=False)
        torch.manual_seed(0)
        folder.mkdir(parents=True, exist_ok=True)
        BertModel(BertConfig(vocab_size=tokenizer.vocab_size)).eval().save_pretrained(folder, safe_serialization=True)
        tokenizer.save_pretrained(folder)
    return load_model(str(folder), verbose=False)


class ForwardClock:
    """Forward passes of ``model`` with their start and end times (perf_counter)."""

    def __init__(self, model):
        self.spans: list[tuple[float, float]] = []
        self._start = None
        self._hooks = [model.register_forward_pre_hook(self._pre), model.register_forward_hook(self._post)]

    def _pre(self, *args):
        self._start = time.perf_counter()

    def _post(self, *args):
        self.spans.append((self._start, time.perf_counter()))

    def seconds_within(self, span) -> float:
        lo, hi = span
        return sum(max(0.0, min(b, hi) - max(a, lo)) for a, b in self.spans)

    def remove(self):
        for h in self._hooks:
            h.remove()


def bench_long_inputs(models: dict, n_updates: int) -> tuple[list[dict], list[str]]:
    """Build + update timings of every explorer on each model, at its default text and at the
    model's maximum input length (see the module docstring)."""
    import inspect
    import warnings

    import matplotlib.pyplot as plt

    from helpers.common.explorer import explorer_classes

    rows, notes = [], []
    for model_name, (tokenizer, model) in models.items():
        text, limit = long_text(tokenizer, model)
        for cls in explorer_classes([]):
            name = f"{cls.__module__}.{cls.__qualname__}"
            supports_text = "text" in inspect.signature(cls.for_benchmark).parameters
            for length, kwargs in (("default", {}), (f"max ({limit})", {"text": text})):
                row = {"model": model_name, "name": name, "length": length}
                if kwargs and not supports_text:
                    rows.append({**row, "error": "does not support text= yet (for_benchmark(tokenizer, model) only)"})
                    continue
                clock = ForwardClock(model)
                try:
                    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
                        warnings.simplefilter("ignore")  # the truncation warning is expected here
                        explorer, values = cls.for_benchmark(tokenizer, model, **kwargs)
                        for v in values:  # warm-up: each value once
                            explorer.update(**v)
                        before = len(clock.spans)
                        wall, cpu = [], []
                        for i in range(n_updates):
                            w0, c0 = time.perf_counter(), time.process_time()
                            explorer.update(**values[i % len(values)])
                            wall.append((time.perf_counter() - w0) * 1000)
                            cpu.append((time.process_time() - c0) * 1000)
                        timed_calls = len(clock.spans) - before
                except Exception as err:  # noqa: BLE001 - one failing explorer does not stop the table
                    rows.append({**row, "error": f"{type(err).__name__}: {str(err)[:160]}"})
                    continue
                finally:
                    clock.remove()
                    plt.close("all")
                tokens = getattr(explorer, "input_tokens", None)
                span = getattr(explorer, "build_span", None)
                rows.append({**row, "tokens": tokens, "build": explorer.build_seconds,
                             "build_cpu": explorer.build_cpu_seconds,
                             "build_model": clock.seconds_within(span) if span else 0.0,
                             "median": statistics.median(wall), "p95": p95(wall), "cpu_p95": p95(cpu),
                             "forward_calls": timed_calls, "n": n_updates})
    return rows, notes


def load_average() -> str:
    try:
        one, five, _ = os.getloadavg()
    except OSError:
        return "unknown"
    return f"{one:.1f} (1 min), {five:.1f} (5 min)"


class PeakRSS:
    """Poll the RSS of this process's children (the kernel and its subprocesses)."""

    def __init__(self, interval: float = 0.2):
        import psutil

        self._me, self._interval, self.peak = psutil.Process(), interval, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        import psutil

        while not self._stop.is_set():
            total = 0
            for p in self._me.children(recursive=True):
                try:
                    total += p.memory_info().rss
                except psutil.Error:
                    pass
            self.peak = max(self.peak, total)
            self._stop.wait(self._interval)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


# Per-lesson targets on 2 CPU cores with the bundled model, full budget, cold cache (issue 20), and
# with a bert-base-sized model on the CPU, where BUDGET = None picks "quick" (issue 19).
LESSON_TARGETS_S = {"10": 180, "11": 300, "12": 180, "14": 300}
BERT_BASE_TARGET_S = 600  # lessons that train or ablate (10-14), bert-base-sized, CPU


def bench_lessons(pattern: str, model_dir: Path | None = None, save_to: Path | None = None) -> list[dict]:
    """Every lesson headless in a fresh kernel, each with an empty fine-tuning cache of its own (a
    lesson never reads runs an earlier lesson made: these are cold times). With ``model_dir``,
    ``MODEL`` is injected (papermill-style) and the lesson's own ``BUDGET = None`` decides. With
    ``save_to``, each executed notebook is written there (to quote its printed numbers)."""
    import tempfile

    import nbformat
    from nbclient import NotebookClient
    from tqdm.auto import tqdm

    sys.path.insert(0, str(ROOT / "tests"))
    from lesson_params import with_parameters

    rows = []
    env_model = os.environ.pop("BERT_COURSE_MODEL", None)  # the bundled model, as the README says
    env_cache = os.environ.get("COURSE_CACHE")
    try:
        for path in tqdm(sorted((ROOT / "lessons").glob(pattern)), desc="lessons"):
            nb = nbformat.read(path, as_version=4)
            if model_dir is not None:
                with_parameters(nb, MODEL=str(model_dir))
            client = NotebookClient(nb, timeout=1800, kernel_name="python3",
                                    resources={"metadata": {"path": str(path.parent)}})
            error = ""
            with tempfile.TemporaryDirectory(prefix="course-cache-") as cache, PeakRSS() as mem:
                os.environ["COURSE_CACHE"] = cache
                t0 = time.perf_counter()
                try:
                    client.execute()
                except Exception as err:  # noqa: BLE001 - report the lesson as failed
                    error = f"{type(err).__name__}: {str(err).strip().splitlines()[-1][:200] if str(err).strip() else ''}"
                wall = time.perf_counter() - t0
            budget = next((o.get("text", "").split("Budget: ", 1)[1].split()[0] for c in nb.cells
                           if c.cell_type == "code" for o in c.get("outputs", []) if "Budget: " in o.get("text", "")), "")
            if save_to is not None:
                save_to.mkdir(parents=True, exist_ok=True)
                nbformat.write(nb, save_to / path.name)
            rows.append({"lesson": path.stem, "seconds": wall, "peak_mb": mem.peak / 2**20, "error": error,
                         "budget": budget})
    finally:
        if env_model is not None:
            os.environ["BERT_COURSE_MODEL"] = env_model
        if env_cache is None:
            os.environ.pop("COURSE_CACHE", None)
        else:
            os.environ["COURSE_CACHE"] = env_cache
    return rows


def machine() -> str:
    import torch
    import transformers
    import ipywidgets
    import matplotlib

    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return (f"{platform.processor() or platform.machine()}, {cpus} CPU core(s) available, torch threads "
            f"{torch.get_num_threads()}; Python {platform.python_version()}, torch {torch.__version__}, "
            f"transformers {transformers.__version__}, ipywidgets {ipywidgets.__version__}, "
            f"matplotlib {matplotlib.__version__}")


def mark(ok: bool) -> str:
    return "✅" if ok else "❌"


def write_results(explorers, notes, lessons, out: Path, long_rows=None, load_before: str = "",
                  bert_base_lessons=None) -> bool:
    ok = True
    lines = ["# Benchmark results", "", f"Generated by `benchmarks/run_benchmarks.py` on "
             f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.", "", f"Machine: {machine()}.", "",
             f"Load average before the run: {load_before or load_average()}; after: {load_average()} "
             f"(on a shared machine, wall times are inflated; the CPU columns are this process's own time).", ""]
    if explorers is not None:
        lines += ["## Explorer updates (bundled all-MiniLM-L6-v2)", "",
                  f"Target: p95 update ≤ {P95_TARGET_MS:.0f} ms and ≥ {SPEEDUP_TARGET:.0f}× faster than the naive redraw "
                  "(a brand-new figure per change). Times include the PNG encode.", "",
                  "| explorer | updates | median ms | p95 ms | naive median ms | naive p95 ms | speed-up | forward passes in timed updates | target |",
                  "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | :---: |"]
        for r in explorers:
            good = r["p95"] <= P95_TARGET_MS and r["ratio"] >= SPEEDUP_TARGET and r["forward_calls"] == 0
            ok &= good
            lines.append(f"| `{r['name']}` | {r['n']} | {r['median']:.1f} | {r['p95']:.1f} | {r['naive_median']:.1f} | "
                         f"{r['naive_p95']:.1f} | {r['ratio']:.1f}× | {r['forward_calls']} | {mark(good)} |")
        if not explorers:
            lines.append("| (no explorer found) | | | | | | | | |")
        lines += [""] + [f"- {n}" for n in notes] + ([""] if notes else [])
    if long_rows is not None:
        lines += ["## Long inputs: every explorer at its default text and at the model's maximum input length", "",
                  f"Targets at the maximum length: build ≤ {BUILD_TARGET_S:.0f} s without the model's own forward time "
                  f"(a new input must run the model once) and p95 update ≤ {P95_TARGET_MS:.0f} ms. "
                  "Build = the explorer's constructor. Random-weight models are for timing only.", "",
                  "| model | explorer | input | tokens | build s | of which model s | build CPU s | median ms | p95 ms | CPU p95 ms | forward passes in timed updates | target |",
                  "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | :---: |"]
        for r in long_rows:
            short = r["name"].rsplit(".", 1)[-1]
            if "error" in r:
                lines.append(f"| {r['model']} | `{short}` | {r['length']} | | | | | | | | | {r['error'].replace('|', '/')} |")
                continue
            good = (r["build"] - r["build_model"] <= BUILD_TARGET_S and r["p95"] <= P95_TARGET_MS
                    and r["forward_calls"] == 0)
            if r["length"].startswith("max"):
                ok &= good
            lines.append(f"| {r['model']} | `{short}` | {r['length']} | {r['tokens'] if r['tokens'] is not None else ''} | "
                         f"{r['build']:.2f} | {r['build_model']:.2f} | {r['build_cpu']:.2f} | {r['median']:.1f} | "
                         f"{r['p95']:.1f} | {r['cpu_p95']:.1f} | {r['forward_calls']} | {mark(good)} |")
        lines.append("")
    if lessons is not None:
        total = sum(r["seconds"] for r in lessons)
        lines += ["## Lessons, headless (nbclient, bundled model, full budget)", "",
                  "Each lesson in a fresh kernel with an empty fine-tuning cache (cold: lesson 14 trains its own "
                  "runs instead of reading lesson 11's); peak memory is the RSS of the kernel process tree. Targets "
                  "(issue 20): " + ", ".join(f"{k} ≤ {v / 60:.0f} min" for k, v in LESSON_TARGETS_S.items()) + ".", "",
                  "| lesson | budget | seconds | peak RSS MB | status |", "| --- | --- | ---: | ---: | --- |"]
        for r in lessons:
            target = LESSON_TARGETS_S.get(r["lesson"][:2])
            good = not r["error"] and (target is None or r["seconds"] <= target)
            ok &= good
            status = (f"❌ {r['error'].replace('|', '/')}" if r["error"] else
                      f"{mark(good)} ≤ {target} s" if target else "ok")
            lines.append(f"| {r['lesson']} | {r.get('budget', '')} | {r['seconds']:.1f} | {r['peak_mb']:.0f} | {status} |")
        peak = max((r["peak_mb"] for r in lessons), default=0)
        lines += [f"| **whole course** | | **{total:.1f}** | **{peak:.0f}** (max) | |", ""]
    if bert_base_lessons is not None:
        lines += ["## Lessons with a bert-base-sized model on the CPU (random weights, timing only)", "",
                  "`MODEL` injected as a `BertModel(BertConfig())` folder (12 layers, 768 wide, about 8x the bundled "
                  "model's compute per token); `BUDGET = None`, so the lessons pick their quick budget and say so "
                  f"(`choose_budget`). Target for the lessons that train or ablate (10-14): ≤ {BERT_BASE_TARGET_S / 60:.0f} "
                  "min each.", "", "| lesson | budget | seconds | peak RSS MB | status |", "| --- | --- | ---: | ---: | --- |"]
        for r in bert_base_lessons:
            trains = r["lesson"][:2] in LESSON_TARGETS_S
            good = not r["error"] and (not trains or r["seconds"] <= BERT_BASE_TARGET_S)
            ok &= good
            status = (f"❌ {r['error'].replace('|', '/')}" if r["error"] else
                      f"{mark(good)} ≤ {BERT_BASE_TARGET_S} s" if trains else "ok")
            lines.append(f"| {r['lesson']} | {r.get('budget', '')} | {r['seconds']:.1f} | {r['peak_mb']:.0f} | {status} |")
        lines.append(f"| **whole course** | | **{sum(r['seconds'] for r in bert_base_lessons):.1f}** | | |")
        lines.append("")
    out.write_text("\n".join(lines) + "\n")
    return ok


README_START, README_END = "<!-- benchmark:start -->", "<!-- benchmark:end -->"


def readme_block(results: str) -> str:
    """What the README shows of a results.md: its explorer table and the whole-course line."""
    lines = results.splitlines()
    section = lines[next((i for i, l in enumerate(lines) if l.startswith("## Explorer")), len(lines)):]
    table = [l for l in section[1:next((i for i, l in enumerate(section[1:], 1) if l.startswith("## ")), len(section))]
             if l.startswith("|")]
    course = next((l for l in lines if l.startswith("| **whole course**")), None)
    generated = next((l for l in lines if l.startswith("Generated by")), "")
    out = [generated.replace("Generated by", "Measured by"), ""] + table
    if course:
        cells = [c.strip().strip("*") for c in course.strip("|").split("|")]
        out += ["", f"Whole course headless: {cells[2]} s, every lesson cold (per-lesson targets in "
                    f"benchmarks/results.md); peak kernel memory {cells[3].split()[0].strip('*')} MB."]
    return "\n".join(out)


def update_readme(readme: Path, results: str) -> None:
    """Replace the README's benchmark block (between the markers) with the new figures."""
    text = readme.read_text()
    if README_START not in text or README_END not in text:
        raise SystemExit(f"{readme} has no {README_START} ... {README_END} block to update")
    head, rest = text.split(README_START, 1)
    _, tail = rest.split(README_END, 1)
    readme.write_text(f"{head}{README_START}\n{readme_block(results)}\n{README_END}{tail}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--updates", type=int, default=40, help="timed updates per explorer")
    ap.add_argument("--naive", type=int, default=10, help="timed naive redraws per explorer")
    ap.add_argument("--lessons", default="[0-9]*.ipynb", help="glob of lesson notebooks to execute")
    ap.add_argument("--skip-lessons", action="store_true")
    ap.add_argument("--skip-explorers", action="store_true")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--no-fail", action="store_true", help="exit 0 even when a target is missed")
    ap.add_argument("--skip-long", action="store_true", help="skip the long-input (maximum length) rows")
    ap.add_argument("--bert-base", action="store_true",
                    help="also time every explorer on a bert-base-sized model with random weights")
    ap.add_argument("--lessons-bert-base", action="store_true",
                    help="also run every lesson with a bert-base-sized random model (BUDGET = None decides)")
    ap.add_argument("--save-executed", type=Path, default=None,
                    help="write each executed lesson (bundled model) to this folder")
    ap.add_argument("--long-updates", type=int, default=30, help="timed updates per explorer in the long-input rows")
    args = ap.parse_args(argv)
    if args.updates < 1 or args.naive < 1:
        ap.error("--updates and --naive must be at least 1")
    explorers = notes = lessons = long_rows = None
    load_before = load_average()
    if not args.skip_explorers:
        explorers, notes = bench_explorers(args.updates, args.naive)
        if not args.skip_long:
            from helpers.model.loading import BUNDLED_MODEL, load_model

            models = {"bundled all-MiniLM-L6-v2": tuple(load_model(BUNDLED_MODEL, verbose=False))}
            if args.bert_base:
                models["bert-base-sized, random"] = tuple(bert_base_random(ROOT / "build" / "bert-base-random"))
            long_rows, long_notes = bench_long_inputs(models, args.long_updates)
            notes += long_notes
    bert_base_lessons = None
    if not args.skip_lessons:
        lessons = bench_lessons(args.lessons, save_to=args.save_executed)
        if args.lessons_bert_base:
            bert_base_random(ROOT / "build" / "bert-base-random")
            bert_base_lessons = bench_lessons(args.lessons, model_dir=ROOT / "build" / "bert-base-random")
    ok = write_results(explorers, notes, lessons, Path(args.out), long_rows, load_before, bert_base_lessons)
    results = Path(args.out).read_text()
    if Path(args.out) == DEFAULT_OUT and explorers is not None and lessons is not None:
        update_readme(ROOT / "CONTRIBUTING.md", results)  # a full run on the default file: CONTRIBUTING.md follows
    print(results)
    return 0 if ok or args.no_fail else 1


if __name__ == "__main__":
    sys.exit(main())
