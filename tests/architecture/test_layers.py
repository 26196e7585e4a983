"""The presentation layers (cli, report, web) render; the models are reached only through the
assessment layer, so a figure is computed once and shown the same way everywhere."""

from __future__ import annotations

import pytest

from tests.architecture.test_imports import import_graph

PRESENTERS = ("cli", "report", "web")
MODELS = ("perf", "goodput", "netsim")
# Bottom to top, as the README's architecture section lists them: a module imports only its
# own package and the packages below it.
LAYERS = (
    "errors", "userfiles", "constants", "busbw", "catalog", "job", "spec", "design", "topology", "netsim",
    "perf", "goodput", "generate", "ops", "accept", "diagnose", "rehearse", "assess", "report",
    "web", "cli",
)  # fmt: skip


def _in(module: str, packages: tuple[str, ...]) -> bool:
    parts = module.split(".")
    return len(parts) > 1 and parts[1] in packages


def model_imports(graph: dict[str, set[str]], layer: str) -> list[str]:
    """``a imports b`` for each module ``a`` of ``layer`` importing a module of the models."""
    return [
        f"{module} imports {target}"
        for module, targets in sorted(graph.items())
        if _in(module, (layer,))
        for target in sorted(targets)
        if _in(target, MODELS)
    ]


@pytest.mark.parametrize("layer", PRESENTERS)
def test_presenters_reach_the_models_only_through_assess(layer):
    assert model_imports(import_graph(), layer) == []


def test_the_check_names_each_import_of_a_model():
    graph = {
        "clusterforge.report.x": {"clusterforge.perf", "clusterforge.assess"},
        "clusterforge.assess": {"clusterforge.perf"},
    }
    assert model_imports(graph, "report") == ["clusterforge.report.x imports clusterforge.perf"]


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """Imports from a package to one above it in :data:`LAYERS`."""
    rank = {name: i for i, name in enumerate(LAYERS)}

    def level(module: str) -> int:
        parts = module.split(".")
        return rank[parts[1]] if len(parts) > 1 else len(LAYERS)  # the root may export any

    return [
        f"{module} imports {target}"
        for module, targets in sorted(graph.items())
        for target in sorted(targets)
        if level(target) > level(module)
    ]


def test_every_package_has_a_layer():
    packages = {m.split(".")[1] for m in import_graph() if m.count(".") >= 1}
    assert packages <= set(LAYERS), f"add to LAYERS and the README: {packages - set(LAYERS)}"


def test_imports_flow_down_the_layers():
    assert upward_imports(import_graph()) == []
