"""Using layers in practice (lesson 08): keeping only some hidden states, activation
checkpointing, dynamic int8 quantization, a feature cache."""

from __future__ import annotations

import io
import time
import warnings
from contextlib import contextmanager
import copy

import torch

from helpers.classify.compute import extract_features


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


def saved_for_backward_bytes(clf, enc, labels) -> int:
    """Bytes of tensors kept alive between forward and backward of one training step.

    Counted with ``torch.autograd.graph.saved_tensors_hooks`` (every tensor autograd saves at
    the outer level) plus the input of every encoder layer (a forward pre-hook): with
    gradient checkpointing, each checkpointed layer keeps only its input, outside the outer
    hooks, and recomputes its insides during backward. Each storage is counted once, so views
    and a layer input that autograd saves anyway are not double counted.
    """
    seen: dict[int, int] = {}

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

    recording = True
    handles = [layer.register_forward_pre_hook(pre_hook, with_kwargs=True) for layer in clf.bert.encoder.layer]
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
    return sum(seen.values())


def quantize_int8(bert):
    """A dynamically int8-quantized copy (Linear weights int8, activations quantized on the fly)."""
    from torch.ao.quantization import quantize_dynamic

    with warnings.catch_warnings():
        # torch 2.13 marks torch.ao.quantization deprecated (successor: torchao); it still works.
        warnings.simplefilter("ignore")
        return quantize_dynamic(copy.deepcopy(bert), {torch.nn.Linear}, dtype=torch.qint8)


def state_dict_bytes(module) -> int:
    """Size of the serialized state dict (what a checkpoint file would take)."""
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.save(module.state_dict(), buf)
    return buf.getbuffer().nbytes


def best_time(fn, repeats: int = 3) -> float:
    """Fastest of ``repeats`` wall-clock runs of ``fn()`` (the least disturbed by other work)."""
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def model_key(bert) -> str:
    """Identifies a model by name, sizes and a weight fingerprint (a fine-tuned copy differs)."""
    cfg = bert.config
    with torch.no_grad():
        w = bert.embeddings.word_embeddings.weight
        fingerprint = float(w[:8].double().sum()) + float(bert.encoder.layer[-1].output.dense.weight[0].double().sum())
    return f"{cfg._name_or_path}|{cfg.num_hidden_layers}x{cfg.hidden_size}|{fingerprint:.10g}"


class FeatureCache:
    """Sentence features keyed by ``(model, layer, pooling, text)``: each text is encoded once."""

    def __init__(self, tokenizer, bert):
        self.tokenizer, self.bert = tokenizer, bert
        self.key = model_key(bert)
        self.store: dict[tuple, torch.Tensor] = {}
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
            feats = extract_features(self.tokenizer, self.bert, missing, progress=False)
            for i, text in enumerate(missing):
                for l in range(L + 1):  # one pass gives every layer: cache them all
                    for p in ("cls", "mean"):
                        self.store[(self.key, l, p, text)] = feats.layer(l, p)[i]
        return torch.stack([self.store[k] for k in keys])
