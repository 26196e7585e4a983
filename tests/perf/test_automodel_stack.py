"""The ``automodel`` stack (NeMo AutoModel: PyTorch FSDP2 with Transformer Engine layers and
DeepEP): fused norms and activations but an eager BF16 rotary embedding, the flex
dispatcher, FSDP2's copy-out, and each run's ``reshard_after_forward``."""

from __future__ import annotations

from dataclasses import replace

from clusterforge.job import JobLayout
from clusterforge.perf import ParallelPlan
from clusterforge.perf.compute import layer_times
from clusterforge.perf.roofline import gpu_perf
from clusterforge.perf.stack import stack_named
from validation.runs import load_runs

AUTOMODEL = stack_named("automodel")


def _moe_plan() -> ParallelPlan:
    return ParallelPlan(
        JobLayout(tp=1, pp=1, dp=8, ep=8),
        global_batch=512,
        micro_batch=4,
        seq_length=4096,
        sequence_parallel=False,
        recompute="full",
        zero_stage=3,
    )


def test_automodel_runs_te_norms_deepep_and_fsdp2() -> None:
    assert AUTOMODEL.fused_elementwise and AUTOMODEL.eager_rotary
    assert AUTOMODEL.moe_dispatcher == "flex"
    assert AUTOMODEL.fsdp_copy_out and AUTOMODEL.master_in_parameters
    assert not AUTOMODEL.fsdp_reshard_after_forward  # parallelize_model's default
    assert AUTOMODEL.moe_expert_bias_eager and not AUTOMODEL.moe_glu_clamp_eager


def test_eager_rotary_costs_more_than_fused_and_less_than_all_eager(models, h100) -> None:
    """The rotary embedding's separate BF16 passes lie between a fully fused layer and a
    fully eager one (eager RMSNorm and SwiGLU as well)."""
    arch, plan = models["qwen3-30b-a3b"], _moe_plan()
    perf = gpu_perf(h100, "bf16")
    fused = layer_times(arch, plan, perf, replace(AUTOMODEL, eager_rotary=False))
    rotary = layer_times(arch, plan, perf, AUTOMODEL)
    eager = layer_times(arch, plan, perf, replace(AUTOMODEL, fused_elementwise=False))
    assert fused.forward_s < rotary.forward_s < eager.forward_s


def test_a_row_states_reshard_after_forward() -> None:
    rows = {r.name: r for r in load_runs() if r.subset == "development"}
    assert not rows["pub-automodel-h100-qwen3-30b-a3b"].stack.fsdp_reshard_after_forward
    gpt_oss = rows["pub-automodel-h100-gpt-oss-120b"].stack
    assert gpt_oss.fsdp_reshard_after_forward and gpt_oss.name == "automodel"
