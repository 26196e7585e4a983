"""The simulator's vocabularies as ``Literal`` types, with their values as tuples.

Branch on them with ``match`` and :func:`typing.assert_never`, so that a new value is a type
error wherever it is not handled.
"""

from __future__ import annotations

from typing import Literal, get_args

__all__ = [
    "ALGORITHMS",
    "COLLECTIVES",
    "PROTOCOLS",
    "Algorithm",
    "AlgorithmChoice",
    "Collective",
    "Protocol",
    "ProtocolChoice",
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

COLLECTIVES: tuple[Collective, ...] = get_args(Collective)
ALGORITHMS: tuple[AlgorithmChoice, ...] = get_args(AlgorithmChoice)
PROTOCOLS: tuple[ProtocolChoice, ...] = get_args(ProtocolChoice)
