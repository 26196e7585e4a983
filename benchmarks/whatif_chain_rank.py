"""What-if: rank a broadcast's or reduce's protocols in NCCL's own form.

``simulate`` ranks the (algorithm, protocol) pairs by the call's modelled time plus the
difference between NCCL's ranking latency and the call's (``latency.tuner_offset_s``), so
a chain's (broadcast, reduce) rank includes the store-and-forward fill of its first chunk
over the network hops (``latency.chain_fill_s``) and Simple's pipeline ramp, neither of
which NCCL's own estimate has (``ncclTopoGetAlgoTime``, ``src/graph/tuning.cc``: latency +
size / bandwidth).  The fill grows with the nodes, and from 16 nodes the pick goes LL128
-> Simple -> LL -> Simple as the size grows (the time falling to 0.3x on a doubling),
which a latency + size / bandwidth ranking cannot do.  Variants:

- ``chain, no fill``: a chain ranked without its fill;
- ``chain, no fill, no ramp``: without its fill and Simple's ramp (NCCL's form);
- ``all, no fill, no ramp``: every algorithm ranked so (tree fill, NVLS ramp too).

For each: validate_simulate's figures, the rows whose pick or error changes, whether a
64-node DGX A100 broadcast's pick still goes back down, and a one-node DGX H100
broadcast's busbw at 1, 4 and 32 MiB.

    python benchmarks/whatif_chain_rank.py
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any
from unittest import mock

import numpy as np
from benchmarks.simulate_sanity_sweep import CONFIGS, build_graph

from clusterforge.netsim import simulate as sim
from clusterforge.netsim import simulate_collective
from clusterforge.netsim.alltoall import proxy_serial_s
from clusterforge.netsim.latency import latency_s, tuner_latency_s
from clusterforge.netsim.result import Choice
from clusterforge.topology import FabricGraph
from validation.nccl_rows import LARGE_BYTES, ROWS, Scored, mean_abs_error, score

ORDER = {"ll": 0, "ll128": 1, "simple": 2}
VARIANTS = {  # name: (algorithms ranked in NCCL's form, without the ramp too)
    "chain, no fill": (("chain",), False),
    "chain, no fill, no ramp": (("chain",), True),
    "all, no fill, no ramp": (None, True),
}


def _steady_s(opt: Any, proto: Any, size_bytes: float, no_ramp: bool) -> float:
    with ExitStack() as stack:
        stack.enter_context(mock.patch.object(sim, "chain_fill_s", lambda *a: 0.0))
        stack.enter_context(mock.patch.object(sim, "tree_fill_s", lambda *a: 0.0))
        if no_ramp:
            stack.enter_context(mock.patch.object(sim, "pipeline_efficiency", lambda *a: 1.0))
            stack.enter_context(mock.patch.object(sim, "nvls_pipeline_efficiency", lambda *a: 1.0))
        t = sim._time(opt.phases, opt.name, proto, opt.ctx, size_bytes)
    return t - latency_s(opt.name, proto, opt.ctx)


def _chooser(algorithms: tuple[str, ...] | None, no_ramp: bool) -> Any:
    def choose(graph: FabricGraph, req: Any, arr: np.ndarray, size_bytes: float) -> Choice:
        weighed = sim._options(graph, req, arr, sim.ring_order(graph, arr))
        best, best_rank = None, math.inf
        for opt in sim._tuner_pick(graph, req, weighed, arr, size_bytes):
            for proto in opt.protocols:
                t = sim._time(opt.phases, opt.name, proto, opt.ctx, size_bytes * 1.0)
                lat = latency_s(opt.name, proto, opt.ctx)
                t = lat + (t - lat) / opt.goodput
                if opt.name == "direct":
                    t = max(t, proxy_serial_s(graph, arr, size_bytes))
                rank = t + sim.tuner_offset_s(opt.name, proto, opt.ctx)
                if algorithms is None or opt.name in algorithms:
                    steady = _steady_s(opt, proto, size_bytes, no_ramp)
                    rank = tuner_latency_s(opt.name, proto, opt.ctx) + steady / opt.goodput
                if rank < best_rank:
                    best = Choice(opt.name, proto, t, lat, opt.phases, opt.goodput)
                    best_rank = rank
        assert best is not None
        return best

    return choose


@contextmanager
def variant(name: str | None) -> Iterator[None]:
    if name is None:
        yield
        return
    with mock.patch.object(sim, "_choose", _chooser(*VARIANTS[name])):
        yield


def _rows(label: str) -> dict[str, Scored]:
    out: dict[str, Scored] = {}
    for name in ("calibration", "development"):
        scored = [score(r) for r in ROWS if r["set"] == name]
        large = [s for s in scored if s.row["size_bytes"] >= LARGE_BYTES]
        small = [s for s in scored if s.row["size_bytes"] < LARGE_BYTES]
        print(
            f"{label:24} {name:12} {mean_abs_error(scored):6.1%}; >= 16 MiB "
            f"{mean_abs_error(large):.1%}, < 16 MiB {mean_abs_error(small):.1%}"
        )
        out.update({s.row["id"]: s for s in scored})
    return out


def _curves(label: str, a100x64: FabricGraph, h100x1: FabricGraph) -> None:
    group = np.arange(512)[None, :]
    picks = [simulate_collective(a100x64, "broadcast", 2**k, group) for k in range(13, 31)]
    order = [ORDER[r.protocol] for r in picks]
    falls = sum(b.time_s < a.time_s for a, b in itertools.pairwise(picks))
    one = [
        simulate_collective(h100x1, "broadcast", 2**k, np.arange(8)[None, :]) for k in (20, 22, 25)
    ]
    print(
        f"{label:24} 64-node A100 broadcast: protocols {'monotone' if order == sorted(order) else 'go back down'}, "
        f"{falls} time falls; 1-node H100 busbw 1/4/32 MiB "
        + "/".join(f"{r.busbw_gbyte_per_s:.0f}" for r in one)
        + " GB/s"
    )


def main() -> None:
    a100x64, h100x1 = build_graph(CONFIGS[0], 64), build_graph(CONFIGS[2], 1)
    before = _rows("as modelled")
    _curves("as modelled", a100x64, h100x1)
    for name in VARIANTS:
        with variant(name):
            after = _rows(name)
            _curves(name, a100x64, h100x1)
        for key, a in before.items():
            b = after[key]
            if (a.algorithm, a.protocol) != (b.algorithm, b.protocol) or abs(
                a.error - b.error
            ) > 1e-9:
                print(
                    f"    {key:32} {a.algorithm}/{a.protocol} {a.error:+.1%} -> "
                    f"{b.algorithm}/{b.protocol} {b.error:+.1%}"
                )


if __name__ == "__main__":
    main()
