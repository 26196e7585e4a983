"""Why two vTrain 3.6B rows at micro-batch 2 miss while their neighbours do not.

vTrain's multi-node sweep (``validation/vtrain_a100_sweep.toml``, measured with
Megatron-DeepSpeed on A100) has two optimistic rows, TP 4 and TP 8 at micro-batch 2, next to
rows of the same model that fit. This script asks which of the model's inputs could separate
them, from the published iteration times alone, in two ways:

1. **Per layer and micro-batch.** For each TP degree of the 3.6B sweep, the published step
   divided by (micro-batches x layers), against a straight line in the micro-batch size fitted
   to the rows at micro-batch 4-32 of that degree (least squares; the one row whose step
   doubles from 32 to 64 is left out of the fit and printed). A per-kernel cost that small
   micro-batches pay more of shows up as an excess at micro-batch 2 on every TP degree.
2. **Twins.** Pairs of rows that give every GPU the same work per layer and micro-batch
   (``micro_batch / tp`` equal: the same GEMM FLOPs, the same ``micro_batch x heads / tp``
   attention batches of 2,048 x 2,048) and the same number of micro-batches per step, so
   only the TP group (and the data-parallel degree) differ. Across the sweeps: rows whose
   first MLP GEMM has the same per-GPU tokens and width as a missing row.

Only calibration and development rows are read; held-out rows are skipped.

    PYTHONPATH=$PWD/src:$PWD python benchmarks/vtrain_small_twins.py
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from clusterforge.perf.parallel import num_micro_batches
from validation.runs import Run, load_runs, predict_run

SWEEP_FILE = "vtrain_a100_sweep.toml"
SMALL_SWEEP = "vtrain-3.6b-64gpu"
FIT_MICRO_BATCHES = (4, 8, 16, 32)


@dataclass(frozen=True)
class SweepRow:
    """One vTrain row: its plan, published and predicted step, and per-GPU work."""

    name: str
    sweep: str
    tp: int
    pp: int
    dp: int
    micro_batch: int
    micro_batches: int  # per pipeline per step
    layers: int
    hidden: int
    published_step_s: float
    predicted_step_s: float

    @property
    def per_layer_ms(self) -> float:
        """Published step per layer and micro-batch (pipeline stages share the layers)."""
        return 1e3 * self.published_step_s / (self.micro_batches * self.layers / self.pp)

    @property
    def error(self) -> float:
        """Signed error of the predicted throughput (the inverse of the step ratio)."""
        return self.published_step_s / self.predicted_step_s - 1.0

    @property
    def tp_allreduce_mib(self) -> float:
        """MiB of one tensor-parallel all-reduce (the FP16 layer output), 0 without TP."""
        return self.micro_batch * 2048 * self.hidden * 2 / 2**20 if self.tp > 1 else 0.0

    @property
    def mlp_gemm(self) -> tuple[int, int, int]:
        """Per-GPU (M, N, K) of the first MLP GEMM: tokens x hidden -> 4 hidden / TP."""
        return self.micro_batch * 2048, 4 * self.hidden // self.tp, self.hidden


def _step_s(run: Run, tokens_per_s_per_gpu: float) -> float:
    """Step seconds of a run whose throughput is given in tokens per second per GPU."""
    plan = run.base
    return plan.global_batch * plan.seq_length / (tokens_per_s_per_gpu * plan.layout.num_gpus)


def sweep_rows() -> list[SweepRow]:
    """The vTrain rows (held-out ones skipped) with their published and predicted steps."""
    rows = []
    for run in load_runs():
        if run.file != SWEEP_FILE or run.subset == "heldout" or run.sweep is None:
            continue
        outcome = predict_run(run)
        if outcome.prediction is None:
            continue
        plan = outcome.prediction.plan
        job = plan.layout
        rows.append(
            SweepRow(
                name=run.name,
                sweep=run.sweep,
                tp=job.tp,
                pp=job.pp,
                dp=job.dp,
                micro_batch=plan.micro_batch,
                micro_batches=num_micro_batches(plan),
                layers=run.arch.num_layers,
                hidden=run.arch.hidden_size,
                published_step_s=_step_s(run, run.published),
                predicted_step_s=_step_s(run, outcome.predicted),
            )
        )
    return rows


def linear_excess(rows: list[SweepRow]) -> dict[str, float]:
    """Per row of one TP degree: published ms per layer and micro-batch minus the straight
    line through the rows at :data:`FIT_MICRO_BATCHES` (NaN when fewer than two fit)."""
    fit = [r for r in rows if r.micro_batch in FIT_MICRO_BATCHES]
    if len(fit) < 2:
        return {r.name: float("nan") for r in rows}
    slope, intercept = np.polyfit([r.micro_batch for r in fit], [r.per_layer_ms for r in fit], 1)
    return {r.name: r.per_layer_ms - (intercept + slope * r.micro_batch) for r in rows}


def twins(rows: list[SweepRow]) -> list[tuple[SweepRow, SweepRow]]:
    """Pairs of one sweep with the same per-GPU layer work (``micro_batch / tp``) and the same
    micro-batches per step, PP 1, the lower TP first."""
    by_key: dict[tuple[str, float, int], list[SweepRow]] = defaultdict(list)
    for r in rows:
        if r.pp == 1:
            by_key[(r.sweep, r.micro_batch / r.tp, r.micro_batches)].append(r)
    pairs = []
    for group in by_key.values():
        group.sort(key=lambda r: r.tp)
        pairs += [(a, b) for a, b in itertools.pairwise(group)]
    return sorted(pairs, key=lambda p: (p[0].sweep, p[0].tp))


def _print_linear(rows: list[SweepRow]) -> None:
    print(f"{SMALL_SWEEP}: published ms per layer and micro-batch, and its excess over a line")
    print(f"fitted at micro-batch {', '.join(map(str, FIT_MICRO_BATCHES))} of each TP degree")
    print(
        f"  {'row':28s} {'mbs':>4s} {'TP AR MiB':>9s} {'ms/layer-mb':>11s} {'excess ms':>9s} "
        f"{'error':>7s}"
    )
    small = [r for r in rows if r.sweep == SMALL_SWEEP and r.pp == 1]
    for tp in sorted({r.tp for r in small}):
        group = sorted((r for r in small if r.tp == tp), key=lambda r: r.micro_batch)
        excess = linear_excess(group)
        for r in group:
            print(
                f"  {r.name:28s} {r.micro_batches:4d} {r.tp_allreduce_mib:9.0f} {r.per_layer_ms:11.2f} "
                f"{excess[r.name]:+9.2f} {100 * r.error:+6.1f}%"
            )


def _print_twins(rows: list[SweepRow]) -> None:
    print("\ntwins: same per-GPU layer work and micro-batches per step (PP 1); step seconds")
    print(
        f"  {'lower TP':28s} {'published':>9s} {'predicted':>9s}   {'higher TP':28s} "
        f"{'published':>9s} {'predicted':>9s}"
    )
    for a, b in twins(rows):
        print(
            f"  {a.name:28s} {a.published_step_s:9.3f} {a.predicted_step_s:9.3f}   "
            f"{b.name:28s} {b.published_step_s:9.3f} {b.predicted_step_s:9.3f}"
        )


def _print_shapes(rows: list[SweepRow]) -> None:
    print(
        "\nper-GPU first MLP GEMM (M, N, K) of the missing rows; rows of every sweep with its M, N"
    )
    misses = [r for r in rows if r.sweep == SMALL_SWEEP and r.micro_batch == 2 and r.error > 0.2]
    for miss in misses:
        same = [r for r in rows if r.mlp_gemm[:2] == miss.mlp_gemm[:2] and r is not miss]
        print(f"  {miss.name} {miss.mlp_gemm} {100 * miss.error:+.1f}%")
        for r in same:
            print(f"    {r.name:28s} {r.mlp_gemm!s:22s} {100 * r.error:+6.1f}%")


def main() -> None:
    rows = sweep_rows()
    _print_linear(rows)
    _print_twins(rows)
    _print_shapes(rows)


if __name__ == "__main__":
    main()
