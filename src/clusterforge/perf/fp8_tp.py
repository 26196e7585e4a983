"""What torchao's float8 tensor parallelism adds around its casts: blocking amax reductions
and, under torchtitan's per-op checkpointing, the casts recomputed in the backward.

Amax reductions. torchtitan applies torchao's ``PrepareFloat8ModuleInput``,
``Float8ColwiseParallel`` and ``Float8RowwiseParallel`` to every block when TP runs with
float8 tensor-wise scaling (``apply_tp`` in ``torchtitan/models/llama3/parallelize_llama.py``
at 820504e, June 2025; ``torchtitan/parallelisms/parallelize_llama.py`` at 9dec370, Dec
2024). Each style casts a DTensor, not a local tensor (``torchao/float8/
float8_tensor_parallel.py``, pytorch/ao eab345c): the attention and feed-forward inputs on
their sequence shard (``Shard(1)``) before the FP8 all-gather, the ``wo`` and ``w2`` inputs
on their hidden shard (``Shard(-1)``), and, in the backward, every Linear's output gradient
(``NoopFwToFloat8BwDynamic`` applied in each style's ``_prepare_output_fn``). The cast finds
its tensor-wise scale with ``torch.max(torch.abs(x))`` (``tensor_to_amax`` in
``torchao/float8/float8_utils.py``); on a sharded DTensor that reduction is a linear one
(``LINEAR_REDUCTION_OP_MAP``: ``aten.max.default -> "max"`` in PyTorch's
``torch/distributed/tensor/_ops/_math_ops.py``), so its result is ``Partial("max")`` and the
scale's division, not linear in it, redistributes it to ``Replicate``: one all-reduce of one
FP32 scalar over the TP group before every cast can run. It is a collective of its own on the
critical path, next to no matmul, so neither micro-pipelined TP (which fuses only all-gather
and reduce-scatter matmul patterns) nor anything else hides it: its whole latency is exposed.

Per dense layer: forward, one per module input (attention, feed-forward; one for a parallel
block) and one per row-parallel input (``wo``, ``w2``); backward, one per Linear (``wq``,
``wk``, ``wv``, ``wo``, ``w1``, ``w3``, ``w2`` for a gated MLP). A full recomputation runs the
forward's again. Under per-op checkpointing the ``aten.max`` outputs are saved (torchtitan's
``_save_list``: "always save the result of max"), so the recomputed casts start from the saved
local maxima; the scalar all-reduce after them is not in that list either, but whether the
compiled backward runs it again is not established, so none is counted (the lower bound).
MoE layers are left out (torchtitan parallelises their experts with other styles).

Gathered gradients. ``Float8RowwiseParallel`` casts the ``wo`` and ``w2`` output gradients on
their sequence shard and the redistribution's backward all-gathers the FP8 data; a
``Float8Tensor`` carries one layout, so the weight-gradient GEMM's column-major operand is
copied from the gathered gradient (``preprocess_addmm`` in ``torchao/float8/float8_ops.py``:
read and write 1 B per element of ``tokens x h``), and the shard's cast, which under
``torch.compile`` would otherwise write the transposed copy too, writes one layout.

Recomputed casts. torchtitan's per-op policy saves matmul, SDPA, reduce-scatter and ``max``
outputs only; the FP8 copies of the Linear inputs are none of these, and every weight
gradient needs its input's FP8 copy, so the backward recomputes each forward input cast
(read BF16, write FP8) from the saved amax: the cast pass of
:data:`~clusterforge.perf.fp8.TORCHAO_AMAX_CAST_BYTES` without its amax read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from clusterforge.perf.flops import ffn_size, q_dim
from clusterforge.perf.parallel import ParallelPlan, rank_groups, tokens_per_gpu
from clusterforge.perf.roofline import GpuPerf, memory_time_s
from clusterforge.perf.stack import Stack

if TYPE_CHECKING:
    from clusterforge.catalog import ModelArch
    from clusterforge.perf.comm import CommModel

__all__ = [
    "AMAX_BYTES",
    "TORCHAO_CAST_ONLY_BYTES",
    "amax_all_reduces",
    "amax_reduce_s",
    "gathered_grad_copy_bytes",
    "recomputed_cast_s",
]

AMAX_BYTES = 4  # one FP32 scalar per reduction
# The cast pass without the amax read, bytes per element ([D], the counts of
# ``TORCHAO_AMAX_CAST_BYTES`` in fp8.py): compiled, read BF16 and write FP8 (2 + 1); eager,
# to FP32 (2 + 4), multiply (4 + 4), clamp (4 + 4), to FP8 (4 + 1).
TORCHAO_CAST_ONLY_BYTES = {"compiled": 3.0, "eager": 27.0}
# Row-parallel Linears of a dense block (``wo``, ``w2``), each casting its own input.
ROW_PARALLEL_LINEARS = 2


def gathered_grad_copy_bytes(arch: ModelArch, plan: ParallelPlan, stack: Stack) -> float:
    """HBM bytes per token and layer that the row-parallel gradients' gather moves from the
    shard's cast to a copy of the gathered gradient (module docstring): ``+2 h`` each for the
    column-major copy of the gathered tensor, less the transposed write (compiled, 1 B) or
    copy (eager, 2 B) of ``h / t`` that the per-Linear count puts on the shard."""
    if not _float8_tp(arch, plan, stack):
        return 0.0
    h, t = arch.hidden_size, plan.layout.tp
    shard_copy = 1.0 if stack.fused_elementwise else 2.0
    return ROW_PARALLEL_LINEARS * (2.0 * h - shard_copy * h / t)


def _float8_tp(arch: ModelArch, plan: ParallelPlan, stack: Stack) -> bool:
    """Whether the layer runs torchao's float8 TP styles (FP8, torchao, sequence-parallel TP,
    float8 all-gather; dense layers only)."""
    return (
        plan.precision == "fp8"
        and stack.fp8_torchao
        and stack.tp_fp8_all_gather
        and plan.layout.tp > 1
        and plan.sequence_parallel
        and arch.num_experts == 1
    )


def amax_all_reduces(arch: ModelArch, plan: ParallelPlan, stack: Stack) -> tuple[int, int]:
    """Blocking amax all-reduces of one layer and micro-batch: (forward, backward).

    The backward count includes a full recomputation's repeat of the forward's.
    """
    if not _float8_tp(arch, plan, stack):
        return 0, 0
    module_inputs = 1 if arch.parallel_block else 2
    forward = module_inputs + ROW_PARALLEL_LINEARS
    up_linears = 2 if arch.gated_mlp else 1
    linears = 3 + 1 + up_linears + 1  # wq, wk, wv, wo, the up projection(s), w2
    backward = linears + (forward if plan.recompute == "full" else 0)
    return forward, backward


def amax_reduce_s(arch: ModelArch, plan: ParallelPlan, comm: CommModel, stack: Stack) -> float:
    """Exposed seconds of one layer's amax all-reduces per micro-batch (module docstring)."""
    forward, backward = amax_all_reduces(arch, plan, stack)
    if forward + backward == 0:
        return 0.0
    one = comm.collective_time_s("all_reduce", AMAX_BYTES, rank_groups(plan, "tp"))
    return (forward + backward) * one


def recomputed_cast_s(arch: ModelArch, plan: ParallelPlan, perf: GpuPerf, stack: Stack) -> float:
    """Seconds per layer and micro-batch of the FP8 input casts that torchtitan's per-op
    checkpointing recomputes in the backward (module docstring): the norm-fed inputs on
    their sequence shard (once each compiled, once per reading Linear eager), the ``wo`` and
    ``w2`` inputs on their hidden shard."""
    if not (
        plan.precision == "fp8"
        and stack.fp8_torchao
        and plan.recompute == "selective"
        and stack.selective_recompute == "every_other_matmul"
        and arch.num_experts == 1
    ):
        return 0.0
    t, h = plan.layout.tp, arch.hidden_size
    shard = t if plan.sequence_parallel else 1
    compiled = stack.fused_elementwise
    up_linears = 2 if arch.gated_mlp else 1
    readers = [3 + up_linears] if arch.parallel_block else [3, up_linears]
    casts = [1 if compiled else n for n in readers]
    elements = sum(casts) * h / shard + q_dim(arch) / t + ffn_size(arch) / t
    mode = "compiled" if compiled else "eager"
    num_bytes = elements * tokens_per_gpu(plan) * TORCHAO_CAST_ONLY_BYTES[mode]
    kernels_per_cast = 1 if compiled else 4
    return memory_time_s(num_bytes, perf, num_kernels=(len(casts) + 2) * kernels_per_cast)
