"""Dragonfly routing: minimal vs Valiant vs UGAL (Kim et al., ISCA 2008 §4)."""

from __future__ import annotations

import numpy as np
import pytest

from clusterforge.errors import SimulationError
from clusterforge.netsim import FabricGraph, build_fabric_graph, simulate_collective
from tests.netsim.designs import make_design

GIB = 2**30
NIC_GBYTE_PER_S = 200 / 8


@pytest.fixture(scope="module")
def dragonfly() -> FabricGraph:
    """1,600 H100 on 40-port HDR routers: p = h = 10, a = 20, 8 groups of 200 terminals,
    28 global links per group pair."""
    design = make_design(
        num_gpus=1600,
        workload={"tensor_parallel": 8, "global_batch": 800},
        network={"topology": "dragonfly", "switch": "qm8700", "nic_gbit_per_s": 200},
    )
    return build_fabric_graph(design)


def _per_group(graph: FabricGraph) -> int:
    c = graph.connectivity
    return c.routers_per_group * c.terminals_per_router


def _shift(graph: FabricGraph, groups_ahead: int) -> np.ndarray:
    """Every GPU sends to the GPU at the same place ``groups_ahead`` groups further on."""
    gpus = np.arange(graph.num_gpus)
    return np.stack([gpus, (gpus + groups_ahead * _per_group(graph)) % graph.num_gpus], axis=1)


def _run(graph: FabricGraph, pairs: np.ndarray, routing: str):
    # broadcast over a 2-GPU group = one flow from the first GPU to the second
    return simulate_collective(graph, "broadcast", GIB, pairs, routing=routing)


@pytest.fixture(scope="module")
def adversarial(dragonfly):
    pairs = _shift(dragonfly, 1)  # all traffic of group i goes to group i + 1
    return {r: _run(dragonfly, pairs, r) for r in ("adaptive", "valiant", "ugal")}


@pytest.fixture(scope="module")
def uniform(dragonfly):
    c = dragonfly.connectivity
    pairs = np.concatenate([_shift(dragonfly, s) for s in range(1, c.num_groups)])
    return {r: _run(dragonfly, pairs, r) for r in ("adaptive", "valiant", "ugal")}


def test_adversarial_minimal_is_capped_by_the_few_global_links_of_a_group_pair(
    dragonfly, adversarial
):
    c = dragonfly.connectivity
    assert c.num_groups >= 3 and c.links_per_group_pair < _per_group(dragonfly)
    cap = c.links_per_group_pair / _per_group(dragonfly) * NIC_GBYTE_PER_S
    minimal = adversarial["adaptive"]
    assert minimal.busbw_gbyte_per_s <= cap * 1.01
    assert minimal.limiting_link is not None
    assert minimal.limiting_link.link_class == "dragonfly-global"


def test_adversarial_valiant_and_ugal_spread_over_many_global_links(adversarial):
    minimal = adversarial["adaptive"].link_class_utilization["dragonfly-global"]
    for routing in ("valiant", "ugal"):
        res = adversarial[routing]
        spread = res.link_class_utilization["dragonfly-global"]
        assert spread.mean_utilization > 3 * minimal.mean_utilization, routing
        # the hot global link is offered far less once traffic spreads over other groups
        assert spread.max_offered_load < 0.5 * minimal.max_offered_load, routing
        assert res.busbw_gbyte_per_s > 1.2 * adversarial["adaptive"].busbw_gbyte_per_s, routing


def test_uniform_minimal_beats_valiant_which_roughly_halves_throughput(uniform):
    minimal, valiant = uniform["adaptive"].busbw_gbyte_per_s, uniform["valiant"].busbw_gbyte_per_s
    assert minimal >= valiant
    assert 0.4 * minimal <= valiant <= 0.65 * minimal  # two global hops per flow instead of one


def test_uniform_ugal_stays_minimal(uniform):
    assert uniform["ugal"].busbw_gbyte_per_s == pytest.approx(
        uniform["adaptive"].busbw_gbyte_per_s, rel=0.05
    )


@pytest.mark.parametrize("routing", ["valiant", "ugal"])
def test_valiant_and_ugal_refuse_a_non_dragonfly_fabric(routing):
    graph = build_fabric_graph(make_design())
    with pytest.raises(SimulationError, match="only on a dragonfly"):
        simulate_collective(graph, "all_reduce", GIB, np.arange(16)[None, :], routing=routing)
