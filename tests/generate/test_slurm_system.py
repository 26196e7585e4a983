"""The generated Slurm files on the real Slurm: slurmctld and one slurmd per emulated node.

Needs Debian's slurm-wlm (22.05, the release these files target) and munge (marked
``system``); see emulated_slurm.py for the only lines rewritten for one machine.
test_slurm_targets_system.py loads every example in each tested release.

cgroups: the generated ``ProctrackType=proctrack/cgroup``, ``TaskPlugin=task/cgroup,...`` and
``cgroup.conf`` run as generated wherever the machine has writable cgroup v1 controllers and
allows mknod (this container does: Debian's Slurm 22.05 gives each slurmd its own
``slurm_<node>`` subtree).  :func:`test_jobs_are_confined_by_the_generated_cgroups` then
proves the confinement.  Elsewhere (cgroup v2 without systemd to delegate slurmstepd's scope,
no root, no mknod) emulated_slurm.py falls back to ``proctrack/linuxproc`` + ``task/none``,
which only loses that one test: the reason is printed in its skip message.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from clusterforge.design import Design, plan
from clusterforge.generate.slurm.files import slurm_files
from clusterforge.spec import SlurmSpec, load_spec
from tests.generate.conftest import GOLDEN_SPEC, MULTI_PLANE_SPEC
from tests.generate.emulated_slurm import EmulatedSlurm, expand_hostlist

pytestmark = [
    pytest.mark.system,
    pytest.mark.skipif(
        not all(shutil.which(p) for p in ("slurmctld", "slurmd", "munged", "sinfo")),
        reason="needs slurm-wlm and munge (apt-get install slurm-wlm munge)",
    ),
]


def _munge_works() -> bool:
    probe = subprocess.run("munge -n | unmunge", shell=True, capture_output=True, text=True)
    return probe.returncode == 0 and "Success" in probe.stdout


@pytest.fixture(scope="session")
def munge() -> None:
    """Start munged as the munge user unless one already runs (another test may own it)."""
    if _munge_works():
        return
    Path("/run/munge").mkdir(parents=True, exist_ok=True)
    for path in ("/run/munge", "/var/log/munge", "/var/lib/munge", "/etc/munge"):
        subprocess.run(["chown", "-R", "munge:munge", path], check=False)
    subprocess.run(["runuser", "-u", "munge", "--", "munged"], check=False)
    for _ in range(50):
        if _munge_works():
            return
        time.sleep(0.1)
    pytest.skip("munged could not be started (run as root with the munge package installed)")


@pytest.fixture(scope="module", params=[GOLDEN_SPEC, MULTI_PLANE_SPEC], ids=lambda p: p.stem)
def cluster_design(request: pytest.FixtureRequest) -> Design:
    """The lab design, and a dual-plane one (a tree switch stands for a leaf per plane), for
    the Slurm that runs them here (Debian's 22.05)."""
    spec = load_spec(request.param)
    return plan(spec.model_copy(update={"slurm": SlurmSpec(version="22.05")}))


@pytest.fixture(scope="module")
def slurm(
    munge: None, cluster_design: Design, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[EmulatedSlurm]:
    base = tmp_path_factory.mktemp("cfgen-slurm")
    generated = base / "generated"
    generated.mkdir()
    for f in slurm_files(cluster_design):
        target = generated / Path(f.path).name
        target.write_text(f.content)
        target.chmod(f.mode)
    emulated = EmulatedSlurm(generated, base / "work")
    emulated.prepare()
    try:
        emulated.start()
        yield emulated
    finally:
        emulated.stop()


def test_nodes_come_up_idle_with_their_gres(slurm: EmulatedSlurm, cluster_design: Design) -> None:
    states = slurm.wait_idle()
    assert sorted(states) == cluster_design.compute.node_names
    assert set(states.values()) == {"idle"}
    gres = dict(line.split() for line in slurm.run("sinfo", "-N", "-h", "-o", "%N %G").splitlines())
    assert gres == dict.fromkeys(cluster_design.compute.node_names, "gpu:h100:8")


def test_features_carry_rack_and_leaf(slurm: EmulatedSlurm, cluster_design: Design) -> None:
    slurm.wait_idle()
    out = slurm.run("sinfo", "-N", "-h", "-o", "%N %f")
    features = dict(line.split() for line in out.splitlines())
    leaf_of = cluster_design.fabric.connectivity.leaf_of
    for index, node in enumerate(cluster_design.compute.node_names):
        leaf = int(leaf_of(index, 0))
        assert f"leaf_{leaf + 1:04d}" in features[node].split(","), features[node]
        assert any(f.startswith("rack_r") for f in features[node].split(","))


def test_scontrol_topology_matches_the_fabric(slurm: EmulatedSlurm, cluster_design: Design) -> None:
    slurm.wait_idle()
    out = slurm.run("scontrol", "show", "topology")
    switches = {}
    for line in out.splitlines():
        fields = dict(part.split("=", 1) for part in line.split())
        switches[fields["SwitchName"]] = fields
    conn = cluster_design.fabric.connectivity
    expected: dict[str, set[str]] = {}
    for index, node in enumerate(cluster_design.compute.node_names):
        expected.setdefault(conn.switch_name(int(conn.leaf_of(index, 0))), set()).add(node)
    leaves = {name: f for name, f in switches.items() if f["Level"] == "0"}
    assert {name: set(expand_hostlist(f["Nodes"])) for name, f in leaves.items()} == expected
    top = [f for f in switches.values() if f["Level"] == "1"]
    assert len(top) == 1
    assert set(expand_hostlist(top[0]["Switches"])) == set(expected)
    assert set(expand_hostlist(top[0]["Nodes"])) == set(cluster_design.compute.node_names)


def test_health_check_runs_on_every_node(slurm: EmulatedSlurm, cluster_design: Design) -> None:
    slurm.wait_idle()
    calls = slurm.recorder_log.read_text().splitlines()
    for node in cluster_design.compute.node_names:
        assert (
            f"check --expect /etc/clusterforge/spec.yaml --node {node} --action slurm-drain"
            in calls
        )


def _wait_job(slurm: EmulatedSlurm, job_id: str, timeout_s: float = 60) -> str:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        state = slurm.run("scontrol", "show", "job", job_id, check=False)
        for part in state.split():
            if part.startswith("JobState="):
                value = part.split("=", 1)[1]
                if value in {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL"}:
                    return value
        time.sleep(0.5)
    raise AssertionError(f"job {job_id} did not finish")


def test_generated_job_script_runs_across_nodes(
    slurm: EmulatedSlurm, cluster_design: Design
) -> None:
    slurm.wait_idle()
    log = slurm.work / "torchrun.log"
    fake = slurm.work / "fakebin" / "torchrun"  # torchrun itself is not installed here
    fake.write_text(f'#!/bin/sh\necho "$SLURMD_NODENAME|$NCCL_IB_HCA|$*" >> {log}\n')
    fake.chmod(0o755)
    env = {**slurm.env, "PATH": f"{fake.parent}:{slurm.env['PATH']}"}
    script = slurm.generated / "train.sbatch"
    out = subprocess.run(
        ["sbatch", "--parsable", str(script)],
        cwd=slurm.work,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    job_id = out.stdout.strip().split(";")[0]
    assert _wait_job(slurm, job_id) == "COMPLETED"
    rows = [line.split("|") for line in log.read_text().splitlines()]
    training = cluster_design.compute.num_training_nodes
    assert sorted(r[0] for r in rows) == cluster_design.compute.node_names[:training]
    for _, hcas, args in rows:
        assert hcas == "=" + ",".join(
            f"{n}:1" for n in cluster_design.compute.node.compute_hca_names
        )
        assert f"--nnodes={training}" in args.split()
        assert "--nproc-per-node=8" in args.split()
        assert "--tensor-model-parallel-size=8" in args.split()
        assert "--pipeline-model-parallel-size=2" in args.split()
        assert "--num-layers=32" in args.split() and "--bf16" in args.split()


def test_jobs_are_confined_by_the_generated_cgroups(
    slurm: EmulatedSlurm, cluster_design: Design
) -> None:
    """cgroup.conf as generated: a job asking for 2 GPUs and 1000 MiB may open its two GPU
    devices (ENXIO: no driver behind them) but not the others (EPERM from the devices
    controller), and its job cgroup carries the memory limit."""
    if slurm.cgroup_fallback:
        pytest.skip(f"cgroup plugins replaced on this machine: {slurm.cgroup_fallback}")
    slurm.wait_idle()
    dev = slurm.work / "dev"
    gpus = range(8)
    script = (
        'echo "cuda=$CUDA_VISIBLE_DEVICES"; '
        'echo "cgroup=$(grep :memory: /proc/self/cgroup | cut -d: -f3)"; '
        f"for i in {' '.join(map(str, gpus))}; do "
        f'if cat {dev}/nvidia$i 2>&1 | grep -q "not permitted"; then echo "gpu$i=denied"; '
        'else echo "gpu$i=allowed"; fi; done; '
        "echo limit=$(cat /sys/fs/cgroup/memory/slurm_$SLURMD_NODENAME/uid_0/"
        "job_$SLURM_JOB_ID/memory.limit_in_bytes)"
    )
    out = slurm.run(
        "srun", "-N", "1", "-p", "gpu", "--gres=gpu:h100:2", "--mem=1000", "sh", "-c", script
    )
    result = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
    allowed = [i for i in gpus if result[f"gpu{i}"] == "allowed"]
    assert len(allowed) == 2 and result["cuda"] == ",".join(map(str, range(2))), result
    assert result["cgroup"].startswith("/slurm_gpu-"), result["cgroup"]
    assert "/job_" in result["cgroup"] and "/step_0" in result["cgroup"]
    assert int(result["limit"]) == 1000 * 1024 * 1024


def test_failing_prolog_drains_the_node(slurm: EmulatedSlurm, cluster_design: Design) -> None:
    """The generated prolog turns check's 'unhealthy' (exit 1) into a drained node."""
    slurm.wait_idle()
    spare = cluster_design.compute.node_names[-1]
    slurm.fail_calls.write_text(f"check --expect /etc/clusterforge/spec.yaml --node {spare}\n")
    out = slurm.run("sbatch", "--parsable", "-p", "spare", "-N", "1", "--wrap", "true")
    job_id = out.strip().split(";")[0]
    deadline = time.monotonic() + 60
    state = ""
    while time.monotonic() < deadline:
        state = slurm.run("sinfo", "-h", "-n", spare, "-o", "%t %E")
        if state.startswith("drain"):
            break
        time.sleep(0.5)
    assert state.startswith("drain"), state
    slurm.run("scancel", job_id, check=False)
