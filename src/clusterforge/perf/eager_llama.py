"""The element-wise work of the eager Llama blocks, counted op by op.

Two PyTorch Llama code paths run their blocks in eager mode unless ``torch.compile`` is on,
and the op census (``benchmarks/eager_llama_census.py`` ``llama_census``: the block run
forward and backward under a ``TorchDispatchMode``, every ATen op with its tensor sizes, an
expanded input read once per stored element) counts each:

* ``torchtitan`` (the ``torchtitan`` stack): ``TransformerBlock`` in
  ``torchtitan/models/llama/model.py`` and ``torchtitan/models/norms.py`` at 9dec370
  (2024-12-26), eager unless ``[compile]``;
* ``fms`` (the ``fsdp`` stack's Llama rows, IBM fms-fsdp at 5e522b4, 2024-03-13):
  foundation-model-stack's ``LLaMABlock`` (``fms/models/llama.py``, ``fms/modules/`` at
  f29e546d, 2024-03-13), eager unless ``use_torch_compile``.

Per token, in BF16 activations, both have:

* each RMSNorm (torchtitan ``self._norm(x.float()).type_as(x) * self.weight``; fms
  ``LayerNormParameterized(use_mean=False, use_high_precision_pow=True)``, the same ops
  with ``self.weight * x``) runs 8 kernels forward: the FP32 upcast (2 + 4 B per element),
  ``pow`` (4 + 4), ``mean`` (4), ``add`` eps and ``rsqrt`` (per-token scalars),
  ``x * rsqrt`` (4 + 4), the cast back (4 + 2), the weight's ``mul`` (2 + 2): 36 B per
  element; its autograd backward 16 kernels, 92 B per element (``RMSNORM_BACKWARD_BYTES``);
* K and V copied to every query head when there are fewer K/V heads (torchtitan
  ``repeat_kv``: ``expand(...).reshape``; fms ``unsqueeze(2).expand(...).flatten(1, 2)``):
  one copy each, reading ``kv_dim`` and writing ``q_dim``; the backward sums the copies back;
* SwiGLU (torchtitan ``silu(w1(x)) * w3(x)``, fms ``GatedLinearUnit`` ``a(wg(x)) *
  w1(x)``): ``silu`` (2 + 2 B per FFN element) and the gate ``mul`` (2 + 2 + 2); backward
  two ``mul`` and ``silu_backward`` (6 B each);
* two residual adds (6 B); in the backward, autograd sums the gradients of each norm's output
  from its consumers (Q, K, V; the two FFN inputs: three adds) and the two residual branch
  points (two adds), 6 B each.

They differ in the rotary embedding (:class:`LlamaCode`):

* torchtitan (``apply_rotary_emb``) upcasts Q and K to FP32 (2 + 4), multiplies them as
  complex numbers by ``freqs_cis`` (4 + 4, plus one read of the ``seq x head_dim/2``
  complex64 ``freqs_cis``) and casts back (4 + 2): 20 B per element, 3 kernels per tensor;
  the backward the same passes in reverse plus a ``clone`` materializing ``freqs_cis.conj()``
  (autograd's ``mul`` backward multiplies by the conjugate);
* fms (``RotaryEmbedding.adjusted_qk``, no position ids given) builds the position ids on
  the device (``arange``, ``repeat`` over the batch, ``torch.max`` of the first column and
  an ``add``: 4 small kernels), gathers its ``[positions, head_dim/2, 2, 2]`` FP32 rotation
  table for every token (``index``: 8 B per ``head_dim`` element of each token written, the
  table read once per position), then per Q and K tensor: the FP32 upcast (2 + 4), a
  broadcast ``mul`` of each pair by its 2x2 rotation (4 + 8, plus a read of the gathered
  table), a ``sum`` over the pair (8 + 4) and the cast back (4 + 2): 36 B per element,
  4 kernels per tensor; the backward the same passes in reverse (no table gather). With
  K/V copies, the backward also copies dV once (``sum`` writes it contiguous in
  ``[batch, kv_heads, seq, head_dim]``, and ``view`` back to ``[batch, seq, kv_dim]``
  needs a ``clone``: 2 + 2 B per ``kv_dim`` element).

The attention (SDPA's FlashAttention-2, whose output's ``transpose.contiguous()`` is
already in that layout) is timed by the attention model; parameters (norm weights) are left
out. Norms and residuals are replicated on every TP rank unless sequence parallelism splits
them; the gradient sums of the norms' outputs, like fms's gathered rotation table, are taken
on every TP rank for all the rank's tokens.
"""

from __future__ import annotations

from dataclasses import dataclass

from clusterforge.catalog import ModelArch
from clusterforge.perf.flops import ffn_size, head_dim, kv_dim, kv_heads, q_dim
from clusterforge.perf.parallel import ParallelPlan, tokens_per_gpu
from clusterforge.perf.stack_base import Stack

__all__ = ["LLAMA_CODES", "LlamaCode", "llama_census_backward", "llama_census_forward"]

RMSNORM_FORWARD_BYTES = 36  # per element: 6 + 8 + 4 + 8 + 6 + 4
RMSNORM_FORWARD_ROW_BYTES = 24  # per token: mean's write 4, add 8, rsqrt 8, the mul's read 4
RMSNORM_FORWARD_KERNELS = 8
# per element: * weight 6 + 4 + 2, cast 6, * rsqrt 12 + 8 + 4, mean 4, pow 8 + 8 + 12,
# the two paths' sum 12, cast 6
RMSNORM_BACKWARD_BYTES = 92
RMSNORM_BACKWARD_ROW_BYTES = 40  # per token: sum 4, rsqrt's backward 28, mean 4, * rsqrt 4
RMSNORM_BACKWARD_KERNELS = 16
REPEAT_KV_BYTES = 2  # per element read (kv_dim) and written (q_dim)
ADD_BYTES = 6  # read 2 + 2, write 2
SWIGLU_FORWARD_BYTES = 10  # silu 4, gate mul 6
SWIGLU_BACKWARD_BYTES = 18  # two mul and silu_backward, 6 each


@dataclass(frozen=True)
class LlamaCode:
    """The rotary embedding of one eager Llama code path, as the census counts it (a pair
    of numbers is (forward, backward)). ``rotary_bytes``: per Q or K element, each pass;
    ``rotary_kernels``: per tensor; ``table_kernels``: once per layer (the forward's
    position ids and table gather); ``table_position_bytes`` and ``table_token_bytes``:
    rotation-table bytes per ``head_dim`` element of each position (read once per sequence)
    and of each token; ``ids_bytes``: the forward's position-id bytes per position and per
    token; ``copies_dv``: the backward copies dV back to ``[batch, seq, kv_dim]`` under
    K/V copies."""

    rotary_bytes: int
    rotary_kernels: tuple[int, int]
    table_kernels: int
    table_position_bytes: tuple[int, int]
    table_token_bytes: tuple[int, int]
    ids_bytes: tuple[int, int]
    copies_dv: bool


# complex64 freqs_cis, 8 B per 2 head_dim elements, read by each of the two multiplies in
# both passes, and by the backward's two clones of its conjugate (read and write)
TORCHTITAN = LlamaCode(20, (3, 4), 0, (2 * 4, (2 * 2 + 2) * 4), (0, 0), (0, 0), False)
# the gathered table: 16 B per 2 head_dim elements (a 2x2 FP32 rotation), written by the
# index and read by each multiply (forward: 8 + 2 x 8, backward 2 x 8), the table read once
# per position; position ids: arange's write and repeat's read 8 + 8 per position, repeat's
# write and index's read 8 + 8 per token
FMS = LlamaCode(36, (4, 4), 5, (8, 0), (24, 16), (16, 16), True)
LLAMA_CODES: dict[str, LlamaCode] = {"torchtitan": TORCHTITAN, "fsdp": FMS}


def _code(arch: ModelArch, stack: Stack) -> LlamaCode | None:
    """The stack's eager Llama code path when the layer is its dense Llama block (RMSNorm,
    RoPE, SwiGLU); ``None`` otherwise."""
    llama = (
        not stack.fused_elementwise
        and not stack.dropout
        and arch.normalization == "rmsnorm"
        and arch.gated_mlp
        and arch.position_embedding == "rope"
        and not arch.parallel_block
        and arch.num_experts <= 1
    )
    return LLAMA_CODES.get(stack.name) if llama else None


def _repeats(arch: ModelArch) -> bool:
    return kv_heads(arch) < arch.num_heads


def llama_census_forward(
    arch: ModelArch, plan: ParallelPlan, stack: Stack
) -> tuple[float, int] | None:
    """(HBM bytes, kernels) of the element-wise ops of one layer's forward on one GPU, as the
    op census counts them; ``None`` where the census does not cover the layer."""
    code = _code(arch, stack)
    if code is None:
        return None
    h, f, q, kv, d = arch.hidden_size, ffn_size(arch), q_dim(arch), kv_dim(arch), head_dim(arch)
    norms = 2 * (RMSNORM_FORWARD_BYTES * h + RMSNORM_FORWARD_ROW_BYTES)
    replicated = norms + 2 * ADD_BYTES * h
    gathered = code.table_token_bytes[0] * d + code.ids_bytes[1]
    split = code.rotary_bytes * (q + kv) + SWIGLU_FORWARD_BYTES * f
    # norms, residual adds, rotary, the table's, silu and the gate mul
    kernels = 2 * RMSNORM_FORWARD_KERNELS + 2 + 2 * code.rotary_kernels[0] + code.table_kernels + 2
    if _repeats(arch):
        split += 2 * REPEAT_KV_BYTES * (q + kv)
        kernels += 2
    positions = code.table_position_bytes[0] * d + code.ids_bytes[0]
    return _per_gpu(plan, replicated, gathered, split, positions), kernels


def llama_census_backward(
    arch: ModelArch, plan: ParallelPlan, stack: Stack
) -> tuple[float, int] | None:
    """(HBM bytes, kernels) of the element-wise ops of one layer's backward on one GPU, as
    the op census counts them; ``None`` where the census does not cover the layer."""
    code = _code(arch, stack)
    if code is None:
        return None
    h, f, q, kv, d = arch.hidden_size, ffn_size(arch), q_dim(arch), kv_dim(arch), head_dim(arch)
    norms = 2 * (RMSNORM_BACKWARD_BYTES * h + RMSNORM_BACKWARD_ROW_BYTES)
    replicated = norms + 2 * ADD_BYTES * h
    # the norms' output-gradient sums, before the reduce-scatter; the gathered table's reads
    gathered = 3 * ADD_BYTES * h + code.table_token_bytes[1] * d
    split = code.rotary_bytes * (q + kv) + SWIGLU_BACKWARD_BYTES * f
    # norms, gradient sums, rotary, the SwiGLU's three
    kernels = 2 * RMSNORM_BACKWARD_KERNELS + 5 + 2 * code.rotary_kernels[1] + 3
    if _repeats(arch):
        split += 2 * REPEAT_KV_BYTES * (q + kv)
        kernels += 2
        if code.copies_dv:
            split += 2 * REPEAT_KV_BYTES * kv
            kernels += 1
    positions = code.table_position_bytes[1] * d
    return _per_gpu(plan, replicated, gathered, split, positions), kernels


def _per_gpu(
    plan: ParallelPlan, replicated: float, gathered: float, split: float, positions: float
) -> float:
    """Per-token bytes to one GPU's bytes per micro-batch: TP splits the heads and the FFN,
    sequence parallelism the norms and residuals; ``positions`` bytes are taken once per
    position of the micro-batch's sequence (the rotary tables)."""
    tp = plan.layout.tp
    sp = tp if plan.sequence_parallel else 1
    tokens = tokens_per_gpu(plan)
    per_token = replicated / sp + gathered + split / tp
    return per_token * tokens + positions * tokens / plan.micro_batch
