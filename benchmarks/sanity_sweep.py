"""Sanity sweep of ``predict`` over configurations no validation row covers.

Predicts a grid of GPUs x models x stacks x GPU counts x layouts through the same entry
point as ``validation/runs.py`` (``parse_spec`` -> ``design.plan`` -> ``design_comm`` ->
``predict_step``) and flags anomalies, each with its reason:

- ``mfu-ceiling``: model FLOPs above 0.75 of the dense BF16 peak (BF16) or 0.6 of the dense
  FP8 peak (FP8);
- ``mfu-floor``: below 0.05 of the BF16 peak while compute is most of the step (nothing in
  the breakdown explains it);
- ``weak-scaling``: tokens/s per GPU that grows when only the GPU count doubles (DP x 2,
  global batch x 2, the same micro-batch and number of micro-batches);
- ``monotone-time`` / ``monotone-memory``: step time or peak memory that does not grow with
  more layers, a longer sequence, or a larger micro-batch at the same number of
  micro-batches;
- ``neutral-flag``: a setting that cannot act on the plan (sequence parallelism at TP 1,
  the CP overlap at CP 1, the FP8 scaling recipe in BF16, TP comm overlap at TP 1, the MoE
  dispatcher on a dense model) that changes the step time or memory;
- ``non-finite``: a NaN, inf or negative part of the step or memory;
- ``exception``: anything other than :class:`~clusterforge.errors.PlanError` /
  ``SpecError`` (which are the clear refusals);
- ``fits-over-hbm``: a plan reported to fit with peak memory above the GPU's HBM;
- ``memory-grows``: peak memory that grows when the GPU count doubles at the same per-GPU
  work, or with a higher ZeRO stage;
- ``not-refused``: a plan no run could start (``sanity_grid.refusal_cases``: FP8 on a GPU
  without FP8 tensor cores, a global batch of 0, degrees that do not divide) that is priced
  instead of refused.

Flag classes the model produces by design are printed with the reason (``EXPECTED``); an
unexplained class prints ``UNEXPLAINED``. The grid is in ``benchmarks/sanity_grid.py``.

    python benchmarks/sanity_sweep.py [--quick] [--show N]
"""

from __future__ import annotations

import argparse
import math
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, replace

from benchmarks.sanity_grid import (
    FSDP_STACKS,
    GPU_COUNTS,
    MFU_BF16_CEILING,
    MFU_FLOOR,
    MFU_FP8_CEILING,
    TIME_TOL,
    Case,
    arch_of,
    base_cases,
    design_of,
    predict,
    refusal_cases,
    stack_of,
)
from rich.console import Console
from rich.progress import Progress

from clusterforge.catalog import ModelArch, load_catalog
from clusterforge.perf.step import Prediction


@dataclass(frozen=True)
class Flag:
    kind: str
    case: Case
    reason: str


def _parts(pred: Prediction) -> dict[str, float]:
    mem = vars(pred.memory)
    return {
        **vars(pred.breakdown),
        **{f"mem.{k}": v for k, v in mem.items()},
        "step_time_s": pred.step_time_s,
        "mfu": pred.mfu,
    }


def single_checks(case: Case, pred: Prediction) -> list[Flag]:
    """Ceilings, floor, non-finite parts and a fit above HBM on one prediction."""
    flags = []
    bad = {k: v for k, v in _parts(pred).items() if not math.isfinite(v) or v < 0}
    if bad:
        flags.append(Flag("non-finite", case, f"parts {bad}"))
    gpu = load_catalog().gpus[case.gpu]
    if case.precision == "fp8":
        share = pred.model_tflops_per_gpu / gpu.fp8_dense_tflops
        if share > MFU_FP8_CEILING:
            flags.append(Flag("mfu-ceiling", case, f"{share:.3f} of the FP8 dense peak"))
    elif pred.mfu > MFU_BF16_CEILING:
        flags.append(Flag("mfu-ceiling", case, f"MFU {pred.mfu:.3f} of the BF16 dense peak"))
    compute_share = pred.breakdown.compute_s / pred.step_time_s
    if pred.mfu < MFU_FLOOR and compute_share > 0.5:
        flags.append(
            Flag(
                "mfu-floor",
                case,
                f"MFU {pred.mfu:.3f} with compute {compute_share:.0%} of the step",
            )
        )
    if pred.fits and pred.memory.total_gib > gpu.hbm_gib:
        flags.append(
            Flag(
                "fits-over-hbm",
                case,
                f"{pred.memory.total_gib:.1f} GiB > HBM {gpu.hbm_gib} GiB, fits",
            )
        )
    return flags


# (name, how the case changes): step time and memory must both grow
MONOTONE = (
    ("more layers", lambda c: replace(c, extra_layers=c.pp * 4)),
    ("sequence x 2", lambda c: replace(c, seq=c.seq * 2)),
    ("micro-batch x 2", lambda c: replace(c, mb=c.mb * 2)),
)


def _neutral(case: Case, arch: ModelArch) -> list[tuple[str, Case]]:
    out = []
    if case.tp == 1:
        out.append(("sequence_parallel at TP 1", replace(case, sequence_parallel=False)))
        out.append(("tp_overlap at TP 1", replace(case, stack_changes=(("tp_overlap", True),))))
    if case.cp == 1:
        out.append(("cp_overlap at CP 1", replace(case, stack_changes=(("cp_overlap", False),))))
    if case.precision == "bf16":
        scaling = "delayed" if stack_of(case).fp8_scaling != "delayed" else "dynamic"
        out.append(
            ("fp8_scaling in BF16", replace(case, stack_changes=(("fp8_scaling", scaling),)))
        )
    if case.zero == 3:  # HSDP whose shard group is the whole DP x CP group = full sharding
        out.append(
            (
                "shard_size = DP x CP",
                replace(case, plan_changes=(("shard_size", case.dp * case.cp),)),
            )
        )
    layers = arch.num_layers
    if case.pp == 1:  # the one stage's layers stated, and all of them recomputed
        out.append(
            (
                "pipeline_layers stated",
                replace(case, plan_changes=(("pipeline_layers", (layers,)),)),
            )
        )
        if case.recompute == "full":
            out.append(
                (
                    "recompute_layers = all",
                    replace(case, plan_changes=(("recompute_layers", layers),)),
                )
            )
    if arch.num_experts == 1:
        out.append(
            (
                "moe_dispatcher on a dense model",
                replace(case, stack_changes=(("moe_dispatcher", "alltoall"),)),
            )
        )
    return out


def pair_checks(case: Case, pred: Prediction) -> list[Flag]:
    """Weak scaling, monotone time and memory, neutral flags against derived cases."""
    return _scaling_checks(case, pred) + _monotone_checks(case, pred) + _neutral_checks(case, pred)


def _scaling_checks(case: Case, pred: Prediction) -> list[Flag]:
    """Twice the GPUs at the same per-GPU work: tokens/s per GPU and memory must not grow."""
    if case.gpus * 2 > max(GPU_COUNTS):
        return []
    bigger = predict(replace(case, gpus=case.gpus * 2))
    if not isinstance(bigger, Prediction):
        return []
    flags = []
    grown = bigger.memory.total_gib - pred.memory.total_gib
    if grown > 1e-6:
        why = f"{case.gpus * 2} GPUs: memory {grown:+.3f} GiB ({_moved_mem(pred, bigger)})"
        flags.append(Flag("memory-grows", case, why))
    gain = bigger.tokens_per_s_per_gpu / pred.tokens_per_s_per_gpu - 1
    if gain > TIME_TOL:
        why = f"{case.gpus * 2} GPUs: tokens/s/GPU {gain:+.4%} ({_moved(pred, bigger)})"
        flags.append(Flag(_weak_scaling_kind(case, pred, bigger), case, why))
    return flags


def _monotone_checks(case: Case, pred: Prediction) -> list[Flag]:
    """More work must take longer and more memory; a higher ZeRO stage no more memory."""
    flags = []
    for name, change in MONOTONE:
        other = predict(change(case))
        if not isinstance(other, Prediction):
            continue
        dt = other.step_time_s / pred.step_time_s - 1
        if dt <= TIME_TOL:
            why = f"{name}: step {dt:+.4%} ({_moved(pred, other)})"
            flags.append(Flag("monotone-time", case, why))
        dm = other.memory.total_gib - pred.memory.total_gib
        if dm < -1e-6:
            why = f"{name}: memory {dm:+.3f} GiB ({_moved_mem(pred, other)})"
            flags.append(Flag("monotone-memory", case, why))
    if case.zero < 3:
        other = predict(replace(case, zero=case.zero + 1))
        if isinstance(other, Prediction):
            dm = other.memory.total_gib - pred.memory.total_gib
            if dm > 1e-6:
                why = f"ZeRO {case.zero + 1}: memory {dm:+.3f} GiB ({_moved_mem(pred, other)})"
                flags.append(Flag("memory-grows", case, why))
    return flags


def _neutral_checks(case: Case, pred: Prediction) -> list[Flag]:
    """A setting that cannot act on the plan must change neither time nor memory."""
    flags = []
    for name, other_case in _neutral(case, arch_of(case)):
        other = predict(other_case)
        if not isinstance(other, Prediction):
            flags.append(Flag("neutral-flag", case, f"{name}: {other[:160]}"))
            continue
        dt = other.step_time_s / pred.step_time_s - 1
        dm = other.memory.total_gib - pred.memory.total_gib
        if abs(dt) > TIME_TOL or abs(dm) > 1e-6:
            why = f"{name}: step {dt:+.4%}, memory {dm:+.3f} GiB ({_moved(pred, other)})"
            flags.append(Flag("neutral-flag", case, why))
    return flags


# flag classes the model produces by design, and why (docs/validation.md, "A sanity sweep")
EXPECTED = {
    "weak-scaling-zero": "not a bug: the DP-sharded work per GPU (optimizer step, ZeRO-3 FP8 "
    "casts and gradient copies) halves with DP, so the per-GPU work is not fixed",
    "weak-scaling-uneven-domain": "not a bug: a partial NVL72 rack; NCCL's tree of cliques "
    "over uneven domains is slower than the even split of the doubled count",
    "weak-scaling-bucket": "not a bug: Megatron-Core's bucket grows with DP past 40 "
    "(max(40 M, 1 M x DP)), so fewer serial expert-bucket gathers",
}
COMM_PARTS = ("tp_comm_s", "pp_comm_s", "dp_comm_s", "cp_comm_s", "ep_comm_s", "bubble_s")


def _weak_scaling_kind(case: Case, pred: Prediction, bigger: Prediction) -> str:
    """Why tokens/s per GPU grew when the GPU count doubled.

    ``weak-scaling-zero``: no communication part shrank (nor, outside ZeRO-3, the compute):
    the gain is work each GPU does on its shard of a DP-sharded state, which halves with DP
    (the optimizer step, FSDP's FP8 weight casts and gradient copies), so the per-GPU work is
    not fixed. ``weak-scaling-uneven-domain``: a GPU count that is not a whole number of
    NVLink domains (NVL72 racks), where NCCL runs its tree of cliques over domains holding
    different numbers of the group's GPUs (``netsim/domains.py`` ``uneven_split``).
    ``weak-scaling-bucket``: a MoE model on a Megatron stack past DP 40, where Megatron-Core's
    bucket grows with DP (``max(40 M, 1 M x DP)`` parameters) and the expert linears wait on
    fewer serial bucket gathers (``perf/param_gather.py``). ``weak-scaling``: anything else.
    """
    comm_a = sum(getattr(pred.breakdown, k) for k in COMM_PARTS)
    comm_b = sum(getattr(bigger.breakdown, k) for k in COMM_PARTS)
    compute_shrank = bigger.breakdown.compute_s < pred.breakdown.compute_s * (1 - TIME_TOL)
    if comm_b >= comm_a * (1 - TIME_TOL) and (case.zero == 3 or not compute_shrank):
        return "weak-scaling-zero"
    if case.gpus % design_of(case.gpu, case.gpus)[0].compute.nvlink_domain_gpus:
        return "weak-scaling-uneven-domain"
    moe = load_catalog().models[case.model].num_experts > 1
    if moe and case.stack not in FSDP_STACKS and case.zero < 3 and case.dp * 2 > 40:
        return "weak-scaling-bucket"
    return "weak-scaling"


def _moved(a: Prediction, b: Prediction) -> str:
    """The breakdown parts that moved most between two predictions."""
    da, db = vars(a.breakdown), vars(b.breakdown)
    diffs = sorted(((db[k] - da[k], k) for k in da), key=lambda t: -abs(t[0]))[:2]
    return ", ".join(f"{k} {d * 1e3:+.2f} ms" for d, k in diffs if d)


def _moved_mem(a: Prediction, b: Prediction) -> str:
    da, db = vars(a.memory), vars(b.memory)
    return ", ".join(f"{k} {db[k] - da[k]:+.2f}" for k in da if abs(db[k] - da[k]) > 1e-6)


def refusal_checks() -> list[Flag]:
    flags = []
    for name, case in refusal_cases():
        result = predict(case)
        if isinstance(result, Prediction):
            flags.append(Flag("not-refused", case, f"{name}: predicted MFU {result.mfu:.3f}"))
        elif result.startswith("exception"):
            flags.append(Flag("exception", case, f"{name}: {result}"))
    return flags


def sweep(cases: list[Case], console: Console) -> tuple[list[Flag], Counter[str]]:
    flags: list[Flag] = []
    tally: Counter[str] = Counter()
    with Progress(console=console, transient=True) as progress:
        task = progress.add_task("predicting", total=len(cases))
        for case in cases:
            pred = predict(case)
            if isinstance(pred, Prediction):
                tally["predicted"] += 1
                flags += single_checks(case, pred) + pair_checks(case, pred)
            elif pred.startswith("exception"):
                tally["exception"] += 1
                flags.append(Flag("exception", case, pred))
            else:
                tally["refused"] += 1
            progress.advance(task)
    return flags, tally


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="every other GPU count")
    parser.add_argument("--show", type=int, default=4, help="examples printed per class")
    args = parser.parse_args()
    console = Console(width=240)
    start = time.perf_counter()
    cases = base_cases(args.quick)
    flags, tally = sweep(cases, console)
    flags += refusal_checks()
    tally["refusal probes"] = len(refusal_cases())
    by_kind: dict[str, list[Flag]] = defaultdict(list)
    for flag in flags:
        by_kind[flag.kind].append(flag)
    console.print(f"{len(cases)} grid points: {dict(tally)}; {time.perf_counter() - start:.0f} s")
    for kind, items in sorted(by_kind.items()):
        console.print(f"[bold]{kind}[/bold]: {len(items)} flags")
        console.print(f"  {EXPECTED.get(kind, 'UNEXPLAINED: investigate')}", highlight=False)
        reasons = Counter(f.reason.split(":")[0] for f in items)
        console.print(f"  by change: {dict(reasons.most_common(6))}")
        for flag in items[: args.show]:
            console.print(f"  {flag.case.label()}\n    {flag.reason}", highlight=False)
    if not flags:
        console.print("no anomalies")


if __name__ == "__main__":
    main()
