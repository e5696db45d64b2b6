"""A model's fingerprint: a hash of every weight and buffer (lesson 11's feature cache, lesson 11's
and 14's "the loaded model stays untouched" checks, the fine-tuning cache and its stored sweep).

* :func:`model_key` -- name, sizes and a hash of **every** weight and buffer: any change to any
  weight gives another key;
* :func:`tensors_digest` -- the hash of ``(name, tensor)`` pairs, in name order (also the stored
  sweep's hash of the trained parameters alone).
"""

from __future__ import annotations

import hashlib

import torch


def _tensor_bytes(value):
    """The raw bytes of a state-dict value (tensors of any dtype, quantized ones, tuples of them)."""
    if isinstance(value, torch.Tensor):
        if value.is_quantized:  # int8 values and their scales, as the floats they stand for
            value = value.dequantize()
        flat = value.detach().cpu().contiguous().reshape(-1)
        return flat.view(torch.uint8).numpy().tobytes() if flat.numel() else b""  # cpu: flat was moved above
    if isinstance(value, (tuple, list)):
        return b"".join(_tensor_bytes(v) for v in value)
    return repr(value).encode()


def model_key(bert) -> str:
    """Identifies a model by name, sizes and a hash of **every** weight and buffer.

    Any change to any weight (fine-tuning one layer, one bias, a LayerNorm) gives another key.
    The hash reads all the weights once (a fraction of a second for a BERT-base-sized model).
    """
    cfg = bert.config
    return f"{cfg._name_or_path}|{cfg.num_hidden_layers}x{cfg.hidden_size}|{tensors_digest(bert.state_dict().items())}"


def tensors_digest(named) -> str:
    """A hash of ``(name, tensor)`` pairs, names included, in name order (:func:`model_key`'s, and
    the stored sweep's of the trained parameters alone)."""
    digest = hashlib.blake2b(digest_size=16)
    for name, value in sorted(named, key=lambda item: item[0]):
        digest.update(name.encode())
        digest.update(_tensor_bytes(value))
    return digest.hexdigest()
