"""What a board power limit below its TDP (``nvidia-smi -pl``) leaves of a GPU's matmul rate.

A power limit lowers the clock the SMs sustain while the tensor cores are busy; the model
takes it not to lower the HBM clock. The model therefore scales the GPU's compute ceilings (in
:func:`clusterforge.perf.roofline.gpu_perf`: the measured MAMF and attention-kernel rates)
and keeps its HBM bandwidth and kernel launch cost; MFU stays quoted against the part's
datasheet peak:

    rate(P) / rate(TDP) = (P / TDP) ** POWER_LIMIT_EXPONENT

The exponent is read from one die that NVIDIA rates at two board powers: the Blackwell GPU
of HGX B200 (up to 1,000 W per GPU) and of HGX B100 (up to 700 W per GPU), whose dense
tensor rates are 72 and 56 PFLOPS FP8 with sparsity per eight GPUs (NVIDIA Blackwell
Architecture Technical Brief, 2024, "HGX B200 / HGX B100" table; FP4 144 / 112, the same
ratio). 56 / 72 = 0.778 at 700 / 1,000 = 0.70 of the power gives
``ln(0.778) / ln(0.70) = 0.705``. Linear interpolation between the two parts gives the same
share to within 0.2 % anywhere between 0.7 and 1.0 of TDP; below 0.7 the exponent is an
extrapolation. It lies between the two bounds a clock-for-power trade can take: 1 (power
proportional to clock, no voltage headroom) and 1/3 (``P ~ f V^2`` with ``V ~ f``).

Memory-bound kernels keep their rate: the limit is enforced on the graphics clock (NVIDIA
DGX B200 User Guide, "Managing Power Capping": the GPU's performance monitoring unit applies
the most conservative of the VBIOS, ``nvidia-smi`` and out-of-band limits). AMD's MAF
measurements show the split from the other side: the MI300X sustains 1,207 MHz in a BF16
GEMM and 1,230 MHz in an FP8 GEMM against its 2,100 MHz peak engine clock (AMD Instinct
MI300X data sheet), the clock set by power while the tensor cores run (ROCm blog "Measuring Max-Achievable FLOPs -
Part 2", 2025-02-28, Table 1). That a streaming kernel stays under the limit is the
model's assumption, not a measurement read here.

The limit accepted is between ``MIN_POWER_LIMIT_FRACTION`` of TDP and TDP: above TDP the
part is not rated (the catalog TDP is the board power the part is sold at); below half of
TDP the exponent, read between 0.7 and 1.0, would be extrapolated past where a rate is worth
printing. One relation for every user: ``predict`` (:mod:`clusterforge.perf.power_limit`) and the
facility planner's power caps (:mod:`clusterforge.design.facility.power`).
"""

from __future__ import annotations

import math

from clusterforge.catalog.models import Gpu
from clusterforge.errors import SpecError

__all__ = [
    "MIN_POWER_LIMIT_FRACTION",
    "POWER_LIMIT_EXPONENT",
    "check_power_limit",
    "rate_share_at_limit",
]

# HGX B100 against HGX B200: 56 / 72 PFLOPS (FP8, sparse, 8 GPUs) at 700 / 1,000 W per GPU.
_B100_W, _B200_W = 700.0, 1000.0
_B100_FP8_PFLOPS, _B200_FP8_PFLOPS = 56.0, 72.0
POWER_LIMIT_EXPONENT = math.log(_B100_FP8_PFLOPS / _B200_FP8_PFLOPS) / math.log(_B100_W / _B200_W)
MIN_POWER_LIMIT_FRACTION = 0.5


def rate_share_at_limit(limit_w: float, tdp_w: float) -> float:
    """Share of its full-power matmul rate a GPU of ``tdp_w`` sustains at ``limit_w``."""
    return float((limit_w / tdp_w) ** POWER_LIMIT_EXPONENT)


def check_power_limit(gpu: Gpu, limit_w: float, field: str = "gpu_power_limit_w") -> None:
    """Refuse a limit above the GPU's TDP or below ``MIN_POWER_LIMIT_FRACTION`` of it."""
    floor_w = MIN_POWER_LIMIT_FRACTION * gpu.tdp_w
    if limit_w > gpu.tdp_w:
        raise SpecError(
            f"{field} = {limit_w:g} W is above the {gpu.id}'s {gpu.tdp_w:g} W TDP, the most "
            f"the part is rated for; set {field} to {floor_w:g}-{gpu.tdp_w:g} W, or leave it "
            "unset for the full TDP"
        )
    if limit_w < floor_w:
        raise SpecError(
            f"{field} = {limit_w:g} W is below {MIN_POWER_LIMIT_FRACTION:.0%} of the "
            f"{gpu.id}'s {gpu.tdp_w:g} W TDP ({floor_w:g} W), under the range the model's "
            f"power-to-clock relation covers; set {field} to {floor_w:g}-{gpu.tdp_w:g} W"
        )
