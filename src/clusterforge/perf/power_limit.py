"""A GPU run under a board power limit below its TDP (``nvidia-smi -pl``): the checks and the
``Gpu`` copy ``predict`` times. The relation and its sources are in
:mod:`clusterforge.catalog.power_limit`: the compute ceilings (the measured MAMF and
attention-kernel rates, :func:`clusterforge.perf.roofline.gpu_perf`) scale by
``(P / TDP) ** POWER_LIMIT_EXPONENT``; HBM bandwidth and kernel launch cost stay; MFU stays
quoted against the part's datasheet peak.
"""

from __future__ import annotations

from clusterforge.catalog import Gpu
from clusterforge.catalog.power_limit import (
    MIN_POWER_LIMIT_FRACTION,
    POWER_LIMIT_EXPONENT,
    check_power_limit,
    rate_share_at_limit,
)

__all__ = [
    "MIN_POWER_LIMIT_FRACTION",
    "POWER_LIMIT_EXPONENT",
    "check_power_limit",
    "limit_share",
    "matmul_rate_share",
    "power_limited",
]


def matmul_rate_share(gpu: Gpu, limit_w: float) -> float:
    """Share of its full-power matmul rate the GPU sustains at ``limit_w`` (1.0 at TDP)."""
    check_power_limit(gpu, limit_w)
    return rate_share_at_limit(limit_w, gpu.tdp_w)


def power_limited(gpu: Gpu, limit_w: float | None) -> Gpu:
    """``gpu`` run at ``limit_w`` watts (its ``power_limit_w`` set, after
    :func:`check_power_limit`); ``gpu`` itself when no limit is set. The datasheet peaks stay
    the part's (MFU is quoted against them); :func:`clusterforge.perf.roofline.gpu_perf`
    scales the compute ceilings by :func:`matmul_rate_share`."""
    if limit_w is None:
        return gpu
    check_power_limit(gpu, limit_w)
    return gpu.model_copy(update={"power_limit_w": float(limit_w)})


def limit_share(gpu: Gpu) -> float:
    """The share of its matmul rate ``gpu`` keeps at its ``power_limit_w`` (1.0 when unset)."""
    return 1.0 if gpu.power_limit_w is None else matmul_rate_share(gpu, gpu.power_limit_w)
