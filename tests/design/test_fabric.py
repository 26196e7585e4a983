"""Fabric sizing: NVIDIA's DGX H100 SuperPOD table, Clos, fat-tree and dragonfly formulas."""

from __future__ import annotations

import numpy as np
import pytest

from clusterforge.catalog import Catalog
from clusterforge.design.fabric.sizing import FabricParams, size_fabric, smallest_divisor_at_least
from clusterforge.errors import CapacityError

# "Table 4" of NVIDIA's DGX SuperPOD H100 reference architecture (network fabrics page): SUs, nodes, leaves, spines,
# node/UFM-leaf cables, leaf-spine cables.
SUPERPOD_H100 = [
    (1, 31, 8, 4, 252, 256),
    (2, 63, 16, 8, 508, 512),
    (3, 95, 24, 16, 764, 768),
    (4, 127, 32, 16, 1020, 1024),
]


def _fabric(
    catalog: Catalog,
    topology: str,
    nodes: int,
    nics: int = 8,
    switch: str = "qm9700",
    speed: float = 400,
    oversub: float = 1.0,
    tiers: int | None = None,
    **kw: object,
):
    params = FabricParams(
        topology=topology,  # type: ignore[arg-type]
        switch=catalog.switches[switch],
        nics_per_node=nics,
        nic_gbit_per_s=speed,
        oversubscription=oversub,
        tiers=tiers,
        **kw,  # type: ignore[arg-type]
    )
    return size_fabric(params, num_nodes=nodes)


@pytest.mark.parametrize(
    ("sus", "nodes", "leaves", "spines", "node_cables", "leaf_spine"), SUPERPOD_H100
)
def test_rail_optimized_reproduces_superpod_h100_table(
    catalog, sus, nodes, leaves, spines, node_cables, leaf_spine
):
    shape = _fabric(catalog, "rail-optimized", nodes, reserve_ufm_port=True)
    c = shape.connectivity
    _, _, n, tier = c.switch_links()
    assert shape.tiers == 2
    assert (c.num_leaves, c.num_spines) == (leaves, spines)
    assert c.num_nodes * c.nics_per_node + 4 == node_cables  # 4 UFM ports as in the table
    assert n[tier == 0].sum() == leaf_spine


def test_rail_optimized_generalizes_to_other_radix(catalog):
    """SN5600 at 400G has 128 ports: an SU is 64 nodes per rail leaf, 64 uplinks per leaf."""
    shape = _fabric(catalog, "rail-optimized", 128, switch="sn5600")
    c = shape.connectivity
    assert shape.leaf_down_ports == 64 and shape.leaf_up_ports == 64
    assert c.num_leaves == 16
    # equal links from each leaf to each spine, and spines not over their radix
    assert 64 % c.num_spines == 0 and c.num_leaves * c.links_leaf_spine <= 128
    assert c.num_spines * 128 >= c.num_leaves * 64


def test_every_nic_of_a_node_lands_on_its_own_rail(catalog):
    c = _fabric(catalog, "rail-optimized", 64).connectivity
    node, nic, leaf = c.node_links()
    # NIC i of every node in an SU goes to leaf i of that SU
    assert len(np.unique(leaf[node == 0])) == 8
    assert np.all(leaf[(nic == 3) & (node < 32)] == 3)


def test_leaf_down_ports_follow_oversubscription(catalog):
    shape = _fabric(catalog, "leaf-spine", 64, oversub=3.0)
    assert shape.leaf_down_ports == 48 and shape.leaf_up_ports == 16  # d = R·r/(r+1)


def test_two_tier_reaches_r_squared_over_two(catalog):
    """Non-blocking 2-tier: at most R leaves → R²/2 endpoints (Al-Fares et al. 2008)."""
    ok = _fabric(catalog, "leaf-spine", 256, tiers=2)  # 2,048 = 64²/2 endpoints
    assert ok.connectivity.num_leaves == 64 and ok.connectivity.num_spines == 32
    with pytest.raises(CapacityError, match="tiers: 3"):
        _fabric(catalog, "leaf-spine", 264, tiers=2)


def test_k_ary_fat_tree_matches_al_fares(catalog):
    """k = 64: k³/4 = 65,536 hosts and 5k²/4 = 5,120 switches."""
    c = _fabric(catalog, "fat-tree", 65536 // 8).connectivity
    assert c.num_nodes * c.nics_per_node == 64**3 // 4
    assert c.num_switches == 5 * 64**2 // 4
    assert c.num_cores == (64 // 2) ** 2


def test_three_tier_links_are_balanced(catalog):
    c = _fabric(catalog, "rail-optimized", 1000).connectivity
    a, b, n, _ = c.switch_links()
    ports = np.bincount(
        np.concatenate([a, b]), weights=np.concatenate([n, n]), minlength=c.num_switches
    )
    assert ports.max() <= 64  # no switch over its radix
    leaf_up = ports[: c.num_leaves]
    assert np.all(leaf_up == 32)  # 1:1 leaves use every uplink


def test_dragonfly_balanced_sizes(catalog):
    """k = 64 (QM9700 at 400G): p = h = 16, a = 32 → 16 groups of 512 endpoints here, and the
    global links per pair divide a·h among the g − 1 peers (Kim et al. 2008)."""
    c = _fabric(catalog, "dragonfly", 1024).connectivity
    assert (c.terminals_per_router, c.routers_per_group, c.global_links_per_router) == (16, 32, 16)
    assert c.num_groups == 16
    assert c.links_per_group_pair == (32 * 16) // 15
    _, _, n, tier = c.switch_links()
    assert n[tier == 2].sum() == 16 * 32 * 31 // 2  # full mesh inside each group
    a, b, n, tier = c.switch_links()
    glob = np.bincount(
        np.concatenate([a[tier == 3], b[tier == 3]]),
        weights=np.concatenate([n[tier == 3]] * 2),
        minlength=c.num_switches,
    )
    assert glob.max() <= 16  # no router needs more than h global ports


def test_dragonfly_maximum_size(catalog):
    """N = a·p·(a·h + 1) = 32·16·513 = 262,656 endpoints at k ≈ 64."""
    with pytest.raises(CapacityError, match="262656"):
        _fabric(catalog, "dragonfly", 262656 // 8 + 1)


def test_single_switch_refuses_too_many_ports(catalog):
    with pytest.raises(CapacityError, match="leaf-spine"):
        _fabric(catalog, "single-switch", 16)


def test_rail_only_has_no_spine_between_rails(catalog):
    c = _fabric(catalog, "rail-only", 64).connectivity
    assert c.num_leaves == 8 and c.num_spines == 0
    _, nic, leaf = c.node_links()
    assert np.all(leaf == nic)


def test_switch_without_the_nic_speed_is_refused(catalog):
    with pytest.raises(CapacityError, match="no 800 Gb/s ports"):
        _fabric(catalog, "leaf-spine", 8, speed=800)


@pytest.mark.parametrize(
    ("n", "lower", "expected"), [(32, 12, 16), (32, 4, 4), (32, 33, 32), (7, 2, 7)]
)
def test_smallest_divisor(n, lower, expected):
    assert smallest_divisor_at_least(n, lower) == expected


def test_planes_replicate_one_plane_and_share_no_switch(catalog):
    """Dual-plane (Alibaba HPN style): NIC i joins plane i mod 2; each plane is a full Clos
    for half the NICs, and no link joins the planes."""
    two = _fabric(catalog, "rail-optimized", 128, planes=2).connectivity
    one = _fabric(catalog, "rail-optimized", 128, nics=4).connectivity
    assert (two.num_leaves, two.num_spines) == (2 * one.num_leaves, 2 * one.num_spines)
    _, nic, leaf = two.node_links()
    assert np.all(two.plane_of_switch(leaf) == nic % 2)
    a, b, n, _ = two.switch_links()
    assert np.all(two.plane_of_switch(a) == two.plane_of_switch(b))
    assert n.sum() == 2 * one.switch_links()[2].sum()


def test_planes_must_divide_the_nics_and_need_a_clos(catalog):
    with pytest.raises(CapacityError, match=r"network\.planes"):
        _fabric(catalog, "rail-optimized", 64, planes=3)
    with pytest.raises(CapacityError, match="Clos topology"):
        _fabric(catalog, "dragonfly", 64, planes=2)


def test_core_oversubscription_thins_spine_uplinks(catalog):
    """Meta-style oversubscribed core: spines keep R/2 down-links but 1/r of them up."""
    flat = _fabric(catalog, "rail-optimized", 1000).connectivity
    thin = _fabric(catalog, "rail-optimized", 1000, core_oversubscription=4).connectivity
    _, _, n_flat, t_flat = flat.switch_links()
    _, _, n_thin, t_thin = thin.switch_links()
    assert n_thin[t_thin == 0].sum() == n_flat[t_flat == 0].sum()  # leaf-spine unchanged
    assert n_thin[t_thin == 1].sum() * 4 == n_flat[t_flat == 1].sum()
    assert thin.num_cores < flat.num_cores
