"""gpt-oss-120b on DGX B300 (EP 8, HybridEP) against GB300 NVL72 (EP 64) in the same release.

Megatron-Bridge publishes both layouts per container (64 GPUs, global batch 1,280, micro-batch
4, sequence 4,096, BF16); the DGX B300 rows are ~20 % slower per GPU, the model has them
close. For every release with both rows in the development set, prints the published and
predicted tokens/s/GPU and their GB300 / B300 ratios, then the model's parts of one layer and
micro-batch (milliseconds, forward + backward, from ``moe_layer_breakdown.layer_split``)
as B300 minus GB300, the gap each row leaves per layer and micro-batch, and one what-if: the
predicted B300 ratio with the expert-data-parallel reduction and gather (8 copies of every
expert, over InfiniBand; none on GB300) not hidden at all.

    PYTHONPATH=$PWD/src:$PWD python benchmarks/gptoss_b300_twins.py

Development rows only (never held-out).
"""

from __future__ import annotations

from dataclasses import dataclass

from benchmarks.moe_layer_breakdown import LayerSplit, edp_raw_s, layer_split

from clusterforge.perf.parallel import num_micro_batches
from validation.runs import Run, load_runs, predict_run

RELEASES = ("260201", "2604", "260401")
PARTS = ("gemm", "attention", "eager", "other")


def _both(split: LayerSplit, part: str) -> float:
    forward, backward = getattr(split, part)
    return float(forward + backward)


@dataclass(frozen=True)
class Side:
    """One row of a pair: published and predicted tokens/s/GPU, the layer's parts, the gap
    per layer and micro-batch (ms) and the prediction with the expert-data-parallel traffic
    not hidden."""

    run: Run
    predicted: float
    split: LayerSplit
    gap_ms: float
    edp_exposed: float


def side(run: Run) -> Side:
    """Predict ``run`` and split its layer (see the module docstring)."""
    outcome = predict_run(run)
    pred = outcome.prediction
    assert pred is not None
    per_layer = num_micro_batches(pred.plan) * max(pred.stage_layers)
    published_step = pred.step_time_s * outcome.predicted / run.published
    gap_ms = (published_step - pred.step_time_s) / per_layer * 1e3
    exposed = pred.step_time_s + max(0.0, edp_raw_s(run, pred) - pred.breakdown.dp_comm_s)
    edp_exposed = outcome.predicted * pred.step_time_s / exposed
    return Side(run, outcome.predicted, layer_split(run, pred), gap_ms, edp_exposed)


def twins() -> list[tuple[str, Side, Side]]:
    """(release, GB300 side, DGX B300 side) for every release with both development rows."""
    runs = {r.name: r for r in load_runs() if r.subset == "development"}
    pairs = []
    for release in RELEASES:
        gb300, b300 = (runs[f"bridge{release}-{gpu}-gpt-oss-120b"] for gpu in ("gb300", "b300"))
        pairs.append((release, side(gb300), side(b300)))
    return pairs


def main() -> None:
    print(
        f"{'release':8s} {'pub GB300':>9s} {'pub B300':>8s} {'ratio':>5s}"
        f" {'pred GB300':>10s} {'pred B300':>9s} {'ratio':>5s} | B300 - GB300 ms:"
        + "".join(f" {p:>6s}" for p in (*PARTS, "ep"))
        + f" | gap GB300 {'B300':>5s} | edp exposed: ratio"
    )
    for release, gb, b in twins():
        deltas = [_both(b.split, p) - _both(gb.split, p) for p in PARTS]
        deltas.append(b.split.ep_ms - gb.split.ep_ms)
        published = gb.run.published / b.run.published
        print(
            f"{release:8s} {gb.run.published:9,.0f} {b.run.published:8,.0f} {published:5.2f}"
            f" {gb.predicted:10,.0f} {b.predicted:9,.0f} {gb.predicted / b.predicted:5.2f} |"
            + " " * 16
            + "".join(f" {d:+6.2f}" for d in deltas)
            + f" | {gb.gap_ms:9.2f} {b.gap_ms:5.2f} | {gb.predicted / b.edp_exposed:5.2f}"
        )


if __name__ == "__main__":
    main()
