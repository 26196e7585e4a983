"""Context parallelism: ring attention step by step, and the all-gather variant."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pytest

from clusterforge.catalog import load_catalog
from clusterforge.job import JobLayout
from clusterforge.perf import ParallelPlan
from clusterforge.perf.compute import layer_times, overlapped_s
from clusterforge.perf.exposure import layer_comm
from clusterforge.perf.memory import context_parallel_working_bytes, memory_per_gpu
from clusterforge.perf.roofline import gpu_perf
from clusterforge.perf.stack import stack_named

NEMO = stack_named("nemo")


@dataclass
class StepFabric:
    """Every collective takes ``seconds_per_gib`` per GiB of its buffer; it records what the
    model asked."""

    seconds_per_gib: float
    asked: list[tuple[str, float, int]]

    def collective_time_s(self, collective: str, size_bytes: float, groups: np.ndarray) -> float:
        self.asked.append((collective, size_bytes, groups.shape[1]))
        return self.seconds_per_gib * size_bytes / 2**30


def _setup(cp: int, seconds_per_gib: float, stack=NEMO, zero_stage: int = 1):
    arch = load_catalog().models["llama3-8b"]
    plan = ParallelPlan(
        JobLayout(dp=2, cp=cp),
        global_batch=16,
        micro_batch=1,
        seq_length=131072,
        sequence_parallel=False,
        recompute="none",
        zero_stage=zero_stage,
    )
    perf = gpu_perf(load_catalog().gpus["h100-sxm"], "bf16")
    times = layer_times(arch, plan, perf, stack)
    return arch, plan, times, StepFabric(seconds_per_gib, [])


def _kv_bytes(arch, plan) -> float:
    kv_dim = arch.hidden_size * arch.num_kv_heads / arch.num_heads
    return plan.micro_batch * plan.seq_length * 2 * kv_dim * 2


@pytest.mark.parametrize("seconds_per_gib", [0.001, 1.0])
def test_ring_attention_passes_one_chunk_per_step_behind_that_step_s_attention(
    seconds_per_gib,
) -> None:
    """cp - 1 forward steps; each passes every rank's K, V chunk (1/cp of K, V) to its
    neighbour while the rank computes 1/cp of its attention (load-balanced causal chunks).
    The backward runs cp steps, each behind 1/cp of the attention backward: the first
    passes K, V, the middle ones K, V with the dK, dV sums, the last the dK, dV sums alone.
    A fast link hides the transfer (only the interference is left); a slow one exposes each
    step's excess."""
    arch, plan, times, fabric = _setup(4, seconds_per_gib)
    exposed = layer_comm(arch, plan, times, fabric, NEMO, 8).cp_s
    chunk = _kv_bytes(arch, plan) / 4
    assert {a for a in fabric.asked if a[0] != "sendrecv"} == set()
    assert {a[1] for a in fabric.asked} == {chunk, 2 * chunk}
    send = seconds_per_gib * chunk / 2**30
    step_backward = times.attention_backward_s / 4
    expected = 3 * overlapped_s(send, times.attention_forward_s / 4)
    expected += 2 * overlapped_s(send, step_backward) + 2 * overlapped_s(2 * send, step_backward)
    assert exposed == pytest.approx(expected)


def test_the_backward_ring_sends_kv_first_and_the_gradient_sums_last() -> None:
    """Over two ranks the backward passes K, V behind its first step and the dK, dV sums
    behind its second (Transformer Engine sends the halves of one K, V + dK, dV buffer):
    two transfers of one chunk, each behind its own step's attention on a slow link, not
    one transfer of two chunks behind a single step."""
    arch, plan, times, fabric = _setup(2, 2.0)
    exposed = layer_comm(arch, plan, times, fabric, NEMO, 8).cp_s
    send = 2.0 * _kv_bytes(arch, plan) / 2 / 2**30
    step_forward, step_backward = times.attention_forward_s / 2, times.attention_backward_s / 2
    assert send > step_backward
    expected = overlapped_s(send, step_forward) + 2 * overlapped_s(send, step_backward)
    assert exposed == pytest.approx(expected)
    assert exposed < overlapped_s(send, step_forward) + overlapped_s(2 * send, step_backward)


def test_a_slow_ring_step_costs_its_transfer_not_the_layer_s_attention() -> None:
    """With transfers slower than a step's attention the exposed time is the steps' excess:
    (cp - 1) x (transfer - attention / cp), more than an aggregate overlap of the whole
    exchange with the whole attention would give."""
    arch, plan, times, fabric = _setup(8, 0.5)
    exposed = layer_comm(arch, plan, times, fabric, NEMO, 8).cp_s
    chunk_s = 0.5 * _kv_bytes(arch, plan) / 8 / 2**30
    forward_excess = 7 * (chunk_s - times.attention_forward_s / 8)
    assert forward_excess > 0
    aggregate = max(0.0, 7 * chunk_s - times.attention_forward_s)
    assert exposed > forward_excess > aggregate


def test_all_gather_context_parallelism_gathers_everything_before_the_attention() -> None:
    """Llama 3's variant: one all-gather of all K, V before the attention, a reduce-scatter
    of dK, dV after the backward (and a gather again for it), none of it hidden."""
    arch, plan, times, fabric = _setup(4, 0.001)
    exposed = layer_comm(arch, plan, times, fabric, replace(NEMO, cp_overlap=False), 8).cp_s
    full = _kv_bytes(arch, plan)
    assert {a[0] for a in fabric.asked} == {"all_gather", "reduce_scatter"}
    assert exposed == pytest.approx(3 * 0.001 * full / 2**30)


TORCHTITAN = stack_named("torchtitan")


def _torch_setup(cp: int, seconds_per_gib: float, stack=TORCHTITAN):
    """PyTorch's CP under FSDP (ZeRO-3), as torchtitan runs it."""
    return _setup(cp, seconds_per_gib, stack, zero_stage=3)


def test_torchtitan_runs_pytorch_context_parallelism_on_repeated_kv_heads() -> None:
    """torchtitan: PyTorch's experimental context_parallel, on K, V repeated to every query
    head (``repeat_kv`` before SDPA); Megatron-based stacks keep Transformer Engine's ring."""
    assert TORCHTITAN.context_parallel == "torch"
    assert TORCHTITAN.kv_heads_expanded
    assert NEMO.context_parallel == "te"
    assert not NEMO.kv_heads_expanded


@pytest.mark.parametrize("seconds_per_gib", [0.001, 1.0])
def test_pytorch_context_parallelism_gathers_kv_once_behind_the_first_step(
    seconds_per_gib,
) -> None:
    """Forward: one all-gather of every rank's K, V (all heads: 4x the grouped bytes of
    Llama 3 8B) hidden behind the first of cp steps only. Backward: the same all-gather,
    then cp FP32 dK, dV passes to the next rank (twice the BF16 bytes of one rank's K, V),
    each behind the next step's backward, the last one exposed."""
    arch, plan, times, fabric = _torch_setup(4, seconds_per_gib)
    exposed = layer_comm(arch, plan, times, fabric, TORCHTITAN, 8).cp_s
    expanded = _kv_bytes(arch, plan) * arch.num_heads / arch.num_kv_heads
    assert ("all_gather", expanded, 4) in fabric.asked
    grads = 2 * expanded / 4
    assert ("sendrecv", grads, 4) in fabric.asked
    gather_s = seconds_per_gib * expanded / 2**30
    grads_s = seconds_per_gib * grads / 2**30
    step_bwd = times.attention_backward_s / 4
    expected = (
        overlapped_s(gather_s, times.attention_forward_s / 4)
        + overlapped_s(gather_s, step_bwd)
        + 3 * overlapped_s(grads_s, step_bwd)
        + grads_s
    )
    assert exposed == pytest.approx(expected)


def test_pytorch_context_parallelism_merges_each_step_in_fp32() -> None:
    """Each SDPA call's output is merged in FP32 and each backward call's gradients are
    accumulated in FP32: more bytes than Transformer Engine's ring, which rescales and sums
    in BF16; more steps, more passes; eager (one kernel per op) moves more than a compiled
    block."""
    te = replace(TORCHTITAN, context_parallel="te")
    for cp in (2, 4):
        _, _, torch_times, _ = _torch_setup(cp, 0.0)
        _, _, te_times, _ = _torch_setup(cp, 0.0, te)
        assert torch_times.attention_forward_s > te_times.attention_forward_s
        assert torch_times.attention_backward_s > te_times.attention_backward_s
    _, _, one, _ = _torch_setup(1, 0.0)
    _, _, one_te, _ = _torch_setup(1, 0.0, te)
    assert one.attention_forward_s == one_te.attention_forward_s
    _, _, fused, _ = _torch_setup(4, 0.0, replace(TORCHTITAN, fused_elementwise=True))
    _, _, eager, _ = _torch_setup(4, 0.0, replace(TORCHTITAN, fused_elementwise=False))
    assert eager.attention_forward_s > fused.attention_forward_s


def test_pytorch_context_parallelism_holds_the_gathered_kv_and_fp32_gradient_sums() -> None:
    """The peak of one layer's backward under PyTorch's context parallelism adds every
    rank's K, V (all heads) and the FP32 dQ, dK, dV sums and dK, dV buffers in flight:
    for Llama 3 8B at 128K tokens over CP 4, 4 x 0.5 GiB of gathered BF16 K, V alone. On a
    first pipeline stage, which holds no loss (whose logits peak comes before any layer's
    backward and would hide this transient)."""
    arch, plan, _, _ = _torch_setup(4, 0.0)
    plan = replace(plan, layout=JobLayout(pp=2, dp=1, cp=4))
    te = replace(TORCHTITAN, context_parallel="te")
    stages = (arch.num_layers,)
    torch_gib = memory_per_gpu(arch, plan, stages, TORCHTITAN).activations_gib
    te_gib = memory_per_gpu(arch, plan, stages, te).activations_gib
    local_kv = 2 * 32768 * arch.hidden_size * 2  # K and V of 32K tokens, all heads, BF16
    assert local_kv / 2**30 == pytest.approx(0.5)
    extra = (torch_gib - te_gib) * 2**30
    assert extra > 4 * local_kv
    assert extra == pytest.approx(context_parallel_working_bytes(arch, plan, TORCHTITAN))
    _, one, _, _ = _torch_setup(1, 0.0)
    assert context_parallel_working_bytes(arch, one, TORCHTITAN) == 0.0


def test_transformer_engine_ring_merges_and_accumulates_between_its_steps() -> None:
    """Transformer Engine's ring (``AttnFuncWithCPAndKVP2P``) runs separate element-wise
    kernels around its per-step attention calls: K and V packed into one send buffer, each
    step's output rescaled into the running output through the log-sum-exp, and in the
    backward dQ, dK, dV added step by step. They are HBM passes on the critical path that
    grow with the number of steps; none without context parallelism."""
    _, plan, ring, _ = _setup(4, 0.0)
    bare = _pure_attention_times(plan)
    extra_fwd = ring.attention_forward_s - bare[0]
    extra_bwd = ring.attention_backward_s - bare[1]
    assert extra_fwd > 0.0
    assert extra_bwd > 0.0
    _, plan8, ring8, _ = _setup(8, 0.0)
    bare8 = _pure_attention_times(plan8)
    # per GPU the tokens halve from CP 4 to CP 8 but the passes per token grow with the steps
    assert ring8.attention_forward_s - bare8[0] > 0.5 * extra_fwd
    _, one, ring1, _ = _setup(1, 0.0)
    assert (ring1.attention_forward_s, ring1.attention_backward_s) == _pure_attention_times(one)
    # the all-gather variant (``cp_overlap`` off) runs no ring: no per-step passes
    _, _, gathered, _ = _setup(4, 0.0, replace(NEMO, cp_overlap=False))
    assert gathered.attention_forward_s == pytest.approx(bare[0])


def _pure_attention_times(plan: ParallelPlan) -> tuple[float, float]:
    from clusterforge.perf.attention import attention_backward_s, attention_forward_s

    arch = load_catalog().models["llama3-8b"]
    perf = gpu_perf(load_catalog().gpus["h100-sxm"], "bf16")
    return attention_forward_s(arch, plan, perf, NEMO), attention_backward_s(arch, plan, perf, NEMO)


def test_a_ring_across_nodes_takes_fewer_sms_from_the_attention_it_hides_behind() -> None:
    """NCCL gives a send/receive to a peer across the network 2 channels (one CTA each),
    against one per NVLink of the path to a peer in the node, as many as a collective's:
    the hidden transfers of a ring whose every hop leaves the node slow the attention less
    than the same transfers inside a node; a ring with both kinds of hops pays the larger
    of its two slowdowns. A transfer longer than the step is exposed either way."""
    arch, plan, times, fabric = _setup(4, 0.001)
    in_node = layer_comm(arch, plan, times, fabric, NEMO, 8).cp_s
    across = layer_comm(arch, plan, times, fabric, NEMO, 1).cp_s
    mixed = layer_comm(arch, plan, times, fabric, NEMO, 2).cp_s
    assert 0.0 < across < mixed <= in_node
    assert across < 0.25 * in_node
    _, _, slow_times, slow = _setup(4, 1.0)
    slow_in_node = layer_comm(arch, plan, slow_times, slow, NEMO, 8).cp_s
    slow_across = layer_comm(arch, plan, slow_times, slow, NEMO, 1).cp_s
    chunk_s = _kv_bytes(arch, plan) / 4 / 2**30
    excess = 3 * (chunk_s - slow_times.attention_forward_s / 4)
    assert excess > 0.0
    assert slow_in_node > slow_across > excess


def test_compiled_pytorch_context_parallelism_waits_for_every_transfer_where_it_is_issued() -> None:
    """Under torch.compile (``fused_elementwise``) the traced ring waits for each functional
    collective right behind it (``_maybe_wrap_tensor`` returns ``wait_tensor`` when tracing;
    Inductor keeps the wait there without ``reorder_for_compute_comm_overlap``): the K, V
    all-gather of the forward and of the backward and all cp FP32 dK, dV passes are exposed
    whole, however long the attention they would have hidden behind."""
    compiled = replace(TORCHTITAN, fused_elementwise=True)
    assert not TORCHTITAN.fused_elementwise  # torchtitan's default: eager
    arch, plan, times, fabric = _torch_setup(4, 0.001, compiled)
    exposed = layer_comm(arch, plan, times, fabric, compiled, 8).cp_s
    expanded = _kv_bytes(arch, plan) * arch.num_heads / arch.num_kv_heads
    gather_s = 0.001 * expanded / 2**30
    grads_s = 0.001 * (2 * expanded / 4) / 2**30
    assert exposed == pytest.approx(2 * gather_s + 4 * grads_s)
    _, _, eager_times, eager_fabric = _torch_setup(4, 0.001)
    eager = layer_comm(arch, plan, eager_times, eager_fabric, TORCHTITAN, 8).cp_s
    assert exposed > eager
    # full recomputation reruns the forward's gather, exposed again
    recomputed = plan.with_(recompute="full")
    again = layer_comm(
        arch,
        recomputed,
        layer_times(arch, recomputed, gpu_perf(load_catalog().gpus["h100-sxm"], "bf16"), compiled),
        StepFabric(0.001, []),
        compiled,
        8,
    ).cp_s
    assert again == pytest.approx(3 * gather_s + 4 * grads_s)
