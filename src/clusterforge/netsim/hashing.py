"""Flow hashing and bundle lookups shared by the Clos and dragonfly routers."""

from __future__ import annotations

import numpy as np

from clusterforge.topology import FabricGraph

__all__ = ["bundle_hop", "flow_hash", "hashed_member", "pick"]

_U = np.uint64
_MASK64 = (1 << 64) - 1


def flow_hash(key: np.ndarray, salt: int) -> np.ndarray:
    """A 64-bit mix (splitmix64 finaliser, Steele et al. 2014) of ``key`` and ``salt``;
    stands in for a switch's CRC hash over the packet header."""
    x = np.asarray(key).astype(_U) * _U(0x9E3779B97F4A7C15) + _U(
        (salt * 0x632BE59BD9B4E019 + 1) & _MASK64
    )
    x = (x ^ (x >> _U(30))) * _U(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> _U(27))) * _U(0x94D049BB133111EB)
    return x ^ (x >> _U(31))


def pick(key: np.ndarray, salt: int, n: np.ndarray | int) -> np.ndarray:
    """Hash ``key`` into ``[0, n)``."""
    return (flow_hash(key, salt) % np.asarray(n).astype(_U)).astype(np.int64)


def hashed_member(
    graph: FabricGraph, u: np.ndarray, v: np.ndarray, key: np.ndarray, salt: int
) -> np.ndarray:
    """Link id of the hashed member of the bundle u-v, in the direction u -> v."""
    b = graph.bundle_index(u, v)
    base = np.where(u < v, graph.member_up_base[b], graph.member_down_base[b])
    return np.asarray(base + pick(key, salt, graph.bundle_n[b]), np.int64)


def bundle_hop(
    graph: FabricGraph, u: np.ndarray, v: np.ndarray, key: np.ndarray, ecmp: bool, salt: int
) -> np.ndarray:
    """Link of the hop u -> v: a hashed member (ECMP) or the bundle's aggregate (adaptive)."""
    if ecmp:
        return hashed_member(graph, u, v, key, salt)
    b = graph.bundle_index(u, v)
    return np.asarray(np.where(u < v, graph.bundle_up_link[b], graph.bundle_down_link[b]))
