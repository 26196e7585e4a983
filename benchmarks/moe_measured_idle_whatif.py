"""The measured GPU idle of a dropless flex-dispatcher MoE step on x86: each run with and
without it, and with it at any micro-batch.

The model floors the GPU idle of each layer pass of a dropless Megatron-Core MoE run under
the flex dispatcher (DeepEP / HybridEP), with no EP overlap, on an x86 host and at most
4,096 tokens per micro-batch, at the idle measured in NVIDIA-NeMo/Megatron-Bridge pull
request #5094 (:func:`clusterforge.perf.host.flex_dropless_idle_s`). This prints the
source's step split per layer and micro-batch (step, GPU-active union, idle, communication
from its "0.11 %" of communication concurrent with compute, compute), then every MoE
calibration and development run (never held-out) without the idle, with it (the model),
and with it at any micro-batch (variant B, not adopted: the source measured 4,096 tokens),
then MAPE and median per set and per development class for each. It patches
``clusterforge.perf.step.flex_dropless_idle_s`` for the run only.

    PYTHONPATH=$PWD/src:$PWD python benchmarks/moe_measured_idle_whatif.py
"""

from __future__ import annotations

from collections.abc import Callable

import clusterforge.perf.step as step_module
from clusterforge.catalog import ModelArch
from clusterforge.perf.host import (
    FLEX_DROPLESS_IDLE_S,
    FLEX_DROPLESS_IDLE_TOKENS,
    HostCpu,
    flex_dropless_idle_s,
)
from clusterforge.perf.stack import Stack
from validation.class_errors import print_set_lines, run_outcomes
from validation.runs import Run, load_runs

__all__ = ["main"]

# Pull request #5094's figures (module docstring of clusterforge.perf.host's constant).
STEP_S = 24.7138
GPU_ACTIVE_S = 22.820667
CONCURRENT_COMM_S = 9.079e-3
CONCURRENT_SHARE = 0.0011
LAYER_PASSES = 1024 // 16 * 48

Results = dict[str, tuple[float, str]]
IdleFn = Callable[[ModelArch, Stack, HostCpu, float], float]


def budget() -> None:
    """The source's step split per layer and micro-batch."""
    comm_s = CONCURRENT_COMM_S / CONCURRENT_SHARE
    per = 1e3 / LAYER_PASSES
    print("Megatron-Bridge #5094, Qwen3-30B-A3B, 16 H100, EP 16, HybridEP, MBS 1, no EP overlap")
    print(
        f"  per layer and micro-batch: step {STEP_S * per:.2f} ms, GPU active "
        f"{GPU_ACTIVE_S * per:.2f}, idle {FLEX_DROPLESS_IDLE_S * 1e3:.3f}, communication "
        f"{comm_s * per:.2f}, compute {(GPU_ACTIVE_S - comm_s) * per:.2f}"
    )


def none_s(arch: ModelArch, stack: Stack, cpu: HostCpu, tokens: float) -> float:
    """Without the measured idle."""
    return 0.0


def any_batch_s(arch: ModelArch, stack: Stack, cpu: HostCpu, tokens: float) -> float:
    """The measured idle at any micro-batch (variant B)."""
    return flex_dropless_idle_s(arch, stack, cpu, min(tokens, FLEX_DROPLESS_IDLE_TOKENS))


def with_patch(fn: IdleFn, runs: list[Run]) -> Results:
    base = step_module.flex_dropless_idle_s
    step_module.flex_dropless_idle_s = fn
    try:
        return run_outcomes(runs)
    finally:
        step_module.flex_dropless_idle_s = base


def main() -> None:
    budget()
    runs = [r for r in load_runs() if r.subset in ("calibration", "development")]
    before = with_patch(none_s, runs)
    after = run_outcomes(runs)
    variant_b = with_patch(any_batch_s, runs)
    print(f"\n{'run':40} {'without':>8} {'model':>8} {'B any':>8}")
    for run in runs:
        if run.arch.num_experts == 1 or run.name not in before:
            continue
        print(
            f"{run.name:40.40} {before[run.name][0]:+8.1%} {after[run.name][0]:+8.1%} "
            f"{variant_b[run.name][0]:+8.1%}"
        )
    print()
    print_set_lines("without", before, runs)
    print_set_lines("model", after, runs)
    print_set_lines("B any", variant_b, runs)


if __name__ == "__main__":
    main()
