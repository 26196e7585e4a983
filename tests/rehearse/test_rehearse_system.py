"""``clusterforge rehearse`` end to end: the generated files as an emulated Slurm cluster.

Needs root, Debian's slurm-wlm and munge, and Prometheus (marked ``system`` and ``slow``).
Runs every drill on four nodes, as ``clusterforge rehearse SPEC --nodes 4`` does; the NIC
flap and slowed-node drills may only be skipped where the machine cannot make network
namespaces or cgroup v1 cpu groups.  Its own ports (controller 18819, nodes 18931+,
Prometheus 18991, exporters 18961+, clock stand-ins 18981+) keep clear of other emulated
clusters.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from clusterforge.rehearse.cluster import missing_requirements
from clusterforge.rehearse.emulated import Ports
from clusterforge.rehearse.model import DRILLS, RehearseOptions
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


# Every drill but two that repeat, at system-test cost, what other tests prove:
# * lossy-link: its two full-load runs through sbatch add three minutes to CI, and
#   tests/rehearse/test_lossy_link_system.py runs the same fabric rounds, loss injection and
#   verdicts on the same emulated links in seconds (the Slurm run is measured by hand:
#   benchmarks/rehearse_drills.py, figures in the README).
# * accept: the same suite (node, nccl, net, storage; 2 s burn-in, up to 4 MiB, nodes one by
#   one) runs through an emulated Slurm in tests/accept/test_accept_slurm_system.py; accept
#   through this rehearsal's cluster runs below in the slow-node drill; the drill's own
#   wiring (its suite, the rerun, the verdict) is checked with recorded runs in
#   tests/rehearse/test_rehearse_monitoring.py (test_the_accept_drill_runs_the_suite_...).
#   Running it here took 4 to 5 minutes of this test's 7 on a loaded 2-core machine.
RUN_HERE = tuple(d for d in DRILLS if d not in ("lossy-link", "accept"))


def _pids_of(pattern: str) -> list[str]:
    out = subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True, check=False)
    return out.stdout.split()


def _netns_of(tag: str) -> list[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=False)
    return [line.split()[0] for line in out.stdout.splitlines() if line.startswith(f"cf-{tag}-")]


def _evidence(drill: dict[str, Any]) -> str:
    return "\n".join(drill["evidence"])


def test_rehearse_runs_every_drill_on_four_nodes_then_leaves_nothing_behind(
    tmp_path: Path,
) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC)
    options = RehearseOptions(
        spec=spec, num_nodes=4, cluster="cfrehtest", ports=Ports(18819, 18931, 18819000),
        prometheus_port=18991, first_exporter_port=18961, first_clock_port=18981,
        drills=RUN_HERE,
    )  # fmt: skip
    report = rehearse(options).as_dict()
    drills = {d["drill"]: d for d in report["drills"]}
    assert list(drills) == list(RUN_HERE)
    assert report["exit_code"] == 0, json.dumps(report["drills"], indent=1)
    assert report["nodes"] == ["gpu-0001", "gpu-0002", "gpu-0003", "gpu-0004"]
    skipped = {n for n, d in drills.items() if d["verdict"] == "skip"}
    assert skipped <= {"nic-flap", "slow-node"}, report  # only where the machine cannot
    xid = drills["xid"]
    assert any("drained|clusterforge:" in e and "gpu.xid: gpu3" in e for e in xid["evidence"])
    assert 0 < xid["detect_s"] <= xid["drain_s"] and xid["recover_s"] > 0
    alert = _evidence(drills["prometheus"])
    assert "'for:' shortened to 15s" in alert
    assert "NodeUnhealthy firing after" in alert and "on other nodes: none" in alert
    assert "NodeUnhealthy cleared after" in alert
    assert drills["prometheus"]["detect_s"] >= 15  # the alert waited out its 'for:'
    if "nic-flap" not in skipped:
        flap = _evidence(drills["nic-flap"])
        assert "IbLinkDowned firing after" in flap and "IbPortDown firing after" in flap
        assert "IbPortDown cleared after" in flap
        assert "link alerts on other nodes: none" in flap
    if "slow-node" not in skipped:
        slow = _evidence(drills["slow-node"])
        assert "localization named: gpu-0004" in slow and "stragglers: gpu-0004 (" in slow
    assert not Path(report["work"]).exists()  # no keep: the work folder is gone
    assert not _pids_of(report["work"])  # and no daemon of it runs
    assert not _pids_of("clusterforge.rehearse.standins")
    assert not _netns_of("18991")
