"""What grows with the data-parallel replicas on the Paxml GPT-3 175B FP8 rows, part by part.

The dgxc Paxml 175B FP8 recipe (NVIDIA/dgxc-benchmarking ``paxml/configure.sh`` at 143b90d:
``FSDP=16``, ``DCN_MESH_SHAPE=[nodes/16, 16, 1]``, ICI ``[1, 8, 1]``) shards the weights over
the ``data`` axis of 16 nodes (128 GPUs) at every GPU count; from 256 GPUs on, the replicas
on the ``replica`` axis multiply. Per GPU, the gathers, the reduce-scatters and the optimizer
shard are the same at 128 and 2,048 GPUs; what the replicas add, read in the code the
``pax-2024.03.04`` container builds:

- ``sync``: each layer's BF16 gradient shard all-reduced across the replicas (GSPMD's
  reduction of the batch-sharded weight-gradient dot: a reduce-scatter over ``data`` and an
  all-reduce over ``replica``, as the JAX 0.4.26 partitioned module shows for MaxText,
  ``benchmarks/jax_hsdp_allreduce_order.py``), one call per layer (the 512 MiB all-reduce
  combiner), pipelined into the next iteration (``--xla_gpu_enable_pipelined_all_reduce``).
  It stays in the backward loop: openxla/xla ``WhileLoopAllReduceCodeMotion`` (always in the
  GPU collectives pipeline; ``xla_gpu_enable_while_loop_reduce_scatter_code_motion`` only
  adds reduce-scatters) sinks an all-reduce only when every user is an accumulating add into
  a loop-carried buffer, while the scan's stacked weight gradient is written by a
  dynamic-update-slice. The model already prices it (``sharded.hsdp_sync_s``), hidden behind
  the next layer's backward but for ``overlap_interference``; the part is what full exposure
  would add on top.
- ``sync_fp32``: the same with FP32 gradients, a contrast only (no source read here says
  the reduction is FP32; "FP32 reductions or TCPX below line rate?" reads BF16 for MaxText).
- ``amax``: delayed scaling's amax all-reduces on the replica, FSDP and whole-mesh groups
  (``benchmarks/paxml_fp8_step_parts.py``), as fully exposed.

Each part is printed in ms per step and as its growth from the 128-GPU row, against the
measured growth and the model's own. The what-if adds ``sync`` and ``amax`` fully exposed to
every Paxml development row (a bound) and prints the per-set and per-class MAPE before/after.

    PYTHONPATH=$PWD/src:$PWD python benchmarks/paxml_175b_scale_whatif.py

Development and calibration rows only (never held-out); ``src/`` is not changed.
"""

from __future__ import annotations

from dataclasses import replace

from benchmarks.paxml_fp8_step_parts import PAXML_FILES, amax_s

from clusterforge.perf.parallel import num_micro_batches, shard_groups
from clusterforge.perf.roofline import load_constants
from clusterforge.perf.sharded import hsdp_sync_s, layer_params_per_gpu
from validation.class_errors import class_summary
from validation.runs import Run, load_runs, predict_run, run_comm, run_design

__all__ = ["PARTS", "ROWS_175B", "TWINS", "main", "part_ms", "sync_s"]

PARTS = ("sync", "sync_fp32", "amax")
ADDED = ("sync", "amax")  # the parts the what-if adds (sync_fp32 is a contrast)
ROWS_175B = tuple(f"pub-paxml-h100-gpt3-175b-fp8-{n}gpu" for n in (128, 512, 2048))
TWINS = (
    ROWS_175B,
    *(tuple(f"pub-paxml-h100-gpt3-5b-{p}-{n}gpu" for n in (16, 64)) for p in ("fp8", "bf16")),
)
BF16_BYTES = 2
FP32_BYTES = 4


def sync_s(run: Run, grad_bytes: float = BF16_BYTES) -> float:
    """Seconds per step the replica all-reduces would add if none were hidden: every layer's
    call back to back, less the share the model already counts (``overlap_interference``);
    the embedding's call after the loop is priced as exposed already."""
    pred = predict_run(run).prediction
    assert pred is not None, run.name
    shard, replicas = shard_groups(pred.plan)
    if replicas.shape[1] < 2:
        return 0.0
    comm = run_comm(run_design(run))
    layer = layer_params_per_gpu(run.arch, pred.plan)
    stack = replace(run.stack, grad_reduce_bytes=grad_bytes)
    per_layer = hsdp_sync_s(comm, layer, stack, shard, replicas)
    hidden_share = 1.0 - load_constants().overlap_interference
    return num_micro_batches(pred.plan) * run.arch.num_layers * per_layer * hidden_share


def part_ms(run: Run) -> dict[str, float]:
    """Each part's milliseconds per step (zero off the Paxml files)."""
    if run.file not in PAXML_FILES:
        return dict.fromkeys(PARTS, 0.0)
    return {
        "sync": sync_s(run) * 1e3,
        "sync_fp32": sync_s(run, FP32_BYTES) * 1e3,
        "amax": amax_s(run) * 1e3,
    }


def _step_ms(run: Run) -> tuple[float, float]:
    """(published, predicted) step in ms: the metric is per GPU at a fixed plan, so the
    published step is the predicted one times (predicted metric / published metric)."""
    pred = predict_run(run).prediction
    assert pred is not None, run.name
    predicted_ms = pred.step_time_s * 1e3
    return predicted_ms * float(getattr(pred, run.metric)) / run.published, predicted_ms


def _error(run: Run) -> float:
    published_ms, predicted_ms = _step_ms(run)
    return published_ms / predicted_ms - 1.0


def _error_with_parts(run: Run) -> float:
    published_ms, predicted_ms = _step_ms(run)
    extra_ms = sum(part_ms(run)[p] for p in ADDED)
    return published_ms / (predicted_ms + extra_ms) - 1.0


def _growth_table(rows: dict[str, Run]) -> None:
    """Each twin's growth from the smallest GPU count of its series: measured, modelled and
    each part's (the what-if's bound adds ``sync`` and ``amax`` to the modelled growth)."""
    head = "".join(f"{p:>10}" for p in PARTS)
    title = f"{'twin (+ms from the first)':<38} {'error':>7} {'meas':>7} {'model':>7}"
    print(f"{title}{head} {'bound':>7}")
    for series in TWINS:
        base_pub, base_pred = _step_ms(rows[series[0]])
        base_parts = part_ms(rows[series[0]])
        for name in series:
            run = rows[name]
            pub, pred = _step_ms(run)
            grown = {p: part_ms(run)[p] - base_parts[p] for p in PARTS}
            cells = "".join(f"{grown[p]:10.1f}" for p in PARTS)
            bound = pred - base_pred + sum(grown[p] for p in ADDED)
            print(
                f"{name:<38} {100 * _error(run):+6.1f}% {pub - base_pub:7.0f}"
                f" {pred - base_pred:7.0f}{cells} {bound:7.0f}"
            )


def main() -> None:
    runs = [r for r in load_runs() if r.subset in ("development", "calibration")]
    paxml = sorted((r for r in runs if r.file in PAXML_FILES), key=lambda r: (r.file, r.name))
    assert all(r.subset == "development" for r in paxml)
    head = "".join(f"{p:>10}" for p in PARTS)
    print(f"{'run':<40} {'error':>7} {'gap ms':>8}{head} {'error with sync+amax':>21}")
    for run in paxml:
        pub, pred = _step_ms(run)
        parts = part_ms(run)
        cells = "".join(f"{parts[p]:10.1f}" for p in PARTS)
        print(
            f"{run.name:<40} {100 * _error(run):+6.1f}% {pub - pred:8.0f}{cells}"
            f" {100 * _error_with_parts(run):+20.1f}%"
        )
    print()
    _growth_table({r.name: r for r in paxml})
    print()
    for subset in ("development", "calibration"):
        chosen = [r for r in runs if r.subset == subset]
        print(f"{subset} as modelled:        {class_summary(chosen, _error)}")
        print(f"{subset} with sync + amax:   {class_summary(chosen, _error_with_parts)}")


if __name__ == "__main__":
    main()
