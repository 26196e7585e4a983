"""The MoE gap per routed copy: what unit does the missing time scale with?

For every development run with experts, prints the time the published throughput leaves
beyond the predicted step, per layer and micro-batch of the slowest stage (``gap ms``),
and that time divided three ways: per token of the micro-batch, per routed copy (token x
``top_k``) and per routed copy and hidden element (HBM-bound work would keep the last one
flat). The columns before them say what differs between the rows: the GPU, the local
expert count, top-k, the hidden width, the micro-batch's tokens, the precision and the
dispatcher.

A cost that tracks one of these units stays flat in its column across rows of one GPU
whose other columns differ. On the development rows the per-copy column is the flat one
on DGX H100 (Qwen3-30B-A3B FP8, top-8, hidden 2,048, 4,096-8,192 tokens; gpt-oss-120b
BF16, top-4, hidden 2,880, 4,096 tokens), where the per-token and per-element columns
differ by 1.4-2x; that rules out per-byte (HBM) work and the expert GEMMs' rate (FP8 and
BF16 rows alike). It does not rule out a fixed cost per layer and micro-batch (host issue):
the 25.11 Qwen3 row is predicted at its table's micro-batch 2, but its release ran micro-batch
1, where its gap per layer and micro-batch (9.2 ms) is close to the 26.02 row's (11.1 ms);
see docs/validation.md, "Dropless on DGX H100".

    PYTHONPATH=$PWD/src:$PWD python benchmarks/moe_gap_per_copy.py

Development rows only (never held-out).
"""

from __future__ import annotations

from collections.abc import Iterator

from clusterforge.perf.parallel import num_micro_batches, tokens_per_gpu
from clusterforge.perf.step import Prediction
from validation.runs import Run, load_runs, predict_run


def moe_development_gaps() -> Iterator[tuple[Run, Prediction, float]]:
    """Every development run with experts that ``predict`` fits, its prediction, and the
    seconds the published throughput leaves beyond the predicted step per layer and
    micro-batch of the slowest stage."""
    for run in load_runs():
        if run.subset != "development" or run.arch.num_experts == 1:
            continue
        outcome = predict_run(run)
        pred = outcome.prediction
        if pred is None:
            continue
        published_step = pred.step_time_s * outcome.predicted / run.published
        layers = max(pred.stage_layers)
        yield (
            run,
            pred,
            (published_step - pred.step_time_s) / (num_micro_batches(pred.plan) * layers),
        )


def main() -> None:
    print(
        f"{'run':38s} {'gpu':10s} {'local':>5s} {'k':>2s} {'h':>5s} {'tokens':>6s} {'prec':4s}"
        f" {'disp':8s} {'gap ms':>7s} {'us/token':>8s} {'us/copy':>8s} {'ps/copy/h':>9s}"
    )
    for run, pred, gap in moe_development_gaps():
        plan = pred.plan
        tokens = tokens_per_gpu(plan)
        copies = tokens * run.arch.top_k
        local = max(1, run.arch.num_experts // plan.layout.ep)
        print(
            f"{run.name:38s} {run.node:10.10s} {local:5d} {run.arch.top_k:2d}"
            f" {run.arch.hidden_size:5d} {tokens:6.0f} {plan.precision:4s}"
            f" {run.stack.moe_dispatcher:8s} {gap * 1e3:7.2f} {gap / tokens * 1e6:8.3f}"
            f" {gap / copies * 1e6:8.3f} {gap / copies / run.arch.hidden_size * 1e12:9.1f}"
        )


if __name__ == "__main__":
    main()
