"""Census of the ATen ops of two eager Llama blocks, forward and backward.

The same recording as :mod:`benchmarks.eager_op_census` (every kernel-launching ATen op under
a ``TorchDispatchMode``, every input read once per stored element, every output written
once; SDPA's FlashAttention-2 kept opaque: one kernel on the GPU, timed by the model's
attention) for the two eager Llama code paths the model charges:

* ``torchtitan``: ``TransformerBlock`` (``torchtitan/models/llama/model.py``,
  ``models/norms.py`` at 9dec370, 2024-12-26);
* ``fms``: IBM foundation-model-stack's ``LLaMABlock`` as fms-fsdp trains it
  (``fms/models/llama.py`` and ``fms/modules/{layernorm,positions,attention,feedforward}.py``
  at f29e546d, 2024-03-13, the latest ibm-fms the fms-fsdp README of that day (5e522b4)
  recommends; ``model(input)`` with no mask or position ids, so a causal SDPA call).

Run: ``PYTHONPATH=$PWD/src:$PWD python benchmarks/eager_llama_census.py``.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from benchmarks.eager_op_census import Census, OpaqueFlashAttention, per_token_h

Block = Callable[[torch.Tensor, dict[str, torch.Tensor], int, int], torch.Tensor]


def _rmsnorm(t: torch.Tensor, w: torch.Tensor, eps: float, weight_first: bool) -> torch.Tensor:
    """Both RMSNorms: FP32 upcast, ``x * rsqrt(mean(x^2) + eps)``, cast back, times the BF16
    weight (torchtitan ``RMSNorm``; fms ``LayerNormParameterized(use_mean=False,
    use_high_precision_pow=True)``, which multiplies ``self.weight * x``)."""
    f = t.float()
    n = (f * torch.rsqrt(f.pow(2).mean(-1, keepdim=True) + eps)).type_as(t)
    return w * n if weight_first else n * w


def llama_block(
    x: torch.Tensor, p: dict[str, torch.Tensor], heads: int, kv_heads: int
) -> torch.Tensor:
    """torchtitan's ``TransformerBlock.forward`` (eager, no torch.compile): composite
    RMSNorm, separate ``wq``/``wk``/``wv``, complex-form rotary, ``repeat_kv``, SDPA (opaque:
    one FlashAttention-2 kernel on the GPU), the output's ``transpose(1, 2).contiguous()``,
    SwiGLU."""
    b, s, h = x.shape
    hd = h // heads

    def rotary(t: torch.Tensor, freqs: torch.Tensor) -> torch.Tensor:
        c = torch.view_as_complex(t.float().reshape(*t.shape[:-1], -1, 2))
        return torch.view_as_real(c * freqs).flatten(3).type_as(t)

    a = _rmsnorm(x, p["n1"], 1e-6, weight_first=False)
    xq = F.linear(a, p["wq"]).view(b, s, -1, hd)
    xk = F.linear(a, p["wk"]).view(b, s, -1, hd)
    xv = F.linear(a, p["wv"]).view(b, s, -1, hd)
    xq, xk = rotary(xq, p["freqs"]), rotary(xk, p["freqs"])
    rep = heads // kv_heads
    keys = xk.unsqueeze(3).expand(b, s, kv_heads, rep, hd).reshape(b, s, heads, hd)
    values = xv.unsqueeze(3).expand(b, s, kv_heads, rep, hd).reshape(b, s, heads, hd)
    q, k, v = (t.transpose(1, 2) for t in (xq, keys, values))
    o = OpaqueFlashAttention.apply(q, k, v).transpose(1, 2).contiguous().view(b, s, -1)
    x = x + F.linear(o, p["wo"])
    m = _rmsnorm(x, p["n2"], 1e-6, weight_first=False)
    return x + F.linear(F.silu(F.linear(m, p["w1"])) * F.linear(m, p["w3"]), p["w2"])


def _fms_rotary(
    q: torch.Tensor, k: torch.Tensor, table: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """fms ``RotaryEmbedding.adjusted_qk`` with ``position_ids=None``: position ids built on
    the device, ``torch.max`` of their first column plus the length (``compute_freqs_cis``'s
    argument; the cached table is returned at once), the ``[L, head_dim/2, 2, 2]`` FP32
    rotation table gathered per token, then each pair rotated as a broadcast ``mul`` and a
    ``sum`` in FP32 (no complex numbers), cast back."""
    seq_len = max(k.size(1), q.size(1))
    position_ids = torch.arange(0, seq_len, dtype=torch.long).repeat(k.size(0), 1)
    q_ = q.float().view(*q.size()[:-1], -1, 2)
    k_ = k.float().view(*k.size()[:-1], -1, 2)
    max_start_pos = torch.max(position_ids[:, 0])
    _ = max_start_pos + seq_len
    freqs = table[position_ids].float()
    q_out = freqs[:, -q.size(1) :, None].mul(q_.unsqueeze(-2)).sum(5).flatten(3).type_as(q)
    k_out = freqs[:, -k.size(1) :, None].mul(k_.unsqueeze(-2)).sum(5).flatten(3).type_as(k)
    return q_out.view_as(q), k_out.view_as(k)


def fms_llama_block(
    x: torch.Tensor, p: dict[str, torch.Tensor], heads: int, kv_heads: int
) -> torch.Tensor:
    """fms ``LLaMABlock.forward`` (no dropout, no cache): ``ln``, ``MultiHeadAttention``
    (``query``/``key``/``value``, rotary, heads transposed, K and V expanded to the query
    heads with ``unsqueeze(2).expand(...).flatten(1, 2)`` when ``kvheads < nheads``, SDPA,
    ``transpose(2, 1).contiguous()``, ``dense``), residual, ``ff_ln``, ``GatedLinearUnit``
    (``a(wg(x)) * w1(x)``, ``a`` = ``nn.SiLU`` for ``"swish"``), residual."""
    b, s, h = x.shape
    hd = h // heads
    a = _rmsnorm(x, p["n1"], 1e-5, weight_first=True)
    queries = F.linear(a, p["wq"]).view(b, s, heads, hd)
    keys = F.linear(a, p["wk"]).view(b, s, kv_heads, hd)
    values = F.linear(a, p["wv"]).view(b, s, kv_heads, hd)
    queries, keys = _fms_rotary(queries, keys, p["table"])
    queries, keys, values = (t.transpose(2, 1) for t in (queries, keys, values))
    rep = heads // kv_heads
    if rep != 1:
        keys = keys.unsqueeze(2).expand(-1, -1, rep, -1, -1).flatten(1, 2)
        values = values.unsqueeze(2).expand(-1, -1, rep, -1, -1).flatten(1, 2)
    o = OpaqueFlashAttention.apply(queries, keys, values)
    x = F.linear(o.transpose(2, 1).contiguous().view(b, s, h), p["wo"]) + x
    m = _rmsnorm(x, p["n2"], 1e-5, weight_first=True)
    return F.linear(F.silu(F.linear(m, p["w3"])) * F.linear(m, p["w1"]), p["w2"]) + x


BLOCKS: dict[str, Block] = {"torchtitan": llama_block, "fms": fms_llama_block}


def _params(h: int, heads: int, kv_heads: int, seq: int) -> dict[str, torch.Tensor]:
    """BF16 weights (FFN 4h x 2/3) and both rotary tables: torchtitan's complex64
    ``freqs_cis`` per position, fms's ``[positions, head_dim/2, 2, 2]`` FP32 rotations."""
    f, hd = 2 * 4 * h // 3, h // heads
    shapes = {
        "n1": (h,),
        "n2": (h,),
        "wq": (h, h),
        "wk": (kv_heads * hd, h),
        "wv": (kv_heads * hd, h),
        "wo": (h, h),
        "w1": (f, h),
        "w3": (f, h),
        "w2": (h, f),
    }
    p = {k: torch.randn(v, dtype=torch.bfloat16, requires_grad=True) for k, v in shapes.items()}
    angles = torch.outer(torch.arange(seq).float(), torch.rand(hd // 2))
    p["freqs"] = torch.polar(torch.ones_like(angles), angles).view(1, seq, 1, hd // 2)
    cos, sin = torch.cos(angles), torch.sin(angles)
    p["table"] = torch.stack([cos, -sin, sin, cos], dim=2).view(seq, hd // 2, 2, 2)
    return p


def llama_census(
    h: int = 256,
    heads: int = 4,
    kv_heads: int = 2,
    seq: int = 64,
    batch: int = 2,
    code: str = "torchtitan",
) -> dict[str, Census]:
    """Forward and backward census of one eager Llama block of ``code`` (:data:`BLOCKS`)."""
    p = _params(h, heads, kv_heads, seq)
    x = torch.randn(batch, seq, h, dtype=torch.bfloat16, requires_grad=True)
    with Census() as fwd:
        y = BLOCKS[code](x, p, heads, kv_heads)
    grad = torch.randn_like(y)
    with Census() as bwd:
        y.backward(grad)
    return {"forward": fwd, "backward": bwd}


def print_llama(h: int = 256, tokens: int = 128) -> None:
    """Each Llama census against the model's charge for the stack that runs that code,
    before (forward's element-wise bytes, backward twice them) and as counted
    (:mod:`clusterforge.perf.eager_llama`)."""
    for code, stack_name in (("torchtitan", "torchtitan"), ("fms", "fsdp")):
        for pass_name, c in llama_census(h, code=code).items():
            kernels, nbytes, _ = per_token_h(c, tokens, h)
            print(
                f"Llama block ({code}, eager), {pass_name}: {kernels} non-GEMM kernels, "
                f"{nbytes:.1f} B/token/h, {len(c.gemms)} GEMMs"
            )
            for name, b in c.ops:
                print(f"    {name:40s} {b / tokens / h:6.2f} B/token/h")
        for line in _model_lines(h, tokens, stack_name):
            print(line)


def _model_lines(h: int, tokens: int, stack_name: str) -> list[str]:
    from clusterforge.catalog import ModelArch
    from clusterforge.job import JobLayout
    from clusterforge.perf import compute
    from clusterforge.perf.eager_llama import llama_census_backward, llama_census_forward
    from clusterforge.perf.parallel import ParallelPlan
    from clusterforge.perf.stack import stack_named

    arch = ModelArch(
        id="census-llama",
        num_layers=1,
        hidden_size=h,
        num_heads=4,
        num_kv_heads=2,
        ffn_hidden_size=2 * 4 * h // 3,
        gated_mlp=True,
        vocab_size=32000,
        seq_length=64,
    )
    plan = ParallelPlan(JobLayout(), micro_batch=2, seq_length=64, recompute="none")
    stack = stack_named(stack_name)  # type: ignore[arg-type]
    fwd = compute._elementwise_bytes(arch, plan, stack) / tokens / h
    kernels = compute._elementwise_kernels(arch, stack)
    ratio = compute.ELEMENTWISE_BACKWARD_RATIO
    counted = [f(arch, plan, stack) for f in (llama_census_forward, llama_census_backward)]
    now = ", ".join(
        f"{name} {c[0] / tokens / h:.1f} ({c[1]})"
        for name, c in zip(("forward", "backward"), counted, strict=True)
        if c is not None
    )
    return [
        f"model before the census ({stack_name} stack): forward {fwd:.1f} B/token/h "
        f"({kernels} kernels), backward {ratio * fwd:.1f} ({int(ratio * kernels)})",
        f"model now: {now}",
    ]


if __name__ == "__main__":
    print_llama()
