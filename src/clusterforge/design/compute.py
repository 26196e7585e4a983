"""Compute sizing: nodes, spares, node names, CPU cores per GPU, NVLink domain."""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict, Field

from clusterforge.catalog import Catalog, Cpu, Gpu, Node
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
    num_spare_nodes: int = Field(description="ceil(spare_fraction x training nodes)")
    num_nodes: int
    num_training_gpus: int
    num_gpus_total: int
    cpu_cores_per_node: int
    cpu_cores_per_gpu: float
    nvlink_domain_gpus: int = Field(description="GPUs that share one NVLink/NVSwitch domain")
    node_names: list[str] = Field(repr=False)


def node_name(index: int) -> str:
    """Host name of node ``index`` (0-based): gpu-0001, gpu-0002, ..."""
    return f"gpu-{index + 1:04d}"


def size_compute(spec: ClusterSpec, catalog: Catalog) -> ComputeDesign:
    """Nodes for ``spec.num_gpus`` training GPUs plus ``spare_fraction`` spare nodes.

    Spares: ``spare_fraction`` of the training nodes (operators keep a few per cent; Meta's
    Llama 3 report, arXiv 2407.21783 §3.3.4, shows why: 419 interruptions in 54 days on 16K
    GPUs), rounded up so that any non-zero fraction gives at least one spare node.  A
    rack-scale system is bought by the rack: the node count is rounded up to whole systems.
    """
    node = catalog.nodes[resolve_node_id(spec, catalog)]
    gpu = catalog.gpus[node.gpu]
    cpu = catalog.cpus[node.cpu]
    training = spec.num_gpus // node.num_gpus
    if training > MAX_NODES:
        raise CapacityError(
            f"num_gpus: {spec.num_gpus:,} GPUs make {training:,} nodes, more than the "
            f"{MAX_NODES:,} nodes planned here (the largest sites hold ~200,000 GPUs); "
            "plan several sites"
        )
    spares = math.ceil(training * spec.spare_fraction - 1e-9)
    if node.rack_scale_nodes:
        # Rack-scale systems (NVL72) are bought by the rack: round nodes up to whole racks.
        total = math.ceil((training + spares) / node.rack_scale_nodes) * node.rack_scale_nodes
        spares = total - training
    total_nodes = training + spares
    cores = cpu.num_cores * node.num_cpus
    return ComputeDesign(
        node=node,
        gpu=gpu,
        cpu=cpu,
        gpus_per_node=node.num_gpus,
        num_training_nodes=training,
        num_spare_nodes=spares,
        num_nodes=total_nodes,
        num_training_gpus=training * node.num_gpus,
        num_gpus_total=total_nodes * node.num_gpus,
        cpu_cores_per_node=cores,
        cpu_cores_per_gpu=cores / node.num_gpus,
        nvlink_domain_gpus=node.nvlink_domain_gpus,
        node_names=[node_name(i) for i in range(total_nodes)],
    )
