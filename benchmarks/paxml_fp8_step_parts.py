"""What the Paxml rows run per step that the model does not price, each part bounded.

For the development rows of Paxml with Transformer Engine's JAX layers
(``validation/pub_paxml_fsdp_h100.toml``, ``validation/pub_jaxtoolbox_pax_fsdp.toml``),
prices four parts read in the code those containers build, each as if it were fully exposed
(an upper bound: none of them is known to stall the compute stream), and prints the gap the
published step leaves, each part in ms per step, the signed error with all four added, and
the bound the FSDP collectives give (every unit gathered on demand):

- ``amax``: delayed scaling's amax all-reduces. NVIDIA/TransformerEngine at 4e2ce51
  (2024-03-04), ``transformer_engine/jax``: the FP8 casts with a custom partitioning
  (``layernorm_fwd_fp8`` twice, ``cast_fp8`` of the QKV and FC1 kernels, ``gelu_fp8``; in
  the backward ``cast_transpose`` of three output gradients and
  ``dgelu_dbias_cast_transpose``) reduce their local amax with
  ``all_reduce_max_along_all_axes_except_PP``, one ``pmax`` per mesh axis (replica, then
  data; the model axis is 1); ``dot.py`` ``quantize`` takes ``jnp.max(jnp.abs(x))`` of the
  output projection's batch-sharded input (one all-reduce over the whole mesh) and of the
  output-projection and FC2 kernels, sharded over the data axis (one over the FSDP group).
  The rematerialised forward repeats the forward's (the amaxes are residuals the backward
  rules write). XLA's all-reduce combiner merges the independent ones of a loop body with the
  same group (``--xla_gpu_all_reduce_combine_threshold_bytes=536870912`` in dgxc's
  ``paxml/configure.sh`` at 143b90d): per layer and pass one call on each of the replica,
  FSDP and whole-mesh groups (one group without replicas), each at the netsim model's time.
- ``meta``: the amax-history updates. ``fp8.py`` ``update_amax_history`` rolls each FP8
  GEMM's ``(3, amax_history_len)`` FP32 history in every forward and the backward rules write
  the new amaxes and scales (``update_fp8_scale``: max over the history); Paxml's
  ``te_helper.py`` sets ``amax_history_len=1024``. Priced as one kernel per FP8 GEMM and
  pass (forward, rematerialised forward, backward) reading and writing the history.
- ``learner``: Paxml's learner (nvjax-svc-0/paxml ``paxml/learners.py``, branch
  ``patch/te_support-2024-03-08``): the raw, clipped and applied gradient norms and
  ``check_valid_step`` read the FP32 gradient shard about four times besides the optimizer.
- ``vocab_pad``: XLA pads BF16 GEMM dimensions to a multiple of 8 before cuBLAS
  (openxla/xla ``xla/service/gpu/nvptx_compiler.cc`` ``OptimizeHloPostLayoutAssignment``,
  ``CublasPadForGemms(..., PrimitiveType::BF16, /*pad_to_multiple_of=*/8)`` on Ampere and
  later). A vocabulary of 50,257 (the 175B's) is padded in the tied table's five GEMMs
  (logits forward, input gradient and weight gradient; the one-hot lookup and its weight
  gradient): the table padded once (read and write), the one-hot and logit gradients padded,
  the two weight gradients sliced back. Zero for the 5B's 50,304.

    PYTHONPATH=$PWD/src:$PWD python benchmarks/paxml_fp8_step_parts.py

Development and calibration rows only (never held-out); ``src/`` is not changed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np

from clusterforge.perf.parallel import num_micro_batches, shard_groups
from clusterforge.perf.roofline import GpuPerf, gpu_perf, memory_time_s
from clusterforge.perf.update import owned_params
from validation.class_errors import class_summary
from validation.runs import Run, load_runs, predict_run, run_comm, run_design

__all__ = [
    "AMAX_SCALARS",
    "PARTS",
    "PAXML_FILES",
    "amax_s",
    "learner_s",
    "main",
    "meta_s",
    "part_ms",
    "vocab_pad_s",
]

PAXML_FILES = ("pub_paxml_fsdp_h100.toml", "pub_jaxtoolbox_pax_fsdp.toml")
PARTS = ("amax", "meta", "learner", "vocab_pad")
# Amax scalars per layer and pass on each group, (forward, backward with the rematerialised
# forward): TE's five custom-partitioned forward casts on the replica and data axes, and
# four backward casts; dot.py's two kernel maxima on the FSDP group; the output
# projection's input maximum on the whole mesh.
AMAX_SCALARS = {"replica": (5, 9), "fsdp": (7, 11), "mesh": (1, 1)}
FP8_GEMMS_PER_LAYER = 4  # fused QKV, output projection, FC1, FC2
AMAX_HISTORY_LEN = 1024  # paxml te_helper.py DelayedScaling(amax_history_len=1024)
FP32_BYTES = 4
BF16_BYTES = 2
LEARNER_GRADIENT_READS = 4
VOCAB_PAD_MULTIPLE = 8


def _perf(run: Run) -> GpuPerf:
    pred = predict_run(run).prediction
    assert pred is not None, run.name
    return gpu_perf(run_design(run).compute.gpu, pred.plan.precision)


def amax_s(run: Run) -> float:
    """Seconds per step of the amax all-reduces, one combined call per group and pass."""
    pred = predict_run(run).prediction
    assert pred is not None, run.name
    if pred.plan.precision != "fp8":
        return 0.0
    comm = run_comm(run_design(run))
    shard, replicas = shard_groups(pred.plan)
    mesh = np.arange(pred.plan.layout.num_gpus).reshape(1, -1)
    groups = {"replica": replicas, "fsdp": shard, "mesh": mesh}
    scalars = dict(AMAX_SCALARS)
    if replicas.shape[1] < 2:
        # No replicas: the whole mesh is the FSDP group, so the combiner merges the two.
        fsdp, whole = scalars.pop("fsdp"), scalars.pop("mesh")
        scalars["fsdp"] = (fsdp[0] + whole[0], fsdp[1] + whole[1])
        scalars.pop("replica")
    per_layer = 0.0
    for name, counts in scalars.items():
        for count in counts:
            per_layer += comm.collective_time_s("all_reduce", count * FP32_BYTES, groups[name])
    return num_micro_batches(pred.plan) * run.arch.num_layers * per_layer


def meta_s(run: Run) -> float:
    """Seconds per step of the amax-history updates: one kernel per FP8 GEMM and pass."""
    pred = predict_run(run).prediction
    assert pred is not None, run.name
    if pred.plan.precision != "fp8":
        return 0.0
    kernels = 3 * FP8_GEMMS_PER_LAYER * run.arch.num_layers * num_micro_batches(pred.plan)
    history = 3 * AMAX_HISTORY_LEN * FP32_BYTES
    return memory_time_s(2 * history * kernels, _perf(run), num_kernels=kernels)


def learner_s(run: Run) -> float:
    """Seconds per step of the learner's extra reads of the FP32 gradient shard."""
    pred = predict_run(run).prediction
    assert pred is not None, run.name
    owned = owned_params(run.arch, pred.plan, run.arch.num_layers)
    reads = LEARNER_GRADIENT_READS
    return memory_time_s(reads * owned * FP32_BYTES, _perf(run), num_kernels=reads)


def vocab_pad_s(run: Run) -> float:
    """Seconds per step of XLA's BF16 GEMM padding of an unaligned vocabulary."""
    pred = predict_run(run).prediction
    assert pred is not None, run.name
    vocab = run.arch.vocab_size
    if vocab % VOCAB_PAD_MULTIPLE == 0:
        return 0.0
    tokens = pred.plan.micro_batch * pred.plan.seq_length
    table = vocab * run.arch.hidden_size * BF16_BYTES
    by_vocab = tokens * vocab * BF16_BYTES
    # Table padded once, two weight gradients sliced, one-hot and logit gradient padded.
    moved = 2 * (table + 2 * table + 2 * by_vocab)
    return num_micro_batches(pred.plan) * memory_time_s(moved, _perf(run), num_kernels=5)


PRICES: dict[str, Callable[[Run], float]] = {
    "amax": amax_s,
    "meta": meta_s,
    "learner": learner_s,
    "vocab_pad": vocab_pad_s,
}


def part_ms(run: Run) -> dict[str, float]:
    """Each part's milliseconds per step for the run (zero off the Paxml files)."""
    if run.file not in PAXML_FILES:
        return dict.fromkeys(PARTS, 0.0)
    return {name: PRICES[name](run) * 1e3 for name in PARTS}


def _error(run: Run) -> float:
    pred = predict_run(run).prediction
    assert pred is not None, run.name
    return float(getattr(pred, run.metric)) / run.published - 1.0


def _error_with_parts(run: Run) -> float:
    """Signed error with every part added to the step (throughput scales as 1 / step)."""
    pred = predict_run(run).prediction
    assert pred is not None, run.name
    extra_s = sum(part_ms(run).values()) / 1e3
    step_s = pred.step_time_s
    return (1.0 + _error(run)) * step_s / (step_s + extra_s) - 1.0


def _on_demand_error(run: Run) -> float:
    pred = predict_run(replace(run, stack=replace(run.stack, fsdp_prefetch=0))).prediction
    assert pred is not None, run.name
    return float(getattr(pred, run.metric)) / run.published - 1.0


def main() -> None:
    runs = [r for r in load_runs() if r.subset in ("development", "calibration")]
    paxml = sorted((r for r in runs if r.file in PAXML_FILES), key=lambda r: (r.file, r.name))
    assert all(r.subset == "development" for r in paxml)
    parts = "".join(f"{p:>10}" for p in PARTS)
    print(
        f"{'run':<40} {'error':>7} {'gap ms':>8}{parts} {'sum ms':>7} {'with all':>9}"
        f" {'on demand':>10}"
    )
    for run in paxml:
        pred = predict_run(run).prediction
        assert pred is not None, run.name
        gap_ms = _error(run) * pred.step_time_s * 1e3
        ms = part_ms(run)
        cells = "".join(f"{ms[p]:10.1f}" for p in PARTS)
        print(
            f"{run.name:<40} {100 * _error(run):+6.1f}% {gap_ms:8.0f}{cells}"
            f" {sum(ms.values()):7.1f} {100 * _error_with_parts(run):+8.1f}%"
            f" {100 * _on_demand_error(run):+9.1f}%"
        )
    for subset in ("development", "calibration"):
        chosen = [r for r in runs if r.subset == subset]
        print(f"{subset} as modelled:      {class_summary(chosen, _error)}")
        print(f"{subset} with the parts:   {class_summary(chosen, _error_with_parts)}")


if __name__ == "__main__":
    main()
