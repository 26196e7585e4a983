"""How far a prediction may be from the real run: the spread of the model on published runs.

How the printed 80 % range is derived (``benchmarks/validate_predict.py --write`` writes
``data/uncertainty.toml``; ``docs/validation.md`` says the same):

1. Every published run of ``validation/`` in the *calibration* and *development* sets is
   predicted; the *held-out* set never enters (it is scored only as a whole, and a test fails
   if held-out rows move the range).
2. Each run's signed error is ``e = predicted / published - 1``. Since the real value is
   ``predicted / (1 + e)``, the empirical 10th and 90th percentiles of ``e`` bound the real
   value from above and below for 80 % of those runs: ``low = 1 / (1 + p90) - 1`` and
   ``high = 1 / (1 + p10) - 1`` (``numpy.percentile``, linear interpolation).
3. The pooled range uses every such run. Each run also has a class (:func:`run_class`: what
   the run exercises, hence which mechanisms of the model carry it). A class with at least
   :data:`OWN_SPREAD_MIN_RUNS` runs gets the percentiles of its own runs (the classes the
   model handles with fewer mechanisms show their own, larger spread); a class with fewer runs
   gets the envelope of the pooled range and its own runs' percentiles (never narrower than
   the pooled range); a class without runs gets the pooled range.

A prediction's range is its class's (:func:`validation_band` with the class of the plan).
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Literal, get_args

from clusterforge.perf.flops import ffn_size

if TYPE_CHECKING:
    from clusterforge.catalog import ModelArch
    from clusterforge.perf.parallel import ParallelPlan

__all__ = [
    "OWN_SPREAD_MIN_RUNS",
    "RUN_CLASSES",
    "SCALE_GPUS",
    "SMALL_GEMM_GFLOP",
    "Band",
    "RunClass",
    "run_class",
    "validation_band",
]

RunClass = Literal[
    "moe",
    "long-context",
    "zero3-fsdp-scale",
    "hsdp",
    "fsdp-small",
    "fsdp-nd",
    "small-gemm",
    "megatron-3d",
]
RUN_CLASSES: tuple[RunClass, ...] = get_args(RunClass)
# ZeRO-3/FSDP "at scale": from 1,024 GPUs (where published runs with a fixed global batch
# leave each GPU a micro-batch or less while every micro-batch still gathers the model).
SCALE_GPUS = 1024
# Long context: sequences of 32K tokens and more, or any context parallelism.
LONG_CONTEXT_TOKENS = 32768
# Small GEMMs: the per-GPU MLP up-projection of one micro-batch under 100 GFLOP (2 x tokens
# x hidden x FFN / TP): a few hundred microseconds on an H100, where large-shape efficiency
# no longer holds.
SMALL_GEMM_GFLOP = 100.0
OWN_SPREAD_MIN_RUNS = 10


def run_class(arch: ModelArch, plan: ParallelPlan) -> RunClass:
    """What a run exercises, first match wins: ``moe`` (experts), ``long-context``
    (>= 32K tokens or context parallelism), ``zero3-fsdp-scale`` (ZeRO-3/FSDP on >= 1,024
    GPUs), ``hsdp`` (ZeRO-3 sharded in groups smaller than data parallelism), ``fsdp-small``
    (ZeRO-3 without tensor/pipeline parallelism), ``fsdp-nd`` (ZeRO-3 with them),
    ``small-gemm`` (per-GPU MLP GEMM under 100 GFLOP), else ``megatron-3d``."""
    job = plan.layout
    if arch.num_experts > 1:
        return "moe"
    if plan.seq_length >= LONG_CONTEXT_TOKENS or job.cp > 1:
        return "long-context"
    if plan.zero_stage == 3:
        if job.num_gpus >= SCALE_GPUS:
            return "zero3-fsdp-scale"
        if plan.shard_size is not None and plan.shard_size < job.dp:
            return "hsdp"
        return "fsdp-small" if job.tp == 1 and job.pp == 1 else "fsdp-nd"
    tokens = plan.micro_batch * plan.seq_length / job.cp
    gemm_gflop = 2.0 * tokens * arch.hidden_size * ffn_size(arch) / job.tp / 1e9
    if gemm_gflop < SMALL_GEMM_GFLOP:
        return "small-gemm"
    return "megatron-3d"


@dataclass(frozen=True)
class Band:
    """Range of the real value relative to a prediction, e.g. -0.09 .. +0.06."""

    low_fraction: float
    high_fraction: float
    num_runs: int
    mape: float

    def range_of(self, value: float) -> tuple[float, float]:
        """(low, high) of the real value around a predicted ``value``."""
        return value * (1 + self.low_fraction), value * (1 + self.high_fraction)

    def describe(self, value: float) -> str:
        """``"1,008 (-9% .. +6%)"``: the value and its range."""
        return f"{value:,.0f} ({self.low_fraction:+.0%} .. {self.high_fraction:+.0%})"


def _band(raw: dict[str, object]) -> Band:
    return Band(
        low_fraction=float(raw["low_fraction"]),  # type: ignore[arg-type]
        high_fraction=float(raw["high_fraction"]),  # type: ignore[arg-type]
        num_runs=int(raw["num_runs"]),  # type: ignore[call-overload]
        mape=float(raw["mape"]),  # type: ignore[arg-type]
    )


@cache
def _bands() -> tuple[Band, dict[str, Band]]:
    text = resources.files("clusterforge.perf").joinpath("data", "uncertainty.toml").read_text()
    raw = tomllib.loads(text)
    classes = {name: _band(values) for name, values in raw.get("class", {}).items()}
    return _band(raw), classes


def validation_band(run_class: str | None = None) -> Band:
    """The range measured on the calibration and development runs (``data/uncertainty.toml``):
    the range of ``run_class`` when given, else the pooled one."""
    pooled, classes = _bands()
    if run_class is None:
        return pooled
    return classes.get(run_class, pooled)
