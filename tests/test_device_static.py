"""A device, chosen once: static checks that no helper assumes the CPU.

``load_model`` puts the model on one device (``COURSE_DEVICE``, default ``cpu``); everything the
helpers build must live there too, and only results for NumPy and matplotlib come back to the
CPU. A CPU-only machine cannot catch a helper that forgets this (every tensor is on the CPU
anyway), so these checks read the source instead. They parse every file with :mod:`ast`
(no import, no model) and report ``path:line`` for each offence.

Where a tensor can come from, and the rule that keeps it on the model's device:

(a) **Constructors** -- ``torch.tensor/zeros/ones/arange/full/empty/eye/linspace/rand/randn/
    randint/randperm/as_tensor/from_numpy`` in ``helpers/``: each call passes ``device=`` (the
    model's, an input tensor's, or ``"cpu"``), or is the receiver of ``.to(...)``, or one line of
    the call carries a ``# cpu: <reason>`` comment (a deliberate CPU tensor: statistics or
    plotting on results, seeded draws that are moved afterwards). ``device="cpu"`` spelled out
    needs that comment too, so every deliberate CPU tensor says why. ``torch.*_like`` and
    ``x.new_*`` take the device of their input and are not constructors here.
(b) **NumPy** -- every ``.numpy()`` in ``helpers/``, ``lessons/NN_*.py`` and
    ``lessons/solutions/*.py`` has ``.cpu()`` earlier in its chain (``x.detach().cpu().numpy()``)
    or a ``# cpu:`` comment on its line (a tensor known to be on the CPU already).
(c) **Tokenizer outputs** -- tokenizers return tensors only when asked (``return_tensors=``),
    so every call with a ``return_tensors`` keyword, and every ``encode_batch(...)`` call, in
    ``helpers/`` and in the lessons, is the receiver of ``.to(...)``, passes ``device=``
    (``encode_batch``), or is marked ``# cpu:``. ``helpers.model.trace.encode`` takes the model
    and moves its encoding itself (its tokenizer call is checked by this very rule). Whether a
    model call's inputs are moved cannot be decided statically in general (the inputs travel
    through dicts, slices and other functions); this rule is the sound alternative: every
    tensor a tokenizer makes is moved where it is made, unless marked as a CPU tensor. Model
    outputs are on the model's device already, and tensors built by hand are covered by (a).
(d) **Seeded randomness** -- a call with ``generator=`` never passes ``device=`` and
    ``torch.Generator()`` is built without a device: random draws are made on the CPU with a
    seeded CPU generator, then moved, so a seed gives the same draw on every device.

Not covered (left to review): modules built inside helpers (``torch.nn.Linear`` heads,
``BertModel(config)``, ``from_pretrained``) must be moved with ``.to(device)`` by the code that
makes them; lessons may build tensors by hand without ``device=`` where nothing from the model
meets them.

The checker's own tests (``test_checker_*``) run it on small snippets with and without an
offence, so a checker that stopped finding anything would fail.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CONSTRUCTORS = {"tensor", "zeros", "ones", "arange", "full", "empty", "eye", "linspace", "rand", "randn",
                "randint", "randperm", "as_tensor", "from_numpy"}
CPU_MARK = re.compile(r"#\s*cpu:\s*\S")


def _cpu_lines(source: str) -> set[int]:
    """Line numbers whose comment is a ``# cpu: <reason>`` marker."""
    lines = set()
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT and CPU_MARK.search(tok.string):
            lines.add(tok.start[0])
    return lines


def _parents(tree: ast.AST) -> dict:
    parent = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parent[child] = node
    return parent


def _is_moved(call: ast.Call, parent: dict) -> bool:
    """``call`` is the receiver of ``.to(...)``: ``call(...).to(device)``."""
    attr = parent.get(call)
    return (isinstance(attr, ast.Attribute) and attr.attr == "to" and attr.value is call
            and isinstance(parent.get(attr), ast.Call) and parent[attr].func is attr)


def _marked(node: ast.AST, cpu_lines: set[int]) -> bool:
    return any(line in cpu_lines for line in range(node.lineno, (node.end_lineno or node.lineno) + 1))


def _keywords(call: ast.Call) -> set[str]:
    return {k.arg for k in call.keywords if k.arg is not None}


def _func_name(call: ast.Call) -> str | None:
    func = call.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None


def _has_cpu_in_chain(node: ast.AST) -> bool:
    """Walk down ``a.b().c[0].d()``: True when some call in the chain is ``.cpu()``."""
    while True:
        if isinstance(node, ast.Call):
            if isinstance(node.func, ast.Attribute) and node.func.attr == "cpu":
                return True
            node = node.func
        elif isinstance(node, ast.Attribute):
            node = node.value
        elif isinstance(node, ast.Subscript):
            node = node.value
        else:
            return False


def check_source(source: str, name: str = "<snippet>", *, constructors: bool = True) -> list[str]:
    """Every offence against rules (a)-(d) in ``source`` as ``"name:line: what"``; ``constructors``
    switches rule (a) on (helpers) or off (lessons)."""
    tree = ast.parse(source)
    parent = _parents(tree)
    cpu_lines = _cpu_lines(source)
    problems = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func, kw, where = node.func, _keywords(node), f"{name}:{node.lineno}"
        # (a) tensor constructors
        if (constructors and isinstance(func, ast.Attribute) and func.attr in CONSTRUCTORS
                and isinstance(func.value, ast.Name) and func.value.id == "torch"
                and "device" not in kw and not _is_moved(node, parent) and not _marked(node, cpu_lines)):
            problems.append(f"{where}: torch.{func.attr}(...) without device=, .to(...) or a '# cpu: <reason>' comment")
        if (constructors and isinstance(func, ast.Attribute) and func.attr in CONSTRUCTORS
                and any(k.arg == "device" and isinstance(k.value, ast.Constant) and k.value.value == "cpu"
                        for k in node.keywords) and not _marked(node, cpu_lines)):
            problems.append(f"{where}: torch.{func.attr}(..., device=\"cpu\") without a '# cpu: <reason>' comment")
        # (b) .numpy() needs .cpu() first
        if (isinstance(func, ast.Attribute) and func.attr == "numpy" and not node.args
                and not _has_cpu_in_chain(func.value) and not _marked(node, cpu_lines)):
            problems.append(f"{where}: .numpy() without .cpu() earlier in the chain (or a '# cpu:' comment)")
        # (c) tokenizer outputs and encode_batch
        if ("return_tensors" in kw or _func_name(node) == "encode_batch") and not (
                _is_moved(node, parent) or _marked(node, cpu_lines)
                or (_func_name(node) == "encode_batch" and "device" in kw)):
            problems.append(f"{where}: {_func_name(node)}(...) returns tensors that are not moved with .to(...)"
                            + (" or device=" if _func_name(node) == "encode_batch" else "")
                            + " (or marked '# cpu:')")
        # (d) seeded draws on the CPU
        if "generator" in kw and "device" in kw:
            problems.append(f"{where}: a seeded draw with device=: draw on the CPU, then .to(device)")
        if (isinstance(func, ast.Attribute) and func.attr == "Generator"
                and (node.args or "device" in kw)):
            problems.append(f"{where}: torch.Generator on a device: keep generators on the CPU and move the draws")
    return sorted(problems, key=lambda p: (p.split(":")[0], int(p.split(":")[1])))


def _files(patterns) -> list[Path]:
    files = sorted({p for pattern in patterns for p in ROOT.glob(pattern)})
    assert files, f"no files match {patterns}"
    return files


HELPERS = ("helpers/**/*.py",)
LESSONS = ("lessons/[0-9][0-9]*_*.py", "lessons/solutions/*.py")  # split lessons (NNb) too


def _check(patterns, constructors: bool) -> list[str]:
    problems = []
    for path in _files(patterns):
        problems += check_source(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)), constructors=constructors)
    return problems


def test_helpers_keep_tensors_on_the_models_device():
    problems = _check(HELPERS, constructors=True)
    assert not problems, "tensors that assume the CPU:\n" + "\n".join(problems)


def test_lessons_move_tokenizer_outputs_and_numpy_from_the_cpu():
    problems = _check(LESSONS, constructors=False)
    assert not problems, "tensors that assume the CPU:\n" + "\n".join(problems)


def test_cpu_markers_give_a_reason():
    """A bare ``# cpu:`` does not count as a marker; every marker in helpers/ says why."""
    assert _cpu_lines("x = torch.zeros(3)  # cpu:\n") == set()
    for path in _files(HELPERS):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if re.search(r"#\s*cpu:", line):
                assert CPU_MARK.search(line), f"{path.relative_to(ROOT)}:{number}: '# cpu:' needs a reason"


# -- the checker itself: it must find what it is meant to find ------------------------------------------

BAD = '''
import torch
def f(model, tokenizer, x, g):
    a = torch.zeros(3)
    b = torch.arange(len(x)) != 0
    c = x.numpy()
    d = x.detach().numpy()
    enc = tokenizer(["a"], return_tensors="pt")
    e = encode_batch(tokenizer, ["a"])
    r = torch.randperm(5, generator=g, device=x.device)
    gen = torch.Generator(device="cuda")
    s = torch.as_tensor(x, device="cpu")
    return model(**enc)
'''

GOOD = '''
import torch
def f(model, tokenizer, x, g):
    a = torch.zeros(3, device=x.device)
    b = torch.arange(len(x)).to(x.device) != 0
    z = torch.zeros_like(x) + x.new_ones(3)
    q = torch.tensor([0.025, 0.975])  # cpu: quantile levels for NumPy results
    t = torch.tensor(
        [1, 2],  # cpu: spans lines, marked on one of them
    )
    c = x.cpu().numpy()
    d = x.detach().cpu().double().numpy()
    w = x[0].cpu()[None].numpy()
    enc = tokenizer(["a"], return_tensors="pt").to(x.device)
    lengths = tokenizer(["a"])["input_ids"]
    e = encode_batch(tokenizer, ["a"], device=x.device)
    r = torch.randperm(5, generator=g).to(x.device)
    gen = torch.Generator().manual_seed(0)
    s = torch.as_tensor(x, dtype=torch.float64, device="cpu")  # cpu: float64 statistics
    return model(**enc)
'''


def test_checker_finds_every_offence():
    problems = check_source(BAD)
    lines = sorted({int(p.split(":")[1]) for p in problems})
    assert lines == [4, 5, 6, 7, 8, 9, 10, 11, 12], problems
    assert any("torch.zeros" in p for p in problems)
    assert any(".numpy()" in p for p in problems)
    assert any("tokenizer(...)" in p for p in problems)
    assert any("encode_batch(...)" in p for p in problems)
    assert any("seeded draw" in p for p in problems)
    assert any("Generator" in p for p in problems)
    assert any('device="cpu") without' in p for p in problems)


def test_checker_accepts_the_allowed_forms():
    assert check_source(GOOD) == []


def test_checker_skips_constructors_in_lessons_but_not_numpy():
    problems = check_source(BAD, constructors=False)
    assert not any("torch.zeros" in p or "torch.arange" in p for p in problems)
    assert any(".numpy()" in p for p in problems)
