"""``clusterforge accept --via slurm`` end to end on an emulated 4-node Slurm cluster.

The generated Slurm files are brought up on this machine (slurmctld plus one ``slurmd -N``
per node, see tests/generate/emulated_slurm.py), one node's slurmd is moved into a cgroup v1
``cpu`` group capped at 10 % of one core (its jobs inherit the cap: Slurm's own cgroups use
other controllers), and the whole suite runs through ``sbatch``/``srun`` with the CPU
stand-ins (numpy GEMM, gloo collectives, real fio and iperf3).  The capped node must be
named by the per-node peer rule.  The bisection through the same emulated Slurm is the
rehearsal's slow-node drill (tests/rehearse/test_rehearse_system.py: a capped node named by
accept's localization and by diagnose); running it here too took half this test's time
(3.3 of 7.7 minutes on a loaded 2-core machine) for no path that test leaves out.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from clusterforge.cli.main import main
from clusterforge.design import plan
from clusterforge.generate.slurm.files import slurm_files
from clusterforge.rehearse.slow import cgroup_v1_cpu_missing, cpu_capped
from clusterforge.spec import parse_spec
from tests.generate import test_slurm_system
from tests.generate.emulated_slurm import EmulatedSlurm

SPEC = {
    "name": "accept-lab",
    "num_gpus": 32,
    "node": "dgx-h100",
    "spare_fraction": 0,
    "network": {"topology": "rail-optimized"},
    "workload": {"model": "llama3-8b", "tensor_parallel": 8, "global_batch": 32},
}
SLOW_NODE_INDEX = 2  # gpu-0003
# A tenth of a core: on a loaded 2-core machine the other processes get well under a core
# each, and a fifth of a core then left the capped node's figures too close to the others'
# in some runs.
SLOW_CPU_FRACTION = 0.1
munge = test_slurm_system.munge  # the session fixture that starts munged

pytestmark = [
    pytest.mark.system,
    pytest.mark.slow,
    pytest.mark.skipif(
        not all(shutil.which(p) for p in ("slurmctld", "slurmd", "munged", "sbatch")),
        reason="needs slurm-wlm and munge (apt-get install slurm-wlm munge)",
    ),
    pytest.mark.skipif(
        cgroup_v1_cpu_missing() is not None,
        reason="needs a writable cgroup v1 cpu controller to slow one node down",
    ),
]
torch = pytest.importorskip("torch", reason="the gloo collectives need torch (pip install torch)")


@pytest.fixture(scope="module")
def spec_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import yaml

    path = tmp_path_factory.mktemp("accept-spec") / "spec.yaml"
    path.write_text(yaml.safe_dump(SPEC))
    return path


@pytest.fixture(scope="module")
def slurm(
    munge: None, spec_file: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[EmulatedSlurm]:
    design = plan(parse_spec(SPEC))
    base = tmp_path_factory.mktemp("accept-slurm")
    generated = base / "generated"
    generated.mkdir()
    for f in slurm_files(design):
        target = generated / Path(f.path).name
        target.write_text(f.content)
        target.chmod(f.mode)
    emulated = EmulatedSlurm(generated, base / "work", cluster="cfaccept")
    emulated.prepare()
    try:
        emulated.start()
        assert emulated.wait_idle(90), "emulated nodes did not come up idle"
        yield emulated
    finally:
        emulated.stop()


@pytest.fixture()
def slowed_node(slurm: EmulatedSlurm) -> Iterator[str]:
    """Cap one node's slurmd (and so its job steps) at 10 % of a core."""
    node = slurm.nodes[SLOW_NODE_INDEX]
    pid = slurm.processes[1 + SLOW_NODE_INDEX].pid  # processes: slurmctld, then slurmd per node
    with cpu_capped([pid], SLOW_CPU_FRACTION, name="cf-accept-slow"):
        yield node


def test_accept_through_slurm_names_the_slowed_node(
    slurm: EmulatedSlurm,
    slowed_node: str,
    spec_file: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("SLURM_CONF", str(slurm.conf))
    out = tmp_path / "report"
    code = main(
        [
            "accept",
            str(spec_file),
            "--via",
            "slurm",
            "--cpu",
            "--tests",
            "node,nccl,net,storage",  # the fabric rounds run in the lossy-link system test
            "--serial-nodes",
            "--burn-s",
            "2",
            "--max-size",
            "4MiB",
            "--localize",
            "never",  # the bisection is the rehearsal's slow-node drill (module docstring)
            "--storage-path",
            str(tmp_path),
            "--storage-p999-ms",
            "10000",
            "-o",
            str(out),
            "--json",
        ]
    )
    report = json.loads((out / "report.json").read_text())
    assert code == 1, capsys.readouterr()
    assert slowed_node in report["failed_nodes"]
    assert report["localization"] is None
    gemm = {r["node"]: r for r in report["results"] if r["test"] == "gemm"}
    assert gemm[slowed_node]["verdict"] == "fail"
    # The capped node is the slowest by far; the others are within noise of each other
    # (the machine's other load can still fail one of them by a few percent).
    rates = sorted((r["measured"], node) for node, r in gemm.items())
    assert rates[0][1] == slowed_node
    assert rates[0][0] < 0.5 * rates[1][0]
    ops = {row["op"] for row in report["collective"]}
    assert {"all_reduce", "all_gather"} <= ops
    assert any(r["test"] == "in-band net" for r in report["results"])
    assert any(r["test"] == "storage p99.9" and r["verdict"] == "pass" for r in report["results"])
    raw = sorted(p.name for p in (out / "raw").iterdir())
    assert "collective.out" in raw and "collective.sbatch" in raw
