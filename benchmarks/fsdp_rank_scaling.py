"""FSDP rows at 8-512 GPUs: does what the model misses grow with the number of ranks?

For every development run whose plan shards unit by unit (ZeRO-3, or FSDP's SHARD_GRAD_OP,
without pipelining), prints the ranks and nodes of its shard group, the signed error, the
time per step the published throughput leaves beyond the predicted step (``miss ms``),
the unit collectives' time per step if none of it overlapped compute (``raw ms``: every
all-gather, backward re-gather, reduce-scatter and HSDP all-reduce back to back, at the
times the netsim model gives, which are NCCL's latency + size / bandwidth), the part the
model exposes (``exposed ms``) and the per-call all-gather time of one unit (``gather ms``).
A miss above ``raw`` cannot come from how much of the unit collectives is hidden.

Then, for development rows of one source that differ only in their GPU count (same model,
micro-batch, sharding, recomputation, attention), the step-time growth from the smaller to
the larger run: measured, predicted, and the growth of ``raw``, the most any rule for
overlapping the unit collectives could add. A measured growth above it is not the unit
collectives' latency at NCCL's own model.

A development run that ``predict`` fits with no allowed plan (the model's memory says it
could not have run) is shown at its smallest allowed micro-batch and first recomputation
mode with the memory check left out, marked ``*``: its timing still shows what grows with
the ranks.

    PYTHONPATH=$PWD/src:$PWD python benchmarks/fsdp_rank_scaling.py

Development rows only (never held-out).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass

from clusterforge.perf.parallel import num_micro_batches
from clusterforge.perf.sharded import unit_collectives
from clusterforge.perf.step import Prediction, predict_step
from validation.runs import Run, candidates, load_runs, predict_run, run_comm, run_design


@dataclass(frozen=True)
class FsdpRow:
    """A development run's step: measured and predicted seconds, the unit collectives'
    seconds back to back and as exposed, and one unit's all-gather seconds."""

    run: Run
    error: float
    predicted_step_s: float
    raw_s: float
    exposed_s: float
    gather_s: float
    fits: bool = True

    @property
    def measured_step_s(self) -> float:
        """The step the published throughput implies (throughput scales as 1 / step)."""
        return self.predicted_step_s * (1.0 + self.error)

    @property
    def miss_s(self) -> float:
        return self.measured_step_s - self.predicted_step_s


def unfitted_prediction(run: Run) -> Prediction:
    """A development run's step at its smallest allowed micro-batch and first recomputation
    mode, whether or not the model's memory says it fits (``predict_run`` keeps only plans
    that fit)."""
    assert run.subset == "development", "development rows only"
    design = run_design(run)
    gpu = design.compute.gpu
    if run.gpu:
        gpu = gpu.model_copy(update=dict(run.gpu))
    # an allowed plan of the smallest micro-batch (with the interleaving the run states)
    allowed = candidates(run) or [run.base]
    plan = min(allowed, key=lambda p: p.micro_batch).with_(micro_batch=min(run.micro_batches))
    domain = design.compute.nvlink_domain_gpus
    return predict_step(run.arch, plan, gpu, run_comm(design), domain, run.stack)


def fsdp_development_rows() -> Iterator[FsdpRow]:
    """Every development run whose plan shards unit by unit (the fitting plan ``predict``
    chooses, else :func:`unfitted_prediction`)."""
    for run in load_runs():
        if run.subset != "development":
            continue
        pred = predict_run(run).prediction
        fits = pred is not None
        if pred is None:
            pred = unfitted_prediction(run)
        plan = pred.plan
        if not run.stack.gathers_per_unit(plan.zero_stage) or plan.layout.pp > 1:
            continue
        if plan.layout.dp * plan.layout.cp < 2:
            continue
        comm = run_comm(run_design(run))
        c = unit_collectives(run.arch, plan, comm, run.stack, layers=run.arch.num_layers)
        yield FsdpRow(
            run=run,
            error=float(getattr(pred, run.metric)) / run.published - 1.0,
            predicted_step_s=pred.step_time_s,
            raw_s=num_micro_batches(plan) * c.per_micro_batch_s,
            exposed_s=pred.breakdown.dp_comm_s,
            gather_s=c.gather_s,
            fits=fits,
        )


def pair_key(row: FsdpRow) -> tuple[object, ...]:
    """What two runs must share to differ only in their GPU count: source, node, model,
    sequence, precision, micro-batches, samples per GPU, TP/PP/CP, sharding, recomputation
    and stack."""
    r, job = row.run, row.run.base.layout
    per_gpu = r.base.global_batch / job.num_gpus
    parallel = (job.tp, job.pp, job.cp, r.base.zero_stage, r.base.shard_size)
    shape = (r.arch, r.base.seq_length, r.base.precision, r.micro_batches, per_gpu)
    return (r.file, r.node, r.gpu, *shape, parallel, r.recompute, r.stack)


def rank_pairs(rows: list[FsdpRow]) -> Iterator[tuple[FsdpRow, FsdpRow]]:
    """(smallest, larger) pairs of rows that differ only in their GPU count."""
    groups: dict[tuple[object, ...], list[FsdpRow]] = defaultdict(list)
    for row in rows:
        groups[pair_key(row)].append(row)
    for members in groups.values():
        members.sort(key=lambda m: m.run.base.layout.num_gpus)
        for larger in members[1:]:
            if larger.run.base.layout.num_gpus == members[0].run.base.layout.num_gpus:
                continue
            yield members[0], larger


def main() -> None:
    rows = sorted(fsdp_development_rows(), key=lambda r: (r.run.file, r.run.name))
    print(
        f"{'run':<40} {'gpus':>5} {'error':>7} {'miss ms':>9} {'raw ms':>9} "
        f"{'exposed ms':>10} {'gather ms':>9} {'miss/raw':>8}"
    )
    for r in rows:
        print(
            f"{r.run.name + ('' if r.fits else ' *'):<40} {r.run.base.layout.num_gpus:>5} "
            f"{r.error * 100:+6.1f}% "
            f"{r.miss_s * 1e3:9.1f} {r.raw_s * 1e3:9.1f} {r.exposed_s * 1e3:10.1f} "
            f"{r.gather_s * 1e3:9.2f} {r.miss_s / r.raw_s:8.2f}"
        )
    print("* predicted not to fit: timed at its smallest micro-batch, memory check left out")
    print("\nstep growth with the GPU count (same source, model, micro-batch, sharding):")
    print(f"{'pair':<62} {'measured ms':>11} {'predicted ms':>12} {'raw growth ms':>13}")
    for small, large in rank_pairs(rows):
        label = f"{small.run.name} -> {large.run.base.layout.num_gpus} GPUs"
        print(
            f"{label:<62} {(large.measured_step_s - small.measured_step_s) * 1e3:11.1f} "
            f"{(large.predicted_step_s - small.predicted_step_s) * 1e3:12.1f} "
            f"{(large.raw_s - small.raw_s) * 1e3:13.1f}"
        )


if __name__ == "__main__":
    main()
