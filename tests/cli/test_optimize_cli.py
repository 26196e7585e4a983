"""``clusterforge optimize``: the front as JSON with a version key, each front point's spec
written out for ``plan``, the chart, ``--compare``, and a bad spec as one red line."""

from __future__ import annotations

import json

import pytest
import yaml

from clusterforge.cli.main import main
from clusterforge.design import plan
from clusterforge.spec import load_spec

TINY = {
    "name": "tiny",
    "job": {"model": "llama3-8b", "tokens_b": 10, "global_batch": 256},
    "search": {
        "nodes": ["dgx-h100"],
        "num_gpus": [8, 16],
        "fabrics": ["infiniband"],
        "spare_fractions": [0.0],
        "procurement": ["build"],
    },
    "compare": [
        {"name": "8 at 400G", "node": "dgx-h100", "num_gpus": 8},
        {"name": "16 at 100G", "node": "dgx-h100", "num_gpus": 16, "nic_gbit_per_s": 100},
    ],
}


def _write(tmp_path, data):
    path = tmp_path / "opt.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_optimize_writes_front_json_specs_and_chart(tmp_path, capsys):
    spec, out, chart = _write(tmp_path, TINY), tmp_path / "out", tmp_path / "front.svg"
    argv = ["optimize", str(spec), "--json", "--workers", "1", "-o", str(out), "--plot", str(chart)]
    assert main(argv) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["version"] == 1 and data["front"]
    assert data["winner"]["winner"] == data["front"][0]["design"]  # objective time: fastest
    first = load_spec(out / "front-1.yaml")
    design = plan(first)
    assert design.compute.num_training_gpus == data["front"][0]["num_gpus"]
    assert json.loads((out / "front.json").read_text())["front"] == data["front"]
    assert 'id="front"' in chart.read_text()


def test_compare_names_the_winner_and_the_margin(tmp_path, capsys):
    assert main(["optimize", str(_write(tmp_path, TINY)), "--compare", "--workers", "1"]) == 0
    out = capsys.readouterr().out
    assert "winner (time)" in out and "for the runner-up" in out


def test_bad_spec_is_one_red_line(tmp_path, capsys):
    bad = {**TINY, "objective": "fastest"}
    assert main(["optimize", str(_write(tmp_path, bad)), "--workers", "1"]) == 1
    err = capsys.readouterr().err
    assert "objective" in err and "Traceback" not in err


def test_a_dask_scheduler_gives_the_same_front_as_one_process(tmp_path, capsys):
    distributed = pytest.importorskip("dask.distributed")
    spec = str(_write(tmp_path, TINY))
    assert main(["optimize", spec, "--json", "--workers", "1"]) == 0
    alone = capsys.readouterr().out
    cluster = distributed.LocalCluster(n_workers=1, processes=False, dashboard_address=None)
    with cluster:
        assert main(["optimize", spec, "--json", "--scheduler", cluster.scheduler_address]) == 0
    assert capsys.readouterr().out == alone


def test_cooling_variants_are_tried_one_at_a_time(tmp_path, capsys):
    space = {**TINY["search"], "num_gpus": [8], "cooling": ["air", "rear-door"]}
    assert main(["optimize", str(_write(tmp_path, {**TINY, "search": space})), "--json",
                 "--workers", "1"]) == 0  # fmt: skip
    front = json.loads(capsys.readouterr().out)["front"]
    assert front
    for point in front:
        assert point["cooling"] == point["spec"]["facility"]["cooling_available"]
