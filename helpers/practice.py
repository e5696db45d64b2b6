"""Using BERT's layers in practice: fine-tuning strategies, keeping only some hidden
states, gradient checkpointing, dynamic int8 quantization and a feature cache.

Every function that trains works on a ``copy.deepcopy`` of the model, so the cached model
that :func:`helpers.load_model` hands out is never changed.
"""

from __future__ import annotations

import copy
import io
import time
import warnings
from contextlib import contextmanager
from dataclasses import dataclass

import torch
from tqdm.auto import tqdm

from helpers.classify import encode_batch, extract_features, mean_pool

FINETUNE_STRATEGIES = ("full", "freeze lower half", "layer-wise lr decay", "gradual unfreezing")


class SentenceClassifier(torch.nn.Module):
    """BERT + mean pooling of the last layer + a linear layer: ``logits = W mean(h_L) + b``."""

    def __init__(self, bert, num_classes: int):
        super().__init__()
        self.bert = bert
        self.classifier = torch.nn.Linear(bert.config.hidden_size, num_classes)

    def forward(self, input_ids, attention_mask, **kw):
        out = self.bert(input_ids=input_ids, attention_mask=attention_mask, **kw)
        return self.classifier(mean_pool(out.last_hidden_state, attention_mask))


def layer_groups(bert) -> list[list[torch.nn.Parameter]]:
    """Parameters by depth: ``[embeddings, layer 1, ..., layer L, pooler]``."""
    groups = [list(bert.embeddings.parameters())]
    groups += [list(layer.parameters()) for layer in bert.encoder.layer]
    groups.append(list(bert.pooler.parameters()) if bert.pooler is not None else [])
    return groups


def llrd_param_groups(clf: SentenceClassifier, lr: float, decay: float = 0.8) -> list[dict]:
    """Layer-wise learning-rate decay: the head gets ``lr``, layer ``l`` gets ``lr * decay**(L+1-l)``."""
    if not 0 < decay <= 1:
        raise ValueError(f"decay must be in (0, 1], got {decay!r}.")
    groups = layer_groups(clf.bert)
    L = len(groups) - 2
    out = [{"params": list(clf.classifier.parameters()) + groups[-1], "lr": lr}]
    for depth, params in enumerate(groups[:-1]):  # depth 0 = embeddings
        params = [p for p in params if p.requires_grad]
        if params:
            out.append({"params": params, "lr": lr * decay ** (L + 1 - depth)})
    return out


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


def _set_trainable(params, flag: bool) -> None:
    for p in params:
        p.requires_grad_(flag)


@dataclass
class FinetuneResult:
    strategy: str
    accuracy: float
    seconds: float
    trainable_params: int  # at the end of training
    model: SentenceClassifier


def finetune(tokenizer, bert, train, test, strategy: str = "full", *, epochs: int = 2, lr: float = 1e-4,
             batch_size: int = 16, max_length: int = 16, seed: int = 0, progress: bool = True) -> FinetuneResult:
    """Fine-tune a deep copy of ``bert`` + a linear head on an :class:`~helpers.intents.IntentSplit`."""
    if strategy not in FINETUNE_STRATEGIES:
        raise ValueError(f"strategy {strategy!r} is not valid: choose one of {FINETUNE_STRATEGIES}.")
    if isinstance(epochs, bool) or not isinstance(epochs, int) or epochs < 1:
        raise ValueError(f"epochs must be a positive int, got {epochs!r}.")
    torch.manual_seed(seed)
    clf = SentenceClassifier(copy.deepcopy(bert), train.num_classes)
    groups = layer_groups(clf.bert)
    L = len(groups) - 2
    # The word-embedding matrix (vocab x H) is most of a small BERT's weights and gets sparse
    # gradients: freezing it in every strategy keeps CPU steps fast and the comparison fair.
    clf.bert.embeddings.word_embeddings.weight.requires_grad_(False)
    groups[0] = [p for p in groups[0] if p is not clf.bert.embeddings.word_embeddings.weight]
    if strategy == "freeze lower half":
        for params in groups[: 1 + L // 2]:  # embeddings + layers 1..L//2
            _set_trainable(params, False)
        opt = torch.optim.AdamW([p for p in clf.parameters() if p.requires_grad], lr=lr)
    if strategy == "layer-wise lr decay":
        opt = torch.optim.AdamW(llrd_param_groups(clf, lr))
    elif strategy != "freeze lower half":
        opt = torch.optim.AdamW([p for p in clf.parameters() if p.requires_grad], lr=lr)
    enc = encode_batch(tokenizer, train.texts, max_length)
    y = torch.tensor(train.labels)
    g = torch.Generator().manual_seed(seed)
    steps_per_epoch = (len(y) + batch_size - 1) // batch_size
    start = time.perf_counter()
    clf.train()
    bar = tqdm(total=epochs * steps_per_epoch, desc=strategy, disable=not progress, leave=False)
    for epoch in range(epochs):
        if strategy == "gradual unfreezing":
            # epoch 0 trains the head only; each later epoch unfreezes the next block of layers from the top
            n_open = round(epoch * (L + 1) / max(epochs - 1, 1))
            for depth, params in enumerate(groups[:-1]):
                _set_trainable(params, depth > L - n_open)
        for idx in torch.randperm(len(y), generator=g).split(batch_size):
            loss = torch.nn.functional.cross_entropy(
                clf(enc["input_ids"][idx], enc["attention_mask"][idx]), y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()  # AdamW skips parameters whose grad is None (frozen ones)
            bar.update()
    bar.close()
    seconds = time.perf_counter() - start
    clf.eval()
    acc = classifier_accuracy(tokenizer, clf, test, max_length)
    trainable = sum(p.numel() for p in clf.parameters() if p.requires_grad)
    return FinetuneResult(strategy, acc, seconds, trainable, clf)


@torch.no_grad()
def classifier_accuracy(tokenizer, clf, split, max_length: int = 16) -> float:
    enc = encode_batch(tokenizer, split.texts, max_length)
    pred = clf(enc["input_ids"], enc["attention_mask"]).argmax(-1)
    return (pred == torch.tensor(split.labels)).float().mean().item()


# -- keeping only the hidden states you need ---------------------------------------------
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


# -- memory saved for backward -------------------------------------------------------------
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


# -- dynamic int8 quantization -------------------------------------------------------------
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


# -- feature cache -----------------------------------------------------------------------
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
