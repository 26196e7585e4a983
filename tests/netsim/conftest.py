"""Designs shared by the netsim tests (built once per session)."""

from __future__ import annotations

import pytest

from clusterforge.design import Design, plan
from clusterforge.netsim import FabricGraph, build_fabric_graph
from clusterforge.spec import load_spec
from tests.netsim.designs import EXAMPLES


@pytest.fixture(scope="session")
def design_a() -> Design:
    return plan(load_spec(EXAMPLES / "seed-design-a.yaml"))


@pytest.fixture(scope="session")
def design_b() -> Design:
    return plan(load_spec(EXAMPLES / "seed-design-b.yaml"))


@pytest.fixture(scope="session")
def graph_a(design_a: Design) -> FabricGraph:
    return build_fabric_graph(design_a)


@pytest.fixture(scope="session")
def graph_b(design_b: Design) -> FabricGraph:
    return build_fabric_graph(design_b)
