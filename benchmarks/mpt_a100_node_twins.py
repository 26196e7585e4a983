"""LLM Foundry MPT on 16-128 A100 (2023 tables) against the same tables' one-node runs.

``validation/pub_llm_foundry_a100_multinode.toml`` transcribes the A100 80GB and 40GB tables
of LLM Foundry's benchmarking README at c6cfb4284 (PyTorch 1.13.1, Composer 0.13.4, Triton
attention, FSDP FULL_SHARD, PURE BF16) with 16 GPUs or more. The same tables also list each
model at 8 GPUs, one node, run by the same sweep with the same software (their own
micro-batch and accumulation, below): those rows are in no validation set (the file's
selection rule keeps 16 GPUs and more) and are used here only to split each development
row's error into the part already there on one node and the part that comes with the
nodes.

For every development row of that file, prints its signed error, the error of its 8-GPU
twin (same table and model, sequence 2048), the per-GPU throughput the row keeps against
its twin, measured and predicted, and the difference (``beyond``, points of throughput:
positive = the model loses less than the run did). Next to it, the row's unit collectives
back to back (``raw``, :func:`clusterforge.perf.sharded.unit_collectives` at netsim's NCCL
times) and the part the model hides (``hidden``), as shares of the row's predicted step:
``hidden`` is the most that exposing every collective could add, so a ``beyond`` above it
is not the collectives' overlap at NCCL's bandwidth. The summary keeps the rows whose twin
ran at least half their micro-batch.

    PYTHONPATH=$PWD/src:$PWD python benchmarks/mpt_a100_node_twins.py

Development rows only (never held-out); the twins' figures are the README's.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, replace

from benchmarks.fsdp_rank_scaling import FsdpRow, fsdp_development_rows

from clusterforge.job import JobLayout
from validation.runs import Outcome, Run, predict_run

FILE = "pub_llm_foundry_a100_multinode.toml"

# The 8-GPU, sequence-2048 rows of the two tables (mosaicml/llm-foundry
# scripts/train/benchmarking/README.md at c6cfb4284): model -> (micro-batch, gradient
# accumulation, tokens/s/GPU). Activation checkpointing as the multi-node rows of the model.
EIGHT_GPU_ROWS: dict[str, dict[str, tuple[int, int, float]]] = {
    "80gb": {
        "mpt-30b": (3, 21, 788.0),
        "mpt-13b": (20, 3, 2065.0),
        "mpt-7b": (32, 2, 3824.0),
        "mpt-3b": (10, 6, 10403.0),
        "mpt-1b": (14, 4, 20276.0),
    },
    "40gb": {
        "mpt-13b": (4, 16, 1668.0),
        "mpt-7b": (12, 4, 3679.0),
        "mpt-3b": (5, 8, 10065.0),
        "mpt-1b": (8, 8, 19271.0),
    },
}


@dataclass(frozen=True)
class NodeTwin:
    """A development row, its 8-GPU twin's prediction and the row's unit collectives."""

    row: FsdpRow
    twin: Outcome | None

    @property
    def beyond(self) -> float | None:
        """Predicted minus measured throughput kept against the twin (fraction)."""
        if self.twin is None or self.twin.prediction is None:
            return None
        measured = self.row.run.published / self.twin.run.published
        predicted = (1.0 + self.row.error) * measured / (1.0 + self.twin.error)
        return predicted - measured

    @property
    def comparable(self) -> bool:
        """Whether the twin ran at least half the row's micro-batch (the 80GB 30B and 40GB
        13B twins ran 3-4 sequences with 16-21 accumulation steps: another regime)."""
        if self.twin is None or self.twin.prediction is None:
            return False
        return 2 * self.twin.run.micro_batches[0] >= self.row.run.micro_batches[0]

    @property
    def hidden_share(self) -> float:
        """The unit collectives' hidden seconds as a share of the predicted step."""
        return (self.row.raw_s - self.row.exposed_s) / self.row.predicted_step_s


def _memory(run: Run) -> str:
    return "80gb" if "80gb" in run.name else "40gb"


def eight_gpu_twin(run: Run) -> Run | None:
    """The run's model at one node, as the same table lists it (None: no such row)."""
    found = EIGHT_GPU_ROWS[_memory(run)].get(run.arch.id)
    if found is None:
        return None
    micro, accumulation, published = found
    base = replace(run.base, layout=JobLayout.for_gpus(8), global_batch=8 * micro * accumulation)
    return replace(
        run, name=f"{run.name}@8gpu", base=base, micro_batches=(micro,), published=published
    )


def node_twins() -> list[NodeTwin]:
    """Every development row of the file with its twin (the twin predicted as it ran)."""
    twins = []
    for row in fsdp_development_rows():
        if row.run.file != FILE:
            continue
        twin = eight_gpu_twin(row.run)
        twins.append(NodeTwin(row, predict_run(twin) if twin else None))
    return sorted(twins, key=lambda t: (_memory(t.row.run), t.row.run.name))


def _line(t: NodeTwin) -> str:
    run, gpus = t.row.run, t.row.run.base.layout.num_gpus
    head = f"{run.name:<38} {gpus:>4} {t.row.error * 100:+6.1f}%"
    tail = f"{t.row.raw_s / t.row.predicted_step_s * 100:6.1f}% {t.hidden_share * 100:6.1f}%"
    if t.twin is None or t.twin.prediction is None or t.beyond is None:
        return f"{head} {'(no 8-GPU row)':>38} {tail}"
    measured = run.published / t.twin.run.published
    predicted = measured + t.beyond
    return (
        f"{head} {t.twin.error * 100:+7.1f}% {measured:7.3f} {predicted:7.3f} "
        f"{t.beyond * 100:+7.1f}  {tail}"
    )


def main() -> None:
    twins = node_twins()
    print(
        f"{'run':<38} {'gpus':>4} {'error':>7} {'8-GPU':>8} {'kept':>7} {'model':>7} "
        f"{'beyond':>7}  {'raw':>7} {'hidden':>7}"
    )
    for t in twins:
        print(_line(t))
    print(
        "(8-GPU: the one-node twin's error; kept: measured throughput per GPU against the "
        "twin's; model: the same, predicted; beyond: model - kept, points; raw, hidden: the "
        "unit collectives back to back and the part the model hides, % of the step)"
    )
    kept = [t for t in twins if t.comparable and t.beyond is not None]
    beyond = [t.beyond for t in kept if t.beyond is not None]
    levels = {
        (_memory(t.row.run), t.row.run.arch.id): t.twin.error
        for t in twins
        if t.twin and t.twin.prediction
    }
    print(
        f"\nrows whose twin ran at least half their micro-batch: {len(kept)}; beyond median "
        f"{statistics.median(beyond) * 100:+.1f} points, above hidden on "
        f"{sum(1 for t in kept if t.beyond is not None and t.beyond > t.hidden_share)}"
    )
    print(
        f"8-GPU twins: median error {statistics.median(levels.values()) * 100:+.1f} % "
        f"over {len(levels)} twins"
    )


if __name__ == "__main__":
    main()
