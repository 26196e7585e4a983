"""Placement lands job ranks only on nodes cabled to the compute fabric.

Spare nodes follow the training nodes.  'spare-ports' cables the spares that fit the free
leaf ports and keeps the rest cold; 'spare-pool' puts every spare on leaves of its own,
outside the training fabric; 'counted' cables every spare.  A rank on an uncabled node has
no fabric link, so a collective spanning it has no path.
"""

from __future__ import annotations

import numpy as np
import pytest

from clusterforge.design import Design
from clusterforge.errors import SimulationError
from clusterforge.job import JobLayout
from clusterforge.netsim import build_fabric_graph, design_job, groups_for, simulate_collective
from tests.netsim.designs import make_design

GPUS_PER_NODE = 8


def _design(num_gpus: int, spares: str) -> Design:
    """``num_gpus`` H100 training GPUs and 25 % spare nodes attached as ``spares`` says."""
    return make_design(num_gpus=num_gpus, spare_fraction=0.25, network={"spares": spares})


def _nodes(groups: np.ndarray) -> np.ndarray:
    return np.unique(groups // GPUS_PER_NODE)


@pytest.mark.parametrize("spares", ["spare-ports", "spare-pool"])
def test_fragmented_placement_never_lands_on_an_uncabled_spare(spares):
    # 256 GPUs: 32 training nodes fill the fabric's leaf ports, so the 8 spares are cold
    # ('spare-ports') or on the spare pool's leaf ('spare-pool'): none is on the fabric.
    design = _design(256, spares)
    assert design.compute.num_nodes == 40 and design.fabric.connectivity.num_nodes == 32
    for seed in range(20):
        every = groups_for(design, "all", placement="fragmented", seed=seed)
        assert np.array_equal(_nodes(every), np.arange(32))
        half = groups_for(
            design, "dp", layout=design_job(design, 128), placement="fragmented", seed=seed
        )
        assert _nodes(half).max() < 32


@pytest.mark.parametrize("spares", ["spare-ports", "spare-pool"])
def test_fragmented_all_reduce_runs_on_a_design_with_uncabled_spares(spares):
    design = _design(256, spares)
    graph = build_fabric_graph(design)
    dp = groups_for(design, "dp", placement="fragmented", seed=0)
    result = simulate_collective(graph, "all_reduce", 2**28, dp, routing="ecmp", num_qps=4)
    assert result.busbw_gbyte_per_s > 10


@pytest.mark.parametrize("spares", ["spare-ports", "counted"])
def test_fragmented_placement_may_use_spares_the_fabric_cables(spares):
    # 128 GPUs: the 16 training nodes leave leaf ports free, so 'spare-ports' cables all 4
    # spares, as 'counted' does; both are on the fabric and a scattered job may use them.
    design = _design(128, spares)
    assert design.fabric.connectivity.num_nodes == design.compute.num_nodes == 20
    used = set()
    for seed in range(10):
        used |= set(_nodes(groups_for(design, "dp", placement="fragmented", seed=seed)).tolist())
    assert used & set(range(16, 20))
    graph = build_fabric_graph(design)
    dp = groups_for(design, "dp", placement="fragmented", seed=3)
    assert simulate_collective(graph, "all_reduce", 2**28, dp).busbw_gbyte_per_s > 10


@pytest.mark.parametrize("placement", ["packed", "fragmented"])
def test_more_gpus_than_the_fabric_joins_is_an_error_naming_the_uncabled_spares(placement):
    design = _design(256, "spare-ports")
    with pytest.raises(SimulationError, match=r"num_gpus: 264 .*8 spare nodes are not cabled"):
        groups_for(design, "all", layout=JobLayout(dp=264), placement=placement)


def test_hand_built_group_across_an_uncabled_spare_is_a_clear_error():
    design = _design(256, "spare-pool")
    graph = build_fabric_graph(design)
    spare_gpu = 32 * GPUS_PER_NODE  # first GPU of the first spare node
    with pytest.raises(SimulationError, match="not cabled to the compute fabric"):
        simulate_collective(graph, "all_reduce", 2**20, np.array([[0, spare_gpu]]))
