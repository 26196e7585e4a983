"""The element-wise work of torchtitan's eager Llama block, counted op by op.

torchtitan (``torchtitan/models/llama/model.py`` and ``torchtitan/models/norms.py`` at
9dec370, 2024-12-26) runs its ``TransformerBlock`` in eager PyTorch unless ``[compile]`` is
on: the op census (``benchmarks/eager_op_census.py`` ``llama_census``: the block run forward
and backward under a ``TorchDispatchMode``, every ATen op with its tensor sizes, an expanded
input read once per stored element) counts per token, in BF16 activations:

* each ``RMSNorm`` (``norm_type = "rmsnorm"``: ``self._norm(x.float()).type_as(x) *
  self.weight``) runs 8 kernels forward: the FP32 upcast (2 + 4 B per element), ``pow``
  (4 + 4), ``mean`` (4), ``add`` eps and ``rsqrt`` (per-token scalars), ``x * rsqrt``
  (4 + 4), the cast back (4 + 2), ``* weight`` (2 + 2): 36 B per element; its autograd
  backward 16 kernels, 92 B per element (``RMSNORM_BACKWARD_BYTES``);
* the rotary embedding (``apply_rotary_emb``) upcasts Q and K to FP32 (2 + 4), multiplies
  them as complex numbers by ``freqs_cis`` (4 + 4, plus one read of the ``seq x head_dim/2``
  complex64 ``freqs_cis``) and casts back (4 + 2): 20 B per element, 3 kernels per tensor;
  the backward the same passes in reverse plus a ``clone`` materializing ``freqs_cis.conj()``
  (autograd's ``mul`` backward multiplies by the conjugate);
* ``repeat_kv`` (``n_rep > 1``) copies K and V to every query head (``expand(...).reshape``
  of a non-contiguous view: one copy each, reading ``kv_dim`` and writing ``q_dim``); its
  backward sums the copies back (reading ``q_dim``, writing ``kv_dim``);
* SwiGLU: ``silu`` (2 + 2 B per FFN element) and the gate ``mul`` (2 + 2 + 2); backward two
  ``mul`` and ``silu_backward`` (6 B each);
* two residual adds (6 B); in the backward, autograd sums the gradients of each norm's output
  from its consumers (``wq``, ``wk``, ``wv``; ``w1``, ``w3``: three adds) and the two residual
  branch points (two adds), 6 B each.

The attention (SDPA's FlashAttention-2, whose output's ``transpose(1, 2).contiguous()`` is
already in that layout) is timed by the attention model; parameters (norm weights) are left
out. Norms and residuals are replicated on every TP rank unless sequence parallelism splits
them; the gradient sums of the norms' outputs are taken before the gather's reduce-scatter.
"""

from __future__ import annotations

from clusterforge.catalog import ModelArch
from clusterforge.perf.flops import ffn_size, head_dim, kv_dim, kv_heads, q_dim
from clusterforge.perf.parallel import ParallelPlan, tokens_per_gpu
from clusterforge.perf.stack_base import Stack

__all__ = ["llama_census_backward", "llama_census_forward"]

RMSNORM_FORWARD_BYTES = 36  # per element: 6 + 8 + 4 + 8 + 6 + 4
RMSNORM_FORWARD_ROW_BYTES = 24  # per token: mean's write 4, add 8, rsqrt 8, the mul's read 4
RMSNORM_FORWARD_KERNELS = 8
# per element: * weight 6 + 4 + 2, cast 6, * rsqrt 12 + 8 + 4, mean 4, pow 8 + 8 + 12,
# the two paths' sum 12, cast 6
RMSNORM_BACKWARD_BYTES = 92
RMSNORM_BACKWARD_ROW_BYTES = 40  # per token: sum 4, rsqrt's backward 28, mean 4, * rsqrt 4
RMSNORM_BACKWARD_KERNELS = 16
ROTARY_BYTES = 20  # per Q or K element: cast 6, complex mul 8, cast 6 (each pass)
ROTARY_KERNELS = 3  # per tensor, forward; the backward adds a clone of freqs_cis.conj()
FREQS_BYTES = 8  # one complex64 of freqs_cis per 2 head_dim elements
REPEAT_KV_BYTES = 2  # per element read (kv_dim) and written (q_dim)
ADD_BYTES = 6  # read 2 + 2, write 2
SWIGLU_FORWARD_BYTES = 10  # silu 4, gate mul 6
SWIGLU_BACKWARD_BYTES = 18  # two mul and silu_backward, 6 each


def llama_census_covers(arch: ModelArch, stack: Stack) -> bool:
    """Whether the layer is torchtitan's eager Llama block (RMSNorm, RoPE, SwiGLU, dense)."""
    return (
        stack.name == "torchtitan"
        and not stack.fused_elementwise
        and not stack.dropout
        and arch.normalization == "rmsnorm"
        and arch.gated_mlp
        and arch.position_embedding == "rope"
        and not arch.parallel_block
        and arch.num_experts <= 1
    )


def _repeats(arch: ModelArch) -> bool:
    return kv_heads(arch) < arch.num_heads


def llama_census_forward(
    arch: ModelArch, plan: ParallelPlan, stack: Stack
) -> tuple[float, int] | None:
    """(HBM bytes, kernels) of the element-wise ops of one layer's forward on one GPU, as the
    op census counts them; ``None`` where the census does not cover the layer."""
    if not llama_census_covers(arch, stack):
        return None
    h, f, q, kv = arch.hidden_size, ffn_size(arch), q_dim(arch), kv_dim(arch)
    norms = 2 * (RMSNORM_FORWARD_BYTES * h + RMSNORM_FORWARD_ROW_BYTES)
    replicated = norms + 2 * ADD_BYTES * h
    split = ROTARY_BYTES * (q + kv) + SWIGLU_FORWARD_BYTES * f
    kernels = 2 * RMSNORM_FORWARD_KERNELS + 2 + 2 * ROTARY_KERNELS + 2
    if _repeats(arch):
        split += 2 * REPEAT_KV_BYTES * (q + kv)
        kernels += 2
    freqs = 2 * FREQS_BYTES * head_dim(arch) / 2  # two complex multiplies, one read each
    return _per_gpu(plan, replicated, 0.0, split, freqs), kernels


def llama_census_backward(
    arch: ModelArch, plan: ParallelPlan, stack: Stack
) -> tuple[float, int] | None:
    """(HBM bytes, kernels) of the element-wise ops of one layer's backward on one GPU, as
    the op census counts them; ``None`` where the census does not cover the layer."""
    if not llama_census_covers(arch, stack):
        return None
    h, f, q, kv = arch.hidden_size, ffn_size(arch), q_dim(arch), kv_dim(arch)
    norms = 2 * (RMSNORM_BACKWARD_BYTES * h + RMSNORM_BACKWARD_ROW_BYTES)
    replicated = norms + 2 * ADD_BYTES * h
    gathered = 3 * ADD_BYTES * h  # the norms' output-gradient sums, before the reduce-scatter
    split = ROTARY_BYTES * (q + kv) + SWIGLU_BACKWARD_BYTES * f
    kernels = 2 * RMSNORM_BACKWARD_KERNELS + 5 + 2 * (ROTARY_KERNELS + 1) + 3
    if _repeats(arch):
        split += 2 * REPEAT_KV_BYTES * (q + kv)
        kernels += 2
    # two clones of freqs_cis.conj() (read and write) and two complex multiplies reading it
    freqs = (2 * 2 + 2) * FREQS_BYTES * head_dim(arch) / 2
    return _per_gpu(plan, replicated, gathered, split, freqs), kernels


def _per_gpu(
    plan: ParallelPlan, replicated: float, gathered: float, split: float, freqs: float
) -> float:
    """Per-token bytes to one GPU's bytes per micro-batch: TP splits the heads and the FFN,
    sequence parallelism the norms and residuals; ``freqs_cis`` is read once per position."""
    tp = plan.layout.tp
    sp = tp if plan.sequence_parallel else 1
    tokens = tokens_per_gpu(plan)
    per_token = replicated / sp + gathered + split / tp
    return per_token * tokens + freqs * tokens / plan.micro_batch
