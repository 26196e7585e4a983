"""What the optimistic MoE rows share: the residual per layer and micro-batch against the rows'
features, their dense twins, and one candidate common to the many-local-expert rows.

Part 1 prints, for every calibration and development run with experts (the calibration set has
none today), what the published throughput leaves beyond the predicted step per layer and
micro-batch of the slowest stage (``gap ms``) and as a share of the predicted layer (``gap %``,
:func:`benchmarks.moe_layer_breakdown.layer_split`), beside the features a common cause would
track: GPU, stack, precision, dispatcher, EP overlap, CUDA-graph scopes, recompute, TP, EP (``*``
when the EP x TP x CP group spans more than one NVLink domain), expert-data-parallel copies,
local experts, routed rows per local expert and micro-batch (``m``), hidden, expert FFN, top-k.
``twin``: the median error of the dense development runs of the same stack on the same system
(``n``), ``rel``: the same, restricted to the MoE run's own release (run-name prefix), where it
has any; ``moe - twin``: what is left for the expert layer.

Part 2 collapses runs of one configuration (model, system, plan, stack fields) into one, so
the five gpt-oss releases on one system do not count five times, and prints Spearman's rank
correlation of ``gap %`` with each feature over those configurations (Megatron-Core-based
stacks; the two AutoModel runs are pessimistic and left out).

Part 3 tests the candidate that the strongest association (more local experts, larger share)
suggests: Transformer Engine's ``GroupedLinear`` runs one cuBLAS GEMM per local expert over four
streams (``multi_stream_cublas_gemm``), and the model times each round of four as one batched
wave count (:func:`clusterforge.perf.moe.grouped_gemm_time_s`). If the concurrent kernels did
not share their waves, each GEMM would pay its own wave and tile quantisation (``streams 1``).
It first prices both against the published multi-stream rates of Transformer Engine pull
request 2045 (H100, BF16, TE 2.7, CUDA 12.9, ``general_grouped_gemm`` at Qwen3-30B-A3B's
shapes), then prints what the candidate would do to every MoE run and to each set and class.

    PYTHONPATH=$PWD/src:$PWD python benchmarks/moe_common_residual.py

Calibration and development runs only (never held-out).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

from benchmarks.moe_layer_breakdown import layer_split

import clusterforge.perf.moe as moe
import validation.runs as runs_module
from clusterforge.catalog import load_catalog
from clusterforge.perf.flops import ffn_size
from clusterforge.perf.parallel import num_micro_batches, tokens_per_gpu
from clusterforge.perf.roofline import gpu_perf
from validation.gemm_rows import microbenchmark_share
from validation.runs import Run, load_runs, predict_run, run_design

SETS = ("calibration", "development")
# NVIDIA/TransformerEngine pull request 2045 ("Add Cutlass GroupGEMM Support for fine-grained
# MoE Model", merged for 2.8.0), the table "Benchmark the performance of general_grouped_gemm
# with TE 2.7 and CUDA 12.9", multi-stream cuBLAS column, H100; harness
# tests/pytorch/test_group_gemm.py (g GEMMs of m x k by k x n, 2 m n k FLOPs each, mean of 1,000
# back-to-back calls after 10 warm-ups). (g, m, n, k, TFLOP/s); the TE 2.2 column of the same
# pull request (508.77 and 398.81) is older than every run here.
TE_PR2045_MULTISTREAM = ((8, 4096, 768, 2048, 627.903), (16, 2048, 768, 2048, 553.945))


@dataclass(frozen=True)
class Row:
    """One MoE run's residual and features."""

    run: Run
    error: float  # predicted / published - 1
    gap_ms: float
    layer_ms: float
    rows_per_expert: float
    local_experts: int
    edp: int
    spans_domains: bool

    @property
    def gap_share(self) -> float:
        return self.gap_ms / self.layer_ms


def moe_row(run: Run) -> Row | None:
    """The run's residual per layer and micro-batch and its features (None if it does not fit)."""
    outcome = predict_run(run)
    pred = outcome.prediction
    if pred is None:
        return None
    plan, arch = pred.plan, run.arch
    layout = plan.layout
    published_step = pred.step_time_s * outcome.predicted / run.published
    per_layer = num_micro_batches(plan) * max(pred.stage_layers)
    domain = run_design(run).compute.nvlink_domain_gpus
    return Row(
        run=run,
        error=outcome.predicted / run.published - 1.0,
        gap_ms=(published_step - pred.step_time_s) / per_layer * 1e3,
        layer_ms=layer_split(run, pred).total_ms,
        rows_per_expert=tokens_per_gpu(plan) * arch.top_k * layout.ep / arch.num_experts,
        local_experts=arch.num_experts // layout.ep,
        edp=max(1, layout.dp * layout.cp // layout.ep),
        spans_domains=layout.ep * layout.tp * layout.cp > domain,
    )


def release(name: str) -> str:
    """The release part of a run name: ``bridge2511`` of ``bridge2511-gb300-...``."""
    return name.removeprefix("pub-").split("-")[0]


def dense_twins(rows: Iterable[Run]) -> dict[tuple[str, str], list[tuple[str, float]]]:
    """(stack, system) -> [(release, error)] of the dense development runs."""
    twins: dict[tuple[str, str], list[tuple[str, float]]] = defaultdict(list)
    for run in rows:
        if run.subset != "development" or run.arch.num_experts > 1:
            continue
        outcome = predict_run(run)
        if outcome.prediction is not None:
            twins[(run.stack.name, run.node)].append(
                (release(run.name), outcome.predicted / run.published - 1.0)
            )
    return twins


def median_or_nan(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def print_rows(rows: list[Row], twins: dict[tuple[str, str], list[tuple[str, float]]]) -> None:
    print(
        f"{'run':36s} {'system':9s} {'stack':8s} {'prec':4s} {'disp':5s} ov gr {'rc':4s} tp"
        f" {'ep':>3s} edp loc {'m':>6s} {'h':>5s} {'f':>6s} k {'error':>7s} {'twin (n)':>12s}"
        f" {'rel':>6s} {'moe-twin':>8s} {'gap ms':>6s} {'gap %':>6s}"
    )
    for r in rows:
        run, stack = r.run, r.run.stack
        pool = twins.get((stack.name, run.node), [])
        twin = median_or_nan([e for _, e in pool])
        same = median_or_nan([e for rel, e in pool if rel == release(run.name)])
        plan = predict_run(run).prediction
        assert plan is not None
        print(
            f"{run.name[:36]:36s} {run.node[:9]:9s} {stack.name[:8]:8s}"
            f" {plan.plan.precision:4s} {stack.moe_dispatcher[:5]:5s}"
            f" {int(stack.moe_a2a_overlap):2d} {len(stack.cuda_graph_modules):2d}"
            f" {plan.plan.recompute[:4]:4s} {plan.plan.layout.tp:2d}"
            f" {plan.plan.layout.ep:2d}{'*' if r.spans_domains else ' '} {r.edp:3d}"
            f" {r.local_experts:3d} {r.rows_per_expert:6.0f} {run.arch.hidden_size:5d}"
            f" {ffn_size(run.arch):6d} {run.arch.top_k} {r.error:+7.1%}"
            f" {twin:+7.1%} ({len(pool):2d}) {same:+6.1%} {r.error - twin:+8.1%}"
            f" {r.gap_ms:6.2f} {r.gap_share:+6.1%}"
        )


FEATURES: dict[str, Callable[[Row], float]] = {
    "rows per local expert": lambda r: r.rows_per_expert,
    "experts": lambda r: float(r.run.arch.num_experts),
    "local experts": lambda r: float(r.local_experts),
    "EP degree": lambda r: float(r.run.base.layout.ep),
    "EP spans NVLink domains": lambda r: float(r.spans_domains),
    "expert-data-parallel copies": lambda r: float(r.edp),
    "hidden": lambda r: float(r.run.arch.hidden_size),
    "expert FFN": lambda r: float(ffn_size(r.run.arch)),
    "top-k": lambda r: float(r.run.arch.top_k),
    "FP8": lambda r: float(r.run.base.precision == "fp8"),
    "Hopper": lambda r: float(r.run.node.startswith("dgx-h")),
    "flex dispatcher": lambda r: float(r.run.stack.moe_dispatcher != "alltoall"),
    "EP overlap": lambda r: float(r.run.stack.moe_a2a_overlap),
    "CUDA graphs": lambda r: float(bool(r.run.stack.cuda_graph_modules)),
}


def spearman(xs: list[float], ys: list[float]) -> float:
    """Spearman's rho (average ranks for ties); nan when either side is constant."""

    def ranks(values: list[float]) -> list[float]:
        order = sorted(range(len(values)), key=values.__getitem__)
        out = [0.0] * len(values)
        i = 0
        while i < len(order):
            j = i
            while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
                j += 1
            for t in range(i, j + 1):
                out[order[t]] = (i + j) / 2.0
            i = j + 1
        return out

    rx, ry = ranks(xs), ranks(ys)
    mx, my = statistics.fmean(rx), statistics.fmean(ry)
    sxy = sum((a - mx) * (b - my) for a, b in zip(rx, ry, strict=True))
    sxx = sum((a - mx) ** 2 for a in rx)
    syy = sum((b - my) ** 2 for b in ry)
    return sxy / (sxx * syy) ** 0.5 if sxx > 0 and syy > 0 else float("nan")


def configurations(rows: list[Row]) -> list[Row]:
    """One row per configuration (model, system, plan and stack fields), the median-gap one."""
    groups: dict[tuple[object, ...], list[Row]] = defaultdict(list)
    for r in rows:
        run = r.run
        if run.stack.name == "automodel":
            continue
        key = (run.arch.name, run.node, run.base, run.stack)
        groups[key].append(r)
    return [sorted(g, key=lambda r: r.gap_share)[len(g) // 2] for g in groups.values()]


def twin_excess(r: Row, twins: dict[tuple[str, str], list[tuple[str, float]]]) -> float:
    """The run's error less the median error of its stack's dense runs on its system."""
    pool = twins.get((r.run.stack.name, r.run.node), [])
    return r.error - median_or_nan([e for _, e in pool])


def print_correlations(
    rows: list[Row], twins: dict[tuple[str, str], list[tuple[str, float]]]
) -> None:
    configs = configurations(rows)
    shares = [r.gap_share for r in configs]
    paired = [(r, twin_excess(r, twins)) for r in configs]
    paired = [(r, x) for r, x in paired if x == x]  # a dense twin exists
    print(
        f"\nSpearman rho over {len(configs)} configurations: of gap % with each feature; of"
        f" moe - twin ({len(paired)} with a twin)"
    )
    for name, feature in FEATURES.items():
        rho = spearman([feature(r) for r in configs], shares)
        rho_twin = spearman([feature(r) for r, _ in paired], [x for _, x in paired])
        print(f"  {name:28s} {rho:+.2f}  {rho_twin:+.2f}")


def check_against_pr2045() -> None:
    """The model's multi-stream grouped GEMM rates, rounds batched (4) or serial (1), against
    the measured ones, at the H100's lone-kernel (microbenchmark) share."""
    perf = gpu_perf(load_catalog().gpus["h100-sxm"], "bf16")
    lone = replace(perf, gemm_efficiency=microbenchmark_share("h100-sxm"))
    print("\nTE pull request 2045, H100 BF16 multi-stream cuBLAS, TFLOP/s (measured / model):")
    saved = moe.TE_GROUPED_GEMM_STREAMS
    try:
        for g, m, n, k, measured in TE_PR2045_MULTISTREAM:
            cells = []
            for streams in (4, 1):
                moe.TE_GROUPED_GEMM_STREAMS = streams
                rate = 2.0 * g * m * n * k / moe.grouped_gemm_time_s(m, n, k, lone, g) / 1e12
                cells.append(f"streams {streams}: {rate:6.1f} ({measured / rate:.2f})")
            print(f"  g {g:2d} m {m:5d} n {n} k {k}  measured {measured:6.1f}  " + "  ".join(cells))
    finally:
        moe.TE_GROUPED_GEMM_STREAMS = saved


def scores() -> dict[str, tuple[str, str, float]]:
    """name -> (set, class, error) of every calibration and development run that fits."""
    out: dict[str, tuple[str, str, float]] = {}
    for run in load_runs():
        if run.subset not in SETS:
            continue
        outcome = predict_run(run)
        if outcome.prediction is not None:
            err = outcome.predicted / run.published - 1.0
            out[run.name] = (run.subset, outcome.run_class, err)
    return out


def summary(table: dict[str, tuple[str, str, float]], subset: str) -> str:
    errs = [e for s, _, e in table.values() if s == subset]
    by_class: dict[str, list[float]] = defaultdict(list)
    for s, c, e in table.values():
        if s == subset:
            by_class[c].append(abs(e))
    classes = ", ".join(f"{c} {100 * statistics.fmean(v):.1f}" for c, v in sorted(by_class.items()))
    mape = 100 * statistics.fmean(abs(e) for e in errs)
    return f"MAPE {mape:.1f} %, median {100 * statistics.median(errs):+.1f} % ({classes})"


def candidate_effect() -> None:
    """Every MoE run and each set's MAPE with the rounds serial (streams 1) against today."""
    before = scores()
    saved = moe.TE_GROUPED_GEMM_STREAMS
    moe.TE_GROUPED_GEMM_STREAMS = 1
    runs_module.predict_run.cache_clear()
    try:
        after = scores()
    finally:
        moe.TE_GROUPED_GEMM_STREAMS = saved
        runs_module.predict_run.cache_clear()
    print("\ncandidate: one GEMM per round (streams 1); MoE runs, error before -> after:")
    for name, (_, cls, err) in before.items():
        if cls == "moe":
            print(f"  {name:40s} {err:+7.1%} -> {after[name][2]:+7.1%}")
    moved = [n for n in before if abs(after[n][2] - before[n][2]) > 5e-4 and before[n][1] != "moe"]
    print(f"  runs of other classes moved: {len(moved)}")
    for subset in SETS:
        print(f"  {subset:11s} before: {summary(before, subset)}")
        print(f"  {subset:11s} after:  {summary(after, subset)}")


def main() -> None:
    all_runs = load_runs()
    rows = [
        r
        for run in all_runs
        if run.subset in SETS and run.arch.num_experts > 1
        for r in [moe_row(run)]
        if r is not None
    ]
    twins = dense_twins(all_runs)
    print_rows(rows, twins)
    print_correlations(rows, twins)
    check_against_pr2045()
    candidate_effect()


if __name__ == "__main__":
    main()
