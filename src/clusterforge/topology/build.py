"""Build the :class:`~clusterforge.topology.graph.FabricGraph` of a design.

Link blocks are laid out in a fixed order that :class:`FabricGraph`'s id arithmetic relies
on: scale-up up links (one per GPU), scale-up down links, NIC up links (one per port), NIC
down links, then the switch bundles' members in both directions, the adaptive-routing
aggregates and, for a full-mesh scale-up, the peer links.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, TypedDict, assert_never

import numpy as np

from clusterforge.design.fabric.sizing import Connectivity
from clusterforge.topology.graph import (
    LINK_CLASS_ID,
    NETWORK_LINK_LATENCY_S,
    NVLINK_LATENCY_S,
    TIER_CLASS,
    FabricGraph,
)

if TYPE_CHECKING:
    from clusterforge.catalog.models import Gpu
    from clusterforge.design import Design

__all__ = ["build_fabric_graph"]

ScaleupClass = Literal["nvlink", "pcie", "xgmi"]


class _LinkTable:
    """Accumulates link blocks; returns the first id of each block."""

    def __init__(self) -> None:
        self.blocks: list[tuple[np.ndarray, ...]] = []
        self.size = 0

    def add(
        self,
        cls: np.ndarray | str,
        cap: np.ndarray | float,
        lat: float,
        src: np.ndarray,
        dst: np.ndarray,
        *,
        ecmp: bool,
        adaptive: bool,
    ) -> int:
        """Append one block of links; ``ecmp`` / ``adaptive``: the routing views using it."""
        n = int(np.asarray(src).size)
        cls_arr = (
            np.full(n, LINK_CLASS_ID[cls], np.int8) if isinstance(cls, str) else cls.astype(np.int8)
        )
        self.blocks.append(
            (
                cls_arr,
                np.broadcast_to(np.asarray(cap, float), (n,)),
                np.full(n, lat),
                np.asarray(src, np.int64),
                np.asarray(dst, np.int64),
                np.full(n, ecmp),
                np.full(n, adaptive),
            )
        )
        first = self.size
        self.size += n
        return first

    def arrays(self) -> list[np.ndarray]:
        return [np.concatenate([b[i] for b in self.blocks]) for i in range(7)]


def _pods(conn: Connectivity) -> tuple[int, int, int]:
    """(leaves per pod, spines per pod, cores per group) of one plane; rail-only treats a
    rail as a pod."""
    if conn.kind == "rail-only":
        return max(conn.leaves_per_rail, 1), conn.spines_per_rail, 0
    if conn.kind == "clos" and conn.num_spines:
        return conn.leaves_per_pod, conn.spines_per_pod, conn.cores_per_group
    return max(conn.num_leaves // conn.num_planes, 1), 0, 0


def _plane_shape(conn: Connectivity) -> tuple[int, int, int]:
    """(leaves, pods, cores) of one plane: what routing needs to stay inside a plane."""
    lpp, _, _ = _pods(conn)
    leaves = max(conn.num_leaves // conn.num_planes, 1)
    return leaves, -(-leaves // lpp), conn.num_cores // conn.num_planes


@dataclass(frozen=True)
class _Scaleup:
    """How the GPUs of a domain meet, from the catalog's ``gpu.scaleup_fabric``."""

    link_class: ScaleupClass
    domain_gpus: int
    nvls: bool

    @classmethod
    def of(cls, gpu: Gpu, gpus_per_node: int, nvlink_domain_gpus: int) -> _Scaleup:
        fabric = "pcie" if nvlink_domain_gpus <= 1 else gpu.scaleup_fabric
        match fabric:
            case "pcie":
                return cls("pcie", gpus_per_node, False)
            case "mesh":
                return cls("xgmi", nvlink_domain_gpus, False)
            case "switch":
                return cls("nvlink", nvlink_domain_gpus, gpu.nvlink_sharp)
            case _:
                assert_never(fabric)


def _add_scaleup_and_nics(t: _LinkTable, design: Design, su: _Scaleup, v: tuple[int, ...]) -> None:
    compute, fab = design.compute, design.fabric
    v_dom, v_nic, v_sw = v
    gpus = np.arange(compute.num_nodes * compute.gpus_per_node)
    cap = compute.gpu.scaleup_gbyte_per_s / 2  # the catalog figure is bidirectional
    dom = v_dom + gpus // su.domain_gpus
    t.add(su.link_class, cap, NVLINK_LATENCY_S, gpus, dom, ecmp=True, adaptive=True)
    t.add(su.link_class, cap, NVLINK_LATENCY_S, dom, gpus, ecmp=True, adaptive=True)
    node, nic, leaf = fab.connectivity.node_links()
    port = v_nic + node * fab.nics_per_node + nic
    nic_cap, lat = fab.nic_gbit_per_s / 8, NETWORK_LINK_LATENCY_S
    t.add("nic-leaf", nic_cap, lat, port, v_sw + leaf, ecmp=True, adaptive=True)
    t.add("leaf-nic", nic_cap, lat, v_sw + leaf, port, ecmp=True, adaptive=True)


def _add_members(
    t: _LinkTable, bundles: tuple[np.ndarray, ...], nic_gbyte_per_s: float, v_sw: int
) -> list[np.ndarray]:
    """One link per physical member of every switch bundle, both directions; returns the
    first member id of each bundle per direction."""
    a, b, n, tier = bundles
    bases = []
    for direction in (0, 1):
        cls = np.array([LINK_CLASS_ID[TIER_CLASS[(ti, direction)]] for ti in range(4)])[tier]
        src, dst = (a, b) if direction == 0 else (b, a)
        first = t.add(
            np.repeat(cls, n),
            nic_gbyte_per_s,
            NETWORK_LINK_LATENCY_S,
            v_sw + np.repeat(src, n),
            v_sw + np.repeat(dst, n),
            ecmp=True,
            adaptive=False,
        )
        bases.append(first + np.concatenate([[0], np.cumsum(n)[:-1]]).astype(np.int64))
    return bases


def build_fabric_graph(design: Design) -> FabricGraph:
    """Build the link graph of ``design`` (all nodes, spares included: they are cabled)."""
    compute, fab = design.compute, design.fabric
    conn = fab.connectivity
    num_gpus = compute.num_nodes * compute.gpus_per_node
    su = _Scaleup.of(compute.gpu, compute.gpus_per_node, compute.job_nvlink_domain_gpus)
    num_domains = -(-num_gpus // su.domain_gpus)
    nic_gbyte_per_s = fab.nic_gbit_per_s / 8
    v_dom = num_gpus
    v_nic = v_dom + num_domains
    v_sw = v_nic + compute.num_nodes * fab.nics_per_node
    t = _LinkTable()
    _add_scaleup_and_nics(t, design, su, (v_dom, v_nic, v_sw))
    bundles = tuple(np.asarray(x, np.int64) for x in conn.switch_links())
    bases = _add_members(t, bundles, nic_gbyte_per_s, v_sw)
    aggregates = _add_aggregates(t, conn, bundles, nic_gbyte_per_s, v_sw)
    mesh = su.link_class == "xgmi" and su.domain_gpus > 1
    cap_su = compute.gpu.scaleup_gbyte_per_s / 2
    mesh_base = _add_mesh(t, num_gpus, su.domain_gpus, cap_su) if mesh else -1
    return _assemble(design, su, t, bundles, bases, aggregates, mesh_base)


def _assemble(
    design: Design,
    su: _Scaleup,
    t: _LinkTable,
    bundles: tuple[np.ndarray, ...],
    bases: list[np.ndarray],
    aggregates: dict[str, np.ndarray],
    mesh_base: int,
) -> FabricGraph:
    compute, fab, conn = design.compute, design.fabric, design.fabric.connectivity
    a, b, n, _ = bundles
    cls_arr, cap, lat, src_v, dst_v, ecmp, adaptive = t.arrays()
    keys = np.minimum(a, b) * conn.num_switches + np.maximum(a, b)
    order = np.argsort(keys, kind="stable")
    num_gpus = compute.num_nodes * compute.gpus_per_node
    return FabricGraph(
        connectivity=conn,
        num_gpus=num_gpus,
        gpus_per_node=compute.gpus_per_node,
        num_nodes=compute.num_nodes,
        nics_per_node=fab.nics_per_node,
        domain_gpus=su.domain_gpus,
        num_domains=-(-num_gpus // su.domain_gpus),
        scaleup=compute.gpu.scaleup,
        scaleup_class=su.link_class,
        nvls=su.nvls,
        fabric=fab.fabric,
        nic_gbyte_per_s=fab.nic_gbit_per_s / 8,
        lossless=bool(fab.lossless),
        rate_control=fab.congestion_control == "dcqcn",
        in_network_reduction=fab.fabric == "infiniband" and fab.switch.in_network_reduction,
        node_names=tuple(compute.node_names),
        link_class=cls_arr,
        capacity_gbyte_per_s=cap,
        latency_s=lat,
        link_from=src_v,
        link_to=dst_v,
        in_ecmp=ecmp,
        in_adaptive=adaptive,
        bundle_a=a,
        bundle_b=b,
        bundle_n=n,
        bundle_keys_sorted=keys[order],
        bundle_key_order=order,
        member_up_base=bases[0],
        member_down_base=bases[1],
        mesh_base=mesh_base,
        nic_behind_c2c=compute.gpu.host_link == "nvlink-c2c",
        transport=design.spec.network.transport,
        nccl_protocols=design.spec.network.nccl_protocols,
        nccl_tuner=design.spec.network.nccl_tuner,
        efa_instance=design.spec.network.efa_instance,
        **_shape_fields(conn),
        **aggregates,
    )


class _Shape(TypedDict):
    leaves_per_pod: int
    spines_per_pod: int
    cores_per_group: int
    num_planes: int
    leaves_per_plane: int
    pods_per_plane: int
    cores_per_plane: int


def _shape_fields(conn: Connectivity) -> _Shape:
    """The pod and plane shape of the fabric, as :class:`FabricGraph` fields."""
    lpp, spp, cpg = _pods(conn)
    leaves_per_plane, pods_per_plane, cores_per_plane = _plane_shape(conn)
    return {
        "leaves_per_pod": lpp,
        "spines_per_pod": spp,
        "cores_per_group": cpg,
        "num_planes": conn.num_planes,
        "leaves_per_plane": leaves_per_plane,
        "pods_per_plane": pods_per_plane,
        "cores_per_plane": cores_per_plane,
    }


def _add_mesh(t: _LinkTable, num_gpus: int, k: int, gpu_gbyte_per_s: float) -> int:
    """One directed peer link per ordered GPU pair of every mesh domain, each with an equal
    share of the GPU's scale-up bandwidth (MI300X: 448 / 7 = 64 GB/s, AMD Instinct MI300X
    data sheet); ids in the order :meth:`FabricGraph.mesh_link` computes."""
    i, j = np.nonzero(~np.eye(k, dtype=bool))  # row-major: (i, j) at i·(k−1) + j − (j > i)
    base = (np.arange(num_gpus // k) * k)[:, None]
    src, dst = (base + i).ravel(), (base + j).ravel()
    cap = gpu_gbyte_per_s / (k - 1)
    return t.add("xgmi", cap, NVLINK_LATENCY_S, src, dst, ecmp=True, adaptive=True)


_AGGREGATE_KEYS = (
    "bundle_up_link",
    "bundle_down_link",
    "leaf_up_link",
    "leaf_down_link",
    "pod_up_link",
    "pod_down_link",
)


def _add_aggregates(
    t: _LinkTable,
    conn: Connectivity,
    bundles: tuple[np.ndarray, ...],
    nic_gbyte_per_s: float,
    v_sw: int,
) -> dict[str, np.ndarray]:
    """Adaptive-routing aggregates: per leaf and per pod for a Clos (exact under ideal
    spraying), per bundle for a dragonfly.  Aggregate vertices are named by their switch."""
    a, b, n, tier = bundles
    out = {k: np.zeros(0, np.int64) for k in _AGGREGATE_KEYS}
    lat = NETWORK_LINK_LATENCY_S
    if conn.kind == "dragonfly" and a.size:
        cls = np.where(
            tier == 3, LINK_CLASS_ID["dragonfly-global"], LINK_CLASS_ID["dragonfly-local"]
        )
        cap = n * nic_gbyte_per_s
        up = t.add(cls, cap, lat, v_sw + a, v_sw + b, ecmp=False, adaptive=True)
        down = t.add(cls, cap, lat, v_sw + b, v_sw + a, ecmp=False, adaptive=True)
        out["bundle_up_link"] = up + np.arange(a.size)
        out["bundle_down_link"] = down + np.arange(a.size)
        return out
    if not (tier == 0).any():
        return out
    leaves = np.arange(conn.num_leaves)
    up_cap = np.bincount(a[tier == 0], weights=n[tier == 0], minlength=conn.num_leaves)
    v_leaf = v_sw + leaves
    for key, cls_name in (("leaf_up_link", "leaf-spine"), ("leaf_down_link", "spine-leaf")):
        first = t.add(
            cls_name, up_cap * nic_gbyte_per_s, lat, v_leaf, v_leaf, ecmp=False, adaptive=True
        )
        out[key] = first + leaves
    if (tier == 1).any():
        out.update(_pod_aggregates(t, conn, bundles, nic_gbyte_per_s, v_sw))
    return out


def _pod_aggregates(
    t: _LinkTable,
    conn: Connectivity,
    bundles: tuple[np.ndarray, ...],
    nic_gbyte_per_s: float,
    v_sw: int,
) -> dict[str, np.ndarray]:
    a, _, n, tier = bundles
    _, spp, _ = _pods(conn)
    # global pod ids, plane by plane: spines of plane p are [L + p·Sp, ...), Sp a multiple
    # of spp, so (spine - L) // spp is the pod FabricGraph.pod_of_leaf gives its leaves
    pod_of_spine = (a[tier == 1] - conn.num_leaves) // spp
    num_pods = conn.num_planes * _plane_shape(conn)[1]
    pod_cap = np.bincount(pod_of_spine, weights=n[tier == 1], minlength=num_pods)
    pods = np.arange(num_pods)
    spine0 = v_sw + conn.num_leaves + pods * spp  # named after the pod's first spine
    out = {}
    for key, cls_name in (("pod_up_link", "spine-core"), ("pod_down_link", "core-spine")):
        first = t.add(
            cls_name,
            pod_cap * nic_gbyte_per_s,
            NETWORK_LINK_LATENCY_S,
            spine0,
            spine0,
            ecmp=False,
            adaptive=True,
        )
        out[key] = first + pods
    return out
