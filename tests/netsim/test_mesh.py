"""MI300X: xGMI is a switchless full mesh, 7 links of 64 GB/s per GPU (AMD Instinct
MI300X data sheet),
so intra-node collectives are bounded by the per-peer links, not by a switch port."""

from __future__ import annotations

import math

import numpy as np
import pytest

from clusterforge.netsim import simulate_collective
from tests.netsim.designs import single_node

LARGE = 16 * 2**30
PER_PEER_GBYTE_PER_S = 64.0  # AMD Instinct MI300X data sheet: 64 GB/s per peer link


@pytest.fixture(scope="module")
def mi300x():
    return single_node("mi300x-8gpu")[1]


def test_graph_has_one_64_gbyte_link_per_ordered_gpu_pair(mi300x):
    assert mi300x.mesh and mi300x.scaleup_class == "xgmi"
    src, dst = np.nonzero(~np.eye(8, dtype=bool))
    links = mi300x.mesh_link(src, dst)
    assert np.unique(links).size == 56
    assert np.all(mi300x.link_from[links] == src) and np.all(mi300x.link_to[links] == dst)
    assert np.allclose(mi300x.capacity_gbyte_per_s[links], PER_PEER_GBYTE_PER_S)


@pytest.mark.parametrize("num_gpus", [2, 3, 4, 8])
def test_ring_all_reduce_is_bounded_by_the_peer_links_its_rings_use(mi300x, num_gpus):
    """Each ring hop is one peer link; disjoint rings over a mesh of n GPUs number at most
    phi(n) <= n - 1 (stride rings), so ring busbw <= rings x 64 GB/s."""
    group = np.arange(num_gpus)[None, :]
    res = simulate_collective(mi300x, "all_reduce", LARGE, group, algorithm="ring")
    rings = sum(math.gcd(c, num_gpus) == 1 for c in range(1, num_gpus)) if num_gpus > 2 else 1
    bound = rings * PER_PEER_GBYTE_PER_S
    assert res.busbw_gbyte_per_s <= bound * 1.001
    assert res.busbw_gbyte_per_s >= 0.6 * bound  # the rings are used, not one link
    assert res.busbw_gbyte_per_s <= (num_gpus - 1) * PER_PEER_GBYTE_PER_S
    assert res.limiting_link is not None and res.limiting_link.link_class == "xgmi"


def test_a_pair_of_gpus_gets_one_peer_link_not_the_whole_port(mi300x):
    res = simulate_collective(mi300x, "sendrecv", LARGE, np.array([[0, 1]]))
    assert res.busbw_gbyte_per_s <= PER_PEER_GBYTE_PER_S
    _, h100 = single_node("dgx-h100")  # an NVSwitch gives the pair the full port
    assert simulate_collective(h100, "sendrecv", LARGE, np.array([[0, 1]])).busbw_gbyte_per_s > (
        4 * PER_PEER_GBYTE_PER_S
    )


def test_all_to_all_uses_every_peer_link_at_once(mi300x):
    res = simulate_collective(mi300x, "all_to_all", LARGE, np.arange(8)[None, :])
    assert res.busbw_gbyte_per_s <= 7 * PER_PEER_GBYTE_PER_S
    assert res.busbw_gbyte_per_s > 4 * PER_PEER_GBYTE_PER_S
