"""The layers of helpers/: every import of every ``helpers/**/*.py`` (top-level and inside functions),
read with ``ast``, checked against the layer order written once in ``helpers/README.md``.

A package may import from packages on lower lines only: never from a higher line (an upward
import), never from a peer on its own line, never another package's private (``_name``) names;
no two modules and no two packages may import each other, directly or round a circle. The
checker is tested on a small planted graph too, so that it can fail."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HELPERS = ROOT / "helpers"
README = HELPERS / "README.md"
ROOT_PACKAGE = "helpers"  # helpers/__init__.py and __main__.py (python -m helpers) sit above every layer


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def package_of(module: str) -> str:
    """``helpers.attention.compute`` -> ``attention``; the root package's own modules -> ``helpers``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 2 or (len(parts) == 2 and (HELPERS / parts[1]).is_dir()) else ROOT_PACKAGE


def _resolve(importer: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = importer.split(".") if is_package else importer.split(".")[:-1]
    base = base[:len(base) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def import_graph(root: Path = ROOT) -> dict[str, dict[str, set[str]]]:
    """``{module: {imported helpers module: names imported from it}}`` for every module under
    ``helpers/``, every import statement counted wherever it sits (module level or in a function).
    ``from helpers.x import y`` where ``y`` is a module counts as an import of ``helpers.x.y``."""
    graph: dict[str, dict[str, set[str]]] = {}
    for path in sorted((root / "helpers").rglob("*.py")):
        importer = module_name(path, root)
        edges = graph.setdefault(importer, {})
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] == ROOT_PACKAGE:
                        edges.setdefault(alias.name, set()).add("*")
            elif isinstance(node, ast.ImportFrom):
                target = _resolve(importer, path.name == "__init__.py", node)
                if target.split(".")[0] != ROOT_PACKAGE:
                    continue
                for alias in node.names:
                    sub = f"{target}.{alias.name}"
                    is_module = (root / Path(*sub.split("."))).with_suffix(".py").exists() or \
                        (root / Path(*sub.split(".")) / "__init__.py").exists()
                    edges.setdefault(sub if is_module else target, set()).add("*" if is_module else alias.name)
    return graph


def read_layers(text: str) -> list[list[str]]:
    """The fenced ```` ```layers ```` block of the README: one line per layer, bottom first; the
    packages on one line are peers."""
    found = re.findall(r"^```layers\n(.*?)^```", text, re.M | re.S)
    assert len(found) == 1, "helpers/README.md must hold exactly one ```layers block"
    return [line.split() for line in found[0].splitlines() if line.strip() and not line.lstrip().startswith("#")]


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one node, or a node importing itself (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]
    nodes = set(edges) | {t for ts in edges.values() for t in ts}

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1 or v in edges.get(v, ()):
                out.append(sorted(comp))

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def layer_problems(graph: dict[str, dict[str, set[str]]], layers: list[list[str]]) -> list[str]:
    """Every breach of the layer rules in ``graph`` (see :func:`import_graph`), as sentences."""
    level = {package: i for i, line in enumerate(layers) for package in line}
    problems = []
    seen = [p for line in layers for p in line]
    problems += [f"{p} is listed twice in the layer order" for p in sorted({p for p in seen if seen.count(p) > 1})]
    module_edges: dict[str, set[str]] = {}
    package_edges: dict[str, set[str]] = {}
    for importer, targets in sorted(graph.items()):
        source = package_of(importer)
        if source != ROOT_PACKAGE and source not in level:
            problems.append(f"{importer}: package {source} is not in the layer order")
        for target, names in sorted(targets.items()):
            if target == ROOT_PACKAGE:  # `import helpers` (the explorer registry walks every module), no edge
                continue
            module_edges.setdefault(importer, set()).add(target)
            dest = package_of(target)
            if dest == source:
                continue
            package_edges.setdefault(source, set()).add(dest)
            private = sorted(n for n in names if n.startswith("_") and not n.startswith("__"))
            if private:
                problems.append(f"{importer} imports private names {private} of another package ({target})")
            if source == ROOT_PACKAGE or source not in level or dest not in level:
                if dest not in level and dest != ROOT_PACKAGE:
                    problems.append(f"{importer} imports {target}: package {dest} is not in the layer order")
                continue
            if level[dest] > level[source]:
                problems.append(f"{importer} imports {target}: upward, from {source} (layer {level[source]}) "
                                f"to {dest} (layer {level[dest]})")
            elif level[dest] == level[source]:
                problems.append(f"{importer} imports {target}: {source} and {dest} are peers (one layer)")
    problems += [f"import circle between modules: {' <-> '.join(c)}" for c in _cycles(module_edges)]
    problems += [f"import circle between packages: {' <-> '.join(c)}" for c in _cycles(package_edges)]
    return problems


# ---------------------------------------------------------------------------------------- tests
def test_every_package_has_one_place_in_the_layer_order():
    layers = read_layers(README.read_text(encoding="utf-8"))
    listed = sorted(p for line in layers for p in line)
    packages = sorted(p.name for p in HELPERS.iterdir() if (p / "__init__.py").exists())
    assert listed == packages, f"layer order lists {listed}, helpers/ holds {packages}"


def test_helpers_import_only_downwards_without_circles():
    problems = layer_problems(import_graph(), read_layers(README.read_text(encoding="utf-8")))
    assert not problems, "\n".join(problems)


def test_the_graph_sees_function_local_and_relative_imports(tmp_path):
    pkg = tmp_path / "helpers" / "topic"
    pkg.mkdir(parents=True)
    (tmp_path / "helpers" / "__init__.py").write_text("")
    (tmp_path / "helpers" / "low").mkdir()
    (tmp_path / "helpers" / "low" / "__init__.py").write_text("")
    (tmp_path / "helpers" / "low" / "core.py").write_text("X = 1\n")
    (pkg / "__init__.py").write_text("")
    (pkg / "compute.py").write_text("def f():\n    from helpers.low.core import X\n    return X\n")
    (pkg / "plots.py").write_text("from . import compute\nfrom .compute import f\nimport helpers.low.core\n")
    graph = import_graph(tmp_path)
    assert graph["helpers.topic.compute"] == {"helpers.low.core": {"X"}}
    assert graph["helpers.topic.plots"] == {"helpers.topic.compute": {"*", "f"}, "helpers.low.core": {"*"}}


def test_the_checker_catches_a_planted_cycle_an_upward_import_a_peer_and_a_private_name():
    layers = [["model"], ["common"], ["attention", "layerwalk"], ["interventions"]]
    clean = {"helpers.common.stats": {"helpers.model.trace": {"encode"}},
             "helpers.attention.compute": {"helpers.common.stats": {"verdict"}},
             "helpers.interventions.compute": {"helpers.attention.compute": {"TOKEN_CLASSES"}}}
    assert layer_problems(clean, layers) == []
    upward = {**clean, "helpers.model.trace": {"helpers.common.stats": {"verdict"}}}
    found = layer_problems(upward, layers)
    assert any("upward, from model (layer 0) to common (layer 1)" in p for p in found)
    assert any(p.startswith("import circle between packages: common <-> model") for p in found)
    assert any(p.startswith("import circle between modules: helpers.common.stats <-> helpers.model.trace")
               for p in found)
    peer = {**clean, "helpers.layerwalk.compute": {"helpers.attention.compute": {"TOKEN_CLASSES"}}}
    assert layer_problems(peer, layers) == ["helpers.layerwalk.compute imports helpers.attention.compute: "
                                            "layerwalk and attention are peers (one layer)"]
    private = {**clean, "helpers.interventions.compute": {"helpers.attention.compute": {"_secret"}}}
    assert any("private names ['_secret']" in p for p in layer_problems(private, layers))
    inside = {**clean, "helpers.common.a": {"helpers.common.b": {"f"}}, "helpers.common.b": {"helpers.common.a": {"g"}}}
    assert layer_problems(inside, layers) == ["import circle between modules: helpers.common.a <-> helpers.common.b"]
    unknown = {**clean, "helpers.newtopic.compute": {"helpers.model.trace": {"encode"}}}
    assert layer_problems(unknown, layers) == ["helpers.newtopic.compute: package newtopic is not in the layer order"]


def test_read_layers_takes_the_one_block_bottom_first():
    text = "intro\n```layers\n# bottom first\nmodel\ncommon\nattention layerwalk\n```\nmore\n"
    assert read_layers(text) == [["model"], ["common"], ["attention", "layerwalk"]]
