"""Dependencies inside physics/ run one way: no module imports, directly or through others,
a module that imports it.

The graph is read from the source with ``ast``. Every import of an engine module counts,
at module level or inside a function (a deferred import still closes a circle); only those
under ``if TYPE_CHECKING:`` do not, since they never run. ``from .pkg import x`` depends on
``pkg/__init__.py`` and, where ``x`` is a submodule, on ``pkg/x.py``; importing ``a.b.c``
runs the ``__init__.py`` of each package on the way. A package a module sits in is already
being imported when the module runs, so ``from . import x`` inside it needs only ``x``.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ENGINE = REPO / "physics"
PREFIXES = ("taigym.physics", "physics")  # how the engine is imported from outside and from inside


def module_files(root: Path = ENGINE) -> dict[str, Path]:
    """Dotted module name ("physics.runtime.backend"; a package by its own name) -> file."""
    files = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        files[".".join(parts)] = path
    return files


def _type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST, deferred: bool):
    """Every import statement of a file, at any depth (with ``deferred``, inside functions
    too), except under ``if TYPE_CHECKING:``."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        if isinstance(node, ast.If) and _type_checking(node.test):
            for other in node.orelse:
                yield from _imports(ast.Module(body=[other], type_ignores=[]), deferred)
            continue
        if deferred or not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield from _imports(node, deferred)


def _engine_name(name: str) -> str | None:
    for prefix in PREFIXES:
        if name == prefix or name.startswith(prefix + "."):
            return "physics" + name[len(prefix):]
    return None


def _parents(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def _imported(node: ast.Import | ast.ImportFrom, name: str, files: dict, running: set) -> list[str]:
    """The engine modules one import statement in module ``name`` asks for."""
    if isinstance(node, ast.Import):
        return [target for target in map(_engine_name, (alias.name for alias in node.names)) if target]
    if node.level:
        base = name if name in running else name.rpartition(".")[0]
        for _ in range(node.level - 1):
            base = base.rpartition(".")[0]
        base = f"{base}.{node.module}" if node.module else base
    else:
        base = _engine_name(node.module or "")
        if base is None:
            return []
    names = [alias.name for alias in node.names]
    submodules = [f"{base}.{x}" for x in names if f"{base}.{x}" in files]
    return ([base] if base not in running or len(submodules) < len(names) else []) + submodules


def import_graph(files: dict[str, Path] | None = None, deferred: bool = True) -> dict[str, dict[str, int]]:
    """Module -> {module it imports: line of the first such import}; without ``deferred``,
    only the imports that run when the module is imported."""
    files = module_files() if files is None else files
    packages = {name for name, path in files.items() if path.name == "__init__.py"}
    graph: dict[str, dict[str, int]] = {name: {} for name in files}
    for name, path in files.items():
        running = set(_parents(name)) | ({name} if name in packages else set())  # initialized before this runs
        for node in _imports(ast.parse(path.read_text(), str(path)), deferred):
            for target in _imported(node, name, files, running):
                for package in _parents(target):
                    if package in packages and package not in running:
                        graph[name].setdefault(package, node.lineno)
                if target in files and target != name:
                    graph[name].setdefault(target, node.lineno)
    return graph


def cycles(graph: dict[str, dict | set | list]) -> list[list[str]]:
    """The strongly connected components with more than one module, or one that imports
    itself (Tarjan's algorithm, iterative), each sorted, in sorted order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(graph.get(successor, ())))))
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1 or node in graph.get(node, ()):
                        found.append(sorted(component))
    return sorted(found)


def describe(graph: dict[str, dict[str, int]], component: list[str]) -> str:
    inside = set(component)
    lines = [f"{len(component)} modules import each other:"]
    for name in component:
        targets = ", ".join(f"{t} (line {graph[name][t]})" for t in sorted(graph[name]) if t in inside)
        lines.append(f"  {name} -> {targets}")
    return "\n".join(lines)


def test_the_cycle_finder_finds_cycles():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": {"e"}, "e": set(), "f": {"f"}, "g": {"d", "h"},
             "h": {"g"}}
    assert cycles(graph) == [["a", "b", "c"], ["f"], ["g", "h"]]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []


def test_the_graph_reads_relative_deferred_and_package_imports(tmp_path):
    root = tmp_path / "physics"
    (root / "pkg").mkdir(parents=True)
    (root / "__init__.py").write_text("from .pkg import low\n")
    (root / "pkg" / "__init__.py").write_text("from .low import f\n")
    (root / "pkg" / "low.py").write_text("from .. import top\ndef f():\n    from taigym.physics import top\n")
    (root / "pkg" / "side.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..top import T\n")
    (root / "top.py").write_text("import numpy\n")
    graph = import_graph(module_files(root))
    assert graph == {"physics": {"physics.pkg": 1, "physics.pkg.low": 1}, "physics.pkg": {"physics.pkg.low": 1},
                     "physics.pkg.low": {"physics.top": 1}, "physics.pkg.side": {}, "physics.top": {}}
    assert cycles(graph) == []
    (root / "top.py").write_text("def g():\n    from .pkg.side import x\n")  # a deferred import closes a circle
    graph = import_graph(module_files(root))
    assert graph["physics.top"] == {"physics.pkg": 2, "physics.pkg.side": 2}
    assert cycles(graph) == [["physics.pkg", "physics.pkg.low", "physics.top"]]
    assert import_graph(module_files(root), deferred=False)["physics.top"] == {}


def test_no_import_cycles_in_the_engine():
    graph = import_graph()
    assert len(graph) > 50 and graph["physics.world"], "the engine's modules were not found"
    found = cycles(graph)
    assert not found, "\n".join(describe(graph, component) for component in found)


def test_layers_below_the_world_do_not_import_it():
    graph = import_graph()
    # eval_fk, which builds a World, lives above it (physics/fk.py), not in the compiler
    assert not [name for name in graph if name.startswith("physics.compiler.") and "physics.world" in graph[name]]
    # the collider codes the features name are below the collision stage that reads the features
    assert not [target for target in graph["physics.features"] if target.startswith("physics.collision")]


def test_importing_the_compiler_does_not_import_taichi():
    # physics.load_model and ModelBuilder stay cheap: the runtime comes with the World, above them
    graph = import_graph(deferred=False)
    reached, todo = set(), [name for name in graph if name.startswith("physics.compiler.")]
    while todo:
        name = todo.pop()
        if name not in reached:
            reached.add(name)
            todo.extend(graph[name])
    assert not {name for name in reached if name == "physics.world" or name.startswith("physics.runtime")}
