"""The simulator's vocabularies as ``Literal`` types, with their values as tuples.

Branch on them with ``match`` and :func:`typing.assert_never`, so that a new value is a type
error wherever it is not handled.
"""

from __future__ import annotations

from typing import Literal, get_args

from clusterforge.job import GroupKind

__all__ = [
    "ALGORITHMS",
    "COLLECTIVES",
    "COMMUNICATORS",
    "PLACEMENTS",
    "PROTOCOLS",
    "ROUTINGS",
    "Algorithm",
    "AlgorithmChoice",
    "Collective",
    "Communicators",
    "Placement",
    "Protocol",
    "ProtocolChoice",
    "Routing",
]

Collective = Literal[
    "all_reduce",
    "reduce_scatter",
    "all_gather",
    "all_to_all",
    "broadcast",
    "reduce",
    "sendrecv",
]

# NCCL's algorithms (``NCCL_ALGO``: ring, tree, nvls, nvlstree, collnetdirect, pat) plus
# ``hierarchical`` (a rail-aligned three-stage all-reduce, only when asked for), ``direct``
# (all-to-all as grouped point-to-point) and ``chain`` (broadcast/reduce/sendrecv pipelines).
Algorithm = Literal[
    "ring", "tree", "nvls", "nvls_tree", "collnet", "pat", "hierarchical", "direct", "chain"
]
AlgorithmChoice = Literal[
    "auto", "ring", "tree", "nvls", "nvls_tree", "collnet", "pat", "hierarchical", "direct"
]

# NCCL's protocols (``NCCL_PROTO``): Simple (bulk copies, flag per chunk), LL (8-byte lines:
# 4 bytes of data + 4 of flag), LL128 (128-byte lines: 120 bytes of data + 8 of flag).
Protocol = Literal["simple", "ll", "ll128"]
ProtocolChoice = Literal["auto", "simple", "ll", "ll128"]

# ecmp: static hashing per flow (or QP); adaptive: ideal spraying over equal-cost paths;
# valiant / ugal: non-minimal dragonfly routing (Kim et al., ISCA 2008, §4.2).
Routing = Literal["ecmp", "adaptive", "valiant", "ugal"]

# How a job's ranks land on nodes: packed in node order, or fragmented over random nodes.
Placement = Literal["packed", "fragmented"]

# Which communicators run at once: every group of one kind of the job, or one over all GPUs.
Communicators = Literal["all", GroupKind]

COLLECTIVES: tuple[Collective, ...] = get_args(Collective)
ROUTINGS: tuple[Routing, ...] = get_args(Routing)
PLACEMENTS: tuple[Placement, ...] = get_args(Placement)
COMMUNICATORS: tuple[Communicators, ...] = get_args(Communicators)  # nested Literal: flattened
ALGORITHMS: tuple[AlgorithmChoice, ...] = get_args(AlgorithmChoice)
PROTOCOLS: tuple[ProtocolChoice, ...] = get_args(ProtocolChoice)
