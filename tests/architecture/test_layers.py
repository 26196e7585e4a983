"""The presentation layers (cli, report, web) render; the models are reached only through the
assessment layer, so a figure is computed once and shown the same way everywhere."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "clusterforge"
PRESENTERS = ("cli", "report", "web")
MODELS = ("perf", "goodput", "netsim")


def _imported_modules(path: Path) -> set[str]:
    """Every module a file imports, at module level or inside functions (absolute names)."""
    package = ".".join(("clusterforge", *path.relative_to(SRC).with_suffix("").parts[:-1]))
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level else ""
            module = ".".join(p for p in (base, node.module or "") if p)
            names.add(module)
            names |= {f"{module}.{alias.name}" for alias in node.names}
    return names


def _model_imports(layer: str) -> list[str]:
    found = []
    for path in sorted((SRC / layer).rglob("*.py")):
        for name in sorted(_imported_modules(path)):
            parts = name.split(".")
            if parts[0] == "clusterforge" and len(parts) > 1 and parts[1] in MODELS:
                found.append(f"{path.relative_to(SRC)} imports {name}")
    return found


@pytest.mark.parametrize("layer", PRESENTERS)
def test_presenters_reach_the_models_only_through_assess(layer):
    assert _model_imports(layer) == []


def test_the_check_sees_an_import_inside_a_function(tmp_path, monkeypatch):
    """The reader is not blind to the lazy imports the presenters use."""
    folder = tmp_path / "report"
    folder.mkdir()
    (folder / "x.py").write_text("def f():\n    from clusterforge.perf import predict_plan\n")
    monkeypatch.setattr(f"{__name__}.SRC", tmp_path)
    assert _model_imports("report") == [
        "report/x.py imports clusterforge.perf",
        "report/x.py imports clusterforge.perf.predict_plan",
    ]
