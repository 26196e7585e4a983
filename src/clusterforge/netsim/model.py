"""Calibration constants of the collective model, each with its source, and the size model.

The flow model gives the *bandwidth* time of a collective from link capacities.  Three
corrections turn it into what nccl-tests measures:

1. **Payload share** per algorithm and link kind: the share of a link's rate that carries
   payload with NCCL's Simple protocol.  Folded into the flow model as extra wire bytes (so
   link utilization is wire occupancy and a saturated link reads 1.0).  LL and LL128 scale
   it further (:mod:`clusterforge.netsim.tuner`).
2. **Latency**: NCCL's own latency model per algorithm, protocol and link kind
   (:mod:`clusterforge.netsim.tuner`).
3. **Pipeline ramp** of the Simple protocol: mid-size messages do not fill NCCL's pipeline
   of chunks and channels; ``eta(S) = 1 / (1 + (S_ramp / S)^p)`` multiplies its bandwidth.
   Fitted (calibration) to the 8x H200 NVLS all-reduce sweep of stas00/ml-engineering
   (``network/README.md``, NCCL 2.27.7: 1 MiB 39.9, 16 MiB 219.9, 128 MiB 401.9, 1 GiB
   463.6 GB/s busbw) on top of NCCL's NVLS latency.
"""

from __future__ import annotations

from clusterforge.netsim.vocab import COLLECTIVES as _COLLECTIVES

__all__ = [
    "COLLECTIVES",
    "NETWORK_EFFICIENCY",
    "P2P_NETWORK_EFFICIENCY",
    "PIPELINE_CHUNK_BYTES",
    "RAMP_BYTES",
    "RAMP_EXPONENT",
    "SCALEUP_EFFICIENCY",
    "SCALEUP_EFFICIENCY_BY_GENERATION",
    "network_efficiency",
    "pipeline_efficiency",
    "pipelined_time_s",
    "scaleup_efficiency",
]

COLLECTIVES = _COLLECTIVES

# Payload share of a scale-up (NVLink/PCIe) link, by algorithm:
# * ring/tree/chain: H100 ring all-reduce ~370 GB/s busbw on 450 GB/s NVLink4 ("~20 % protocol
#   overhead", sjeaugey in NVIDIA/nccl-tests #212) -> 370/450 = 0.82;
#   H200 all_gather 361.4 and reduce_scatter 362.9 sit on the same line.
# * direct (all-to-all): NVIDIA GTC25 slide, 8-GPU all-to-all busbw A100 210 / H100 320 /
#   B200 640 GB/s on 300/450/900 GB/s links -> 0.70/0.71/0.71; we use 320/450.
# * nvls (NVLink SHARP all-reduce): H100 busbw ~480 at algbw ~275 GB/s (#212); each GPU moves
#   S up and S down its port, so payload share = 275/450.
SCALEUP_EFFICIENCY: dict[str, float] = {
    "ring": 370 / 450,
    "tree": 370 / 450,
    "chain": 370 / 450,
    "direct": 320 / 450,
    "nvls": 275 / 450,
    "collnet": 370 / 450,
    "pat": 370 / 450,
}

# NVLink5 (B200, GB200 NVL72) reaches a smaller share of its 900 GB/s than NVLink4 does of
# 450 (stas00/ml-engineering network/README.md; NVIDIA GTC25 S72583 slide):
# * ring: 8x B200 682.2 GB/s busbw (stas00, 8 GiB), GTC25 slide 700 for B200 and 680 for GB200
#   NVL72 (32 GPUs) -> 690/900.
# * nvls: busbw is flat near 850 from 8 GPUs (B200 838.0-845.7, stas00; slide 850) to 32 GPUs
#   on NVL72 (slide 850), while the flow model's busbw grows as 2(n-1)/n at a fixed payload
#   share; the share is the geometric middle of the two fits, 845.7/(900·1.75) and
#   850/(900·1.9375), so both land within 5 %.
SCALEUP_EFFICIENCY_BY_GENERATION: dict[tuple[str, str], float] = {
    # NVLink3 (A100): 8x A100 ring all-reduce 234.9 GB/s busbw at 16 GiB on 300 GB/s
    # (stas00/ml-engineering network/README.md; NVIDIA's GTC24 slide shows 232).
    ("nvlink3", "ring"): 234.9 / 300,
    ("nvlink3", "tree"): 234.9 / 300,
    ("nvlink3", "chain"): 234.9 / 300,
    ("nvlink5", "ring"): 690 / 900,
    ("nvlink5", "tree"): 690 / 900,
    ("nvlink5", "chain"): 690 / 900,
    ("nvlink5", "nvls"): (845.7 / (900 * 1.75) * 850 / (900 * 1.9375)) ** 0.5,
}


def scaleup_efficiency(algorithm: str, scaleup: str) -> float:
    """Payload share of a scale-up link for ``algorithm`` on scale-up generation ``scaleup``."""
    return SCALEUP_EFFICIENCY_BY_GENERATION.get((scaleup, algorithm), SCALEUP_EFFICIENCY[algorithm])


# Payload share of a NIC/fabric link for NCCL's Simple protocol: NVIDIA's NCCL maintainers
# quote 46-48 GB/s of ring bus bandwidth per NDR 400 Gb/s NIC (AddyLaddy, NVIDIA/nccl-tests
# #290) and 24 GB/s per HDR 200 Gb/s NIC "on perfect setups" (sjeaugey, NVIDIA/nccl-tests
# #160): 47/50 and 24/25, we take the middle, 0.95.
NETWORK_EFFICIENCY = 0.95

# Grouped point-to-point (all-to-all) over the network: "CX-7 NICs at NDR rate (400 Gbps)
# should achieve up to 48-49 GB/s per NIC" (AddyLaddy, NVIDIA, in NVIDIA/nccl-tests #267).
P2P_NETWORK_EFFICIENCY = 48.5 / 50


def network_efficiency(algorithm: str) -> float:
    """Payload share of a network link for traffic of ``algorithm``."""
    return P2P_NETWORK_EFFICIENCY if algorithm == "direct" else NETWORK_EFFICIENCY


# Pipeline ramp of the Simple protocol, fitted as described in the module docstring.
RAMP_BYTES = 11 * 2**20
RAMP_EXPONENT = 0.7


# Chunk size of NCCL's pipeline between the stages of one algorithm: NCCL_BUFFSIZE, 4 MiB by
# default (NCCL environment-variable docs), is the buffer one channel fills before the next
# stage can consume it.  A message of S bytes is cut into ceil(S / chunk) chunks.
PIPELINE_CHUNK_BYTES = 4 * 2**20


def pipelined_time_s(stage_times_s: list[float], size_bytes: float) -> float:
    """Bandwidth time of stages that pipeline chunks (hierarchical all-reduce: intra
    reduce-scatter -> inter all-reduce -> intra all-gather): the slowest stage runs for
    its full time, every other stage only for its share of one chunk (the pipeline fill and
    drain), ``max(t) + (sum(t) - max(t)) / num_chunks``.  One chunk = back to back."""
    if not stage_times_s:
        return 0.0
    num_chunks = max(1.0, float(-(-size_bytes // PIPELINE_CHUNK_BYTES)))
    slowest = max(stage_times_s)
    return slowest + (sum(stage_times_s) - slowest) / num_chunks


def pipeline_efficiency(size_bytes: float) -> float:
    """Share of the steady bandwidth a message of ``size_bytes`` reaches (0..1]."""
    if size_bytes <= 0:
        return 1.0
    return 1.0 / (1.0 + float((RAMP_BYTES / size_bytes) ** RAMP_EXPONENT))
