"""DeepSpeed ZeRO-Offload of the optimizer on the rows that ran it: the modelled parts.

The development rows of ``validation/pub_mleng_zero3_h200_b200.toml`` ran DeepSpeed ZeRO-3
with ``offload_optimizer {device cpu}`` and state ``optimizer_offload = true``; the model
prices it in :mod:`clusterforge.perf.optimizer_offload` (host passes at the node's DRAM
bandwidth, gradient copies behind the backward, BF16 parameters up the GPU's host link) and
keeps the FP32 states off the GPU (:mod:`clusterforge.perf.memory`). Per row this prints the
prediction without and with the offload, the parts that make the optimizer's line of the
breakdown and the HBM without and with it; then the development set both ways (the other
rows are unchanged).

    PYTHONPATH=$PWD/src:$PWD python benchmarks/zero_offload_parts.py

Development rows only (never held-out).
"""

from __future__ import annotations

from dataclasses import replace

from validation.class_errors import class_summary
from validation.runs import Run, load_runs, predict_run

__all__ = ["OFFLOAD_FILE", "main", "without_offload", "without_offload_error"]

OFFLOAD_FILE = "pub_mleng_zero3_h200_b200.toml"


def without_offload(run: Run) -> Run:
    """The run with its optimizer kept in HBM and stepped on the GPU."""
    return replace(run, base=run.base.with_(optimizer_offload=False))


def without_offload_error(run: Run) -> float:
    """The run's signed error with the optimizer on the GPU."""
    return predict_run(without_offload(run)).error


def _rows(runs: list[Run]) -> None:
    print(
        f"{'row':<30} {'published':>9} {'no offload':>16} {'offload':>16} {'bwd s':>6}"
        f" {'link ms':>7} {'host ms':>7} {'up ms':>6} {'exposed':>7} {'GPU opt':>7}"
        f" {'HBM GiB':>12}"
    )
    for run in runs:
        on, off = predict_run(run), predict_run(without_offload(run))
        assert on.prediction is not None and off.prediction is not None
        parts = on.prediction.optimizer_offload
        assert parts is not None, run.name
        print(
            f"{run.name:<30} {run.published:>9.0f}"
            f" {off.predicted:>7.0f} ({100 * off.error:+6.1f}%)"
            f" {on.predicted:>7.0f} ({100 * on.error:+6.1f}%)"
            f" {parts.backward_s:>6.2f} {1e3 * parts.grad_link_s:>7.1f}"
            f" {1e3 * parts.host_s:>7.1f} {1e3 * parts.param_up_s:>6.1f}"
            f" {1e3 * parts.exposed_s:>7.1f} {1e3 * off.prediction.breakdown.optimizer_s:>7.1f}"
            f" {off.prediction.memory.total_gib:>5.1f}->{on.prediction.memory.total_gib:>5.1f}"
        )
        print(
            f"{'':<30} owned {parts.owned_params / 1e9:.3f} B params, {parts.ranks_per_host}"
            f" ranks on {parts.host_dram_gbyte_per_s:.1f} GB/s host DRAM,"
            f" {parts.host_bytes_per_param:.0f} B/param on the host, link"
            f" {parts.link_gbyte_per_s:.0f} GB/s ({parts.grad_down_bytes:.0f} B down,"
            f" {parts.grad_up_bytes:.0f} B up in the backward, 2 B up after)"
        )


def main() -> None:
    runs = [r for r in load_runs() if r.subset == "development"]
    fitted = [r for r in runs if predict_run(r).prediction is not None]
    offloaded = [r for r in fitted if r.base.optimizer_offload]
    print(f"{OFFLOAD_FILE}, development rows (tokens/s per GPU; GPU opt: the step it replaces)")
    _rows(offloaded)
    print(f"\ndevelopment ({len(fitted)} runs): MAPE, median | class MAPE (median)")
    print("  optimizer on the GPU  " + class_summary(fitted, without_offload_error, medians=True))
    print(
        "  offload (model)       "
        + class_summary(fitted, lambda r: predict_run(r).error, medians=True)
    )


if __name__ == "__main__":
    main()
