"""``clusterforge rehearse`` end to end: the generated files as an emulated Slurm cluster.

Needs root, Debian's slurm-wlm and munge, and for the monitoring drill Prometheus (marked
``system`` and ``slow``).  Runs the drills that fit a few minutes on a small machine: bring-up,
the acceptance suite through Slurm, the XID 79 drain and resume through the generated health
check, and the generated alert in a real Prometheus (the slowed-node drill needs a third node
to compare with and a second acceptance run: ``benchmarks/rehearse_drills.py`` runs it).  Its own ports (controller 18819, nodes 18931+, Prometheus 18991,
exporters 18961+) keep clear of other emulated clusters.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from clusterforge.rehearse.cluster import missing_requirements
from clusterforge.rehearse.emulated import Ports
from clusterforge.rehearse.model import RehearseOptions
from clusterforge.rehearse.run import rehearse

pytestmark = [
    pytest.mark.system,
    pytest.mark.slow,
    pytest.mark.skipif(
        bool(missing_requirements()), reason=f"needs {'; '.join(missing_requirements())}"
    ),
    pytest.mark.skipif(shutil.which("prometheus") is None, reason="needs prometheus"),
]

SPEC = "name: rehearse-test\nnum_gpus: 16\nnode: dgx-h100\nnetwork: {topology: rail-optimized}\n"


def _pids_of(pattern: str) -> list[str]:
    out = subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True, check=False)
    return out.stdout.split()


def test_rehearse_accepts_drains_heals_and_alerts_then_leaves_nothing_running(
    tmp_path: Path,
) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC)
    options = RehearseOptions(
        spec=spec, num_nodes=2, drills=("bring-up", "accept", "xid", "prometheus"), cluster="cfrehtest",
        ports=Ports(18819, 18931, 18819000), prometheus_port=18991, first_exporter_port=18961,
    )  # fmt: skip
    report = rehearse(options).as_dict()
    drills = {d["drill"]: d for d in report["drills"]}
    assert report["exit_code"] == 0, report
    assert report["nodes"] == ["gpu-0001", "gpu-0002"]
    assert [d["drill"] for d in report["drills"]] == ["bring-up", "accept", "xid", "prometheus"]
    assert all(d["verdict"] == "pass" for d in report["drills"]), report
    xid = drills["xid"]
    assert any("drained|clusterforge:" in e and "gpu.xid: gpu3" in e for e in xid["evidence"])
    assert 0 < xid["detect_s"] <= xid["drain_s"] and xid["recover_s"] > 0
    assert any("NodeUnhealthy" in e for e in drills["prometheus"]["evidence"])
    assert drills["prometheus"]["detect_s"] > 0
    assert not Path(report["work"]).exists()  # no keep: the work folder is gone
    assert not _pids_of(report["work"])  # and no daemon of it runs
