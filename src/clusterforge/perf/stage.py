"""One pipeline stage's seconds per micro-batch: its layers' forward, backward and
recomputation, the exposed TP/CP/EP communication of those layers, the embedding on the first
stage and the output layer with its loss on the last (:func:`stage_time`), and the per-layer
average of recomputed and kept layers (:func:`blend`). :mod:`clusterforge.perf.step` runs the
pipeline at the pace of the slowest stage.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import TypeVar

from clusterforge.catalog import ModelArch
from clusterforge.perf.async_tp import FusedMatmuls
from clusterforge.perf.compute import LayerTimes
from clusterforge.perf.exposure import LayerComm
from clusterforge.perf.host import host_idle_s
from clusterforge.perf.parallel import ParallelPlan

__all__ = ["Stage", "blend", "embedding_s", "stage_time"]


@dataclass(frozen=True)
class Stage:
    compute_s: float
    tp_s: float
    cp_s: float
    ep_s: float
    forward_s: float
    backward_s: float

    @property
    def total_s(self) -> float:
        return self.compute_s + self.tp_s + self.cp_s + self.ep_s


def embedding_s(arch: ModelArch, plan: ParallelPlan, perf_hbm: float) -> float:
    """Embedding lookup (write) and its gradient scatter (read + write), memory-bound."""
    tokens = plan.micro_batch * plan.seq_length / plan.layout.cp
    return 3 * 2.0 * tokens * arch.hidden_size / perf_hbm


def stage_time(
    index: int,
    layers: int,
    plan: ParallelPlan,
    times: LayerTimes,
    comm: LayerComm,
    ends: tuple[float, float, float, float],
    accumulate_s: float,
    host_s: float = 0.0,
    sync_idle_s: float = 0.0,
    idle_floor_s: float = 0.0,
) -> Stage:
    """Per-micro-batch seconds of pipeline stage ``index`` holding ``layers`` layers.

    ``host_s``: host issue seconds of one layer's forward when the CPU cannot run ahead
    (:mod:`clusterforge.perf.host`); the forward, and a full recomputation of it, take at
    least that long. ``sync_idle_s``: GPU idle seconds of one layer's forward behind a
    blocking host call inside it, paid again by a full recomputation, and the EP overlap's
    measured cost per layer pass under the interleaved schedule
    (:func:`~clusterforge.perf.host.interleaved_overlap_idle_s`). ``idle_floor_s``: a
    measured GPU idle per layer pass that the host floor's idle cannot fall below
    (:func:`~clusterforge.perf.host.flex_dropless_idle_s`).
    """
    embed_f, embed_b, logits_f, logits_b = ends
    comm_s = comm.tp_s + comm.cp_s + comm.ep_s
    idle = max(host_idle_s(host_s, times.forward_s, comm_s), idle_floor_s) + sync_idle_s
    forward = layers * (times.forward_s + idle)
    recompute = times.recompute_s
    if plan.recompute == "full":
        recompute += max(host_idle_s(host_s, recompute, comm_s), idle_floor_s) + sync_idle_s
    backward = layers * (times.backward_s + recompute) + accumulate_s
    if index == 0:
        forward += embed_f
        backward += embed_b
    if index == plan.layout.pp - 1:
        forward += logits_f
        backward += logits_b
    return Stage(
        compute_s=forward + backward,
        tp_s=layers * comm.tp_s,
        cp_s=layers * comm.cp_s,
        ep_s=layers * comm.ep_s,
        forward_s=forward,
        backward_s=backward,
    )


_T = TypeVar("_T", LayerTimes, LayerComm, FusedMatmuls)


def blend(recomputed: _T, kept: _T, share: float) -> _T:
    """Per-layer average when ``share`` of the layers is recomputed (every field linear,
    nested records field by field)."""
    values = {}
    for f in fields(recomputed):
        mine, other = getattr(recomputed, f.name), getattr(kept, f.name)
        values[f.name] = (
            blend(mine, other, share)
            if isinstance(mine, FusedMatmuls)
            else share * mine + (1 - share) * other
        )
    return type(recomputed)(**values)
