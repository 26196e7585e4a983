"""What XLA fuses or drops in a MaxText layer that the ``maxtext`` stack still prices, as a
what-if on the development and calibration rows (the model is not changed by it).

The ``maxtext`` stack prices a layer's element-wise work as separate fused kernels (two
RMSNorms, two residual adds, SwiGLU, the rotary embedding; :mod:`clusterforge.perf.compute`)
and reruns all of them in the backward's recomputation (:func:`clusterforge.perf.remat.
named_recompute_s`). Two mechanisms of the XLA GPU compiler and of JAX's remat, read in
their sources, change that on MaxText's decoder layer (``MaxText/layers/llama2.py`` at
8e55ab1: ``intermediate_inputs = inputs + attention_lnx``, ``layer_output = mlp_lnx +
intermediate_inputs``, each sum right after the output projection's or the MLP output's dot):

- ``bias``: XLA's GEMM rewriter folds ``add(gemm, x)`` into the GEMM as its C matrix
  (``beta = 1``) when the GEMM's result has no other user, BF16 and FP8 cuBLASLt GEMMs alike
  as long as the addend is not FP8 (openxla/xla ``xla/service/gpu/transforms/
  gemm_rewriter.cc``, ``GemmRewriterVisitor::HandleAdd`` with
  ``GemmOrCublasLtMatmulMaybeF8(...).WithOneUser()`` and ``FuseMatrixBiasAdd``). The residual
  add then costs the GEMM epilogue's read of ``x`` (2 bytes per element) in place of reading
  two BF16 tensors and writing one (6 bytes). A GEMM output that the remat policy saves
  (``out_proj``, ``mlpwo`` in ``remat_saved``) has a second user and keeps its add.
- ``dce``: the recomputation reruns only what the backward reads (JAX's remat partial
  evaluation keeps the residuals the backward needs; XLA removes dead code). With Q and K
  saved after the rotary embedding (``query_proj``/``key_proj``, every policy of these rows)
  and the layer output being the next layer's saved input (``decoder_layer_input``), the
  rotary embedding and the second residual add are not rerun; the two norms, SwiGLU and the
  first residual add (the second norm's input) are.

For every MaxText development row (DGX H100 Llama 2 / 3 70B and Google A3 Llama 2 7B),
prints the signed error as predicted and with each mechanism, then the per-class MAPE of
development and calibration with both. Paxml's rows (same stack, Transformer Engine's JAX
layers, not MaxText's decoder) are left as predicted.

    PYTHONPATH=$PWD/src:$PWD python benchmarks/maxtext_xla_fusions.py

Development and calibration rows only (never held-out).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import clusterforge.perf.compute as compute_module
from clusterforge.catalog import ModelArch
from clusterforge.perf.flops import ffn_size, kv_dim, q_dim
from clusterforge.perf.parallel import ParallelPlan, tokens_per_gpu
from clusterforge.perf.roofline import GpuPerf, memory_time_s
from clusterforge.perf.stack import Stack
from clusterforge.perf.step import predict_step
from validation.class_errors import class_summary
from validation.runs import Run, load_runs, predict_run, run_comm, run_design

MAXTEXT_FILES = ("pub_maxtext_fsdp_h100.toml", "pub_maxtext_a3_hsdp.toml")
CANDIDATES = ("bias", "dce")
ADD_BYTES = 6.0  # a BF16 residual add: read two tensors, write one (per element)
FUSED_ADD_BYTES = 2.0  # folded into the GEMM: the epilogue reads the addend
NORM_BYTES = 4.0  # RMSNorm: read and write BF16
GATED_BYTES = 6.0  # SwiGLU: read two BF16 GEMM outputs, write one
ROTARY_BYTES = 4.0  # read and write Q and K
KERNELS = 8  # compute.ELEMENTWISE_KERNELS_PER_LAYER


def _add_bytes(stack: Stack, saved_name: str, fused: bool) -> float:
    """Bytes per element of the residual add after the GEMM tagged ``saved_name``."""
    return FUSED_ADD_BYTES if fused and saved_name not in stack.remat_saved else ADD_BYTES


def _forward_bytes(arch: ModelArch, stack: Stack, fused: bool) -> tuple[float, int]:
    """(bytes per token, kernels) of a dense pre-norm RoPE layer's forward element-wise ops."""
    h, f = arch.hidden_size, ffn_size(arch)
    adds = _add_bytes(stack, "out_proj", fused) + _add_bytes(stack, "mlpwo", fused)
    num_fused = sum(_add_bytes(stack, n, fused) < ADD_BYTES for n in ("out_proj", "mlpwo"))
    rotary = ROTARY_BYTES * (q_dim(arch) + kv_dim(arch))
    return 2 * NORM_BYTES * h + adds * h + GATED_BYTES * f + rotary, KERNELS - num_fused


def _recompute_bytes(arch: ModelArch, stack: Stack, fused: bool) -> tuple[float, int]:
    """(bytes per token, kernels) of the element-wise ops the backward reruns (``dce``): two
    norms, SwiGLU and the first residual add."""
    h, f = arch.hidden_size, ffn_size(arch)
    first = _add_bytes(stack, "out_proj", fused)
    return 2 * NORM_BYTES * h + first * h + GATED_BYTES * f, 4 - int(first < ADD_BYTES)


def _applies(arch: ModelArch, plan: ParallelPlan, stack: Stack) -> bool:
    dense = arch.num_experts <= 1 and not arch.parallel_block and arch.gated_mlp
    return stack.name == "maxtext" and dense and plan.layout.tp == 1 and plan.layout.cp == 1


@contextmanager
def patched(candidates: tuple[str, ...]) -> Iterator[None]:
    """The candidates in place of the stack's element-wise pricing, for the block."""
    forward_s = compute_module._elementwise_forward_s
    recompute_s = compute_module.named_recompute_s
    fused = "bias" in candidates

    def new_forward(arch: ModelArch, plan: ParallelPlan, perf: GpuPerf, stack: Stack) -> float:
        if not _applies(arch, plan, stack):
            return forward_s(arch, plan, perf, stack)
        per_token, kernels = _forward_bytes(arch, stack, fused)
        return memory_time_s(per_token * tokens_per_gpu(plan), perf, num_kernels=kernels)

    def new_recompute(
        arch: ModelArch,
        plan: ParallelPlan,
        perf: GpuPerf,
        stack: Stack,
        attention_forward_s: float,
        elementwise_s: float,
    ) -> float:
        if _applies(arch, plan, stack) and "dce" in candidates:
            per_token, kernels = _recompute_bytes(arch, stack, fused)
            elementwise_s = memory_time_s(per_token * tokens_per_gpu(plan), perf, kernels)
        return recompute_s(arch, plan, perf, stack, attention_forward_s, elementwise_s)

    compute_module._elementwise_forward_s = new_forward  # type: ignore[assignment]
    compute_module.named_recompute_s = new_recompute  # type: ignore[assignment]
    try:
        yield
    finally:
        compute_module._elementwise_forward_s = forward_s  # type: ignore[assignment]
        compute_module.named_recompute_s = recompute_s  # type: ignore[assignment]


def signed_error(run: Run, candidates: tuple[str, ...]) -> float:
    """The run's signed error with ``candidates`` applied (the model's chosen plan kept)."""
    pred = predict_run(run).prediction
    assert pred is not None, run.name
    if not candidates or run.file not in MAXTEXT_FILES:
        return float(getattr(pred, run.metric)) / run.published - 1.0
    design = run_design(run)
    with patched(candidates):
        varied = predict_step(
            run.arch,
            pred.plan,
            design.compute.gpu,
            run_comm(design),
            design.compute.nvlink_domain_gpus,
            run.stack,
        )
    return float(getattr(varied, run.metric)) / run.published - 1.0


def _per_class(runs: list[Run], candidates: tuple[str, ...]) -> str:
    return class_summary(runs, lambda run: signed_error(run, candidates))


def main() -> None:
    runs = [r for r in load_runs() if r.subset in ("development", "calibration")]
    rows = sorted((r for r in runs if r.file in MAXTEXT_FILES), key=lambda r: (r.file, r.name))
    assert all(r.subset != "heldout" for r in rows)
    header = "".join(f"{c:>8}" for c in (*CANDIDATES, "both"))
    print(f"{'run':<44} {'now':>7}{header}")
    for run in rows:
        cells = "".join(
            f"{100 * signed_error(run, c):+7.1f}%"
            for c in (*((c,) for c in CANDIDATES), CANDIDATES)
        )
        print(f"{run.name:<44} {100 * signed_error(run, ()):+6.1f}%{cells}")
    for subset in ("development", "calibration"):
        chosen = [r for r in runs if r.subset == subset]
        print(f"{subset} now:   {_per_class(chosen, ())}")
        print(f"{subset} both:  {_per_class(chosen, CANDIDATES)}")


if __name__ == "__main__":
    main()
