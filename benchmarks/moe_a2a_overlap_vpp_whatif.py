"""Megatron-Core's EP overlap under the interleaved pipeline schedule: the one published A/B of
it against the model, and what its measured cost does to the MoE runs.

``overlap_moe_expert_parallel_comm`` (``Stack.moe_a2a_overlap``) with PP > 1 and VP > 1 runs
``combined_1f1b_schedule_for_interleaved_pipelining`` (megatron/core/pipeline_parallel/
combined_1f1b.py, NVIDIA/Megatron-LM at 0d8e0714cd29 and b0cc2706ddc6, the Megatron-Core pins
of NVIDIA-NeMo/Megatron-Bridge v0.2.0 and v0.3.0); with PP 1 it runs
``combined_1f1b_schedule_for_no_pipelining``. The one published A/B of the interleaved case:
NVIDIA-NeMo/Megatron-Bridge pull request #1760 (a6e92de5f, 2026-01-09), Qwen3-235B-A22B on 64
DGX B200 (x86 hosts), BF16, PP 8, VP 4, EP 8, GBS 1,024, micro-batch 1, all-to-all dispatcher
(``QWEN3_235B_A22B_PRETRAIN_CONFIG_B200_BF16``, scripts/performance/configs/qwen/
qwen3_workload_base_configs.py): "Disable ``moe_a2a_overlap`` due to CPU overhead", step
17.2 s with it, 16.0 s without. This prints:

- the model on that layout (a scratch run, no validation row) with the overlap off and on,
  against the measured steps, and the cost the model lacks: the measured net loss (on - off)
  plus the saving the model credits the overlap with, per layer pass (one layer's forward and
  backward for one micro-batch) of the slowest stage, and per model-chunk pass;
- every MoE calibration and development run (never held-out): before (no such cost), the
  model (that cost per model-chunk pass, spread over the chunk's layers, on every x86 MoE
  run with ``moe_a2a_overlap``, PP > 1 and VP > 1: :func:`clusterforge.perf.host.
  interleaved_overlap_idle_s`) and variant A (not adopted: the same A/B's cost per layer
  pass, which the PP 1 A/Bs of the EP overlap on 16 H100 rule out);
- MAPE and median per set and per development class for each.

It patches ``clusterforge.perf.step`` for the run only; nothing is refitted.

    PYTHONPATH=$PWD/src:$PWD python benchmarks/moe_a2a_overlap_vpp_whatif.py
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import clusterforge.perf.step as step_module
from clusterforge.job import JobLayout
from validation.class_errors import print_moe_variants, run_outcomes
from validation.runs import Run, best_prediction, load_runs, run_comm, run_design

__all__ = ["interleaved_overlap_cost_s", "main"]

# Pull request #1760: step seconds with moe_a2a_overlap off and on (description).
PR1760_STEP_S = (16.0, 17.2)
PR1760_LAYOUT = JobLayout(tp=1, pp=8, dp=8, ep=8, vpp=4)
PR1760_GLOBAL_BATCH = 1024
# Same model, node, stack and GBS; token drop there, dropless in #1760's release.
TEMPLATE_ROW = "pub-bridge2509-b200-qwen3-235b-a22b"
# (label, whether the model's per-chunk cost is kept, whether #1760's cost goes per layer)
VARIANTS = (("before", False, False), ("model", True, False), ("A layer", False, True))

_AS_MODELLED = step_module.interleaved_overlap_idle_s


def pr1760_run(template: Run, overlap: bool) -> Run:
    """#1760's layout: BF16, dropless, all-to-all, PP 8 VP 4 EP 8, MBS 1, GBS 1,024."""
    plan = template.base.with_(
        layout=PR1760_LAYOUT, precision="bf16", micro_batch=1, global_batch=PR1760_GLOBAL_BATCH
    )
    stack = replace(template.stack, moe_drop_and_pad=False, moe_a2a_overlap=overlap)
    name = f"pr1760-{'on' if overlap else 'off'}"
    return replace(
        template, name=name, base=plan, micro_batches=(1,), virtual_stages=(4,), stack=stack
    )


def step_s(run: Run) -> float:
    pred = best_prediction(run, run_comm(run_design(run)))
    assert pred is not None, run.name
    return pred.step_time_s


def interleaved_overlap_cost_s(template: Run) -> tuple[float, float]:
    """The cost #1760 measured that the model without it lacks, seconds per layer pass of the
    slowest stage and per model-chunk pass: (on - off measured + off - on modelled) / passes."""
    with patched(False):
        off, on = (step_s(pr1760_run(template, o)) for o in (False, True))
    lacking_s = PR1760_STEP_S[1] - PR1760_STEP_S[0] + off - on
    layout = PR1760_LAYOUT
    micro = PR1760_GLOBAL_BATCH // layout.dp
    slowest_layers = -(-template.arch.num_layers // layout.pp)
    return lacking_s / (micro * slowest_layers), lacking_s / (micro * layout.vpp)


@contextmanager
def patched(keep: bool, per_layer_s: float = 0.0) -> Iterator[None]:
    """The model as shipped (``keep``), or without its per-chunk cost
    (:func:`~clusterforge.perf.host.interleaved_overlap_idle_s`) and ``per_layer_s`` on each
    layer pass of the runs that cost is keyed on instead."""

    def per_layer(arch: Any, stack: Any, cpu: Any, pp: int, vpp: int) -> float:
        return per_layer_s if _AS_MODELLED(arch, stack, cpu, pp, vpp) > 0.0 else 0.0

    if not keep:
        step_module.interleaved_overlap_idle_s = per_layer  # type: ignore[attr-defined]
    try:
        yield
    finally:
        step_module.interleaved_overlap_idle_s = _AS_MODELLED  # type: ignore[attr-defined]


def ab_table(template: Run, per_layer_s: float, per_chunk_s: float) -> None:
    """#1760's steps, measured and predicted, before, as shipped and under variant A."""
    off_meas, on_meas = PR1760_STEP_S
    print("Qwen3-235B-A22B, 64 DGX B200, BF16, PP 8 VP 4 EP 8, GBS 1,024, MBS 1 (#1760):")
    print(f"  measured           off {off_meas:6.2f} s  on {on_meas:6.2f} s")
    for label, keep, per_layer in VARIANTS:
        with patched(keep, per_layer_s if per_layer else 0.0):
            off, on = (step_s(pr1760_run(template, o)) for o in (False, True))
        print(
            f"  {label:18} off {off:6.2f} s  on {on:6.2f} s  "
            f"({off / off_meas - 1:+.1%} / {on / on_meas - 1:+.1%})"
        )
    print(f"  cost lacking: {per_layer_s * 1e3:.2f} ms per layer pass, ", end="")
    print(f"{per_chunk_s * 1e3:.2f} ms per model-chunk pass")


def main() -> None:
    everything = load_runs()
    template = next(r for r in everything if r.name == TEMPLATE_ROW)
    per_layer_s, per_chunk_s = interleaved_overlap_cost_s(template)
    ab_table(template, per_layer_s, per_chunk_s)
    runs = [r for r in everything if r.subset in ("calibration", "development")]
    results = []
    for _, keep, per_layer in VARIANTS:
        with patched(keep, per_layer_s if per_layer else 0.0):
            results.append(run_outcomes(runs))
    print_moe_variants((label for label, _, _ in VARIANTS), results, runs)


if __name__ == "__main__":
    main()
