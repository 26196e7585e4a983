"""MXFP8 and NVFP4 (Transformer Engine's block-scaled recipes): peaks, casts, refusals."""

from __future__ import annotations

import pytest

from clusterforge.catalog import ModelArch, load_catalog
from clusterforge.errors import PlanError
from clusterforge.job import JobLayout
from clusterforge.perf import ParallelPlan, predict_step
from clusterforge.perf.blockscale import (
    copy_bytes,
    operand_cast,
    param_weight_bytes,
    saved_input_bytes,
    weight_cast,
)
from clusterforge.perf.memory import memory_per_gpu
from clusterforge.perf.quantize_passes import blockscale_layer_bytes, mxfp8_expert_extra_kernels
from clusterforge.perf.roofline import check_precision, gpu_perf
from clusterforge.perf.stack import stack_named

GIB = 1024**3


@pytest.mark.parametrize(
    ("gpu_id", "fp4_tflops"),
    [("b200", 9000), ("gb200", 10000), ("b300", 13125), ("gb300", 15000), ("h100-sxm", 0)],
)
def test_fp4_dense_peaks_are_the_datasheets(gpu_id: str, fp4_tflops: float) -> None:
    assert load_catalog().gpus[gpu_id].fp4_dense_tflops == fp4_tflops


@pytest.mark.parametrize("gpu_id", ["b200", "gb200", "b300", "gb300"])
def test_mxfp8_runs_at_the_fp8_ceiling_and_nvfp4_at_its_share_of_the_fp4_peak(
    gpu_id: str,
) -> None:
    gpu = load_catalog().gpus[gpu_id]
    fp8 = gpu_perf(gpu, "fp8").matmul_tflops
    assert gpu_perf(gpu, "mxfp8").matmul_tflops == fp8
    ratio = gpu.fp4_dense_tflops / gpu.fp8_dense_tflops
    assert gpu_perf(gpu, "nvfp4").matmul_tflops == pytest.approx(fp8 * ratio)


def test_scale_bytes_by_hand() -> None:
    # MXFP8: 1 B E4M3 + one E8M0 per 32; NVFP4: 0.5 B E2M1 + one E4M3 per 16.
    assert copy_bytes("mxfp8") == 1 + 1 / 32
    assert copy_bytes("nvfp4") == 0.5 + 1 / 16
    assert saved_input_bytes("nvfp4") == 0.5625  # the column-wise copy only
    # MXFP8: read BF16, write both copies in one kernel.
    assert operand_cast("mxfp8") == (2 + 2 * 1.03125, 1)
    # NVFP4: amax read, row-wise quantize, fused Hadamard column-wise quantize.
    assert operand_cast("nvfp4") == (2 + (2 + 0.5625) + (2 + 0.5625), 3)
    assert weight_cast("nvfp4") == (2 + 2 + 2 * 0.5625, 2)


def test_a_layer_cast_cost_by_hand() -> None:
    arch = ModelArch(num_layers=2, hidden_size=1024, num_heads=8, vocab_size=32000)
    plan = ParallelPlan(JobLayout(tp=1, pp=1, dp=1), global_batch=1, seq_length=2048)
    # GEMM inputs per token: QKV and FC1 (norm outputs, 2 x 1024), projection (1024), FC2
    # (4096); output gradients: QKV (3072), projection (1024), FC1 (4096), FC2 (1024).
    inputs, grads, tokens = 2 * 1024 + 1024 + 4096, 3072 + 1024 + 4096 + 1024, 2048
    forward, backward = blockscale_layer_bytes(arch, plan.with_(precision="mxfp8"))
    assert forward == pytest.approx(inputs * tokens * 4.0625)
    assert backward == pytest.approx(grads * tokens * 4.0625)
    forward, _ = blockscale_layer_bytes(arch, plan.with_(precision="nvfp4"))
    assert forward == pytest.approx(inputs * tokens * 7.125)
    assert blockscale_layer_bytes(arch, plan.with_(precision="fp8")) == (0.0, 0.0)


@pytest.mark.parametrize("precision", ["mxfp8", "nvfp4"])
@pytest.mark.parametrize("gpu_id", ["h100-sxm", "h200-sxm", "a100-80gb", "mi300x", "rtx-4090"])
def test_block_scaled_precisions_are_refused_before_blackwell(precision: str, gpu_id: str) -> None:
    gpu = load_catalog().gpus[gpu_id]
    with pytest.raises(PlanError, match=r"compute capability 10\.x"):
        check_precision(gpu, precision)


@pytest.mark.parametrize("precision", ["mxfp8", "nvfp4"])
def test_block_scaled_precisions_run_on_blackwell(precision: str) -> None:
    for gpu_id in ("b200", "gb200", "b300", "gb300"):
        check_precision(load_catalog().gpus[gpu_id], precision)


def test_a_stack_without_transformer_engine_is_refused(models, h100_comm) -> None:
    b200 = load_catalog().gpus["b200"]
    plan = ParallelPlan(JobLayout(tp=1, pp=1, dp=8), global_batch=32, precision="mxfp8")
    with pytest.raises(PlanError, match="Transformer Engine stacks only"):
        predict_step(models["llama3-8b"], plan, b200, h100_comm, 8, stack_named("torchtitan"))


def test_block_scaled_steps_and_weights_on_b200(models, h100_comm) -> None:
    b200 = load_catalog().gpus["b200"]
    plan = ParallelPlan(JobLayout(tp=1, pp=1, dp=8), global_batch=32, seq_length=8192)
    runs = {
        p: predict_step(models["llama3-8b"], plan.with_(precision=p), b200, h100_comm, 8)
        for p in ("bf16", "mxfp8", "nvfp4")
    }
    assert runs["bf16"].step_time_s > runs["mxfp8"].step_time_s > runs["nvfp4"].step_time_s
    # BF16 weights plus the row- and column-wise quantized copies (ZeRO-1: unsharded).
    extra_gib = runs["mxfp8"].memory.weights_gib - runs["bf16"].memory.weights_gib
    per_param = extra_gib * GIB / (runs["bf16"].memory.weights_gib * GIB / 2.0)
    assert per_param == pytest.approx(2 * (1 + 1 / 32))
    # Saved GEMM inputs shrink from BF16 to the column-wise copy.
    assert runs["nvfp4"].memory.activations_gib < runs["mxfp8"].memory.activations_gib


@pytest.mark.parametrize("precision", ["mxfp8", "nvfp4"])
def test_a_search_before_blackwell_names_the_refused_precision(precision: str) -> None:
    from clusterforge.design import plan as design_plan
    from clusterforge.perf import PredictRequest, run_predict
    from clusterforge.spec import parse_spec

    spec = parse_spec(
        {
            "name": "h100-blockscaled",
            "num_gpus": 16,
            "node": "dgx-h100",
            "workload": {"model": "llama3-8b", "global_batch": 64, "precision": precision},
        }
    )
    with pytest.raises(PlanError, match=r"compute capability 10\.x"):
        run_predict(design_plan(spec), PredictRequest(search=True, gpu_counts=(8, 16)))


def test_quantized_parameters_by_hand() -> None:
    # MXFP8 parameters (fp8_param_gather): E4M3 + one E8M0 scale per 32, both orientations,
    # 2 x (1 + 1/32) = 2.0625 B, no BF16 copy; NVFP4 with BF16 parameters: 2 + 2 x (0.5 +
    # 1/16) = 3.125 B.
    assert param_weight_bytes("mxfp8", 2.0, quantized_only=True) == 2.0625
    assert param_weight_bytes("mxfp8", 2.0, quantized_only=False) == 4.0625
    assert param_weight_bytes("nvfp4", 2.0, quantized_only=False) == 3.125


@pytest.mark.parametrize(("precision", "bytes_per_param"), [("mxfp8", 2.0625), ("nvfp4", 3.125)])
def test_megatron_bridge_stores_mxfp8_parameters_only(
    models, precision: str, bytes_per_param: float
) -> None:
    """bf16_with_mxfp8_mixed gathers MXFP8 parameters (fp8_param_gather); the NVFP4 preset
    keeps BF16 parameters and their cached quantized copies."""
    arch = models["llama3-8b"]
    plan = ParallelPlan(JobLayout(tp=1, pp=1, dp=8), global_batch=32, seq_length=8192)
    stack = stack_named("megatron-bridge")
    stages = (arch.num_layers,)
    bf16 = memory_per_gpu(arch, plan, stages, stack).weights_gib
    quantized = memory_per_gpu(arch, plan.with_(precision=precision), stages, stack).weights_gib
    assert quantized / bf16 == pytest.approx(bytes_per_param / 2.0)


def test_mxfp8_quantizes_each_local_expert_in_its_own_kernel() -> None:
    """Transformer Engine's split_quantize runs one MXFP8 kernel per local expert: with 128
    experts over EP 8, 16 local experts, two expert GEMMs each way: 2 x (16 - 1) = 30 more
    kernels per direction than one per GEMM; none for dense models, FP8 or NVFP4."""
    moe = ModelArch(
        num_layers=2, hidden_size=2048, num_heads=32, vocab_size=32000, num_experts=128, top_k=8
    )
    dense = ModelArch(num_layers=2, hidden_size=2048, num_heads=32, vocab_size=32000)
    layout = JobLayout(tp=1, pp=1, dp=8, ep=8)
    mxfp8 = ParallelPlan(layout, global_batch=8, seq_length=4096, precision="mxfp8")
    assert mxfp8_expert_extra_kernels(moe, mxfp8) == 30
    assert mxfp8_expert_extra_kernels(dense, mxfp8) == 0
    for precision in ("fp8", "nvfp4"):
        plan = ParallelPlan(layout, global_batch=8, seq_length=4096, precision=precision)
        assert mxfp8_expert_extra_kernels(moe, plan) == 0
