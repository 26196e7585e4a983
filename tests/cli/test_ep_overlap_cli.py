"""``workload.expert_parallel_overlap`` through the CLI: a plan Megatron-Core refuses under the
overlap is one plain error line naming the field and the fix (exit 1, nothing written, no
traceback), and ``predict --search`` / ``optimize`` search only plans it runs, saying how many
they left out and why."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from clusterforge.cli.main import main
from clusterforge.spec import load_spec

MOE = {
    "name": "moe-lab",
    "num_gpus": 64,
    "node": "dgx-h100",
    "workload": {
        "model": "mixtral-8x7b",
        "tokens_b": 100,
        "tensor_parallel": 2,
        "pipeline_parallel": 1,
        "expert_parallel": 8,
        "global_batch": 256,
        "expert_parallel_overlap": True,
    },
}


def _spec(tmp_path: Path, data: dict[str, object], **workload: object) -> str:
    path = tmp_path / "spec.yaml"
    merged = {**data, "workload": {**data["workload"], **workload}}  # type: ignore[dict-item]
    path.write_text(yaml.safe_dump(merged))
    return str(path)


def _fails(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert code == 1, (out, err)
    assert "Traceback" not in err and err.strip().startswith("error: "), err
    assert len(err.strip().splitlines()) == 1, err
    return err


def _obeys_the_rules(plan: dict[str, object]) -> bool:
    return (
        int(plan["ep"]) >= 2  # type: ignore[call-overload]
        and plan["recompute"] != "full"
        and (plan["pp"] == 1 or int(plan["vpp"]) >= 2)  # type: ignore[call-overload]
    )


def test_the_overlap_is_priced_when_the_plan_obeys_megatron_core(capsys, tmp_path) -> None:
    on = _spec(tmp_path, MOE)
    assert main(["predict", on, "--json"]) == 0
    with_overlap = json.loads(capsys.readouterr().out)["plans"][0]["step_time_s"]
    off = _spec(tmp_path, MOE, expert_parallel_overlap=False)
    assert main(["predict", off, "--json"]) == 0
    without = json.loads(capsys.readouterr().out)["plans"][0]["step_time_s"]
    assert with_overlap < without  # the dispatch and combine hide behind compute


@pytest.mark.parametrize(
    ("workload", "argv", "named", "fix"),
    [
        ({"expert_parallel": 1}, (), "expert_parallel = 1", "set expert_parallel to 2"),
        ({"recompute": "full"}, (), "recompute = 'full'", "use recompute 'selective'"),
        (
            {"pipeline_parallel": 2},
            (),
            "virtual_pipeline_stages = 1",
            "set virtual_pipeline_stages to 2",
        ),
        ({}, ("--ep", "1"), "expert_parallel = 1", "set expert_parallel to 2"),
        ({}, ("--recompute", "full"), "recompute = 'full'", "use recompute 'selective'"),
        ({"model": "llama3-8b", "expert_parallel": 1}, (), "dense model", "turn"),
        ({}, ("--stack", "deepspeed"), "stack 'deepspeed'", "turn"),
    ],
)
def test_predict_refuses_what_megatron_core_refuses(
    capsys, tmp_path, workload, argv, named, fix
) -> None:
    err = _fails(capsys, "predict", _spec(tmp_path, MOE, **workload), *argv)
    assert "expert_parallel_overlap" in err and named in err and fix in err
    assert "turn expert_parallel_overlap off" in err


def test_a_stack_without_the_overlap_is_a_spec_error(capsys, tmp_path) -> None:
    err = _fails(capsys, "predict", _spec(tmp_path, MOE, stack="fsdp"))
    assert "workload: expert_parallel_overlap = true with stack = 'fsdp'" in err


def test_generate_refuses_before_writing_anything(capsys, tmp_path) -> None:
    out = tmp_path / "out"
    spec = _spec(tmp_path, MOE, pipeline_parallel=2)
    err = _fails(capsys, "generate", spec, "-o", str(out), "--only", "slurm")
    assert "virtual_pipeline_stages = 1" in err
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["spec.yaml"]


def test_predict_search_keeps_only_plans_megatron_core_runs(capsys, tmp_path) -> None:
    # the spec's own EP 1 does not matter: the search chooses the layout
    spec = _spec(tmp_path, MOE, expert_parallel=1)
    assert main(["predict", spec, "--search", "--top", "5", "--json"]) == 0
    plans = json.loads(capsys.readouterr().out)["plans"]
    assert plans and plans[0]["plans_evaluated"]["refused_expert_parallel_overlap"] > 0
    assert all(_obeys_the_rules(row["plan"]) for row in plans), [r["plan"] for r in plans]
    assert main(["predict", spec, "--search", "--top", "2"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "Megatron-Core refuses under workload.expert_parallel_overlap" in out
    assert "expert_parallel >= 2" in out


def test_predict_search_without_the_overlap_drops_nothing(capsys, tmp_path) -> None:
    spec = _spec(tmp_path, MOE, expert_parallel_overlap=False)
    assert main(["predict", spec, "--search", "--top", "2", "--json"]) == 0
    plans = json.loads(capsys.readouterr().out)["plans"]
    assert plans[0]["plans_evaluated"]["refused_expert_parallel_overlap"] == 0


OPTIMIZE = {
    "name": "tiny-moe",
    "job": {
        "model": "mixtral-8x7b",
        "tokens_b": 10,
        "global_batch": 256,
        "expert_parallel_overlap": True,
    },
    "search": {
        "nodes": ["dgx-h100"],
        "num_gpus": [16, 32],
        "fabrics": ["infiniband"],
        "spare_fractions": [0.0],
        "procurement": ["build"],
    },
}


def test_optimize_searches_only_plans_megatron_core_runs(capsys, tmp_path) -> None:
    path, out = tmp_path / "opt.yaml", tmp_path / "out"
    path.write_text(yaml.safe_dump(OPTIMIZE))
    assert main(["optimize", str(path), "--json", "--workers", "1", "-o", str(out)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["search"]["refused_overlap"] > 0 and data["front"]
    assert all(_obeys_the_rules(point["plan"]) for point in data["front"])
    written = load_spec(out / "front-1.yaml").workload
    assert written is not None and written.expert_parallel_overlap
    assert main(["optimize", str(path), "--workers", "1"]) == 0
    summary = " ".join(capsys.readouterr().out.split())
    assert "refuses under job.expert_parallel_overlap" in summary


def test_optimize_refuses_the_overlap_on_a_dense_model(capsys, tmp_path) -> None:
    path = tmp_path / "opt.yaml"
    dense = {**OPTIMIZE, "job": {**OPTIMIZE["job"], "model": "llama3-8b"}}  # type: ignore[dict-item]
    path.write_text(yaml.safe_dump(dense))
    err = _fails(capsys, "optimize", str(path), "--workers", "1")
    assert "dense model llama3-8b" in err and "turn expert_parallel_overlap off" in err


def test_the_optimize_page_counts_the_refused_plans_after_the_plan_searches(tmp_path) -> None:
    path, page = tmp_path / "opt.yaml", tmp_path / "front.html"
    path.write_text(yaml.safe_dump(OPTIMIZE))
    assert main(["report", str(path), "--workers", "1", "-o", str(page)]) == 0
    html = page.read_text()
    row = html.index("that Megatron-Core refuses under the EP overlap")
    assert html.index("plan searches") < row < html.index("designs priced")
