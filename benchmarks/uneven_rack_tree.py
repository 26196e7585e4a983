"""NCCL's tree across NVLink domains that hold different numbers of a group's GPUs, as a
what-if on every calibration and development nccl-tests row (the model unchanged).

With multi-node NVLink NCCL's node is the clique, whatever the number of GPUs in it
(``ncclTopoGetSystem`` in ``src/graph/topo.cc``, nodes counted by the first rank of each
ring in ``initTransportsRank``, ``src/init.cc``, NVIDIA/nccl v2.29.2-1), and its tree is a
chain through each clique's GPUs with a double binary tree between the cliques; its tuner
takes ppn = nRanks / nNodes (``ncclTopoTuneModel``, ``src/graph/tuning.cc``).  The model
builds that tree (``trees.rack_tree``) only when every domain holds the same number of the
group's GPUs; otherwise it falls back to a tree of trays.  This script patches, for its own
run only, ``collectives.tree_phases`` and ``simulate.tuning_context`` so that an uneven split gets
the clique tree too: a chain of each domain's own length, one tree between the domains per
channel (NCCL's channels on a domain, no more than the fewest NICs of a domain) and the
latency of nNodes = the domains, then prints every row it moves and the mean absolute error
by set and size band before and after.

    PYTHONPATH=$PWD/src:$PWD python benchmarks/uneven_rack_tree.py

Calibration and development rows only; a held-out row is never simulated.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import replace

import numpy as np

import clusterforge.netsim.collectives as collectives_mod
import clusterforge.netsim.simulate as simulate_mod
from clusterforge.netsim.edges import edge_traffic, merge
from clusterforge.netsim.model import NETWORK_EFFICIENCY
from clusterforge.netsim.traffic import Traffic
from clusterforge.netsim.trees import (
    _dtree,
    domain_blocks,
    domain_split,
    mnnvl,
    nic_count,
    nic_positions,
    rack_channels,
)
from clusterforge.topology import FabricGraph
from validation.nccl_rows import LARGE_BYTES, ROWS, score

STUDIED = ("calibration", "development")


def _uneven(graph: FabricGraph, seq: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """(ordered, counts) when ``seq`` spans 2+ NVLink domains with different GPU counts."""
    if not mnnvl(graph) or domain_blocks(graph, seq)[1]:
        return None
    split = domain_split(graph, seq)
    if split is None or split[1].size < 2 or int(split[1].min()) < 2:
        return None
    return split


def _tree_channels(graph: FabricGraph, ordered: np.ndarray, counts: np.ndarray) -> int:
    """The domain's tree channels (``rack_channels``), no more than the fewest NICs of the
    group in any domain (each channel leaves through its own NIC)."""
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    fewest = min(
        nic_count(graph, ordered[0, s : s + k]) for s, k in zip(starts, counts, strict=True)
    )
    return min(rack_channels(graph), fewest)


def uneven_rack_tree(graph: FabricGraph, ordered: np.ndarray, counts: np.ndarray) -> Traffic:
    """``trees.rack_tree`` with a chain of each domain's own length."""
    ng = ordered.shape[0]
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    parts = []
    for s, k in zip(starts, counts, strict=True):
        local = ordered[:, s : s + k]
        chain = np.arange(int(k) - 1)
        src, dst = np.concatenate([chain, chain + 1]), np.concatenate([chain + 1, chain])
        e = edge_traffic(graph, local, src, dst, per_edge=False)
        volume = np.full(ng * e.num_channels, 1.0 / e.num_channels)
        parts.append(
            Traffic("tree", e.intra_src, e.intra_dst, e.intra_owner, e.net, e.net_owner, volume, 0)
        )
    h = _tree_channels(graph, ordered, counts)
    blocks = [ordered[0, s : s + k] for s, k in zip(starts, counts, strict=True)]
    heads = np.stack([s + nic_positions(graph, b, h) for s, b in zip(starts, blocks, strict=True)])
    rails = ordered[:, heads.T].reshape(ng * heads.shape[1], counts.size)
    inter = _dtree(graph, rails, counts.size, 1, 1.0 / heads.shape[1])
    steps = 2 * (int(np.ceil(np.log2(counts.size))) + int(counts.max()) - 1)
    return replace(merge([*parts, inter]), steps=steps)


@contextlib.contextmanager
def clique_tree_for_uneven_splits() -> Iterator[None]:
    """Patch the model's tree and NCCL's tuning context for uneven splits, then restore."""
    tree_phases, context = collectives_mod.tree_phases, simulate_mod.tuning_context

    def patched_tree(graph: FabricGraph, seq: np.ndarray) -> list[Traffic]:
        split = _uneven(graph, seq)
        if split is None:
            return tree_phases(graph, seq)
        return [uneven_rack_tree(graph, *split)]

    def patched_context(graph, collective, seq, algorithm):  # type: ignore[no-untyped-def]
        ctx = context(graph, collective, seq, algorithm)
        split = _uneven(graph, seq) if algorithm == "tree" else None
        if split is None:
            return ctx
        channels = _tree_channels(graph, *split)
        node_net = channels * graph.nic_gbyte_per_s * NETWORK_EFFICIENCY
        return replace(
            ctx,
            num_nodes=int(split[1].size),
            num_channels=channels,
            node_net_gbyte_per_s=node_net,
        )

    collectives_mod.tree_phases = patched_tree
    simulate_mod.tuning_context = patched_context
    try:
        yield
    finally:
        collectives_mod.tree_phases, simulate_mod.tuning_context = tree_phases, context


def errors_before_after() -> list[tuple[dict, float, str, float, str]]:
    """(row, error, pick) as the model stands and with the clique tree for uneven splits."""
    rows = [r for r in ROWS if r["set"] in STUDIED]
    before = [score(r) for r in rows]
    with clique_tree_for_uneven_splits():
        after = [score(r) for r in rows]
    return [
        (r, b.error, f"{b.algorithm}/{b.protocol}", a.error, f"{a.algorithm}/{a.protocol}")
        for r, b, a in zip(rows, before, after, strict=True)
    ]


def main() -> None:
    results = errors_before_after()
    print(f"{'row':34} {'as the model stands':>26} {'clique tree, uneven split':>30}")
    for row, e0, p0, e1, p1 in results:
        if abs(e1 - e0) > 1e-9 or p0 != p1:
            print(f"{row['id']:34} {p0:>18} {e0:+7.1%} {p1:>22} {e1:+7.1%}")
    print()
    for subset in STUDIED:
        for large, band in ((False, "< 16 MiB"), (True, ">= 16 MiB")):
            sel = [
                (e0, e1)
                for r, e0, _, e1, _ in results
                if r["set"] == subset and (r["size_bytes"] >= LARGE_BYTES) == large
            ]
            b, a = np.array(sel).T
            print(
                f"{subset:12} {band:10} n={len(sel):3}  mean |error| {np.mean(np.abs(b)):6.1%}"
                f" -> {np.mean(np.abs(a)):6.1%}  median signed {np.median(b):+.1%}"
                f" -> {np.median(a):+.1%}"
            )


if __name__ == "__main__":
    main()
