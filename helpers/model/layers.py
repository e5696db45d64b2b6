"""Run the encoder from any layer on, with some heads gated: the machinery that lesson 12's
interventions (``helpers/interventions/``), lesson 13's attributions (``helpers/attribution/``)
and the library parity table (``helpers/parity/``) share.

* :func:`model_sizes`, :func:`check_layer`, :func:`check_head` -- the model's sizes and argument
  checks (same messages as :class:`helpers.model.trace.Trace`);
* :func:`additive_mask`, :func:`run_layer`, :func:`continue_from` -- the encoder's layers above
  ``after_layer`` run on a given hidden state;
* :func:`gated_heads` -- each head's context vector multiplied by a gate in a forward pre-hook on
  ``layer.attention.output`` (``BertSelfOutput``, whose ``dense`` is the output projection): gate
  0 removes the head, replaced by zeros or by a fill (mean ablation).

Layer numbering is the course's: ``0`` is the embedding output, ``1 .. L`` the encoder layers
(``model.encoder.layer[l - 1]``); heads are ``0 .. A-1``.
"""

from __future__ import annotations

import contextlib

import numpy as np
import torch

from helpers.model.trace import model_device


# -- sizes and argument checks (same messages as helpers.model.trace.Trace) ---------------


def model_sizes(model) -> tuple[int, int]:
    """``(L, A)``: encoder layers and heads per layer, read from the config."""
    return model.config.num_hidden_layers, model.config.num_attention_heads


def check_layer(model, layer, *, allow_embeddings: bool = False) -> int:
    """``layer`` itself when it names a layer of ``model``; a clear error otherwise."""
    n_layers = model.config.num_hidden_layers
    low = 0 if allow_embeddings else 1
    if isinstance(layer, bool) or not isinstance(layer, (int, np.integer)) or not low <= layer <= n_layers:
        what = "0 (embeddings) to" if allow_embeddings else "1 to"
        raise ValueError(
            f"layer {layer!r} is out of range: this model has {n_layers} encoder layers, "
            f"valid layers are {what} {n_layers}."
        )
    return int(layer)


def check_head(model, head) -> int:
    """``head`` itself when it names a head of ``model``; a clear error otherwise."""
    n_heads = model.config.num_attention_heads
    if isinstance(head, bool) or not isinstance(head, (int, np.integer)) or not 0 <= head < n_heads:
        raise ValueError(
            f"head {head!r} is out of range: this model has {n_heads} heads per layer, "
            f"valid heads are 0 to {n_heads - 1}."
        )
    return int(head)


def additive_mask(attention_mask: torch.Tensor, dtype=torch.float32) -> torch.Tensor:
    """``[B, T]`` of 1/0 -> the additive ``[B, 1, 1, T]`` mask every encoder layer adds to its scores."""
    return (1.0 - attention_mask[:, None, None, :].to(dtype)) * torch.finfo(dtype).min


def run_layer(layer_module, hidden, mask):
    """One encoder layer on ``hidden`` with the additive ``mask``; its output tensor."""
    out = layer_module(hidden, mask)
    return out[0] if isinstance(out, tuple) else out  # transformers 4 returns a tuple, 5 a tensor


def continue_from(model, hidden: torch.Tensor, attention_mask: torch.Tensor, after_layer: int,
                  gates: dict | None = None, fill: dict | None = None) -> torch.Tensor:
    """Run encoder layers ``after_layer + 1 .. L`` on ``hidden`` (the state after
    ``after_layer``); returns the last hidden state ``[B, T, H]``. ``gates`` maps a layer to
    its head gates, ``fill`` to what a removed head is replaced by (see :func:`gated_heads`)."""
    check_layer(model, after_layer, allow_embeddings=True)
    mask = additive_mask(attention_mask, hidden.dtype)
    with gated_heads(model, gates or {}, fill):
        for module in model.encoder.layer[after_layer:]:
            hidden = run_layer(module, hidden, mask)
    return hidden


# -- head gates: the pre-hook on the output projection ----------------------------------------


def _gate_hook(gate: torch.Tensor, num_heads: int, fill: torch.Tensor | None = None):
    """A forward pre-hook for ``BertSelfOutput``: its first input is the context ``[B, T, A*d]``
    (the heads side by side, head ``h`` in columns ``h*d .. (h+1)*d - 1``); scale head ``h``
    by ``gate[:, h]`` before the output projection ``dense`` mixes the heads. With a ``fill``
    (``[A*d]``, e.g. each head's mean context), a gate ``g`` gives ``g * c_h + (1 - g) * fill_h``:
    gate 0 replaces the head by the fill instead of by zeros (mean ablation)."""

    def hook(module, args):
        context = args[0]
        batch, seq, width = context.shape
        g = (gate if gate.ndim == 2 else gate[None])[:, None, :, None].to(context.dtype)  # [B or 1, 1, A, 1]
        heads = context.reshape(batch, seq, num_heads, width // num_heads) * g
        if fill is not None:
            heads = heads + (1 - g) * fill.view(1, 1, num_heads, -1).to(context.dtype)
        return (heads.reshape(batch, seq, width), *args[1:])

    return hook


@contextlib.contextmanager
def gated_heads(model, gates: dict, fill: dict | None = None):
    """Inside the ``with`` block, layer ``l``'s head contexts are multiplied by ``gates[l]``
    (``[A]`` or ``[B, A]``: 1 keeps a head, 0 removes it); with ``fill[l]`` (``[A*d]``, see
    :func:`mean_head_contexts`) a removed head is replaced by its fill (mean ablation) instead of
    zeros. The hooks go away on exit."""
    _, n_heads = model_sizes(model)
    handles = []
    try:
        for layer, gate in gates.items():
            check_layer(model, layer)
            gate = torch.as_tensor(gate, device=model_device(model))
            if gate.shape[-1] != n_heads or gate.ndim not in (1, 2):
                raise ValueError(f"the gate of layer {layer} must be [{n_heads}] or [batch, {n_heads}], "
                                 f"got shape {tuple(gate.shape)}.")
            module = model.encoder.layer[layer - 1].attention.output
            handles.append(module.register_forward_pre_hook(_gate_hook(gate, n_heads, (fill or {}).get(layer))))
        yield
    finally:
        for handle in handles:
            handle.remove()
