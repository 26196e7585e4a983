"""The printed 80 % range: split-conformal over published sources, per class, never held-out.

``validation/band.py`` derives it, ``clusterforge/perf/uncertainty.py`` serves it; the
shipped file is checked against today's model in ``test_runs.py``. The rule's arithmetic is
checked here on small samples whose answer is known by hand.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from clusterforge.catalog import load_catalog
from clusterforge.job import JobLayout
from clusterforge.perf.parallel import ParallelPlan
from clusterforge.perf.stack import Stack, stack_named
from clusterforge.perf.uncertainty import (
    OWN_RANGE_MIN_SOURCES,
    RANGE_TAIL,
    Band,
    run_class,
    run_family,
    validation_band,
)
from validation.band import (
    Residual,
    _class_band,
    band_of,
    class_ranges,
    coverage,
    derive,
    finite_sample_position,
    first_seen_residuals,
    leave_one_source_out,
    pooled_range,
    residuals,
    source_range,
)
from validation.runs import Outcome, load_runs, predict_run

DEVELOPMENT = [r for r in load_runs() if r.subset == "development"]
# A handful of cheap development runs of two classes (the band test must not predict held-out).
SAMPLE = [predict_run(r) for r in DEVELOPMENT if r.sweep == "vtrain-3.6b-64gpu"][:14]


def _held(outcome: Outcome, factor: float) -> Outcome:
    """The same prediction as a held-out run whose published value is ``factor`` off."""
    run = replace(outcome.run, subset="heldout", name=outcome.run.name + "-held")
    return Outcome(replace(run, published=run.published * factor), outcome.prediction)


def _one_run_per_source(excesses: list[float], run_class: str = "megatron-3d") -> list[Residual]:
    return [Residual(f"s{i}", run_class, e) for i, e in enumerate(excesses)]


def _scores(outcomes: list[Outcome]) -> dict[str, float | None]:
    """Stand-in first-seen scores: each run's excess today, one in ten spread out."""
    return {
        o.run.name: o.run.published / o.predicted - 1.0 + (0.3 if i % 10 == 0 else 0.0)
        for i, o in enumerate(outcomes)
    }


def test_held_out_runs_do_not_move_the_range() -> None:
    assert len(SAMPLE) >= 10
    scores = _scores(SAMPLE)
    baseline = derive(SAMPLE, scores)
    wild = [_held(o, factor) for o in SAMPLE for factor in (0.2, 5.0)]
    assert derive(SAMPLE + wild, scores) == baseline
    assert derive(SAMPLE + wild, {**scores, **_scores(wild)}) == baseline
    with pytest.raises(ValueError, match="held-out"):
        first_seen_residuals(SAMPLE + wild, scores)
    with pytest.raises(ValueError, match="held-out"):
        residuals(SAMPLE + wild)


def test_the_range_comes_from_first_seen_scores_not_todays_misses() -> None:
    """Runs without a first-seen score (the baseline) and runs first predicted not to fit
    (None) do not enter; the band's runs, sources and MAPE are the first-seen ones."""
    scores = _scores(SAMPLE)
    chosen = first_seen_residuals(SAMPLE, scores)
    assert [r.excess for r in chosen] == list(scores.values())
    first = SAMPLE[0].run.name
    fewer = first_seen_residuals(SAMPLE, {**scores, first: None})
    assert len(fewer) == len(chosen) - 1
    assert first_seen_residuals(SAMPLE, {}) == []
    pooled, _ = derive(SAMPLE, scores)
    assert pooled["num_runs"] == len(SAMPLE)
    errors = [abs(1.0 / (1.0 + x) - 1.0) for x in scores.values() if x is not None]
    assert pooled["mape"] == pytest.approx(sum(errors) / len(errors), abs=5e-4)
    assert derive(SAMPLE, scores) != derive(SAMPLE, {n: x / 2 for n, x in scores.items() if x})


def test_the_finite_sample_position_is_the_conformal_rank() -> None:
    """(K + 1)(1 - t) sources for the strict rule (Lei et al. 2018), half a source less for
    the centred one: with 9 sources and a 10 % tail, the 9th (largest) and 8.5th."""
    assert RANGE_TAIL == 0.10
    assert finite_sample_position(9, RANGE_TAIL, strict=True) == pytest.approx(9.0)
    assert finite_sample_position(9, RANGE_TAIL) == pytest.approx(8.5)
    assert finite_sample_position(19, RANGE_TAIL, strict=True) == pytest.approx(18.0)


def test_the_range_ends_at_the_finite_sample_rank_of_a_small_known_sample() -> None:
    """14 sources with one run each, +1 % .. +14 %: the strict rule's position 13.5 rounds up
    to the 14th (the largest) and 1st; the centred rule's 13 gives the 13th and the 2nd."""
    sample = _one_run_per_source([i / 100 for i in range(1, 15)])
    assert source_range(sample, strict=True) == (0.01, 0.14)
    assert source_range(sample) == (0.02, 0.13)


def test_each_source_counts_once_however_many_runs_it_has() -> None:
    """19 sources of one run (+1 % .. +19 %) and one source of 50 runs at +90 %: counted per
    run the 90th percentile is +90 %; counted per source (20 sources, position 18.4) the
    range ends at +19 %, the 19th source. The same 50 runs as 50 sources move it to +90 %."""
    singles = _one_run_per_source([i / 100 for i in range(1, 20)])
    one_big_source = [Residual("sweep", "megatron-3d", 0.9) for _ in range(50)]
    assert source_range(singles + one_big_source)[1] == pytest.approx(0.19)
    as_many_sources = [replace(r, source=f"sweep-{i}") for i, r in enumerate(one_big_source)]
    assert source_range(singles + as_many_sources)[1] == pytest.approx(0.9)


def test_too_few_sources_give_the_span_of_the_runs() -> None:
    """Two sources cannot place a 10 % tail (position 2.2 > 2): the range is their span."""
    sample = [Residual("a", "hsdp", -0.3), Residual("a", "hsdp", 0.1), Residual("b", "hsdp", 0.2)]
    assert source_range(sample) == (-0.3, 0.2)


def test_a_class_with_few_sources_is_never_narrower_than_the_pooled_range() -> None:
    """Classes of fewer than ``OWN_RANGE_MIN_SOURCES`` sources take the envelope of the pooled
    range and their own; a class with that many takes its own, narrower or not."""
    assert OWN_RANGE_MIN_SOURCES == 9  # the fewest K with (K + 1) * 0.9 <= K
    wide = _one_run_per_source([(i - 10) / 20 for i in range(20)], "fsdp-small")
    narrow = [Residual(f"t{i}", "megatron-3d", (i - 5) / 200) for i in range(OWN_RANGE_MIN_SOURCES)]
    few = [Residual("u0", "hsdp", 0.01), Residual("u1", "hsdp", 0.02)]
    pooled = source_range(wide + narrow + few)
    ranges = class_ranges(wide + narrow + few)
    assert ranges["hsdp"][0] <= pooled[0] and ranges["hsdp"][1] >= pooled[1]
    assert ranges["hsdp"] == pooled  # its own runs lie inside the pooled range
    assert ranges["megatron-3d"] == source_range(narrow)
    assert ranges["megatron-3d"][1] < pooled[1]
    spiky = [*few, Residual("u2", "hsdp", 3.0)]
    assert class_ranges(wide + narrow + spiky)["hsdp"][1] == pytest.approx(3.0)


def test_a_dense_class_borrows_the_range_of_dense_runs_and_moe_the_range_of_all() -> None:
    """Expert-layer misses widen what MoE borrows, never what a dense class borrows: a dense
    model has no expert layer (the range of a class without runs, the top one, is dense)."""
    dense = _one_run_per_source([(i - 10) / 100 for i in range(20)], "megatron-3d")
    moe = [Residual(f"m{i}", "moe", -0.4 - i / 100) for i in range(3)]
    few_dense = [Residual("u0", "hsdp", 0.0), Residual("u1", "hsdp", 0.01)]
    few_moe = [Residual("v0", "moe", 0.0)]
    chosen = dense + moe + few_dense + few_moe
    ranges = class_ranges(chosen)
    assert pooled_range(chosen) == source_range(dense + few_dense)
    assert ranges["hsdp"] == pooled_range(chosen)  # its runs lie inside the dense pool
    assert ranges["moe"][0] <= source_range(chosen)[0] < pooled_range(chosen)[0]
    assert ranges["moe"][0] == pytest.approx(min(r.excess for r in moe))  # 4 sources: span
    assert run_family("moe") == "moe" and run_family("long-context") == "dense"
    assert pooled_range(moe) == source_range(moe)  # no dense run: all runs


def test_leave_one_source_out_coverage_is_the_rank_formula() -> None:
    """With one run per source and distinct scores, a source left out lies inside the range
    of the other K = 14 (the 2nd..13th of them) exactly when its rank among all 15 is 3..13:
    11 of 15, the (k - j) / (K + 1) of exchangeable scores."""
    sample = _one_run_per_source([i / 100 for i in range(15)])
    held = leave_one_source_out(sample)
    assert len(held) == 15
    assert sum(held.values()) / len(held) == pytest.approx(11 / 15)
    strict = leave_one_source_out(sample, rule="strict")  # 1st..14th of 14: ranks 2..14
    assert sum(strict.values()) / len(strict) == pytest.approx(13 / 15)


def test_coverage_counts_runs_inside_the_printed_range() -> None:
    band = band_of(residuals(SAMPLE))
    inside = coverage(SAMPLE, band, {})
    assert 0.0 < inside <= 1.0
    wider = {**band, "low_fraction": -0.9, "high_fraction": 9.0}
    assert coverage(SAMPLE, band.__class__(wider), {}) == 1.0


def _plan(**changes: object) -> ParallelPlan:
    job = changes.pop("layout", JobLayout(tp=8, pp=4, dp=8))
    return ParallelPlan(job, micro_batch=1, seq_length=4096).with_(**changes)  # type: ignore[arg-type]


def test_run_classes_follow_the_plan() -> None:
    models = load_catalog().models
    dense, moe = models["llama3.1-70b"], models["mixtral-8x7b"]
    mcore = Stack.megatron_core()
    assert run_class(dense, _plan(), mcore) == "megatron-3d"
    assert run_class(moe, _plan(), mcore) == "moe"
    assert run_class(dense, _plan(seq_length=131072), mcore) == "long-context"
    assert (
        run_class(dense, _plan(layout=JobLayout(tp=8, pp=4, dp=8, cp=2)), mcore) == "long-context"
    )
    fsdp = JobLayout(dp=64)
    assert run_class(dense, _plan(layout=fsdp, zero_stage=3), mcore) == "fsdp-small"
    assert run_class(dense, _plan(layout=fsdp, zero_stage=3, shard_size=8), mcore) == "hsdp"
    assert run_class(dense, _plan(layout=JobLayout(tp=8, dp=8), zero_stage=3), mcore) == "fsdp-nd"
    big = JobLayout(dp=2048)
    assert run_class(dense, _plan(layout=big, zero_stage=3), mcore) == "zero3-fsdp-scale"
    small = models["gpt3-1.3b"]
    small_plan = _plan(layout=JobLayout(tp=8, dp=8), seq_length=2048)
    assert run_class(small, small_plan, mcore) == "small-gemm"


def test_zero2_is_an_fsdp_class_where_the_stack_gathers_unit_by_unit() -> None:
    """FSDP's SHARD_GRAD_OP (ZeRO-2 on the PyTorch stacks) all-gathers and reduce-scatters
    each unit in every micro-batch, the FSDP mechanisms; Megatron's ZeRO-2 is its distributed
    optimizer, one gather and one reduce-scatter per step, and stays a Megatron class."""
    dense = load_catalog().models["llama3.1-70b"]
    fsdp, torchtitan, mcore = stack_named("fsdp"), stack_named("torchtitan"), Stack.megatron_core()
    assert fsdp.zero2_per_unit and torchtitan.zero2_per_unit and not mcore.zero2_per_unit
    one_dim = _plan(layout=JobLayout(dp=64), zero_stage=2)
    assert run_class(dense, one_dim, fsdp) == "fsdp-small"
    assert run_class(dense, one_dim, mcore) == "megatron-3d"
    assert run_class(dense, one_dim.with_(shard_size=8), torchtitan) == "hsdp"
    two_dim = _plan(layout=JobLayout(tp=8, dp=8), zero_stage=2)
    assert run_class(dense, two_dim, torchtitan) == "fsdp-nd"
    assert run_class(dense, two_dim, mcore) == "megatron-3d"
    assert run_class(dense, _plan(layout=JobLayout(dp=2048), zero_stage=2), fsdp) == (
        "zero3-fsdp-scale"
    )
    # ZeRO-1 shards only the optimizer state: never per unit, whatever the stack.
    assert run_class(dense, _plan(layout=JobLayout(dp=64), zero_stage=1), fsdp) == "megatron-3d"


def test_a_prediction_prints_the_range_of_its_class() -> None:
    outcome = next(o for o in SAMPLE if o.prediction is not None)
    assert outcome.prediction is not None
    assert outcome.prediction.run_class == outcome.run_class
    assert outcome.prediction.band == validation_band(outcome.run_class)
    assert validation_band("no-such-class") == validation_band()
    assert validation_band().num_sources >= OWN_RANGE_MIN_SOURCES


def test_the_printed_basis_says_when_a_class_falls_back_to_the_pooled_range() -> None:
    own = Band(low_fraction=-0.1, high_fraction=0.1, num_runs=38, num_sources=9, mape=0.1)
    assert own.basis().startswith("split-conformal over the misses on 38 published runs of 9")
    assert "never narrower" not in own.basis()
    few = Band(low_fraction=-0.2, high_fraction=0.2, num_runs=7, num_sources=2, mape=0.2)
    assert "never narrower than the range pooled over its model family" in few.basis()


def test_a_borrowing_class_states_its_own_runs_beside_its_familys() -> None:
    """A class with too few first-seen sources prints the family pool it borrows from (which
    holds its own runs) and its own counts."""
    chosen = _one_run_per_source([(i - 10) / 100 for i in range(12)], "fsdp-small")
    chosen += [Residual("h0", "hsdp", 0.05), Residual("h0", "hsdp", 0.06)]
    band = _class_band(chosen, "hsdp", (-0.1, 0.1), "centred")
    assert band["num_runs"] == 14 and band["num_sources"] == 13
    assert band["class_runs"] == 2 and band["class_sources"] == 1
    text = Band(-0.1, 0.1, 14, 13, 0.05, class_runs=2, class_sources=1).basis()
    assert "its class has 2 such runs of 1 sources" in text
    assert "class_runs" not in _class_band(chosen, "fsdp-small", (-0.1, 0.1), "centred")
