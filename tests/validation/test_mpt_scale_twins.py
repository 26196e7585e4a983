"""The what-ifs of ``benchmarks/mpt_scale_twins.py`` (docs/validation.md, "LLM Foundry at
128-512 GPUs against its 8-64 GPU twins"): the no-overlap bound only lengthens the steps of
runs sharded unit by unit and leaves every other development run as predicted. Only
development rows are read."""

from __future__ import annotations

from benchmarks.fsdp_rank_scaling import fsdp_development_rows
from benchmarks.mpt_scale_twins import LARGE, SMALL, development_errors, no_overlap

from validation.runs import load_runs

BASE = development_errors()
BOUND = no_overlap(BASE)
SHARDED = {row.run.name for row in fsdp_development_rows()} & set(BASE)  # rows that fit


def test_only_development_rows_are_read() -> None:
    development = {r.name for r in load_runs() if r.subset == "development"}
    assert set(BOUND) == set(BASE) <= development


def test_no_overlap_never_shortens_a_step() -> None:
    for name in SHARDED:
        assert BOUND[name][1] <= BASE[name][1] + 1e-12
        assert BOUND[name][0] == BASE[name][0]


def test_no_overlap_leaves_other_runs_alone() -> None:
    assert all(BOUND[name] == BASE[name] for name in set(BASE) - SHARDED)


def test_both_llm_foundry_h100_tables_are_sharded_unit_by_unit() -> None:
    files = {r.file for r in load_runs() if r.name in SHARDED}
    assert {LARGE, SMALL} <= files
