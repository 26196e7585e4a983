"""The presentation layers (cli, report, web) render; the models are reached only through the
assessment layer, so a figure is computed once and shown the same way everywhere."""

from __future__ import annotations

import pytest

from tests.architecture.test_imports import import_graph

PRESENTERS = ("cli", "report", "web")
MODELS = ("perf", "goodput", "netsim")


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
