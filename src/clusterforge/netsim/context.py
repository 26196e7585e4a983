"""What NCCL's tuner sees of one communicator: :class:`~clusterforge.netsim.tuner.TuningContext`.

NCCL prices every (algorithm, protocol) pair with the communicator's rank and node counts,
the GPU generation, the links inside and between nodes and the channels it built
(``ncclTopoTuneModel``, ``src/graph/tuning.cc``).  Its node is the machine, except under
multi-node NVLink (MNNVL), where it is the NVLink domain (:mod:`clusterforge.netsim.domains`).
"""

from __future__ import annotations

import numpy as np

from clusterforge.netsim.domains import (
    clique_tree_channels,
    domain_blocks,
    domain_split,
    mnnvl,
    rack_channels,
    ring_channels,
    uneven_split,
)
from clusterforge.netsim.model import NETWORK_EFFICIENCY, scaleup_efficiency
from clusterforge.netsim.ofi_tuner import net_latency_s
from clusterforge.netsim.trees import NVLS_MAX_HEADS, nvls_heads
from clusterforge.netsim.tuner import TuningContext, generation_of, network_channels
from clusterforge.netsim.vocab import Algorithm, Collective
from clusterforge.topology import FabricGraph

__all__ = ["CLIQUE_NODE_ALGORITHMS", "one_clique", "tuning_context"]

# Algorithms whose context counts trays as nodes unless :func:`one_clique` says otherwise
# (rings inside one domain already see one node: the ring of NVLink domains below).
CLIQUE_NODE_ALGORITHMS: tuple[Algorithm, ...] = ("nvls", "direct")


def one_clique(graph: FabricGraph, seq: np.ndarray) -> bool:
    """Every rank of the groups ``seq`` lies in one NVLink domain that spans several nodes
    (an MNNVL clique, such as the trays of one NVL72 rack).  NCCL then has ONE node: it
    fuses the clique's topologies (``ncclTopoGetSystem``, ``src/graph/topo.cc``), all its
    ranks are in one ring, and ``initTransportsRank`` (``src/init.cc``) counts nodes by the
    first rank of each ring, so ``nNodes`` is 1.  ``ncclTopoTuneModel``
    (``src/graph/tuning.cc``) then takes the NVLink hardware latencies and adds no network
    latency to NVLS; nothing crosses the network, so no network channel count or call cost
    across nodes applies either (NVIDIA/nccl v2.28.7-1).  The tray count would charge NVLS
    the network's NVLS latency (18 us) and the call across nodes, and an all-to-all a
    network overhead per peer."""
    return mnnvl(graph) and domain_blocks(graph, seq)[1] == seq.shape[1]


def tuning_context(
    graph: FabricGraph, collective: Collective, seq: np.ndarray, algorithm: Algorithm
) -> TuningContext:
    """What NCCL's tuner sees.  Its node is the machine, except on a multi-node NVLink
    fabric (MNNVL), where NCCL's node is the NVLink domain (:mod:`clusterforge.netsim.trees`):
    for NVLS-Tree, trees and rings across domains nodes count domains, and the NICs a node
    uses are its NVLS heads' or its channels'; NVLS and all-to-all inside one domain see one
    node (:func:`one_clique`).  On AWS EFA (``graph.efa_instance``) NCCL's network latency
    is the one aws-ofi-nccl reports (:func:`~clusterforge.netsim.ofi_tuner.net_latency_s`)."""
    n = int(seq.shape[1])
    heads = min(NVLS_MAX_HEADS, n) if algorithm == "nvls" else 0
    shape = _clique_shape(graph, collective, seq, algorithm) if mnnvl(graph) else None
    if shape is None:
        shape = _machine_shape(graph, seq, algorithm)
    nodes, channels, node_net, shape_heads = shape
    return TuningContext(
        collective=collective,
        num_ranks=n,
        num_nodes=nodes,
        generation=generation_of(graph.scaleup),
        intra="nvlink" if graph.scaleup_class in ("nvlink", "xgmi") else "pci",
        net_path_latency_s=0.0,
        node_net_gbyte_per_s=node_net,
        num_channels=channels if nodes > 1 else 0,
        nvls_heads=shape_heads if algorithm == "nvls_tree" else heads,
        intra_gbyte_per_s=float(graph.capacity_gbyte_per_s[graph.scaleup_up(seq[0, :1])][0])
        * scaleup_efficiency("tree", graph.scaleup),
        nic_path="p2c" if graph.nic_behind_c2c else "pxb",
        net_plugin_latency_s=net_latency_s(graph.efa_instance),
    )


# (nodes, channels across nodes, NIC payload rate of a node's channels, NVLS-Tree heads)
_Shape = tuple[int, int, float, int]


def _clique_shape(
    graph: FabricGraph, collective: Collective, seq: np.ndarray, algorithm: Algorithm
) -> _Shape | None:
    """NCCL's nodes and channels where its node is the NVLink domain (MNNVL), or None where
    the model counts machines."""
    n = int(seq.shape[1])
    kd = domain_blocks(graph, seq)[1]
    if algorithm == "nvls_tree":
        ordered, k = domain_blocks(graph, seq)
        heads = int(nvls_heads(graph, ordered[0, :k]).size)
        return n // k, heads, heads * graph.nic_gbyte_per_s * NETWORK_EFFICIENCY, heads
    if algorithm == "tree" and kd and n // kd >= 2:
        # the tree of NVLink domains (trees.rack_tree): NCCL's channels on a domain
        channels = rack_channels(graph)
        return n // kd, channels, channels * graph.nic_gbyte_per_s * NETWORK_EFFICIENCY, 0
    if algorithm == "tree" and (uneven := uneven_split(graph, seq)) is not None:
        # the tree of cliques of different sizes (trees.uneven_rack_tree): NCCL's nNodes
        # counts the cliques and its tuner takes ppn = nRanks / nNodes (ncclTopoTuneModel)
        channels = clique_tree_channels(graph, uneven[0][0], uneven[1])
        nodes = int(uneven[1].size)
        return nodes, channels, channels * graph.nic_gbyte_per_s * NETWORK_EFFICIENCY, 0
    split = domain_split(graph, seq)
    if split is not None and _rack_ring(collective, algorithm):
        # the ring of NVLink domains (trees.rack_ring), even or uneven over them: the
        # channels of the group's GPUs in its domains; inside one domain, one NCCL node
        channels = ring_channels(graph, split[0][0], split[1])
        nodes = int(split[1].size)
        return nodes, channels, channels * graph.nic_gbyte_per_s * NETWORK_EFFICIENCY, 0
    return None


def _machine_shape(graph: FabricGraph, seq: np.ndarray, algorithm: Algorithm) -> _Shape:
    """NCCL's nodes and channels counting machines (one node for NVLS and all-to-all inside
    one MNNVL clique: :func:`one_clique`)."""
    n = int(seq.shape[1])
    nodes = int(np.unique(seq[0] // graph.gpus_per_node).size)
    if algorithm in CLIQUE_NODE_ALGORITHMS and one_clique(graph, seq):
        nodes = 1
    per_node = max(1, n // nodes)
    heads = int(nvls_heads(graph, seq[0, :per_node]).size) if algorithm == "nvls_tree" else 0
    channels = network_channels(
        nics=min(per_node, graph.nics_per_node),
        nic_payload_gbyte_per_s=graph.nic_gbyte_per_s * NETWORK_EFFICIENCY,
        generation=generation_of(graph.scaleup),
    )
    gpu_nic = graph.nics_per_node * graph.nic_gbyte_per_s / graph.gpus_per_node
    return nodes, channels, gpu_nic * (n / nodes) * NETWORK_EFFICIENCY, heads


def _rack_ring(collective: Collective, algorithm: Algorithm) -> bool:
    """The ring of a collective over the NVLink domains of a multi-node NVLink fabric:
    NCCL's node is then the domain (:func:`~clusterforge.netsim.trees.rack_ring`).  Our
    ``chain`` (broadcast, reduce) is NCCL's ring graph too: ring is the only algorithm NCCL
    builds them with (``RunWorkColl<ncclFuncBroadcast, T, RedOp, NCCL_ALGO_RING, ...>`` in
    ``src/device/broadcast.h``, ``ncclFuncReduce`` in ``reduce.h``, NVIDIA/nccl v2.28.7-1),
    so inside one rack it is one node and across racks it counts racks, not trays."""
    rings = ("all_reduce", "all_gather", "reduce_scatter")
    chains = ("broadcast", "reduce")
    return (algorithm == "ring" and collective in rings) or (
        algorithm == "chain" and collective in chains
    )
