"""What else the combined 1F1B schedule with VP does per model chunk on DGX H100: two
candidates priced on the MoE runs with ``moe_a2a_overlap``, PP > 1 and VP > 1 on x86 hosts.

Megatron-Core at b0cc2706ddc6 and 0d8e0714cd29 (the pins of NVIDIA-NeMo/Megatron-Bridge v0.3.0
and v0.2.0), ``TransformerModelChunkSchedulePlan.run`` (megatron/core/models/common/
model_chunk_schedule_plan.py): a combined step runs one model chunk's forward and another's
backward layer pair by layer pair, and only after the last pair issues ``post_forward`` (the
activation send to the next stage, on the communication stream) and ``post_backward`` (the
gradient send to the previous stage); the next step's ``pre_forward`` / ``pre_backward`` wait
on the matching receives. Megatron-Bridge (``CommOverlapConfig``, src/megatron/bridge/
training/comm_overlap.py at v0.2.0 and v0.3.0) sets ``overlap_p2p_comm=True``,
``batch_p2p_comm=False`` for PP > 1 with VP > 1, so neither the sends nor the waits block the
host (no ``torch.cuda.synchronize`` of ``batch_p2p_sync``), but the transfer itself cannot
start before the step's end.

- B (p2p per chunk step), adopted: at PP 2 the combined steps line up so that each waits on
  its predecessor's stage-boundary activation and gradient in full, where the ordinary
  interleaved schedule sends the activation after the forward half and hides it. The model
  prices it since (:func:`clusterforge.perf.exposure.combined_schedule_sends_exposed`: the
  steady-state sends exposed instead of overlapped on MoE runs with the overlap at PP 2 and
  VP > 1); here it is switched off to show the model without it.
- C (FP8 per-expert launches, upper bound): Transformer Engine's ``GroupedLinear``
  (transformer_engine/pytorch/module/grouped_linear.py at v2.9, the release Megatron-Bridge
  v0.2.0 pins; v0.3.0 pins >= 2.10, < 2.13) quantises each local expert's split through
  ``tex.split_quantize``, whose fused multi-tensor cast serves delayed scaling only
  ("Currently only have fused kernel for FP8 delayed scaling", csrc/extensions/cast.cpp):
  under current scaling each split runs ``Float8CurrentScalingQuantizer::quantize_impl``
  (csrc/quantizer.cpp: ``nvte_compute_amax``, ``nvte_compute_scale_from_amax``,
  ``nvte_quantize_v2``, three launches); ``general_grouped_gemm`` runs one cuBLAS GEMM per
  expert over the compute streams (common/gemm/cublaslt_gemm.cu
  ``nvte_multi_stream_cublas_gemm``). Per expert and layer pass: forward 2 x (3 + 1), backward
  2 x (3 + 2) launches (fc1 and fc2; fprop, dgrad, wgrad; weights quantised once per step).
  The model counts each ``GroupedLinear`` as one module call
  (:data:`clusterforge.perf.host.MOE_FORWARD_TE_MODULES`). Priced at the host cost of one
  eager op with a launch (:data:`clusterforge.perf.host.HOST_OP_S`, TransformerEngine #2053)
  per launch, an upper bound (a launch from C++ costs less), two ways: C, all of it as idle
  per layer pass on the runs the shipped per-chunk cost is keyed on (the host blocks once per
  layer in the dispatch: all-to-all ``_maybe_dtoh_and_synchronize``, DeepEP normal-mode
  ``dispatch`` waiting on the host for the received-token counters); C host, the forward's
  launches added to the model's forward host segment of every synchronising FP8 MoE run
  (:func:`clusterforge.perf.host.moe_forward_host_s`, idle only where it exceeds the forward's
  GPU work).

It prints the calibration and development sets (MAPE, median, per class) and every MoE
calibration and development row before (no interleaved-overlap cost, no B), with the shipped
per-chunk cost but without B, as shipped (both), and with C added to the shipped model. It
patches ``clusterforge.perf.step`` and ``clusterforge.perf.exposure`` for the run only;
nothing is refitted and no held-out row is run.

    PYTHONPATH=$PWD/src:$PWD python benchmarks/moe_combined_1f1b_vpp_whatif.py
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import clusterforge.perf.exposure as exposure
import clusterforge.perf.step as step_module
from clusterforge.perf.host import HOST_OP_S
from validation.class_errors import print_moe_variants, run_outcomes
from validation.runs import best_prediction, load_runs, run_comm, run_design

__all__ = ["fp8_launch_s", "main"]

# Launches per local expert in FP8 current scaling (module docstring): the forward's and
# the layer pass's (forward and backward).
FP8_FORWARD_LAUNCHES_PER_EXPERT = 2 * (3 + 1)
FP8_LAUNCHES_PER_EXPERT = FP8_FORWARD_LAUNCHES_PER_EXPERT + 2 * (3 + 2)

_AS_MODELLED = step_module.interleaved_overlap_idle_s
_STAGES = step_module._stages
_COMBINED_SENDS = exposure.combined_schedule_sends_exposed
_FORWARD_HOST = step_module.moe_forward_host_s
_PLAN: list[Any] = []

# (label, keep the shipped per-chunk cost, keep B, add C: "" / "idle" / "host")
VARIANTS = (
    ("before", False, False, ""),
    ("no B", True, False, ""),
    ("model", True, True, ""),
    ("C idle", True, True, "idle"),
    ("C host", True, True, "host"),
)


def fp8_launch_s(local_experts: int, forward_only: bool = False) -> float:
    """Host seconds of the per-expert FP8 launches per layer pass, or of its forward
    (candidate C, upper bound)."""
    launches = FP8_FORWARD_LAUNCHES_PER_EXPERT if forward_only else FP8_LAUNCHES_PER_EXPERT
    return local_experts * launches * HOST_OP_S["x86"]


def _extra_s(arch: Any, add_c: str) -> float:
    """Candidate C's idle seconds per layer pass for the plan being priced."""
    plan = _PLAN[-1]
    if add_c == "idle" and plan.precision == "fp8":
        return fp8_launch_s(max(1, arch.num_experts // plan.layout.ep))
    return 0.0


@contextmanager
def patched(keep: bool, keep_b: bool, add_c: str) -> Iterator[None]:
    """The shipped per-chunk cost (``keep``) or none, the shipped B (``keep_b``) or none,
    plus C on the runs the per-chunk cost is keyed on
    (:func:`clusterforge.perf.host.interleaved_overlap_idle_s` > 0)."""

    def stages(arch: Any, plan: Any, *args: Any) -> Any:
        _PLAN.append(plan)
        try:
            return _STAGES(arch, plan, *args)
        finally:
            _PLAN.pop()

    def idle(arch: Any, stack: Any, cpu: Any, pp: int, vpp: int) -> float:
        shipped_s = _AS_MODELLED(arch, stack, cpu, pp, vpp)
        if shipped_s <= 0.0:
            return 0.0
        return (shipped_s if keep else 0.0) + _extra_s(arch, add_c)

    def combined_sends(plan: Any, arch: Any, stack: Any) -> bool:
        return keep_b and _COMBINED_SENDS(plan, arch, stack)

    def forward_host(arch: Any, stack: Any, cpu: Any, local_experts: int = 1) -> float:
        host_s = _FORWARD_HOST(arch, stack, cpu, local_experts)
        if add_c == "host" and host_s > 0.0 and _PLAN[-1].precision == "fp8":
            host_s += fp8_launch_s(local_experts, forward_only=True)
        return host_s

    step_module._stages = stages  # type: ignore[assignment]
    step_module.moe_forward_host_s = forward_host  # type: ignore[attr-defined]
    step_module.interleaved_overlap_idle_s = idle  # type: ignore[attr-defined]
    exposure.combined_schedule_sends_exposed = combined_sends  # type: ignore[assignment]
    try:
        yield
    finally:
        step_module._stages = _STAGES  # type: ignore[assignment]
        step_module.moe_forward_host_s = _FORWARD_HOST  # type: ignore[attr-defined]
        step_module.interleaved_overlap_idle_s = _AS_MODELLED  # type: ignore[attr-defined]
        exposure.combined_schedule_sends_exposed = _COMBINED_SENDS  # type: ignore[assignment]


def print_rows(runs: list[Any]) -> None:
    """Each variant's predicted step and pipeline p2p on the runs B is keyed on."""
    pass_s, forward_s = fp8_launch_s(16), fp8_launch_s(16, forward_only=True)
    print(
        f"C, 16 local experts: {pass_s * 1e3:.2f} ms per layer pass, "
        f"{forward_s * 1e3:.2f} ms in the forward (upper bounds)"
    )
    for run in runs:
        if not run.stack.moe_a2a_overlap or run.base.layout.pp != 2:
            continue
        print(f"{run.name} (measured {run.published:,.0f} tokens/s/GPU):")
        for label, keep, keep_b, add_c in VARIANTS:
            with patched(keep, keep_b, add_c):
                pred = best_prediction(run, run_comm(run_design(run)))
            assert pred is not None, run.name
            plan = pred.plan
            print(
                f"  {label:9} step {pred.step_time_s:6.2f} s  pp p2p "
                f"{pred.breakdown.pp_comm_s:5.2f} s  MBS {plan.micro_batch} VP {plan.layout.vpp}"
            )


def main() -> None:
    runs = [r for r in load_runs() if r.subset in ("calibration", "development")]
    print_rows(runs)
    results = []
    for _, keep, keep_b, add_c in VARIANTS:
        with patched(keep, keep_b, add_c):
            results.append(run_outcomes(runs))
    print_moe_variants((v[0] for v in VARIANTS), results, runs)


if __name__ == "__main__":
    main()
