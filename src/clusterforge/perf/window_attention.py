"""cuDNN's fused attention over a narrow sliding window, at its measured rate.

gpt-oss attends over the last 128 keys on every other layer (``ModelArch.sliding_window``).
A flash kernel then visits two 128-key tiles per 128-query tile, so its per-tile work (Q
loads, the output and log-sum-exp stores, both tiles' masks) is no longer amortised as it is
over a causal row of thousands of keys: cuDNN's published gpt-oss benchmark runs such layers
at 11-13 % of the same GPU's causal rate, a fixed time per query and head
(``[[cudnn_window_attention]]`` in ``data/efficiency.toml``). Where a measured row serves the
layer, :mod:`clusterforge.perf.attention` times the windowed layers with it and keeps the
causal rate for the others.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache
from importlib import resources

from clusterforge.catalog import ModelArch
from clusterforge.perf.flops import head_dim
from clusterforge.perf.parallel import ParallelPlan
from clusterforge.perf.roofline import GpuPerf
from clusterforge.perf.stack import Stack

__all__ = ["WindowRate", "window_rate", "windowed_pairs", "windowed_times"]

# Backward work of a fused attention kernel over its forward's: the benchmark's FLOP
# convention (benchmark_single_sdpa.py ``flops``: 5 BMMs against 2), the model's
# ``FLASH_BACKWARD_WORK_RATIO``.
BACKWARD_WORK_RATIO = 2.5


@dataclass(frozen=True)
class WindowRate:
    """One ``[[cudnn_window_attention]]`` row: the widest window and the head width it was
    measured at, and its forward and backward TFLOP/s over the attended pairs."""

    window: int
    head_dim: int
    forward_tflops: float
    backward_tflops: float


@cache
def _rows() -> dict[str, tuple[WindowRate, ...]]:
    """Each GPU's rows, narrowest window first."""
    text = resources.files("clusterforge.perf").joinpath("data", "efficiency.toml").read_text()
    by_gpu: dict[str, list[WindowRate]] = {}
    for row in tomllib.loads(text).get("cudnn_window_attention", []):
        rate = WindowRate(
            int(row["window"]),
            int(row["head_dim"]),
            float(row["forward_tflops"]),
            float(row["backward_tflops"]),
        )
        by_gpu.setdefault(row["gpu"], []).append(rate)
    return {gpu: tuple(sorted(rows, key=lambda r: r.window)) for gpu, rows in by_gpu.items()}


def window_rate(
    arch: ModelArch, plan: ParallelPlan, perf: GpuPerf, stack: Stack
) -> WindowRate | None:
    """The measured row that times ``arch``'s sliding-window layers, or None.

    A row serves cuDNN's fused attention (``Stack.attention`` "cudnn") without context
    parallelism, on the row's GPU, for a layer of the row's head width whose window is at
    most the row's; of several such rows, the narrowest window (a narrower window than
    measured keeps the row as an upper bound on the rate). None leaves the windowed layers at
    the causal kernel's rate."""
    w = arch.sliding_window
    if w is None or w >= plan.seq_length or arch.sliding_window_layers == 0.0:
        return None
    if stack.attention != "cudnn" or plan.layout.cp != 1:
        return None
    width = head_dim(arch)
    for row in _rows().get(perf.gpu_id, ()):
        if row.head_dim == width and w <= row.window:
            return row
    return None


def windowed_pairs(arch: ModelArch, plan: ParallelPlan) -> float:
    """Query-key pairs one sequence scores in a sliding-window layer, as the benchmark
    counts them: ``w (w + 1) / 2`` for the first ``w`` queries, ``w`` for each later one."""
    w = float(arch.sliding_window or plan.seq_length)
    s = float(plan.seq_length)
    if s <= w:
        return s * (s + 1.0) / 2.0
    return w * (w + 1.0) / 2.0 + (s - w) * w


def windowed_times(
    arch: ModelArch, plan: ParallelPlan, perf: GpuPerf, rate: WindowRate
) -> tuple[float, float]:
    """(forward, backward) seconds of one sliding-window layer's attention kernel for one
    micro-batch at ``rate`` (scaled, as the causal rows are, by a calibrated cluster's
    ``attention_scale``)."""
    heads = arch.num_heads / plan.layout.tp
    flops = 4.0 * plan.micro_batch * heads * head_dim(arch) * windowed_pairs(arch, plan)
    scale = perf.attention_scale * 1e12
    forward = flops / (rate.forward_tflops * scale)
    backward = BACKWARD_WORK_RATIO * flops / (rate.backward_tflops * scale)
    return forward, backward
