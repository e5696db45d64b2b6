"""The course's model in the reader's browser (issue 50): what ``book/build.py`` adds to the site
so an explorer can run the reader's own sentence, offline, with no Python behind the page.

At book-build time this writes into ``<site>/_static/browser-model/``:

* ``model.onnx``: the model the lessons use (``helpers.model.loading.load_model(None)``: offline,
  the bundled all-MiniLM-L6-v2, Apache-2.0) exported with ``torch.onnx.export`` in fp32, the
  same weights as the notebook's PyTorch model. Inputs ``input_ids`` and ``token_type_ids``
  (``[1, n]``, int64, one unpadded sentence); outputs ``hidden_states`` ``[L+1, n, d]`` (the
  embeddings' output, then every layer's) and ``attentions`` ``[L, heads, n, n]`` (every head's
  probabilities), as the lessons' ``Trace`` holds them. The export is cached (``--cache``) by
  the checkpoint's weights and the torch version, so a rebuild does not repeat it.
* ``model.json``: what the browser needs beside the weights: the vocabulary and the BERT
  normaliser's settings for ``book/static/course-wordpiece.js``, the maximum input length
  (``max_input_tokens``: the config's ``max_position_embeddings`` or the tokenizer's limit), the
  sizes (read from the config), the colour map the explorers use, and the ONNX file's size and
  sha256.
* ``ort.wasm.bundle.min.mjs`` and ``ort-wasm-simd-threaded.wasm``: ONNX Runtime Web
  (:data:`ORT_VERSION`, MIT licence, from npm: ``npm pack`` once into the cache folder; later
  builds use the cached package and need no network). Only these two files are copied.

Nothing here is loaded by a page until its reader asks ("Try your own sentence"): the pages stay
as light as before. When something is missing (no npm and no cached package, no ``onnx``
package, a tokenizer that is not BERT's WordPiece) the build prints one line saying what and
how to get it, and the explorers stay the precomputed ones.

Checked equal: ``tests/test_browser_model.py`` runs this export in headless Chromium and compares
token ids (exactly) and every hidden state and attention map (within :data:`TOLERANCE`) with
PyTorch's, for held-out sentences.

Usage: python book/browser_model.py --site build/site [--cache build/browser-model-cache]
"""

from __future__ import annotations

import argparse
import hashlib
import html
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ORT_PACKAGE = "onnxruntime-web"
ORT_VERSION = "1.30.0"
ORT_FILES = ("ort.wasm.bundle.min.mjs", "ort-wasm-simd-threaded.wasm")  # the runtime and its WebAssembly
FOLDER = "browser-model"  # under _static/
TOLERANCE = 1e-4  # absolute: browser (ONNX Runtime Web, fp32) vs PyTorch, hidden states and attentions
LOGIT_TOLERANCE = 1e-4  # absolute: lesson 04's head on the browser's [CLS] vs on PyTorch's (measured: under 1e-5)
EXPORT_FORMAT = 1  # bump when the exported graph's inputs/outputs change: the cache key includes it


class Unavailable(Exception):
    """Something the browser model needs is missing; the message says what and how to get it."""


# ------------------------------------------------------------------------------ the model
class _AllStates:
    """Wraps a BertModel so its outputs are two tensors: every hidden state and every attention map."""

    def __new__(cls, model):
        import torch

        class AllStates(torch.nn.Module):
            def __init__(self, inner):
                super().__init__()
                self.inner = inner

            def forward(self, input_ids, token_type_ids):
                out = self.inner(input_ids=input_ids, token_type_ids=token_type_ids,
                                 attention_mask=torch.ones_like(input_ids), output_hidden_states=True,
                                 output_attentions=True, return_dict=True)
                return torch.stack(out.hidden_states)[:, 0], torch.stack(out.attentions)[:, 0]

        return AllStates(model).eval()


def all_states(model):
    """The module the export traces (``forward(input_ids, token_type_ids) -> (hidden_states,
    attentions)``); the parity test runs the same module in PyTorch."""
    return _AllStates(model)


def max_length(tokenizer, model) -> int:
    from helpers.model.trace import max_input_tokens

    return max_input_tokens(tokenizer, model)


def tokenizer_settings(tokenizer) -> dict:
    """The normaliser, pre-tokeniser and WordPiece settings of a BERT tokenizer (fast or slow),
    for ``course-wordpiece.js``. Raises :class:`Unavailable` for any other kind of tokenizer."""
    specials = {"cls": tokenizer.cls_token, "sep": tokenizer.sep_token, "unk": tokenizer.unk_token}
    if None in specials.values():
        raise Unavailable("the tokenizer has no [CLS]/[SEP]/[UNK] token; the browser tokenizer handles BERT's only")
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None:
        spec = json.loads(backend.to_str())
        norm, pre, model = spec.get("normalizer") or {}, spec.get("pre_tokenizer") or {}, spec.get("model") or {}
        if norm.get("type") != "BertNormalizer" or pre.get("type") != "BertPreTokenizer" or model.get("type") != "WordPiece":
            raise Unavailable(f"the tokenizer is {norm.get('type')}/{pre.get('type')}/{model.get('type')}; the browser "
                              "tokenizer handles BERT's (BertNormalizer, BertPreTokenizer, WordPiece) only")
        lowercase = bool(norm.get("lowercase", True))
        strip = norm.get("strip_accents")
        settings = {"clean_text": bool(norm.get("clean_text", True)),
                    "chinese_chars": bool(norm.get("handle_chinese_chars", True)),
                    "lowercase": lowercase, "strip_accents": lowercase if strip is None else bool(strip),
                    "prefix": model.get("continuing_subword_prefix", "##"),
                    "max_chars": int(model.get("max_input_chars_per_word", 100))}
    else:  # the slow BertTokenizer
        basic = getattr(tokenizer, "basic_tokenizer", None)
        if basic is None or not hasattr(tokenizer, "wordpiece_tokenizer"):
            raise Unavailable(f"{type(tokenizer).__name__} is not a BERT WordPiece tokenizer")
        lowercase = bool(basic.do_lower_case)
        settings = {"clean_text": True, "chinese_chars": bool(basic.tokenize_chinese_chars), "lowercase": lowercase,
                    "strip_accents": lowercase if basic.strip_accents is None else bool(basic.strip_accents),
                    "prefix": "##", "max_chars": int(tokenizer.wordpiece_tokenizer.max_input_chars_per_word)}
    vocab = tokenizer.get_vocab()
    words = [None] * (max(vocab.values()) + 1)
    for word, index in vocab.items():
        words[index] = word
    # special tokens written in the text stay whole (Python matches them before normalising)
    added = sorted({t for t in tokenizer.all_special_tokens if t in vocab})
    return {**settings, **specials, "specials": added, "vocab": words}


def colour_map(name: str | None = None, n: int = 256) -> list[str]:
    """The explorers' sequential colour map (``helpers.common.style.SEQUENTIAL``) as ``n`` ``#rrggbb``."""
    import matplotlib

    from helpers.common.style import SEQUENTIAL

    cmap = matplotlib.colormaps[name or SEQUENTIAL]
    return ["#" + "".join(f"{int(round(c * 255)):02x}" for c in cmap(i / (n - 1))[:3]) for i in range(n)]


def explorer_settings() -> dict:
    """The explorers' own constants the browser copies (the head explorer's token window)."""
    import inspect

    from matplotlib.colors import to_hex

    from helpers.attention.plots import head_line_colors
    from helpers.attention.widgets import HEAD_WINDOW, LINES_WINDOW, MIN_LINE_WEIGHT, ROW_PX
    from helpers.common.style import HIGHLIGHT, NORMAL
    from helpers.layerwalk.widgets import LayerWalkExplorer

    dims = inspect.signature(LayerWalkExplorer).parameters["n_dims"].default
    line = to_hex(inspect.signature(head_line_colors).parameters["color"].default)
    return {"head_window": HEAD_WINDOW,
            "head_lines": {"window": LINES_WINDOW, "min_weight": MIN_LINE_WEIGHT, "row_px": ROW_PX, "colour": line},
            "layer_walk": {"dims": dims, "normal": to_hex(NORMAL), "highlight": to_hex(HIGHLIGHT)}}


def _weights_key(model) -> str:
    import torch

    digest = hashlib.sha256(f"{EXPORT_FORMAT} {torch.__version__} {model.config.to_json_string()}".encode())
    for name, tensor in sorted(model.state_dict().items()):
        digest.update(name.encode())
        digest.update(tensor.detach().cpu().contiguous().numpy().tobytes())
    return digest.hexdigest()[:20]


def export_onnx(tokenizer, model, dest: Path) -> None:
    """``torch.onnx.export`` of :func:`all_states` to ``dest`` (one file, fp32), the sequence
    length dynamic from 2 (``[CLS] [SEP]``) to the model's maximum."""
    import torch

    try:
        import onnx  # noqa: F401  (the exporter needs it)
        import onnxscript  # noqa: F401
    except ImportError as err:
        raise Unavailable(f"the `{err.name}` package is missing (pip install -e '.[book]')") from err
    wrapped = all_states(model)
    sample = tokenizer("a sample sentence", return_tensors="pt")
    tokens = torch.export.Dim("tokens", min=2, max=max_length(tokenizer, model))
    dest.parent.mkdir(parents=True, exist_ok=True)
    partial = dest.with_suffix(".part")
    torch.onnx.export(wrapped, (sample["input_ids"], sample["token_type_ids"]), str(partial), dynamo=True,
                      input_names=["input_ids", "token_type_ids"], output_names=["hidden_states", "attentions"],
                      dynamic_shapes={"input_ids": {1: tokens}, "token_type_ids": {1: tokens}},
                      external_data=False, optimize=True, verbose=False)
    partial.replace(dest)


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def build_model(out: Path, cache: Path, model_name: str | None = None) -> dict:
    """Write ``model.onnx`` and ``model.json`` into ``out`` (the ONNX file from ``cache`` when the
    same weights were exported before). Returns the JSON's description (without the vocabulary)."""
    import contextlib

    from helpers.model.loading import load_model

    with contextlib.redirect_stdout(io.StringIO()):
        loaded = load_model(model_name)
    tokenizer, model = loaded
    key = _weights_key(model)
    cached = cache / f"model-{key}.onnx"
    if not cached.exists():
        t0 = time.monotonic()
        with contextlib.redirect_stdout(io.StringIO()):  # the exporter's progress lines
            export_onnx(tokenizer, model, cached)
        print(f"browser model: exported {loaded.choice.name} to ONNX in {time.monotonic() - t0:.0f} s")
    out.mkdir(parents=True, exist_ok=True)
    shutil.copy2(cached, out / "model.onnx")
    config = model.config
    description = {
        "format": EXPORT_FORMAT,
        "model": loaded.choice.name,
        "layers": config.num_hidden_layers, "heads": config.num_attention_heads, "hidden": config.hidden_size,
        "max_length": max_length(tokenizer, model),
        "onnx": {"file": "model.onnx", "bytes": cached.stat().st_size, "sha256": sha256_of(cached)},
        "runtime": {"package": f"{ORT_PACKAGE}@{ORT_VERSION}", "files": list(ORT_FILES),
                    "bytes": sum((out / f).stat().st_size for f in ORT_FILES if (out / f).exists())},
        "tolerance": TOLERANCE,
        "cmap": colour_map(),
        "explorers": explorer_settings(),
    }
    tokenizer_json = tokenizer_settings(tokenizer)
    (out / "model.json").write_text(json.dumps({**description, "tokenizer": tokenizer_json}, separators=(",", ":")),
                                    encoding="utf-8")
    return description


# ------------------------------------------------------------------------------ the runtime
def runtime_package(cache: Path) -> Path:
    """The ``onnxruntime-web`` npm tarball in ``cache`` (``npm pack`` fetches it once)."""
    tarball = cache / f"{ORT_PACKAGE}-{ORT_VERSION}.tgz"
    if tarball.exists():
        return tarball
    npm = shutil.which("npm")
    if npm is None:
        raise Unavailable(f"no npm to fetch {ORT_PACKAGE}@{ORT_VERSION} (Debian: apt-get install npm), and no "
                          f"cached {tarball}")
    cache.mkdir(parents=True, exist_ok=True)
    result = subprocess.run([npm, "pack", f"{ORT_PACKAGE}@{ORT_VERSION}", "--pack-destination", str(cache)],
                            capture_output=True, text=True, timeout=600)
    if result.returncode != 0 or not tarball.exists():
        last = (result.stderr or result.stdout).strip().splitlines()[-1:] or ["no output"]
        raise Unavailable(f"npm pack {ORT_PACKAGE}@{ORT_VERSION} failed ({last[0]}); offline, put the tarball in {cache}")
    return tarball


def copy_runtime(out: Path, cache: Path) -> int:
    """Copy :data:`ORT_FILES` (and the package's licence) from the cached tarball into ``out``;
    returns their bytes."""
    tarball = runtime_package(cache)
    out.mkdir(parents=True, exist_ok=True)
    total = 0
    with tarfile.open(tarball, "r:gz") as tar:
        members = {m.name: m for m in tar.getmembers()}
        for name in ORT_FILES:
            member = members.get(f"package/dist/{name}")
            if member is None:
                raise Unavailable(f"{tarball.name} has no dist/{name}")
            data = tar.extractfile(member).read()
            (out / name).write_bytes(data)
            total += len(data)
        licence = members.get("package/LICENSE") or members.get("package/LICENSE.txt")
        note = (tar.extractfile(licence).read().decode("utf-8", "replace") if licence is not None
                else "MIT License (package.json of onnxruntime-web); Copyright (c) Microsoft Corporation.\n")
    (out / "ONNXRUNTIME-WEB-LICENSE.txt").write_text(f"{ORT_PACKAGE} {ORT_VERSION}\n\n{note}", encoding="utf-8")
    return total


def build(site: Path, cache: Path, model_name: str | None = None) -> dict:
    """Runtime and model into ``<site>/_static/browser-model/``; raises :class:`Unavailable`."""
    out = site / "_static" / FOLDER
    copy_runtime(out, cache)
    return build_model(out, cache, model_name)


# ------------------------------------------------------------------------------ the pages
SUPPORTED = ("AttentionHeadExplorer", "HeadLinesExplorer", "LayerWalkExplorer", "NeighbourExplorer")  # explorers course-browser-model.js can redraw for the reader's sentence
SCRIPTS = ("course-wordpiece.js", "course-browser-model.js")  # in book/static/, so in _static/
FRAMES = re.compile(r'<script type="application/octet-stream" class="course-frames" data-encoding="gzip-base64">'
                    r'([A-Za-z0-9+/=]+)</script>')


def explorers_on(page_html: str) -> list[str]:
    """The explorer classes whose frames ``book/postprocess.py`` put on a page."""
    import base64
    import gzip

    return [json.loads(gzip.decompress(base64.b64decode(m[1])))["explorer"] for m in FRAMES.finditer(page_html)]


def heads_for(page: Path, page_html: str, frames: Path | None, info: dict) -> list[str]:
    """``<script type="application/json" class="course-browser-head">`` tags for the page's boxes
    whose model the browser can finish (lesson 04's ``LogitsBox``: a picture of examples, no
    frames): the trained head its kernel recorded (``record["browser"]``, from
    ``LogitsBox.site_browser``), keyed by the picture's sha256, when the head reads a vector of
    the browser's model (same hidden size, layer count and maximum length)."""
    folder = frames / page.stem if frames is not None else None
    if folder is None or not folder.is_dir():
        return []
    tags = []
    for path in sorted(folder.glob("*.json")):
        record = json.loads(path.read_text(encoding="utf-8"))
        head = record.get("browser")
        if record.get("kind") != "multiples" or not head or f"_images/{path.stem}.png" not in page_html:
            continue
        if (head["hidden"], head["layers"], head["max_length"]) != (info["hidden"], info["layers"], info["max_length"]):
            print(f"browser model: note: {page.name}'s {record['explorer']} reads another model "
                  f"(hidden size {head['hidden']}, {head['layers']} layers); left as pictures")
            continue
        body = json.dumps(head, separators=(",", ":")).replace("</", "<\\/")
        tags.append(f'<script type="application/json" class="course-browser-head" data-picture="{path.stem}">'
                    f"{body}</script>\n")
    return tags


def attach(site: Path, frames: Path | None = None) -> dict:
    """Give every lesson page with a :data:`SUPPORTED` explorer the "try your own sentence" box:
    :data:`SCRIPTS` (about 20 kB; the model itself loads only on the reader's request), the
    sizes of what a request downloads on the script tag. ``frames``: the book build's frames
    folder (``build/book/frames``), where lesson 04's box left its trained head (:func:`heads_for`).
    Needs :func:`build` to have run."""
    info = json.loads((site / "_static" / FOLDER / "model.json").read_text(encoding="utf-8"))
    done = {"pages": 0, "explorers": 0}
    for page in sorted((site / "lessons").glob("*.html")):
        text = page.read_text(encoding="utf-8")
        found = [name for name in explorers_on(text) if name in SUPPORTED]
        heads = heads_for(page, text, frames, info)
        if not found and not heads:
            continue
        found += ["LogitsBox"] * len(heads)
        prefix = "../" * (len(page.relative_to(site).parts) - 1) + "_static/"
        renderer = "course-explorer.js"  # postprocess.py adds it to pages with frames; the box draws with it
        tags = "".join(heads) + (f'<script defer src="{prefix}{renderer}"></script>\n' if renderer not in text else "")
        tags += (f'<script defer src="{prefix}{SCRIPTS[0]}"></script>\n'
                f'<script defer src="{prefix}{SCRIPTS[1]}" data-model="{info["model"]}" '
                f'data-model-bytes="{info["onnx"]["bytes"]}" data-runtime-bytes="{info["runtime"]["bytes"]}"></script>\n')
        page.write_text(text.replace("</head>", tags + "</head>", 1), encoding="utf-8")
        done["pages"] += 1
        done["explorers"] += len(found)
    return done


def note_other_model(site: Path, model: str) -> dict:
    """A track whose lessons ran another model (the Chinese track: m3e-small) gets no "try your own
    sentence" box: the box runs the English pages' model, so its picture would be another model's
    than the explorer's. Each :data:`SUPPORTED` explorer keeps its precomputed frames and says so
    in one line under its picture. ``model``: what the track's lessons ran."""
    done = {"pages": 0, "explorers": 0}
    line = ('<span class="course-caption course-browser-note">Running your own sentence in the browser is '
            "on the English pages only: it runs the English pages' model, and this explorer shows "
            f"{html.escape(model)}, which the site does not ship (its licence allows non-commercial research use "
            "only). In the notebook the explorer takes any sentence.</span>")
    for page in sorted((site / "lessons").glob("*.html")):
        text, parts, last, n = page.read_text(encoding="utf-8"), [], 0, 0
        for m in FRAMES.finditer(text):
            if explorers_on(m[0])[0] not in SUPPORTED:
                continue
            end = m.end() + (len("</div>") if text.startswith("</div>", m.end()) else 0)
            parts += [text[last:end], line]
            last, n = end, n + 1
        if n:
            page.write_text("".join(parts) + text[last:], encoding="utf-8")
            done["pages"] += 1
            done["explorers"] += n
    return done


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--site", required=True, help="the built site (build/site)")
    parser.add_argument("--cache", default=str(ROOT / "build" / "browser-model-cache"),
                        help="where the npm package and the ONNX export are kept between builds")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        info = build(Path(args.site), Path(args.cache))
    except Unavailable as why:
        print(f"browser model: not built ({why}); the explorers keep their precomputed frames only")
        return 3
    mb = 1e6
    print(f"browser model: {info['model']} ({info['layers']} layers, {info['heads']} heads), "
          f"{info['onnx']['bytes'] / mb:.1f} MB of weights + {info['runtime']['bytes'] / mb:.1f} MB of runtime, "
          f"loaded only when a reader asks")
    return 0


if __name__ == "__main__":
    sys.exit(main())
