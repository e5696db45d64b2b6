"""Using layers in practice (lesson 11): keeping only some hidden states, activation
checkpointing and what a training step holds in memory, dynamic int8 quantization, a
feature cache, and honest timing (warm-up, repeated runs in turns, median and range).

The lesson's tables and printouts built from these numbers are in ``helpers/practice/findings.py``;
the fine-tuning strategies themselves in :mod:`helpers.finetuning`, a model's fingerprint
(:func:`~helpers.model.fingerprint.model_key`, re-exported here) in ``helpers/model/fingerprint.py``."""

from __future__ import annotations

import copy
import io
import contextlib
from pathlib import Path
import statistics
import time
import warnings
from contextlib import contextmanager
from dataclasses import dataclass

import torch

from helpers.classify.compute import LayerFeatures, extract_features
from helpers.common.stats import Interval, sign_test_p
from helpers.model.trace import synchronize
from helpers.model.fingerprint import model_key, tensors_digest  # noqa: F401


def enable_checkpointing(bert) -> str:
    """Switch activation (gradient) checkpointing on; returns the method name used.

    transformers 5 renamed ``gradient_checkpointing_enable`` to ``activation_checkpointing_enable``
    (the old name still works but warns). It is a model method, not a ``from_pretrained`` keyword.
    """
    from transformers.utils import logging as hf_logging

    name = "activation_checkpointing_enable" if hasattr(bert, "activation_checkpointing_enable") else "gradient_checkpointing_enable"
    previous = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    try:
        getattr(bert, name)()
        bert.config.use_cache = False  # BERT as an encoder has no cache; avoids a per-step notice
    finally:
        hf_logging.set_verbosity(previous)
    return name


@contextmanager
def keep_hidden_states(bert, layers):
    """Forward hooks that store only the outputs of the listed layers (0 = embeddings).

    Yields a dict ``{layer: [B, T, H] tensor}`` filled during the forward pass.
    """
    L = bert.config.num_hidden_layers
    layers = list(layers)
    bad = [l for l in layers if isinstance(l, bool) or not isinstance(l, int) or not 0 <= l <= L]
    if bad or not layers:
        raise ValueError(f"layers {bad or layers!r} invalid: give layer numbers 0 (embeddings) to {L}.")
    kept: dict[int, torch.Tensor] = {}

    def hook_for(layer):
        def hook(module, args, output):
            kept[layer] = (output[0] if isinstance(output, tuple) else output).detach()
        return hook

    modules = {l: bert.embeddings if l == 0 else bert.encoder.layer[l - 1] for l in layers}
    handles = [modules[l].register_forward_hook(hook_for(l)) for l in layers]
    try:
        yield kept
    finally:
        for h in handles:
            h.remove()


@dataclass
class SavedForBackward:
    """What autograd keeps between forward and backward of one training step.

    Autograd also saves *references to the weights* (a linear layer needs ``W`` to pass the
    gradient back to its input); those storages are the model's own parameters and cost no
    extra memory, so they are counted apart from the activations.
    """

    activation_bytes: int  # storages that exist only for the backward pass
    parameter_bytes: int  # saved references to parameters (already in memory as weights)
    activation_tensors: int  # distinct storages behind activation_bytes
    parameter_tensors: int  # distinct parameter storages among the saved tensors
    layer_calls_forward: int = 0  # encoder-layer forward calls during the forward pass
    layer_calls_backward: int = 0  # encoder-layer forward calls re-run during backward (recomputation)


def saved_for_backward(clf, enc, labels) -> SavedForBackward:
    """Storages kept alive between forward and backward of one training step of ``clf``.

    Counted with ``torch.autograd.graph.saved_tensors_hooks`` (every tensor autograd saves at
    the outer level) plus the input of every encoder layer (a forward pre-hook): with
    gradient checkpointing, each checkpointed layer keeps only its input, outside the outer
    hooks, and recomputes its insides during backward. Each storage is counted once, so views
    and a layer input that autograd saves anyway are not double counted. The same pre-hook
    counts how often each encoder layer runs forward, during the forward pass and again
    during backward: the recomputation is the extra compute checkpointing pays.
    """
    seen: dict[int, int] = {}
    params = {p.untyped_storage().data_ptr() for p in clf.parameters()}
    params |= {b.untyped_storage().data_ptr() for b in clf.buffers()}

    def count(t):
        storage = t.untyped_storage()
        seen[storage.data_ptr()] = storage.nbytes()

    def pack(t):
        count(t)
        return t

    def pre_hook(module, args, kwargs):
        hidden = args[0] if args else kwargs.get("hidden_states")
        if recording and isinstance(hidden, torch.Tensor):
            count(hidden)

    calls = {"forward": 0, "backward": 0}
    recording = True
    def count_call(module, args):
        calls["forward" if recording else "backward"] += 1

    # Calls are counted on a module *inside* each layer: depending on the transformers
    # version, the checkpoint wraps the layer's ``__call__`` (its hooks run again during
    # recomputation) or only its ``forward`` (they do not); an inner module runs again either way.
    handles = [layer.register_forward_pre_hook(pre_hook, with_kwargs=True) for layer in clf.bert.encoder.layer]
    handles += [layer.intermediate.register_forward_pre_hook(count_call) for layer in clf.bert.encoder.layer]
    clf.train()
    try:
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            loss = torch.nn.functional.cross_entropy(clf(enc["input_ids"], enc["attention_mask"]), labels)
        recording = False  # the recomputation during backward is not "kept"
        loss.backward()
    finally:
        for h in handles:
            h.remove()
        clf.zero_grad(set_to_none=True)
        clf.eval()
    act = {k: v for k, v in seen.items() if k not in params}
    par = {k: v for k, v in seen.items() if k in params}
    return SavedForBackward(sum(act.values()), sum(par.values()), len(act), len(par), calls["forward"], calls["backward"])


def saved_for_backward_bytes(clf, enc, labels) -> int:
    """Activation bytes kept for backward (:func:`saved_for_backward`, weights not included)."""
    return saved_for_backward(clf, enc, labels).activation_bytes


def training_state_bytes(model, optimizer) -> dict:
    """Bytes a training step holds besides the activations, measured from the tensors
    themselves: the weights, their gradients and the optimizer's state (for AdamW two running
    averages per weight, ``exp_avg`` and ``exp_avg_sq``). Run one step first, so that the
    gradients and the optimizer state exist."""
    nbytes = lambda t: t.numel() * t.element_size()
    params = list(model.parameters())
    state = [v for p in params for v in optimizer.state.get(p, {}).values()
             if isinstance(v, torch.Tensor) and v.ndim > 0]
    return {
        "weights": sum(nbytes(p) for p in params),
        "gradients": sum(nbytes(p.grad) for p in params if p.grad is not None),
        "optimizer state": sum(nbytes(v) for v in state),
    }


def training_step(clf, enc, labels):
    """A function that runs one forward + backward of ``clf`` (gradients cleared after), for timing."""
    def step():
        clf.train()
        loss = torch.nn.functional.cross_entropy(clf(enc["input_ids"], enc["attention_mask"]), labels)
        loss.backward()
        clf.zero_grad(set_to_none=True)
    return step


def time_interleaved(fns: dict, repeats: int = 5, warmup: int = 1) -> dict:
    """Wall-clock seconds of every ``fn()`` in ``fns``, ``repeats`` times each.

    Each function first runs ``warmup`` times untimed (a first call pays one-off costs), then
    the functions take turns (a, b, a, b, ...), so a slow spell of a shared machine hits all
    of them alike. Returns ``{name: [seconds, ...]}``; summarize with :func:`median_range`.
    """
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"repeats must be a positive int, got {repeats!r}.")
    for fn in fns.values():
        for _ in range(warmup):
            fn()
    times = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            synchronize()  # on a GPU, time the work itself, not only its launch
            start = time.perf_counter()
            fn()
            synchronize()
            times[name].append(time.perf_counter() - start)
    return times


def median_range(values) -> Interval:
    """Median of repeated measurements with their ``[min, max]`` (``level`` 1.0 marks a range)."""
    values = [float(v) for v in values]
    if not values:
        raise ValueError("give at least one measurement.")
    return Interval(statistics.median(values), min(values), max(values), 1.0)


def compare_times(a_name: str, a, b_name: str, b, unit: str = "s") -> str:
    """A sentence on two sets of timings taken in turns (a, b, a, b, ... as
    :func:`time_interleaved` takes them), compared turn by turn.

    Each turn gives one ratio ``b_i / a_i``: both ran back to back, so a slow spell of the
    machine hits both. The sentence reports the median ratio and its range, and calls a
    difference only when **every** ratio lies on the same side of 1 and a sign test makes that
    unlikely by chance (two-sided ``p < 0.05``, which needs at least 6 turns); one slow run
    can no longer hide a steady difference, as an overlap of the two ranges could."""
    a, b = [float(v) for v in a], [float(v) for v in b]
    if len(a) != len(b) or not a:
        raise ValueError(f"give the same, non-zero number of timings for both, taken in turns: {len(a)} and {len(b)}.")
    if min(a + b) <= 0:
        raise ValueError("timings must be positive.")
    ra, rb = median_range(a), median_range(b)
    fmt = lambda r: f"median {r.estimate:.3g} {unit}, range {r.low:.3g}-{r.high:.3g}"
    ratios = [y / x for x, y in zip(a, b)]
    rr = median_range(ratios)
    above, below = sum(r > 1 for r in ratios), sum(r < 1 for r in ratios)
    n = len(ratios)
    p = sign_test_p(above, above + below) if above + below else 1.0
    text = (f"{a_name}: {fmt(ra)}; {b_name}: {fmt(rb)} ({n} turns). Per turn, {b_name} / {a_name} = median "
            f"{rr.estimate:.2f}x, range {rr.low:.2f}-{rr.high:.2f}x; {above} of {n} ratios above 1, {below} below")
    if p < 0.05:
        slower = above > below
        return (f"{text} (sign test p = {p:.2g}): {b_name} is {'slower' if slower else 'faster'}, taking about "
                f"{rr.estimate:.2f}x as long (a difference called from the sign test's p < 0.05).")
    if n < 6:
        return (f"{text}: inconclusive -- {n} turns are too few for a sign test to reach p < 0.05 "
                "(it needs at least 6, all one way).")
    return f"{text} (sign test p = {p:.2g}): inconclusive on this machine (p >= 0.05), not evidence of equal speed."


@contextlib.contextmanager
def _quiet_native_stderr():
    """Silence what C++ code writes to file descriptor 2 (the profiler's start/stop lines)."""
    import os
    import sys

    sys.stderr.flush()
    saved, devnull = os.dup(2), os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


def peak_step_memory(clf, enc, labels) -> int:
    """Peak bytes allocated **during** one training step of ``clf`` (forward + backward), above what
    was allocated before it: the most memory the step's own tensors (activations, temporaries of
    the backward pass, the gradients) held at any moment. Measured by the allocator itself: on the
    CPU from the profiler's memory events ("Total Allocated" after every allocation and free), on
    CUDA from ``torch.cuda.max_memory_allocated``. Gradients from an earlier step are cleared first."""
    clf.zero_grad(set_to_none=True)
    clf.train()
    device = next(clf.parameters()).device
    try:
        if device.type == "cuda":
            torch.cuda.synchronize(device)
            base = torch.cuda.memory_allocated(device)
            torch.cuda.reset_peak_memory_stats(device)
            torch.nn.functional.cross_entropy(clf(enc["input_ids"], enc["attention_mask"]), labels).backward()
            torch.cuda.synchronize(device)
            return int(torch.cuda.max_memory_allocated(device) - base)
        import json
        import tempfile

        from torch.profiler import ProfilerActivity, profile

        with _quiet_native_stderr(), profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
            torch.nn.functional.cross_entropy(clf(enc["input_ids"], enc["attention_mask"]), labels).backward()
        with tempfile.TemporaryDirectory() as folder:
            trace = Path(folder) / "trace.json"
            with _quiet_native_stderr():
                prof.export_chrome_trace(str(trace))
            events = json.loads(trace.read_text())["traceEvents"]
        memory = sorted((e for e in events if e.get("name") == "[memory]" and e.get("args", {}).get("Device Type", 0) == 0),
                        key=lambda e: e["ts"])
        if not memory:
            raise RuntimeError("the profiler recorded no memory events; this torch build cannot measure the peak.")
        # "Total Allocated" is the allocator's running total for the whole process: the step's own
        # memory is its peak minus the total just before the step's first allocation.
        first = memory[0]["args"]
        return int(max(e["args"]["Total Allocated"] for e in memory) - (first["Total Allocated"] - first["Bytes"]))
    finally:
        clf.zero_grad(set_to_none=True)
        clf.eval()


def hidden_state_origins(states, full) -> list:
    """For each entry of a returned ``hidden_states`` tuple, the index of the full hidden state
    it equals; ``None`` for an entry that is ``None``, ``-1`` for a tensor that matches none."""
    origins = []
    for h in states or ():
        if h is None:
            origins.append(None)
            continue
        match = [i for i, f in enumerate(full) if f.shape == h.shape and torch.allclose(f, h, atol=1e-5)]
        origins.append(match[0] if match else -1)
    return origins


def describe_selection(wanted, states, full) -> tuple[str, str]:
    """``(verdict, sentence)`` for what a forward pass returned when asked for the hidden
    states ``wanted``: ``"honoured"`` (exactly those, each equal to that hidden state),
    ``"all"`` (the list was read as ``True``), ``"none"`` or ``"mis-selected"``."""
    origins = hidden_state_origins(states, full)
    filled = {pos: o for pos, o in enumerate(origins) if o is not None}
    n = len(full)
    if not filled:
        return "none", "no hidden states came back"
    if len(origins) == n and all(o == pos for pos, o in filled.items()) and sorted(filled) == sorted(set(wanted)):
        return "honoured", f"tensors exactly at {sorted(filled)}, each equal to that hidden state; None elsewhere"
    if len(filled) == n and all(o == pos for pos, o in filled.items()):
        return "all", f"all {n} hidden states: the list was read as True"
    pairs = ", ".join(f"entry {pos} holds hidden state {o if o >= 0 else '(none of them)'}" for pos, o in filled.items())
    return "mis-selected", f"{pairs} (asked for {sorted(set(wanted))})"


def _error_text(err: Exception, limit: int = 220) -> str:
    """``"TypeName: first two lines of the message"``, shortened to ``limit`` characters."""
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    text = f"{type(err).__name__}: {' '.join(lines[:2])}"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def what_comes_back(run, wanted, full) -> tuple[str, str]:
    """Call ``run()`` (a forward pass that asked for the hidden states ``wanted``) and
    describe its ``hidden_states`` with :func:`describe_selection`; an exception becomes
    ``("error", "TypeName: message")``."""
    try:
        with torch.no_grad():
            out = run()
    except Exception as err:  # noqa: BLE001 - the point is to show what happens
        return "error", _error_text(err)
    return describe_selection(wanted, getattr(out, "hidden_states", None), full)


def checkpointing_is_on(model) -> bool:
    """Whether activation (gradient) checkpointing is switched on, in any transformers version."""
    for flag in ("is_activation_checkpointing", "is_gradient_checkpointing"):
        if hasattr(type(model), flag) or hasattr(model, flag):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # transformers 5 deprecates the old name
                return bool(getattr(model, flag))
    return False


def try_from_pretrained(path: str, *, device=None, **kwargs):
    """``(model, None)`` from ``AutoModel.from_pretrained(path, **kwargs)``, or ``(None, error)``
    with the exception's type and message: for showing what a keyword does, live. The model goes
    to ``device`` (default: the course's device, :func:`helpers.model.loading.resolve_device`)."""
    from transformers import AutoModel
    from transformers.utils import logging as hf_logging

    from helpers.model.loading import resolve_device

    previous = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = AutoModel.from_pretrained(path, attn_implementation="eager", use_safetensors=True, **kwargs)
        return model.eval().to(resolve_device(device)), None
    except Exception as err:  # noqa: BLE001 - the point is to show the error
        return None, _error_text(err)
    finally:
        hf_logging.set_verbosity(previous)
        hf_logging.enable_progress_bar()


def quantize_int8(bert):
    """A dynamically int8-quantized copy (Linear weights int8, activations quantized on the fly)."""
    return quantize_int8_with_warnings(bert)[0]


def quantize_int8_with_warnings(bert) -> tuple:
    """``(quantized copy, [warning messages])``: :func:`quantize_int8`, with the warnings the
    installed torch raised on the way (recent versions mark ``torch.ao.quantization`` deprecated,
    successor: ``torchao``) kept out of the output and handed back, so a lesson can print them.
    Dynamic int8 quantization runs on the CPU only: the copy is made there, whatever the device of
    ``bert`` (helpers given it, e.g. ``extract_features``, put its inputs on the CPU)."""
    from torch.ao.quantization import quantize_dynamic

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        qmodel = quantize_dynamic(copy.deepcopy(bert).cpu(), {torch.nn.Linear}, dtype=torch.qint8)
    messages = list(dict.fromkeys(str(w.message).splitlines()[0] for w in caught))
    return qmodel, messages


def state_dict_bytes(module) -> int:
    """Size of the serialized state dict (what a checkpoint file would take)."""
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.save(module.state_dict(), buf)
    return buf.getbuffer().nbytes


class FeatureCache:
    """Sentence features keyed by ``(model, layer, pooling, text)``: each text is encoded once.

    ``store`` may be shared between caches of different models (a dict, or anything with
    ``in``/``[]``): the model part of every key is :func:`model_key`, so a model whose
    weights differ in any way never reads another's features. The key is taken when the cache
    is created: after changing the model's weights in place, create a new cache.
    """

    def __init__(self, tokenizer, bert, store: dict | None = None, max_length: int = 128):
        self.tokenizer, self.bert, self.max_length = tokenizer, bert, max_length
        self.key = model_key(bert)
        self.store: dict[tuple, torch.Tensor] = {} if store is None else store
        self.hits = self.misses = 0

    def get(self, texts, layer: int, pooling: str = "mean") -> torch.Tensor:
        """``[N, H]`` features; only texts not yet cached are run through the model."""
        L = self.bert.config.num_hidden_layers
        if isinstance(layer, bool) or not isinstance(layer, int) or not 0 <= layer <= L:
            raise ValueError(f"layer {layer!r} is out of range: valid layers are 0 (embeddings) to {L}.")
        keys = [(self.key, layer, pooling, t) for t in texts]
        missing = list(dict.fromkeys(k[3] for k in keys if k not in self.store))
        self.misses += len(missing)
        self.hits += len(keys) - len(missing)
        if missing:
            feats = extract_features(self.tokenizer, self.bert, missing, progress=False, max_length=self.max_length)
            for i, text in enumerate(missing):
                for l in range(L + 1):  # one pass gives every layer: cache them all
                    for p in ("cls", "mean"):
                        self.store[(self.key, l, p, text)] = feats.layer(l, p)[i]
        return torch.stack([self.store[k] for k in keys])


def relative_change(reference: torch.Tensor, changed: torch.Tensor) -> torch.Tensor:
    """``||changed - reference|| / ||reference||`` per row (``[N, H]`` -> ``[N]``)."""
    if reference.shape != changed.shape:
        raise ValueError(f"shapes differ: {tuple(reference.shape)} vs {tuple(changed.shape)}.")
    return (changed - reference).norm(dim=-1) / reference.norm(dim=-1).clamp(min=1e-12)


def random_partners(n: int, seed: int = 0) -> torch.Tensor:
    """``[n]`` indices: item ``i``'s partner ``partners[i]``, a seeded random pairing in which no
    item is its own partner (a random order, each item paired with the next one in it).

    Neighbours in a file are often alike (a data set sorted by class puts items of one class
    together), so "the next item" is a poor stand-in for "another item"."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 2:
        raise ValueError(f"need at least 2 items to pair, got {n!r}.")
    order = torch.randperm(n, generator=torch.Generator().manual_seed(seed))  # cpu: a seeded draw (indices)
    partners = torch.empty(n, dtype=torch.long)  # cpu: indices; they index tensors on any device
    partners[order] = order.roll(-1)
    return partners


def feature_change_per_layer(reference: LayerFeatures, changed: LayerFeatures, pooling: str = "mean", seed: int = 0):
    """``(change, between)``, both ``[L+1, N]``: how far each sentence's feature moved at each
    layer (:func:`relative_change`), and for scale how far it lies from another, randomly
    chosen sentence's feature of the same model (``||x_j - x_i|| / ||x_i||`` with
    ``j = random_partners(N, seed)[i]``, the same partner at every layer): a change as large as
    ``between`` moves a sentence as far as swapping it for another sentence."""
    ref, new = getattr(reference, pooling), getattr(changed, pooling)
    if ref.shape != new.shape or ref.shape[1] < 2:
        raise ValueError(f"need the same [L+1, N >= 2, H] features from both models, got {tuple(ref.shape)} "
                         f"and {tuple(new.shape)}.")
    new = new.to(ref.device)  # e.g. int8 features, made on the CPU
    partners = random_partners(ref.shape[1], seed).to(ref.device)
    change = torch.stack([relative_change(r, n) for r, n in zip(ref, new)])
    between = torch.stack([relative_change(r, r[partners]) for r in ref])
    return change, between
