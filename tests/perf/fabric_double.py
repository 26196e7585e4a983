"""A test double for the CommModel protocol: an ideal, contention-free two-tier fabric.

Not the production model (that is ``clusterforge.perf.comm.NetsimComm`` on the designed
fabric); it lets the performance model be tested without ``clusterforge.netsim``.
Bus bandwidths: ring all-reduce at ~80 % of the NVLink link rate (NVIDIA GTC 2024 talk
S62129 slides and nccl-tests measurements: 234.9 of 300 GB/s on A100, ~370 of 450 GB/s on
H100) and ~90 % of the NIC rate. A group with ``g`` members per node runs ``g`` NCCL channels through ``g`` rail NICs, so its
inter-node bus bandwidth is ``g`` NICs' worth (capped by NVLink): the reason 8-GPU nodes
with 8 x 200G HCAs reach ~185 GB/s all-reduce bus bandwidth across nodes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from clusterforge.busbw import bus_factor


@dataclass
class IdealFabricComm:
    gpus_per_node: int
    nvlink_gbyte_per_s: float  # unidirectional per GPU
    nic_gbyte_per_s: float  # per GPU
    intra_latency_s: float = 5e-6
    inter_latency_s: float = 15e-6
    calls: int = 0

    def collective_time_s(self, collective: str, size_bytes: float, groups: np.ndarray) -> float:
        self.calls += 1
        n = groups.shape[1]
        if n < 2 or size_bytes <= 0:
            return 0.0
        nodes = groups // self.gpus_per_node
        intra = bool(np.all(nodes.min(axis=1) == nodes.max(axis=1)))
        nvlink_bus = 0.8 * self.nvlink_gbyte_per_s
        if intra:
            bus, alpha = nvlink_bus, self.intra_latency_s
        elif collective == "all_to_all":
            bus, alpha = 0.9 * self.nic_gbyte_per_s, self.inter_latency_s
        else:
            per_node = max(int(np.bincount(row).max()) for row in nodes - nodes.min())
            bus = min(nvlink_bus, 0.9 * self.nic_gbyte_per_s * per_node)
            alpha = self.inter_latency_s
        steps = 2 * (n - 1) if collective == "all_reduce" else max(1, n - 1)
        return bus_factor(collective, n) * size_bytes / (bus * 1e9) + alpha * steps

    @classmethod
    def for_node(cls, node_id: str) -> IdealFabricComm:
        from clusterforge.catalog import load_catalog

        catalog = load_catalog()
        node = catalog.nodes[node_id]
        gpu = catalog.gpus[node.gpu]
        nic = catalog.nics[node.compute_nic]
        nic_total = node.num_compute_nics * nic.port_gbit_per_s * nic.num_ports / 8
        return cls(
            gpus_per_node=node.num_gpus,
            nvlink_gbyte_per_s=gpu.scaleup_gbyte_per_s / 2,
            nic_gbyte_per_s=nic_total / node.num_gpus,
        )


@dataclass
class NcclRingComm:
    """A second double: every collective as one NCCL ring with NCCL's own latency model
    (NVIDIA/nccl ``src/graph/tuning.cc``, Simple protocol): ``baseLat + (steps - interSteps)
    x intraLat + interSteps x interLat`` with 8.4 µs, 3.4 µs per NVLink step and 14 µs per
    network step, ``steps = n - 1`` (all-gather, reduce-scatter) or ``2 (n - 1)``
    (all-reduce) and ``interSteps = nodes - 1`` (``2 nodes`` for all-reduce); plus the bytes
    at one bus bandwidth. Ranks are numbered node by node."""

    gpus_per_node: int = 8
    bus_gbyte_per_s: float = 360.0
    base_latency_s: float = 8.4e-6
    intra_step_s: float = 3.4e-6
    inter_step_s: float = 14.0e-6

    def latency_s(self, collective: str, num_ranks: int, num_nodes: int) -> float:
        all_reduce = collective == "all_reduce"
        steps = 2 * (num_ranks - 1) if all_reduce else num_ranks - 1
        inter = (2 * num_nodes if all_reduce else num_nodes - 1) if num_nodes > 1 else 0
        return self.base_latency_s + (steps - inter) * self.intra_step_s + inter * self.inter_step_s

    def collective_time_s(self, collective: str, size_bytes: float, groups: np.ndarray) -> float:
        n = groups.shape[1]
        if n < 2 or size_bytes <= 0:
            return 0.0
        nodes = len(np.unique(groups[0] // self.gpus_per_node))
        bandwidth_s = bus_factor(collective, n) * size_bytes / (self.bus_gbyte_per_s * 1e9)
        return self.latency_s(collective, n, nodes) + bandwidth_s
