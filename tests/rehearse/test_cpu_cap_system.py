"""The slow-node drill's CPU cap: a cgroup v1 CFS quota that a process tree enters and leaves.
Needs root and a writable cgroup v1 cpu controller; skipped otherwise.  Marked ``system``."""

from __future__ import annotations

import subprocess

import pytest

from clusterforge.rehearse.slow import CPU_CGROUP, cgroup_v1_cpu_missing, cpu_capped

pytestmark = [
    pytest.mark.system,
    pytest.mark.skipif(bool(cgroup_v1_cpu_missing()), reason=f"needs {cgroup_v1_cpu_missing()}"),
]


def test_a_forking_tree_is_capped_then_released_and_the_group_removed():
    tree = subprocess.Popen(["sh", "-c", "while :; do sleep 0.05 & wait; done"])
    try:
        with cpu_capped([tree.pid], 0.5, name="clusterforge-captest"):
            groups = [g for g in CPU_CGROUP.iterdir() if g.name.startswith("clusterforge-captest")]
            assert len(groups) == 1
            assert str(tree.pid) in (groups[0] / "cgroup.procs").read_text().split()
            assert (groups[0] / "cpu.cfs_quota_us").read_text().strip() == "50000"
        assert not [g for g in CPU_CGROUP.iterdir() if g.name.startswith("clusterforge-captest")]
        assert str(tree.pid) in (CPU_CGROUP / "cgroup.procs").read_text().split()
    finally:
        tree.kill()
        tree.wait()
