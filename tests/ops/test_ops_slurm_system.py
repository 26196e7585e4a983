"""Real Slurm (Debian slurm-wlm) with four emulated nodes: drain, resume, hands off, breaker.

One slurmctld and one ``slurmd -N`` per node run on this machine (Slurm's multiple-slurmd
mode, slurmd(8) ``-N``), with empty files standing in for /dev/nvidia*.  Ports 16917 (controller) and
17101-17104 (nodes) and ClusterName ``cfops`` keep clear of other Slurm tests.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from ops_fixtures import NVML_FIXTURES

from clusterforge.cli.main import main

pytestmark = pytest.mark.system

NODES = ["gpu-001", "gpu-002", "gpu-003", "gpu-004"]
CTLD_PORT = 16917
FIRST_NODE_PORT = 17101


def _munge_works() -> bool:
    try:
        encoded = subprocess.run(["munge", "-n"], capture_output=True, timeout=10, check=False)
        decoded = subprocess.run(
            ["unmunge"], input=encoded.stdout, capture_output=True, timeout=10, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return decoded.returncode == 0


@pytest.fixture(scope="session")
def munge() -> Iterator[None]:
    """munged running (started here, and stopped at the end, only if it was not already)."""
    if shutil.which("munged") is None:
        pytest.skip("munge is not installed (apt-get install munge)")
    if _munge_works():
        yield
        return
    Path("/run/munge").mkdir(parents=True, exist_ok=True)
    shutil.chown("/run/munge", "munge", "munge")
    for path in ("/run/munge", "/var/log/munge", "/var/lib/munge", "/etc/munge"):
        if Path(path).exists():
            subprocess.run(["chown", "-R", "munge:munge", path], check=False)
    subprocess.run(["runuser", "-u", "munge", "--", "munged"], check=False, timeout=30)
    deadline = time.monotonic() + 15
    while not _munge_works():
        if time.monotonic() > deadline:
            pytest.skip("munged did not start")
        time.sleep(0.2)
    yield
    pid_file = Path("/run/munge/munged.pid")
    if pid_file.exists():
        _stop(int(pid_file.read_text().strip()))


def _stop(pid: int, timeout_s: float = 10.0) -> None:
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    os.kill(pid, signal.SIGKILL)


def _write_config(base: Path) -> Path:
    host = socket.gethostname().split(".")[0]
    (base / "state").mkdir(parents=True)
    (base / "dev").mkdir()
    for i in range(8):
        (base / "dev" / f"nvidia{i}").touch()
    last_port = FIRST_NODE_PORT + len(NODES) - 1
    conf = base / "slurm.conf"
    conf.write_text(
        f"""ClusterName=cfops
SlurmctldHost={host}
SlurmctldPort={CTLD_PORT}
AuthType=auth/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation={base}/state
SlurmdSpoolDir={base}/spool-%n
SlurmctldPidFile={base}/slurmctld.pid
SlurmdPidFile={base}/slurmd-%n.pid
SlurmctldLogFile={base}/slurmctld.log
SlurmdLogFile={base}/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SelectType=select/cons_tres
GresTypes=gpu
ReturnToService=2
NodeName=gpu-[001-004] NodeHostname={host} NodeAddr=127.0.0.1 Port={FIRST_NODE_PORT}-{last_port} CPUs=2 RealMemory=1000 Gres=gpu:h100:8 State=UNKNOWN
PartitionName=gpu Nodes=ALL Default=YES MaxTime=INFINITE State=UP
"""
    )
    (base / "gres.conf").write_text(
        f"NodeName=gpu-[001-004] Name=gpu Type=h100 File={base}/dev/nvidia[0-7]\n"
    )
    return conf


def _sinfo(env: dict[str, str]) -> dict[str, tuple[str, str]]:
    out = subprocess.run(
        ["sinfo", "--noheader", "--Node", "--format=%N|%T|%E"],
        capture_output=True,
        text=True,
        env=env,
        timeout=15,
    ).stdout
    rows = {}
    for line in out.splitlines():
        name, state, reason = line.split("|", 2)
        rows[name] = (state, reason)
    return rows


@pytest.fixture(scope="module")
def slurm(munge: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """A running controller and four node daemons; yields the client environment."""
    if shutil.which("slurmctld") is None or shutil.which("slurmd") is None:
        pytest.skip("slurmctld/slurmd not installed (apt-get install slurm-wlm)")
    if os.geteuid() != 0:
        pytest.skip("the emulated Slurm runs its daemons as root")
    base = tmp_path_factory.mktemp("slurm-ops")
    conf = _write_config(base)
    env = {**os.environ, "SLURM_CONF": str(conf)}
    subprocess.run(["slurmctld", "-f", str(conf)], env=env, check=True, timeout=30)
    for node in NODES:
        subprocess.run(["slurmd", "-f", str(conf), "-N", node], env=env, check=True, timeout=30)
    try:
        deadline = time.monotonic() + 90
        while not all(_sinfo(env).get(n, ("",))[0] == "idle" for n in NODES):  # registered
            if time.monotonic() > deadline:
                pytest.fail(f"nodes did not come up: {_sinfo(env)}; see {base}/slurmctld.log")
            time.sleep(1)
        yield env
    finally:
        for pid_file in [base / "slurmctld.pid", *(base / f"slurmd-{n}.pid" for n in NODES)]:
            if pid_file.exists():
                _stop(int(pid_file.read_text().strip()))


def _check(
    node: str, nvml: str, root: Path, capsys: pytest.CaptureFixture[str], fraction: str = "0.5"
) -> tuple[int, str]:
    code = main(["check", "--json", "--node", node, "--nvml-fixture", str(NVML_FIXTURES / nvml),
                 "--sysfs-root", str(root), "--gpu", "h100-sxm", "--num-gpus", "8",
                 "--action", "slurm-drain", "--max-drain-fraction", fraction, "--timeout-s", "10"])  # fmt: skip
    action = json.loads(capsys.readouterr().out)["action"]["kind"]
    return code, action


def test_xid79_drains_exactly_that_node_and_healing_resumes_it(
    slurm: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    fake_root: Callable[[str], Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("SLURM_CONF", slurm["SLURM_CONF"])
    root = fake_root("ib-8x400-healthy.json")
    subprocess.run(["scontrol", "update", "NodeName=gpu-003", "State=DRAIN", "Reason=bad DIMM ticket 42"],
                   env=slurm, check=True, timeout=15)  # fmt: skip
    fixtures = {"gpu-001": "h100-healthy.json", "gpu-002": "h100-xid79.json",
                "gpu-003": "h100-healthy.json", "gpu-004": "h100-healthy.json"}  # fmt: skip

    first = {n: _check(n, f, root, capsys) for n, f in fixtures.items()}
    assert first == {
        "gpu-001": (0, "none"),
        "gpu-002": (1, "drain"),
        "gpu-003": (0, "none"),
        "gpu-004": (0, "none"),
    }
    states = _sinfo(slurm)
    state, reason = states["gpu-002"]
    assert state == "drained" and reason.startswith("clusterforge: ") and "gpu.xid: gpu3" in reason
    assert states["gpu-003"] == ("drained", "bad DIMM ticket 42")
    assert states["gpu-001"][0] == "idle" and states["gpu-004"][0] == "idle"

    second = {n: _check(n, f, root, capsys) for n, f in fixtures.items()}
    assert {n: a for n, (_, a) in second.items()} == dict.fromkeys(NODES, "none")
    assert _sinfo(slurm) == states  # the second run changed nothing

    assert _check("gpu-002", "h100-xid79-healed.json", root, capsys) == (0, "resume")
    states = _sinfo(slurm)
    # Slurm marks a resumed node not-responding ("idle*") until its next ping
    assert states["gpu-002"][0].rstrip("*") == "idle"
    assert states["gpu-003"] == ("drained", "bad DIMM ticket 42")  # a person's drain stays


def test_circuit_breaker_stops_draining_half_the_cluster(
    slurm: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    fake_root: Callable[[str], Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("SLURM_CONF", slurm["SLURM_CONF"])
    root = fake_root("ib-8x400-healthy.json")
    try:
        kinds = [
            _check(n, "h100-xid79.json", root, capsys)[1] for n in ("gpu-001", "gpu-002", "gpu-004")
        ]
        # 1/4 and 2/4 are not above 0.5; a third clusterforge drain (3/4) would be
        assert kinds == ["drain", "drain", "breaker"]
        assert _sinfo(slurm)["gpu-004"][0] == "idle"
    finally:
        for node in ("gpu-001", "gpu-002"):
            _check(node, "h100-healthy.json", root, capsys)
    assert all(_sinfo(slurm)[n][0].rstrip("*") == "idle" for n in ("gpu-001", "gpu-002", "gpu-004"))


def test_a_gpu_process_outside_any_job_drains_the_node(
    slurm: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    fake_root: Callable[[str], Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A miner and processes outside any job (fake /proc and Slurm cgroup tree) drain the node
    through the real scontrol; the node is resumed once its GPUs run only jobs again."""
    monkeypatch.setenv("SLURM_CONF", slurm["SLURM_CONF"])
    root = fake_root("ib-gpu-processes.json")
    assert _check("gpu-004", "h100-gpu-processes.json", root, capsys) == (1, "drain")
    state, reason = _sinfo(slurm)["gpu-004"]
    assert state == "drained"
    assert "gpu.processes: gpu3 pid 4404" in reason and "gpu.processes: gpu2 pid 4303" in reason
    assert _check("gpu-004", "h100-healthy.json", root, capsys) == (0, "resume")
    assert _sinfo(slurm)["gpu-004"][0].rstrip("*") == "idle"
