"""Why the vTrain 39.1B rows at TP 2 miss while their same-work neighbours do not.

vTrain's 39.1B sweep (``validation/vtrain_a100_sweep.toml``: Megatron-DeepSpeed on 512 A100s,
``data/ground_truth_multi.csv`` of VIA-Research/vTrain at f8dda84) has six TP 2 rows that the
model predicts 10-47 % faster than measured, while the TP 1, TP 4 and TP 8 rows of the sweep
sit at -12..+15 %. The script tests, from the published iteration times alone, each candidate
cause against rows that share it but not TP 2:

1. **Same-work groups.** Rows of the sweep with the same data-parallel degree and micro-batch
   share the model-parallel size ``tp x pp`` (512 / DP): the same parameters per GPU (so the
   same model-state memory and FP16 gradient all-reduce per GPU, over the same DP group
   size), the same micro-batches per step and the same layer FLOPs per GPU; only the split of
   the model-parallel ranks between TP and PP differs.
2. **Candidates.** For each TP 2 row, the row of another TP degree with (a) the same
   parameters per GPU and DP (the data-parallel all-reduce), (b) the same PP degree and
   micro-batch (the pipeline sends and bubble); and (c) the 2-GPU all-reduce time vTrain
   measured on the same A100 nodes at the row's TP all-reduce size, against what each of the
   six TP all-reduces of a layer and micro-batch would need to take to close the gap; (d)
   the model's memory per GPU of the row and of its two twins (a row near the 80 GB of an
   A100 could pay allocator retries).
3. **What if the gap lay outside the model**: the development MAPE, overall and per class,
   as predicted and without the six rows (the most any mechanism confined to them could move
   it).

Only calibration and development rows are read; held-out rows are skipped.

    PYTHONPATH=$PWD/src:$PWD python benchmarks/vtrain_tp2_whatif.py
"""

from __future__ import annotations

import statistics
from collections import defaultdict

from benchmarks.vtrain_small_twins import SweepRow, sweep_rows

from validation.runs import Outcome, load_runs, predict_run

SWEEP = "vtrain-39.1b-512gpu"
BAND_SETS = ("calibration", "development")
# TP all-reduces per layer and micro-batch with full recomputation (Megatron's
# RowParallelLinear after attention and after the MLP: forward, recomputed forward, and the
# ColumnParallelLinear input-gradient all-reduces of the backward).
TP_ALLREDUCES_PER_LAYER = 6
# vTrain's nccl-tests table of a 2-GPU all-reduce on its A100 nodes, out-of-place time (ns)
# by message bytes: VIA-Research/vTrain@f8dda84:trace/a100/AR_GPU2_1M_1024M_LUT, rows
# 67108864, 100663296 and 201326592 (the FP16 layer output of micro-batch 2, 3 and 6 at
# hidden 8,192 and sequence 2,048).
VTRAIN_AR2_NS = {67_108_864: 404_700, 100_663_296: 572_000, 201_326_592: 1_104_700}


def params_per_gpu(row: SweepRow) -> float:
    """Transformer-layer parameters on one GPU (12 h^2 + 13 h per layer; embeddings left out)."""
    h = row.hidden
    return row.layers * (12 * h * h + 13 * h) / (row.tp * row.pp)


def excess_per_slot_ms(row: SweepRow) -> float:
    """Published minus predicted step per layer and micro-batch slot of one stage (the
    micro-batches plus the pipeline's fill and drain, ``m + pp - 1``)."""
    slots = (row.micro_batches + row.pp - 1) * row.layers / row.pp
    return 1e3 * (row.published_step_s - row.predicted_step_s) / slots


def tp_allreduce_bytes(row: SweepRow) -> int:
    """Bytes of one TP all-reduce: the FP16 layer output of one micro-batch."""
    return row.micro_batch * 2048 * row.hidden * 2


def same_work_groups(rows: list[SweepRow]) -> dict[tuple[int, int], list[SweepRow]]:
    """Rows of :data:`SWEEP` by (DP, micro-batch), each group sorted by TP."""
    groups: dict[tuple[int, int], list[SweepRow]] = defaultdict(list)
    for r in rows:
        if r.sweep == SWEEP:
            groups[(r.dp, r.micro_batch)].append(r)
    return {k: sorted(v, key=lambda r: r.tp) for k, v in sorted(groups.items()) if len(v) > 1}


def dp_twin(row: SweepRow, rows: list[SweepRow]) -> SweepRow | None:
    """A row of another TP degree with the same DP, micro-batch and parameters per GPU."""
    same = [
        r
        for r in rows
        if r.sweep == row.sweep
        and r.tp != row.tp
        and r.dp == row.dp
        and r.micro_batch == row.micro_batch
    ]
    return min(same, key=lambda r: abs(r.tp - row.tp), default=None)


def pp_twin(row: SweepRow, rows: list[SweepRow]) -> SweepRow | None:
    """A row of another TP degree with the same PP degree and micro-batch."""
    same = [
        r
        for r in rows
        if r.sweep == row.sweep
        and r.tp != row.tp
        and r.pp == row.pp
        and r.micro_batch == row.micro_batch
    ]
    return min(same, key=lambda r: abs(r.tp - row.tp), default=None)


def memory_gib(names: set[str]) -> dict[str, float]:
    """The model's memory per GPU (GiB) of the named rows' chosen plans."""
    out = {}
    for run in load_runs():
        if run.name in names:
            prediction = predict_run(run).prediction
            if prediction is not None:
                out[run.name] = prediction.memory.total_gib
    return out


def tp2_rows(rows: list[SweepRow]) -> list[SweepRow]:
    """The TP 2 rows of :data:`SWEEP`, by PP and micro-batch."""
    return sorted(
        (r for r in rows if r.sweep == SWEEP and r.tp == 2), key=lambda r: (r.pp, r.micro_batch)
    )


def _print_groups(rows: list[SweepRow]) -> None:
    print(f"{SWEEP}: rows of one DP degree and micro-batch (same parameters per GPU, same")
    print("micro-batches per step); step seconds published / predicted and the throughput error")
    for (dp, mb), group in same_work_groups(rows).items():
        cells = [
            f"TP{r.tp} PP{r.pp} {r.published_step_s:6.2f}/{r.predicted_step_s:6.2f} "
            f"{100 * r.error:+5.1f}%"
            for r in group
        ]
        print(
            f"  DP{dp:<2d} mb{mb:<2d} {params_per_gpu(group[0]) / 1e9:4.2f} B/GPU  "
            + "   ".join(cells)
        )


def _short(row: SweepRow) -> str:
    return row.name.removeprefix("vtrain-39.1b-")


def _twin_cell(twin: SweepRow | None, memory: dict[str, float]) -> str:
    if twin is None:
        return f"{'-':>30s}"
    return f"{_short(twin):>14s} {100 * twin.error:+6.1f}% {memory[twin.name]:4.0f} GiB"


def _print_candidates(rows: list[SweepRow]) -> None:
    tp2 = tp2_rows(rows)
    twins = [t for r in tp2 for t in (dp_twin(r, rows), pp_twin(r, rows)) if t is not None]
    memory = memory_gib({r.name for r in tp2 + twins})
    print("\nTP 2 rows against the candidate causes (throughput errors; model memory per GPU)")
    print(
        f"  {'row':12s} {'error':>7s} {'memory':>8s} {'excess ms/slot':>14s} "
        f"{'DP twin (same B/GPU, DP)':>30s} {'PP twin (same PP, mb)':>30s} {'AR2 us need/vTrain':>18s}"
    )
    for r in tp2:
        excess = excess_per_slot_ms(r)
        need_us = 1e3 * excess / TP_ALLREDUCES_PER_LAYER
        measured_us = VTRAIN_AR2_NS[tp_allreduce_bytes(r)] / 1e3
        print(
            f"  {_short(r):12s} {100 * r.error:+6.1f}% {memory[r.name]:4.0f} GiB {excess:14.2f} "
            f"{_twin_cell(dp_twin(r, rows), memory)} {_twin_cell(pp_twin(r, rows), memory)} "
            f"{'+' + format(need_us, '.0f'):>9s}/{measured_us:5.0f}"
        )
    print("  (AR2: extra microseconds each TP all-reduce would need on top of the model's price,")
    print("   and vTrain's measured 2-GPU all-reduce time of that size on the same nodes)")


def _mape_lines(outcomes: list[Outcome], label: str) -> None:
    for subset in BAND_SETS:
        chosen = [o for o in outcomes if o.run.subset == subset and o.prediction is not None]
        by_class: dict[str, list[float]] = defaultdict(list)
        for o in chosen:
            by_class[o.run_class].append(abs(o.error))
        overall = statistics.fmean(abs(o.error) for o in chosen)
        parts = "; ".join(
            f"{k} {len(v)} {100 * statistics.fmean(v):.1f} %" for k, v in sorted(by_class.items())
        )
        print(
            f"  {label:26s} {subset:11s} {len(chosen):3d} runs MAPE {100 * overall:4.1f} %  {parts}"
        )


def _print_mape(rows: list[SweepRow]) -> None:
    names = {r.name for r in tp2_rows(rows)}
    outcomes = [predict_run(r) for r in load_runs() if r.subset in BAND_SETS]
    print("\nwhat if the TP 2 gap lay outside the model (the six rows left out)")
    _mape_lines(outcomes, "as predicted")
    _mape_lines([o for o in outcomes if o.run.name not in names], "without the six TP 2 rows")


def main() -> None:
    rows = sweep_rows()
    _print_groups(rows)
    _print_candidates(rows)
    _print_mape(rows)


if __name__ == "__main__":
    main()
