"""MaxText's named-tensor remat policies (``remat_policy``, JAX ``save_only_these_names``).

MaxText keeps the named tensors of a decoder layer and recomputes the rest of what the
backward reads (AI-Hypercomputer/maxtext ``MaxText/layers/models.py`` at 8e55ab1). Each test
fails on a model that maps these policies onto full recomputation (the whole forward again,
only the layer input kept) or onto Megatron's selective recomputation (nothing recomputed
with flash attention, every activation kept).
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from clusterforge.job import JobLayout
from clusterforge.perf import ParallelPlan, predict_step
from clusterforge.perf.compute import layer_times
from clusterforge.perf.flops import model_flops_per_step
from clusterforge.perf.fp8 import fp8_weight_cast_bytes_per_micro
from clusterforge.perf.memory import activation_bytes_per_layer, layer_params_per_gpu
from clusterforge.perf.remat import named_recompute_flops
from clusterforge.perf.roofline import gemm_time_s, gpu_perf
from clusterforge.perf.sharded import zero3_exposed_s
from clusterforge.perf.stack import stack_named

MAXTEXT = stack_named("maxtext")
QKV = ("query_proj", "key_proj", "value_proj", "qkv_proj")  # save_qkv_proj
EXCEPT_MLP = (*QKV, "out_proj")  # save_dot_except_mlp (FP8 Llama 2 recipe)
EXCEPT_MLPWI = (*EXCEPT_MLP, "mlpwo")  # save_dot_except_mlpwi (BF16 Llama 2 recipe)


def _plan(recompute: str = "selective", seq: int = 4096) -> ParallelPlan:
    """Llama 2 70B as the dgxc-benchmarking MaxText recipe runs it: FSDP over 64 GPUs,
    per-device batch 2."""
    return ParallelPlan(
        JobLayout(dp=64),
        global_batch=128,
        micro_batch=2,
        seq_length=seq,
        recompute=recompute,  # type: ignore[arg-type]
        zero_stage=3,
    )


def test_maxtext_stack_states_its_mechanisms() -> None:
    assert MAXTEXT.selective_recompute == "saved_names"
    assert MAXTEXT.attention == "cudnn"
    assert MAXTEXT.fused_elementwise and not MAXTEXT.fp8_torchao
    assert MAXTEXT.weight_bytes == 4.0 and MAXTEXT.fp8_copy_bytes == 0.0


def test_maxtext_gathers_fp8_weights_and_reduces_bf16_gradients(models, h100, h100_comm) -> None:
    """XLA's collective quantizer moves Flax's FP8 quantization of a weight in front of its
    FSDP all-gather (1 byte per weight on the wire), and the weight-gradient dot's BF16
    output is reduce-scattered before its cast to the FP32 parameter's dtype (2 bytes): the
    sharded collectives of an FP8 step move less than PyTorch FSDP's BF16 gathers and FP32
    reductions."""
    arch, perf = models["llama2-70b"], gpu_perf(h100, "fp8")
    assert MAXTEXT.gathered_weight_bytes("fp8") == 1.0
    assert MAXTEXT.gathered_weight_bytes("bf16") == 2.0
    assert MAXTEXT.grad_reduce_bytes == 2
    plan = _plan().with_(precision="fp8")
    stack = replace(MAXTEXT, remat_saved=EXCEPT_MLP)
    times = layer_times(arch, plan, perf, stack)
    wide = replace(stack, fp8_all_gather=False, grad_reduce_bytes=4)
    narrow_s = zero3_exposed_s(arch, plan, h100_comm, stack, times, layers=80, num_micro=1)
    wide_s = zero3_exposed_s(arch, plan, h100_comm, wide, times, layers=80, num_micro=1)
    assert narrow_s < wide_s


def test_custom_policy_recomputes_attention_and_mlp_input_gemms(models, h100) -> None:
    """Q, K, V and the output projection saved: the backward reruns the attention forward
    (``context`` not kept), the gated MLP's two input GEMMs and the element-wise ops; far
    less than the whole forward, far more than nothing."""
    arch, perf = models["llama2-70b"], gpu_perf(h100, "bf16")
    stack = replace(MAXTEXT, remat_saved=EXCEPT_MLPWI)
    named = layer_times(arch, _plan(), perf, stack)
    full = layer_times(arch, _plan("full"), perf, stack)
    tokens = 2 * 4096
    up = gemm_time_s(tokens, 2 * 28672, 8192, perf)
    assert named.recompute_s > up + named.attention_forward_s
    assert 0.4 * full.recompute_s < named.recompute_s < 0.75 * full.recompute_s


def test_saving_the_mlp_output_saves_memory_not_time(models, h100) -> None:
    """Only the residual add reads ``mlpwo``: keeping it never removes a GEMM from the
    recomputation, and costs one hidden-size BF16 tensor per token."""
    arch, perf, plan = models["llama2-70b"], gpu_perf(h100, "bf16"), _plan()
    with_wo = replace(MAXTEXT, remat_saved=EXCEPT_MLPWI)
    without = replace(MAXTEXT, remat_saved=EXCEPT_MLP)
    assert layer_times(arch, plan, perf, with_wo).recompute_s == pytest.approx(
        layer_times(arch, plan, perf, without).recompute_s
    )
    extra = activation_bytes_per_layer(arch, plan, with_wo) - activation_bytes_per_layer(
        arch, plan, without
    )
    assert extra == pytest.approx(2 * 2 * 4096 * 8192)


def test_save_qkv_proj_also_recomputes_the_output_projection(models, h100) -> None:
    """Llama 3 70B's ``save_qkv_proj`` drops ``out_proj``: its GEMM (8192 x 8192) reruns."""
    arch, perf, plan = models["llama3-70b"], gpu_perf(h100, "bf16"), _plan(seq=8192)
    qkv = layer_times(arch, plan, perf, replace(MAXTEXT, remat_saved=QKV)).recompute_s
    more = layer_times(arch, plan, perf, replace(MAXTEXT, remat_saved=EXCEPT_MLP)).recompute_s
    assert qkv - more == pytest.approx(gemm_time_s(2 * 8192, 8192, 8192, perf))


def test_kept_bytes_are_the_layer_input_and_the_saved_tensors(models) -> None:
    """Per token: the layer input (h), Q (h), K and V (h/8 each, GQA 8 of 64 heads), the
    output projection (h), in BF16: 3.25 h x 2 bytes, against 2 bytes x h under full
    recomputation."""
    arch, plan = models["llama2-70b"], _plan()
    kept = activation_bytes_per_layer(arch, plan, replace(MAXTEXT, remat_saved=EXCEPT_MLP))
    assert kept == pytest.approx(2 * 4096 * 8192 * 3.25 * 2)
    full = activation_bytes_per_layer(arch, _plan("full"), MAXTEXT)
    assert kept == pytest.approx(3.25 * full)


def test_hardware_flops_count_what_the_policy_reruns(models, h100, h100_comm) -> None:
    """HFU's recomputed FLOPs under ``save_dot_except_mlp`` (Llama 2 70B, 4,096 tokens): per
    layer and token the gated MLP's two input GEMMs (2 x 2 h f) and the attention core
    (4 s q), not a whole forward (full) nor the attention core alone (Megatron selective)."""
    arch, plan = models["llama2-70b"], _plan()
    stack = replace(MAXTEXT, remat_saved=EXCEPT_MLP)
    per_layer = 2 * 2 * 8192 * 28672 + 4 * 4096 * 8192
    assert named_recompute_flops(arch, plan, stack) == pytest.approx(80 * per_layer)
    assert named_recompute_flops(arch, _plan("full"), stack) is None
    prediction = predict_step(arch, plan, h100, h100_comm, 8, stack)
    ratio = prediction.hardware_tflops_per_gpu / prediction.model_tflops_per_gpu
    model = model_flops_per_step(arch, 128, 4096) / (128 * 4096)
    assert ratio == pytest.approx(1 + 80 * per_layer / model)


def test_fp8_weights_are_quantized_on_the_shard_before_the_gather(models) -> None:
    """XLA's collective quantizer puts Flax's weight quantization in front of the FSDP
    all-gather: each of the two gathers per micro-batch quantizes only the GPU's 1/64 shard
    (FP32 read, FP8 write), and the gathered FP8 weight is transposed once for the
    input-gradient GEMM on Hopper; no full-size cast-transpose of every weight (4 B each)."""
    arch, plan = models["llama2-70b"], _plan().with_(precision="fp8")
    params = 80 * layer_params_per_gpu(arch, plan)
    got = fp8_weight_cast_bytes_per_micro(params, plan, MAXTEXT, 1, "h100-sxm")
    assert got == pytest.approx(2 * params / 64 * (4 + 1) + 2 * params)
    cached = fp8_weight_cast_bytes_per_micro(
        params, plan, replace(MAXTEXT, fp8_all_gather=False), 1, "h100-sxm"
    )
    assert got < 0.6 * cached
