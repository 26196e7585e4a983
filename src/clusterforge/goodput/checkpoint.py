"""What one checkpoint costs the job: a fixed coordination floor plus the write itself.

A distributed checkpoint (PyTorch Distributed Checkpoint, which Megatron's ``torch_dist``
format and torchtitan use) is a collective: the ranks agree on a save plan, each rank
creates its own file (``FileSystemWriter(single_file_per_rank=True)``, the default) and
writes its shard, the coordinator gathers what was written and commits the metadata file,
and every rank waits for that commit.  So the stall has two parts:

* a **floor** that no bandwidth removes: the near-empty collective and the checkpoint
  folder (``CHECKPOINT_BASE_S``, measured) plus one file created per rank on the file
  system's metadata service, serialised at its create rate (``METADATA_CREATES_PER_S``,
  measured): ``floor = base + ranks / create_rate``, so it grows with the job;
* the **write** of weights + optimizer state (the storage design's checkpoint size), bound
  by the slower of the designed storage system's aggregate write bandwidth and the nodes'
  links to it (replicated shards are deduplicated and spread over the data-parallel
  replicas, so every training node writes an equal share).

Async checkpoints stall training only for the copy of each GPU's shard to host memory; the
floor and the write continue in the background and must end before the next checkpoint
starts, which bounds the interval from below.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from clusterforge.design.fabric.support import has_storage_fabric

if TYPE_CHECKING:
    from clusterforge.design import Design

__all__ = [
    "CHECKPOINT_BASE_S",
    "METADATA_CREATES_PER_S",
    "CheckpointCost",
    "checkpoint_cost",
    "checkpoint_floor_s",
]

# Measured: a PyTorch DCP save of a 256-rank job with cached save plans took 1.5 s, spent
# mostly on creating the checkpoint's directories and a near-empty collective
# (pytorch/pytorch pull request 149785, 2025-03-22).
CHECKPOINT_BASE_S = 1.5
# Measured: MDtest empty-file creates, peak of one flash metadata module of a parallel file
# system, 169.4 K creates/s (Dell EMC Ready Solution for HPC PixStor Storage, Dell
# Technologies white paper, 2020, Table 7).  One metadata service is assumed: file systems
# that spread metadata over many servers create faster, and the floor is then smaller.
METADATA_CREATES_PER_S = 169_400.0

Bottleneck = Literal["storage system", "node storage links", "none"]


@dataclass(frozen=True)
class CheckpointCost:
    """One checkpoint of the design's job, seconds, and what bounds its write."""

    checkpoint_tbyte: float  # weights + optimizer state
    floor_s: float  # coordination: collective, folder, one file per rank
    write_s: float  # the bytes at the bottleneck's bandwidth
    bottleneck: Bottleneck
    stall_s: float  # training paused per checkpoint (sync: floor + write; async: the copy)
    background_s: float  # async: floor + write after training resumed (sync: 0)
    read_s: float  # reading it back at a restart, at the same bottleneck on the read side


def checkpoint_floor_s(num_ranks: int) -> float:
    """Fixed seconds per checkpoint of ``num_ranks`` ranks: the measured base plus one file
    create per rank at the metadata service's create rate (see the module notes)."""
    return CHECKPOINT_BASE_S + num_ranks / METADATA_CREATES_PER_S


def _node_storage_gbyte_per_s(design: Design) -> float:
    """Each node's bandwidth to storage: its storage ports when the design has a storage
    fabric, else its in-band ports (GB/s)."""
    node, compute = design.compute.node, design.compute
    if has_storage_fabric(design.spec, compute, design.storage):
        return node.num_storage_ports * node.storage_port_gbit_per_s / 8.0
    return node.num_inband_ports * node.inband_port_gbit_per_s / 8.0


def _transfer_s(
    gbyte: float, storage_gbyte_per_s: float, links_gbyte_per_s: float
) -> tuple[float, Bottleneck]:
    """Seconds to move ``gbyte`` through the slower of storage and the nodes' links."""
    if gbyte <= 0:
        return 0.0, "none"
    if links_gbyte_per_s > 0 and links_gbyte_per_s < storage_gbyte_per_s:
        return gbyte / links_gbyte_per_s, "node storage links"
    return gbyte / storage_gbyte_per_s, "storage system"


def checkpoint_cost(design: Design) -> CheckpointCost:
    """The checkpoint of the design's job: its floor, its write, and the training stall."""
    rel, storage, compute = design.spec.reliability, design.storage, design.compute
    gbyte = storage.checkpoint_tbyte * 1000.0
    links = compute.num_training_nodes * _node_storage_gbyte_per_s(design)
    write_s, bottleneck = _transfer_s(gbyte, storage.write_gbyte_per_s, links)
    read_s, _ = _transfer_s(gbyte, storage.read_gbyte_per_s, links)
    floor_s = checkpoint_floor_s(compute.num_training_gpus) if gbyte > 0 else 0.0
    if rel.checkpoint == "sync":
        stall_s, background_s = floor_s + write_s, 0.0
    else:
        shard_gbyte = gbyte / compute.num_training_gpus
        stall_s, background_s = shard_gbyte / rel.async_copy_gbyte_per_s, floor_s + write_s
    return CheckpointCost(
        checkpoint_tbyte=storage.checkpoint_tbyte,
        floor_s=floor_s,
        write_s=write_s,
        bottleneck=bottleneck,
        stall_s=stall_s,
        background_s=background_s,
        read_s=read_s,
    )
