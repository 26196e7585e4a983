"""What ``plan`` prints and writes about spares: the spares held, and each way to hold them."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from tests.conftest import EXAMPLES


def _spec(tmp_path: Path, replace: dict[str, str]) -> Path:
    text = (EXAMPLES / "gb200-nvl72-pod.yaml").read_text()
    for old, new in replace.items():
        assert old in text
        text = text.replace(old, new)
    path = tmp_path / "gb200.yaml"
    path.write_text(text)
    return path


def _plan(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "clusterforge.cli.main", "plan", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "COLUMNS": "200"},
    )


def test_the_summary_names_the_spares_actually_held(tmp_path):
    """A whole spare rack on spare-ports is 16 trays on free leaf ports and 2 cold."""
    spec = _spec(tmp_path, {"spare_fraction: 0.0 ": "spare_fraction: 0.05"})
    result = _plan(str(spec))
    assert result.returncode == 0, result.stderr
    assert "16 on free leaf ports, 2 cold" in result.stdout


def test_plan_shows_each_way_to_hold_spares_with_its_cost_and_goodput():
    result = _plan(str(EXAMPLES / "gb200-nvl72-pod.yaml"))
    assert result.returncode == 0, result.stderr
    assert "Spares, each way to hold them" in result.stdout
    assert "none (as designed)" in result.stdout
    # a whole spare rack on free leaf ports costs millions more, in the report's money format
    row = next(line for line in result.stdout.splitlines() if line.startswith("│ spare-ports"))
    assert re.search(r"\$3\d\.\d\dM \(\+\$\d\.\d\dM\)", row), row


def test_plan_json_carries_each_way_to_hold_spares():
    result = _plan(str(EXAMPLES / "gb200-nvl72-pod.yaml"), "--json")
    assert result.returncode == 0, result.stderr
    options = json.loads(result.stdout)["spare_options"]
    modes = {o["mode"]: o for o in options}
    assert set(modes) == {"none", "spare-ports", "spare-pool", "counted", "in-domain"}
    assert modes["in-domain"]["ettr"] > modes["spare-ports"]["ettr"] > modes["none"]["ettr"]
    assert modes["none"]["as_designed"] and modes["none"]["capex_delta_usd"] == 0


def test_a_pod_with_in_rack_spares_says_what_jobs_use(tmp_path):
    spec = _spec(tmp_path, {"spare_fraction: 0.0 ": "spare_nodes_per_nvlink_domain: 2 #"})
    result = _plan(str(spec))
    assert result.returncode == 0, result.stderr
    assert "72 GPUs (jobs use 64, the rest are in-rack spares)" in result.stdout
    assert "2 in each of 9 NVLink domains" in result.stdout
    assert "in-domain (as designed)" in result.stdout
