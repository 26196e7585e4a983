"""PyTorch's micro-pipelined ("async") tensor parallelism: what it hides and what it adds.

Under ``torch.compile`` with ``torch._inductor.config._micro_pipeline_tp`` (torchtitan's
``enable_async_tensor_parallel``), an Inductor pass (``torch/_inductor/fx_passes/
micro_pipeline_tp.py``, PyTorch 2.6-2.8) rewrites two patterns of sequence-parallel TP:

* an all-gather whose result feeds matmuls as their left operand becomes
  ``fused_all_gather_matmul`` (one call for all of them: Q, K and V; gate and up);
* a reduce-scatter whose input is the output of one matmul with no other user becomes
  ``fused_matmul_reduce_scatter`` (output projection; down projection).

Both run decomposed (``torch/distributed/_symmetric_memory/__init__.py``): the matmul is
cut into one chunk per TP rank, and copy engines pull each peer's shard, or push each
peer's partial output, through symmetric memory over NVLink while the next chunk computes,
on two alternating streams. With ``t`` ranks the copies of ``t - 1`` chunks overlap ``t - 1``
chunk matmuls, so a collective of ``c`` seconds next to ``g`` seconds of fused matmuls
leaves ``max(0, c - g (t - 1) / t)`` exposed. Copy engines use no SMs (the module's note on
"low-contention collectives"), so the hidden part costs the matmuls nothing. What the
decomposition adds, on the compute stream:

* all-gather: the local shard copied into the symmetric buffer before the first matmul (not
  overlapped: "we are giving up the chance to overlap 'mv' and 'b' with the first
  shard_consumer"), and copied again into its slot of the gathered output;
* reduce-scatter: the ``t`` partial outputs summed by one reduction kernel after the last
  chunk (``reduce_partials``): it reads the whole unreduced output and writes one shard;
* ``t`` matmul kernels where there was one (the two streams let the chunks' last waves
  overlap, "greatly reducing quantization inefficiency", so each extra chunk costs its
  launch, not a wave).

What stays a plain NCCL collective, exposed as without async TP:

* the reduce-scatters of the input gradients of Q, K, V and of gate, up: autograd sums the
  gradients of the matmuls that share an input, so the reduce-scatter's input is an
  addition, not a matmul;
* the backward's re-gathers of checkpointed inputs, except behind the recomputed matmuls
  that consume them (torchtitan's per-op checkpointing recomputes every other matmul); the
  weight-gradient matmuls take the gathered input as their right operand;
* layers whose TP pair is not a plain matmul pair: a parallel block's one reduce-scatter
  takes the sum of two branches; an MoE layer's experts are grouped GEMMs (its attention
  pair is fused).

Only within an NVLink domain (symmetric memory needs peer access).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from clusterforge.catalog import ModelArch
from clusterforge.perf.flops import ffn_size, q_dim
from clusterforge.perf.memory import layer_matmul_shapes
from clusterforge.perf.parallel import ParallelPlan, tokens_per_gpu
from clusterforge.perf.roofline import BF16_BYTES, GpuPerf, gemm_time_s
from clusterforge.perf.stack import Stack

__all__ = [
    "FusedMatmuls",
    "HbmWork",
    "exposed_s",
    "fused_matmuls",
    "hbm_work",
    "is_micro_pipelined",
]


@dataclass(frozen=True)
class FusedMatmuls:
    """Forward seconds of the matmuls fused with each TP collective of one layer and
    micro-batch on one GPU; zero where that collective is not fused.

    ``attention_in_s`` / ``mlp_in_s``: consumers of the gathered attention / MLP input
    (Q, K, V; gate and up). ``attention_out_s`` / ``mlp_out_s``: producers of the partial sums
    that are reduce-scattered (output and down projections). ``attention_grad_s`` /
    ``mlp_grad_s``: the input-gradient matmuls of the output and down projections, which
    consume the gathered output gradient in the backward. ``attention_regather_s`` /
    ``mlp_regather_s``: recomputed matmuls that consume a re-gathered input in the backward.
    """

    attention_in_s: float = 0.0
    attention_out_s: float = 0.0
    mlp_in_s: float = 0.0
    mlp_out_s: float = 0.0
    attention_grad_s: float = 0.0
    mlp_grad_s: float = 0.0
    attention_regather_s: float = 0.0
    mlp_regather_s: float = 0.0

    @property
    def forward_gathers(self) -> int:
        return (self.attention_in_s > 0) + (self.mlp_in_s > 0)

    @property
    def forward_scatters(self) -> int:
        return (self.attention_out_s > 0) + (self.mlp_out_s > 0)

    @property
    def backward_gathers(self) -> int:
        return (self.attention_grad_s > 0) + (self.mlp_grad_s > 0)


def is_micro_pipelined(plan: ParallelPlan, stack: Stack) -> bool:
    """Whether the plan's TP runs PyTorch's micro-pipelined collectives."""
    return (
        stack.tp_overlap
        and stack.tp_overlap_kind == "micro_pipeline"
        and plan.layout.tp > 1
        and plan.sequence_parallel
    )


def _recomputed_indices(plan: ParallelPlan, stack: Stack, num_matmuls: int) -> set[int]:
    """Indices (in :func:`layer_matmul_shapes` order) of the matmuls the backward recomputes
    under per-op checkpointing: every other one, starting with the second."""
    if plan.recompute != "selective" or stack.selective_recompute != "every_other_matmul":
        return set()
    return set(range(1, num_matmuls, 2))


def fused_matmuls(arch: ModelArch, plan: ParallelPlan, perf: GpuPerf, stack: Stack) -> FusedMatmuls:
    """The matmul seconds next to each fused collective (module docstring); all zero when the
    plan's TP is not micro-pipelined or the layer is a parallel block."""
    if not is_micro_pipelined(plan, stack) or arch.parallel_block:
        return FusedMatmuls()
    tokens = tokens_per_gpu(plan)
    times = [gemm_time_s(tokens, n, k, perf) for n, k in layer_matmul_shapes(arch, plan)]
    recomputed = _recomputed_indices(plan, stack, len(times))
    t, h = plan.layout.tp, arch.hidden_size
    # Input gradients of the row-parallel projections, (tokens x h) @ (h x q/t), (h x f/t):
    # they take the gathered output gradient as their left operand (in FP8 runs the
    # gradient is cast before its gather, and the gathered FP8 data feeds ``_scaled_mm``).
    attention_grad = gemm_time_s(tokens, q_dim(arch) / t, h, perf)
    fused = FusedMatmuls(
        attention_in_s=sum(times[:3]),
        attention_out_s=times[3],
        attention_grad_s=attention_grad,
        attention_regather_s=sum(times[i] for i in recomputed if i < 3),
    )
    if arch.num_experts > 1:  # grouped expert GEMMs: only the attention pair is fused
        return fused
    ups = range(4, len(times) - 1)  # gate and up (or up alone)
    return replace(
        fused,
        mlp_in_s=sum(times[i] for i in ups),
        mlp_out_s=times[-1],
        mlp_grad_s=gemm_time_s(tokens, ffn_size(arch) / t, h, perf),
        mlp_regather_s=sum(times[i] for i in recomputed if i in ups),
    )


def _hidden_s(comm_s: float, matmul_s: float, tp: int) -> float:
    """Exposed seconds of a collective: all of it when nothing is fused with it, else what
    the ``tp - 1`` overlapped chunk matmuls cannot cover."""
    if matmul_s <= 0:
        return comm_s
    return max(0.0, comm_s - matmul_s * (tp - 1) / tp)


def exposed_s(
    fused: FusedMatmuls,
    plan: ParallelPlan,
    *,
    gather_input_s: float,
    gather_s: float,
    scatter_s: float,
    regathers: bool,
) -> float:
    """Exposed TP seconds of one dense layer and micro-batch (two collective pairs per pass).

    ``gather_input_s``: one all-gather of a matmul input (FP8 where cast before it);
    ``gather_s``: one all-gather of an output gradient; ``scatter_s``: one reduce-scatter
    (all BF16 otherwise); ``regathers``: the backward re-gathers the inputs it recomputes from.
    """
    t = plan.layout.tp
    forward = (
        _hidden_s(gather_input_s, fused.attention_in_s, t)
        + _hidden_s(scatter_s, fused.attention_out_s, t)
        + _hidden_s(gather_input_s, fused.mlp_in_s, t)
        + _hidden_s(scatter_s, fused.mlp_out_s, t)
    )
    backward = (
        _hidden_s(gather_s, fused.attention_grad_s, t)
        + _hidden_s(gather_s, fused.mlp_grad_s, t)
        + 2 * scatter_s  # input gradients of Q, K, V and of gate, up: sums, not matmuls
    )
    if regathers:
        backward += _hidden_s(gather_input_s, fused.attention_regather_s, t)
        backward += _hidden_s(gather_input_s, fused.mlp_regather_s, t)
    return forward * (2 if plan.recompute == "full" else 1) + backward


@dataclass(frozen=True)
class HbmWork:
    """HBM bytes and kernels a layer's TP adds on the compute stream, forward and backward."""

    forward_bytes: float
    backward_bytes: float
    forward_kernels: int
    backward_kernels: int


def hbm_work(
    fused: FusedMatmuls,
    plan: ParallelPlan,
    arch: ModelArch,
    stack: Stack,
    *,
    input_bytes: int,
    grad_bytes: int,
    regathers: bool,
) -> HbmWork:
    """The fused collectives' own copies and reduction, plus the DTensor layout copies that
    the collectives left unfused keep (``Stack.tp_layout_copies``, read and write of the
    whole tensor; :func:`clusterforge.perf.compute.tp_layout_copy_bytes`).

    ``input_bytes`` / ``grad_bytes``: bytes per element of the gathered matmul inputs /
    output gradients (1 in FP8 when the stack casts before gathering). Fused all-gather: the local shard is copied twice (into
    the symmetric buffer, into the gathered output), a read and a write each. Fused
    reduce-scatter: the reduction reads the ``t`` BF16 partials (the whole unreduced output)
    and writes one BF16 shard. Each fused call runs ``t`` matmul kernels instead of one
    (``t - 1`` more) plus its copies or reduction.
    """
    t = plan.layout.tp
    elements = plan.micro_batch * plan.seq_length / plan.layout.cp * arch.hidden_size
    shard_copies = 2 * 2 * elements / t  # two copies of one shard, read + write
    reduction = BF16_BYTES * elements * (1 + 1 / t)
    copies = stack.tp_layout_copies
    plain_gather = 2 * input_bytes * elements if copies else 0.0
    plain_grad = 2 * grad_bytes * elements if copies else 0.0
    plain_scatter = 2 * BF16_BYTES * elements if copies else 0.0
    gathers, scatters, grads = fused.forward_gathers, fused.forward_scatters, fused.backward_gathers
    forward = (
        gathers * shard_copies * input_bytes
        + scatters * reduction
        + (2 - gathers) * plain_gather
        + (2 - scatters) * plain_scatter
    )
    backward = grads * shard_copies * grad_bytes + (2 - grads) * plain_grad + 2 * plain_scatter
    if regathers:
        backward += 2 * plain_gather
    per_call = t + 1  # t - 1 more matmul kernels, and two copies or one reduction
    copy_kernels = 1 if copies else 0
    forward_kernels = (gathers + scatters) * per_call + (4 - gathers - scatters) * copy_kernels
    backward_kernels = grads * per_call + (4 - grads + (2 if regathers else 0)) * copy_kernels
    return HbmWork(forward, backward, forward_kernels, backward_kernels)
