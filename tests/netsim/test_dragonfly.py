"""Dragonfly routing: minimal vs Valiant vs UGAL (Kim et al., ISCA 2008 §4)."""

from __future__ import annotations

import numpy as np
import pytest

from clusterforge.errors import SimulationError
from clusterforge.netsim import FabricGraph, build_fabric_graph, simulate_collective
from clusterforge.netsim.collectives import build_phases
from clusterforge.netsim.dragonfly import route_dragonfly
from clusterforge.netsim.incidence import Incidence
from clusterforge.netsim.maxmin import completion_time
from clusterforge.netsim.model import network_efficiency, scaleup_efficiency
from clusterforge.netsim.routing import route_intra, route_net
from clusterforge.netsim.solve import solve_phase
from clusterforge.topology.graph import LINK_CLASSES
from tests.netsim.designs import make_design
from tests.netsim.valiant_reference import valiant_expanded

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


def _random_inter_group_segments(graph: FabricGraph, num: int, seed: int):
    rng = np.random.default_rng(seed)
    c = graph.connectivity
    r_s = rng.integers(0, c.num_groups * c.routers_per_group, num)
    r_d = rng.integers(0, c.num_groups * c.routers_per_group, num)
    inter = r_s // c.routers_per_group != r_d // c.routers_per_group
    return r_s[inter], r_d[inter], rng.integers(0, 12, int(inter.sum()))  # 12 demands


def test_valiant_shared_patterns_load_every_link_as_the_full_expansion(dragonfly):
    """Link x demand loads of the shared-pattern Valiant routing equal, to rounding, the
    first implementation that wrote out every intermediate group and bundle pair."""
    r_s, r_d, owner = _random_inter_group_segments(dragonfly, 600, seed=3)
    num_links, num_demands = dragonfly.num_links, 12
    s, link, f, mult = valiant_expanded(dragonfly, r_s, r_d, owner)
    expected = np.zeros((num_links, num_demands))
    np.add.at(expected, (link, owner[s]), f * mult)
    (own_seg, _, _), shared = route_dragonfly(
        dragonfly, r_s, r_d, np.zeros(r_s.size, np.int64), "valiant"
    )
    assert own_seg.size == 0 and shared is not None  # every inter-group segment detours
    per_pattern = np.zeros((num_links, shared.num_patterns))
    np.add.at(per_pattern, (shared.link, shared.pattern), shared.frac)
    via = np.zeros((shared.num_patterns, num_demands))
    np.add.at(via, (shared.seg_pattern, owner[shared.seg]), shared.weight)
    got = per_pattern @ via
    assert np.abs(expected).sum() > 0
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
    # the work is linear in the segments: three pattern references each
    assert shared.seg.size == 3 * r_s.size


def test_valiant_routes_carry_a_whole_five_hop_path_for_every_segment(dragonfly):
    """Each segment's shared patterns add up to one unit of rate on each of its hops: first
    local, global, intermediate local, global, last local (hops on one router drop out)."""
    r_s, r_d, _ = _random_inter_group_segments(dragonfly, 200, seed=5)
    _, shared = route_dragonfly(dragonfly, r_s, r_d, np.zeros(r_s.size, np.int64), "valiant")
    assert shared is not None
    per_pattern = np.bincount(shared.pattern, weights=shared.frac, minlength=shared.num_patterns)
    per_seg = np.bincount(shared.seg, weights=per_pattern[shared.seg_pattern])
    assert np.all(per_seg <= 5 + 1e-9) and np.all(per_seg >= 2 - 1e-9)  # both global legs
    glob = dragonfly.link_class[shared.link] == LINK_CLASSES.index("dragonfly-global")
    global_share = np.bincount(
        shared.pattern[glob], weights=shared.frac[glob], minlength=shared.num_patterns
    )
    hops = np.bincount(shared.seg, weights=global_share[shared.seg_pattern])
    np.testing.assert_allclose(hops, 2.0)


def test_valiant_all_reduce_times_as_the_expanded_incidence(dragonfly):
    """Demands of many segments (a ring all-reduce over 16 GPUs in different groups): the
    solver's factored incidence times every phase as the same matrix written out entry by
    entry, each shared pattern copied under every segment that runs through it."""
    gpus = np.arange(16) * _per_group(dragonfly) // 2  # two GPUs per group
    phases = build_phases(dragonfly, "all_reduce", "ring", gpus[None, :], True)
    assert phases
    for traffic in phases:
        routes = route_net(dragonfly, traffic.net, "valiant", 1)
        shared = routes.shared
        assert shared is not None
        members = np.flatnonzero(np.isin(shared.pattern, shared.seg_pattern))
        order = np.argsort(shared.pattern[members], kind="stable")
        entries = members[order]
        count = np.bincount(shared.pattern[entries], minlength=shared.num_patterns)
        start = np.cumsum(count) - count
        use = np.repeat(np.arange(shared.seg.size), count[shared.seg_pattern])
        at = np.repeat(start[shared.seg_pattern], count[shared.seg_pattern]) + (
            np.arange(use.size)
            - np.repeat(
                np.cumsum(count[shared.seg_pattern]) - count[shared.seg_pattern],
                count[shared.seg_pattern],
            )
        )
        seg_i, link_i, frac_i = route_intra(dragonfly, traffic.intra_src, traffic.intra_dst)
        eff = network_efficiency(traffic.algorithm)
        link = np.concatenate([link_i, routes.link, shared.link[entries[at]]])
        seg_n = np.concatenate([routes.seg, shared.seg[use]])
        demand = np.concatenate([traffic.intra_demand[seg_i], traffic.net_demand[seg_n]])
        coef = np.concatenate(
            [
                frac_i * traffic.weights()[seg_i] / scaleup_efficiency("ring", dragonfly.scaleup),
                routes.frac / eff,
                shared.frac[entries[at]] * shared.weight[use] / eff,
            ]
        )
        expanded = Incidence.from_triplets(
            link, demand, coef, num_links=dragonfly.num_links, num_demands=traffic.volume.size
        )
        expected = completion_time(expanded, dragonfly.capacity_gbyte_per_s, traffic.volume)
        got = solve_phase(dragonfly, traffic, "valiant", 1)
        assert got.unit_time_s == pytest.approx(expected.time_s / 1e9, rel=1e-9)
        cap = dragonfly.capacity_gbyte_per_s
        load = expanded.matvec(expected.steady_rate) / cap
        np.testing.assert_allclose(got.utilization, load, rtol=1e-9, atol=1e-12)
        assert load[shared.link].max() > 0  # the detours carry traffic
