"""MaxText HSDP on Google A3 (Llama 2 7B, 8-128 H100): the two named causes of the scaling
gap, each as a what-if on every development run it would touch.

Prints, first, the netsim model's bus bandwidth for the all-gather of dstack's published
two-VM A3 High nccl-tests log (16 ranks, 8 GiB, ``examples/clusters/a3high/README.md`` in
dstackai/dstack: 50.17 GB/s out of place) on the file's mapped network (four 200 Gb/s
ports per node), and the ratio of the published figure to it.

Then, per what-if, the signed error of every development run it touches, as predicted and
under the what-if, and the per-class MAPE and median signed error of all development runs
before and after:

* ``fp32-reduce``: every run on the ``maxtext`` stack reduces its gradients in FP32
  (``Stack.grad_reduce_bytes`` 4 instead of 2: the reduce-scatter inside the shard group
  and the HSDP all-reduce across the replicas).
* ``tcpx-rate``: every run on the A3 network (the rows of ``pub_maxtext_a3_hsdp.toml``)
  has every collective whose groups span more than one VM take its modelled time divided by
  the ratio printed first (TCPX at that fraction of the modelled rate, latency included).

    PYTHONPATH=$PWD/src:$PWD python benchmarks/a3_hsdp_whatif.py

Development rows only (never held-out).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Callable
from dataclasses import replace

import numpy as np

from clusterforge.perf.comm import Collective, CommModel
from validation.runs import Run, best_prediction, load_runs, predict_run, run_comm, run_design

A3_FILE = "pub_maxtext_a3_hsdp.toml"
# dstackai/dstack examples/clusters/a3high/README.md: all_gather_perf on two a3-highgpu-8g
# VMs (16 ranks) with GPUDirect-TCPX, 8 GiB out of place: algbw 53.52, busbw 50.17 GB/s.
DSTACK_A3HIGH_ALLGATHER_BYTES = 8_589_934_592
DSTACK_A3HIGH_ALLGATHER_BUSBW = 50.17e9


def development_runs() -> list[Run]:
    """Every development run, by file and name."""
    runs = [r for r in load_runs() if r.subset == "development"]
    return sorted(runs, key=lambda r: (r.file, r.name))


A3_GPUS_PER_VM = 8


class SlowerAcrossVms:
    """``base``'s times, divided by ``ratio`` for collectives whose groups span VMs."""

    def __init__(self, base: CommModel, ratio: float) -> None:
        self.base, self.ratio = base, ratio

    def collective_time_s(
        self, collective: Collective, size_bytes: float, groups: np.ndarray
    ) -> float:
        t = self.base.collective_time_s(collective, size_bytes, groups)
        vms = np.asarray(groups) // A3_GPUS_PER_VM
        spans = groups.size > 0 and bool((vms != vms[..., :1]).any())
        return t / self.ratio if spans else t


def signed_error(run: Run, comm: CommModel | None = None) -> float:
    """Predicted over published, minus one (``nan`` when nothing fits); with ``comm``, the
    fastest fitting candidate plan timed on it (as ``predict_run`` does on the run's own)."""
    pred = predict_run(run).prediction if comm is None else best_prediction(run, comm)
    if pred is None:
        return float("nan")
    return float(getattr(pred, run.metric)) / run.published - 1.0


def a3_allgather_ratio(runs: list[Run]) -> float:
    """Published busbw of dstack's 16-rank A3 High all-gather over the model's."""
    a3 = next(r for r in runs if r.file.endswith(A3_FILE) and r.base.layout.num_gpus >= 16)
    comm = run_comm(run_design(a3))
    groups = np.arange(16, dtype=np.int64).reshape(1, 16)
    t = comm.collective_time_s("all_gather", DSTACK_A3HIGH_ALLGATHER_BYTES, groups)
    model_busbw = DSTACK_A3HIGH_ALLGATHER_BYTES / t * 15 / 16
    print(
        f"A3 High all-gather, 16 ranks, 8 GiB: published {DSTACK_A3HIGH_ALLGATHER_BUSBW / 1e9:.2f}"
        f" GB/s, model {model_busbw / 1e9:.2f} GB/s, ratio "
        f"{DSTACK_A3HIGH_ALLGATHER_BUSBW / model_busbw:.3f}"
    )
    return DSTACK_A3HIGH_ALLGATHER_BUSBW / model_busbw


def fp32_reduce(run: Run) -> tuple[Run, CommModel | None] | None:
    """The run with FP32 gradient reductions, if it is on the ``maxtext`` stack."""
    if run.stack.name != "maxtext":
        return None
    return replace(run, stack=replace(run.stack, grad_reduce_bytes=4)), None


def tcpx_rate(ratio: float) -> Callable[[Run], tuple[Run, CommModel] | None]:
    """The A3 runs, timed with their cross-VM collectives at ``ratio`` of the model's rate."""

    def change(run: Run) -> tuple[Run, CommModel] | None:
        if not run.file.endswith(A3_FILE):
            return None
        return run, SlowerAcrossVms(run_comm(run_design(run)), ratio)

    return change


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


def both(ratio: float) -> Callable[[Run], tuple[Run, CommModel | None] | None]:
    """FP32 reductions on the ``maxtext`` stack, and the A3 runs' cross-VM rate too."""
    slow = tcpx_rate(ratio)

    def change(run: Run) -> tuple[Run, CommModel | None] | None:
        fp32 = fp32_reduce(run)
        if fp32 is None:
            return None
        tcpx = slow(run)
        return fp32 if tcpx is None else (fp32[0], tcpx[1])

    return change


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
    runs = development_runs()
    ratio = a3_allgather_ratio(runs)
    whatif("fp32-reduce", runs, fp32_reduce)
    whatif(f"tcpx-rate (x{ratio:.3f})", runs, tcpx_rate(ratio))
    whatif("both", runs, both(ratio))


if __name__ == "__main__":
    main()
