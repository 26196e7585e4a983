"""Rules about shared storage: read bandwidth for the data loaders, checkpoint write time."""

from __future__ import annotations

from typing import TYPE_CHECKING

from clusterforge.design.rules.finding import Finding

if TYPE_CHECKING:
    from clusterforge.design.result import Design

__all__ = ["storage_bandwidth"]


def storage_bandwidth(d: Design) -> list[Finding]:
    s = d.storage
    heuristic = d.compute.num_training_gpus * d.spec.storage.read_mbyte_per_s_per_gpu / 1000
    out = []
    if s.read_gbyte_per_s < heuristic:
        out.append(
            Finding(
                id="storage-read-too-low",
                severity="warning",
                message=f"storage reads {s.read_gbyte_per_s:g} GB/s, below {heuristic:.1f} GB/s "
                f"({d.spec.storage.read_mbyte_per_s_per_gpu:g} MB/s per GPU)",
                numbers={"read_gbyte_per_s": s.read_gbyte_per_s, "needed_gbyte_per_s": heuristic},
                fix="add storage blocks or remove storage.read_gbyte_per_s to size it automatically",
            )
        )
    if s.checkpoint_write_s > d.spec.storage.checkpoint_write_s * 1.0001:
        out.append(
            Finding(
                id="checkpoint-write-slow",
                severity="warning",
                message=f"one checkpoint ({s.checkpoint_tbyte:.2f} TB) takes {s.checkpoint_write_s:.0f} s "
                f"to write, over the {d.spec.storage.checkpoint_write_s:g} s target",
                numbers={"checkpoint_write_s": s.checkpoint_write_s},
                fix="more write bandwidth, or asynchronous / sharded checkpointing",
            )
        )
    return out
