"""`clusterforge plan` end to end, through the installed console script."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import EXAMPLES

FILES = {
    "design.json",
    "bom.csv",
    "racks.csv",
    "cabling.csv",
    "findings.md",
    "racks.svg",
    "floor.svg",
    "fabric.svg",
    "fabric.drawio",
    "fabric.dot",
    "tco.svg",
}


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open() as handle:
        return list(csv.DictReader(handle))


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "clusterforge.cli.main", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
    )


def test_plan_default_prints_summary():
    result = run("plan")
    assert result.returncode == 0, result.stderr
    for text in ("Compute", "Network", "Cabling", "Findings", "dgx-h100", "qm9700"):
        assert text in result.stdout


def test_plan_writes_every_file(tmp_path):
    out = tmp_path / "out"
    result = run("plan", str(EXAMPLES / "colo-512-h100.yaml"), "-o", str(out))
    assert result.returncode == 0, result.stderr
    assert {p.name for p in out.iterdir()} == FILES
    design = json.loads((out / "design.json").read_text())
    assert design["compute"]["num_training_gpus"] == 512
    bom = _rows(out / "bom.csv")
    total = float(bom[-1]["extended_usd"])
    assert abs(total - sum(float(r["extended_usd"]) for r in bom[:-1])) < 1.0
    racks = _rows(out / "racks.csv")
    assert {r["device"] for r in racks if r["kind"] == "node"} == set(
        design["compute"]["node_names"]
    )
    cabling = _rows(out / "cabling.csv")
    assert any(r["link_class"] == "leaf-spine" and r["medium"] for r in cabling)
    assert "# Findings" in (out / "findings.md").read_text()


def test_plan_json_on_stdout():
    result = run("plan", "--json")
    assert result.returncode == 0
    design = json.loads(result.stdout)
    # 64 nodes = 2 scalable units of 32 x 8 rails; spares take free leaf ports
    assert design["fabric"]["num_leaves"] == 16
    assert design["cost"]["capex_usd"] > 0


def test_bad_spec_is_one_red_line_and_writes_nothing(tmp_path):
    spec = tmp_path / "bad.yaml"
    spec.write_text("num_gpus: 512\ngpu: h100\n")
    out = tmp_path / "out"
    result = run("plan", str(spec), "-o", str(out))
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert "did you mean 'h100-sxm'" in result.stderr
    assert len(result.stderr.strip().splitlines()) <= 3  # one message, wrapped at most
    assert not out.exists()


def test_capacity_error_is_clean(tmp_path):
    spec = tmp_path / "tiny.yaml"
    spec.write_text("num_gpus: 8\nnode: dgx-h100\nfacility: {max_rack_kw: 3}\n")
    result = run("plan", str(spec), "-o", str(tmp_path / "o"))
    assert result.returncode == 1
    assert "max_rack_kw" in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "o").exists()
