"""The import graphs have no cycle, lazy imports (inside functions) and ``TYPE_CHECKING``
imports included, so docs/DESIGN.md's layers stay true.

The graphs are read from the source with ``ast``. In the package graph a node is a package of
``orchestrator`` (``collect``, ``players``, ...) or one of its top-level modules (``events``,
``recordings``, ...), an edge any import from one node of another. In the module graph a node
is a module (a package is its ``__init__``), an edge an import naming it: ``from p import m``
of a module ``m`` is an edge to ``p.m`` (Python runs ``p``'s ``__init__`` first, as it does
for any module of ``p``: a parent package is no edge), ``from p import name`` one to ``p``.
No ``TYPE_CHECKING`` edge is let off: none is needed yet.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

from tests.conftest import REPO

PACKAGE = REPO / "orchestrator"


def _node(module: str) -> str | None:
    """``orchestrator.collect.state`` -> ``collect``; None outside the package."""
    parts = module.split(".")
    if parts[0] != "orchestrator":
        return None
    return parts[1] if len(parts) > 1 else "orchestrator"


def _module_name(path: Path, top: Path = REPO) -> str:
    parts = path.relative_to(top).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _statements(path: Path, here: str) -> list[tuple[str, list[str], int]]:
    """Every import statement of ``path`` (module ``here``), anywhere in it: the module it
    names (relative ones resolved), the names a ``from`` import takes, the line."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    package = here if path.name == "__init__.py" else here.rsplit(".", 1)[0]
    found: list[tuple[str, list[str], int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, [], node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            found.append((module, [alias.name for alias in node.names], node.lineno))
    return found


def _imports(path: Path, here: str) -> list[tuple[str, int]]:
    """Every module ``path`` (module ``here``) imports, anywhere in it, with the line."""
    found = []
    for module, names, line in _statements(path, here):
        found.append((module, line))
        # `from orchestrator import render` imports a node (a name like __version__
        # is the root's own).
        if module == "orchestrator":
            found += [(f"orchestrator.{name}", line) for name in names
                      if (PACKAGE / name).is_dir() or (PACKAGE / f"{name}.py").is_file()]
    return found


def import_graph() -> dict[str, dict[str, list[str]]]:
    """node -> imported node -> where ("path:line"), the root package's own __init__ left
    out (every node imports it)."""
    graph: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for path in sorted(PACKAGE.rglob("*.py")):
        here = _module_name(path)
        source = _node(here)
        assert source is not None
        for module, line in _imports(path, here):
            target = _node(module)
            if target is None or target == source or target == "orchestrator":
                continue
            graph[source][target].append(f"{path.relative_to(REPO)}:{line}")
    return graph


def module_graph(root: Path = PACKAGE) -> dict[str, dict[str, list[str]]]:
    """module -> imported module -> where ("path:line"), every module of the package under
    ``root`` (its own name the folder's)."""
    paths = {_module_name(path, root.parent): path for path in sorted(root.rglob("*.py"))}
    graph: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for here, path in paths.items():
        for module, names, line in _statements(path, here):
            submodules = [f"{module}.{name}" for name in names if f"{module}.{name}" in paths]
            named = len(submodules) < len(names) or not names  # a name of the module itself
            for target in submodules + [module] * named:
                if target in paths and target != here:
                    graph[here][target].append(f"{path.relative_to(root.parent)}:{line}")
    return graph


def cycles(graph: dict[str, dict[str, list[str]]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, {}):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_package_level_import_cycle() -> None:
    problems = _problems(import_graph())
    assert not problems, "import cycles between packages:\n" + "\n".join(problems)


def _problems(graph: dict[str, dict[str, list[str]]]) -> list[str]:
    problems = []
    for component in cycles(graph):
        edges = [f"  {a} -> {b} ({graph[a][b][0]})" for a in component for b in component
                 if b in graph.get(a, {})]
        problems.append(" / ".join(component) + ":\n" + "\n".join(edges))
    return problems


def test_no_module_level_import_cycle() -> None:
    """Within a package too: a command shares work with another through a library module,
    never by importing the other command's module back."""
    problems = _problems(module_graph())
    assert not problems, "import cycles between modules:\n" + "\n".join(problems)


def test_the_module_graph_sees_submodules_and_finds_a_lazy_cycle(tmp_path: Path) -> None:
    """The module graph itself: ``from p import m`` of a module is an edge to it (not to
    ``p``), of a name one to ``p``; a cycle closed by an import inside a function, or under
    TYPE_CHECKING, is found."""
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("from pkg.sub import helper\n")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "helper.py").write_text("from pkg import sub\nVALUE = 1\n")
    (pkg / "one.py").write_text("from pkg.sub import helper, VALUE\nimport pkg.two\n")
    (pkg / "two.py").write_text("def later():\n    from pkg import one\n")
    (pkg / "three.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                  "    from . import one\n")
    graph = module_graph(pkg)
    assert {k: sorted(v) for k, v in graph.items()} == {
        "pkg": ["pkg.sub.helper"], "pkg.sub.helper": ["pkg.sub"],
        "pkg.one": ["pkg.sub", "pkg.sub.helper", "pkg.two"], "pkg.two": ["pkg.one"],
        "pkg.three": ["pkg.one"]}
    assert cycles(graph) == [["pkg.one", "pkg.two"]]
    assert graph["pkg.two"]["pkg.one"] == ["pkg/two.py:2"]


def test_the_graph_sees_lazy_and_relative_imports_and_finds_cycles(tmp_path: Path) -> None:
    """The reader itself: imports inside functions and under TYPE_CHECKING, relative ones
    and ``from orchestrator import x`` are edges; a cycle is found."""
    source = tmp_path / "mod.py"
    source.write_text(
        "from typing import TYPE_CHECKING\n"
        "from . import sibling\n"
        "from ..rules import board\n"
        "from orchestrator import render, __version__\n"
        "if TYPE_CHECKING:\n"
        "    from orchestrator.collect.collector import Collector\n"
        "def later():\n"
        "    import orchestrator.players.go19\n")
    found = [module for module, _ in _imports(source, "orchestrator.web.mod")]
    assert found == ["typing", "orchestrator.web", "orchestrator.rules", "orchestrator",
                     "orchestrator.render", "orchestrator.collect.collector",
                     "orchestrator.players.go19"]
    assert cycles({"a": {"b": ["x"]}, "b": {"c": ["y"]}, "c": {"a": ["z"]}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b": ["x"]}, "b": {}}) == []


def test_the_jobs_that_serve_http_share_a_helper_not_each_other() -> None:
    """The Hypercorn glue is a job helper (``asgi``): the web pages do not import ``serve``
    for it, and it imports no job; ``untrusted`` (outside bytes, within bounds) imports
    nothing of go19's, so any layer may use it."""
    graph = import_graph()
    assert "serve" not in graph["web"], dict(graph["web"])
    jobs = {"collect", "report", "dataset", "export", "label", "review", "serve", "web",
            "cluster", "commands", "cli"}
    assert not jobs & set(graph.get("asgi", {})), dict(graph["asgi"])
    assert set(graph.get("untrusted", {})) == set()
