"""The explicit link graph of a design, as arrays (no Python object per link).

:func:`~clusterforge.topology.build.build_fabric_graph` turns ``design.compute`` and ``design.fabric.connectivity`` into one
array of *directed* links with a capacity in GB/s, a latency in seconds and a link class:

* scale-up: every GPU has one link up to its NVLink/NVSwitch domain and one back down
  (``nvlink``; an NVL72 domain spans 72 GPUs on 18 trays; a GPU without NVLink reaches its
  peers through the host's PCIe complex, class ``pcie``).  Capacity = the GPU's unidirectional
  scale-up bandwidth, ``scaleup_gbyte_per_s / 2`` (catalog figure is bidirectional).
* a switchless full mesh (AMD Infinity Fabric / xGMI, class ``xgmi``): the same up/down pair
  (the sum of the GPU's peer links) plus one directed link per ordered GPU pair of the domain
  with ``1 / (domain − 1)`` of that bandwidth: MI300X 7 × 64 GB/s, "only 64 GB/s per peer"
  (AMD Instinct MI300X data sheet).  Intra-domain traffic crosses up, peer link, down.
* NIC ports: ``nic-leaf`` (node to switch) and ``leaf-nic`` (switch to node), one per port.
* switch bundles of ``Connectivity.switch_links()``, expanded to one link per physical member
  in each direction (``leaf-spine``/``spine-leaf``, ``spine-core``/``core-spine``,
  ``dragonfly-local``, ``dragonfly-global``).  Hashed ECMP picks one member.
* aggregates for ideal adaptive routing: with packets sprayed evenly over equal-cost paths
  every member of a leaf's uplink set carries the same load in a symmetric Clos, so one
  aggregate link per leaf (up and down) and per pod (to/from the core) is exact and keeps
  the flow×link matrix small.  Dragonfly keeps one aggregate per bundle.
* planes (``Connectivity.num_planes`` > 1): every plane is its own Clos with the global
  switch ids of :mod:`clusterforge.design.fabric.sizing`; pods are numbered globally, plane by
  plane (plane p's pods ``[p·pods_per_plane, (p+1)·pods_per_plane)``), so the spines of pod
  q are ``num_leaves + q·spines_per_pod + [0, spines_per_pod)`` in every plane.  No link
  joins two planes: traffic between NICs of different planes crosses NVLink first
  (:mod:`clusterforge.netsim.alltoall`).

Links of the member view are used by ECMP, aggregates by adaptive routing
(``in_ecmp`` / ``in_adaptive``); scale-up and NIC links belong to both.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from clusterforge.catalog import Scaleup
from clusterforge.design.fabric.sizing import Connectivity
from clusterforge.errors import SimulationError

__all__ = [
    "LINK_CLASSES",
    "LINK_CLASS_ID",
    "NETWORK_CLASSES",
    "NETWORK_LINK_LATENCY_S",
    "NVLINK_LATENCY_S",
    "SCALEUP_CLASSES",
    "TIER_CLASS",
    "FabricGraph",
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
LINK_CLASS_ID = {name: i for i, name in enumerate(LINK_CLASSES)}

# SimAI's topology defaults (aliyun/SimAI, docs/Tutorial.md): NVLink latency 0.025 µs, NIC
# latency 0.5 µs; we charge the NIC figure per network link.
NVLINK_LATENCY_S = 0.025e-6
NETWORK_LINK_LATENCY_S = 0.5e-6

SCALEUP_CLASSES: tuple[str, ...] = ("nvlink", "pcie", "xgmi")
NETWORK_CLASSES: tuple[str, ...] = tuple(c for c in LINK_CLASSES if c not in SCALEUP_CLASSES)

# (tier, direction) of a switch bundle -> link class; direction 0 = a->b, 1 = b->a.
TIER_CLASS = {
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
    scaleup: Scaleup
    scaleup_class: str
    nvls: bool
    fabric: str
    nic_gbyte_per_s: float
    lossless: bool
    rate_control: bool  # the NICs cut their rate on ECN marks (DCQCN) before queues overflow
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
    # the GPUs reach their host CPU over NVLink-C2C and their NICs through it (Grace
    # superchips: the NICs sit on the CPU's PCIe)
    nic_behind_c2c: bool = False
    # how NCCL crosses nodes (spec ``network.transport``): "rdma", or "gpudirect-tcpx", whose
    # payload share of a NIC's line rate is ``clusterforge.netsim.model.transport_payload_share``
    transport: str = "rdma"
    # protocols NCCL may run (spec ``network.nccl_protocols``, NCCL_PROTO; None: all it
    # enables) and who picks the algorithm and protocol (spec ``network.nccl_tuner``:
    # "nccl", or an OFI tuner table of ``clusterforge.netsim.ofi_tuner``)
    nccl_protocols: tuple[str, ...] | None = None
    nccl_tuner: str = "nccl"
    # the EC2 instance whose EFA devices NCCL reaches through aws-ofi-nccl (spec
    # ``network.efa_instance``; None: NCCL's own transport): the plugin's reported network
    # latency, ``clusterforge.netsim.ofi_tuner.net_latency_s``
    efa_instance: str | None = None

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

    @property
    def num_cabled_ports(self) -> int:
        """NIC ports with a fabric link: those of the nodes the fabric joins (spares kept
        cold have NIC vertices but no link), hence the size of each NIC link block."""
        return self.connectivity.num_nodes * self.nics_per_node

    def scaleup_up(self, gpu: np.ndarray) -> np.ndarray:
        """Link id GPU -> its scale-up domain (the first block of links)."""
        return np.asarray(gpu, np.int64)

    def scaleup_down(self, gpu: np.ndarray) -> np.ndarray:
        """Link id scale-up domain -> GPU."""
        return np.asarray(gpu, np.int64) + self.num_gpus

    def nic_up(self, node: np.ndarray, nic: np.ndarray) -> np.ndarray:
        """Link id NIC port -> its leaf."""
        return np.asarray(
            2 * self.num_gpus + np.asarray(node, np.int64) * self.nics_per_node + nic, np.int64
        )

    def nic_down(self, node: np.ndarray, nic: np.ndarray) -> np.ndarray:
        """Link id leaf -> NIC port."""
        return self.nic_up(node, nic) + self.num_cabled_ports

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
        return np.asarray(plane * self.pods_per_plane + local // self.leaves_per_pod)

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
        return np.asarray(self.bundle_key_order[pos], np.int64)

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
