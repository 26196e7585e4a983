"""Achieved against predicted: how far the job runs from what ``predict`` expects.

With a tokens/s series the comparison is direct, per GPU (the job may run on fewer or more
GPUs than the spec's workload that ``predict`` times).  Without one, the tensor pipe's active
share is the proxy: ``PIPE_TENSOR_ACTIVE`` is the share of cycles the tensor pipe is busy
(NVIDIA DCGM User Guide, "Feature Overview", "Profiling Metrics"), so at full occupancy it
approaches the share of the GPU's dense tensor peak in use, which is what the prediction's
hardware FLOPs utilization (HFU: model plus recompute FLOPs over peak, Korthikanti et al.
2022, "Reducing Activation Recomputation in Large Transformer Models", section 6) measures.  The proxy
ignores the clock (DCGM counts cycles, the peak assumes the boost clock), so a throttled
GPU looks better by it than it is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from clusterforge.diagnose.readings import JobReadings

if TYPE_CHECKING:
    from clusterforge.perf import Prediction

__all__ = ["Basis", "Comparison", "compare"]

Basis = Literal["tokens-per-s-per-gpu", "tensor-active"]


@dataclass(frozen=True)
class Comparison:
    """``achieved / predicted`` on one basis; ``shortfall`` = 1 - that ratio."""

    basis: Basis
    achieved: float
    predicted: float
    predicted_tokens_per_s: float
    predicted_mfu: float

    @property
    def ratio(self) -> float:
        return self.achieved / self.predicted

    @property
    def shortfall(self) -> float:
        return 1.0 - self.ratio


def compare(readings: JobReadings, prediction: Prediction) -> Comparison | None:
    """Tokens/s per GPU when measured, else mean tensor-active against predicted HFU; ``None``
    when the job reports neither."""
    common = {
        "predicted_tokens_per_s": prediction.tokens_per_s,
        "predicted_mfu": prediction.mfu,
    }
    if readings.tokens_per_s is not None and readings.gpus:
        return Comparison(
            basis="tokens-per-s-per-gpu",
            achieved=readings.tokens_per_s / len(readings.gpus),
            predicted=prediction.tokens_per_s_per_gpu,
            **common,
        )
    tensor = [g.tensor_active for g in readings.gpus if g.tensor_active is not None]
    if not tensor or prediction.hfu <= 0:
        return None
    return Comparison(
        basis="tensor-active",
        achieved=sum(tensor) / len(tensor),
        predicted=prediction.hfu,
        **common,
    )
