"""The package's import graph: no import circles, no module named for its size.

Every module under ``src/clusterforge`` is parsed with :mod:`ast` (not imported), and every
import statement counts, at module level or inside a function, absolute or relative, under
``if TYPE_CHECKING:`` or not: a lazy import hides a circle from the interpreter, not from the
reader. An edge goes from the importing module to the imported module (``from a.b import c``
goes to ``a.b.c`` when that is a module, else to ``a.b``); parent packages whose
``__init__`` runs on the way are not edges.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"
PACKAGE = "clusterforge"

# A name that says how much a module holds ("the rest of x") rather than what it holds.
SIZE_NAME = re.compile(r"(_extras|_more|\D2|^misc|^helpers)$")


def _module_names() -> dict[str, Path]:
    """Dotted name of every module of the package, to its file."""
    names = {}
    for path in sorted((SRC / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts.pop()
        names[".".join(parts)] = path
    return names


def _base_of(module: str, path: Path, node: ast.ImportFrom) -> str:
    """The absolute module a ``from ... import`` statement names before ``import``."""
    if node.level == 0:
        return node.module or ""
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    anchor = package[: len(package) - (node.level - 1)]
    return ".".join([*anchor, node.module] if node.module else anchor)


def _imports(module: str, path: Path, modules: set[str]) -> set[str]:
    """The package's modules that ``module`` imports anywhere in its body."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _base_of(module, path, node)
            targets = [f"{base}.{alias.name}" for alias in node.names]
            targets = [name if name in modules else base for name in targets]
        else:
            continue
        found.update(name for name in targets if name in modules and name != module)
    return found


def import_graph() -> dict[str, set[str]]:
    """Each module of the package to the package's modules it imports."""
    names = _module_names()
    return {module: _imports(module, path, set(names)) for module, path in names.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle as ``[a, b, ..., a]``, or None (iterative depth-first search)."""
    state: dict[str, int] = {}  # 1 on the current path, 2 done
    for root in sorted(graph):
        if root in state:
            continue
        path = [root]
        stack = [iter(sorted(graph[root]))]
        state[root] = 1
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                stack.pop()
            elif state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            elif nxt not in state:
                state[nxt] = 1
                path.append(nxt)
                stack.append(iter(sorted(graph[nxt])))
    return None


def test_the_graph_sees_every_kind_of_import() -> None:
    graph = import_graph()
    plan = graph["clusterforge.design.plan"]
    assert "clusterforge.design.rules" in plan  # module level, a package
    assert "clusterforge.spec" in plan
    assert "clusterforge.design.result" in graph["clusterforge.design.rules"]  # TYPE_CHECKING
    assert "clusterforge.generate.slurm.files" in graph["clusterforge.generate.bundle"]  # lazy


def test_relative_imports_resolve() -> None:
    tree = ast.parse("from . import x\nfrom ..b import y\nfrom .c import z\n")
    nodes = [node for node in tree.body if isinstance(node, ast.ImportFrom)]
    path = Path("pkg/sub/mod.py")
    assert [_base_of("pkg.sub.mod", path, node) for node in nodes] == [
        "pkg.sub",
        "pkg.b",
        "pkg.sub.c",
    ]
    init = Path("pkg/sub/__init__.py")
    assert _base_of("pkg.sub", init, nodes[0]) == "pkg.sub"


def test_a_circle_is_found() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert find_cycle(graph) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_no_import_circle() -> None:
    cycle = find_cycle(import_graph())
    assert cycle is None, "import circle: " + " -> ".join(cycle or [])


def test_no_module_named_for_its_size() -> None:
    named_for_size = [m for m in sorted(_module_names()) if SIZE_NAME.search(m.rsplit(".", 1)[-1])]
    assert not named_for_size, f"name these for the concept they hold: {named_for_size}"
