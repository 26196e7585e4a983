"""``clusterforge predict``: JSON fields, overrides, search, clear errors."""

from __future__ import annotations

import json

import pytest

from clusterforge.cli.main import main

REQUIRED = {
    "step_time_s",
    "tokens_per_s",
    "tokens_per_s_per_gpu",
    "model_tflops_per_gpu",
    "mfu",
    "hfu",
    "memory_per_gpu_gib",
    "fits",
    "breakdown",
}
BREAKDOWN = {
    "compute_s",
    "tp_comm_s",
    "pp_comm_s",
    "dp_comm_s",
    "cp_comm_s",
    "ep_comm_s",
    "bubble_s",
    "optimizer_s",
    "other_s",
}


def run_json(capsys, *args: str) -> list[dict]:
    assert main(["predict", *args, "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["schema_version"] == 1 and document["command"] == "predict"
    return document["plans"]


def test_default_spec_json_has_the_documented_fields(capsys) -> None:
    (row,) = run_json(capsys)
    assert row.keys() >= REQUIRED
    assert set(row["breakdown"]) == BREAKDOWN
    assert sum(row["breakdown"].values()) == pytest.approx(row["step_time_s"])
    assert 0 < row["mfu"] <= row["hfu"] < 1
    assert row["tokens_per_s"] == row["tokens_per_s_per_gpu"] * row["num_gpus"]


def test_overrides_change_the_plan_and_dp_follows(capsys) -> None:
    (row,) = run_json(capsys, "--tp", "4", "--pp", "8", "--micro-batch", "2", "--recompute", "full")
    plan = row["plan"]
    assert (plan["tp"], plan["pp"], plan["dp"], plan["micro_batch"]) == (4, 8, 16, 2)
    assert row["hfu"] > row["mfu"] * 1.3


def test_search_returns_ranked_fitting_plans(capsys) -> None:
    rows = run_json(capsys, "--search", "--top", "3")
    assert len(rows) == 3
    assert all(r["fits"] for r in rows)
    rates = [r["tokens_per_s"] for r in rows]
    assert rates == sorted(rates, reverse=True)


def test_table_output_names_mfu_and_the_convention(capsys) -> None:
    assert main(["predict"]) == 0
    out = capsys.readouterr().out
    assert "MFU" in out and "HFU" in out and "Korthikanti" in out


def test_inconsistent_plan_is_one_clear_error(capsys) -> None:
    assert main(["predict", "--tp", "3"]) == 1
    err = capsys.readouterr().err
    assert "does not divide" in err
    assert "Traceback" not in err


def test_stack_option_changes_the_mechanisms(capsys) -> None:
    (core,) = run_json(capsys, "--stack", "megatron-core")
    (old,) = run_json(capsys, "--stack", "megatron-2021")
    assert (core["stack"], old["stack"]) == ("megatron-core", "megatron-2021")
    assert old["step_time_s"] > core["step_time_s"]  # no overlap, unfused attention


def test_every_prediction_states_its_range(capsys) -> None:
    (row,) = run_json(capsys)
    low, high = row["tokens_per_s_per_gpu_range"]
    assert low < row["tokens_per_s_per_gpu"] < high
    assert main(["predict"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "tokens/s per GPU" in out
    assert "split-conformal" in out and "each as first predicted (before the run was added)" in out
    assert "each source counted once" in out


def test_search_over_gpu_counts_reports_plans_evaluated(capsys) -> None:
    rows = run_json(capsys, "--search", "--gpus", "256,512", "--top", "2")
    assert [r["num_gpus"] for r in rows] == [256, 512]
    counts = rows[0]["plans_evaluated"]
    assert counts["generated"] >= counts["fit_in_memory"] >= counts["timed"] >= 2


def test_gpu_count_sweep_skips_sizes_where_nothing_fits(capsys) -> None:
    rows = run_json(capsys, "--search", "--gpus", "8,512", "--top", "1")
    assert [r["num_gpus"] for r in rows] == [512]  # 70B does not fit on one 8-GPU node
