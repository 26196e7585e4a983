"""How far a prediction may be from the real run: an 80 % range from the model's misses.

How the printed range is derived (``benchmarks/validate_predict.py --write`` writes
``data/uncertainty.toml`` with ``validation/band.py``; ``docs/validation.md`` says the same):

1. Every published run of ``validation/`` in the *development* set that was added after the
   record starts is scored *as first seen*: predicted by the model as it stood before the run
   was added (``validation/history/replay.json``, written by ``benchmarks/first_seen.py``,
   which replays the commits that added runs with their parent's code). A model's misses on
   the runs it was developed with shrink as mechanisms are added for them; its misses on runs
   it had not yet seen are what a run of a new cluster meets (the prequential assessment of
   A. P. Dawid, "Statistical theory: the prequential approach", J. R. Statist. Soc. A 147(2),
   1984). The runs the model was built on (the record's baseline) and the *held-out* set
   never enter (held-out runs are scored only as a whole, and a test fails if they move the
   range).
2. Each run's score is its first-seen excess ``x = published / predicted - 1``, so a range
   ``low .. high`` of ``x`` is the range ``predicted * (1 + low) .. predicted * (1 + high)``
   of the real value.
3. Split-conformal prediction (Vovk, Gammerman & Shafer, *Algorithmic Learning in a Random
   World*, Springer 2005; Lei, G'Sell, Rinaldo, Tibshirani & Wasserman, "Distribution-free
   predictive inference for regression", JASA 113(523), 2018): for ``n`` exchangeable scores
   of a model fixed beforehand, the ``k``-th smallest bounds a new one from above with
   probability ``k / (n + 1)``, whatever their distribution.
4. Runs of one source (one ``validation/*.toml`` file: one cluster, one software stack) miss
   together, so each source weighs 1, shared by its runs, and ``K`` counts sources, not runs:
   the CDF pooling of Dunn, Wasserman & Ramdas ("Distribution-free prediction sets for
   two-layer hierarchical models", JASA 118(544), 2023), under the hierarchical
   exchangeability of Lee, Barber & Willett ("Distribution-free inference with hierarchical
   data", arXiv 2306.06342, 2023): sources exchangeable with each other, runs within one. A
   new run is taken as a run of a new source.
5. Each end takes a tail of :data:`RANGE_TAIL` (10 %; the two tails may differ in width): the
   high end is the smallest score whose source weight, summed from below, reaches
   ``(K + 1)(1 - t) - 1/2``, the low end likewise from above. Half a source less than the
   textbook ``(K + 1)(1 - t)`` centres the range on 80 % instead of bounding it from below.
   Guarantee for a run of a new source: with one run per source (no ties) the range holds it
   with probability within ``1 / (K + 1)`` of 80 %; with weighted sources at least
   ``80 % - 1 / (K + 1)`` (derived here: with the new source counted in, the ``K + 1``
   sources' shares below the end add up to at least the position, each share has the same
   expectation by exchangeability, and leaving the new source out only moves the end out).
   With ``K`` below 4 the tail cannot be placed and the range is the span of the runs,
   without a guarantee.
6. Per class of run (:func:`run_class`: which mechanisms carry the run): a class with at
   least :data:`OWN_RANGE_MIN_SOURCES` sources (9: the fewest for which the textbook position
   ``(K + 1) * 0.9`` lies inside the sample) gets its own range, which may be narrower than
   the pooled one; a class with fewer gets the envelope of the pooled range it borrows and
   its own (never narrower than the borrowed range); a class without runs gets the pooled
   range. What is pooled depends on the model's family (:func:`run_family`, a Mondrian
   taxonomy in the sense of Vovk, Gammerman & Shafer's ch. 4: scores compared only within a
   category known before the run): a dense model has no expert layer, so it cannot be missed
   the way a mixture-of-experts step is, and a dense class borrows the range pooled over
   dense runs; an MoE run has both kinds of layer and borrows the range over all runs. The
   pooled range written at the top of ``data/uncertainty.toml`` is the dense one.

Each first-seen score comes from a model fixed before its run was seen, as split-conformal
asks; the models differ from step to step (the model improves), so the guarantee holds for a
model no better than the one that first saw each source. ``benchmarks/validate_predict.py
--coverage-check`` replays the rule through the history (at each commit that added runs, the
range from the scores known before it, and the share of the added runs inside) and leaves each
source out in turn.

A prediction's range is its class's (:func:`validation_band` with the class of the plan).
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Literal, get_args

from clusterforge.perf.flops import ffn_size

if TYPE_CHECKING:
    from clusterforge.catalog import ModelArch
    from clusterforge.perf.parallel import ParallelPlan
    from clusterforge.perf.stack import Stack

__all__ = [
    "OWN_RANGE_MIN_SOURCES",
    "RANGE_TAIL",
    "RUN_CLASSES",
    "SCALE_GPUS",
    "SMALL_GEMM_GFLOP",
    "Band",
    "RunClass",
    "RunFamily",
    "run_class",
    "run_family",
    "validation_band",
]

RunClass = Literal[
    "moe",
    "long-context",
    "zero3-fsdp-scale",
    "hsdp",
    "fsdp-small",
    "fsdp-nd",
    "small-gemm",
    "megatron-3d",
]
RUN_CLASSES: tuple[RunClass, ...] = get_args(RunClass)
RunFamily = Literal["dense", "moe"]
# ZeRO-3/FSDP "at scale": from 1,024 GPUs (where published runs with a fixed global batch
# leave each GPU a micro-batch or less while every micro-batch still gathers the model).
SCALE_GPUS = 1024
# Long context: sequences of 32K tokens and more, or any context parallelism.
LONG_CONTEXT_TOKENS = 32768
# Small GEMMs: the per-GPU MLP up-projection of one micro-batch under 100 GFLOP (2 x tokens
# x hidden x FFN / TP): a few hundred microseconds on an H100, where large-shape efficiency
# no longer holds.
SMALL_GEMM_GFLOP = 100.0
# Each end of the 80 % range leaves out 10 % of runs of new sources.
RANGE_TAIL = 0.10
# A class's own range from 9 sources: the fewest K with (K + 1)(1 - RANGE_TAIL) <= K.
OWN_RANGE_MIN_SOURCES = 9


def run_class(arch: ModelArch, plan: ParallelPlan, stack: Stack) -> RunClass:
    """What a run exercises, first match wins: ``moe`` (experts), ``long-context``
    (>= 32K tokens or context parallelism), then, where the parameters are gathered unit by
    unit (``stack.gathers_per_unit``: ZeRO-3, or ZeRO-2 run as FSDP's ``SHARD_GRAD_OP``),
    ``zero3-fsdp-scale`` (on >= 1,024 GPUs), ``hsdp`` (sharded in groups smaller than data
    parallelism), ``fsdp-small`` (without tensor/pipeline parallelism), ``fsdp-nd`` (with
    them); else ``small-gemm`` (per-GPU MLP GEMM under 100 GFLOP), else ``megatron-3d``
    (which takes Megatron's and DeepSpeed's ZeRO-1/2, gathered once per step)."""
    job = plan.layout
    if arch.num_experts > 1:
        return "moe"
    if plan.seq_length >= LONG_CONTEXT_TOKENS or job.cp > 1:
        return "long-context"
    if stack.gathers_per_unit(plan.zero_stage):
        if job.num_gpus >= SCALE_GPUS:
            return "zero3-fsdp-scale"
        if plan.shard_size is not None and plan.shard_size < job.dp:
            return "hsdp"
        return "fsdp-small" if job.tp == 1 and job.pp == 1 else "fsdp-nd"
    tokens = plan.micro_batch * plan.seq_length / job.cp
    gemm_gflop = 2.0 * tokens * arch.hidden_size * ffn_size(arch) / job.tp / 1e9
    if gemm_gflop < SMALL_GEMM_GFLOP:
        return "small-gemm"
    return "megatron-3d"


def run_family(run: str) -> RunFamily:
    """The model family of a run class: ``moe`` for mixture-of-experts runs, else ``dense``.
    A dense class borrows the range pooled over dense runs, MoE the range over all runs."""
    return "moe" if run == "moe" else "dense"


@dataclass(frozen=True)
class Band:
    """Range of the real value relative to a prediction, e.g. -0.09 .. +0.06."""

    low_fraction: float
    high_fraction: float
    num_runs: int
    num_sources: int
    mape: float
    # A class with too few sources for a range of its own: its own runs and sources (the
    # figures above are then those of the model family whose range it borrows).
    class_runs: int | None = None
    class_sources: int | None = None

    def range_of(self, value: float) -> tuple[float, float]:
        """(low, high) of the real value around a predicted ``value``."""
        return value * (1 + self.low_fraction), value * (1 + self.high_fraction)

    def basis(self) -> str:
        """How the range was derived, in words: the runs and sources behind it, and whether
        its class had too few sources for a range of its own."""
        text = (
            f"split-conformal over the misses on {self.num_runs:,} published runs of "
            f"{self.num_sources} sources, each as first predicted (before the run was added), "
            "each source counted once"
        )
        if self.class_sources is not None:
            text += (
                f"; its class has {self.class_runs} such runs of {self.class_sources} sources, "
                f"fewer than {OWN_RANGE_MIN_SOURCES}: never narrower than the range pooled "
                "over its model family's sources"
            )
        elif self.num_sources < OWN_RANGE_MIN_SOURCES:
            text += (
                f" (fewer than {OWN_RANGE_MIN_SOURCES}: never narrower than the range pooled "
                "over its model family's sources)"
            )
        return text

    def describe(self, value: float) -> str:
        """``"1,008 (-9% .. +6%)"``: the value and its range."""
        return f"{value:,.0f} ({self.low_fraction:+.0%} .. {self.high_fraction:+.0%})"


def _band(raw: dict[str, object]) -> Band:
    return Band(
        low_fraction=float(raw["low_fraction"]),  # type: ignore[arg-type]
        high_fraction=float(raw["high_fraction"]),  # type: ignore[arg-type]
        num_runs=int(raw["num_runs"]),  # type: ignore[call-overload]
        num_sources=int(raw["num_sources"]),  # type: ignore[call-overload]
        mape=float(raw["mape"]),  # type: ignore[arg-type]
        class_runs=int(raw["class_runs"]) if "class_runs" in raw else None,  # type: ignore[call-overload]
        class_sources=int(raw["class_sources"]) if "class_sources" in raw else None,  # type: ignore[call-overload]
    )


@cache
def _bands() -> tuple[Band, dict[str, Band]]:
    text = resources.files("clusterforge.perf").joinpath("data", "uncertainty.toml").read_text()
    raw = tomllib.loads(text)
    classes = {name: _band(values) for name, values in raw.get("class", {}).items()}
    return _band(raw), classes


def validation_band(run_class: str | None = None) -> Band:
    """The range derived from the development runs' first-seen misses (``data/uncertainty.toml``):
    the range of ``run_class`` when given, else the pooled one."""
    pooled, classes = _bands()
    if run_class is None:
        return pooled
    return classes.get(run_class, pooled)
