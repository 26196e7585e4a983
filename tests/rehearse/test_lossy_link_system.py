"""The lossy-link check on four emulated nodes: network namespaces on one bridge, iperf3 as
the stand-in traffic, the workers started locally (no Slurm: seconds, not minutes).

Needs root, iproute2 (ip, tc) and iperf3, and nftables where the kernel has no netem;
skipped with the reason otherwise.  Marked ``system``.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from clusterforge.accept.launch import LocalLauncher
from clusterforge.generate.training.launch import hca_names
from clusterforge.rehearse.cluster import rehearsal_design
from clusterforge.rehearse.lossy import LOSS_PERCENT, fabric_run, lossy_missing
from clusterforge.rehearse.netns import open_fabric

pytestmark = [
    pytest.mark.system,
    pytest.mark.skipif(bool(lossy_missing()), reason=f"needs {lossy_missing()}"),
]

SPEC = "name: lossy-test\nnum_gpus: 32\nnode: dgx-h100\nnetwork: {topology: rail-optimized}\n"
TAG = "29" + "711"  # its own namespaces, bridge and ports: cf-29711-<node>, cf29711br


def _leftovers() -> list[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=False)
    return [line for line in out.stdout.splitlines() if line.startswith(f"cf-{TAG}-")]


def test_half_a_percent_loss_on_one_link_fails_that_port_and_nothing_else(tmp_path: Path):
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC)
    design = rehearsal_design(spec, 4)
    nodes = design.compute.node_names[:4]
    hca = hca_names(design)[0]
    links = open_fabric(nodes, tag=TAG, hca=hca)
    try:
        launcher = LocalLauncher(port=29711)
        clean = fabric_run(design, links, launcher, victim=None, seconds=1)
        hit = fabric_run(design, links, launcher, victim=nodes[2], seconds=1)
    finally:
        links.close()
    assert not _leftovers()
    assert clean.failures == [], clean.report.as_dict()
    losses = {r.node: r for r in hit.report.results if r.test == "fabric loss"}
    assert set(losses) == set(nodes)  # every port's counters were read, before and after
    assert hit.failures == [f"fabric loss on {nodes[2]} {losses[nodes[2]].port}"]
    assert losses[nodes[2]].port.startswith(f"{hca} (cable {nodes[2]} {hca} -> leaf-")
    assert 0.2 < losses[nodes[2]].measured < 1.0  # % of the packets sent, around 0.5
    assert "qdisc_drops" in losses[nodes[2]].evidence
    assert LOSS_PERCENT == 0.5
    print(f"\nno loss: {clean.duration_s:.1f} s; {hit.injected}: {hit.duration_s:.1f} s")
