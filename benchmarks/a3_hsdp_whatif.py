"""MaxText HSDP on Google A3 (Llama 2 7B, 8-128 H100): GPUDirect-TCPX, now in the model,
and the FP32-reduction what-if on every development run it would touch.

Prints, first, dstack's published two-VM A3 High all-gather (16 ranks, 8 GiB,
``examples/misc/a3high-clusters/README.md`` in dstackai/dstack: 50.17 GB/s busbw; the
calibration row of ``validation/pub_dstack_a3high_tcpx_nccl.toml``) against the model's
busbw for it over RDMA and over GPUDirect-TCPX (``network.transport``: the cross-node
collectives at ``transport_payload_share.gpudirect-tcpx`` of the RDMA rate, that ratio).
The development rows of ``pub_maxtext_a3_hsdp.toml`` name that transport, so TCPX is no
longer a what-if here.

Then the what-if ``fp32-reduce``: every run on the ``maxtext`` stack reduces its gradients
in FP32 (``Stack.grad_reduce_bytes`` 4 instead of 2: the reduce-scatter inside the shard
group and the HSDP all-reduce across the replicas). It prints the signed error of every
development run it touches, as predicted and under the what-if, and the per-class MAPE and
median signed error of all development runs before and after.

    PYTHONPATH=$PWD/src:$PWD python benchmarks/a3_hsdp_whatif.py

Development rows only (never held-out).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Callable
from dataclasses import replace

from clusterforge.netsim.model import transport_payload_share
from clusterforge.perf.comm import CommModel
from validation.nccl_rows import ROWS, score
from validation.runs import Run, best_prediction, load_runs, predict_run

A3_FILE = "pub_maxtext_a3_hsdp.toml"
# validation/pub_dstack_a3high_tcpx_nccl.toml: dstack's two-VM A3 High all-gather, 8 GiB
DSTACK_A3HIGH_ROW = "pub-dstack-a3high-tcpx-ag-8g"


def development_runs() -> list[Run]:
    """Every development run, by file and name."""
    runs = [r for r in load_runs() if r.subset == "development"]
    return sorted(runs, key=lambda r: (r.file, r.name))


def signed_error(run: Run, comm: CommModel | None = None) -> float:
    """Predicted over published, minus one (``nan`` when nothing fits); with ``comm``, the
    fastest fitting candidate plan timed on it (as ``predict_run`` does on the run's own)."""
    pred = predict_run(run).prediction if comm is None else best_prediction(run, comm)
    if pred is None:
        return float("nan")
    return float(getattr(pred, run.metric)) / run.published - 1.0


def a3_allgather_busbw() -> tuple[float, float, float]:
    """dstack's A3 High all-gather: published busbw, the model's over RDMA and over
    GPUDirect-TCPX (GB/s), printed with the transport's payload share."""
    row = next(r for r in ROWS if r["id"] == DSTACK_A3HIGH_ROW)
    rdma = score({**row, "transport": "rdma"}).simulated_gbyte_per_s
    tcpx = score(row).simulated_gbyte_per_s
    print(
        f"A3 High all-gather, 16 ranks, 8 GiB: published {row['busbw']:.2f} GB/s, model over "
        f"RDMA {rdma:.2f} GB/s, over GPUDirect-TCPX {tcpx:.2f} GB/s (share "
        f"{transport_payload_share('gpudirect-tcpx'):.3f} = {row['busbw']:.2f} / {rdma:.2f})"
    )
    return float(row["busbw"]), rdma, tcpx


def fp32_reduce(run: Run) -> tuple[Run, CommModel | None] | None:
    """The run with FP32 gradient reductions, if it is on the ``maxtext`` stack."""
    if run.stack.name != "maxtext":
        return None
    return replace(run, stack=replace(run.stack, grad_reduce_bytes=4)), None


def summary(errors: dict[str, list[float]]) -> dict[str, tuple[int, float, float]]:
    """Per class (and ``all``): runs, MAPE %, median signed error %."""
    errors = dict(errors)
    errors["all"] = [e for v in errors.values() for e in v]
    out = {}
    for cls, errs in sorted(errors.items()):
        ok = [e for e in errs if e == e]
        out[cls] = (
            len(ok),
            100 * statistics.fmean(abs(e) for e in ok),
            100 * statistics.median(ok),
        )
    return out


Change = Callable[[Run], "tuple[Run, CommModel | None] | None"]


def whatif(name: str, runs: list[Run], change: Change) -> None:
    """Print the touched runs and the per-class figures before and after ``change``."""
    before: dict[str, list[float]] = defaultdict(list)
    after: dict[str, list[float]] = defaultdict(list)
    print(f"\nwhat-if {name}:")
    for run in runs:
        err = signed_error(run)
        changed = change(run)
        new = err if changed is None else signed_error(*changed)
        cls = predict_run(run).run_class
        before[cls].append(err)
        after[cls].append(new)
        if changed is not None:
            print(f"  {run.name:<48} {err * 100:+7.1f}% -> {new * 100:+7.1f}%")
    b, a = summary(before), summary(after)
    print(
        f"  {'class':<20} {'runs':>4} {'MAPE before':>11} {'after':>6} {'median before':>13} {'after':>6}"
    )
    for cls in b:
        print(
            f"  {cls:<20} {b[cls][0]:4d} {b[cls][1]:10.1f}% {a[cls][1]:5.1f}% "
            f"{b[cls][2]:+12.1f}% {a[cls][2]:+5.1f}%"
        )


def main() -> None:
    a3_allgather_busbw()
    whatif("fp32-reduce", development_runs(), fp32_reduce)


if __name__ == "__main__":
    main()
