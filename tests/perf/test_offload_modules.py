"""Fine-grained activation offloading: named modules' saved inputs leave HBM."""

from __future__ import annotations

import pytest

from clusterforge.catalog import load_catalog
from clusterforge.errors import PlanError
from clusterforge.job import JobLayout
from clusterforge.perf import ParallelPlan
from clusterforge.perf.blockscale import saved_input_bytes
from clusterforge.perf.memory import memory_per_gpu
from clusterforge.perf.offload_modules import offloaded_module_bytes
from clusterforge.perf.parallel import validate_plan
from clusterforge.perf.stack import stack_named

MCORE = stack_named("megatron-core")


def _plan(**changes: object) -> ParallelPlan:
    plan = ParallelPlan(
        JobLayout(tp=1, pp=4, dp=64, ep=64, vpp=6),
        global_batch=3072,
        micro_batch=3,
        seq_length=4096,
        sequence_parallel=False,
        recompute="none",
        precision="mxfp8",
    )
    return plan.with_(**changes)


def test_moved_bytes_are_the_expert_gemm_input_and_the_activation_input(models) -> None:
    arch = models["qwen3-235b-a22b"]
    routed = 3 * 4096 * arch.top_k  # tokens of one micro-batch x top-k
    fc1_in = routed * arch.hidden_size * saved_input_bytes("mxfp8")
    act_in = routed * 2 * arch.ffn_hidden_size * 2  # gate and up outputs (expert size), BF16
    assert offloaded_module_bytes(arch, _plan()) == 0.0
    one = offloaded_module_bytes(arch, _plan(offload_modules=("expert_fc1",)))
    both = offloaded_module_bytes(arch, _plan(offload_modules=("expert_fc1", "moe_act")))
    assert one == pytest.approx(fc1_in)
    assert both == pytest.approx(fc1_in + act_in)


def test_dense_layers_move_nothing(models) -> None:
    plan = _plan(layout=JobLayout(tp=1, pp=4, dp=64), offload_modules=("expert_fc1", "moe_act"))
    assert offloaded_module_bytes(models["llama3-70b"], plan) == 0.0


def test_offloading_expert_modules_fits_the_qwen3_gb200_layout(models) -> None:
    arch, gpu = models["qwen3-235b-a22b"], load_catalog().gpus["gb200"]
    stages = validate_plan(arch, _plan(), 256)
    kept = memory_per_gpu(arch, _plan(), stages, MCORE)
    moved = memory_per_gpu(arch, _plan(offload_modules=("expert_fc1", "moe_act")), stages, MCORE)
    assert kept.total_gib > gpu.hbm_gib >= moved.total_gib
    assert moved.weights_gib == kept.weights_gib


def test_unpriced_modules_are_refused(models) -> None:
    with pytest.raises(PlanError, match="offload_modules"):
        validate_plan(models["qwen3-235b-a22b"], _plan(offload_modules=("core_attn",)), 256)
