"""ZeRO-3/FSDP at scale and in eager PyTorch: call counts x ring latency, DeepSpeed's
per-matrix fetches against FSDP's per-block gathers, eager element-wise kernels against
fused (torch.compile), and hybrid-sharding memory. Each test checks a behaviour the earlier
model did not have, or pins one the validation rows depend on."""

from __future__ import annotations

from dataclasses import replace

import pytest

from clusterforge.job import JobLayout
from clusterforge.perf import ParallelPlan, predict_step
from clusterforge.perf.compute import layer_times
from clusterforge.perf.memory import memory_per_gpu
from clusterforge.perf.roofline import gpu_perf
from clusterforge.perf.sharded import gathers_per_unit
from clusterforge.perf.stack import stack_named

DEEPSPEED = stack_named("deepspeed")
FSDP = stack_named("fsdp")
TORCHTITAN = stack_named("torchtitan")


def _zero3(num_gpus: int, *, global_batch: int = 4096, **changes: object) -> ParallelPlan:
    plan = ParallelPlan(
        JobLayout(tp=1, pp=1, dp=num_gpus),
        global_batch=global_batch,
        micro_batch=1,
        seq_length=4096,
        sequence_parallel=False,
        recompute="full",
        zero_stage=3,
    )
    return plan.with_(**changes)


def test_deepspeed_fetches_each_weight_matrix_with_its_own_call(models) -> None:
    """A Llama 2 13B layer (~314 M parameters) is above DeepSpeed's 5e7 prefetch bucket:
    four fetches per layer; FSDP gathers the block in one call; a tiny layer is coalesced."""
    plan = _zero3(1024)
    assert gathers_per_unit(models["llama2-13b"], plan, DEEPSPEED) == 4
    assert gathers_per_unit(models["llama2-13b"], plan, FSDP) == 1
    assert gathers_per_unit(models["gpt3-1.3b"], plan, DEEPSPEED) == 1


def test_deepspeed_pays_ring_latency_per_call_at_thousands_of_ranks(
    models, h100, h100_comm
) -> None:
    """Same bytes, four times the calls: the extra exposed time is latency, so it grows
    with the shard group (a ring all-gather takes n - 1 steps)."""
    arch = models["llama2-13b"]
    one_call = replace(DEEPSPEED, zero3_gathers_per_layer=1)
    extra = []
    for n in (512, 2048):
        per_matrix = predict_step(arch, _zero3(n), h100, h100_comm, 8, DEEPSPEED)
        per_layer = predict_step(arch, _zero3(n), h100, h100_comm, 8, one_call)
        extra.append(per_matrix.breakdown.dp_comm_s - per_layer.breakdown.dp_comm_s)
    assert extra[0] > 0
    assert extra[1] > 2 * extra[0] / (2048 / 512) * 2  # grows faster than the halved work


@pytest.mark.parametrize("stack", [FSDP, DEEPSPEED], ids=["fsdp", "deepspeed"])
def test_zero3_beyond_a_thousand_gpus_at_fixed_batch_loses_throughput_per_gpu(
    models, h100, h100_comm, stack
) -> None:
    """Fixed global batch: doubling GPUs halves each GPU's compute but every micro-batch
    still gathers the whole model, so per-GPU throughput falls by a third or more."""
    arch = models["llama2-7b"]
    small = predict_step(arch, _zero3(1024), h100, h100_comm, 8, stack)
    large = predict_step(arch, _zero3(2048), h100, h100_comm, 8, stack)
    assert large.tokens_per_s_per_gpu < (1 - 1 / 3) * small.tokens_per_s_per_gpu
    assert large.breakdown.dp_comm_s > large.breakdown.compute_s


def test_eager_pytorch_moves_more_bytes_than_fused_kernels(models, h100) -> None:
    """Composite RMSNorm, SwiGLU and complex rotary in eager mode: the compiled (fused)
    layer is faster; torchtitan measured +16 % tokens/s with torch.compile on Llama 3.1 8B,
    8 H100 (benchmarks/llama3_h100_202412_torchtitan.md, Table 1: 5,762 -> 6,667). The
    element-wise share alone must give a gain of the same order (2-30 %)."""
    arch = models["llama3.1-8b"]
    plan = _zero3(8, global_batch=16, micro_batch=2, seq_length=8192, recompute="none")
    perf = gpu_perf(h100, "bf16")
    eager = layer_times(arch, plan, perf, TORCHTITAN)
    fused = layer_times(arch, plan, perf, replace(TORCHTITAN, fused_elementwise=True))
    gain = eager.total_s / fused.total_s - 1
    assert 0.02 < gain < 0.30


def test_eager_layernorm_is_one_kernel_like_a_fused_one(models, h100) -> None:
    """GPT-style LayerNorm models (F.layer_norm is one kernel) gain only from the fused
    activation path, which a plain GELU MLP does not have: eager costs them only launches."""
    arch = models["gpt3-1.3b"]
    plan = _zero3(8, global_batch=16, micro_batch=2, seq_length=2048, recompute="none")
    perf = gpu_perf(h100, "bf16")
    eager = layer_times(arch, plan, perf, FSDP)
    fused = layer_times(arch, plan, perf, replace(FSDP, fused_elementwise=True))
    assert eager.total_s / fused.total_s - 1 < 0.02


def test_hsdp_memory_lies_between_full_sharding_and_replication(models) -> None:
    """HSDP shards the FP32 parameters, gradients and Adam moments over its shard group
    only: more than full sharding over all 128 GPUs, far less than plain replication."""
    arch = models["llama2-7b"]
    base = _zero3(128, global_batch=256, micro_batch=2, recompute="none")
    stages = (arch.num_layers,)
    full = memory_per_gpu(arch, base, stages, FSDP)
    hybrid = memory_per_gpu(arch, base.with_(shard_size=8), stages, FSDP)
    replicated = memory_per_gpu(arch, base.with_(zero_stage=0), stages, FSDP)
    states = lambda m: m.weights_gib + m.gradients_gib + m.optimizer_gib  # noqa: E731
    assert states(full) < states(hybrid) < states(replicated) / 4
    # 16 B per parameter over 8 GPUs (6.7e9 x 16 / 8 B), plus the gathered block and its
    # prefetched successor in BF16 and the block's unsharded FP32 gradient (2.02e8 x 8 B).
    assert states(hybrid) == pytest.approx((6.74e9 * 16 / 8 + 2.02e8 * 8) / 2**30, rel=0.05)


def test_fsdp2_copies_every_gathered_block_out_on_the_compute_stream(
    models, h100, h100_comm
) -> None:
    """FSDP2 (torchtitan) reads and writes each gathered byte once more per gather, twice
    per micro-batch with resharding after the forward: 4 B x 2 per parameter in BF16."""
    arch = models["llama3.1-8b"]
    plan = _zero3(8, global_batch=16, micro_batch=2, seq_length=8192, recompute="none")
    copied = predict_step(arch, plan, h100, h100_comm, 8, TORCHTITAN)
    viewed = predict_step(arch, plan, h100, h100_comm, 8, replace(TORCHTITAN, fsdp_copy_out=False))
    extra_s = copied.breakdown.compute_s - viewed.breakdown.compute_s
    layer_bytes = 2 * 2 * 2 * 218e6  # read + write, BF16, two gathers; 218 M parameters a layer
    # one micro-batch per step (16 sequences, 8 GPUs, 2 each); at HBM's datasheet rate the
    # copies take hbm_s, at the model's achievable fraction of it somewhat longer
    hbm_s = arch.num_layers * layer_bytes / (gpu_perf(h100, "bf16").hbm_gbyte_per_s * 1e9)
    assert hbm_s < extra_s < 2 * hbm_s


def test_torchtitan_selective_op_checkpointing_saves_memory_and_recomputes_matmuls(
    models, h100
) -> None:
    """torchtitan's selective op AC keeps the block input, the attention output and every
    other matmul output (Q, V, gate, down for Llama), and recomputes K, the output
    projection, up and the element-wise ops; Megatron's selective recomputation with
    flash attention recomputes nothing and keeps everything."""
    arch = models["llama3.1-8b"]
    plan = _zero3(8, global_batch=16, micro_batch=2, seq_length=8192, recompute="selective")
    stages = (arch.num_layers,)
    op_sac = memory_per_gpu(arch, plan, stages, TORCHTITAN)
    megatron_like = replace(TORCHTITAN, selective_recompute="attention")
    kept = memory_per_gpu(arch, plan, stages, megatron_like)
    # 8h + 2 kv + 2f... per token: (4096 x 5 + 1024 + 14336) x 2 B = 72 KiB against ~34 x 4096 B
    assert op_sac.activations_gib < 0.6 * kept.activations_gib
    perf = gpu_perf(h100, "bf16")
    times = layer_times(arch, plan, perf, TORCHTITAN)
    assert 0.2 * times.forward_s < times.recompute_s < 0.6 * times.forward_s
    assert layer_times(arch, plan, perf, megatron_like).recompute_s == 0.0


def test_hsdp_all_reduces_each_units_shard_in_every_micro_batch(models, h100, h100_comm) -> None:
    """FSDP synchronises the replicas in every backward, unit by unit: four accumulated
    micro-batches cost four times the sharded communication of one, replica all-reduces
    included (a once-per-step all-reduce would make it less than four times)."""
    arch = models["llama2-7b"]
    hybrid = _zero3(256, global_batch=256, shard_size=8)
    one = predict_step(arch, hybrid, h100, h100_comm, 8, FSDP)
    four = predict_step(arch, hybrid.with_(global_batch=1024), h100, h100_comm, 8, FSDP)
    assert four.breakdown.dp_comm_s == pytest.approx(4 * one.breakdown.dp_comm_s, rel=1e-9)
    full = predict_step(arch, _zero3(256, global_batch=256), h100, h100_comm, 8, FSDP)
    assert one.breakdown.dp_comm_s != full.breakdown.dp_comm_s


def test_fsdp_shard_grad_op_keeps_fp32_parameters_sharded(models) -> None:
    """FSDP's ZeRO-2 (SHARD_GRAD_OP, hybrid or not) shards the FP32 parameters like full
    sharding and keeps one unsharded BF16 copy for the step: 4 / 8 + 2 B per parameter on
    8 GPUs, not 4 B unsharded."""
    arch = models["llama3.1-8b"]
    plan = _zero3(8, global_batch=16, micro_batch=1, seq_length=4096, recompute="full")
    zero2 = memory_per_gpu(arch, plan.with_(zero_stage=2), (arch.num_layers,), FSDP)
    params = 8.03e9
    assert zero2.weights_gib == pytest.approx(params * (4 / 8 + 2) / 2**30, rel=0.02)


def test_fsdp_shard_grad_op_gathers_and_reduces_unit_by_unit_every_micro_batch(
    models, h100, h100_comm
) -> None:
    """PyTorch FSDP's SHARD_GRAD_OP (ZeRO-2) all-gathers each unit in every forward and
    reduce-scatters its gradient in every backward while gradients are synchronised (FSDP1
    frees the unsharded unit after its backward), so four accumulated micro-batches cost four
    times one's; it skips only the backward re-gather of full sharding. Megatron-Core's
    distributed optimizer reduces and gathers once per step, whatever the micro-batches."""
    arch = models["llama2-7b"]
    zero2 = _zero3(256, global_batch=256, recompute="none", seq_length=2048, zero_stage=2)
    one = predict_step(arch, zero2, h100, h100_comm, 8, FSDP)
    four = predict_step(arch, zero2.with_(global_batch=1024), h100, h100_comm, 8, FSDP)
    assert four.breakdown.dp_comm_s == pytest.approx(4 * one.breakdown.dp_comm_s, rel=1e-9)
    full = predict_step(arch, zero2.with_(zero_stage=3), h100, h100_comm, 8, FSDP)
    assert 0 < one.breakdown.dp_comm_s < full.breakdown.dp_comm_s
    megatron = stack_named("megatron-core")
    m_one = predict_step(arch, zero2, h100, h100_comm, 8, megatron)
    m_four = predict_step(arch, zero2.with_(global_batch=1024), h100, h100_comm, 8, megatron)
    assert m_four.breakdown.dp_comm_s == pytest.approx(m_one.breakdown.dp_comm_s, rel=1e-9)


def test_xla_scan_without_double_buffering_copies_each_carried_gather(
    models, h100, h100_comm
) -> None:
    """XLA without while-loop double buffering copies each layer's pipelined all-gather
    result into the loop-carried buffer: a read and a write of every gathered byte, in the
    forward and the backward loop (4 B x 2 per parameter in BF16); double-buffered (every
    named stack, MaxText's recipes) it costs nothing."""
    maxtext = stack_named("maxtext")
    assert not maxtext.scan_carry_copies
    arch = models["llama3.1-8b"]
    plan = _zero3(8, global_batch=16, micro_batch=2, seq_length=8192, recompute="none")
    copied = predict_step(arch, plan, h100, h100_comm, 8, replace(maxtext, scan_carry_copies=True))
    buffered = predict_step(arch, plan, h100, h100_comm, 8, maxtext)
    extra_s = copied.breakdown.compute_s - buffered.breakdown.compute_s
    layer_bytes = 2 * 2 * 2 * 218e6  # read + write, BF16, two loops; 218 M parameters a layer
    hbm_s = arch.num_layers * layer_bytes / (gpu_perf(h100, "bf16").hbm_gbyte_per_s * 1e9)
    assert hbm_s < extra_s < 2 * hbm_s
