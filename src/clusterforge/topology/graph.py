"""The explicit link graph of a design, as arrays (no Python object per link).

:func:`build_fabric_graph` turns ``design.compute`` and ``design.fabric.connectivity`` into one
array of *directed* links with a capacity in GB/s, a latency in seconds and a link class:

* scale-up: every GPU has one link up to its NVLink/NVSwitch domain and one back down
  (``nvlink``; an NVL72 domain spans 72 GPUs on 18 trays; a GPU without NVLink reaches its
  peers through the host's PCIe complex, class ``pcie``).  Capacity = the GPU's unidirectional
  scale-up bandwidth, ``scaleup_gbyte_per_s / 2`` (catalog figure is bidirectional).
* a switchless full mesh (AMD Infinity Fabric / xGMI, class ``xgmi``): the same up/down pair
  (the sum of the GPU's peer links) plus one directed link per ordered GPU pair of the domain
  with ``1 / (domain − 1)`` of that bandwidth: MI300X 7 × 64 GB/s, "only 64 GB/s per peer"
  (performance.md §4).  Intra-domain traffic crosses up, peer link, down.
* NIC ports: ``nic-leaf`` (node to switch) and ``leaf-nic`` (switch to node), one per port.
* switch bundles of ``Connectivity.switch_links()``, expanded to one link per physical member
  in each direction (``leaf-spine``/``spine-leaf``, ``spine-core``/``core-spine``,
  ``dragonfly-local``, ``dragonfly-global``).  Hashed ECMP picks one member.
* aggregates for ideal adaptive routing: with packets sprayed evenly over equal-cost paths
  every member of a leaf's uplink set carries the same load in a symmetric Clos, so one
  aggregate link per leaf (up and down) and per pod (to/from the core) is exact and keeps
  the flow×link matrix small.  Dragonfly keeps one aggregate per bundle.
* planes (``Connectivity.num_planes`` > 1): every plane is its own Clos with the global
  switch ids of :mod:`clusterforge.design.fabric`; pods are numbered globally, plane by
  plane (plane p's pods ``[p·pods_per_plane, (p+1)·pods_per_plane)``), so the spines of pod
  q are ``num_leaves + q·spines_per_pod + [0, spines_per_pod)`` in every plane.  No link
  joins two planes: traffic between NICs of different planes crosses NVLink first
  (:mod:`clusterforge.netsim.alltoall`).

Links of the member view are used by ECMP, aggregates by adaptive routing
(``in_ecmp`` / ``in_adaptive``); scale-up and NIC links belong to both.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from clusterforge.design.fabric import Connectivity
from clusterforge.errors import SimulationError

if TYPE_CHECKING:
    from clusterforge.design import Design

__all__ = [
    "LINK_CLASSES",
    "MESH_SCALEUPS",
    "NETWORK_CLASSES",
    "NETWORK_LINK_LATENCY_S",
    "NVLINK_LATENCY_S",
    "NVLS_SCALEUPS",
    "SCALEUP_CLASSES",
    "FabricGraph",
    "build_fabric_graph",
]

LINK_CLASSES: tuple[str, ...] = (
    "nvlink",
    "pcie",
    "xgmi",
    "nic-leaf",
    "leaf-nic",
    "leaf-spine",
    "spine-leaf",
    "spine-core",
    "core-spine",
    "dragonfly-local",
    "dragonfly-global",
)
_CLS = {name: i for i, name in enumerate(LINK_CLASSES)}

# SimAI's topology defaults (performance.md §1.2, aliyun/SimAI docs/Tutorial.md): NVLink
# latency 0.025 µs, NIC latency 0.5 µs; we charge the NIC figure per network link.
NVLINK_LATENCY_S = 0.025e-6
NETWORK_LINK_LATENCY_S = 0.5e-6

# Scale-up generations with NVLink SHARP (NVLS) in the NVSwitch: H100/H200 (NVLink4) and
# B200/GB200 (NVLink5) all have measured NVLS all-reduce rows in performance.md §3.2;
# A100's NVLink3 switch has no in-switch reduction.
NVLS_SCALEUPS = frozenset({"nvlink4", "nvlink5"})

# Scale-up technologies wired as a switchless full mesh (catalog ``gpu.scaleup``): AMD
# Infinity Fabric on MI300X/MI325X, 7 links of 64 GB/s to the 7 peers (performance.md §4).
MESH_SCALEUPS = frozenset({"infinity-fabric"})
SCALEUP_CLASSES: tuple[str, ...] = ("nvlink", "pcie", "xgmi")
NETWORK_CLASSES: tuple[str, ...] = tuple(c for c in LINK_CLASSES if c not in SCALEUP_CLASSES)

# (tier, direction) of a switch bundle -> link class; direction 0 = a->b, 1 = b->a.
_TIER_CLASS = {
    (0, 0): "leaf-spine",
    (0, 1): "spine-leaf",
    (1, 0): "spine-core",
    (1, 1): "core-spine",
    (2, 0): "dragonfly-local",
    (2, 1): "dragonfly-local",
    (3, 0): "dragonfly-global",
    (3, 1): "dragonfly-global",
}


@dataclass(frozen=True, eq=False)
class FabricGraph:
    """Directed links of one design plus the index tables routing needs.

    Vertex ids: GPUs ``[0, G)``, scale-up domains ``[G, G+D)``, NIC ports ``[G+D, G+D+P)``
    (port = node·nics + nic), switches ``[G+D+P, ...)`` in ``Connectivity`` numbering.
    Compared by identity, so it can key a cache.
    """

    connectivity: Connectivity
    num_gpus: int
    gpus_per_node: int
    num_nodes: int
    nics_per_node: int
    domain_gpus: int
    num_domains: int
    scaleup: str
    scaleup_class: str
    nvls: bool
    fabric: str
    nic_gbyte_per_s: float
    lossless: bool
    in_network_reduction: bool  # the fabric's switches reduce in the network (SHARP)
    node_names: tuple[str, ...] = field(repr=False)
    # one entry per directed link
    link_class: np.ndarray = field(repr=False)
    capacity_gbyte_per_s: np.ndarray = field(repr=False)
    latency_s: np.ndarray = field(repr=False)
    link_from: np.ndarray = field(repr=False)
    link_to: np.ndarray = field(repr=False)
    in_ecmp: np.ndarray = field(repr=False)
    in_adaptive: np.ndarray = field(repr=False)
    # switch bundles: lookup by key a*S+b (sorted), members and aggregates
    bundle_a: np.ndarray = field(repr=False)
    bundle_b: np.ndarray = field(repr=False)
    bundle_n: np.ndarray = field(repr=False)
    bundle_keys_sorted: np.ndarray = field(repr=False)
    bundle_key_order: np.ndarray = field(repr=False)
    member_up_base: np.ndarray = field(repr=False)
    member_down_base: np.ndarray = field(repr=False)
    bundle_up_link: np.ndarray = field(repr=False)
    bundle_down_link: np.ndarray = field(repr=False)
    leaf_up_link: np.ndarray = field(repr=False)
    leaf_down_link: np.ndarray = field(repr=False)
    pod_up_link: np.ndarray = field(repr=False)
    pod_down_link: np.ndarray = field(repr=False)
    leaves_per_pod: int = 1
    spines_per_pod: int = 0
    cores_per_group: int = 0
    num_planes: int = 1
    leaves_per_plane: int = 1
    pods_per_plane: int = 1
    cores_per_plane: int = 0
    mesh_base: int = -1  # first peer link of a full-mesh scale-up domain (-1: a switch)

    @property
    def mesh(self) -> bool:
        """Scale-up is a switchless full mesh (xGMI): GPU pairs have their own links."""
        return self.mesh_base >= 0

    def mesh_link(self, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
        """Link id of the direct peer link src -> dst (same mesh domain, src != dst)."""
        k = self.domain_gpus
        s, d = np.asarray(src, np.int64), np.asarray(dst, np.int64)
        ls, ld = s % k, d % k
        return self.mesh_base + (s // k) * k * (k - 1) + ls * (k - 1) + ld - (ld > ls)

    @property
    def num_links(self) -> int:
        return int(self.capacity_gbyte_per_s.size)

    @property
    def num_ports(self) -> int:
        return self.num_nodes * self.nics_per_node

    def scaleup_up(self, gpu: np.ndarray) -> np.ndarray:
        """Link id GPU -> its scale-up domain (the first block of links)."""
        return np.asarray(gpu, np.int64)

    def scaleup_down(self, gpu: np.ndarray) -> np.ndarray:
        """Link id scale-up domain -> GPU."""
        return np.asarray(gpu, np.int64) + self.num_gpus

    def nic_up(self, node: np.ndarray, nic: np.ndarray) -> np.ndarray:
        """Link id NIC port -> its leaf."""
        return 2 * self.num_gpus + np.asarray(node, np.int64) * self.nics_per_node + nic

    def nic_down(self, node: np.ndarray, nic: np.ndarray) -> np.ndarray:
        """Link id leaf -> NIC port."""
        return self.nic_up(node, nic) + self.num_ports

    @property
    def rail_optimized(self) -> bool:
        return self.connectivity.rail_optimized

    @property
    def link_aggregation(self) -> bool:
        return self.connectivity.link_aggregation

    @property
    def kind(self) -> str:
        return self.connectivity.kind

    def plane_of_nic(self, nic: np.ndarray) -> np.ndarray:
        """Plane of each NIC index (NIC i joins plane i mod num_planes)."""
        return np.asarray(nic) % self.num_planes

    def plane_of_leaf(self, leaf: np.ndarray) -> np.ndarray:
        """Plane of each leaf id (plane p's leaves are ``[p·Lp, (p+1)·Lp)``)."""
        return np.asarray(leaf) // self.leaves_per_plane

    def pod_of_leaf(self, leaf: np.ndarray) -> np.ndarray:
        """Global pod id of each leaf: ``plane·pods_per_plane + local pod`` (a rail of a
        rail-only fabric is a pod)."""
        plane, local = np.divmod(np.asarray(leaf), self.leaves_per_plane)
        return plane * self.pods_per_plane + local // self.leaves_per_pod

    def domain_of(self, gpu: np.ndarray) -> np.ndarray:
        """Scale-up domain of each GPU (the node for PCIe-only GPUs)."""
        return np.asarray(gpu) // self.domain_gpus

    def nic_of_local(self, local: np.ndarray) -> np.ndarray:
        """NIC a local GPU index is attached to (GPUs share NICs when there are fewer)."""
        return np.asarray(local) * self.nics_per_node // self.gpus_per_node

    def bundle_index(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Index of the bundle between switches a and b (either order), vectorized."""
        lo, hi = np.minimum(a, b), np.maximum(a, b)
        keys = lo * self.connectivity.num_switches + hi
        pos = np.searchsorted(self.bundle_keys_sorted, keys)
        pos = np.minimum(pos, max(self.bundle_keys_sorted.size - 1, 0))
        if self.bundle_keys_sorted.size == 0 or np.any(self.bundle_keys_sorted[pos] != keys):
            raise SimulationError("routing asked for a switch pair with no link between them")
        return self.bundle_key_order[pos]

    def vertex_name(self, vertex: int) -> str:
        """Readable name of a vertex: gpu-0001/g3, nvswitch-0001, gpu-0001/nic2, leaf-0001."""
        g, d = self.num_gpus, self.num_domains
        ports = self.num_nodes * self.nics_per_node
        if vertex < g:
            node, local = divmod(vertex, self.gpus_per_node)
            return f"{self.node_names[node]}/g{local}"
        if vertex < g + d:
            prefix = {"nvlink": "nvswitch", "xgmi": "xgmi"}.get(self.scaleup_class, "pcie-host")
            return f"{prefix}-{vertex - g + 1:04d}"
        if vertex < g + d + ports:
            node, nic = divmod(vertex - g - d, self.nics_per_node)
            return f"{self.node_names[node]}/nic{nic}"
        if vertex < 0 or vertex >= g + d + ports + self.connectivity.num_switches:
            return f"aggregate-{vertex}"
        if self.kind == "single-switch":
            return "switch-0001"
        return self.connectivity.switch_name(vertex - g - d - ports)


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
        ecmp: bool,
        adaptive: bool,
    ) -> int:
        n = int(np.asarray(src).size)
        cls_arr = np.full(n, _CLS[cls], np.int8) if isinstance(cls, str) else cls.astype(np.int8)
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


def build_fabric_graph(design: Design) -> FabricGraph:
    """Build the link graph of ``design`` (all nodes, spares included: they are cabled)."""
    compute, fab = design.compute, design.fabric
    conn = fab.connectivity
    gpn, num_nodes = compute.gpus_per_node, compute.num_nodes
    num_gpus = num_nodes * gpn
    gpu = compute.gpu
    pcie = compute.nvlink_domain_gpus <= 1 or gpu.scaleup.startswith("pcie")
    domain_gpus = gpn if pcie else compute.nvlink_domain_gpus
    num_domains = -(-num_gpus // domain_gpus)
    nic_gbyte_per_s = fab.nic_gbit_per_s / 8
    ports = num_nodes * fab.nics_per_node
    v_dom, v_nic, v_sw = num_gpus, num_gpus + num_domains, num_gpus + num_domains + ports

    t = _LinkTable()
    gpus = np.arange(num_gpus)
    mesh = not pcie and gpu.scaleup in MESH_SCALEUPS
    su_cls = "pcie" if pcie else ("xgmi" if mesh else "nvlink")
    su_cap = gpu.scaleup_gbyte_per_s / 2
    t.add(su_cls, su_cap, NVLINK_LATENCY_S, gpus, v_dom + gpus // domain_gpus, True, True)
    t.add(su_cls, su_cap, NVLINK_LATENCY_S, v_dom + gpus // domain_gpus, gpus, True, True)
    node, nic, leaf = conn.node_links()
    port = v_nic + node * fab.nics_per_node + nic
    t.add("nic-leaf", nic_gbyte_per_s, NETWORK_LINK_LATENCY_S, port, v_sw + leaf, True, True)
    t.add("leaf-nic", nic_gbyte_per_s, NETWORK_LINK_LATENCY_S, v_sw + leaf, port, True, True)

    a, b, n, tier = (np.asarray(x, np.int64) for x in conn.switch_links())
    bases = []
    for direction in (0, 1):
        cls = np.array([_CLS[_TIER_CLASS[(int(ti), direction)]] for ti in range(4)])[tier]
        src, dst = (a, b) if direction == 0 else (b, a)
        first = t.add(
            np.repeat(cls, n),
            nic_gbyte_per_s,
            NETWORK_LINK_LATENCY_S,
            v_sw + np.repeat(src, n),
            v_sw + np.repeat(dst, n),
            True,
            False,
        )
        bases.append(first + np.concatenate([[0], np.cumsum(n)[:-1]]).astype(np.int64))
    aggregates = _add_aggregates(t, conn, a, b, n, tier, nic_gbyte_per_s, v_sw)
    mesh_base = _add_mesh(t, num_gpus, domain_gpus, su_cap) if mesh and domain_gpus > 1 else -1
    cls_arr, cap, lat, src_v, dst_v, ecmp, adaptive = t.arrays()
    keys = np.minimum(a, b) * conn.num_switches + np.maximum(a, b)
    order = np.argsort(keys, kind="stable")
    lpp, spp, cpg = _pods(conn)
    leaves_per_plane, pods_per_plane, cores_per_plane = _plane_shape(conn)
    return FabricGraph(
        connectivity=conn,
        num_gpus=num_gpus,
        gpus_per_node=gpn,
        num_nodes=num_nodes,
        nics_per_node=fab.nics_per_node,
        domain_gpus=domain_gpus,
        num_domains=num_domains,
        scaleup=gpu.scaleup,
        scaleup_class=su_cls,
        nvls=(not pcie) and gpu.scaleup in NVLS_SCALEUPS,
        fabric=fab.fabric,
        nic_gbyte_per_s=nic_gbyte_per_s,
        lossless=bool(fab.lossless),
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
        leaves_per_pod=lpp,
        spines_per_pod=spp,
        cores_per_group=cpg,
        mesh_base=mesh_base,
        num_planes=conn.num_planes,
        leaves_per_plane=leaves_per_plane,
        pods_per_plane=pods_per_plane,
        cores_per_plane=cores_per_plane,
        **aggregates,
    )


def _add_mesh(t: _LinkTable, num_gpus: int, k: int, gpu_gbyte_per_s: float) -> int:
    """One directed peer link per ordered GPU pair of every mesh domain, each with an equal
    share of the GPU's scale-up bandwidth (MI300X: 448 / 7 = 64 GB/s); ids in the order
    :meth:`FabricGraph.mesh_link` computes."""
    i, j = np.nonzero(~np.eye(k, dtype=bool))  # row-major: (i, j) at i·(k−1) + j − (j > i)
    base = (np.arange(num_gpus // k) * k)[:, None]
    src, dst = (base + i).ravel(), (base + j).ravel()
    return t.add("xgmi", gpu_gbyte_per_s / (k - 1), NVLINK_LATENCY_S, src, dst, True, True)


def _add_aggregates(
    t: _LinkTable,
    conn: Connectivity,
    a: np.ndarray,
    b: np.ndarray,
    n: np.ndarray,
    tier: np.ndarray,
    nic_gbyte_per_s: float,
    v_sw: int,
) -> dict[str, np.ndarray]:
    """Adaptive-routing aggregates: per leaf and per pod for a Clos (exact under ideal
    spraying), per bundle for a dragonfly.  Aggregate vertices are named by their switch."""
    empty = np.zeros(0, np.int64)
    out = {
        k: empty
        for k in (
            "bundle_up_link",
            "bundle_down_link",
            "leaf_up_link",
            "leaf_down_link",
            "pod_up_link",
            "pod_down_link",
        )
    }
    lat = NETWORK_LINK_LATENCY_S
    if conn.kind == "dragonfly" and a.size:
        cls = np.where(tier == 3, _CLS["dragonfly-global"], _CLS["dragonfly-local"])
        cap = n * nic_gbyte_per_s
        up = t.add(cls, cap, lat, v_sw + a, v_sw + b, False, True)
        down = t.add(cls, cap, lat, v_sw + b, v_sw + a, False, True)
        out["bundle_up_link"] = up + np.arange(a.size)
        out["bundle_down_link"] = down + np.arange(a.size)
        return out
    if not (tier == 0).any():
        return out
    leaves = np.arange(conn.num_leaves)
    up_cap = np.bincount(a[tier == 0], weights=n[tier == 0], minlength=conn.num_leaves)
    first = t.add(
        "leaf-spine", up_cap * nic_gbyte_per_s, lat, v_sw + leaves, v_sw + leaves, False, True
    )
    out["leaf_up_link"] = first + leaves
    first = t.add(
        "spine-leaf", up_cap * nic_gbyte_per_s, lat, v_sw + leaves, v_sw + leaves, False, True
    )
    out["leaf_down_link"] = first + leaves
    if (tier == 1).any():
        _, spp, _ = _pods(conn)
        # global pod ids, plane by plane: spines of plane p are [L + p·Sp, ...), Sp a multiple
        # of spp, so (spine - L) // spp is the pod FabricGraph.pod_of_leaf gives its leaves
        pod_of_spine = (a[tier == 1] - conn.num_leaves) // spp
        num_pods = conn.num_planes * _plane_shape(conn)[1]
        pod_cap = np.bincount(pod_of_spine, weights=n[tier == 1], minlength=num_pods)
        pods = np.arange(num_pods)
        spine0 = v_sw + conn.num_leaves + pods * spp  # named after the pod's first spine
        first = t.add("spine-core", pod_cap * nic_gbyte_per_s, lat, spine0, spine0, False, True)
        out["pod_up_link"] = first + pods
        first = t.add("core-spine", pod_cap * nic_gbyte_per_s, lat, spine0, spine0, False, True)
        out["pod_down_link"] = first + pods
    return out
