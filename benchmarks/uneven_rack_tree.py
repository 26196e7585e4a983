"""NCCL's tree across NVLink domains that hold different numbers of a group's GPUs, against
the tree of trays the model ran before, on every calibration and development nccl-tests row.

With multi-node NVLink NCCL's node is the clique, whatever the number of GPUs in it
(``ncclTopoGetSystem`` in ``src/graph/topo.cc``, nodes counted by the first rank of each
ring in ``initTransportsRank``, ``src/init.cc``, NVIDIA/nccl v2.29.2-1), and its tree is a
chain through each clique's GPUs with a double binary tree between the cliques; its tuner
takes ppn = nRanks / nNodes (``ncclTopoTuneModel``, ``src/graph/tuning.cc``).  The model
builds that tree for even splits (``trees.rack_tree``) and for uneven ones
(``trees.uneven_rack_tree``, ``domains.uneven_split``).  This script runs every row as the
model stands and with the uneven case switched off (``tray_tree``: the model's tree of
trays, NCCL's latency with nNodes = the trays), then prints every row that moves and the
mean absolute error by set and size band of both.

    PYTHONPATH=$PWD/src:$PWD python benchmarks/uneven_rack_tree.py

Calibration and development rows only; a held-out row is never simulated.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any
from unittest import mock

import numpy as np

import clusterforge.netsim.context as context_mod
import clusterforge.netsim.solve as solve_mod
import clusterforge.netsim.trees as trees_mod
from validation.nccl_rows import LARGE_BYTES, ROWS, score

STUDIED = ("calibration", "development")


@contextlib.contextmanager
def tray_tree() -> Iterator[None]:
    """The model before NCCL's clique tree for uneven splits: a group over domains holding
    different numbers of its GPUs runs a tree of trays, then the model is restored.  The
    solved phases are cached per graph, so the cache is emptied on the way in and its
    earlier contents put back on the way out."""
    with (
        mock.patch.object(trees_mod, "uneven_split", lambda _graph, _seq: None),
        mock.patch.object(context_mod, "uneven_split", lambda _graph, _seq: None),
        mock.patch.dict(solve_mod._CACHE, clear=True),
    ):
        yield


def errors_before_after() -> list[tuple[dict[str, Any], float, str, float, str]]:
    """(row, error, pick) with the tree of trays (before) and as the model stands (after)."""
    rows = [r for r in ROWS if r["set"] in STUDIED]
    with tray_tree():
        before = [score(r) for r in rows]
    after = [score(r) for r in rows]
    return [
        (r, b.error, f"{b.algorithm}/{b.protocol}", a.error, f"{a.algorithm}/{a.protocol}")
        for r, b, a in zip(rows, before, after, strict=True)
    ]


def main() -> None:
    results = errors_before_after()
    print(f"{'row':34} {'tree of trays (before)':>26} {'clique tree (the model)':>30}")
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
