"""Calibration constants of the collective model, each with its source, and the size model.

The flow model gives the *bandwidth* time of a collective from link capacities.  Three
corrections turn it into what nccl-tests measures:

1. **Protocol efficiency** per algorithm and link kind: the share of a link's rate that carries
   payload.  Folded into the flow model as extra wire bytes (so link utilization is wire
   occupancy and a saturated link reads 1.0).
2. **Latency (alpha)**: a fixed launch/synchronisation cost plus one path latency per
   algorithm step (2(n−1) for a ring all-reduce, 2·log2 for a tree, 2 for NVLS).
3. **Pipeline ramp**: mid-size messages do not fill the pipeline of chunks and channels.
   ``eta(S) = 1 / (1 + (S_ramp / S)^p)`` multiplies the bandwidth.

The alpha and the ramp are fitted to the 8× H200 NVLS all-reduce sweep of performance.md §3.2
(stas00/ml-engineering: 32 KiB 1.44 · 1 MiB 39.9 · 16 MiB 219.9 · 128 MiB 401.9 ·
1 GiB 463.6 · 16 GiB 482.3 GB/s busbw) and used as the shape for every algorithm.
"""

from __future__ import annotations

__all__ = [
    "BUS_FACTOR",
    "COLLECTIVES",
    "LAUNCH_S",
    "NETWORK_EFFICIENCY",
    "PIPELINE_CHUNK_BYTES",
    "RAMP_BYTES",
    "RAMP_EXPONENT",
    "SCALEUP_EFFICIENCY",
    "SCALEUP_EFFICIENCY_BY_GENERATION",
    "bus_factor",
    "pipeline_efficiency",
    "pipelined_time_s",
    "scaleup_efficiency",
]

COLLECTIVES = (
    "all_reduce",
    "reduce_scatter",
    "all_gather",
    "all_to_all",
    "broadcast",
    "reduce",
    "sendrecv",
)

# nccl-tests doc/PERFORMANCE.md (operations.md §15, performance.md §3.1): busbw = algbw × f.
BUS_FACTOR = {
    "all_reduce": "2(n-1)/n",
    "reduce_scatter": "(n-1)/n",
    "all_gather": "(n-1)/n",
    "all_to_all": "(n-1)/n",
    "broadcast": "1",
    "reduce": "1",
    "sendrecv": "1",
}


def bus_factor(collective: str, n: int) -> float:
    """nccl-tests bus-bandwidth factor for ``n`` ranks."""
    if collective == "all_reduce":
        return 2 * (n - 1) / n
    if collective in ("reduce_scatter", "all_gather", "all_to_all"):
        return (n - 1) / n
    return 1.0


# Payload share of a scale-up (NVLink/PCIe) link, by algorithm:
# * ring/tree/chain: H100 ring all-reduce ~370 GB/s busbw on 450 GB/s NVLink4 ("~20 % protocol
#   overhead", sjeaugey in NVIDIA/nccl-tests #212; performance.md §3.2) -> 370/450 = 0.82;
#   H200 all_gather 361.4 and reduce_scatter 362.9 sit on the same line.
# * direct (all-to-all): NVIDIA GTC25 slide, 8-GPU all-to-all busbw A100 210 / H100 320 /
#   B200 640 GB/s on 300/450/900 GB/s links -> 0.70/0.71/0.71; we use 320/450.
# * nvls (NVLink SHARP all-reduce): H100 busbw ~480 at algbw ~275 GB/s (#212); each GPU moves
#   S up and S down its port, so payload share = 275/450.
SCALEUP_EFFICIENCY = {
    "ring": 370 / 450,
    "tree": 370 / 450,
    "chain": 370 / 450,
    "direct": 320 / 450,
    "nvls": 275 / 450,
}

# NVLink5 (B200, GB200 NVL72) reaches a smaller share of its 900 GB/s than NVLink4 does of
# 450 (performance.md §3.2):
# * ring: 8x B200 682.2 GB/s busbw (stas00, 8 GiB), GTC25 slide 700 for B200 and 680 for GB200
#   NVL72 (32 GPUs) -> 690/900.
# * nvls: busbw is flat near 850 from 8 GPUs (B200 838.0-845.7, stas00; slide 850) to 32 GPUs
#   on NVL72 (slide 850), while the flow model's busbw grows as 2(n-1)/n at a fixed payload
#   share; the share is the geometric middle of the two fits, 845.7/(900·1.75) and
#   850/(900·1.9375), so both land within 5 %.
SCALEUP_EFFICIENCY_BY_GENERATION = {
    ("nvlink5", "ring"): 690 / 900,
    ("nvlink5", "tree"): 690 / 900,
    ("nvlink5", "chain"): 690 / 900,
    ("nvlink5", "nvls"): (845.7 / (900 * 1.75) * 850 / (900 * 1.9375)) ** 0.5,
}


def scaleup_efficiency(algorithm: str, scaleup: str) -> float:
    """Payload share of a scale-up link for ``algorithm`` on scale-up generation ``scaleup``."""
    return SCALEUP_EFFICIENCY_BY_GENERATION.get((scaleup, algorithm), SCALEUP_EFFICIENCY[algorithm])


# Payload share of a NIC/fabric link.  The seed's acceptance rule for nccl-tests ("if it doesn't
# hit >90 % of theoretical bandwidth, your network or topology is wrong") is the figure a
# healthy fabric reaches; performance.md §5 quotes ~73 % per NIC for hierarchical all-reduce
# at >= 1 GiB, which the pipeline ramp and the intra-node phases reproduce on top of this.
NETWORK_EFFICIENCY = 0.90

# Fitted to the H200 NVLS sweep above (least squares by eye on the log busbw, within 15 %
# at every point from 32 KiB to 16 GiB): launch + sync ~35 µs, ramp 7 MiB, exponent 0.7.
LAUNCH_S = 35e-6
RAMP_BYTES = 7 * 2**20
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
    return 1.0 / (1.0 + (RAMP_BYTES / size_bytes) ** RAMP_EXPONENT)
