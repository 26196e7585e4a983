"""Census of the ATen ops of one eager PyTorch transformer block, forward and backward.

Builds LLM Foundry's MPT block as v0.3.0 runs it (``llmfoundry/models/layers/blocks.py``
``MPTBlock``: ``LPLayerNorm`` (``norm.py``), ``GroupedQueryAttention`` with one fused ``Wqkv``
and ``attn_impl: triton`` (``attention.py`` ``triton_flash_attn_fn``), ``MPTMLP`` with exact
GELU (``ffn.py``), biases on (``no_bias`` defaults to False in ``configuration_mpt.py`` and the
``mpt-*.yaml`` files do not set it), ``resid_pdrop`` 0 (``nn.Dropout(0)`` launches nothing);
mosaicml/llm-foundry v0.3.0) with BF16 parameters, as FSDP's ``MixedPrecision(param_dtype=
bfloat16)`` hands them to the block, runs its forward and backward on small CPU tensors under a
``TorchDispatchMode`` that records every ATen op, and prints per token and per hidden unit the
non-GEMM kernels and their HBM bytes (every input read once, every output written once).

What runs as one fused kernel on the GPU is kept opaque: the Triton FlashAttention kernels
(``flash_attn_triton.py`` ``_flash_attn_forward`` / ``_flash_attn_backward``) are replaced by an
autograd function that issues only the ATen ops those host functions issue around the kernels
(``dq_accum`` FP32 zeroed by the autotuner's ``init_to_zero('DQ')`` pre-hook,
``dq.copy_(dq_accum)``)
and allocates the outputs with ``torch.empty`` (no kernel); the Triton kernels themselves are
timed by the model's attention. ``addmm`` with a 1-D bias is one cuBLASLt GEMM with a bias
epilogue on CUDA as on CPU. CPU and CUDA differ in one op here: ``native_layer_norm_backward``
is one ATen op but two CUDA kernels (the input gradient, then ``GammaBetaBackwardCUDAKernel``
reading the gradient and the input again; ``aten/src/ATen/native/cuda/layer_norm_kernel.cu``),
which the census adds.

Run: ``PYTHONPATH=$PWD/src:$PWD python benchmarks/eager_op_census.py`` (prints the census and the
model's charge for the same layer, then the Llama blocks' of :mod:`benchmarks.eager_llama_census`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import torch
import torch.nn.functional as F
from torch.utils import _pytree as pytree
from torch.utils._python_dispatch import TorchDispatchMode

GEMMS = {"mm", "addmm", "bmm", "baddbmm"}
NO_KERNEL = {
    "view",
    "_unsafe_view",
    "t",
    "transpose",
    "split",
    "split_with_sizes",
    "expand",
    "slice",
    "detach",
    "empty",
    "empty_like",
    "empty_strided",
    "alias",
    "as_strided",
    "unsqueeze",
    "squeeze",
    "permute",
    "reshape",
    "new_empty",
    "new_empty_strided",
    "unbind",
    "select",
    "_reshape_alias",
    "lift_fresh",
    "ones_like",
    "zeros_like",
    "view_as_complex",
    "view_as_real",
    "_conj",
}
# view_as_complex / view_as_real / _conj (the lazy conjugate bit) are views: no kernel;
# ones_like: the loss seed gradient (one per step, not per layer); zeros_like never runs here


class Census(TorchDispatchMode):
    """Records (op, bytes read + written) of every kernel-launching ATen op."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: list[tuple[str, int]] = []
        self.gemms: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        out = func(*args, **(kwargs or {}))
        name = func.overloadpacket.__name__
        if name in GEMMS:
            self.gemms.append(name)
        elif name not in NO_KERNEL:
            flat = pytree.tree_leaves((args, kwargs or {}))  # cat's inputs come as a list
            tensors = [a for a in flat if isinstance(a, torch.Tensor)]
            outs = out if isinstance(out, (tuple, list)) else [out]
            written = [o for o in outs if isinstance(o, torch.Tensor)]
            if name.endswith("_") or name == "copy":  # in-place: the output is the first input
                written = []
            nbytes = sum(_stored(t) * t.element_size() for t in tensors)
            nbytes += sum(t.numel() * t.element_size() for t in written)
            self.ops.append((name, nbytes))
            if name == "native_layer_norm_backward":  # a second CUDA kernel: d(gamma), d(beta)
                dy = args[0]
                self.ops.append(
                    ("layer_norm_gamma_beta_backward", 2 * dy.numel() * dy.element_size())
                )
        return out


def _stored(t: torch.Tensor) -> int:
    """Elements a read of ``t`` fetches: an expanded (stride-0) dimension is read once
    (``repeat_kv``'s ``expand``, a ``mean``'s broadcast gradient), as a GPU kernel's
    repeated loads of one address hit the cache."""
    n = 1
    for size, stride in zip(t.shape, t.stride(), strict=True):
        n *= size if stride != 0 else 1
    return n


class TritonFlashAttention(torch.autograd.Function):
    """The host-side ATen ops of LLM Foundry's ``flash_attn_triton.FlashAttnFunc`` (v0.3.0)."""

    @staticmethod
    def forward(ctx, q, k, v):  # type: ignore[no-untyped-def,override]
        ctx.save_for_backward(q, k, v)
        return torch.empty_like(q)  # o; the forward kernel writes it (timed as attention)

    @staticmethod
    def backward(ctx, do):  # type: ignore[no-untyped-def,override]
        q, k, v = ctx.saved_tensors
        dq_accum = torch.empty_like(q, dtype=torch.float32)
        dq_accum.zero_()  # the autotune pre_hook init_to_zero('DQ')
        dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
        dq.copy_(dq_accum)  # _flash_attn_backward's last line
        return dq, dk, dv


class OpaqueFlashAttention(torch.autograd.Function):
    """FlashAttention-2's varlen call (``flash_attn_fn`` at llm-foundry 5e85bd62d, flash-attn
    2.4.2): its C++ entry points allocate and run everything on the GPU (no ATen op around the
    kernels); the unpadding gathers/scatters around it are charged by the model's
    ``flash_unpad_passes`` and left out here."""

    @staticmethod
    def forward(ctx, q, k, v):  # type: ignore[no-untyped-def,override]
        return torch.empty_like(q)

    @staticmethod
    def backward(ctx, do):  # type: ignore[no-untyped-def,override]
        return torch.empty_like(do), torch.empty_like(do), torch.empty_like(do)


def mpt_block(
    x: torch.Tensor, p: dict[str, torch.Tensor], heads: int, attention: str = "triton"
) -> torch.Tensor:
    """``MPTBlock.forward`` (v0.3.0) without dropout (``resid_pdrop`` 0)."""
    h = x.shape[-1]
    a = F.layer_norm(x, (h,), p["ln1_w"], p["ln1_b"], 1e-5)
    qkv = F.linear(a, p["wqkv"], p["wqkv_b"])
    q, k, v = qkv.split([h, h, h], dim=2)
    q, k, v = (t.unflatten(-1, (heads, h // heads)) for t in (q, k, v))  # rearrange: views
    kernel = TritonFlashAttention if attention == "triton" else OpaqueFlashAttention
    o = kernel.apply(q, k, v).flatten(-2)
    x = x + F.linear(o, p["wo"], p["wo_b"])
    m = F.layer_norm(x, (h,), p["ln2_w"], p["ln2_b"], 1e-5)
    n = F.linear(F.gelu(F.linear(m, p["up"], p["up_b"])), p["down"], p["down_b"])
    return x + n


def mpt_params(h: int) -> dict[str, torch.Tensor]:
    shapes = {
        "ln1_w": (h,),
        "ln1_b": (h,),
        "ln2_w": (h,),
        "ln2_b": (h,),
        "wqkv": (3 * h, h),
        "wqkv_b": (3 * h,),
        "wo": (h, h),
        "wo_b": (h,),
        "up": (4 * h, h),
        "up_b": (4 * h,),
        "down": (h, 4 * h),
        "down_b": (h,),
    }
    return {k: torch.randn(s, dtype=torch.bfloat16, requires_grad=True) for k, s in shapes.items()}


def census(
    attention: str = "triton", h: int = 256, heads: int = 4, batch: int = 2, seq: int = 64
) -> dict[str, Census]:
    """Forward and backward census of one MPT block on [batch, seq, h] BF16 activations."""
    p = mpt_params(h)
    x = torch.randn(batch, seq, h, dtype=torch.bfloat16, requires_grad=True)
    grad = torch.randn(batch, seq, h, dtype=torch.bfloat16)
    with Census() as fwd:
        y = mpt_block(x, p, heads, attention)
    with Census() as bwd:
        y.backward(grad)
    return {"forward": fwd, "backward": bwd}


def per_token_h(c: Census, tokens: int, h: int) -> tuple[int, float, Counter[str]]:
    """(kernels, bytes per token per hidden unit, kernels by op) of one pass."""
    nbytes = sum(b for _, b in c.ops) / tokens / h
    return len(c.ops), nbytes, Counter(name for name, _ in c.ops)


def main() -> None:
    h, tokens = 256, 2 * 64
    for attention in ("triton", "flash"):
        print_census(attention, h, tokens)
        print("model (clusterforge) for the same layer, B/token/h (kernels):")
        for line in model_charge(attention, h, tokens):
            print("    " + line)
    from benchmarks.eager_llama_census import print_llama

    print_llama(h, tokens)


def print_census(attention: str, h: int, tokens: int) -> None:
    for pass_name, c in census(attention, h).items():
        kernels, nbytes, _ = per_token_h(c, tokens, h)
        print(
            f"MPT block, {attention} attention, {pass_name}: {kernels} non-GEMM kernels, "
            f"{nbytes:.1f} B/token/h, "
            f"{len(c.gemms)} GEMMs"
        )
        for name, b in c.ops:
            print(f"    {name:40s} {b / tokens / h:6.2f} B/token/h")


def model_charge(attention: str, h: int, tokens: int) -> list[str]:
    """What the model charges for the census's layer (forward, backward element-wise)."""
    from clusterforge.catalog import ModelArch
    from clusterforge.job import JobLayout
    from clusterforge.perf import compute
    from clusterforge.perf.eager_backward import census_backward
    from clusterforge.perf.parallel import ParallelPlan
    from clusterforge.perf.stack import stack_named

    arch = ModelArch(
        id="census-mpt",
        num_layers=1,
        hidden_size=h,
        num_heads=4,
        vocab_size=50368,
        seq_length=64,
        position_embedding="learned",
        normalization="layernorm",
        linear_bias=True,
    )
    plan = ParallelPlan(JobLayout(), micro_batch=2, seq_length=64, recompute="none")
    stack = replace(stack_named("fsdp"), attention=attention, flash_unpad=attention == "flash")
    fwd = compute._elementwise_bytes(arch, plan, stack) / tokens / h
    fwd_k = compute._elementwise_kernels(arch, stack)
    counted = census_backward(arch, plan, stack)
    bwd = "ratio" if counted is None else f"{counted[0] / tokens / h:.1f} ({counted[1]})"
    ratio = compute.ELEMENTWISE_BACKWARD_RATIO
    return [
        f"forward {fwd:.1f} ({fwd_k})",
        f"backward before the census: {ratio * fwd:.1f} ({int(ratio * fwd_k)})",
        f"backward now: {bwd}",
    ]


if __name__ == "__main__":
    main()
