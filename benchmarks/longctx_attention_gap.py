"""How the long-context development gaps scale: with attention's work, or with tokens.

For each named run (default: the long-context development runs of NeMo and torchtitan with a
small model next to their large-model siblings; a held-out name is refused), prints one
layer's modelled attention seconds per micro-batch (forward, backward and recomputed
forward, context-parallel passes included), its other compute, and the gap the published
throughput leaves per layer and micro-batch (bubble slots counted, as
``benchmarks/step_breakdown.py``), then the gap as a share of the attention time, per
10^9 query-key pairs per head scored on the GPU (``s^2 / (2 cp)`` pairs per sequence times
the query heads per GPU) and per thousand tokens on the GPU. A cost of the attention kernel
keeps the first two columns flat over sequence lengths; a per-token cost keeps the last.
``--without-cp`` adds the same NeMo source's published B200 8B points without context
parallelism (8K, 16K), which no validation file holds, as probes. ``--recompute`` prints, per
run, the signed error of its chosen plan under each activation recomputation the row allows
(forced, whether or not a lesser one fits) and the activation memory each leaves.

    PYTHONPATH=$PWD/src:$PWD python benchmarks/longctx_attention_gap.py [RUN ...]
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, replace

from benchmarks.step_breakdown import selected_runs

from clusterforge.job import JobLayout
from clusterforge.perf.compute import LayerTimes, layer_times
from clusterforge.perf.parallel import ParallelPlan, num_micro_batches, tokens_per_gpu
from clusterforge.perf.predict import predict_step
from clusterforge.perf.roofline import gpu_perf
from validation.runs import Run, predict_run, run_comm, run_design

DEFAULT_RUNS = [
    "nemo2504-longctx-llama3-8b-32k",
    "nemo2504-longctx-llama3-8b-128k",
    "nemo2504-longctx-llama3-8b-512k",
    "nemo2403-longctx-llama2-7b-32k",
    "nemo2403-longctx-llama2-7b-128k",
    "nemo2403-longctx-llama2-7b-512k",
    "pub-nemofw2502-b200-llama3-70b",
    "pub-nemofw2504-gb200-llama3-405b",
    "pub-tt-h100-8b-32k-fsdp8-cp1",
    "pub-tt-h100-8b-128k-fsdp2-cp4",
    "pub-tt-h100-405b-32k-fsdp8-cp1",
    "pub-tt-h100-405b-128k-fsdp2-cp4",
]

HEADER = (
    f"{'run':36s} {'err':>6s} {'attn ms':>8s} {'other ms':>8s} {'gap ms':>8s} "
    f"{'gap/attn':>8s} {'ms/Gpair':>8s} {'ms/ktok':>8s}"
)


@dataclass(frozen=True)
class GapSplit:
    """One layer and micro-batch of a run on one GPU, in milliseconds, with the work it holds."""

    error: float  # signed error of the predicted throughput
    attention_ms: float  # forward, backward and recomputed forward of the attention core
    other_ms: float  # the rest of the layer's compute
    gap_ms: float  # what the published throughput leaves, per layer and micro-batch
    pair_heads: float  # query-key pairs scored per query head, times the heads per GPU
    tokens: float  # tokens of the micro-batch on the GPU


def gap_split(run: Run) -> GapSplit | None:
    """The modelled layer split and the published gap of ``run`` (None when no plan fits)."""
    outcome = predict_run(run)
    pred = outcome.prediction
    if pred is None:
        return None
    plan = pred.plan
    job = plan.layout
    times = _layer(run, plan)
    recomputed = times.attention_forward_s if plan.recompute == "full" else 0.0
    attention = times.attention_forward_s + times.attention_backward_s + recomputed
    published_step = pred.step_time_s * outcome.predicted / run.published
    slots = num_micro_batches(plan) + (job.pp - 1) / job.vpp
    gap = (published_step - pred.step_time_s) / (slots * max(pred.stage_layers))
    pairs = plan.micro_batch * plan.seq_length**2 / (2 * job.cp)
    return GapSplit(
        error=outcome.error,
        attention_ms=attention * 1e3,
        other_ms=(times.total_s - attention) * 1e3,
        gap_ms=gap * 1e3,
        pair_heads=pairs * run.arch.num_heads / job.tp,
        tokens=tokens_per_gpu(plan),
    )


def _layer(run: Run, plan: ParallelPlan) -> LayerTimes:
    """One layer's modelled compute times for ``run`` under ``plan``."""
    gpu = run_design(run).compute.gpu
    if run.gpu:
        gpu = gpu.model_copy(update=dict(run.gpu))
    return layer_times(run.arch, plan, gpu_perf(gpu, plan.precision), run.stack)


def describe(run: Run) -> str:
    """One line: the modelled layer split and the gap per layer and micro-batch."""
    split = gap_split(run)
    if split is None:
        return f"{run.name:36s} no plan fits"
    return (
        f"{run.name:36s} {split.error * 100:+5.1f}% {split.attention_ms:8.2f} "
        f"{split.other_ms:8.2f} {split.gap_ms:+8.2f} "
        f"{split.gap_ms / split.attention_ms * 100:+7.1f}% "
        f"{split.gap_ms / (split.pair_heads / 1e9):+8.3f} "
        f"{split.gap_ms / (split.tokens / 1e3):+8.3f}"
    )


# The same source's points without context parallelism, which no validation file holds (its
# rows are the CP > 1 ones): NVIDIA/NeMo docs/source/performance/performance_long_sequence.md
# at 14d427f575, "LLAMA3-8B (FP8) - B200" (NeMo 25.04.rc2): 8K on 2 GPUs, batch 512, and 16K
# on 4 GPUs, batch 256, both TP 1, CP 1, DP = GPUs; 1,671 and 1,717 TFLOPS / GPU. Probed on
# one 8-GPU node (the catalog's node), the batch scaled to keep each GPU's micro-batches.
NEMO_2504_WITHOUT_CP = ((8192, 2, 512, 1671.0), (16384, 4, 256, 1717.0))
NEMO_2504_CP_ROW = "nemo2504-longctx-llama3-8b-32k"


def without_cp_probes() -> list[Run]:
    """The published NeMo 25.04 B200 8B points without CP, as runs built from the 32K CP 2
    development row's settings (:data:`NEMO_2504_WITHOUT_CP`)."""
    (row,) = selected_runs([NEMO_2504_CP_ROW])
    node_gpus = row.base.layout.num_gpus
    probes = []
    for seq, gpus, batch, published in NEMO_2504_WITHOUT_CP:
        job = JobLayout.for_gpus(node_gpus, tp=1, pp=1, cp=1, ep=1)
        plan = replace(row.base, layout=job, seq_length=seq, global_batch=batch * node_gpus // gpus)
        name = f"nemo2504-8b-{seq // 1024}k-without-cp (probe)"
        probes.append(replace(row, base=plan, published=published, name=name))
    return probes


def recompute_errors(run: Run) -> dict[str, tuple[float, float]]:
    """Per recomputation the row allows: (signed error, activation GiB) of the chosen plan
    with that recomputation forced; empty when no plan fits."""
    pred = predict_run(run).prediction
    if pred is None:
        return {}
    design = run_design(run)
    gpu = design.compute.gpu
    if run.gpu:
        gpu = gpu.model_copy(update=dict(run.gpu))
    out = {}
    for recompute in run.recompute:
        forced = predict_step(
            run.arch,
            pred.plan.with_(recompute=recompute),
            gpu,
            run_comm(design),
            design.compute.nvlink_domain_gpus,
            run.stack,
        )
        error = float(getattr(forced, run.metric)) / run.published - 1.0
        out[recompute] = (error, forced.memory.activations_gib)
    return out


def describe_recompute(run: Run) -> str:
    """One line: the error and activation memory under each allowed recomputation."""
    parts = [
        f"{rc} {err * 100:+5.1f}% ({act:.0f} GiB)"
        for rc, (err, act) in recompute_errors(run).items()
    ]
    return f"{run.name:36s} " + "; ".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="*", help="run names (calibration or development)")
    parser.add_argument(
        "--without-cp",
        action="store_true",
        help="also print NeMo 25.04's published B200 8B points without CP (8K, 16K)",
    )
    parser.add_argument(
        "--recompute",
        action="store_true",
        help="print each run's error under every recomputation it allows instead",
    )
    args = parser.parse_args()
    if args.recompute:
        for run in selected_runs(args.runs or DEFAULT_RUNS):
            print(describe_recompute(run))
        return
    print(HEADER)
    runs = selected_runs(args.runs or DEFAULT_RUNS)
    for run in (without_cp_probes() if args.without_cp else []) + runs:
        print(describe(run))


if __name__ == "__main__":
    main()
