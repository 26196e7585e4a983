"""Constants of the collective model (``data/efficiency.toml``, each with its tag and
source) and the size model.

The flow model gives the *bandwidth* time of a collective from link capacities.  Three
corrections turn it into what nccl-tests measures:

1. **Payload share** per algorithm and link kind: the share of a link's rate that carries
   payload with NCCL's Simple protocol.  Folded into the flow model as extra wire bytes (so
   link utilization is wire occupancy and a saturated link reads 1.0).  LL and LL128 scale
   it further (:mod:`clusterforge.netsim.tuner`), and so does a transport other than RDMA
   on a NIC link (:func:`transport_payload_share`: GPUDirect-TCPX).
2. **Latency**: NCCL's own latency model per algorithm, protocol and link kind
   (:mod:`clusterforge.netsim.tuner`).
3. **Pipeline ramp** of the Simple protocol: mid-size messages do not fill NCCL's pipeline
   of chunks and channels.  Each step of that pipeline waits on its peer's flag, a fixed
   time whatever the link's speed, so the ramp is a time: with ``t`` the collective's
   steady bandwidth time, ``eta = 1 / (1 + (t_ramp / t)^p)`` multiplies its bandwidth.  A
   pipeline paced by a slow link (a NIC) therefore reaches its steady rate at a smaller
   message than one paced by NVLink.  ``S_ramp`` and ``p`` are fitted (calibration) to the
   8x H200 NVLS all-reduce sweep of stas00/ml-engineering (``network/README.md``, NCCL
   2.27.7: 1 MiB 39.9, 16 MiB 219.9, 128 MiB 401.9, 1 GiB 463.6 GB/s busbw) on top of
   NCCL's NVLS latency; ``t_ramp = S_ramp / v`` where ``v`` is the model's own steady NVLS
   algorithm rate on those GPUs (NVLink4 450 GB/s x the NVLS payload share), so at the
   calibration rate the time ramp is the fitted byte ramp.

   NVLS and NVLS-Tree pipeline in *loops*: NCCL cuts the message into loops of
   ``nvlsChannels x nHeads`` chunks (``calcCollChunking`` in ``src/enqueue.cc``: pattern
   ``ncclPatternNvls`` / ``ncclPatternNvlsTree``, ``nchunksPerLoop = nHeads``; its chunk size
   depends on ``S / (nChannels x nHeads)`` only), and each loop's steps move whole chunks,
   bandwidth-bound, so the pipeline's fill is a number of loops: that ramp in bytes scales
   with ``nvlsChannels x nHeads``, and NVLS's ramp is the longer of it and the time ramp
   (:func:`nvls_pipeline_efficiency`; at the calibration's loop and rate they coincide).  The
   calibration sweep ran 16 channels x 8 heads (Hopper, 8 GPUs); a GB200 NVL72 rack runs 32
   x 32 (NCCL 2.26: ``NVLS_NCHANNELS_SM100``, ``NCCL_MAX_NVLS_ARITY``), a loop 8x larger, so
   512 MiB there sits where 64 MiB sits on 8 H200.
"""

from __future__ import annotations

from clusterforge.constants import read_constants
from clusterforge.netsim.vocab import COLLECTIVES as _COLLECTIVES

__all__ = [
    "COLLECTIVES",
    "NETWORK_EFFICIENCY",
    "P2P_NETWORK_EFFICIENCY",
    "PIPELINE_CHUNK_BYTES",
    "RAMP_BYTES",
    "RAMP_EXPONENT",
    "RAMP_SECONDS",
    "SCALEUP_EFFICIENCY",
    "SCALEUP_EFFICIENCY_BY_GENERATION",
    "TRANSPORT_PAYLOAD_SHARE",
    "network_efficiency",
    "nvls_pipeline_efficiency",
    "pipeline_efficiency",
    "pipelined_time_s",
    "scaleup_efficiency",
    "transport_payload_share",
]

COLLECTIVES = _COLLECTIVES

_DATA = read_constants("clusterforge.netsim", "efficiency.toml")

# Payload share of a scale-up (NVLink/PCIe) link, by algorithm, and the generations that
# reach another share; sources in data/efficiency.toml.
SCALEUP_EFFICIENCY: dict[str, float] = _DATA.group("scaleup_payload_share.default")
SCALEUP_EFFICIENCY_BY_GENERATION: dict[tuple[str, str], float] = {
    (generation, algorithm): share
    for key, share in _DATA.group("scaleup_payload_share").items()
    for generation, _, algorithm in [key.partition(".")]
    if generation != "default"
}


def scaleup_efficiency(algorithm: str, scaleup: str) -> float:
    """Payload share of a scale-up link for ``algorithm`` on scale-up generation ``scaleup``."""
    return SCALEUP_EFFICIENCY_BY_GENERATION.get((scaleup, algorithm), SCALEUP_EFFICIENCY[algorithm])


# Payload share of a NIC/fabric link for NCCL's Simple protocol (collectives) and for
# grouped point-to-point (all-to-all); sources in data/efficiency.toml.
NETWORK_EFFICIENCY = _DATA.number("network_payload_share.collective")
P2P_NETWORK_EFFICIENCY = _DATA.number("network_payload_share.p2p")


def network_efficiency(algorithm: str) -> float:
    """Payload share of a network link for traffic of ``algorithm``."""
    return P2P_NETWORK_EFFICIENCY if algorithm == "direct" else NETWORK_EFFICIENCY


# Share of a NIC's payload rate that a transport other than RDMA reaches across nodes
# (GPUDirect-TCPX on Google A3 High); source in data/efficiency.toml.
TRANSPORT_PAYLOAD_SHARE: dict[str, float] = _DATA.group("transport_payload_share")


def transport_payload_share(transport: str) -> float:
    """Share of the RDMA payload rate of a NIC that ``transport`` reaches: 1 for RDMA
    (InfiniBand, RoCE), the measured share for GPUDirect-TCPX.  It scales every flow that
    crosses a NIC; traffic inside a node does not cross one.  Latency is RDMA's: no
    published per-message cost of TCPX is modelled."""
    if transport == "rdma":
        return 1.0
    return TRANSPORT_PAYLOAD_SHARE[transport]


# Pipeline ramp of the Simple protocol, fitted as described in the module docstring.
RAMP_BYTES = _DATA.integer("ramp.bytes")
RAMP_EXPONENT = _DATA.number("ramp.exponent")
# The ramp as a time: S_ramp at the calibration sweep's steady NVLS algorithm rate in the
# model (H200 NVLink4, 450 GB/s each way, datasheet, x the NVLS payload share).
_NVLINK4_GBYTE_PER_S = 450.0
RAMP_SECONDS = RAMP_BYTES / (_NVLINK4_GBYTE_PER_S * 1e9 * SCALEUP_EFFICIENCY["nvls"])

# Chunk size of NCCL's pipeline between the stages of one algorithm (NCCL_BUFFSIZE): a
# message of S bytes is cut into ceil(S / chunk) chunks.
PIPELINE_CHUNK_BYTES = _DATA.integer("pipeline_chunk_bytes")


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


def pipeline_efficiency(steady_s: float) -> float:
    """Share of the steady bandwidth reached by a collective whose bandwidth time at the
    steady rate is ``steady_s`` seconds (0..1]."""
    if steady_s <= 0:
        return 1.0
    return 1.0 / (1.0 + float((RAMP_SECONDS / steady_s) ** RAMP_EXPONENT))


# NVLS loop size of the calibration sweep (8 H200, NCCL 2.27.7): Hopper's NVLS channels x one
# head per GPU (data/nccl.toml).
_NCCL = read_constants("clusterforge.netsim", "nccl.toml")
RAMP_NVLS_CONCURRENT_OPS = int(_NCCL.numbers("nvls_channels")[0]) * min(
    _NCCL.integer("nvls_max_heads"), 8
)


def nvls_pipeline_efficiency(
    steady_s: float, size_bytes: float, concurrent_ops: int, chunk_ratio: float = 1.0
) -> float:
    """Share of the steady bandwidth an NVLS or NVLS-Tree all-reduce of ``size_bytes``
    (steady bandwidth time ``steady_s``) reaches when NCCL runs ``concurrent_ops`` =
    nvlsChannels x nHeads chunks per loop, each ``chunk_ratio`` times NVLS's chunk at that
    size (NVLS-Tree's chunk rule differs): the longer of the calibrated time ramp (the
    steps' synchronisation) and the calibrated byte ramp scaled by the loop size (the
    pipeline's fill, module docstring).  Both are the fitted ramp at the calibration's loop
    and rate."""
    if steady_s <= 0 or size_bytes <= 0:
        return 1.0
    ops = concurrent_ops * chunk_ratio
    loop = RAMP_BYTES * ops / RAMP_NVLS_CONCURRENT_OPS / size_bytes
    ratio = max(RAMP_SECONDS / steady_s, loop)
    return 1.0 / (1.0 + float(ratio**RAMP_EXPONENT))
