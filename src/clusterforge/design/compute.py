"""Compute sizing: nodes, spares, node names, CPU cores per GPU, NVLink domain."""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict, Field

from clusterforge.catalog import Catalog, Cpu, Gpu, Node
from clusterforge.catalog.power_limit import check_power_limit
from clusterforge.errors import CapacityError
from clusterforge.spec import ClusterSpec, resolve_node_id

__all__ = ["MAX_NODES", "ComputeDesign", "node_name", "size_compute"]

# Planning bound, far above the largest sites (xAI Colossus: 100-200k GPUs, 2024-25): keeps
# the cost of a plan bounded whatever the spec asks for.
MAX_NODES = 250_000


class ComputeDesign(BaseModel):
    """The GPU nodes of a design. Training nodes come first, then spares."""

    model_config = ConfigDict(frozen=True)
    node: Node
    gpu: Gpu
    cpu: Cpu
    gpus_per_node: int
    num_training_nodes: int
    num_spare_nodes: int = Field(
        description="ceil(spare_fraction x training nodes), or the in-rack spares of every "
        "rack-scale NVLink domain"
    )
    num_spares_per_nvlink_domain: int = Field(
        0, description="Trays of each rack-scale NVLink domain held as in-rack hot spares"
    )
    num_nodes: int
    num_training_gpus: int
    num_gpus_total: int
    gpu_power_limit_w: float | None = Field(
        None, description="Board power limit of every GPU, W (None = its TDP)"
    )
    cpu_cores_per_node: int
    cpu_cores_per_gpu: float
    nvlink_domain_gpus: int = Field(description="GPUs that share one NVLink/NVSwitch domain")
    job_nvlink_domain_gpus: int = Field(
        description="GPUs of one NVLink domain that a job uses (the domain less its in-rack spares)"
    )
    node_names: list[str] = Field(repr=False)

    def rack_scale_blocks(self) -> list[list[int]]:
        """Node indices of each rack-scale system, for a rack-scale node (else empty).

        Training nodes come first and spares after them (:func:`node_name` order), so with
        in-rack spares rack r holds training nodes r·(N-s) .. r·(N-s)+N-s-1 and the next s
        spares (N trays a rack, s spares a domain); a last rack the training nodes only
        partly fill takes more spares, which keeps every rack whole."""
        system = self.node.rack_scale_nodes
        if not system:
            return []
        if not self.num_spares_per_nvlink_domain:
            n = self.num_nodes
            return [list(range(s, min(s + system, n))) for s in range(0, n, system)]
        per_rack = system - self.num_spares_per_nvlink_domain
        training, spare = self.num_training_nodes, self.num_training_nodes
        racks = []
        for first in range(0, training, per_rack):
            trained = list(range(first, min(first + per_rack, training)))
            take = system - len(trained)
            racks.append(trained + list(range(spare, spare + take)))
            spare += take
        return racks


def node_name(index: int) -> str:
    """Host name of node ``index`` (0-based): gpu-0001, gpu-0002, ..."""
    return f"gpu-{index + 1:04d}"


def _spares_per_domain(spec: ClusterSpec, node: Node) -> int:
    """The spec's in-rack spares per NVLink domain, checked against the node model."""
    per_domain = spec.spare_nodes_per_nvlink_domain
    if not per_domain:
        return 0
    if not node.rack_scale_nodes:
        raise CapacityError(
            f"spare_nodes_per_nvlink_domain: {per_domain} needs a rack-scale system (GB200 "
            f"NVL72 trays); {node.id} is a whole NVLink domain by itself: use spare_fraction"
        )
    if per_domain >= node.rack_scale_nodes:
        raise CapacityError(
            f"spare_nodes_per_nvlink_domain: {per_domain} leaves no tray of the "
            f"{node.rack_scale_nodes} in a {node.id} rack for the job; keep it under "
            f"{node.rack_scale_nodes} (2 is the usual choice: jobs on 16 of 18)"
        )
    return per_domain


def size_compute(spec: ClusterSpec, catalog: Catalog) -> ComputeDesign:
    """Nodes for ``spec.num_gpus`` training GPUs plus ``spare_fraction`` spare nodes.

    Spares: ``spare_fraction`` of the training nodes (operators keep a few per cent; Meta's
    Llama 3 report, arXiv 2407.21783 §3.3.4, shows why: 419 interruptions in 54 days on 16K
    GPUs), rounded up so that any non-zero fraction gives at least one spare node.  A
    rack-scale system is bought by the rack: the node count is rounded up to whole systems.

    ``spare_nodes_per_nvlink_domain`` keeps s trays of every rack-scale NVLink domain as
    in-rack hot spares instead: the training nodes fill N - s trays of each rack (16 of a
    GB200 NVL72's 18), the other trays of the rack are spares, and a failed tray is replaced
    inside its own NVLink domain (CoreWeave's GB200 NVL72 instances: nodes are exchanged
    within the rack and workloads should tolerate two unavailable nodes per rack).
    """
    node = catalog.nodes[resolve_node_id(spec, catalog)]
    gpu = catalog.gpus[node.gpu]
    if spec.gpu_power_limit_w is not None:
        check_power_limit(gpu, spec.gpu_power_limit_w)
    cpu = catalog.cpus[node.cpu]
    training = spec.num_gpus // node.num_gpus
    if training > MAX_NODES:
        raise CapacityError(
            f"num_gpus: {spec.num_gpus:,} GPUs make {training:,} nodes, more than the "
            f"{MAX_NODES:,} nodes planned here (the largest sites hold ~200,000 GPUs); "
            "plan several sites"
        )
    per_domain = _spares_per_domain(spec, node)
    if per_domain:
        # In-rack spares: each rack holds rack_scale_nodes - per_domain training trays.
        racks = math.ceil(training / (node.rack_scale_nodes - per_domain))
        spares = racks * node.rack_scale_nodes - training
    else:
        spares = math.ceil(training * spec.spare_fraction - 1e-9)
    if node.rack_scale_nodes:
        # Rack-scale systems (NVL72) are bought by the rack: round nodes up to whole racks.
        total = math.ceil((training + spares) / node.rack_scale_nodes) * node.rack_scale_nodes
        spares = total - training
    total_nodes = training + spares
    domain_gpus = node.nvlink_domain_gpus
    cores = cpu.num_cores * node.num_cpus
    return ComputeDesign(
        node=node,
        gpu=gpu,
        cpu=cpu,
        gpus_per_node=node.num_gpus,
        num_training_nodes=training,
        num_spare_nodes=spares,
        num_spares_per_nvlink_domain=per_domain,
        num_nodes=total_nodes,
        num_training_gpus=training * node.num_gpus,
        num_gpus_total=total_nodes * node.num_gpus,
        gpu_power_limit_w=spec.gpu_power_limit_w,
        cpu_cores_per_node=cores,
        cpu_cores_per_gpu=cores / node.num_gpus,
        nvlink_domain_gpus=domain_gpus,
        job_nvlink_domain_gpus=domain_gpus - per_domain * node.num_gpus,
        node_names=[node_name(i) for i in range(total_nodes)],
    )
