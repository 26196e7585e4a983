"""Published peak memory per GPU (validation/pub_*mem*.toml, validation/memory_rows.py).

The loader: every memory row names a training-run row of validation/, says what it counts,
and a calibration or development memory row never names a held-out run. The development
rows: each ran, so its run must be predicted to fit, and its predicted peak memory per GPU
must be within 15 % of the published one (set before the rows were first predicted); rows
that miss it are strict xfails with their cause. Only development rows are predicted here.
"""

from __future__ import annotations

import statistics
from typing import get_args

import pytest

from tests.validation.gaps import gap_cases
from validation.memory_rows import (
    MemoryKind,
    MemoryRow,
    load_memory_rows,
    memory_rows_of,
    predict_memory,
)
from validation.runs import load_runs
from validation.sets import kind_of

TOLERANCE = 0.15
ROWS = load_memory_rows()
DEVELOPMENT = [r for r in ROWS if r.subset == "development"]

PP_1F1B = (
    "Llama 3.1 405B, FSDP 8 x TP 8 x PP 8, 1F1B with 8 micro-batches of 4: published 82.5 "
    "GiB (the maximum over all GPUs, the source's footnote 1), predicted 68.7 for the first "
    "stage; the CP rows of the same model at micro-batch 1 are 7-9 % under. Cause not found; "
    "candidates: a later stage's peak (the output layer and loss), the caching allocator's "
    "reserve over allocated tensors at 8 micro-batches in flight"
)
KNOWN_GAPS = {
    "mem-tt-h100-405b-512gpu-3d-1f1b": PP_1F1B,
}


def test_memory_rows_come_from_three_sources_with_15_development_rows() -> None:
    assert len({r.file for r in DEVELOPMENT}) >= 3
    assert len(DEVELOPMENT) >= 15
    assert {r.subset for r in ROWS} <= {"calibration", "development", "heldout"}


def test_every_memory_row_names_a_run_and_what_it_counts() -> None:
    runs = {r.name for r in load_runs()}
    for row in ROWS:
        assert row.run.name in runs, row.id
        assert row.kind in get_args(MemoryKind), row.id
        assert row.measured_gib > 0, row.id
        if row.subset != "heldout":
            assert row.run.subset != "heldout", row.id
    assert len({r.id for r in ROWS}) == len(ROWS)


def test_a_memory_row_is_its_own_kind() -> None:
    assert kind_of({"measured_memory_gib": 10.0, "run": "x"}) == "memory"


def _raw(**row: object) -> dict[str, object]:
    base = {"id": "m", "set": "development", "source": "s", "measured_memory_gib": 1.0}
    return {"defaults": {"memory_kind": "max_reserved"}, "row": [{**base, **row}]}


def test_the_loader_refuses_an_unknown_run_a_held_out_run_and_an_unknown_kind() -> None:
    runs = {r.name: r for r in load_runs()}
    held = next(r.name for r in runs.values() if r.subset == "heldout")
    with pytest.raises(ValueError, match="no training-run row"):
        memory_rows_of("x.toml", _raw(run="no-such-run"), runs)
    with pytest.raises(ValueError, match="may not name the held-out run"):
        memory_rows_of("x.toml", _raw(run=held), runs)
    dev = DEVELOPMENT[0].run.name
    with pytest.raises(ValueError, match="memory_kind"):
        memory_rows_of("x.toml", _raw(run=dev, memory_kind="peak"), runs)


def test_a_row_may_narrow_the_micro_batch_of_its_run() -> None:
    row = next(r for r in DEVELOPMENT if r.id == "mem-tt-h100-405b-32k-fsdp8-cp1")
    assert row.run.micro_batches == (1,)


@pytest.mark.parametrize("row", gap_cases(DEVELOPMENT, KNOWN_GAPS))
def test_development_memory_within_tolerance(row: MemoryRow) -> None:
    outcome = predict_memory(row)
    assert outcome.fits, f"{row.id}: ran, but predict finds no fitting plan"
    assert abs(outcome.error) <= TOLERANCE, (
        f"{row.id}: {outcome.predicted_gib:.1f} GiB predicted vs {row.measured_gib} published "
        f"({outcome.error * 100:+.1f} %)"
    )


def test_development_memory_mape_is_recorded() -> None:
    errors = [abs(predict_memory(r).error) for r in DEVELOPMENT]
    # 12.4 % when the rows were added, 10.8 % with the loss-parallel backward's 16 B per
    # logit and DeepSpeed's gradient bucket (benchmarks/validate_memory.py); a change that
    # makes it worse than 13 % needs a look at docs/validation.md's memory section.
    assert statistics.fmean(errors) <= 0.13
