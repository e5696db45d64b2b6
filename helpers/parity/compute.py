"""The same experiment in the tools researchers use: nnsight, TransformerLens and Captum beside
the course's own hooks and autograd code.

Two interventions of lesson 12, each done three ways and compared on the last hidden state of
every real token:

* **head ablation** -- the course's pre-hook on ``attention.output`` (:func:`course_head_ablation`,
  built on ``ablate_head`` in ``helpers/interventions/compute.py``); nnsight's edit of the same
  module's input inside ``model.trace`` (:func:`nnsight_head_ablation`); TransformerLens's
  ``hook_z`` (the heads' context vectors, ``[batch, pos, head, d_head]``) under
  ``run_with_hooks`` (:func:`transformer_lens_head_ablation`);
* **activation patching** -- one word's vectors after layer ``l`` copied from a donor sentence into
  a target sentence (:func:`course_patch`, built on ``patch_word_vectors``;
  :func:`nnsight_patch`; :func:`transformer_lens_patch`, on ``blocks.{l-1}.hook_out``).

Captum's rows check two attributions of lesson 13 (``helpers/attribution/compute.py``): the
course's gradient x input against ``InputXGradient`` and the course's Integrated Gradients sum
against ``LayerIntegratedGradients``.

Both research libraries rewrite the modules they wrap (nnsight replaces every ``forward`` with its
own controller; TransformerLens swaps in its bridge components), so each works on its own copy of
the model (:func:`model_copy`) and the course's model is left as it was.

:func:`parity_checks` runs every row it can and returns a :class:`ParityReport`: one
:class:`ParityCheck` per row ("equal", "NOT equal", "not installed" or "could not run" with the
library's own error in one line) and the gaps each library has with BERT, read from the library
itself. Nothing here fakes a row: a library that is missing or fails says so.
"""

from __future__ import annotations

import contextlib
import copy
import importlib.metadata
import logging
import warnings
from dataclasses import dataclass, field

import torch

from helpers.attribution.compute import (gradient_x_input, gradient_x_input_captum, integrated_gradients,
                                         integrated_gradients_by_hand)
from helpers.interventions.compute import ablate_head, patch_word_vectors, run_from_traces
from helpers.model.layers import check_head, check_layer
from helpers.model.trace import Trace, check_trace, max_input_tokens, model_device

RESEARCH_EXTRA = 'pip install "bert-layer-by-layer[research]"'
# PyPI distribution of each library the table names
DISTRIBUTIONS = {"nnsight": "nnsight", "TransformerLens": "transformer-lens", "Captum": "captum"}
RESEARCH_LIBRARIES = ("nnsight", "TransformerLens")  # the optional extra; Captum is a core dependency
# hidden states after LayerNorm are O(1) (a few outlier dimensions reach tens): float32 agreement
HIDDEN_ATOL, HIDDEN_RTOL = 1e-5, 1e-5
# attributions are sums of H products: a little more room for a different summation order
ATTRIBUTION_ATOL, ATTRIBUTION_RTOL = 1e-5, 1e-4
IG_PARITY_STEPS = 8  # Gauss-Legendre steps of the Integrated Gradients row (both sides use the same)


# -- which libraries are here -------------------------------------------------------------------


def library_version(library: str) -> str | None:
    """The installed version of ``library`` (a key of :data:`DISTRIBUTIONS`), or ``None``."""
    if library not in DISTRIBUTIONS:
        raise ValueError(f"library {library!r} is not one the table names: choose one of {tuple(DISTRIBUTIONS)}.")
    try:
        return importlib.metadata.version(DISTRIBUTIONS[library])
    except importlib.metadata.PackageNotFoundError:
        return None


def missing_research_libraries() -> list[str]:
    """The libraries of the ``[research]`` extra that are not installed."""
    return [name for name in RESEARCH_LIBRARIES if library_version(name) is None]


def one_line(error: BaseException, limit: int = 160) -> str:
    """``"ErrorType: first line of the message"``, cut to ``limit`` characters."""
    lines = str(error).strip().splitlines()
    text = f"{type(error).__name__}: {lines[0] if lines else ''}".rstrip(": ")
    return text if len(text) <= limit else text[:limit - 3] + "..."


# -- inputs ----------------------------------------------------------------------------------------


def batch_inputs(tokenizer, model, items) -> dict:
    """``items`` (strings, or ``(a, b)`` pairs packed as BERT's two segments) as one right-padded
    batch on the model's device: ``{"input_ids", "token_type_ids", "attention_mask"}``, each
    ``[B, T]``, cut to the model's maximum length."""
    if isinstance(items, str) or not len(items):
        raise ValueError("items must be a non-empty list of strings or (a, b) pairs.")
    limit = max_input_tokens(tokenizer, model)
    encoded = []
    for item in items:
        a, b = (item, None) if isinstance(item, str) else item
        enc = tokenizer(a, b, truncation=True, max_length=limit)
        encoded.append({k: enc[k] for k in ("input_ids", "token_type_ids", "attention_mask")})
    batch = tokenizer.pad(encoded, return_tensors="pt")  # cpu: moved to the model's device below
    return {k: v.to(model_device(model)) for k, v in batch.items()}


def trace_inputs(trace: Trace) -> dict:
    """The inputs that produced ``trace``, batch of one: ``{"input_ids", "token_type_ids",
    "attention_mask"}``."""
    ids = check_trace(trace).input_ids[None]
    return {"input_ids": ids, "token_type_ids": trace.token_type_ids[None], "attention_mask": torch.ones_like(ids)}


def model_copy(model):
    """A deep copy of ``model`` in eval mode, for a library that rewrites the modules it wraps."""
    return copy.deepcopy(model).eval()


def _as_tensor(output) -> torch.Tensor:
    return output[0] if isinstance(output, tuple) else output  # a layer returns a tuple in transformers 4


# -- the course's own runs ----------------------------------------------------------------------------


@torch.no_grad()
def course_head_ablation(model, inputs: dict, layer: int, head: int) -> torch.Tensor:
    """``[B, T, H]``: the last hidden state with head ``head`` of layer ``layer`` (from 1) removed by
    the course's pre-hook (``ablate_head``)."""
    with ablate_head(model, layer, head):
        return model(**inputs).last_hidden_state


def course_patch(model, donor: Trace, target: Trace, layer: int, donor_positions, target_positions) -> torch.Tensor:
    """``[T, H]``: ``target``'s last hidden state after its vectors at ``target_positions`` were
    replaced, after layer ``layer`` (0 = embeddings), by ``donor``'s at ``donor_positions``
    (``patch_word_vectors``, the course's patching of lesson 12)."""
    layer = check_layer(model, layer, allow_embeddings=True)
    donors = check_trace(donor).hidden(layer)[list(donor_positions)][None]
    run = run_from_traces([check_trace(target)])
    return patch_word_vectors(model, run, [list(target_positions)], donors, layer)[0]


# -- nnsight -------------------------------------------------------------------------------------------


@contextlib.contextmanager
def _quiet_nnsight():
    # BERT's submodules named `output` collide with nnsight's `.output`; nnsight warns once per module
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*has a submodule named.*")
        yield


def nnsight_model(model):
    """nnsight's ``NNsight`` wrapper around a copy of ``model`` (a loaded ``BertModel``)."""
    with _quiet_nnsight():
        from nnsight import NNsight

        return NNsight(model_copy(model))


def _submodule(envoy, name: str):
    """A child module of an nnsight envoy; one named like a value nnsight serves (BERT's ``output``)
    is mounted under a prefix (``E_output`` in nnsight 0.8)."""
    prefix = getattr(envoy, "OVERLOAD_PREFIX", "")
    return getattr(envoy, prefix + name) if prefix and hasattr(envoy, prefix + name) else getattr(envoy, name)


@torch.no_grad()
def nnsight_head_ablation(wrapped, inputs: dict, layer: int, head: int) -> torch.Tensor:
    """``[B, T, H]``: the same head removed with nnsight -- inside ``trace``, the context vectors that
    enter ``attention.output`` get the head's ``d`` columns set to 0."""
    config = wrapped._module.config
    layer, head = check_layer(wrapped._module, layer), check_head(wrapped._module, head)
    d = config.hidden_size // config.num_attention_heads
    import nnsight

    with _quiet_nnsight(), wrapped.trace(**inputs):
        self_output = _submodule(wrapped.encoder.layer[layer - 1].attention, "output")
        self_output.input[..., head * d:(head + 1) * d] = 0.0
        last = nnsight.save(wrapped.output.last_hidden_state)
    return last


def _nnsight_site(wrapped, layer: int):
    return wrapped.embeddings if layer == 0 else wrapped.encoder.layer[layer - 1]


@torch.no_grad()
def nnsight_patch(wrapped, donor_inputs: dict, target_inputs: dict, layer: int, donor_positions,
                  target_positions) -> torch.Tensor:
    """``[T, H]``: the same patch with nnsight -- one trace saves the donor's output of layer
    ``layer`` (0 = the embeddings), a second overwrites the target's at ``target_positions``."""
    layer = check_layer(wrapped._module, layer, allow_embeddings=True)
    donor_positions, target_positions = list(donor_positions), list(target_positions)
    import nnsight

    with _quiet_nnsight():
        with wrapped.trace(**donor_inputs):
            vectors = nnsight.save(_as_tensor(_nnsight_site(wrapped, layer).output)[0, donor_positions].clone())
        with wrapped.trace(**target_inputs):
            _as_tensor(_nnsight_site(wrapped, layer).output)[0, target_positions] = vectors
            last = nnsight.save(wrapped.output.last_hidden_state)
    return last[0]


# -- TransformerLens ----------------------------------------------------------------------------------


def _import_bridge():
    """``TransformerBridge``, imported without leaving the ``transformers`` logger silenced (the
    bridge's loader sets it to ERROR when imported)."""
    logger = logging.getLogger("transformers")
    level = logger.level
    try:
        from transformer_lens.model_bridge import TransformerBridge
        from transformer_lens.model_bridge.sources import transformers as _source  # noqa: F401 (boot_transformers)
    finally:
        logger.setLevel(level)
    return TransformerBridge


def bare_model_error(model, tokenizer, name: str = "bert") -> str | None:
    """What ``TransformerBridge.boot_transformers`` says when handed the loaded ``BertModel`` itself
    (one line), or ``None`` when it accepts it."""
    bridge_class = _import_bridge()
    try:
        bridge_class.boot_transformers(name, hf_model=model_copy(model), tokenizer=tokenizer,
                                       device=str(model_device(model)))
    except Exception as error:  # the library's own refusal, shown as it is
        return one_line(error)
    return None


def mlm_shell(model):
    """A ``BertForMaskedLM`` around a copy of ``model``: the encoder is the loaded one, the masked-LM
    head is new and **untrained** (the bundled checkpoint has none) and is never read -- every number
    taken from the bridge is a hidden state. TransformerLens's BERT adapter maps only this layout
    (``bert.*``, ``cls.predictions.*``)."""
    from transformers import BertForMaskedLM
    from transformers.models.bert.modeling_bert import BertOnlyMLMHead

    with torch.device("meta"):  # the shell's own random encoder is never built
        shell = BertForMaskedLM(model.config)
    shell.bert = model_copy(model)
    shell.cls = BertOnlyMLMHead(model.config).to(model_device(model))
    return shell.eval()


def transformer_lens_bridge(model, tokenizer, name: str = "bert"):
    """TransformerLens's ``TransformerBridge`` booted offline on the loaded weights (``hf_model=``:
    no download), through :func:`mlm_shell`."""
    bridge_class = _import_bridge()
    return bridge_class.boot_transformers(name, hf_model=mlm_shell(model), tokenizer=tokenizer,
                                          device=str(model_device(model)))


def _last_hook(bridge) -> str:
    return f"blocks.{bridge.cfg.n_layers - 1}.hook_out"


def _bridge_run(bridge, inputs: dict, hooks: list) -> torch.Tensor:
    """Run the bridge with ``hooks`` and return the residual stream after its last block."""
    kept = {}

    def keep(value, hook):
        kept["last"] = value

    with torch.no_grad():
        bridge.run_with_hooks(inputs["input_ids"], attention_mask=inputs["attention_mask"],
                              token_type_ids=inputs["token_type_ids"], fwd_hooks=hooks + [(_last_hook(bridge), keep)])
    return kept["last"]


def transformer_lens_head_ablation(bridge, inputs: dict, layer: int, head: int) -> torch.Tensor:
    """``[B, T, H]``: the same head removed with TransformerLens -- ``blocks.{layer-1}.attn.hook_z``
    (the heads' context vectors ``[batch, pos, head, d_head]``) set to 0 at ``head``."""
    layer, head = check_layer(bridge.original_model, layer), check_head(bridge.original_model, head)

    def remove(z, hook):
        z = z.clone()
        z[:, :, head] = 0.0
        return z

    return _bridge_run(bridge, inputs, [(f"blocks.{layer - 1}.attn.hook_z", remove)])


def _bridge_site(layer: int) -> str:
    return "blocks.0.hook_resid_pre" if layer == 0 else f"blocks.{layer - 1}.hook_out"


def transformer_lens_patch(bridge, donor_inputs: dict, target_inputs: dict, layer: int, donor_positions,
                           target_positions) -> torch.Tensor:
    """``[T, H]``: the same patch with TransformerLens -- ``run_with_cache`` keeps the donor's
    residual stream after layer ``layer`` (``blocks.{layer-1}.hook_out``; ``blocks.0.hook_resid_pre``
    for the embeddings), and a hook writes it into the target's at ``target_positions``."""
    layer = check_layer(bridge.original_model, layer, allow_embeddings=True)
    site = _bridge_site(layer)
    with torch.no_grad():
        _, cache = bridge.run_with_cache(donor_inputs["input_ids"], attention_mask=donor_inputs["attention_mask"],
                                         token_type_ids=donor_inputs["token_type_ids"], names_filter=site)
    vectors = cache[site][0, list(donor_positions)]

    def patch(resid, hook):
        resid = resid.clone()
        resid[0, list(target_positions)] = vectors
        return resid

    return _bridge_run(bridge, target_inputs, [(site, patch)])[0]


# -- the table ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ParityCheck:
    """One row: ``experiment`` done by the course (``course``) and by ``library`` (``call``);
    ``status`` is ``"equal"`` / ``"NOT equal"`` (``torch.allclose`` at ``atol``, ``rtol``),
    ``"not installed"`` or ``"could not run"`` (``note``: the library's error in one line)."""

    experiment: str
    course: str
    library: str
    call: str
    version: str | None
    status: str
    atol: float
    rtol: float
    max_difference: float | None = None
    note: str = ""

    @property
    def equal(self) -> bool:
        return self.status == "equal"

    def row(self) -> dict:
        """The row as :func:`~helpers.common.tables.show_table` shows it."""
        tolerance = f"atol {self.atol:.0e}, rtol {self.rtol:.0e}"
        checked = {"equal": f"equal ({tolerance})", "NOT equal": f"NOT equal ({tolerance})"}.get(
            self.status, self.status + (f": {self.note}" if self.note else ""))
        if self.status == "not installed":  # optional, not a failure: say how to add the row
            checked = f"not installed here (optional): `{self.note or RESEARCH_EXTRA}` adds this row"
        return {
            "experiment": self.experiment,
            "what the course writes by hand": self.course,
            "the library that does it": f"{self.library} {self.version}: {self.call}" if self.version
            else f"{self.library}: {self.call}",
            "checked equal (tolerance)": checked,
            "largest |difference|": "" if self.max_difference is None else f"{self.max_difference:.1e}",
        }


@dataclass
class ParityReport:
    """Every :class:`ParityCheck` and the gaps the libraries have with BERT (one line each)."""

    checks: list
    gaps: list = field(default_factory=list)

    def rows(self) -> list[dict]:
        return [check.row() for check in self.checks]

    def all_equal(self) -> bool:
        """Every row that ran is equal (rows of missing libraries do not count)."""
        return all(c.equal for c in self.checks if c.status in ("equal", "NOT equal"))


def compare(course: torch.Tensor, library: torch.Tensor, atol: float, rtol: float) -> tuple[bool, float]:
    """``(torch.allclose(library, course, rtol, atol), largest |difference|)``; a shape mismatch is
    not equal."""
    library = torch.as_tensor(library).to(course.device, course.dtype)
    if library.shape != course.shape:
        return False, float("inf")
    return bool(torch.allclose(library, course, rtol=rtol, atol=atol)), float((library - course).abs().max())


def _check(experiment, course_text, library, call, course_value, run, atol, rtol, mask=None) -> ParityCheck:
    """Run ``run()`` (the library's side) and compare it with ``course_value`` where ``mask`` is 1."""
    version = library_version(library)
    base = dict(experiment=experiment, course=course_text, library=library, call=call, version=version,
                atol=atol, rtol=rtol)
    if version is None:
        return ParityCheck(status="not installed", note=RESEARCH_EXTRA, **base)
    try:
        value = run()
    except Exception as error:  # the library's own error, shown in one line: never a faked row
        return ParityCheck(status="could not run", note=one_line(error), **base)
    if mask is not None:
        course_value, value = course_value[mask], torch.as_tensor(value).to(course_value.device)[mask]
    equal, largest = compare(course_value, value, atol, rtol)
    return ParityCheck(status="equal" if equal else "NOT equal", max_difference=largest, **base)


def _bridge_or_error(model, tokenizer):
    try:
        return transformer_lens_bridge(model, tokenizer), None
    except Exception as error:
        return None, error


def _failing(error):
    def run():
        raise error
    return run


def library_gaps(model, tokenizer, bridge=None) -> list[str]:
    """What each installed research library lacks for BERT, read from the library itself."""
    gaps = []
    if library_version("nnsight") is not None:
        from nnsight import Envoy

        prefix = getattr(Envoy, "OVERLOAD_PREFIX", "")
        gaps.append("nnsight: BERT's submodules named `output` collide with nnsight's `.output` (a module's"
                    f" output value); nnsight mounts them as `.{prefix}output`, which the course's calls use.")
    if library_version("TransformerLens") is not None:
        import transformer_lens

        try:
            transformer_lens.HookedEncoder  # noqa: B018 (the class the issue and older docs name)
        except ImportError as error:  # the library's own words, told as what it lacks, not as a crash
            said = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            gaps.append("TransformerLens has no BERT class of its own any more (HookedEncoder, which older docs"
                        f" name); the course reaches BERT through its bridge instead. The library says: {said}")
        refusal = bare_model_error(model, tokenizer)
        if refusal:
            gaps.append("TransformerLens's bridge does not take the loaded BertModel as it is (it expects"
                        " BertForMaskedLM, and says: " + refusal.split(": ", 1)[-1] + "); so the bridge gets"
                        " the same encoder inside one (mlm_shell), whose untrained masked-LM head is never read.")
        if bridge is not None and not getattr(bridge.adapter, "supports_fold_ln", True):
            gaps.append("TransformerLens: post-LN -- the adapter sets supports_fold_ln = False, so"
                        " enable_compatibility_mode() cannot fold LayerNorm into the weights (HookedTransformer"
                        " numerics); the rows above run the unprocessed weights, as the course does.")
    return gaps


def parity_checks(tokenizer, model, classifier, *, ablation_items, layer: int, head: int, donor: Trace | None,
                  target: Trace | None, word: str | None, patch_layer: int, attribution: Trace,
                  ig_steps: int = IG_PARITY_STEPS) -> ParityReport:
    """Every row of the table.

    ``ablation_items`` (strings or ``(a, b)`` pairs, :func:`batch_inputs`) run with head ``head`` of
    layer ``layer`` removed; ``donor``'s vectors of ``word`` after layer ``patch_layer`` patched into
    ``target``'s vectors of the same word (``donor=None``: no patching rows); Captum's rows attribute ``classifier``'s
    predicted class on ``attribution``. Hidden states are compared at every real token."""
    inputs = batch_inputs(tokenizer, model, ablation_items)
    real = inputs["attention_mask"].bool()
    checks = []
    ablated = course_head_ablation(model, inputs, layer, head)
    what = f"head ablation (layer {layer}, head {head})"
    course_text = "pre-hook zeroes the head's columns entering attention.output (ablate_head)"
    nn_model = nnsight_model(model) if library_version("nnsight") else None
    checks.append(_check(what, course_text, "nnsight", "trace(), attention.E_output.input[..., head's columns] = 0",
                         ablated, lambda: nnsight_head_ablation(nn_model, inputs, layer, head), HIDDEN_ATOL,
                         HIDDEN_RTOL, real))
    bridge, bridge_error = _bridge_or_error(model, tokenizer) if library_version("TransformerLens") else (None, None)
    # a bridge that could not boot: each of its rows shows the boot error
    tl_run = (lambda run: run) if bridge is not None else (lambda run: _failing(bridge_error))
    checks.append(_check(what, course_text, "TransformerLens", "TransformerBridge, hook_z[:, :, head] = 0",
                         ablated, tl_run(lambda: transformer_lens_head_ablation(bridge, inputs, layer, head)),
                         HIDDEN_ATOL, HIDDEN_RTOL, real))

    if donor is not None and target is not None:
        donor_positions, target_positions = check_trace(donor).find_word(word).positions, \
            check_trace(target).find_word(word).positions
        patched = course_patch(model, donor, target, patch_layer, donor_positions, target_positions)
        what = f"activation patching (after layer {patch_layer})"
        course_text = "donor's word vectors written in, layers above re-run (patch_word_vectors)"
        d_in, t_in = trace_inputs(donor), trace_inputs(target)
        checks.append(_check(what, course_text, "nnsight", "two traces: save, then assign layer output", patched,
                             lambda: nnsight_patch(nn_model, d_in, t_in, patch_layer, donor_positions,
                                                   target_positions),
                             HIDDEN_ATOL, HIDDEN_RTOL))
        checks.append(_check(what, course_text, "TransformerLens", "run_with_cache, then a hook on hook_out",
                             patched, tl_run(lambda: transformer_lens_patch(bridge, d_in, t_in, patch_layer,
                                                                            donor_positions, target_positions)),
                             HIDDEN_ATOL, HIDDEN_RTOL))

    checks += attribution_checks(tokenizer, model, classifier, attribution, ig_steps)
    return ParityReport(checks, library_gaps(model, tokenizer, bridge))


def predicted_class(model, classifier, trace: Trace) -> int:
    """The class ``classifier`` gives ``trace``'s sentence."""
    with torch.no_grad():
        mask = torch.ones(1, trace.seq_len, dtype=torch.long, device=model_device(model))
        return int(classifier(trace.hidden(trace.num_layers)[None], mask)[0].argmax())


def attribution_checks(tokenizer, model, classifier, trace: Trace, steps: int = IG_PARITY_STEPS) -> list:
    """Captum's two rows: gradient x input and Integrated Gradients of the predicted class's logit."""
    target = predicted_class(model, classifier, check_trace(trace))
    gxi = gradient_x_input(model, classifier, trace, target)
    ig = integrated_gradients_by_hand(tokenizer, model, classifier, trace, target, steps=steps)
    return [
        _check("gradient x input", "autograd on the embedding output (gradient_x_input)", "Captum",
               "InputXGradient", gxi, lambda: gradient_x_input_captum(model, classifier, trace, target),
               ATTRIBUTION_ATOL, ATTRIBUTION_RTOL),
        _check(f"Integrated Gradients ({steps} steps)",
               "Gauss-Legendre sum of gradients on the path (integrated_gradients_by_hand)", "Captum",
               "LayerIntegratedGradients", ig,
               lambda: integrated_gradients(tokenizer, model, classifier, trace, target, steps=[steps]).scores,
               ATTRIBUTION_ATOL, ATTRIBUTION_RTOL),
    ]


def parity_lines(parity) -> list[str]:
    """The printout under the library parity table (``parity``: a
    :class:`~helpers.parity.compute.ParityReport`): how many rows that ran are equal, each gap the
    libraries have with BERT, the installed library versions and which are missing."""
    ran = [c for c in parity.checks if c.status in ("equal", "NOT equal")]
    lines = [f"{sum(c.equal for c in ran)} of the {len(ran)} rows that ran are equal at their tolerance; "
             f"{len(parity.checks) - len(ran)} did not run"]
    if parity.gaps:  # what the libraries lack for BERT: expected, and worked around, not a failure
        lines.append("known limits of the libraries with BERT (worked around; nothing failed):")
        lines += [f"  - {gap}" for gap in parity.gaps]
    lines.append("installed: " + ", ".join(f"{name} {library_version(name)}"
                                           for name in ("nnsight", "TransformerLens", "Captum")
                                           if library_version(name)))
    missing = missing_research_libraries()
    if missing:
        lines.append(f"{' and '.join(missing)}: not installed here (optional); `{RESEARCH_EXTRA}` adds"
                     f" {'its rows' if len(missing) == 1 else 'their rows'}")
    return lines
