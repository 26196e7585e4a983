"""NCCL's cost model for choosing an algorithm and a protocol, restated over our flow model.

NCCL times every (algorithm, protocol) pair of a collective as ``latency + size / bandwidth``
and runs the fastest (``ncclTopoTuneModel`` and ``ncclTopoGetAlgoTime`` in NCCL's
``src/graph/tuning.cc``, NVIDIA/nccl at commit 5067397, 2026).  We keep its structure and its
published constants (``data/nccl.toml``, each with its source); the *bandwidth* of an algorithm is not NCCL's per-channel estimate but the
bottleneck our max-min flow model finds on the real link graph, scaled by the protocol's payload
share below.

Protocols (NCCL ``NCCL_PROTO``; payload shares from the same file):

* ``simple``: bulk copies with one flag per chunk; full bandwidth, highest latency.
* ``ll128``: 128-byte lines with an 8-byte flag, ``120/128`` of the wire carries data; NCCL
  charges 0.92 on rings.  Enabled only where the GPUs of a node talk over NVLink.
* ``ll``: 8-byte lines of 4 data bytes and a 4-byte flag: half the bandwidth, capped at
  ``LL_MAX_BUSBW`` per generation, lowest latency.

Latencies (microseconds) are NCCL's base latency per algorithm and protocol plus a hardware
latency per step, by link kind (NVLink, PCIe, network); a network step also pays the path
latency of our graph (twice for ``simple``: the receive flush). They, and the pipeline fill
of trees and chains, are :mod:`.latency`; this module holds the tuner's context, the
protocols and their payload shares, the channel counts and the bandwidth ceilings.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal, assert_never

from clusterforge.catalog import Scaleup
from clusterforge.constants import read_constants
from clusterforge.netsim.vocab import Algorithm, Collective, Protocol

__all__ = [
    "GENERATIONS",
    "NCCL_CONSTANTS",
    "PROTOCOL_INDEX",
    "Generation",
    "LinkKind",
    "NicPath",
    "TuningContext",
    "active_channels",
    "busbw_cap_gbyte_per_s",
    "channel_cap_gbyte_per_s",
    "generation_of",
    "ll128_enabled",
    "mnnvl_channels",
    "nccl_triple",
    "nccl_triples",
    "network_channels",
    "nvls_channels",
    "nvls_chunk_bytes",
    "payload_share",
    "protocols_for",
]

Generation = Literal["volta", "ampere", "hopper", "blackwell"]
GENERATIONS: tuple[Generation, ...] = ("volta", "ampere", "hopper", "blackwell")
LinkKind = Literal["nvlink", "pci", "net"]
# NCCL's path type from a GPU to its NIC (``src/graph/topo.h``): through PCIe switches (PXB,
# or closer), or over NVLink-C2C to the CPU and its PCIe (P2C, Grace superchips)
NicPath = Literal["pxb", "p2c"]

# NCCL's constants (data/nccl.toml): base latency per algorithm and hardware latency per
# step by link kind, (LL, LL128, Simple) in µs; the LL protocol's bus-bandwidth ceiling and
# the per-channel ceilings (``perChMaxRingLL128Bws``, ``perChMaxTreeLL128Bws``,
# ``perChMaxTreeBws``) by generation, for 1 / 2 / 3+ nodes, GB/s: one channel is one CUDA
# block driving one connection, and it moves no more than this whatever the links could
# carry; NCCL's model caps an algorithm's bus bandwidth at ``nChannels`` times them.
NCCL_CONSTANTS = read_constants("clusterforge.netsim", "nccl.toml")
Triple = tuple[float, float, float]


def nccl_triple(name: str, row: tuple[float, ...]) -> Triple:
    if len(row) != 3:
        raise ValueError(f"{name}: expected three numbers, got {row}")
    return row[0], row[1], row[2]


def nccl_triples(name: str, rows: dict[str, tuple[float, ...]]) -> dict[str, Triple]:
    return {key: nccl_triple(f"{name}.{key}", row) for key, row in rows.items()}


def _by_generation(name: str) -> dict[Generation, Triple]:
    rows = NCCL_CONSTANTS.rows(name)
    if set(rows) != set(GENERATIONS):
        raise ValueError(f"{name}: expected one row per generation {GENERATIONS}")
    return {g: nccl_triple(f"{name}.{g}", rows[g]) for g in GENERATIONS}


_LL_MAX_BUSBW = _by_generation("ll_max_busbw_gbyte_per_s")
_PER_CHANNEL_RING_LL128 = _by_generation("per_channel_ring_ll128_gbyte_per_s")
_PER_CHANNEL_TREE_LL128 = _by_generation("per_channel_tree_ll128_gbyte_per_s")
_PER_CHANNEL_TREE = _by_generation("per_channel_tree_gbyte_per_s")
_PER_CHANNEL_NVLS_TREE = _by_generation("per_channel_nvls_tree_gbyte_per_s")
PROTOCOL_INDEX: dict[Protocol, int] = {"ll": 0, "ll128": 1, "simple": 2}
_THREAD_THRESHOLD = nccl_triple(
    "thread_threshold_bytes", NCCL_CONSTANTS.numbers("thread_threshold_bytes")
)
_MAX_THREADS = nccl_triple("max_threads", NCCL_CONSTANTS.numbers("max_threads"))
_NVLS_CHANNELS = NCCL_CONSTANTS.numbers("nvls_channels")  # (hopper, blackwell)
_NVLS_CHUNK = NCCL_CONSTANTS.integer("nvls_chunk_bytes")
_SEARCH_SPEEDS = NCCL_CONSTANTS.numbers("search_speeds_inter_gbyte_per_s")
_NVLINK_PER_LINK = NCCL_CONSTANTS.numbers("nvlink_gbyte_per_s_per_link")  # (hopper, blackwell)
_NVLINKS_PER_GPU = NCCL_CONSTANTS.integer("nvlinks_per_gpu")
_RING_MAX_CHANNELS = NCCL_CONSTANTS.integer("ring_max_channels")


@dataclass(frozen=True)
class TuningContext:
    """What NCCL's tuner looks at: the communicator's shape, the GPU and the link kinds."""

    collective: Collective
    num_ranks: int
    num_nodes: int
    generation: Generation
    intra: Literal["nvlink", "pci"]
    net_path_latency_s: float  # one network traversal of our graph, GPU to GPU
    node_net_gbyte_per_s: float = math.inf  # NIC payload rate of the group's GPUs on a node
    num_channels: int = 0  # NCCL's channels across nodes (0: one node, no per-channel ceiling)
    nvls_heads: int = 0  # NVLS heads per NCCL node (NVLS, NVLS-Tree; 0: none)
    intra_gbyte_per_s: float = math.inf  # a GPU's scale-up payload rate each way
    nic_path: NicPath = "pxb"  # how a GPU reaches its NIC (ll128_enabled)
    ll128_c2c: bool = True  # NCCL_LL128_C2C (ll128_enabled)
    # NCCL's latencyInter as a net plugin reports it (aws-ofi-nccl on EFA:
    # ofi_tuner.net_latency_s); 0 with NCCL's own transport, which leaves it unset
    net_plugin_latency_s: float = 0.0

    @property
    def ranks_per_node(self) -> int:
        return max(1, self.num_ranks // max(1, self.num_nodes))


def nvls_channels(generation: Generation) -> int:
    """NCCL's NVLS channels (``nvlsChannels``, ``ncclNvlsInit``): 16 on Hopper, 32 on
    Blackwell (data/nccl.toml); NVLS needs Hopper or newer."""
    return int(_NVLS_CHANNELS[1] if generation == "blackwell" else _NVLS_CHANNELS[0])


def nvls_chunk_bytes(
    algorithm: Literal["nvls", "nvls_tree"], size_bytes: float, concurrent_ops: int, num_nodes: int
) -> int:
    """Chunk NCCL cuts an NVLS (one node) or NVLS-Tree all-reduce into (``calcCollChunking``
    in ``src/enqueue.cc``): from ``NCCL_NVLS_CHUNKSIZE`` (128 KiB) it halves while the
    message is below a multiple of ``concurrent_ops`` = nChannels x nHeads chunks (NVLS: 64,
    8 and 2 times, down to 16 KiB; NVLS-Tree: 4 and 1 times, down to 32 KiB, and at most
    64 KiB from 4 nodes)."""
    chunk = _NVLS_CHUNK
    if algorithm == "nvls":
        for times, floor in ((64, 65536), (8, 32768), (2, 16384)):
            if size_bytes < times * concurrent_ops * chunk and chunk > floor:
                chunk = floor
        return chunk
    if num_nodes >= 4:
        chunk = min(chunk, 65536)
    for times, floor in ((4, 65536), (1, 32768)):
        if size_bytes < times * concurrent_ops * chunk and chunk > floor:
            chunk = floor
    return chunk


def mnnvl_channels(generation: Generation, *, nic_gbyte_per_s: float, nics: int) -> int:
    """Channels of NCCL's ring and tree graphs on one multi-node NVLink rack (its node under
    MNNVL), whose ``nics`` NICs run at ``nic_gbyte_per_s`` each way (``ncclTopoCompute``,
    ``src/graph/search.cc``): the search takes the first listed speed at or below a NIC's
    rate and adds channels, each through its own NIC, while every GPU's NVLink has that
    speed left (each channel enters and leaves every GPU of the rack), up to 32; it then
    doubles them at half speed where :func:`network_channels` says NCCL does
    (``ncclTopoDupChannels``).  GB200 NVL72: 18 x 40 GB/s of NVLink over 48 GB/s, 15."""
    speed = next((v for v in _SEARCH_SPEEDS if v <= nic_gbyte_per_s), _SEARCH_SPEEDS[-1])
    per_link = _NVLINK_PER_LINK[1] if generation == "blackwell" else _NVLINK_PER_LINK[0]
    fit = int(_NVLINKS_PER_GPU * per_link // speed)
    channels = max(1, min(_RING_MAX_CHANNELS, fit, nics))
    newer = generation in ("hopper", "blackwell")
    if speed >= 25.0 and not (newer and speed < 50.0 and channels > 4):
        channels = min(2 * channels, _RING_MAX_CHANNELS)
    return channels


def generation_of(scaleup: Scaleup) -> Generation:
    """NCCL's GPU generation for a catalog scale-up technology.

    NCCL indexes its tables by compute capability (7.x Volta, 8.x Ampere/Ada, 9.x Hopper,
    10.x Blackwell); PCIe-only GPUs (L40S and RTX 4090, compute capability 8.9) and AMD GPUs
    use the Ampere row."""
    match scaleup:
        case "nvlink2":
            return "volta"
        case "nvlink3" | "pcie4" | "infinity-fabric":
            return "ampere"
        case "nvlink4":
            return "hopper"
        case "nvlink5":
            return "blackwell"
        case _:
            assert_never(scaleup)


def ll128_enabled(ctx: TuningContext) -> bool:
    """NCCL's default for LL128 on a ring or tree (``ncclTopoTuneModel``,
    ``src/graph/tuning.cc``): NVLink between the GPUs of a node (``typeIntra`` up to
    ``PATH_NVB``) and, across nodes, a short path from each GPU to its NIC (``typeInter``).
    Up to PXB it is on everywhere.  Where the GPU reaches its NIC over NVLink-C2C and the
    CPU's PCIe (Grace superchips), NCCL before 2.27.3 saw a PHB path, past the PXN limit,
    and left LL128 off between nodes; 2.27.3 named the path P2C and enables LL128 over it
    while ``NCCL_LL128_C2C`` is 1, its default (NVIDIA/nccl v2.26.2-1, v2.27.3-1, v2.27.5-1).
    ``ctx.ll128_c2c`` False stands for the variable at 0 or an older NCCL."""
    if ctx.intra != "nvlink":
        return False
    return ctx.num_nodes < 2 or ctx.nic_path == "pxb" or ctx.ll128_c2c


def protocols_for(algorithm: Algorithm, ctx: TuningContext) -> tuple[Protocol, ...]:
    """Protocols NCCL considers for ``algorithm``: NVLS, CollNet and PAT run Simple only,
    LL128 only where NCCL enables it (:func:`ll128_enabled`)."""
    match algorithm:
        case "ring" | "tree" | "chain":
            return ("ll", "ll128", "simple") if ll128_enabled(ctx) else ("ll", "simple")
        case "nvls" | "nvls_tree" | "collnet" | "pat" | "hierarchical" | "direct":
            return ("simple",)
        case _:
            assert_never(algorithm)


def payload_share(algorithm: Algorithm, protocol: Protocol, ctx: TuningContext) -> float:
    """Share of the Simple-protocol bandwidth that ``protocol`` reaches on ``algorithm``
    (NCCL ``ncclTopoTuneModel`` refinements: LL 0.5 on rings and 1/3.8 on trees, LL128
    0.92 on rings, 120/128 on inter-node trees and 7/9 inside a node, trees 0.92, PAT 0.75)."""
    tree = 0.92 if ctx.collective == "all_reduce" else 1.0
    match algorithm:
        case "ring" | "chain":
            return {"simple": 1.0, "ll128": 0.92, "ll": 0.5}[protocol]
        case "tree":
            ll128 = 7.0 / 9.0 if ctx.num_nodes == 1 else 120.0 / 128.0
            return tree * {"simple": 1.0, "ll128": ll128, "ll": 1.0 / 3.8}[protocol]
        case "pat":
            return 0.75
        case "nvls" | "nvls_tree" | "collnet" | "hierarchical" | "direct":
            return 1.0
        case _:
            assert_never(algorithm)


def busbw_cap_gbyte_per_s(algorithm: Algorithm, protocol: Protocol, ctx: TuningContext) -> float:
    """Bus-bandwidth ceilings of NCCL's model: the LL protocol's ``llMaxBws``; trees (and
    NVLS trees) over more than 2 nodes limited to the inter-node bandwidth (NCCL takes
    ``bwInter`` for them; on 2 nodes it doubles it for NVLS trees, and our flow model finds
    the same: each node then sends S and receives S).

    An all-to-all has no ceiling of its own: NCCL's p2p schedule (``p2pSchedule`` in
    ``src/init.cc``) orders the peers node by node, the rounds to the GPUs of the node's own
    NVLink domain first, and ``scheduleP2pTasksToPlan`` spreads the rounds over the p2p
    channels, which run at once; so a GPU's NIC carries only its messages to remote GPUs
    while its NVLink carries the rest, and busbw exceeds one NIC's rate by (n - 1) / (n - k)
    ("some of those will be over NVLink", AddyLaddy in NVIDIA/nccl-tests #267).  The flow
    model's single phase of every pair already times exactly that."""
    cap = math.inf
    if protocol == "ll" and algorithm in ("ring", "tree", "chain"):
        cap = _LL_MAX_BUSBW[ctx.generation][min(ctx.num_nodes, 3) - 1]
    if algorithm in ("tree", "nvls_tree") and ctx.num_nodes > 2:
        cap = min(cap, ctx.node_net_gbyte_per_s)
    return cap


def active_channels(
    algorithm: Algorithm, protocol: Protocol, ctx: TuningContext, size_bytes: float
) -> int:
    """Channels NCCL runs for one call of ``size_bytes`` (``ncclTopoGetAlgoInfo``): rings
    and trees drop channels, down to one, while the message is smaller than
    ``channels x threads x threshold`` bytes (Simple 512 threads x 64 B, LL 512 x 8 B times
    the rank count on rings, LL128 640 x 8 B), so a small message uses fewer NICs and
    copy engines; NVLS, CollNet and p2p keep theirs.  0 inside one node (no count)."""
    nc = ctx.num_channels
    if nc < 1 or algorithm not in ("ring", "tree", "chain"):
        return nc
    index = PROTOCOL_INDEX[protocol]
    per_channel = _MAX_THREADS[index] * _THREAD_THRESHOLD[index]
    if algorithm == "ring" and protocol == "ll":
        per_channel *= ctx.num_ranks
    return max(1, min(nc, int(size_bytes // per_channel)))


def network_channels(*, nics: int, nic_payload_gbyte_per_s: float, generation: Generation) -> int:
    """Channels NCCL's graph search builds for a ring or tree that leaves the node through
    ``nics`` NICs (``ncclTopoCompute`` and ``ncclTopoDupChannels`` in ``src/graph/search.cc``):
    the search stops at the first speed that fits, one channel per NIC at about the NIC's
    rate; the channels are then doubled (each at half the speed) when that speed is 25 GB/s
    or more, except on Hopper and newer below 50 GB/s with more than 4 channels."""
    channels = max(1, nics)
    speed = nic_payload_gbyte_per_s
    newer = generation in ("hopper", "blackwell")
    if speed >= 25.0 and not (newer and speed < 50.0 and channels > 4):
        channels *= 2
    return channels


def channel_cap_gbyte_per_s(algorithm: Algorithm, protocol: Protocol, ctx: TuningContext) -> float:
    """NCCL's per-channel ceiling on the bus bandwidth of a collective across nodes
    (``ncclTopoTuneModel``): ring LL128 at ``nChannels·perChMaxRingLL128Bw``; tree
    all-reduce at ``nChannels·perChMaxTreeBw`` (Simple), the same times 120/128 and at most
    ``nChannels·perChMaxTreeLL128Bw`` (LL128), and 1/3.8 of it (LL).  A channel is one CUDA
    block, so on 2 nodes a tree with few channels (one per NIC) cannot reach the twice-the-NIC
    bus bandwidth its traffic pattern would allow.  NVLS-Tree at ``nvls_heads`` times
    ``perChMaxNVLSTreeBw`` (in NCCL's tuner from 2.28.3): a channel of the NVLS graph is one
    head, whose share of the data the head GPU's NVLS-Tree blocks reduce, send up the tree,
    receive and broadcast, with each block's warps split four ways (scatter into the NVLS
    buffer, gather from it, reduce-and-send, receive-and-broadcast: ``RunWorkColl`` for
    ``NCCL_ALGO_NVLS_TREE`` in ``src/device/all_reduce.h``, the same split from v2.19.3-1 to
    v2.28.3-1, so the ceiling holds for the releases before the table too); on 2 Hopper nodes
    8 heads stop at 8 x 57.7 GB/s, below what NVLink SHARP and the NICs would carry.
    Infinite inside one node."""
    if ctx.num_nodes < 2 or ctx.num_channels < 1:
        return math.inf
    col = min(ctx.num_nodes, 3) - 1
    nch = ctx.num_channels
    match algorithm:
        case "ring" | "chain":
            return (
                nch * _PER_CHANNEL_RING_LL128[ctx.generation][col]
                if protocol == "ll128"
                else math.inf
            )
        case "tree":
            if ctx.collective != "all_reduce":
                return math.inf
            tree = nch * _PER_CHANNEL_TREE[ctx.generation][col]
            match protocol:
                case "simple":
                    return tree
                case "ll128":
                    return min(
                        tree * 120.0 / 128.0, nch * _PER_CHANNEL_TREE_LL128[ctx.generation][col]
                    )
                case "ll":
                    return tree / 3.8
                case _:
                    assert_never(protocol)
        case "nvls_tree":
            # the NVLS graph's channels are its heads (``ncclTopoCompute``, src/graph/search.cc)
            heads = ctx.nvls_heads or nch
            return heads * _PER_CHANNEL_NVLS_TREE[ctx.generation][col]
        case "nvls" | "collnet" | "pat" | "hierarchical" | "direct":
            return math.inf
        case _:
            assert_never(algorithm)
