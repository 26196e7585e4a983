"""Time per layer and micro-batch of published Qwen3-30B-A3B Megatron-Bridge runs.

Prints, for each published run below (NVIDIA-NeMo/Megatron-Bridge
docs/performance-summary-archive.md at 067f987df03b, the section named per run; the layout
is the one the run's container tag configures, stated per run), the step time that its
tokens/s/GPU implies and that step divided by the micro-batches one pipeline stage runs
and its layers: the wall time of one layer's forward and backward for one micro-batch
(pipeline bubble and optimizer included). Published figures only: no prediction is made,
so the table can include runs of any set and runs in none.

The table backs docs/validation.md, "Dropless at micro-batch 1": on x86 DGX hosts a
dropless micro-batch of 4,096 tokens takes ~9 ms per layer on B200 and on H100 without the
EP all-to-all overlap and ~16 ms on H100 with it, whatever the GPU, while the token-drop
runs follow their GPU and tokens.

    PYTHONPATH=$PWD/src:$PWD python benchmarks/moe_layer_time_published.py
"""

from __future__ import annotations

from typing import NamedTuple

QWEN3_30B_LAYERS = 48
SEQUENCE = 4096


class PublishedRun(NamedTuple):
    """One published run: where it is, how it ran, and its throughput."""

    label: str
    regime: str
    gpus: int
    global_batch: int
    micro_batch: int
    pp: int
    tokens_per_s_per_gpu: float


RUNS = (
    # 25.09 (v0.1.0rc3: apply_moe_token_drop; H100 no CUDA graphs, B200/GB200
    # enable_cuda_graph whole-layer graphs).
    PublishedRun("25.09 DGX-H100 token drop", "drop, no graphs", 16, 512, 2, 2, 10494),
    PublishedRun("25.09 DGX-B200 token drop", "drop, layer graphs", 8, 512, 1, 1, 18066),
    PublishedRun("25.09 DGX-GB200 token drop (FP8-MX)", "drop, layer graphs", 8, 512, 4, 1, 23723),
    # 25.11 (v0.2.0: dropless; H100 VP 12, MBS 1, moe_a2a_overlap; B200 alltoall, graphs of
    # router and preprocess; GB200 HybridEP, graphs of router and preprocess).
    PublishedRun("25.11 DGX-H100 (release config)", "dropless, a2a overlap", 16, 512, 1, 2, 5275),
    PublishedRun("25.11 DGX-B200 FP8-MX", "dropless", 8, 512, 1, 1, 9299),
    PublishedRun("25.11 DGX-GB200 FP8-MX", "dropless, HybridEP", 8, 512, 4, 1, 23766),
    # 26.02 (v0.3.0: H100 DeepEP + moe_a2a_overlap; B200 alltoall, MBS 1).
    PublishedRun("26.02 DGX-H100", "dropless, a2a overlap", 16, 1024, 1, 2, 5113),
    PublishedRun("26.02 DGX-B200 MXFP8", "dropless", 8, 512, 1, 1, 9691),
    # 26.02.01 (v0.3.1: H100 PP 1, EP 16, HybridEP, no overlap; B200 HybridEP, MBS 4,
    # attention graphs too).
    PublishedRun("26.02.01 DGX-H100 (v0.3.1 layout)", "dropless, HybridEP", 16, 1024, 1, 1, 9058),
    PublishedRun("26.02.01 DGX-B200 MXFP8", "dropless, HybridEP", 8, 512, 4, 1, 26695),
)


def layer_time_s(run: PublishedRun) -> tuple[float, float]:
    """The step (s) the throughput implies and the time (s) per layer and micro-batch."""
    step = run.global_batch * SEQUENCE / run.gpus / run.tokens_per_s_per_gpu
    data_parallel = run.gpus // run.pp
    micro_batches = run.global_batch / data_parallel / run.micro_batch
    return step, step / (micro_batches * QWEN3_30B_LAYERS / run.pp)


def main() -> None:
    print(
        f"{'run':38s} {'regime':22s} {'mbs':>3s} {'tokens':>6s} {'step s':>7s} {'ms/layer/mb':>11s}"
    )
    for run in RUNS:
        step, per_layer = layer_time_s(run)
        print(
            f"{run.label:38s} {run.regime:22s} {run.micro_batch:3d}"
            f" {run.micro_batch * SEQUENCE:6d} {step:7.2f} {per_layer * 1e3:11.2f}"
        )


if __name__ == "__main__":
    main()
